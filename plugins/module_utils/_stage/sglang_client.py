# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""bench_run's sglang harness: SGLang's own benchmark client, run once per repeat in the server's interpreter and
stopped at its deadline, its JSON line mapped to the result row by harness.from_sglang_client.

Private to the specdec.bench collection; standard library only.

A prompts file runs as the client's `custom` dataset (sglang/benchmark/datasets/custom.py, 0.5.23): a JSONL of
{"conversations": [user, assistant]} of which the client takes the first user content as the prompt, sent as it
is to /generate when --apply-chat-template is not given; so the input file holds each record's segments[0], the
first turn already templated as the builtin harness sends it, and --sharegpt-output-len fixes max_new_tokens (the
assistant content is then only a placeholder: the client drops records whose assistant content it cannot read).
The client has no multi-turn mode for this dataset (it reads conversations[0] and [1] only), so the sglang
harness runs first turns. Its sglang backend sends sampling_params {temperature (--temperature), max_new_tokens,
ignore_eos (not --disable-ignore-eos)} and top_p (--top-p, when below 1); it has no top-k (--extra-request-body
merges into the request, not its sampling_params). Per request it keeps only spec_accept_length, which it does not
write to its output file: the row's per-request acceptance length is null and /server_info's is the cross-check.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import threading
import time

from ansible_collections.specdec.bench.plugins.module_utils._common import atomic_write, finite
from .errors import StageError
from .harness import from_sglang_client, parse_client_output, result_row
from .harness_run import METRICS_SGLANG, STOP_GRACE_S, EnergyMeter, telemetry_path, write_row

# SGLang's benchmark client moved from sglang.bench_serving to sglang.benchmark.serving; the newer is tried first.
CLIENT_MODULES = ('sglang.benchmark.serving', 'sglang.bench_serving')
FIND_SPEC = 'import importlib.util, sys; raise SystemExit(importlib.util.find_spec(sys.argv[1]) is None)'
CLIENT_SETUP_S = 180.0  # imports, tokenizer, cache flush


# The assistant content of the custom dataset's records: the client reads it, --sharegpt-output-len overrides its length.
PLACEHOLDER_ANSWER = 'answer'


def custom_dataset(records):
    """The client's `custom` dataset (JSONL text) of prompts file records: each record's first turn, templated."""
    return ''.join(json.dumps({'conversations': [{'role': 'user', 'content': record['segments'][0]},
                                                 {'role': 'assistant', 'content': PLACEHOLDER_ANSWER}]}) + '\n'
                   for record in records)


def sglang_command(python, client, params, output_file, dataset_path=None, num_prompts=None):
    """The SGLang client's argument list for the options; the workload flags mirror the builtin harness. With
    dataset_path (custom_dataset's file) the client runs those num_prompts prompts with the run's sampling params."""
    rate = finite(params['request_rate'])
    command = [python, '-m', client, '--backend', 'sglang', '--base-url', params['base_url']]
    if dataset_path is None:
        command += ['--dataset-name', 'random-ids', '--random-input-len', str(params['input_len']),
                    '--random-output-len', str(params['output_len']), '--random-range-ratio', '1.0',
                    '--num-prompts', str(params['num_prompts'])]
    else:
        command += ['--dataset-name', 'custom', '--dataset-path', dataset_path,
                    '--sharegpt-output-len', str(params['max_new_tokens']), '--num-prompts', str(num_prompts)]
    command += ['--max-concurrency', str(params['concurrency']),
                '--request-rate', 'inf' if rate is None else repr(rate), '--seed', str(params['seed']),
                '--warmup-requests', str(params['warmup_requests']), '--output-file', output_file]
    temperature = float(params.get('temperature') or 0.0)
    if temperature:
        command += ['--temperature', repr(temperature)]
    if params.get('top_p', 1.0) < 1.0:
        command += ['--top-p', repr(float(params['top_p']))]
    if dataset_path is not None and not params.get('ignore_eos', True):
        command.append('--disable-ignore-eos')
    if params['flush_cache']:
        command.append('--flush-cache')
    if params['tokenizer']:
        command += ['--tokenizer', params['tokenizer']]
    return command + list(params['extra_args'])


def client_deadline(params, limits):
    """Seconds SGLang's client may run: its start-up and flush, its warm-up, the measured run."""
    warmup = limits['request_deadline'] if params['warmup_requests'] > 0 else 0.0
    return CLIENT_SETUP_S + warmup + limits['run_deadline']


def find_client(module, python):
    for client in CLIENT_MODULES:
        rc, _out, _err = module.run_command([python, '-c', FIND_SPEC, client])
        if rc == 0:
            return client
    return None


class ClientStopper:
    """Stops SGLang's client once `seconds` have passed: SIGTERM, then SIGKILL STOP_GRACE_S later.

    Given to run_command as before_communicate_callback, which hands it the started process.
    """

    def __init__(self, seconds):
        self.seconds = seconds
        self.stopped = False
        self._timer = None

    def __call__(self, process):
        self._timer = threading.Timer(self.seconds, self._stop, (process,))
        self._timer.daemon = True
        self._timer.start()

    def _stop(self, process):
        self.stopped = True
        try:
            process.send_signal(signal.SIGTERM)
            process.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            process.kill()
        except OSError:
            pass  # it ended meanwhile

    def cancel(self):
        if self._timer is not None:
            self._timer.cancel()


def run_sglang(module, params, limits, runs, workload, records=None):
    """Run SGLang's client once per missing repeat of one cell, each stopped at its deadline, and map its line.
    runs: [(repeat, result file, raw file, console log)] in order; the first run does the cell's warm-up
    (--warmup-requests), the later ones none; each flushes the cache before it measures (--flush-cache, when
    flush_cache). workload: the row's workload keys (harness_run.workload); records: the prompts file's
    (read_prompts), None for random prompts. A repeat that does not complete ends the cell when fail_on_incomplete.
    Returns (the rows of the repeats run, in order; error or None; the command line of the first run)."""
    if records is not None and params.get('top_k', -1) != -1:
        raise StageError('the sglang harness cannot send top_k (SGLang\'s client has no top-k option); got %d'
                         % params['top_k'])
    if records is not None and params['max_new_tokens'] < 4:
        raise StageError('the sglang harness needs max_new_tokens of 4 or more (SGLang\'s client refuses less)')
    python = params['python']
    if os.sep not in python:
        found = module.get_bin_path(python)
        if found is None:
            raise StageError('Failed to find required executable "%s" on the PATH' % python)
        python = found
    client = find_client(module, python)
    if client is None:
        raise StageError('SGLang\'s benchmark client (%s) cannot be imported by %s' % (' or '.join(CLIENT_MODULES), python))
    rows, commands = [], []
    for position, (repeat, result_path, raw_path, log_path) in enumerate(runs):
        run_params = dict(params, warmup_requests=params['warmup_requests'] if position == 0 else 0)
        row, error, command = run_client(module, python, client, run_params, limits, result_path, raw_path, log_path,
                                         dict(workload, repeat=repeat), records)
        rows.append(row)
        commands.append(command)
        if error or (not row['complete'] and params.get('fail_on_incomplete', True)):
            return rows, error, commands[0]
    return rows, None, commands[0] if commands else None


def client_window(meter, text, written, ended):
    """Narrow the meter to the client's measured run: [written - duration, written], its output file's last write
    (right after the run) and the run's duration from its line; left as it is (the whole client run) when the text
    has no duration or the file was written after the client ended."""
    try:
        duration = finite(parse_client_output(text).get('duration'))
    except ValueError:
        return
    if duration and duration > 0 and written <= ended:
        meter.window(written - duration, written)


def run_client(module, python, client, params, limits, result_path, raw_path, log_path, workload, records=None):
    """One run of SGLang's client (one repeat), stopped at its deadline, its line mapped and written.
    Returns (row, error or None, command)."""
    # the client appends to its output file: give it a fresh one, renamed into place once it is done
    handle, partial = tempfile.mkstemp(prefix='.%s.' % os.path.basename(raw_path), suffix='.partial', dir=params['output_dir'])
    os.close(handle)
    dataset_path = None
    if records is not None:
        dataset_path = os.path.splitext(raw_path)[0] + '.input.jsonl'
        atomic_write(dataset_path, custom_dataset(records), fsync=True)
    command = sglang_command(python, client, params, partial, dataset_path, None if records is None else len(records))
    environ = dict((str(key), str(value)) for key, value in params['environment'].items())
    deadline = client_deadline(params, limits)
    stopper = ClientStopper(deadline)
    meter = EnergyMeter(params, telemetry_path(result_path))
    try:
        meter.begin()
        rc, out, err = module.run_command(command, environ_update=environ, before_communicate_callback=stopper)
        ended = time.time()
        stopper.cancel()
        with open(partial, encoding='utf-8', errors='replace') as stream:
            text = stream.read()
        client_window(meter, text, os.stat(partial).st_mtime, ended)
        meter.end()
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
        meter.close()
    atomic_write(log_path, out + err, fsync=True)
    atomic_write(raw_path, text, fsync=True)
    error = None if rc == 0 else 'the SGLang client exited with %d: %s' % (rc, (err or out).strip()[-2000:])
    if stopper.stopped:
        error = 'DeadlineExceeded: the SGLang client ran past its deadline of %g s and was stopped' % deadline
    try:
        row = from_sglang_client(text, raw_file=raw_path, interrupted=rc != 0, **workload)
    except ValueError as exc:
        row = result_row(harness='sglang', completed=0, failed=workload['num_prompts'], complete=False, raw_file=raw_path,
                         errors=[error or str(exc)], **workload)
        error = error or 'no result from the SGLang client: %s' % exc
    row.update(meter.keys(row.get('total_output_tokens')))
    row.update(metrics_file=None, metrics_note=METRICS_SGLANG)
    if meter.figures is not None and meter.span is None:
        row['energy_note'] = '; '.join(note for note in (row['energy_note'], 'energy over the client\'s whole run (no '
                                                         'measured window: start-up and warm-up included)') if note)
    write_row(result_path, row)
    return row, error, command
