# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""bench_run's builtin harness: warm-up, cache flush and the measured run of builtin_harness's LoadRun, with the
raw log and the result file kept up to date while it runs. The prompts are seeded random token ids, or the
conversations of O(prompts_file) with the run's sampling params.

Private to the specdec.bench collection; standard library only.
"""

from __future__ import annotations

import json
import os
import time

from .builtin_harness import (
    Conversation,
    LoadRun,
    arrival_times,
    generate_body,
    make_prompts,
    read_prompts,
    sampling_params,
    text_body,
)
from .harness import from_builtin, result_row
from .harness_run import (
    STOP_GRACE_S,
    EnergyMeter,
    MetricsScrape,
    energy_none,
    telemetry_path,
    write_row,
)
from .sglang_http import CONNECTION_ERRORS, HTTPStatusError, post, request_json

CHECKPOINT_SECONDS = 1.0


class RawLog:
    """The builtin harness's raw output: one JSON line per finished request, appended as they finish.

    Each append is one write() of whole lines to a file opened O_APPEND, so a run that is killed leaves every
    request written so far and no half line (rewriting the whole file each time would cost the timed threads
    the interpreter lock for as long as the file is big).
    """

    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        self.written = 0

    def append(self, records):
        data = ''.join(json.dumps(record) + '\n' for record in records[self.written:]).encode('utf-8')
        self.written = len(records)
        while data:
            data = data[os.write(self.fd, data):]

    def close(self):
        os.fsync(self.fd)
        os.close(self.fd)


def run_sampling(params):
    """The sampling params of the run's requests: max_new_tokens and EOS as the options say; random prompts always
    ask exactly output_len tokens."""
    if params.get('prompts_file'):
        tokens, ignore_eos = params['max_new_tokens'], params['ignore_eos']
    else:
        tokens, ignore_eos = params['output_len'], True
    return sampling_params(tokens, params['temperature'], params['top_p'], params['top_k'], ignore_eos)


def run_bodies(params, records=None):
    """(the measured run's bodies, a warm-up body): random token-id prompts, or the prompts file's conversations
    (its records, read_prompts's, when already read)."""
    sampling = run_sampling(params)
    if params.get('prompts_file'):
        records = read_prompts(params['prompts_file']) if records is None else records
        conversations = [Conversation(record['id'], record.get('category'), record['segments'], sampling)
                         for record in records]
        return conversations, text_body(conversations[0].segments[0], sampling)
    prompts = make_prompts(params['seed'], params['num_prompts'], params['input_len'])
    return [generate_body(prompt, params['output_len'], sampling) for prompt in prompts], generate_body(
        prompts[0], params['output_len'], sampling)


def progress_row(workload, records, raw_path):
    """The result file while the run goes on: counts so far, no statistics, complete false."""
    measured = [record for record in records if not record['warmup']]
    completed = sum(1 for record in measured if record['success'] and record.get('final', True))
    return result_row(harness='builtin', completed=completed, failed=workload['num_prompts'] - completed, complete=False,
                      raw_file=raw_path, errors=[], **workload)


def drive(run, raw, records, seconds, on_checkpoint=None):
    """Wait for a started LoadRun, appending its finished requests to the raw log every CHECKPOINT_SECONDS.

    Its watchdog ends it within `seconds` (its deadlines); should its threads still not be done STOP_GRACE_S later,
    the run is given up with what finished. Returns the records with the run's own added.
    """
    give_up = time.monotonic() + seconds + STOP_GRACE_S
    while not run.wait(CHECKPOINT_SECONDS):
        snapshot = records + list(run.records)
        raw.append(snapshot)
        if on_checkpoint is not None:
            on_checkpoint(snapshot)
        if time.monotonic() > give_up:
            break
    records = records + list(run.records)
    raw.append(records)
    return records


def flush_cache(module, base):
    """POST /flush_cache: the server's prefix cache and its acceptance counters start from the next run. A failure is
    a warning (the run goes on, its /server_info cross-check then counts more)."""
    try:
        status, text = post(base + '/flush_cache', timeout=60)
        if status != 200:
            module.warn('POST /flush_cache answered %s: %s' % (status, text.strip()))
    except CONNECTION_ERRORS as exc:
        module.warn('POST /flush_cache failed: %s' % exc)


def warm_up(base, params, limits, body, raw):
    """The cell's one warm-up pass: warmup_requests copies of `body` at once, bound by the request deadline, appended
    to the raw log marked warmup. Returns their records."""
    count = params['warmup_requests']
    run = LoadRun(base, [body] * count, [0.0] * count, count, limits['request_timeout'], warmup=True,
                  request_deadline=limits['request_deadline']).start()
    return drive(run, raw, [], limits['request_deadline'])


def metrics_path(raw_path):
    """The /metrics scrapes' file of a repeat, beside its raw log (raw-....metrics.json, harness.raw_file_name's
    suffix; a load run's carries its rate as its raw log does)."""
    return os.path.splitext(raw_path)[0] + '.metrics.json'


def run_builtin(module, params, limits, runs, workload, records=None):
    """Measure the missing repeats of one cell: one warm-up pass, then per repeat POST /flush_cache (when
    flush_cache) and the measured run. runs: [(repeat, result file, raw file)] in order; the warm-up's records go to
    the first repeat's raw log, before its own. Every second the raw log gets the finished requests and the result
    file the counts. Every request is bound by the limits, each measured run by the run deadline. Each measured run
has the stage's GPUs' telemetry (EnergyMeter: idle power after the flush, sampling from right before its first
request to right after its last response, the series beside the result) and, with O(metrics), the server's /metrics
    scraped right before and right after it (MetricsScrape, the file beside the raw log), never the warm-up. workload: the row's
    workload keys (harness_run.workload); records: the prompts file's, when already read. A repeat that does not
    complete ends the cell when fail_on_incomplete (its later repeats are not run).

    Returns (the result rows of the repeats run, in order; error or None).
    """
    base = params['base_url'].rstrip('/')
    bodies, body = run_bodies(params, records)
    rows = []
    for position, (repeat, result_path, raw_path) in enumerate(runs):
        row_workload = dict(workload, repeat=repeat)
        raw = RawLog(raw_path)
        meter = None
        scrape = MetricsScrape(base, params.get('metrics', True), metrics_path(raw_path))
        try:
            write_row(result_path, progress_row(row_workload, [], raw_path))
            done = []
            if position == 0 and params['warmup_requests'] > 0:
                done = warm_up(base, params, limits, body, raw)
                if not any(record['success'] for record in done):
                    row = from_builtin(done, None, raw_file=raw_path, interrupted=True, **row_workload)
                    row['errors'] = sorted(set(record['error'] or 'unfinished' for record in done))[:5]
                    row.update(energy_none('not measured: every warm-up request failed'))
                    row.update(metrics_file=None, metrics_note='not scraped: every warm-up request failed')
                    write_row(result_path, row)
                    return rows + [row], 'every warm-up request failed: %s' % '; '.join(row['errors'])
            if params['flush_cache']:
                flush_cache(module, base)
            scrape.before()
            meter = EnergyMeter(params, telemetry_path(result_path))
            meter.begin()
            run = LoadRun(base, bodies, arrival_times(params['seed'], len(bodies), params['request_rate'],
                                                      params.get('burstiness', 1.0)),
                          params['concurrency'], limits['request_timeout'], request_deadline=limits['request_deadline'],
                          run_deadline=limits['run_deadline']).start()
            done = drive(run, raw, done, limits['run_deadline'],
                         lambda snapshot, _result=result_path, _workload=row_workload, _raw=raw_path: write_row(
                             _result, progress_row(_workload, snapshot, _raw)))
            meter.end()
            scrape.after()
        finally:
            raw.close()
            if meter is not None:
                meter.close()
        server_info = None
        try:
            server_info = request_json(base + '/server_info', timeout=30)
        except (HTTPStatusError, ValueError) + CONNECTION_ERRORS as exc:
            module.warn('cannot read /server_info after the run: %s' % exc)
        row = from_builtin(done, run.duration, server_info=server_info, raw_file=raw_path,
                           interrupted=run.duration is None, **row_workload)
        if run.duration is None:  # given up: its threads outlived the run deadline
            row['errors'] = (row['errors'] + ['the run did not end %g s after its deadline' % STOP_GRACE_S])[:5]
        row.update(meter.keys(row['total_output_tokens']))
        row.update(scrape.keys())
        write_row(result_path, row)
        rows.append(row)
        if not row['complete'] and params.get('fail_on_incomplete', True):
            break
    return rows, None
