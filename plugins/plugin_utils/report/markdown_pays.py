# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, renderer: report.md's section "Where speculation pays" (pays.py's figures): the capacity at
SLO of each setting with its gain over AR, the crossover concurrency where the speedup falls to 1.0, the SLO
attainment and goodput of the runs, and the schedule (the best setting per band of concurrency with its SGLang flags),
each with its figures. results-slo.csv, capacity.csv, crossover.csv and schedule.json hold them whole.
"""

from __future__ import annotations

from .figures import pays_figure_key
from .markdown_sections import _md_code, md_escape
from .text import _run_label


# The flags every stage's server gets (plan/stage.py _common_args): the schedule shows the others, the setting's own.
COMMON_FLAGS = ('--model-path', '--tp-size', '--host', '--port', '--mem-fraction-static', '--enable-metrics')


def _fmt(value, digits=2, suffix=''):
    return '–' if value is None else '%.*f%s' % (digits, value, suffix)


def _number(value):
    """A capacity: an integer concurrency as it is, a rate with 3 significant digits."""
    if value is None:
        return '–'
    return '%d' % value if float(value).is_integer() else '%.3g' % value


def _pct(value):
    return '–' if value is None else '%.0f%%' % (value * 100.0)


def capacity_cell(row):
    """'24 [16, 31]': the capacity and its interval; '< lo' when the lowest point failed."""
    if row['capacity'] is None:
        return 'none (the lowest point fails)' if row.get('bound_by') == 'lowest_fails' else '–'
    if row['capacity_low'] is None and row['capacity_high'] is None:
        return _number(row['capacity'])
    return '%s [%s, %s]' % (_number(row['capacity']), _number(row['capacity_low']), _number(row['capacity_high']))


def gain_cell(row):
    """'1.50× [1.10, 2.00]': the gain over AR and its interval; '–' without an AR search."""
    if row['gain'] is None:
        return '–'
    if row['baseline_stage'] == row['stage']:
        return '1.00× (the baseline)'
    ends = [('%.2f' % value) if value is not None else '?' for value in (row['gain_low'], row['gain_high'])]
    return '%.2f× [%s, %s]' % (row['gain'], ends[0], ends[1])


def crossover_cell(row):
    """What a crossover row says: 'c ≈ 5.7 [4.2, 7.9]', 'pays at every load measured (up to c=64)', 'never pays'."""
    if row['status'] == 'pays':
        return 'pays at every load measured (up to c=%s)' % row['max_measured']
    if row['status'] == 'never':
        return 'never pays (below 1.0× from c=%s)' % min(point['concurrency'] for point in row['series'])
    if row['status'] != 'crosses':
        return '–'
    low = '%.1f' % row['low'] if row['low'] is not None else '?'
    high = '%.1f' % row['high'] if row['high'] is not None else '> %s' % row['max_measured']
    return 'c ≈ %.1f [%s, %s]' % (row['concurrency'], low, high)


def method_flags(argv):
    """The setting's own flags of a server command line (COMMON_FLAGS left out), as inline code; '(none)' for AR."""
    own = [item for item in argv or [] if item.split('=', 1)[0] not in COMMON_FLAGS]
    return ' '.join(_md_code(item) for item in own) if own else '(none: autoregressive)'


def _intro(pays):
    return [
        'Where speculation pays: the load at which a setting still beats %s, and how much load it carries within a '
        'service-level objective (SLO). docs/report.md defines each figure and names its reference. SLO attainment: '
        'the share of a run\'s measured requests that meet every metric of the SLO (TTFT, TPOT, E2E: the request\'s '
        'own value; ITL: the percentile of its own gaps). Request goodput: good requests per second (vLLM '
        'benchmark_serving\'s --goodput); token goodput: the good requests\' output tokens per second (DistServe, '
        'inference-perf). Capacity at SLO: the largest concurrency or request rate whose run meets the SLO (the '
        'percentile of each metric over the run\'s requests, the mean over the repeats), found by the capacity search; '
        'its interval from the points that surely pass and surely fail (Student t over the repeats); the gain over %s '
        'is the ratio of the capacities, its interval [low / %s\'s high, high / %s\'s low]. Crossover: the concurrency '
        'where the serving speedup falls to 1.0, linear in log concurrency between the last point at or above 1.0 and '
        'the next below; its interval where the ends of the speedup\'s Fieller interval fall to 1.0. Schedule: at each '
        'concurrency measured, the setting with the highest output throughput, consecutive concurrencies with the same '
        'best merged into a band.' % ((pays['baseline'],) * 4), '']


def _capacity_lines(pays):
    rows = pays['capacity']
    if not rows:
        return []
    lines = ['### Capacity at SLO', '',
             '| host | TP | dataset | search | setting | SLO | capacity [interval] | binding | stopped by | runs | gain over %s |'
             % pays['baseline'], '| --- | ---: | --- | --- | --- | --- | ---: | --- | --- | ---: | ---: |']
    for row in rows:
        lines.append('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
            md_escape(row['host']), row['tp'], md_escape(_run_label(row['dataset'], row['temperature'] or 0.0)),
            'concurrency' if row['kind'] == 'concurrency' else 'request rate (req/s)', md_escape(row['setting']),
            md_escape(row['slo'] or '–'), capacity_cell(row), md_escape(row['binding'] or '–'), md_escape(row['bound_by'] or '–'),
            row['runs'] if row['runs'] is not None else '–', gain_cell(row)))
    return lines + ['']


def _crossover_lines(pays, plots, shown):
    rows = pays['crossover']
    if not rows:
        return []
    lines = ['### Crossover: where the speedup falls to 1.0', '',
             '| host | TP | dataset | setting | crossover [interval] | points |', '| --- | ---: | --- | --- | --- | ---: |']
    for row in rows:
        lines.append('| %s | %s | %s | %s | %s | %s |' % (
            md_escape(row['host']), row['tp'], md_escape(_run_label(row['dataset'], row['temperature'])), md_escape(row['setting']),
            crossover_cell(row), row['points']))
    lines.append('')
    for row in rows:
        key = pays_figure_key('speedup', row['host'], row['tp'], row['dataset'], row['temperature'])
        if plots.get(key) and key not in shown:
            shown.add(key)
            lines += ['![speedup vs concurrency, %s TP%s, %s](%s)' % (
                md_escape(row['host']), row['tp'], md_escape(_run_label(row['dataset'], row['temperature'])), plots[key]), '']
    return lines


def _goodput_lines(pays, plots, shown):
    rows = [row for row in pays['slo_rows'] if row['kind'] != 'search']
    if not rows:
        return []
    lines = ['### SLO attainment and goodput', '',
             'Per run of a stage with an SLO: grid runs (closed loop at the grid\'s concurrencies) and load runs (open loop at '
             'each request rate, or the extra closed-loop concurrencies); the capacity search\'s runs are in results-slo.csv.', '',
             '| host | TP | dataset | setting | kind | c | rate | SLO attainment | req goodput (req/s) | token goodput (tok/s) '
             '| meets SLO |', '| --- | ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |']
    for row in rows:
        meets = '–' if row['slo_passed'] is None else ('yes' if row['slo_passed'] else 'no (%s)' % md_escape(row['binding'] or '?'))
        lines.append('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
            md_escape(row['host']), row['tp'], md_escape(_run_label(row['dataset'], row['temperature'])), md_escape(row['setting']),
            row['kind'], row['concurrency'], row['request_rate'], _pct(row['slo_attainment']), _fmt(row['request_goodput']),
            _fmt(row['token_goodput'], 1), meets))
    lines.append('')
    for row in rows:
        for kind, what in (('goodput', 'goodput vs request rate'), ('pareto', 'median TPOT vs throughput, Pareto front')):
            key = pays_figure_key(kind, row['host'], row['tp'], row['dataset'], row['temperature'])
            if plots.get(key) and key not in shown:
                shown.add(key)
                label = md_escape(_run_label(row['dataset'], row['temperature']))
                lines += ['![%s, %s TP%s, %s](%s)' % (what, md_escape(row['host']), row['tp'], label, plots[key]), '']
    return lines


def _schedule_lines(pays):
    if not pays['schedule']:
        return []
    lines = ['### Schedule: the best setting per band of concurrency', '',
             'Serve each band of concurrency with its setting (the SGLang flags beyond the model, TP, host, port and memory '
             'fraction every stage gets; schedule.json has each band\'s whole command line). "all": ranked by the geometric '
             'mean over the runs of the throughput over %s\'s.' % pays['baseline'], '']
    for item in pays['schedule']:
        run = 'all runs' if item['dataset'] == 'all' else _run_label(item['dataset'], item['temperature'])
        lines += ['#### %s TP%s, %s' % (md_escape(item['host']), item['tp'], md_escape(run)), '',
                  '| concurrency | best setting | SGLang flags |', '| --- | --- | --- |']
        for band in item['bands']:
            span = '%s' % band['from'] if band['from'] == band['to'] else '%s–%s' % (band['from'], band['to'])
            lines.append('| %s | %s | %s |' % (span, md_escape(band['setting']), method_flags(band['sglang_args'])))
        lines.append('')
    return lines


def pays_markdown(report, plots=None):
    """report.md's "Where speculation pays" section; [] without the load family (report['pays'] None)."""
    pays = report.get('pays')
    if not pays:
        return []
    plots = plots or {}
    lines = ['## Where speculation pays', ''] + _intro(pays)
    if not any(pays[key] for key in ('slo_rows', 'capacity', 'crossover', 'schedule')):
        return lines + ['The plan has the load family, but no run measured what this section shows (see the stages not '
                        'measured).', '']
    shown = set()
    lines += _capacity_lines(pays)
    lines += _crossover_lines(pays, plots, shown)
    lines += _goodput_lines(pays, plots, shown)
    lines += _schedule_lines(pays)
    for key in sorted((key for key in plots if key[:2] == ('pays', 'pareto') and key not in shown), key=str):  # runs without an SLO
        lines += ['![median TPOT vs throughput, Pareto front, %s TP%s, %s](%s)' % (
            md_escape(key[2]), key[3], md_escape(_run_label(key[4], key[5])), plots[key]), '']
    return lines
