# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""bench_run: the builtin harness over real HTTP against the SGLang emulator on 127.0.0.1; the sglang harness with
its client replayed from the captured output (tests/fixtures/sglang-client) through a fake run_command."""

from __future__ import annotations

import json
import os

import pytest

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.specdec.bench.plugins.module_utils._builtin_harness import LoadRun, generate_body, make_prompts
from ansible_collections.specdec.bench.plugins.module_utils._harness import RESULT_KEYS
from ansible_collections.specdec.bench.plugins.modules import bench_run

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures', 'sglang-client')
PYTHON = '/opt/sglang/bin/python'


def builtin_args(emu, tmp_path, concurrency, num_prompts=8, **extra):
    values = dict(harness='builtin', base_url=emu.base_url, concurrency=concurrency, num_prompts=num_prompts, input_len=32,
                  output_len=24, seed=5, warmup_requests=1, output_dir=str(tmp_path / 'stage'), stage='tp1-test',
                  request_timeout=10)
    values.update(extra)
    return values


def read_files(tmp_path, concurrency):
    with open(str(tmp_path / 'stage' / ('result-c%d.json' % concurrency)), encoding='utf-8') as handle:
        row = json.load(handle)
    with open(str(tmp_path / 'stage' / ('raw-c%d.jsonl' % concurrency)), encoding='utf-8') as handle:
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
    assert row['accept_length'] > 1 and row['accept_length_source'] == 'server_info'
    assert 0 < row['median_ttft_ms'] <= row['p99_ttft_ms'] < row['p99_e2e_latency_ms']
    assert row['mean_itl_ms'] > 0 and row['mean_tpot_ms'] > 0 and row['output_throughput'] > 0
    assert row['mean_client_lag_ms'] >= 0 and row['stage'] == 'tp1-test'
    assert result['result_file'] == str(tmp_path / 'stage' / ('result-c%d.json' % concurrency))
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
    assert (row['harness'], row['completed'], row['complete'], row['accept_length']) == ('sglang', 8, True, 3.526315789473684)
    written, _records = read_files(tmp_path, 4)
    assert written == row and row['raw_file'] == str(tmp_path / 'stage' / 'raw-c4.jsonl')
    assert 'Serving Benchmark Result' in (tmp_path / 'stage' / 'raw-c4.log').read_text()
    assert sorted(os.listdir(str(tmp_path / 'stage'))) == ['raw-c4.jsonl', 'raw-c4.log', 'result-c4.json']


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
    write_atomic = bench_run.write_atomic

    def recording_write(path, text):
        if path.endswith('.json'):
            rows.append(json.loads(text))
        write_atomic(path, text)

    monkeypatch.setattr(bench_run, 'write_atomic', recording_write)
    monkeypatch.setattr(bench_run, 'CHECKPOINT_SECONDS', 0.005)
    result = run_module(bench_run, builtin_args(dflash, tmp_path, 1, num_prompts=6, output_len=64))
    assert result['exit_code'] == 0, result
    progress, final = rows[:-1], rows[-1]
    assert len(progress) >= 2 and all(row['complete'] is False and row['mean_ttft_ms'] is None for row in progress)
    assert [row['completed'] for row in progress] == sorted(row['completed'] for row in progress)
    assert progress[0]['completed'] == 0 and final['complete'] is True and final['completed'] == 6
