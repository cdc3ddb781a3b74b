# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report of a checkpoint sweep: tau and speedup against the drafter's training step, the best
checkpoint, and evaluation.json.

A stage of a checkpoint sweep has params.step (the plan gives it to the stages of a method that uses a draft when the
draft is a list, a checkpoint set or a glob) and draft_checkpoint {name, step, run, ...}; its rows carry step and
checkpoint (rows.py). Rows of one host, TP, method and other parameters differ only by step: one "line" per
method setting (the setting without its step, 'DFlash n=16').

Pure functions of the report (rows.build_report) and of what read.read_host returned:
- checkpoint_report: the sweep as data, None when no row has a step (nothing changes for such a campaign). Per host
  and TP one table at the lowest temperature its checkpoint rows have (0 when measured) and the lowest concurrency
  measured there; per line and step the cells of each dataset (tables' cells: speedup and tau with their 95%
  intervals) and the overall values: the mean over the datasets weighted by their prompt counts, exactly as the
  papers' overall row (tables.weighted_mean), given only when every dataset of the table has the value. The
  overall speedup's and tau's intervals are the same weighted mean of the datasets' interval ends (at least as wide as
  the interval of the weighted mean of independent datasets). The best checkpoint of a line is the one with the highest overall
  speedup (the lowest step of equals); the report's best is the best of every line.
- evaluation: evaluation.json's content, the small summary the evaluation copies to the training host.
The renderers write it: markdown_sections.checkpoint_markdown and latex_sections.checkpoint_latex (the "Checkpoints"
section of report.md and report.tex, [] without a sweep), csv.render_evaluation (evaluation.json) and
figures.figure_specs (the plots).
"""

from __future__ import annotations

import datetime

from .read import MEASURED
from .rows import setting_label
from .tables import _cell, prompt_count, weighted_mean


STEP = 'step'


EVALUATION = 'evaluation.json'


# The metrics of a checkpoint's cell that evaluation.json gives per dataset (tau is rows' accept_length).
EVALUATION_METRICS = (('tau', 'accept_length'), ('tau_ci_low', 'accept_length_ci_low'), ('tau_ci_high', 'accept_length_ci_high'),
                      ('speedup', 'speedup'), ('speedup_ci_low', 'speedup_ci_low'), ('speedup_ci_high', 'speedup_ci_high'))


OVERALL_NOTE = 'weighted by prompts as the overall row of the papers\' table'


def _measured(row):
    return row['status'] == MEASURED and row.get('output_throughput') is not None


def line_setting(stage):
    """'DFlash n=16': how a paper names the setting of a stage, its step left out (the line its checkpoints make)."""
    params = dict((name, value) for name, value in (stage.get('params') or {}).items() if name != STEP)
    return setting_label(stage.get('method'), params)


def _overall(entry, datasets, prompts):
    """The overall values of one checkpoint: tables.weighted_mean over the datasets' cells, each only when every
    dataset has it (a checkpoint measured on fewer datasets is not compared on a different mix)."""
    rows = [{'prompts': prompts.get(dataset), 'cells': {'it': entry['cells'].get(dataset) or {}}} for dataset in datasets]
    out = {}
    for metric in ('speedup', 'speedup_ci_low', 'speedup_ci_high', 'accept_length', 'accept_length_ci_low', 'accept_length_ci_high'):
        complete = all(row['prompts'] and row['cells']['it'].get(metric) is not None for row in rows)
        out[metric] = weighted_mean(rows, 'it', metric) if complete and rows else None
    for metric in ('speedup', 'accept_length'):
        if out[metric] is None:
            out[metric + '_ci_low'] = out[metric + '_ci_high'] = None
    return out


def checkpoint_report(report, host_data):
    """The checkpoint sweep of the report as data; None when no row has a step.

    {'tables': [{'host', 'tp', 'temperature', 'concurrency', 'datasets': [...], 'prompts': {dataset: count},
      'lines': [{'method', 'setting', 'checkpoints': [{'step', 'name', 'run', 'stage', 'cells': {dataset: cell},
      'overall': {'speedup', 'accept_length', each with _ci_low, _ci_high}}], 'best': a checkpoint or None}]}],
     'best': {'host', 'tp', 'method', 'setting', 'checkpoint'} or None, 'run': the training run or None}
    A cell is tables' (speedup and accept_length with their _ci_low, _ci_high); a dataset a checkpoint was not
    measured on has none. Lines and checkpoints are in row order (steps ascending).
    """
    stages = dict(((data['host'], entry['stage']['id']), entry['stage']) for data in host_data for entry in data['stages'])
    swept = [row for row in report['rows'] if row.get(STEP) is not None]
    if not swept:
        return None
    groups = {}
    for row in swept:
        groups.setdefault((row['host'], row['tp']), []).append(row)
    tables, candidates, runs = [], [], []
    for (host, tp), rows in groups.items():
        measured = [row for row in rows if _measured(row)] or rows
        temperature = min(row['temperature'] for row in measured)
        concurrency = min(row['concurrency'] for row in measured if row['temperature'] == temperature)
        at = [row for row in rows if (row['temperature'], row['concurrency']) == (temperature, concurrency)]
        datasets = []
        for row in at:
            if row['dataset'] not in datasets:
                datasets.append(row['dataset'])
        prompts = dict((dataset, prompt_count(report, host, dataset, [row for row in at if row['dataset'] == dataset]))
                       for dataset in datasets)
        lines = {}
        for row in at:
            stage = stages.get((host, row['stage'])) or {'method': row['method'], 'params': {}}
            key = (row['method'], line_setting(stage))
            line = lines.setdefault(key, {'method': key[0], 'setting': key[1], 'checkpoints': {}})
            checkpoint = stage.get('draft_checkpoint') or {}
            entry = line['checkpoints'].setdefault(row[STEP], {
                'step': row[STEP], 'name': row.get('checkpoint'), 'run': checkpoint.get('run'), 'stage': row['stage'], 'cells': {}})
            if entry['run'] is not None and entry['run'] not in runs:
                runs.append(entry['run'])
            if _measured(row) and row['dataset'] not in entry['cells']:
                entry['cells'][row['dataset']] = _cell(row, ())
        table = {'host': host, 'tp': tp, 'temperature': temperature, 'concurrency': concurrency, 'datasets': datasets,
                 'prompts': prompts, 'lines': []}
        for line in lines.values():
            checkpoints = [line['checkpoints'][step] for step in sorted(line['checkpoints'])]
            for entry in checkpoints:
                entry['overall'] = _overall(entry, datasets, prompts)
            ranked = [entry for entry in checkpoints if entry['overall']['speedup'] is not None]
            best = max(ranked, key=lambda entry: entry['overall']['speedup']) if ranked else None  # max: the lowest step of equals
            table['lines'].append({'method': line['method'], 'setting': line['setting'], 'checkpoints': checkpoints, 'best': best})
            if best is not None:
                candidates.append({'host': host, 'tp': tp, 'method': line['method'], 'setting': line['setting'], 'checkpoint': best})
        tables.append(table)
    # max keeps the first of equals: the row order's
    best = max(candidates, key=lambda candidate: candidate['checkpoint']['overall']['speedup']) if candidates else None
    run = best['checkpoint']['run'] if best is not None and best['checkpoint']['run'] is not None else (runs[0] if runs else None)
    return {'tables': tables, 'best': best, 'run': run}


def _utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


def evaluation(report, generated=None):
    """evaluation.json's document of a report with checkpoint_report's data in report['checkpoints']; None without it.

    {campaign, generated (UTC ISO), run, best: {host, tp, method, setting, step, name, speedup, speedup_ci_low,
     speedup_ci_high, tau, dataset: 'overall'} or null (no speedup measured), checkpoints: [{step, name, run, host, tp,
     method, setting, datasets: {dataset: {tau, tau_ci_low, tau_ci_high, speedup, speedup_ci_low, speedup_ci_high,
     concurrency, temperature}}, overall_speedup, overall_speedup_ci_low, overall_speedup_ci_high, overall_tau}],
     report: 'report.md'}; a dataset a checkpoint was not measured on is left out of its datasets.
    """
    data = report.get('checkpoints')
    if not data:
        return None
    checkpoints = []
    for table in data['tables']:
        for line in table['lines']:
            for entry in line['checkpoints']:
                datasets = {}
                for dataset in table['datasets']:
                    cell = entry['cells'].get(dataset)
                    if cell is not None:
                        datasets[dataset] = dict(((name, cell.get(key)) for name, key in EVALUATION_METRICS),
                                                 concurrency=table['concurrency'], temperature=table['temperature'])
                checkpoints.append({'step': entry['step'], 'name': entry['name'], 'run': entry['run'], 'host': table['host'],
                                    'tp': table['tp'], 'method': line['method'], 'setting': line['setting'], 'datasets': datasets,
                                    'overall_speedup': entry['overall']['speedup'],
                                    'overall_speedup_ci_low': entry['overall']['speedup_ci_low'],
                                    'overall_speedup_ci_high': entry['overall']['speedup_ci_high'],
                                    'overall_tau': entry['overall']['accept_length']})
    best = None
    if data['best'] is not None:
        chosen = data['best']['checkpoint']
        best = {'host': data['best']['host'], 'tp': data['best']['tp'], 'method': data['best']['method'],
                'setting': data['best']['setting'], 'step': chosen['step'], 'name': chosen['name'],
                'speedup': chosen['overall']['speedup'], 'speedup_ci_low': chosen['overall']['speedup_ci_low'],
                'speedup_ci_high': chosen['overall']['speedup_ci_high'], 'tau': chosen['overall']['accept_length'],
                'dataset': 'overall'}
    return {'campaign': report['campaign'], 'generated': generated or _utc_now(), 'run': data['run'], 'best': best,
            'checkpoints': checkpoints, 'report': 'report.md'}


def figure_key(host, tp, dataset):
    """The key of a checkpoint figure in write_plots' {key: file name}: 'TP<n>' is never a dataset name (ids are
    lower case), so no other figure's key is the same."""
    return (host, 'TP%s' % tp, dataset, 'checkpoints')
