# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report: a schedule checked at its band edges.

A schedule (an earlier report's schedule.json, pays.schedule) says, per host, TP, dataset and temperature, which
setting has the highest output throughput in each band of concurrencies. The campaign that checks it (the filter
schedule_check_spec) measures every band's setting again, on fresh servers, at each band edge; this module reads that
campaign's rows. Where two bands meet (band i ends at concurrency a, band i+1 starts at b), band i's setting must not
lose to band i+1's at a, nor band i+1's to band i's at b: no thrash at the threshold. Each comparison is the ratio of
the two settings' mean output throughputs with Fieller's 95% interval over the repeats (stats.fieller_moments, as a
row's speedup): 'holds' when the interval is above 1.0, 'tie' when it contains 1.0 (the difference is within the
noise, not a reversal), 'reversed' when it is below 1.0; with one repeat (no interval) the point estimate decides
('holds' at 1.0 or more, else 'reversed'). 'missing' when the check campaign has no ok row of a setting there. The
check passes when no comparison is reversed or missing. The schedule's 'all' entries are not checked.
"""

from __future__ import annotations

from .read import MEASURED
from .stats import fieller_moments

VERDICTS = ('holds', 'tie', 'reversed', 'missing')
# The columns of schedule-check.json's edges.
EDGE_KEYS = ('host', 'tp', 'dataset', 'temperature', 'concurrency', 'stage', 'other_stage', 'ratio', 'low', 'high',
             'repeats', 'verdict')


def _row_index(rows):
    """{(host, tp, dataset, temperature, concurrency, stage): row} of the measured rows (interference re-runs left out)."""
    index = {}
    for row in rows:
        if row.get('status') != MEASURED or row.get('output_throughput') is None or row.get('interference_of'):
            continue
        index[(row['host'], row['tp'], row['dataset'], row['temperature'], row['concurrency'], row['stage'])] = row
    return index


def compare(mine, other):
    """(ratio, low, high, verdict) of mine's output throughput over other's (rows; either may be None: 'missing')."""
    if mine is None or other is None:
        return None, None, None, 'missing'
    ratio = mine['output_throughput'] / other['output_throughput'] if other['output_throughput'] else None
    if ratio is None:
        return None, None, None, 'missing'
    interval = fieller_moments(mine['output_throughput'], mine.get('output_throughput_sd'), mine.get('repeats'),
                               other['output_throughput'], other.get('output_throughput_sd'), other.get('repeats'))
    low, high = (interval['low'], interval['high']) if interval else (None, None)
    if low is not None and low > 1.0:
        verdict = 'holds'
    elif high is not None and high < 1.0:
        verdict = 'reversed'
    elif low is not None or high is not None:
        verdict = 'tie'
    else:
        verdict = 'holds' if ratio >= 1.0 else 'reversed'
    return ratio, low, high, verdict


def _edges(entry):
    """[(concurrency, the stage that should win there, the stage it is compared with)] where an entry's bands meet."""
    out = []
    bands = entry.get('bands') or []
    for left, right in zip(bands, bands[1:]):
        out.append((left['to'], left['stage'], right['stage']))
        out.append((right['from'], right['stage'], left['stage']))
    return out


def check_schedule(schedule, rows):
    """{'passed', 'edges': [EDGE_KEYS dict], 'entries', 'checked', 'reversed', 'missing'} of a schedule (schedule.json's
    list) against the rows of the campaign that measured it again (the module docstring)."""
    index = _row_index(rows)
    edges, entries = [], 0
    for entry in schedule or []:
        if entry.get('dataset') == 'all':
            continue
        entries += 1
        for concurrency, stage, other in _edges(entry):
            key = (entry['host'], entry['tp'], entry['dataset'], entry['temperature'], concurrency)
            mine, theirs = index.get(key + (stage,)), index.get(key + (other,))
            ratio, low, high, verdict = compare(mine, theirs)
            repeats = min(mine.get('repeats') or 1, theirs.get('repeats') or 1) if mine and theirs else None
            edges.append(dict(zip(EDGE_KEYS, (entry['host'], entry['tp'], entry['dataset'], entry['temperature'], concurrency,
                                              stage, other, ratio, low, high, repeats, verdict))))
    reversed_ = [edge for edge in edges if edge['verdict'] == 'reversed']
    missing = [edge for edge in edges if edge['verdict'] == 'missing']
    return {'passed': not reversed_ and not missing, 'entries': entries, 'checked': len(edges), 'edges': edges,
            'reversed': len(reversed_), 'missing': len(missing)}


def _end(value):
    return '?' if value is None else '%.2f' % value


def edge_line(edge):
    """One comparison as a sentence: 'ct200 TP1 demo t0 c=8: tp1-ddtree-b32-k4 over tp1-autoregressive 1.12× [1.05, 1.20]: holds'."""
    if edge['ratio'] is None:
        figure = 'not measured'
    elif edge['low'] is None and edge['high'] is None:
        figure = '%.2f×' % edge['ratio']
    else:
        figure = '%.2f× [%s, %s]' % (edge['ratio'], _end(edge['low']), _end(edge['high']))
    return '%s TP%s %s t%g c=%s: %s over %s %s: %s' % (
        edge['host'], edge['tp'], edge['dataset'], edge['temperature'] or 0, edge['concurrency'], edge['stage'],
        edge['other_stage'], figure, edge['verdict'])


def check_markdown(check, md_escape, md_code):
    """report.md's section "Schedule check"; [] without a check."""
    if not check:
        return []
    verdict = ('**passed**: no band loses to its neighbour at the edges they share' if check['passed'] else
               '**failed**: %d comparison(s) reversed, %d not measured' % (check['reversed'], check['missing']))
    lines = ['## Schedule check', '',
             'The schedule of %s measured again on fresh servers at its band edges (%d schedule(s), %d comparison(s)): '
             '%s. Each comparison is the setting that the schedule names at that concurrency over the neighbouring '
             'band\'s setting, output throughput with Fieller\'s 95%% interval over the repeats: holds above 1.0, a tie '
             'when the interval contains 1.0 (within the noise), reversed below it (docs/report.md "Schedule check").'
             % (md_code(check.get('schedule') or 'schedule.json'), check['entries'], check['checked'], verdict), '']
    if check['edges']:
        lines += ['| host | TP | dataset | T | c | schedule\'s setting | over | ratio | verdict |',
                  '| --- | ---: | --- | ---: | ---: | --- | --- | --- | --- |']
        for edge in check['edges']:
            figure = '–' if edge['ratio'] is None else '%.2f×' % edge['ratio']
            if edge['low'] is not None or edge['high'] is not None:
                figure += ' [%s, %s]' % (_end(edge['low']), _end(edge['high']))
            lines.append('| %s | %s | %s | %g | %s | %s | %s | %s | %s |' % (
                md_escape(edge['host']), edge['tp'], md_escape(edge['dataset']), edge['temperature'] or 0,
                edge['concurrency'], md_code(edge['stage']), md_code(edge['other_stage']), figure, edge['verdict']))
        lines.append('')
    else:
        lines += ['The schedule has one band per run: there is no edge where two settings meet.', '']
    return lines
