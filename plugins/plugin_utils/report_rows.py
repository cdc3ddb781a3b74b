# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, step 2: rows (one per host, stage, dataset, temperature and concurrency), speedups, the best
settings, comparisons.

Pure functions of what report_read.read_host returns. Definitions (as in the DFlash and DDTree papers):
- speedup: output throughput (tokens/s) of a stage over that of the baseline method (autoregressive) on the same host,
  TP, dataset, temperature and concurrency. Empty when that baseline was not measured: never guessed from another.
- acceptance length tau: tokens per verify step. Per request (accept_length_source 'requests'): the sum of the run's
  completion tokens over the sum of its verify steps (meta_info.spec_verify_ct of each request); the /server_info
  figure is the cross-check, flagged beyond 2%. A result from before per-request acceptance carries the server's
  figure (source 'server_info'). Autoregressive decoding reports none (it is 1 by definition).
- a run is (dataset, temperature, concurrency); a result without them is ('random', 0), so old campaigns compare.
"""

from __future__ import annotations

from ansible_collections.specdec.bench.plugins.module_utils._common import finite
from ansible_collections.specdec.bench.plugins.plugin_utils.report_read import (
    DEFAULT_TEMPERATURE, MEASURED, RANDOM, RESULT_COUNTS, RESULT_FLAGS, RESULT_NUMBERS, RESULT_TEXTS, RESULT_WORKLOAD, planned_runs)

BASELINE_METHOD = 'autoregressive'
# Methods and parameters as a reader of the papers knows them; anything else is shown as it is named.
METHOD_NAMES = {'autoregressive': 'AR', 'dflash': 'DFlash', 'ddtree': 'DDTree'}
PARAM_NAMES = {'budget': 'B', 'topk': 'k', 'num_draft_tokens': 'n'}
# Every column of results.csv, in order; results.json rows carry the same keys.
ROW_KEYS = (
    'host', 'campaign', 'stage', 'method', 'setting', 'tp', 'budget', 'topk', 'num_draft_tokens', 'dataset', 'temperature',
    'concurrency', 'status', 'reason', 'output_throughput', 'speedup', 'baseline_stage', 'accept_length', 'accept_length_source',
    'accept_length_server_info', 'accept_length_disagreement', 'accept_length_flag', 'accept_length_p10',
    'accept_length_median', 'accept_length_p90', 'request_throughput', 'completed', 'failed', 'requests', 'mean_output_len',
    'duration_s',
    'mean_ttft_ms', 'median_ttft_ms', 'p99_ttft_ms', 'mean_itl_ms', 'median_itl_ms', 'p99_itl_ms',
    'median_tpot_ms', 'p99_tpot_ms', 'median_e2e_latency_ms', 'p99_e2e_latency_ms',
    'harness', 'dataset_kind', 'dataset_source', 'dataset_source_sha256', 'dataset_sha256', 'prompts_sha256',
    'template_sha256', 'turns', 'top_p', 'top_k', 'ignore_eos', 'max_new_tokens',
    'gpu_name', 'gpu_count', 'gpus', 'driver', 'cuda', 'model', 'draft', 'sglang_version', 'sglang_build',
)
# A row's run: the keys that, with host and stage, name it.
RUN_KEYS = ('dataset', 'temperature', 'concurrency')
# Every column of compare-<campaign>.csv, in order.
COMPARE_KEYS = (
    'host', 'stage', 'setting', 'tp', 'dataset', 'temperature', 'concurrency', 'status_before', 'status_after',
    'output_throughput_before', 'output_throughput_after', 'output_throughput_delta_pct',
    'speedup_before', 'speedup_after', 'speedup_delta',
    'accept_length_before', 'accept_length_after', 'accept_length_delta',
    'median_ttft_ms_before', 'median_ttft_ms_after', 'median_ttft_ms_delta_pct',
    'median_itl_ms_before', 'median_itl_ms_after', 'median_itl_ms_delta_pct',
)
# The status of a row whose status.json or result file was skipped (not of its schema); its reason names the file.
INVALID = 'invalid'


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


def stage_rows(host, campaign, entry):
    """One row per run (dataset, temperature, concurrency) of a stage: those its plan names and those with results."""
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
        'reason': reason,
        'gpu_name': gpu_name, 'gpu_count': gpu_count, 'gpus': ','.join(stage.get('gpus') or []) or None,
        'driver': driver, 'cuda': cuda,
        'model': server_info.get('model_path') or stage.get('model_path'),
        'draft': server_info.get('speculative_draft_model_path') or stage.get('draft_path'),
        'sglang_version': server_info.get('version') or (stage.get('sglang_build') or {}).get('version'),
        'sglang_build': (stage.get('sglang_build') or {}).get('name'),
    }
    runs = sorted(set(planned_runs(stage)) | set(entry['results']))
    rows = []
    for run in runs:
        result = entry['results'].get(run)
        row = dict.fromkeys(ROW_KEYS)
        row.update(base)
        row.update(zip(RUN_KEYS, run))
        skipped = entry['skipped']['status'] or entry['skipped']['results'].get(run)
        row['status'] = _row_status(status, result, skipped)
        if row['status'] == INVALID:
            row['reason'] = skipped
        elif row['status'] in ('missing', 'incomplete'):
            row['reason'] = (_missing_reason(run) if result is None else
                             'incomplete run: %s of %s prompts completed' % (result.get('completed'), result.get('num_prompts')))
        if result is not None:
            for key in RESULT_NUMBERS + RESULT_WORKLOAD:
                value = result.get(key)
                if key in RESULT_TEXTS or key in RESULT_FLAGS:
                    row[key] = value
                elif key in RESULT_COUNTS or key == 'top_k':
                    row[key] = int(value) if value is not None else None
                else:
                    row[key] = finite(value)
        rows.append(row)
    return rows


def add_speedup(rows, baseline_method=BASELINE_METHOD):
    """Fill speedup: output throughput over the baseline's on the same host, TP, dataset, temperature and concurrency;
    empty without one."""
    def key(row):
        return (row['host'], row['tp']) + tuple(row[name] for name in RUN_KEYS)
    baselines = {}
    for row in rows:
        if row['method'] == baseline_method and row['status'] == MEASURED and row['output_throughput']:
            baselines.setdefault(key(row), []).append(row)
    for row in rows:
        row['speedup'] = None
        row['baseline_stage'] = None
        if row['status'] != MEASURED or row['output_throughput'] is None:
            continue
        candidates = baselines.get(key(row)) or []
        if len(candidates) > 1:  # the same TP on other GPUs: only the baseline on the same GPUs counts
            candidates = [c for c in candidates if c['gpus'] == row['gpus']]
        if len(candidates) == 1:
            row['speedup'] = row['output_throughput'] / candidates[0]['output_throughput']
            row['baseline_stage'] = candidates[0]['stage']
    return rows


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


# What the datasets section shows of each dataset a host ran, from status.json's prepared entries (workload_prepare),
# else the plan's validated entries, else the result rows.
DATASET_KEYS = ('host', 'name', 'kind', 'source', 'source_sha256', 'sha256', 'pinned', 'count', 'num_prompts', 'turns',
                'max_new_tokens', 'template_sha256', 'prompts_sha256', 'input_len', 'output_len')
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
    params = (row['budget'] or 0, row['topk'] or 0, row['num_draft_tokens'] or 0)
    return (row['host'], row['dataset'], row['temperature'], row['tp'] or 0, method_order.get(row['method'], len(method_order)),
            params, row['stage'], row['concurrency'] or 0)


def build_report(host_data, campaign, baseline_method=BASELINE_METHOD):
    """The report's data from read_host() of each host: rows (speedup filled), environments, not-measured stages, best."""
    rows = []
    for data in host_data:
        for entry in data['stages']:
            rows.extend(stage_rows(data['host'], campaign, entry))
    add_speedup(rows, baseline_method)
    method_order = {baseline_method: 0}
    for row in rows:
        method_order.setdefault(row['method'], len(method_order))
    rows.sort(key=lambda r: _sort_key(r, method_order))
    not_measured = []
    for data in host_data:
        for entry in data['stages']:
            status = INVALID if entry['skipped']['status'] else (entry['status'] or {}).get('status') or 'not run'
            if status != MEASURED:
                not_measured.append({
                    'host': data['host'], 'stage': entry['stage']['id'], 'tp': entry['stage'].get('tp'),
                    'setting': setting_label(entry['stage'].get('method'), entry['stage'].get('params')),
                    'status': status,
                    'reason': entry['skipped']['status'] or (entry['status'] or {}).get('reason') or entry['stage'].get('reason')
                    or ('no status.json: the stage never ran' if entry['status'] is None else None),
                })
    return {
        'campaign': campaign,
        'baseline_method': baseline_method,
        'hosts': [{'host': data['host'], 'found': data['found'], 'stages': len(data['stages']),
                   'environment': _environment(data)} for data in host_data],
        'rows': rows,
        'datasets': dataset_records(host_data, rows),
        'not_measured': not_measured,
        'best': best_settings(rows, baseline_method),
        'skipped_files': sorted((item for data in host_data for item in data.get('skipped_files', [])), key=lambda item: item['path']),
    }


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
             'accept_length_flag': row['accept_length_flag'], 'is_baseline': row['method'] == baseline_method}
            for _key, row in sorted(best.items(), key=lambda item: item[0])]


def _delta(after, before):
    return None if after is None or before is None else after - before


def _delta_pct(after, before):
    return None if after is None or not before else (after - before) / before * 100.0


def _compare_key(row):
    """(host, stage, dataset, temperature, concurrency); a row without a run's dataset is ('random', 0), as old ones."""
    dataset = row.get('dataset') or RANDOM
    temperature = row.get('temperature')
    return (row['host'], row['stage'], dataset, DEFAULT_TEMPERATURE if temperature is None else temperature, row['concurrency'])


def compare_rows(after_rows, before_rows):
    """One row per host, stage, dataset, temperature and concurrency of either campaign, before and after side by side
    with deltas."""
    before = dict((_compare_key(r), r) for r in before_rows)
    after = dict((_compare_key(r), r) for r in after_rows)
    keys = [_compare_key(r) for r in after_rows]
    keys += [_compare_key(r) for r in before_rows if _compare_key(r) not in after]
    out = []
    for key in keys:
        old, new = before.get(key) or {}, after.get(key) or {}
        either = new or old
        row = {'host': key[0], 'stage': key[1], 'setting': either.get('setting'), 'tp': either.get('tp'),
               'dataset': key[2], 'temperature': key[3], 'concurrency': key[4],
               'status_before': old.get('status', 'absent'), 'status_after': new.get('status', 'absent'),
               'sglang_build_before': old.get('sglang_build'), 'sglang_build_after': new.get('sglang_build')}
        for metric, kind in (('output_throughput', 'pct'), ('speedup', 'abs'), ('accept_length', 'abs'),
                             ('median_ttft_ms', 'pct'), ('median_itl_ms', 'pct')):
            row[metric + '_before'], row[metric + '_after'] = old.get(metric), new.get(metric)
            if kind == 'pct':
                row[metric + '_delta_pct'] = _delta_pct(new.get(metric), old.get(metric))
            else:
                row[metric + '_delta'] = _delta(new.get(metric), old.get(metric))
        out.append(row)
    return out
