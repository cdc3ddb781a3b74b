# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""specdec.bench.bench_run's engine: run one harness at one concurrency against an SGLang server, repeated.

bench_run(module, params) returns the module's result or raises StageError; module is the running AnsibleModule (its
run_command, get_bin_path, warn and check mode); ARGUMENT_SPEC is its options.
"""

from __future__ import annotations

import json
import os
import time

from ansible_collections.specdec.bench.plugins.module_utils._common import ID_PATTERN, atomic_write, finite, is_id
from .builtin_driver import run_builtin
from .errors import StageError
from .builtin_harness import arrival_times, arrivals_text, read_prompts
from .harness import RESULT_KEYS, SCHEMA_VERSION, cell_summary
from .harness_run import (
    arrivals_path,
    dataset_name,
    prompts_shape,
    IDLE_S,
    reusable_row,
    run_files,
    run_limits,
    TELEMETRY_CHOICES,
    workload,
)
from .sglang_client import run_sglang
from ansible_collections.specdec.bench.plugins.module_utils._telemetry import MAX_INTERVAL_S, MIN_INTERVAL_S

MAX_REPEATS = 100

ARGUMENT_SPEC = dict(
    harness=dict(type='str', choices=['builtin', 'sglang'], default='builtin'),
    base_url=dict(type='str', default='http://127.0.0.1:30000'),
    concurrency=dict(type='int', required=True),
    num_prompts=dict(type='int'),
    input_len=dict(type='int'),
    output_len=dict(type='int'),
    prompts_file=dict(type='path'),
    dataset=dict(type='dict'),
    temperature=dict(type='float', default=0.0),
    top_p=dict(type='float', default=1.0),
    top_k=dict(type='int', default=-1),
    ignore_eos=dict(type='bool', default=True),
    max_new_tokens=dict(type='int', no_log=False),
    seed=dict(type='int', default=1),
    warmup_requests=dict(type='int', default=1),
    request_rate=dict(type='float'),
    burstiness=dict(type='float', default=1.0),
    name_rate=dict(type='bool', default=False),
    flush_cache=dict(type='bool', default=True),
    output_dir=dict(type='path', required=True),
    stage=dict(type='str'),
    request_timeout=dict(type='float'),
    request_deadline=dict(type='float'),
    run_deadline=dict(type='float'),
    fail_on_incomplete=dict(type='bool', default=True),
    repeats=dict(type='int', default=1),
    python=dict(type='path', default='python3'),
    tokenizer=dict(type='str', no_log=False),
    extra_args=dict(type='list', elements='str', default=[]),
    environment=dict(type='dict', default={}),
    gpus=dict(type='list', elements='str', default=[]),
    telemetry=dict(type='str', choices=list(TELEMETRY_CHOICES), default='auto'),
    telemetry_interval=dict(type='float', default=0.1),
    metrics=dict(type='bool', default=True),
)


def warmup_seconds(raw_path):
    """Seconds of the cell's warm-up pass (builtin harness): the largest end_s of the warm-up records that lead the
    raw file, seconds from the pass's start as a measured run's duration_s is; 0.0 when the file starts with none,
    None when it cannot be read."""
    ends = []
    try:
        with open(raw_path, encoding='utf-8') as handle:
            for line in handle:
                if not line.strip():
                    continue
                record = json.loads(line)
                if not isinstance(record, dict) or not record.get('warmup'):
                    break
                if isinstance(record.get('end_s'), (int, float)):
                    ends.append(float(record['end_s']))
    except (OSError, ValueError):
        return None
    return round(max(ends), 4) if ends else 0.0


def call_timings(params, runs, first_raw):
    """RV(warmup_s), RV(measure_s) and RV(idle_s) of the repeats run in this call (runs: their rows, in order;
    first_raw: the raw file of the first, where the warm-up's records lead)."""
    warmup = 0.0
    if runs and params['warmup_requests'] > 0:
        warmup = warmup_seconds(first_raw) if params['harness'] == 'builtin' else None
    return {
        'warmup_s': warmup,
        'measure_s': round(sum(row.get('duration_s') or 0.0 for row in runs), 4),
        'idle_s': round(IDLE_S * sum(1 for row in runs if row.get('idle_power_w') is not None), 4),
    }


def num_prompts_of(params, records=None):
    """The conversations a run schedules: the prompts file's records, else num_prompts."""
    return len(records) if records is not None else params['num_prompts']


def write_arrivals(params, count):
    """The builtin harness's arrival schedule of the run (arrival_times: seed, count, rate, burstiness) written to its
    arrivals file (RESULTS_LAYOUT's 'arrivals', builtin_harness.arrivals_text), unless it already holds it. Returns
    the file's path."""
    path = arrivals_path(params['output_dir'], dataset_name(params), params['temperature'], params['concurrency'],
                         params['request_rate'])
    times = arrival_times(params['seed'], count, params['request_rate'], params['burstiness'])
    atomic_write(path, arrivals_text(times), unchanged_ok=True)
    return path


def bench_run(module, params):
    """The cell measured: the module's result; StageError on bad options or a run that did not complete (its evidence:
    the result's other keys, the summary and the rows included)."""
    sized = ('max_new_tokens',) if params['prompts_file'] else ('num_prompts', 'input_len', 'output_len')
    for key in ('concurrency',) + sized:
        if params[key] is None:
            raise StageError('%s is required %s' % (key, 'with prompts_file' if params['prompts_file'] else 'without prompts_file'))
        if params[key] < 1:
            raise StageError('%s must be at least 1, got %d' % (key, params[key]))
    if not 0 <= params['temperature'] < float('inf'):
        raise StageError('temperature must be a number of 0 or more, got %s' % params['temperature'])
    if not 0 < params['top_p'] <= 1:
        raise StageError('top_p must be more than 0 and at most 1, got %s' % params['top_p'])
    if params['top_k'] != -1 and params['top_k'] < 1:
        raise StageError('top_k must be -1 or at least 1, got %d' % params['top_k'])
    if params['dataset'] is not None and not is_id(params['dataset'].get('name')):
        raise StageError('dataset.name must match %s, got %r' % (ID_PATTERN, params['dataset'].get('name')))
    if not 1 <= params['repeats'] <= MAX_REPEATS:
        raise StageError('repeats must be an integer from 1 to %d, got %d' % (MAX_REPEATS, params['repeats']))
    if not MIN_INTERVAL_S <= params['telemetry_interval'] <= MAX_INTERVAL_S:
        raise StageError('telemetry_interval must be %g to %g seconds, got %s'
                         % (MIN_INTERVAL_S, MAX_INTERVAL_S, params['telemetry_interval']))
    if params['warmup_requests'] < 0:
        raise StageError('warmup_requests must be at least 0')
    for key in ('request_timeout', 'request_deadline', 'run_deadline'):
        if params[key] is not None and not (0 < params[key] < float('inf')):
            raise StageError('%s must be a positive number of seconds, got %s' % (key, params[key]))
    rate = params['request_rate']
    if rate is not None and not rate > 0:
        raise StageError('request_rate must be a positive number of requests per second or inf, got %s' % rate)
    if not 0 < params['burstiness'] < float('inf'):
        raise StageError('burstiness must be a positive number (the gamma shape of the arrivals, 1.0 Poisson), got %s'
                         % params['burstiness'])
    if params['harness'] == 'sglang' and params['burstiness'] != 1.0 and finite(rate) is not None:
        raise StageError('burstiness %g needs harness builtin: SGLang\'s benchmark client (sglang.benchmark.serving, '
                         'sglang.bench_serving) has no --burstiness option and always draws Poisson arrivals; '
                         'use harness builtin or burstiness 1.0' % params['burstiness'])
    if not params['base_url'].startswith(('http://', 'https://')):
        raise StageError('base_url must be an http:// or https:// URL, got %s' % params['base_url'])
    if module.check_mode:
        return dict(changed=False, skipped=True, msg='check mode: no request sent, no file written')

    started = time.monotonic()
    records, shape = None, None
    if params['prompts_file']:
        try:
            records = read_prompts(params['prompts_file'])
        except (OSError, ValueError) as exc:
            raise StageError('cannot read the prompts file: %s' % exc)
        shape = prompts_shape(records, params['max_new_tokens'])
    if not os.path.isdir(params['output_dir']):
        os.makedirs(params['output_dir'])
    limits = run_limits(params, shape)
    extra = {'limits': limits}
    files = dict((repeat, run_files(params['output_dir'], dataset_name(params), params['temperature'], params['concurrency'],
                                    repeat, rate=rate, load=params['name_rate'])) for repeat in range(1, params['repeats'] + 1))
    if params['name_rate'] and params['harness'] == 'builtin':
        extra['arrivals_file'] = write_arrivals(params, num_prompts_of(params, records))
    num_prompts = None if records is None else len(records)
    if params['harness'] == 'sglang':
        first = records is not None and any(len(record['segments']) > 1 for record in records)
        row_workload = workload(params, num_prompts, 'first' if first else (params['dataset'] or {}).get('turns') or 'all')
    else:
        row_workload = workload(params, num_prompts, (params['dataset'] or {}).get('turns') or 'all')
    reused = {}
    for repeat, (result_path, raw_path, _log) in files.items():
        row = reusable_row(result_path, raw_path, dict(row_workload, harness=params['harness'], repeat=repeat), SCHEMA_VERSION)
        if row is not None:
            reused[repeat] = row
    missing = [repeat for repeat in files if repeat not in reused]
    measured, error = {}, None
    if missing and params['harness'] == 'sglang':
        rows, error, extra['cmd'] = run_sglang(module, params, limits, [(repeat,) + files[repeat] for repeat in missing],
                                               row_workload, records)
        measured = dict(zip(missing, rows))
    elif missing:
        rows, error = run_builtin(module, params, limits, [(repeat,) + files[repeat][:2] for repeat in missing],
                                  row_workload, records)
        measured = dict(zip(missing, rows))
    extra['elapsed_s'] = round(time.monotonic() - started, 4)
    extra.update(call_timings(params, [measured[repeat] for repeat in sorted(measured)], files[missing[0]][1] if missing else None))
    results = []
    for repeat in sorted(set(reused) | set(measured)):
        row = reused.get(repeat) or measured[repeat]
        results.append(dict(row, reused=repeat in reused, result_file=files[repeat][0]))
    extra['results'] = results
    summary = dict(cell_summary([dict((key, value) for key, value in item.items() if key in RESULT_KEYS) for item in results]),
                   repeats=params['repeats'])
    result_file = results[-1]['result_file']
    if error is None:
        incomplete = [row for row in measured.values() if not row['complete']]
        if incomplete:
            row = incomplete[0]
            error = '%d of %d requests completed' % (row['completed'], row['num_prompts'])
            if params['repeats'] > 1:
                error = 'repeat %d of %d: %s' % (row['repeat'], params['repeats'], error)
            if row['errors']:
                error += ': %s' % row['errors'][0]
    changed = bool(measured)
    if error and params['fail_on_incomplete']:
        raise StageError(error, dict(extra, changed=changed, result=summary, result_file=result_file))
    if error:
        module.warn(error)
    return dict(extra, changed=changed, result=summary, result_file=result_file)
