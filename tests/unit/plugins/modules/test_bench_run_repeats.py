# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""bench_run's repeats: one warm-up pass, then POST /flush_cache and the measured run per missing repeat; complete
repeats of the same requests already in the folder are reused, so a rerun with more repeats fills in. The builtin
harness over real HTTP against the SGLang emulator; the sglang harness through test_bench_run's fake client."""

from __future__ import annotations

import json
import os
import sys

import pytest

from ansible_collections.specdec.bench.plugins.module_utils._common import file_sha256
from ansible_collections.specdec.bench.plugins.module_utils._stage.harness import RESULT_KEYS
from ansible_collections.specdec.bench.plugins.modules import bench_run

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_bench_run import FakeClient, builtin_args, options, sglang_args  # noqa: E402  pylint: disable=wrong-import-position

FLUSHED = 'Cache flushed successfully!'


def stage_files(tmp_path):
    """The stage's files but the /metrics scrapes, which come and go with the server's --enable-metrics."""
    return sorted(name for name in os.listdir(str(tmp_path / 'stage')) if not name.endswith('.metrics.json'))


def read_repeat(tmp_path, repeat, concurrency=2):
    with open(str(tmp_path / 'stage' / ('result-random-t0-c%d-r%d.json' % (concurrency, repeat))), encoding='utf-8') as handle:
        row = json.load(handle)
    with open(str(tmp_path / 'stage' / ('raw-random-t0-c%d-r%d.jsonl' % (concurrency, repeat))), encoding='utf-8') as handle:
        records = [json.loads(line) for line in handle]
    return row, records


def fingerprint(tmp_path, names):
    """(sha256, mtime in ns) of each named file of the stage folder."""
    return dict((name, (file_sha256(str(tmp_path / 'stage' / name)), os.stat(str(tmp_path / 'stage' / name)).st_mtime_ns))
                for name in names)


def test_repeats_warm_up_once_flush_before_each_and_a_rerun_with_more_fills_in(run_module, dflash, tmp_path):
    result = run_module(bench_run, builtin_args(dflash, tmp_path, 2, repeats=2))
    assert result['exit_code'] == 0, result
    assert result['changed'] is True
    assert stage_files(tmp_path) == ['raw-random-t0-c2-r1.jsonl', 'raw-random-t0-c2-r2.jsonl',
                                     'result-random-t0-c2-r1.json', 'result-random-t0-c2-r2.json']
    assert [(item['repeat'], item['repeats'], item['reused']) for item in result['results']] == [(1, 2, False), (2, 2, False)]
    rows = []
    for repeat, warmups in ((1, 1), (2, 0)):
        row, records = read_repeat(tmp_path, repeat)
        rows.append(row)
        assert set(row) == set(RESULT_KEYS) and row['complete'] is True and row['warmup_requests'] == 1
        assert result['results'][repeat - 1] == dict(row, reused=False, result_file=str(
            tmp_path / 'stage' / ('result-random-t0-c2-r%d.json' % repeat)))
        # the one warm-up pass leads the first repeat's raw file; every repeat measures all 8 prompts
        assert [r['warmup'] for r in records].count(True) == warmups and len(records) == 8 + warmups
        # flushed after the warm-up and before each repeat: /server_info counts this repeat's requests only
        assert row['accept_length_disagreement'] == pytest.approx(0.0, abs=1e-9)
    assert dflash.log().count(FLUSHED) == 2
    summary = result['result']
    assert set(summary) == set(RESULT_KEYS) and summary['repeats'] == 2 and summary['repeat'] is None
    assert summary['output_throughput'] == pytest.approx((rows[0]['output_throughput'] + rows[1]['output_throughput']) / 2)
    assert summary['accept_length'] == pytest.approx((rows[0]['accept_length'] + rows[1]['accept_length']) / 2)
    assert (summary['completed'], summary['complete'], summary['concurrency']) == (16, True, 2)
    assert result['result_file'].endswith('result-random-t0-c2-r2.json')

    kept = fingerprint(tmp_path, stage_files(tmp_path))
    result = run_module(bench_run, builtin_args(dflash, tmp_path, 2, repeats=3))
    assert result['exit_code'] == 0, result
    assert result['changed'] is True
    assert [(item['repeat'], item['reused']) for item in result['results']] == [(1, True), (2, True), (3, False)]
    assert fingerprint(tmp_path, kept) == kept  # r1 and r2 untouched
    row, records = read_repeat(tmp_path, 3)
    assert (row['repeat'], row['repeats'], row['complete']) == (3, 3, True)
    # the fill-in has its own warm-up, then one flush
    assert [r['warmup'] for r in records].count(True) == 1 and dflash.log().count(FLUSHED) == 3
    assert result['result']['repeats'] == 3 and result['result']['completed'] == 24

    # everything there: nothing is sent, nothing changes
    kept = fingerprint(tmp_path, stage_files(tmp_path))
    result = run_module(bench_run, builtin_args(dflash, tmp_path, 2, repeats=3))
    assert result['exit_code'] == 0 and result['changed'] is False, result
    assert all(item['reused'] for item in result['results']) and 'cmd' not in result
    assert fingerprint(tmp_path, kept) == kept and dflash.log().count(FLUSHED) == 3
    # fewer repeats than recorded: the first ones, reused
    result = run_module(bench_run, builtin_args(dflash, tmp_path, 2, repeats=1))
    assert result['changed'] is False and [item['repeat'] for item in result['results']] == [1]
    assert result['result'] == dict(read_repeat(tmp_path, 1)[0], repeats=1)  # the summary says the repeats asked


def test_other_requests_or_an_incomplete_repeat_are_measured_again(run_module, dflash, tmp_path):
    assert run_module(bench_run, builtin_args(dflash, tmp_path, 2, repeats=2))['exit_code'] == 0
    # another seed: other prompts, so nothing recorded stands for them
    result = run_module(bench_run, builtin_args(dflash, tmp_path, 2, repeats=2, seed=6))
    assert [item['reused'] for item in result['results']] == [False, False]
    assert read_repeat(tmp_path, 1)[0]['seed'] == 6
    # a repeat recorded incomplete (a run that was cut short) is measured again, the complete one reused
    path = str(tmp_path / 'stage' / 'result-random-t0-c2-r2.json')
    row = read_repeat(tmp_path, 2)[0]
    with open(path, 'w', encoding='utf-8') as handle:
        json.dump(dict(row, complete=False), handle)
    result = run_module(bench_run, builtin_args(dflash, tmp_path, 2, repeats=2, seed=6))
    assert [item['reused'] for item in result['results']] == [True, False] and result['changed'] is True
    assert read_repeat(tmp_path, 2)[0]['complete'] is True
    # the warm-up went to the first repeat measured, r2
    assert [r['warmup'] for r in read_repeat(tmp_path, 2)[1]].count(True) == 1


@pytest.mark.parametrize('repeats', [0, 101])
def test_repeats_out_of_range_are_refused(run_module, tmp_path, repeats):
    class Nowhere:  # pylint: disable=too-few-public-methods
        base_url = 'http://127.0.0.1:9'

    result = run_module(bench_run, builtin_args(Nowhere, tmp_path, 1, repeats=repeats))
    assert result['exit_code'] == 1 and result['msg'] == 'repeats must be an integer from 1 to 100, got %d' % repeats
    assert not (tmp_path / 'stage').exists()


def test_a_server_that_dies_ends_the_cell_at_the_first_incomplete_repeat(run_module, emulator, tmp_path):
    # the warm-up and two measured requests finish; the server dies in the fourth generate request
    emu = emulator(env={'SIM_SGLANG_FAULT': 'crash', 'SIM_SGLANG_CRASH_AFTER': '3'}).wait_ready()
    result = run_module(bench_run, builtin_args(emu, tmp_path, 1, num_prompts=6, repeats=3))
    assert result['exit_code'] == 1, result
    assert result['msg'].startswith('repeat 1 of 3: 2 of 6 requests completed')
    assert [item['repeat'] for item in result['results']] == [1] and result['result']['complete'] is False
    assert stage_files(tmp_path) == ['raw-random-t0-c1-r1.jsonl', 'result-random-t0-c1-r1.json']


def test_the_sglang_harness_warms_up_in_its_first_run_only_and_flushes_in_each(run_module, monkeypatch, tmp_path):
    client = FakeClient(monkeypatch, installed=('sglang.benchmark.serving',))
    result = run_module(bench_run, sglang_args(tmp_path, repeats=3))
    assert result['exit_code'] == 0, result
    runs = [command for command in client.commands if command[1] == '-m']
    assert [options(command[3:])['--warmup-requests'] for command in runs] == ['1', '0', '0']
    assert all(options(command[3:])['--flush-cache'] is True for command in runs) and result['cmd'] == runs[0]
    assert stage_files(tmp_path) == sorted('%s-random-t0-c4-r%d.%s' % (kind, repeat, suffix) for repeat in (1, 2, 3)
                                           for kind, suffix in (('raw', 'jsonl'), ('raw', 'log'), ('result', 'json')))
    assert [(item['repeat'], item['harness'], item['complete']) for item in result['results']] == [
        (1, 'sglang', True), (2, 'sglang', True), (3, 'sglang', True)]
    client.commands.clear()
    result = run_module(bench_run, sglang_args(tmp_path, repeats=3))
    assert result['changed'] is False and not [command for command in client.commands if command[1] == '-m']
    # another harness's results stand for nothing
    assert run_module(bench_run, sglang_args(tmp_path, repeats=3, seed=9))['changed'] is True
