# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One harness run of bench_run, whichever harness drives it: its limits, its row's workload keys, its files.

Private to the specdec.bench collection; standard library only. The drivers are _builtin_driver (the builtin
load generator) and _sglang_client (SGLang's own benchmark client); both take bench_run's params and the limits.
"""

from __future__ import annotations

import json
import os

from ansible_collections.specdec.bench.plugins.module_utils._common import atomic_write, finite, results_file

# The derived limits (see bench_run's options): slow enough for any healthy server, so only a broken one meets them.
CONNECT_S = 60.0  # connecting and queueing, before any prefill
PREFILL_TOKENS_PER_S = 2000.0  # prompt tokens a server prefills a second at least
DECODE_S_PER_TOKEN = 0.5  # seconds an output token takes at most
STOP_GRACE_S = 10.0  # after SIGTERM, before SIGKILL; also how long bench_run waits on a run past its deadline


# The keys of bench_run's `dataset` option that a row records, by row key.
DATASET_ROW_KEYS = (('dataset_kind', 'kind'), ('dataset_source', 'source'), ('dataset_source_sha256', 'source_sha256'),
                    ('dataset_sha256', 'normalized_sha256'), ('prompts_sha256', 'prompts_sha256'),
                    ('template_sha256', 'template_sha256'))


def run_limits(params, shape=None):
    """{request_timeout, request_deadline, run_deadline} in seconds: the options where given, else derived from the
    workload (see bench_run's DOCUMENTATION). shape, for a prompts file: {input_len, output_len, num_prompts} of
    its longest conversation (prompt characters, an upper bound of its tokens; max_new_tokens times its turns)."""
    shape = dict(params, **(shape or {}))
    timeout = params['request_timeout']
    if timeout is None:
        timeout = CONNECT_S + shape['input_len'] * params['concurrency'] / PREFILL_TOKENS_PER_S
    request = params['request_deadline']
    if request is None:
        request = timeout + shape['output_len'] * DECODE_S_PER_TOKEN
    run = params['run_deadline']
    if run is None:
        rate = finite(params['request_rate'])
        waves = -(-shape['num_prompts'] // params['concurrency'])
        run = (2.0 * shape['num_prompts'] / rate if rate else 0.0) + waves * request
    return dict(request_timeout=timeout, request_deadline=request, run_deadline=run)


def prompts_shape(records, max_new_tokens):
    """run_limits's shape of a prompts file's records: its longest conversation's prompt characters and answers,
    max_new_tokens per request, one request per turn."""
    longest = max(sum(len(segment) for segment in record['segments']) + max_new_tokens * (len(record['segments']) - 1)
                  for record in records)
    return dict(input_len=longest, output_len=max_new_tokens, num_prompts=sum(len(r['segments']) for r in records))


def dataset_name(params):
    """The run's dataset name: the `dataset` option's name, else 'random'."""
    return (params.get('dataset') or {}).get('name') or 'random'


def run_files(output_dir, dataset, temperature, concurrency, repeat=1):
    """(result file, raw output, the SGLang client's console log) of one run (one repeat of a cell), as
    RESULTS_LAYOUT names them."""
    fields = dict(dataset=dataset, temperature=temperature, concurrency=concurrency, repeat=repeat)
    raw = os.path.join(output_dir, results_file('raw', **fields))
    return os.path.join(output_dir, results_file('result', **fields)), raw, os.path.splitext(raw)[0] + '.log'


def workload(params, num_prompts=None, turns=None):
    """The row's workload, dataset and sampling keys; an infinite rate is null (strict JSON has no infinity).
    num_prompts: the records of a prompts file (else the option); turns: the turns run ('all' or 'first'; null for
    random prompts)."""
    dataset = params.get('dataset') or {}
    prompts = bool(params.get('prompts_file'))
    values = dict(concurrency=params['concurrency'],
                  num_prompts=params['num_prompts'] if num_prompts is None else num_prompts,
                  input_len=None if prompts else params['input_len'], output_len=None if prompts else params['output_len'],
                  request_rate=finite(params['request_rate']), seed=params['seed'], stage=params['stage'],
                  dataset=dataset_name(params), turns=turns if prompts else None,
                  temperature=float(params.get('temperature') or 0.0), top_p=float(params.get('top_p', 1.0)),
                  top_k=int(params.get('top_k', -1)), ignore_eos=bool(params.get('ignore_eos', True)),
                  max_new_tokens=params.get('max_new_tokens') if prompts else params['output_len'],
                  repeats=int(params.get('repeats') or 1), warmup_requests=params.get('warmup_requests'))
    for row_key, key in DATASET_ROW_KEYS:
        values[row_key] = dataset.get(key)
    if not prompts:
        values['dataset_kind'] = values['dataset_kind'] or 'random'
    return values


# What a recorded repeat must share with this call's run to be reused instead of measured again: every field that
# shapes the requests sent (the prompts, their sampling, the load) and which server and client measured them.
# Not compared: repeats (a rerun with more repeats fills in), warmup_requests (discarded requests), the limits.
REUSE_KEYS = ('harness', 'stage', 'dataset', 'prompts_sha256', 'turns', 'num_prompts', 'input_len', 'output_len',
              'max_new_tokens', 'temperature', 'top_p', 'top_k', 'ignore_eos', 'seed', 'concurrency', 'request_rate')


def reusable_row(result_path, raw_path, expected, schema_version):
    """The recorded row of one repeat when it can stand for this call's: its result file holds a row of
    schema_version that is complete, of that repeat (expected['repeat']) and equal to `expected` in every REUSE_KEYS
    key, and its raw output is there. None otherwise (missing, unreadable, incomplete, another workload)."""
    try:
        with open(result_path, encoding='utf-8') as handle:
            row = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(row, dict) or row.get('schema_version') != schema_version or row.get('complete') is not True:
        return None
    if row.get('repeat') != expected['repeat'] or not os.path.isfile(raw_path):
        return None
    if any(row.get(key) != expected.get(key) for key in REUSE_KEYS):
        return None
    return row


def write_row(path, row):
    """The result row as strict JSON, written atomically and synced: a run killed after it keeps it."""
    atomic_write(path, json.dumps(row, indent=2, sort_keys=False, allow_nan=False) + '\n', fsync=True)
