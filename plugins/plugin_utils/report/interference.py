# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report: interference, what running stages side by side costs a stage.

A campaign run in parallel re-runs one stage alone at the end: the plan's interference stage (`<id>-alone`, with
interference_of the id it re-runs, at the original's first concurrency). Its rows are a control measurement, never
result rows; interference_sections compares each of them with the original's row of the same host, dataset,
temperature and concurrency:
- output throughput beside the others vs alone, and the difference (beside - alone) / alone in %;
- the median inter-token latency (median_itl_ms, the ITL every result row carries), the same way;
- each side the mean over the measured repeats of its run (rows' row), with how many repeats that was.
A negative throughput difference, or a positive ITL difference, means the stage ran slower beside the others.
When the original is not in the results or was not measured, or the interference stage was not measured, the section
says so and gives no numbers.

Pure functions of read.read_host's host data and rows.py's rows; markdown_sections.interference_markdown and
latex_sections.interference_latex render one host's sections.
"""

from __future__ import annotations

from .read import interference_of, MEASURED, ran_beside, stage_wave


# The measures compared, with how the tables name them.
COMPARED = (('output_throughput', 'output throughput (tok/s)'), ('median_itl_ms', 'median ITL (ms)'))


RUN = ('dataset', 'temperature', 'concurrency')


def diff_pct(beside, alone):
    """(beside - alone) / alone in %; None without both or when alone is 0."""
    return None if beside is None or not alone else (beside - alone) / alone * 100.0


def _status_text(entry):
    """'failed: the server died' of a stage that was not measured ('not run' without a status.json)."""
    status = entry.get('status') if entry else None
    if status is None:
        reason = (entry or {}).get('skipped', {}).get('status') or 'no status.json: the stage never ran'
        return 'not run: %s' % reason
    return '%s%s' % (status.get('status'), ': %s' % status['reason'] if status.get('reason') else '')


def _others(count):
    return 'no other stage' if not count else '1 other stage' if count == 1 else '%d other stages' % count


def summary(item):
    """The plain sentence above an interference table: what was compared (no markup; the renderers escape it)."""
    control, original = item['stage'], item['original']
    if item['status'] == 'no original':
        return '%s re-runs %s alone, but %s is not in the results of this host: nothing to compare.' % (control, original, original)
    if item['status'] == 'original not measured':
        return '%s re-runs %s alone, but %s was not measured (%s): no interference figure.' % (
            control, original, original, item['reason'])
    if item['status'] == 'not measured':
        return '%s (re-running %s alone) was not measured (%s): no interference figure.' % (control, original, item['reason'])
    wave = ' (wave %s)' % item['original_wave'] if item['original_wave'] is not None else ''
    alone_wave = ', wave %s' % item['wave'] if item['wave'] is not None else ''
    concurrency = sorted(set(row['concurrency'] for row in item['rows']))
    return ('%s measured beside %s%s vs re-run alone at the end (%s%s), concurrency %s: output throughput and median ITL '
            'per dataset and temperature, each side the mean over the measured repeats of its run.' % (
                original, _others(item['original_beside']), wave, control, alone_wave, ', '.join(str(c) for c in concurrency)))


def _compare(run, beside, alone):
    """One compared run: each side's means and repeats, the differences; note says why a run has no numbers."""
    out = dict(zip(RUN, run))
    out.update(beside_repeats=None, alone_repeats=None, note=None)
    for metric, _label in COMPARED:
        out.update({metric + '_beside': None, metric + '_alone': None, metric + '_diff_pct': None})
    if beside is None or beside['status'] != MEASURED:
        out['note'] = 'the original has no measured run here (%s)' % (
            'no such run' if beside is None else '%s: %s' % (beside['status'], beside['reason']) if beside.get('reason') else beside['status'])
        return out
    out.update(beside_repeats=beside['repeats'], alone_repeats=alone['repeats'])
    for metric, _label in COMPARED:
        out[metric + '_beside'], out[metric + '_alone'] = beside.get(metric), alone.get(metric)
        out[metric + '_diff_pct'] = diff_pct(beside.get(metric), alone.get(metric))
    return out


def interference_sections(host_data, rows, controls):
    """[{'host', 'stage' (the interference stage), 'original', 'wave', 'original_wave', 'original_beside' (how many
    other stages ran with the original), 'original_ran_beside' (their ids), 'status' ('ok', 'no original', 'original
    not measured', 'not measured'), 'reason', 'itl_metric', 'rows': [{'dataset', 'temperature', 'concurrency',
    'beside_repeats', 'alone_repeats', 'note', and per COMPARED metric '<m>_beside', '<m>_alone', '<m>_diff_pct'}],
    'summary'}] in host and plan order; [] when no host has an interference stage. rows: the result rows, controls:
    the interference stages' rows (rows.py)."""
    by_run = dict(((row['host'], row['stage']) + tuple(row[key] for key in RUN), row) for row in rows)
    out = []
    for data in host_data:
        entries = dict((entry['stage']['id'], entry) for entry in data['stages'])
        for entry in data['stages']:
            original = interference_of(entry)
            if not original:
                continue
            source = entries.get(original)
            item = {'host': data['host'], 'stage': entry['stage']['id'], 'original': original, 'wave': stage_wave(entry),
                    'original_wave': stage_wave(source) if source else None,
                    'original_beside': len(ran_beside(source)) if source else None,
                    'original_ran_beside': ran_beside(source) if source else [], 'status': 'ok', 'reason': None,
                    'itl_metric': 'median_itl_ms', 'rows': []}
            mine = [row for row in controls if row['host'] == data['host'] and row['stage'] == item['stage'] and row['status'] == MEASURED]
            if source is None:
                item['status'] = 'no original'
            elif (source.get('status') or {}).get('status') != MEASURED or source['skipped']['status']:
                item.update(status='original not measured', reason=source['skipped']['status'] or _status_text(source))
            elif not mine:
                item.update(status='not measured', reason=entry['skipped']['status'] or (
                    _status_text(entry) if (entry.get('status') or {}).get('status') != MEASURED else 'no complete run'))
            else:
                item['rows'] = [_compare(tuple(row[key] for key in RUN), by_run.get((data['host'], original) + tuple(row[key] for key in RUN)), row)
                                for row in mine]
            item['summary'] = summary(item)
            out.append(item)
    return out
