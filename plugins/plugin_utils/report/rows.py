# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, data: rows (one per host, stage, dataset, temperature and concurrency), the repeats' and the
categories' rows, the datasets, the best settings; build_report puts the report together.

Pure functions of what read.read_host returns. Definitions (as in the DFlash and DDTree papers):
- speedup: output throughput (tokens/s) of a stage over that of the baseline method (autoregressive) on the same host,
  TP, dataset, temperature and concurrency. Empty when that baseline was not measured: never guessed from another.
- acceptance length tau: tokens per verify step. Per request (accept_length_source 'requests'): the sum of the run's
  completion tokens over the sum of its verify steps (meta_info.spec_verify_ct of each request); the /server_info
  figure is the cross-check, flagged beyond 2%. A result from before per-request acceptance carries the server's
  figure (source 'server_info'). Autoregressive decoding reports none (it is 1 by definition).
- a run is (dataset, temperature, concurrency); a result without them is ('random', 0), so old campaigns compare.
- repeats: a row aggregates its run's measured repeats (the complete results; else whatever results it has,
  for its status). STAT_METRICS are the mean over the repeats with their sample sd, 95% Student t interval and CV
  (stats.summary; null for one repeat); the other numbers are means, the counts sums. The speedup is the
  ratio of the two mean throughputs with Fieller's 95% interval (stats.fieller; null with one repeat a side
  or when unbounded); significant when the interval excludes 1.0. A row is noisy when the CV of its throughput (or of
  its tau) exceeds noisy_cv. results-repeats.csv holds each repeat's own numbers (REPEAT_KEYS).
- categories: per category of a dataset's prompts (the raw records of a categorized dataset), tau (sum of completion
  tokens / sum of verify steps) and decode throughput (sum of output tokens / sum of request latency) per repeat,
  then their statistics; the speedup is the decode throughput over the baseline's in the same category.
- energy: each repeat's energy keys as bench_run measured them (the stage's GPUs over the measured run);
  a row's energy_j, powers and J per output token are means over its repeats, output_tokens_per_j has the statistics
  of STAT_METRICS, and energy_ratio is the row's mean J per output token over its speedup baseline's, with Fieller's
  interval over the two sides' per-repeat J per output token. gpu_throttled: any repeat saw a clock event reason.
- checkpoints: a stage of a checkpoint sweep has params.step; its rows carry it as step (null otherwise) and
  the name of the drafter checkpoint it measured (the plan's draft_checkpoint.name) as checkpoint. The rows of one
  sweep differ only by step; checkpoints compares them.
- time: each host's time_breakdown (time.py): where the campaign's wall time went, in results.json's hosts.
- why: per measured row the acceptance in full, the papers' and Spec-Bench's speedups, the verify-cost factor and
  the cache-hit rates (why.py), report['why'], in results-why.csv and results.json.
- side by side: each row carries its stage's wave, beside (how many other stages were in flight with it:
  len(status.json's ran_beside), 0 for results from before the key), ran_beside (their ids) and interference_of. A stage
  with interference_of (the plan's re-run of a stage alone, a control measurement) is no result row: its rows are
  report['control_rows'] (in results.csv and results.json's rows, never in the tables, speedups, best settings, plots
  or checkpoints) and interference compares them with the stage they re-run (report['interference']).
"""

from __future__ import annotations

from ansible_collections.specdec.bench.plugins.module_utils._common import finite
from .compare import _set_speedup, add_energy_ratio, add_speedup, mark_noisy
from .interference import interference_sections
from .lossless import lossless_report, mark_settings
from .keys import (
    _NAMES, BASELINE_METHOD, CATEGORY_KEYS, DATASET_KEYS, DEFAULT_NOISY_CV, INVALID, METHOD_NAMES, PARAM_NAMES,
    REPEAT_ENERGY_TEXTS, REPEAT_NUMBERS, ROW_KEYS, RUN_KEYS, SPEEDUP_KEYS, STAT_METRICS, STAT_SUFFIXES)
from .read import DEFAULT_TEMPERATURE, interference_of, MEASURED, planned_runs, ran_beside, RANDOM, stage_wave
from .schema import RESULT_COUNTS, RESULT_ENERGY_NUMBERS, RESULT_FLAGS, RESULT_NUMBERS, RESULT_TEXTS, RESULT_WORKLOAD
from .stats import _mean, summaries
from .time import time_breakdown
from .why import why_rows


def build_label(build):
    """'sglang-ddtree-pr29907 (0.5.23+sim in /usr/bin/python3)': the profile and the SGLang the stage's flags were for."""
    if not build or not build.get('name'):
        return None
    found = build.get('version') or (('release %s' % build['release']) if build.get('release') else None)
    where = ' in %s' % build['python'] if build.get('python') else ''
    return '%s (%s%s)' % (build['name'], found or 'version unknown', where) if found or where else build['name']


def setting_label(method, params):
    """How a paper names a setting: 'DDTree B=64 k=4', 'DFlash n=16', 'AR'."""
    parts = [METHOD_NAMES.get(method, method or '?')]
    for name in sorted(params or {}, key=lambda n: (list(PARAM_NAMES).index(n) if n in PARAM_NAMES else 99, n)):
        parts.append('%s=%s' % (PARAM_NAMES.get(name, name), params[name]))
    return ' '.join(parts)


def _stage_gpus(stage, gpus_doc):
    """(names of the stage's GPUs, how many, driver, CUDA) from its GPU snapshot."""
    gpus_doc = gpus_doc or {}
    listed = gpus_doc.get('nvidia_gpus') or []
    wanted = set(stage.get('gpus') or [])
    mine = [gpu for gpu in listed if gpu.get('uuid') in wanted] if wanted else listed
    names = []
    for gpu in mine:
        if gpu.get('name') and gpu['name'] not in names:
            names.append(gpu['name'])
    driver = gpus_doc.get('nvidia_driver') or {}
    return ' + '.join(names) or None, len(mine) or None, driver.get('version'), driver.get('cuda_version')


def _row_status(stage_status, result, skipped=None):
    """The status of one (stage, run) row: ok only when the run completed every prompt."""
    if skipped:
        return INVALID
    if stage_status is None:
        return 'not run'
    status = stage_status.get('status') or 'unknown'
    if status != MEASURED:
        return status
    if result is None:
        return 'missing'
    return MEASURED if result.get('complete') else 'incomplete'


def is_default_run(dataset, temperature):
    """True for the run a workload without datasets makes: random prompts at temperature 0 (what reports showed alone)."""
    return dataset == RANDOM and temperature == DEFAULT_TEMPERATURE


def _missing_reason(run):
    dataset, temperature, _concurrency = run
    if is_default_run(dataset, temperature):
        return 'no result file for this concurrency'
    return 'no result file for dataset %s at temperature %g and this concurrency' % (dataset, temperature)


def _used(results):
    """The repeats a row aggregates: its complete results, else (for its status) every result it has, by repeat."""
    found = [(repeat, results[repeat]) for repeat in sorted(results) if results[repeat] is not None]
    complete = [(repeat, result) for repeat, result in found if result.get('complete')]
    return complete or found


def _fill(row, results):
    """The row's numbers from its repeats' results: texts and flags of the first (a flag when any has it), counts
    summed, the other numbers' means. Returns [(row, metric, values over the repeats)] of STAT_METRICS that have
    values, for add_statistics."""
    first = results[0]
    for key in RESULT_NUMBERS + RESULT_WORKLOAD:
        if key in RESULT_TEXTS:
            row[key] = first.get(key)
        elif key in RESULT_FLAGS:
            flags = [result.get(key) for result in results if result.get(key) is not None]
            row[key] = any(flags) if flags else None
        elif key in ('completed', 'failed', 'requests'):
            counts = [int(result[key]) for result in results if result.get(key) is not None]
            row[key] = sum(counts) if counts else None
        elif key in RESULT_COUNTS or key == 'top_k':
            row[key] = int(first[key]) if first.get(key) is not None else None
        else:
            row[key] = _mean([finite(result.get(key)) for result in results])
    _fill_energy(row, results)
    row['repeats'] = len(results)
    pending = [(row, metric, [value for value in (finite(result.get(metric)) for result in results) if value is not None])
               for metric in STAT_METRICS]
    return [item for item in pending if item[2]]  # a metric without values keeps its statistics null (the row's default)


def _distinct(values):
    """The distinct non-empty values, in the order first met, joined by ', '; None when there is none."""
    seen = []
    for value in values:
        if value and value not in seen:
            seen.append(value)
    return ', '.join(seen) or None


def _fill_energy(row, results):
    """The row's energy from its repeats' results: the numbers' means (output_tokens_per_j's statistics
    come with STAT_METRICS), how each was measured (the distinct methods, backends and power sources), gpu_throttled
    true when any repeat saw a clock event reason (false when every repeat with telemetry saw none, null without any)
    and throttle_reasons the reasons seen."""
    for key in RESULT_ENERGY_NUMBERS:
        row[key] = _mean([finite(result.get(key)) for result in results])
    for key in ('energy_method', 'energy_backend', 'power_source'):
        row[key] = _distinct(result.get(key) for result in results)
    seen = [result['gpu_throttled'] for result in results if isinstance(result.get('gpu_throttled'), list)]
    row['gpu_throttled'] = any(seen) if seen else None
    row['throttle_reasons'] = _distinct(reason for reasons in seen for reason in reasons)


def add_statistics(pending, suffixes=STAT_SUFFIXES):
    """Fill each (row, metric, values) of pending with the columns '<metric>_<suffix>' of values' summary
    (stats.summaries) for each of suffixes."""
    for (row, metric, _values), got in zip(pending, summaries([values for _row, _metric, values in pending])):
        row.update(('%s_%s' % (metric, suffix), got[suffix]) for suffix in suffixes)


def stage_rows(host, campaign, entry, pending=None):
    """One row per run (dataset, temperature, concurrency) of a stage: those its plan names and those with results,
    each aggregated over its repeats (entry['results'][run] is {repeat: result}). pending: a list that takes the
    rows' statistics still to compute (add_statistics, once for every stage); None computes them here."""
    stage, status = entry['stage'], entry['status']
    params = stage.get('params') or {}
    server_info = entry['server_info'] or {}
    gpu_name, gpu_count, driver, cuda = _stage_gpus(stage, entry['gpus'])
    reason = (status or {}).get('reason')
    if status is None:
        reason = entry['skipped']['status'] or stage.get('reason') or 'no status.json: the stage never ran'
    base = {
        'host': host, 'campaign': campaign, 'stage': stage['id'], 'method': stage.get('method'),
        'setting': setting_label(stage.get('method'), params), 'tp': stage.get('tp'),
        'budget': params.get('budget'), 'topk': params.get('topk'), 'num_draft_tokens': params.get('num_draft_tokens'),
        'step': params.get('step'), 'checkpoint': (stage.get('draft_checkpoint') or {}).get('name'),
        'wave': stage_wave(entry), 'beside': len(ran_beside(entry)), 'ran_beside': ','.join(ran_beside(entry)) or None,
        'interference_of': interference_of(entry),
        'reason': reason,
        'gpu_name': gpu_name, 'gpu_count': gpu_count, 'gpus': ','.join(stage.get('gpus') or []) or None,
        'driver': driver, 'cuda': cuda,
        'model': server_info.get('model_path') or stage.get('model_path'),
        'draft': server_info.get('speculative_draft_model_path') or stage.get('draft_path'),
        'sglang_version': server_info.get('version') or (stage.get('sglang_build') or {}).get('version'),
        'sglang_build': (stage.get('sglang_build') or {}).get('name'),
    }
    runs = sorted(set(planned_runs(stage)) | set(entry['results']))
    rows, mine = [], []
    for run in runs:
        used = [result for _repeat, result in _used(entry['results'].get(run) or {})]
        result = used[0] if used else None
        row = dict.fromkeys(ROW_KEYS)
        row.update(base)
        row.update(zip(RUN_KEYS, run))
        row['repeats'] = 0
        skipped = entry['skipped']['status'] or (None if result is not None and result.get('complete')
                                                 else entry['skipped']['results'].get(run))
        row['status'] = _row_status(status, result, skipped)
        if row['status'] == INVALID:
            row['reason'] = skipped
        elif row['status'] in ('missing', 'incomplete'):
            row['reason'] = (_missing_reason(run) if result is None else
                             'incomplete run: %s of %s prompts completed' % (result.get('completed'), result.get('num_prompts')))
        if used:
            mine.extend(_fill(row, used))
        rows.append(row)
    if pending is None:
        add_statistics(mine)
    else:
        pending.extend(mine)
    return rows


def repeat_rows(host, campaign, entry):
    """One row per result of a measured stage's runs (REPEAT_KEYS): each repeat's own numbers."""
    stage = entry['stage']
    setting = setting_label(stage.get('method'), stage.get('params'))
    rows = []
    for run in sorted(entry['results']):
        for repeat, result in sorted((entry['results'][run] or {}).items()):
            if result is None:
                continue
            row = {'host': host, 'campaign': campaign, 'stage': stage['id'], 'method': stage.get('method'),
                   'setting': setting, 'tp': stage.get('tp'),
                   'repeat': repeat, 'status': MEASURED if result.get('complete') else 'incomplete'}
            row.update(zip(RUN_KEYS, run))
            for key in REPEAT_NUMBERS:
                value = result.get(key)
                row[key] = (int(value) if value is not None else None) if key in RESULT_COUNTS + ('energy_samples',) else finite(value)
            for key in REPEAT_ENERGY_TEXTS:
                row[key] = result.get(key)
            if isinstance(row['gpu_throttled'], list):
                row['gpu_throttled'] = ', '.join(row['gpu_throttled'])
            rows.append(row)
    return rows


def _tokens(record):
    value = record.get('output_tokens')
    return value if value is not None else record.get('completion_tokens') or 0


def category_measures(records):
    """{category: {'requests', 'accept_length', 'decode_throughput'}} of one repeat's raw records: over its finished,
    measured (not warm-up) requests with a category; tau is the sum of completion tokens over the sum of verify steps
    of the requests that carry spec_verify_ct > 0 (None when none does), the decode throughput the sum of output
    tokens over the sum of request latencies."""
    sums = {}
    for record in records:
        if record.get('warmup') or not record.get('success') or record.get('category') is None:
            continue
        item = sums.setdefault(record['category'], [0, 0, 0, 0, 0.0])
        item[0] += 1
        steps = record.get('spec_verify_ct')
        if steps:
            item[1] += _tokens(record)
            item[2] += steps
        if record.get('latency_s') is not None:
            item[3] += _tokens(record)
            item[4] += record['latency_s']
    return {category: {'requests': count, 'accept_length': tokens / steps if steps else None,
                       'decode_throughput': out / seconds if seconds > 0 else None}
            for category, (count, tokens, steps, out, seconds) in sums.items()}


def category_rows(host_data, rows, campaign):
    """The per-category rows (CATEGORY_KEYS) of the measured rows whose run has raw records, speedups against the
    row's baseline stage in the same category."""
    by_row = dict(((row['host'], row['stage']) + tuple(row[key] for key in RUN_KEYS), row) for row in rows)
    samples = {}
    for data in host_data:
        for entry in data['stages']:
            for run, repeats in sorted((entry.get('raw') or {}).items()):
                row = by_row.get((data['host'], entry['stage']['id']) + run)
                if row is None or row['status'] != MEASURED:
                    continue
                complete = [repeat for repeat, result in (entry['results'].get(run) or {}).items() if result and result.get('complete')]
                for repeat in sorted(repeats):
                    if repeat not in complete:
                        continue
                    for category, measures in category_measures(repeats[repeat]).items():
                        samples.setdefault((data['host'], entry['stage']['id']) + run, {}).setdefault(category, []).append(measures)
    out, pending = [], []
    for key, categories in samples.items():
        row = by_row[key]
        for category in sorted(categories):
            measures = categories[category]
            item = dict.fromkeys(CATEGORY_KEYS)
            item.update((name, row[name]) for name in _NAMES)
            item.update(campaign=campaign, category=category, repeats=len(measures),
                        requests=sum(m['requests'] for m in measures), baseline_stage=None)
            for metric in ('accept_length', 'decode_throughput'):
                pending.append((item, metric, [m[metric] for m in measures if m[metric] is not None]))
            item.update(dict.fromkeys(SPEEDUP_KEYS))
            baseline = samples.get((row['host'], row['baseline_stage']) + key[2:], {}).get(category) if row['baseline_stage'] else None
            if baseline and row['baseline_stage'] != row['stage']:
                _set_speedup(item, [m['decode_throughput'] for m in measures if m['decode_throughput'] is not None],
                             [m['decode_throughput'] for m in baseline if m['decode_throughput'] is not None])
                item['baseline_stage'] = row['baseline_stage'] if item['speedup'] is not None else None
            out.append(item)
    add_statistics(pending, ('mean',) + STAT_SUFFIXES)
    for item, metric, _values in pending:
        item[metric] = item.pop(metric + '_mean')
    method_order = {}
    for row in rows:
        method_order.setdefault(row['method'], len(method_order))
    out.sort(key=lambda item: (item['host'], item['dataset'], item['temperature'], item['tp'] or 0,
                               method_order.get(item['method'], 0), item['stage'], item['concurrency'] or 0, item['category']))
    return out


def _environment(host_data):
    """The host's environment as its stages recorded it: GPUs, driver, CUDA, SGLang version(s), model, draft."""
    gpus, drivers, cudas, versions, models, drafts, builds = {}, [], [], [], [], [], []

    def note(values, value):
        if value and value not in values:
            values.append(value)
    for entry in host_data['stages']:
        doc = entry['gpus'] or {}
        for gpu in doc.get('nvidia_gpus') or []:
            gpus.setdefault(gpu.get('uuid') or gpu.get('index'), gpu)
        note(drivers, (doc.get('nvidia_driver') or {}).get('version'))
        note(cudas, (doc.get('nvidia_driver') or {}).get('cuda_version'))
        info = entry['server_info'] or {}
        note(versions, info.get('version'))
        note(builds, build_label(entry['stage'].get('sglang_build')))
        note(models, info.get('model_path') or entry['stage'].get('model_path'))
        note(drafts, info.get('speculative_draft_model_path') or entry['stage'].get('draft_path'))
    kinds = {}
    for gpu in sorted(gpus.values(), key=lambda g: (g.get('index') is None, g.get('index'))):
        key = (gpu.get('name') or 'unknown GPU', gpu.get('memory_total_mib'))
        kinds[key] = kinds.get(key, 0) + 1
    workload = {}
    for entry in host_data['stages']:
        if entry['stage'].get('workload'):
            workload = entry['stage']['workload']
            break
    return {
        'gpus': [{'name': name, 'memory_total_mib': mib, 'count': count} for (name, mib), count in kinds.items()],
        'driver': ', '.join(drivers) or None, 'cuda': ', '.join(cudas) or None,
        'sglang_version': ', '.join(versions) or None, 'sglang_build': ', '.join(builds) or None,
        'model': ', '.join(models) or None,
        'draft': ', '.join(drafts) or None, 'workload': workload,
    }


# Where a row's result keeps what a dataset record shows.
_ROW_DATASET = {'kind': 'dataset_kind', 'source': 'dataset_source', 'source_sha256': 'dataset_source_sha256',
                'sha256': 'dataset_sha256', 'template_sha256': 'template_sha256', 'prompts_sha256': 'prompts_sha256',
                'max_new_tokens': 'max_new_tokens', 'turns': 'turns'}


def dataset_records(host_data, rows):
    """The datasets each host ran, one record per host, name and normalized sha256, in the order first met.

    A record's fields are DATASET_KEYS; sha256 is the normalized set's (prepared normalized_sha256, a row's
    dataset_sha256). A campaign from before datasets (no such entry anywhere) has none.
    """
    records = {}

    def note(host, item):
        record = dict.fromkeys(DATASET_KEYS)
        record.update((key, item.get(key)) for key in DATASET_KEYS if key != 'host')
        record['host'] = host
        record['sha256'] = item.get('normalized_sha256') or item.get('sha256')
        key = (host, record['name'])
        old = records.get(key)
        if old is not None and None not in (old['sha256'], record['sha256']) and old['sha256'] != record['sha256']:
            key = (host, record['name'], record['sha256'])  # the same name prepared into other prompts: both shown
            old = records.get(key)
        if old is None:
            records[key] = record
            return
        for field, value in record.items():
            if old[field] is None:
                old[field] = value
    for data in host_data:
        for entry in data['stages']:
            for item in (entry['status'] or {}).get('datasets') or []:
                note(data['host'], item)
        for entry in data['stages']:
            workload = entry['stage'].get('workload') or {}
            for item in workload.get('datasets') or []:
                if item.get('name') == RANDOM:
                    item = dict(item, kind=RANDOM, input_len=item.get('input_len', workload.get('input_len')),
                                output_len=item.get('output_len', workload.get('output_len')))
                note(data['host'], item)
    for row in rows:
        if row['dataset_kind'] is not None:
            note(row['host'], dict(((field, row[key]) for field, key in _ROW_DATASET.items()), name=row['dataset']))
    return list(records.values())


def _sort_key(row, method_order):
    params = (row['budget'] or 0, row['topk'] or 0, row['num_draft_tokens'] or 0, row['step'] or 0)
    return (row['host'], row['dataset'], row['temperature'], row['tp'] or 0, method_order.get(row['method'], len(method_order)),
            params, row['stage'], row['concurrency'] or 0)


def build_report(host_data, campaign, baseline_method=BASELINE_METHOD, noisy_cv=DEFAULT_NOISY_CV, execute=None):
    """The report's data from read_host() of each host: rows (speedup filled, aggregated over repeats), each repeat's
    row, the per-category rows, environments, not-measured stages, best; the rows of interference stages (control_rows)
    and their comparison with the stages they re-run (interference, interference); 'lossless' (outputs against AR's
    and task accuracy, lossless.py; execute runs a code set's program) when a stage kept outputs, and then a stage
    whose answers differ from AR's has its setting label marked (lossless.ANSWERS_MARK) in every row."""
    rows, controls, repeats, pending = [], [], [], []
    for data in host_data:
        for entry in data['stages']:
            (controls if interference_of(entry) else rows).extend(stage_rows(data['host'], campaign, entry, pending))
            repeats.extend(repeat_rows(data['host'], campaign, entry))
    add_statistics(pending)
    samples, energy = {}, {}
    for item in repeats:
        key = (item['host'], item['stage']) + tuple(item[name] for name in RUN_KEYS)
        if item['status'] == MEASURED and item['output_throughput'] is not None:
            samples.setdefault(key, []).append(item['output_throughput'])
        if item['status'] == MEASURED and item['j_per_output_token'] is not None:
            energy.setdefault(key, []).append(item['j_per_output_token'])
    add_speedup(rows, baseline_method, samples)  # a control measurement is never a baseline, nor has a speedup
    add_energy_ratio(rows, energy)
    mark_noisy(rows + controls, noisy_cv)
    answers = lossless_report(host_data, rows, baseline_method, execute)
    if answers is not None:
        mark_settings(rows + controls + repeats, answers['flagged'])
    method_order = {baseline_method: 0}
    for row in rows:
        method_order.setdefault(row['method'], len(method_order))
    rows.sort(key=lambda r: _sort_key(r, method_order))
    controls.sort(key=lambda r: _sort_key(r, method_order))
    order = dict(((row['host'], row['stage']) + tuple(row[key] for key in RUN_KEYS), index) for index, row in enumerate(rows + controls))
    repeats.sort(key=lambda item: (order.get((item['host'], item['stage']) + tuple(item[key] for key in RUN_KEYS), 0), item['repeat']))
    not_measured = []
    for data in host_data:
        for entry in data['stages']:
            status = INVALID if entry['skipped']['status'] else (entry['status'] or {}).get('status') or 'not run'
            if status != MEASURED and not interference_of(entry):  # an interference stage's fate is in its own section
                not_measured.append({
                    'host': data['host'], 'stage': entry['stage']['id'], 'tp': entry['stage'].get('tp'),
                    'setting': setting_label(entry['stage'].get('method'), entry['stage'].get('params')),
                    'status': status,
                    'reason': entry['skipped']['status'] or (entry['status'] or {}).get('reason') or entry['stage'].get('reason')
                    or ('no status.json: the stage never ran' if entry['status'] is None else None),
                })
    report = {
        'campaign': campaign,
        'baseline_method': baseline_method,
        'noisy_cv': noisy_cv,
        'hosts': [{'host': data['host'], 'found': data['found'], 'stages': len(data['stages']),
                   'environment': _environment(data), 'time_breakdown': time_breakdown(data)} for data in host_data],
        'rows': rows,
        'control_rows': controls,
        'repeats': repeats,
        'categories': category_rows(host_data, rows, campaign),
        'why': why_rows(host_data, rows, baseline_method),
        'datasets': dataset_records(host_data, rows + controls),
        'not_measured': not_measured,
        'best': best_settings(rows, baseline_method),
        'interference': interference_sections(host_data, rows, controls),
        'skipped_files': sorted((item for data in host_data for item in data.get('skipped_files', [])), key=lambda item: item['path']),
    }
    if answers is not None:  # only where a stage kept outputs: a report of results without them is what it was
        report['lossless'] = answers
    return report


def best_settings(rows, baseline_method=BASELINE_METHOD):
    """Per host, dataset, temperature, TP and concurrency, the measured row with the highest output throughput."""
    best = {}
    for row in rows:
        if row['status'] != MEASURED or row['output_throughput'] is None:
            continue
        key = (row['host'], row['dataset'], row['temperature'], row['tp'] or 0, row['concurrency'] or 0)
        if key not in best or row['output_throughput'] > best[key]['output_throughput']:
            best[key] = row
    return [{'host': row['host'], 'dataset': row['dataset'], 'temperature': row['temperature'], 'tp': row['tp'],
             'concurrency': row['concurrency'], 'stage': row['stage'], 'setting': row['setting'],
             'output_throughput': row['output_throughput'], 'speedup': row['speedup'], 'accept_length': row['accept_length'],
             'accept_length_flag': row['accept_length_flag'], 'is_baseline': row['method'] == baseline_method,
             'beside': row.get('beside') or 0}
            for _key, row in sorted(best.items(), key=lambda item: item[0])]
