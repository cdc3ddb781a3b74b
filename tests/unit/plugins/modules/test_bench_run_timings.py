# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""bench_run's timings (for the report's time breakdown): warmup_s (the warm-up pass, from its records at the
head of the first repeat's raw file), measure_s (the measured runs of this call) and idle_s, beside elapsed_s."""

from __future__ import annotations

import json
import os
import sys

import pytest

from ansible_collections.specdec.bench.plugins.modules import bench_run

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_bench_run import FakeClient, builtin_args, sglang_args  # noqa: E402  pylint: disable=wrong-import-position


def read_repeat(tmp_path, repeat):
    with open(str(tmp_path / 'stage' / ('result-random-t0-c2-r%d.json' % repeat)), encoding='utf-8') as handle:
        row = json.load(handle)
    with open(str(tmp_path / 'stage' / ('raw-random-t0-c2-r%d.jsonl' % repeat)), encoding='utf-8') as handle:
        records = [json.loads(line) for line in handle]
    return row, records


def test_the_call_returns_its_warm_up_and_measured_seconds_and_a_rerun_that_reuses_all_has_none(run_module, dflash, tmp_path):
    result = run_module(bench_run, builtin_args(dflash, tmp_path, 2, repeats=2, telemetry='off'))
    assert result['exit_code'] == 0, result
    rows = [read_repeat(tmp_path, repeat) for repeat in (1, 2)]
    warmups = [record for record in rows[0][1] if record['warmup']]
    assert len(warmups) == 1 and result['warmup_s'] == pytest.approx(warmups[0]['end_s'], abs=1e-4) and result['warmup_s'] > 0
    assert result['measure_s'] == pytest.approx(rows[0][0]['duration_s'] + rows[1][0]['duration_s'], abs=1e-3)
    assert result['idle_s'] == 0.0  # telemetry off: no idle power sampled
    assert result['elapsed_s'] > result['warmup_s'] + result['measure_s']
    rerun = run_module(bench_run, builtin_args(dflash, tmp_path, 2, repeats=2, telemetry='off'))
    assert rerun['exit_code'] == 0 and rerun['changed'] is False
    assert (rerun['warmup_s'], rerun['measure_s'], rerun['idle_s']) == (0.0, 0.0, 0.0)


def test_no_warm_up_requests_is_no_warm_up_time(run_module, dflash, tmp_path):
    result = run_module(bench_run, builtin_args(dflash, tmp_path, 2, warmup_requests=0, telemetry='off'))
    assert result['exit_code'] == 0, result
    assert result['warmup_s'] == 0.0 and result['measure_s'] == pytest.approx(read_repeat(tmp_path, 1)[0]['duration_s'], abs=1e-4)


def test_idle_seconds_count_the_repeats_with_an_idle_power():
    params = {'harness': 'builtin', 'warmup_requests': 0}
    rows = [{'duration_s': 2.5, 'idle_power_w': 120.0}, {'duration_s': 1.25, 'idle_power_w': None}, {'duration_s': None}]
    assert bench_run.call_timings(params, rows, None) == {'warmup_s': 0.0, 'measure_s': 3.75, 'idle_s': 0.5}
    assert bench_run.call_timings(params, [], None) == {'warmup_s': 0.0, 'measure_s': 0.0, 'idle_s': 0.0}


def test_the_warm_up_is_the_last_end_of_the_leading_warm_up_records(tmp_path):
    raw = tmp_path / 'raw.jsonl'
    raw.write_text('\n'.join(json.dumps(record) for record in (
        {'warmup': True, 'end_s': 1.5}, {'warmup': True, 'end_s': 2.25}, {'warmup': True, 'end_s': None},
        {'warmup': False, 'end_s': 9.0})) + '\n', encoding='utf-8')
    assert bench_run.warmup_seconds(str(raw)) == 2.25
    raw.write_text(json.dumps({'warmup': False, 'end_s': 3.0}) + '\n', encoding='utf-8')
    assert bench_run.warmup_seconds(str(raw)) == 0.0
    raw.write_text('{not json\n', encoding='utf-8')
    assert bench_run.warmup_seconds(str(raw)) is None
    assert bench_run.warmup_seconds(str(tmp_path / 'absent.jsonl')) is None


def test_the_sglang_clients_warm_up_is_not_timed(run_module, monkeypatch, tmp_path):
    FakeClient(monkeypatch)
    result = run_module(bench_run, sglang_args(tmp_path, telemetry='off'))
    assert result['exit_code'] == 0, result
    assert result['warmup_s'] is None and result['measure_s'] == pytest.approx(result['result']['duration_s'], abs=1e-4)
    later = run_module(bench_run, sglang_args(tmp_path, telemetry='off', warmup_requests=0, repeats=2))
    assert later['exit_code'] == 0 and later['warmup_s'] == 0.0
