# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""bench_run's load runs: open-loop arrivals with a burstiness, the load family's file names (name_rate) and the
arrivals file, against a scripted server on 127.0.0.1."""

from __future__ import annotations

import json
import math
import os
import random
import sys

import pytest

from ansible_collections.specdec.bench.plugins.module_utils._stage import bench_run as _bench_run
from ansible_collections.specdec.bench.plugins.module_utils._stage.builtin_harness import arrival_times, arrivals_text
from ansible_collections.specdec.bench.plugins.module_utils._stage.harness import RESULT_KEYS
from ansible_collections.specdec.bench.plugins.modules import bench_run

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'module_utils'))
import scripted_sglang as scripted  # noqa: E402  pylint: disable=wrong-import-position


def poisson_before_burstiness(seed, count, rate):
    """arrival_times as it was before burstiness: exponential gaps from the run's seeded generator."""
    rng = random.Random('arrivals-%s' % seed)
    times, now = [], 0.0
    for _request in range(count):
        times.append(now)
        now += rng.expovariate(rate)
    return times


def test_a_burstiness_of_one_keeps_the_poisson_schedule_exactly():
    assert arrival_times(5, 200, 7.5) == arrival_times(5, 200, 7.5, 1.0) == poisson_before_burstiness(5, 200, 7.5)


@pytest.mark.parametrize('burstiness', [0.25, 4.0])
def test_gamma_gaps_keep_the_mean_rate_and_spread_by_the_burstiness(burstiness):
    times = arrival_times(3, 20001, 10.0, burstiness)
    assert times == arrival_times(3, 20001, 10.0, burstiness) and times[0] == 0.0 and times != arrival_times(3, 20001, 10.0)
    gaps = [later - earlier for earlier, later in zip(times, times[1:])]
    mean = sum(gaps) / len(gaps)
    cv = math.sqrt(sum((gap - mean) ** 2 for gap in gaps) / (len(gaps) - 1)) / mean
    # gamma(shape b, scale 1 / (rate b)): mean 1 / rate, coefficient of variation 1 / sqrt(b)
    assert mean == pytest.approx(0.1, rel=0.05) and cv == pytest.approx(1 / math.sqrt(burstiness), rel=0.05)


def test_the_arrivals_file_is_the_same_bytes_for_every_stage_of_a_host(tmp_path):
    paths = []
    for stage in ('tp1-autoregressive', 'tp1-dflash-n16'):
        params = dict(output_dir=str(tmp_path / stage), stage=stage, dataset={'name': 'gsm8k'}, temperature=0.0,
                      concurrency=64, request_rate=2.0, burstiness=0.5, seed=1)
        os.makedirs(params['output_dir'])
        paths.append(_bench_run.write_arrivals(params, 12))
    assert [os.path.basename(path) for path in paths] == ['arrivals-gsm8k-t0-c64-q2.json'] * 2
    with open(paths[0], 'rb') as first, open(paths[1], 'rb') as second:
        data = first.read()
        assert data == second.read()
    assert json.loads(data) == [round(value, 6) for value in arrival_times(1, 12, 2.0, 0.5)]
    assert data == arrivals_text(arrival_times(1, 12, 2.0, 0.5)).encode()  # json.dumps of the rounded times, as it is


@pytest.fixture(name='scripted_server')
def scripted_server_fixture():
    servers = []

    def make(script):
        servers.append(scripted.ScriptedServer(script))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def load_args(server, tmp_path, **extra):
    values = dict(base_url=server.base_url, concurrency=4, num_prompts=6, input_len=3, output_len=4, seed=5,
                  warmup_requests=1, output_dir=str(tmp_path / 'stage'), stage='tp1-test', name_rate=True,
                  telemetry='off')
    values.update(extra)
    return values


def test_a_load_run_names_its_files_with_the_rate_and_sends_at_its_bursty_arrivals(run_module, scripted_server, tmp_path):
    server = scripted_server(scripted.good)
    result = run_module(bench_run, load_args(server, tmp_path, request_rate=50.0, burstiness=0.5))
    assert result['exit_code'] == 0, result
    stage = tmp_path / 'stage'
    assert result['result_file'] == str(stage / 'result-random-t0-c4-q50-r1.json')
    assert result['arrivals_file'] == str(stage / 'arrivals-random-t0-c4-q50.json')
    names = sorted(os.listdir(str(stage)))
    assert 'raw-random-t0-c4-q50-r1.jsonl' in names
    assert not [name for name in names if name.startswith(('result-', 'raw-')) and '-q50-' not in name], names
    with open(result['result_file'], encoding='utf-8') as handle:
        row = json.load(handle)
    assert set(row) == set(RESULT_KEYS) and row['request_rate'] == 50.0 and row['burstiness'] == 0.5 and row['complete']
    with open(str(stage / 'raw-random-t0-c4-q50-r1.jsonl'), encoding='utf-8') as handle:
        records = [json.loads(line) for line in handle]
    measured = sorted((r for r in records if not r['warmup']), key=lambda r: r['index'])
    assert [r['scheduled_s'] for r in measured] == arrival_times(5, 6, 50.0, 0.5)
    with open(result['arrivals_file'], encoding='utf-8') as handle:
        assert json.load(handle) == [round(value, 6) for value in arrival_times(5, 6, 50.0, 0.5)]


def test_a_closed_loop_load_run_is_named_inf_and_reused_when_run_again(run_module, scripted_server, tmp_path):
    server = scripted_server(scripted.good)
    first = run_module(bench_run, load_args(server, tmp_path, concurrency=2, request_rate='inf'))
    assert first['exit_code'] == 0, first
    assert first['result_file'] == str(tmp_path / 'stage' / 'result-random-t0-c2-qinf-r1.json')
    assert first['result']['request_rate'] is None and first['result']['burstiness'] is None
    again = run_module(bench_run, load_args(server, tmp_path, concurrency=2, request_rate='inf'))
    assert again['changed'] is False and again['results'][0]['reused'] is True


@pytest.mark.parametrize('value', [0.0, -1.0, float('nan'), float('inf')])
def test_a_burstiness_that_is_not_a_positive_number_is_refused(run_module, tmp_path, value):
    result = run_module(bench_run, dict(concurrency=1, num_prompts=1, input_len=1, output_len=1, request_rate=2.0,
                                        burstiness=value, output_dir=str(tmp_path / 'x')))
    assert result['exit_code'] == 1 and result['msg'].startswith('burstiness must be a positive number')
    assert not (tmp_path / 'x').exists()


def test_the_sglang_harness_refuses_a_burstiness_its_client_cannot_draw(run_module, tmp_path):
    result = run_module(bench_run, dict(harness='sglang', concurrency=1, num_prompts=1, input_len=1, output_len=1,
                                        request_rate=2.0, burstiness=0.5, output_dir=str(tmp_path / 'x')))
    assert result['exit_code'] == 1 and result['msg'].startswith('burstiness 0.5 needs harness builtin')
    assert '--burstiness' in result['msg'] and not (tmp_path / 'x').exists()
