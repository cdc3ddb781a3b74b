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


def run_limits(params):
    """{request_timeout, request_deadline, run_deadline} in seconds: the options where given, else derived from the
    workload (see bench_run's DOCUMENTATION)."""
    timeout = params['request_timeout']
    if timeout is None:
        timeout = CONNECT_S + params['input_len'] * params['concurrency'] / PREFILL_TOKENS_PER_S
    request = params['request_deadline']
    if request is None:
        request = timeout + params['output_len'] * DECODE_S_PER_TOKEN
    run = params['run_deadline']
    if run is None:
        rate = finite(params['request_rate'])
        waves = -(-params['num_prompts'] // params['concurrency'])
        run = (2.0 * params['num_prompts'] / rate if rate else 0.0) + waves * request
    return dict(request_timeout=timeout, request_deadline=request, run_deadline=run)


def run_files(output_dir, concurrency):
    """(result file, raw output, the SGLang client's console log) of one concurrency, as RESULTS_LAYOUT names them."""
    raw = os.path.join(output_dir, results_file('raw', concurrency=concurrency))
    return (os.path.join(output_dir, results_file('result', concurrency=concurrency)), raw,
            os.path.splitext(raw)[0] + '.log')


def workload(params):
    """The row's workload keys; an infinite rate is null (strict JSON has no infinity)."""
    return dict(concurrency=params['concurrency'], num_prompts=params['num_prompts'], input_len=params['input_len'],
                output_len=params['output_len'], request_rate=finite(params['request_rate']), seed=params['seed'],
                stage=params['stage'])


def write_row(path, row):
    """The result row as strict JSON, written atomically and synced: a run killed after it keeps it."""
    atomic_write(path, json.dumps(row, indent=2, sort_keys=False, allow_nan=False) + '\n', fsync=True)
