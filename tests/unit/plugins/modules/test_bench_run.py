# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""bench_run: the builtin harness over real HTTP against the SGLang emulator on 127.0.0.1; the sglang harness with
its client replayed from the captured output (tests/fixtures/sglang-client) through a fake run_command."""

from __future__ import annotations

import functools
import json
import os
import sys
import time

import pytest

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.specdec.bench.plugins.module_utils._stage.builtin_harness import LoadRun, arrival_times, generate_body, make_prompts
from ansible_collections.specdec.bench.plugins.module_utils._stage import builtin_driver as _builtin_driver
from ansible_collections.specdec.bench.plugins.module_utils._stage import harness_run as _harness_run
from ansible_collections.specdec.bench.plugins.module_utils._stage import sglang_client as _sglang_client
from ansible_collections.specdec.bench.plugins.module_utils._stage.harness import RESULT_KEYS
from ansible_collections.specdec.bench.plugins.modules import bench_run

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'module_utils'))
import scripted_sglang as scripted  # noqa: E402  pylint: disable=wrong-import-position

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures', 'sglang-client')
PYTHON = '/opt/sglang/bin/python'


def builtin_args(emu, tmp_path, concurrency, num_prompts=8, **extra):
    values = dict(harness='builtin', base_url=emu.base_url, concurrency=concurrency, num_prompts=num_prompts, input_len=32,
                  output_len=24, seed=5, warmup_requests=1, output_dir=str(tmp_path / 'stage'), stage='tp1-test',
                  request_timeout=10)
    values.update(extra)
    return values


def read_files(tmp_path, concurrency, dataset='random', temperature='0'):
    with open(str(tmp_path / 'stage' / ('result-%s-t%s-c%d-r1.json' % (dataset, temperature, concurrency))), encoding='utf-8') as handle:
        row = json.load(handle)
    with open(str(tmp_path / 'stage' / ('raw-%s-t%s-c%d-r1.jsonl' % (dataset, temperature, concurrency))), encoding='utf-8') as handle:
        records = [json.loads(line) for line in handle]
    return row, records


@pytest.mark.parametrize('concurrency', [1, 4])
def test_builtin_completes_every_prompt_with_speculative_acceptance(run_module, dflash, tmp_path, concurrency):
    result = run_module(bench_run, builtin_args(dflash, tmp_path, concurrency))
    assert result['exit_code'] == 0, result
    assert result['changed'] is True
    row = result['result']
    assert set(row) == set(RESULT_KEYS)
    assert (row['completed'], row['failed'], row['complete'], row['concurrency']) == (8, 0, True, concurrency)
    assert row['total_output_tokens'] == 8 * 24 and row['total_input_tokens'] == 8 * 32
    assert row['accept_length'] > 1 and row['accept_length_source'] == 'requests'
    # every request carries spec_verify_ct: tau is theirs, /server_info's (warm-up included) the cross-check
    # the server leaves each request's first (prefill) token out: 8 of 192 tokens, over 2% on outputs this short
    assert row['accept_length_server_info'] == pytest.approx((8 * 24 - 8) / (8 * 24 / row['accept_length']))
    # compared as the server counts (without each request's prefill token), an exact server agrees
    assert row['accept_length_disagreement'] == pytest.approx(0.0, abs=1e-9) and row['accept_length_flag'] is False
    assert row['accept_length_p10'] <= row['accept_length_median'] <= row['accept_length_p90']
    assert (row['dataset'], row['dataset_kind'], row['temperature'], row['ignore_eos'], row['max_new_tokens']) == (
        'random', 'random', 0.0, True, 24)
    assert row['requests'] == 8 and row['mean_output_len'] == 24.0
    assert 0 < row['median_ttft_ms'] <= row['p99_ttft_ms'] < row['p99_e2e_latency_ms']
    assert row['mean_itl_ms'] > 0 and row['mean_tpot_ms'] > 0 and row['output_throughput'] > 0
    assert row['mean_client_lag_ms'] >= 0 and row['stage'] == 'tp1-test'
    assert result['result_file'] == str(tmp_path / 'stage' / ('result-random-t0-c%d-r1.json' % concurrency))
    written, records = read_files(tmp_path, concurrency)
    assert written == row
    assert [r['warmup'] for r in records].count(True) == 1 and len(records) == 9
    measured = [r for r in records if not r['warmup']]
    assert sorted(r['index'] for r in measured) == list(range(8))
    assert all(r['output_tokens'] == 24 and len(r['itl_s']) <= 23 and r['spec_verify_ct'] for r in measured)
    assert max(r['start_s'] - r['intended_start_s'] for r in measured) < 1.0
    # each chunk's arrival, on the run's clock: one chunk for the prefill's token, then one per verify step
    assert all(len(r['chunk_s']) == r['spec_verify_ct'] + 1 and r['chunk_s'] == sorted(r['chunk_s'])
               and r['start_s'] <= r['chunk_s'][0] and r['chunk_s'][-1] <= r['end_s'] and 'sent_s' not in r for r in measured)
    assert not [name for name in os.listdir(str(tmp_path / 'stage')) if name.endswith('.tmp')]


def test_the_load_generator_keeps_each_chunks_arrival_beside_the_servers_send_stamp(dflash):
    # the emulator stamps every chunk with its own time.perf_counter() just before writing it; the harness reads
    # on the same clock (CLOCK_MONOTONIC), so no chunk can arrive before it was sent
    bodies = [generate_body(prompt, 32) for prompt in make_prompts(3, 6, 16)]
    run = LoadRun(dflash.base_url, bodies, [0.0] * 6, 3, 10.0, stamp_key='sim_sent_at').start()
    assert run.wait(60)
    assert sorted(r['index'] for r in run.records) == list(range(6)) and all(r['success'] for r in run.records)
    for record in run.records:
        assert len(record['sent_s']) == len(record['chunk_s']) == record['spec_verify_ct'] + 1
        assert record['start_s'] < record['sent_s'][0]
        assert all(sent <= arrived for sent, arrived in zip(record['sent_s'], record['chunk_s']))
        assert record['sent_s'] == sorted(record['sent_s'])


def test_builtin_against_autoregressive_decoding_has_no_acceptance_length(run_module, emulator, tmp_path):
    emu = emulator().wait_ready()
    result = run_module(bench_run, builtin_args(emu, tmp_path, 2, num_prompts=4, request_rate=200.0))
    assert result['exit_code'] == 0, result
    row = result['result']
    assert row['completed'] == 4 and row['request_rate'] == 200.0
    assert row['accept_length'] in (None, 1.0)


@pytest.mark.parametrize('fail_on_incomplete', [True, False])
def test_a_server_crash_keeps_what_finished_marked_incomplete(run_module, emulator, tmp_path, fail_on_incomplete):
    # the warm-up and two measured requests finish; the server dies in the fourth generate request
    emu = emulator(env={'SIM_SGLANG_FAULT': 'crash', 'SIM_SGLANG_CRASH_AFTER': '3'}).wait_ready()
    result = run_module(bench_run, builtin_args(emu, tmp_path, 1, num_prompts=6, fail_on_incomplete=fail_on_incomplete))
    row = result['result']
    assert (row['completed'], row['failed'], row['complete']) == (2, 4, False)
    assert row['errors'] and row['median_ttft_ms'] > 0
    if fail_on_incomplete:
        assert result['exit_code'] == 1 and '2 of 6 requests completed' in result['msg']
    else:
        assert result['exit_code'] == 0 and any('2 of 6' in text for text in result['warning_texts'])
    written, records = read_files(tmp_path, 1)
    assert written == row
    assert [r['success'] for r in records if not r['warmup']] == [True, True, False, False, False, False]


def test_check_mode_sends_nothing_and_writes_nothing(run_module, tmp_path):
    result = run_module(bench_run, dict(concurrency=1, num_prompts=1, input_len=1, output_len=1, output_dir=str(tmp_path / 'x'),
                                        base_url='http://127.0.0.1:9', _ansible_check_mode=True))
    assert result['exit_code'] == 0 and result['skipped'] is True and result['changed'] is False
    assert not (tmp_path / 'x').exists()


class FakeClient:
    """The server's interpreter: find_spec answers from `installed`; the client appends a captured line to --output-file."""

    def __init__(self, monkeypatch, installed=('sglang.bench_serving',), line_file='bench_serving_dflash.jsonl', rc=0):
        self.installed = installed
        with open(os.path.join(FIXTURES, line_file), encoding='utf-8') as handle:
            self.line = handle.read()
        self.rc = rc
        self.commands = []
        self.environ = {}

        def run_command(_module, args, environ_update=None, **_kwargs):
            assert isinstance(args, list) and args[0] == PYTHON
            self.commands.append(args)
            if args[1] == '-c':
                return (0 if args[3] in self.installed else 1), '', ''
            self.environ = dict(environ_update or {})
            with open(args[args.index('--output-file') + 1], 'a', encoding='utf-8') as handle:
                handle.write(self.line)
            return self.rc, 'Serving Benchmark Result\r\n', 'Fail to load tokenizer config\n'

        monkeypatch.setattr(AnsibleModule, 'run_command', run_command)


def options(args):
    """{--flag: value, or True for a flag without one} of a command line's options."""
    flags = {}
    for position, arg in enumerate(args):
        if arg.startswith('--'):
            following = args[position + 1] if position + 1 < len(args) else '--'
            flags[arg] = True if following.startswith('--') else following
    return flags


def sglang_args(tmp_path, **extra):
    values = dict(harness='sglang', python=PYTHON, concurrency=4, num_prompts=8, input_len=64, output_len=64, seed=2,
                  warmup_requests=1, output_dir=str(tmp_path / 'stage'), tokenizer='/tmp/tok', extra_args=['--disable-tqdm'],
                  environment={'HF_HUB_OFFLINE': 1})
    values.update(extra)
    return values


def test_sglang_harness_runs_the_older_client_when_the_newer_is_missing(run_module, monkeypatch, tmp_path):
    client = FakeClient(monkeypatch)
    result = run_module(bench_run, sglang_args(tmp_path))
    assert result['exit_code'] == 0, result
    assert [args[3] for args in client.commands[:2]] == ['sglang.benchmark.serving', 'sglang.bench_serving']
    command = client.commands[2]
    assert command == result['cmd']
    assert command[:5] == [PYTHON, '-m', 'sglang.bench_serving', '--backend', 'sglang']
    flags = options(command[3:])
    assert flags['--base-url'] == 'http://127.0.0.1:30000' and flags['--dataset-name'] == 'random-ids'
    assert (flags['--random-input-len'], flags['--random-output-len'], flags['--random-range-ratio']) == ('64', '64', '1.0')
    assert (flags['--num-prompts'], flags['--max-concurrency'], flags['--request-rate']) == ('8', '4', 'inf')
    assert (flags['--seed'], flags['--warmup-requests'], flags['--tokenizer']) == ('2', '1', '/tmp/tok')
    assert flags['--flush-cache'] is True and flags['--disable-tqdm'] is True and command[-1] == '--disable-tqdm'
    assert client.environ == {'HF_HUB_OFFLINE': '1'}
    row = result['result']
    assert (row['harness'], row['completed'], row['complete'], row['accept_length_server_info']) == (
        'sglang', 8, True, 3.526315789473684)
    assert row['accept_length'] is None and row['dataset'] == 'random'  # the client keeps no per-request verify count
    written, _records = read_files(tmp_path, 4)
    assert written == row and row['raw_file'] == str(tmp_path / 'stage' / 'raw-random-t0-c4-r1.jsonl')
    assert 'Serving Benchmark Result' in (tmp_path / 'stage' / 'raw-random-t0-c4-r1.log').read_text()
    assert sorted(os.listdir(str(tmp_path / 'stage'))) == [
        'raw-random-t0-c4-r1.jsonl', 'raw-random-t0-c4-r1.log', 'result-random-t0-c4-r1.json']


def test_sglang_client_that_fails_leaves_an_incomplete_result(run_module, monkeypatch, tmp_path):
    FakeClient(monkeypatch, installed=('sglang.benchmark.serving',), rc=1)
    result = run_module(bench_run, sglang_args(tmp_path, num_prompts=10, request_rate=4.0))
    assert result['exit_code'] == 1 and 'exited with 1' in result['msg']
    assert result['cmd'][2] == 'sglang.benchmark.serving' and '4.0' in result['cmd']
    assert (result['result']['completed'], result['result']['failed'], result['result']['complete']) == (8, 2, False)


def test_sglang_client_not_installed(run_module, monkeypatch, tmp_path):
    FakeClient(monkeypatch, installed=())
    result = run_module(bench_run, sglang_args(tmp_path))
    assert result['exit_code'] == 1 and 'cannot be imported by %s' % PYTHON in result['msg']


def test_builtin_checkpoints_counts_while_it_runs(run_module, dflash, tmp_path, monkeypatch):
    """What a killed run leaves: result files with the counts so far and complete false, then the final row."""
    rows = []
    atomic_write = _harness_run.atomic_write

    def recording_write(path, text, **kwargs):
        if os.path.basename(path).startswith('result-'):  # not the /metrics scrapes beside the raw log
            rows.append(json.loads(text))
        return atomic_write(path, text, **kwargs)

    monkeypatch.setattr(_harness_run, 'atomic_write', recording_write)
    monkeypatch.setattr(_builtin_driver, 'CHECKPOINT_SECONDS', 0.005)
    result = run_module(bench_run, builtin_args(dflash, tmp_path, 1, num_prompts=6, output_len=64))
    assert result['exit_code'] == 0, result
    progress, final = rows[:-1], rows[-1]
    assert len(progress) >= 2 and all(row['complete'] is False and row['mean_ttft_ms'] is None for row in progress)
    assert [row['completed'] for row in progress] == sorted(row['completed'] for row in progress)
    assert progress[0]['completed'] == 0 and final['complete'] is True and final['completed'] == 6


# ---- limits: deadlines, the SGLang client's deadline, bounded counts, the request rate (scripted servers)


@pytest.fixture
def scripted_server():
    servers = []

    def make(script):
        servers.append(scripted.ScriptedServer(script))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def scripted_args(server, tmp_path, **extra):
    values = dict(base_url=server.base_url, concurrency=1, num_prompts=4, input_len=3, output_len=4, seed=5,
                  warmup_requests=1, output_dir=str(tmp_path / 'stage'), stage='tp1-test')
    values.update(extra)
    return values


class SkewedClock:
    """time.perf_counter, moved forward when told: the run's deadline passes exactly when the test says."""

    def __init__(self):
        self.skew = 0.0

    def __call__(self):
        return time.perf_counter() + self.skew


@pytest.mark.parametrize('key, value', [('request_deadline', 0), ('run_deadline', -1.0), ('request_timeout', float('nan')),
                                        ('request_rate', 0.0), ('request_rate', float('nan'))])
def test_limits_and_rate_must_be_positive(run_module, tmp_path, key, value):
    result = run_module(bench_run, dict(concurrency=1, num_prompts=1, input_len=1, output_len=1,
                                        output_dir=str(tmp_path / 'x'), **{key: value}))
    assert result['exit_code'] == 1 and result['msg'].startswith(key + ' must be a positive number')
    assert not (tmp_path / 'x').exists()


def test_a_server_that_only_pings_fails_the_warm_up_at_its_deadline_and_the_raw_log_keeps_it(
        run_module, scripted_server, tmp_path):
    server = scripted_server(scripted.ping)
    result = run_module(bench_run, scripted_args(server, tmp_path, request_deadline=0.2))
    reason = 'DeadlineExceeded: the request passed its deadline of 0.2 s'
    assert result['exit_code'] == 1 and result['msg'] == 'every warm-up request failed: ' + reason
    assert result['limits']['request_deadline'] == 0.2 and result['limits']['request_timeout'] == 60 + 3 / 2000.0
    row, records = read_files(tmp_path, 1)
    assert row['errors'] == [reason] and row['complete'] is False
    assert [(r['warmup'], r['success'], r['error']) for r in records] == [(True, False, reason)]
    assert isinstance(server.outcome(0), OSError)  # the request was ended, its connection closed


@pytest.mark.parametrize('fail_on_incomplete', [True, False])
def test_the_run_deadline_ends_the_run_and_keeps_what_finished(run_module, scripted_server, tmp_path, monkeypatch,
                                                               fail_on_incomplete):
    clock = SkewedClock()

    def stall_past_the_deadline(stream, body, number):
        clock.skew += 10000.0  # the measured run's deadline passes while this request is in flight
        scripted.ping(stream, body, number)

    # the warm-up and two measured requests finish, the third stalls, the fourth is never sent
    server = scripted_server(scripted.by_number(scripted.good, scripted.good, scripted.good, stall_past_the_deadline))
    monkeypatch.setattr(_builtin_driver, 'LoadRun', functools.partial(LoadRun, clock=clock))
    result = run_module(bench_run, scripted_args(server, tmp_path, run_deadline=1000.0, fail_on_incomplete=fail_on_incomplete))
    reason = 'DeadlineExceeded: the run passed its deadline of 1000 s'
    row = result['result']
    assert (row['completed'], row['failed'], row['complete']) == (2, 2, False)
    assert row['errors'] == [reason, 'not sent: ' + reason] and row['total_output_tokens'] == 8
    if fail_on_incomplete:
        assert result['exit_code'] == 1 and result['msg'] == '2 of 4 requests completed: ' + reason
    else:
        assert result['exit_code'] == 0 and result['result_file'].endswith('result-random-t0-c1-r1.json')
    written, records = read_files(tmp_path, 1)
    assert written == row and result['limits']['run_deadline'] == 1000.0
    measured = sorted((r for r in records if not r['warmup']), key=lambda r: r['index'])
    assert [(r['success'], r['error']) for r in measured] == [(True, None), (True, None), (False, reason),
                                                              (False, 'not sent: ' + reason)]
    assert len(server.bodies) == 4 and isinstance(server.outcome(3), OSError)


def test_a_server_claiming_more_tokens_than_asked_fails_the_request_and_keeps_the_record_small(
        run_module, scripted_server, tmp_path):
    def absurd(stream, body, number):
        if number < 2:  # the warm-up and the first measured request are fine
            scripted.good(stream, body, number)
            return
        stream.write(scripted.CHUNKED_HEAD + scripted.chunk(scripted.event(' a', 1)) +
                     scripted.chunk(scripted.event(' a b', 50000000)) + b'0\r\n\r\n')

    server = scripted_server(absurd)
    result = run_module(bench_run, scripted_args(server, tmp_path, num_prompts=2, fail_on_incomplete=False))
    reason = 'BrokenResponse: the server claims completion_tokens 50000000, more than the 4 asked for'
    assert result['exit_code'] == 0 and result['result']['errors'] == [reason]
    assert (result['result']['completed'], result['result']['total_output_tokens']) == (1, 4)
    assert os.path.getsize(str(tmp_path / 'stage' / 'raw-random-t0-c1-r1.jsonl')) < 10000
    _row, records = read_files(tmp_path, 1)
    assert [(r['index'], r['error'], len(r['itl_s'])) for r in records if not r['success']] == [(1, reason, 0)]


def test_the_builtin_harness_sends_at_the_seeded_poisson_arrivals_of_the_request_rate(run_module, scripted_server, tmp_path):
    server = scripted_server(scripted.good)
    result = run_module(bench_run, scripted_args(server, tmp_path, concurrency=4, num_prompts=6, request_rate=50.0))
    assert result['exit_code'] == 0, result
    assert result['result']['request_rate'] == 50.0 and result['result']['completed'] == 6
    _row, records = read_files(tmp_path, 4)
    measured = sorted((r for r in records if not r['warmup']), key=lambda r: r['index'])
    arrivals = arrival_times(5, 6, 50.0)
    assert [r['scheduled_s'] for r in measured] == arrivals and arrivals[-1] > 0
    # each is meant to start at its arrival or later (a slot may be busy), and starts then or later; 1e-9: float rounding
    assert all(r['intended_start_s'] >= r['scheduled_s'] - 1e-9 and r['start_s'] >= r['intended_start_s'] for r in measured)


def test_an_infinite_rate_sends_everything_at_once_and_records_null(run_module, scripted_server, tmp_path):
    server = scripted_server(scripted.good)
    result = run_module(bench_run, scripted_args(server, tmp_path, concurrency=2, request_rate='inf'))
    assert result['exit_code'] == 0, result
    assert result['result']['request_rate'] is None
    _row, records = read_files(tmp_path, 2)
    assert all(r['scheduled_s'] == 0.0 for r in records)


def test_the_sglang_client_is_stopped_at_its_deadline(run_module, monkeypatch, tmp_path):
    # the server's interpreter: it has the client, and the client hangs (as one waiting on a stalled server would)
    python = tmp_path / 'python'
    python.write_text('#!/bin/sh\n[ "$1" = -c ] && exit 0\nexec sleep 60\n')
    python.chmod(0o755)
    monkeypatch.setattr(_sglang_client, 'CLIENT_SETUP_S', 0.0)
    result = run_module(bench_run, sglang_args(tmp_path, python=str(python), warmup_requests=0, run_deadline=0.2,
                                               extra_args=[]))
    reason = 'DeadlineExceeded: the SGLang client ran past its deadline of 0.2 s and was stopped'
    assert result['exit_code'] == 1 and result['msg'] == reason
    assert result['cmd'][1:3] == ['-m', 'sglang.benchmark.serving']
    row = result['result']
    assert (row['completed'], row['failed'], row['complete'], row['errors']) == (0, 8, False, [reason])
    assert read_files(tmp_path, 4)[0] == row


def test_the_sglang_client_gets_the_request_rate(run_module, monkeypatch, tmp_path):
    client = FakeClient(monkeypatch, installed=('sglang.benchmark.serving',))
    result = run_module(bench_run, sglang_args(tmp_path, request_rate='2.5'))
    assert result['exit_code'] == 0, result
    assert options(client.commands[-1][3:])['--request-rate'] == '2.5'
    assert result['result']['request_rate'] == 2.5
