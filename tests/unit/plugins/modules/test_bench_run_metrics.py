# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""bench_run's /metrics scrapes (builtin harness): GET right before and right after each measured run, never around the
warm-up, kept raw beside the raw log; why none when none (off, a server without --enable-metrics, too large, the
sglang harness). Real HTTP against a scripted server and the SGLang emulator; the file is read back by the report's
parser."""

from __future__ import annotations

import json
import os
import sys

import pytest

from ansible_collections.specdec.bench.plugins.module_utils._stage import harness_run as _harness_run
from ansible_collections.specdec.bench.plugins.modules import bench_run
from ansible_collections.specdec.bench.plugins.plugin_utils.report.read import read_metrics
from ansible_collections.specdec.bench.plugins.plugin_utils.report.why import server_figures
from ansible_collections.specdec.bench.plugins.plugin_utils.server_metrics import read_scrapes, scrape_deltas

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'module_utils'))
import scripted_sglang as scripted  # noqa: E402  pylint: disable=wrong-import-position
from conftest import DFLASH_ARGS  # noqa: E402  pylint: disable=wrong-import-position
from test_bench_run import FakeClient, scripted_args, sglang_args  # noqa: E402  pylint: disable=wrong-import-position,import-error

TEXT = '''# HELP sglang:generation_tokens_total Number of generation tokens processed.
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="m"} %d.0
# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m"} 0.0
'''


def counter_page(number):
    """The server's generation counter at its number-th scrape: 100, then 100 more per scrape."""
    return (TEXT % (100 * (number + 1))).encode()


@pytest.fixture(name='server')
def fixture_server():
    servers = []

    def make(pages):
        servers.append(scripted.ScriptedServer(scripted.good, pages))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def result(tmp_path):
    with open(str(tmp_path / 'stage' / 'result-random-t0-c1-r1.json'), encoding='utf-8') as handle:
        return json.load(handle)


def test_the_measured_run_is_scraped_before_and_after_into_a_file_beside_the_raw_log(run_module, server, tmp_path):
    emu = server({'/metrics': (200, counter_page)})
    outcome = run_module(bench_run, scripted_args(emu, tmp_path, repeats=2))
    assert outcome['exit_code'] == 0, outcome
    # two scrapes per measured repeat, none around the warm-up (which runs before the first)
    assert emu.gets.count('/metrics') == 4
    for repeat in (1, 2):
        path = tmp_path / 'stage' / ('raw-random-t0-c1-r%d.metrics.json' % repeat)
        before, after, before_t, after_t = read_scrapes(str(path))
        assert before_t <= after_t
        assert scrape_deltas(before, after)['counters'] == {'sglang:generation_tokens': 100.0}
    row = result(tmp_path)
    assert (row['metrics_file'], row['metrics_note']) == ('raw-random-t0-c1-r1.metrics.json', None)


def test_a_server_without_metrics_leaves_a_note(run_module, server, tmp_path):
    emu = server({'/metrics': (404, b'{"detail": "Not Found"}')})
    assert run_module(bench_run, scripted_args(emu, tmp_path))['exit_code'] == 0
    row = result(tmp_path)
    assert row['metrics_file'] is None
    assert row['metrics_note'] == 'the server serves no /metrics (SGLang needs --enable-metrics)'
    assert emu.gets.count('/metrics') == 1  # no second try after the server said it has none
    assert not [name for name in os.listdir(str(tmp_path / 'stage')) if name.endswith('.metrics.json')]


def test_metrics_off_scrapes_nothing(run_module, server, tmp_path):
    emu = server({'/metrics': (200, counter_page)})
    assert run_module(bench_run, scripted_args(emu, tmp_path, metrics=False))['exit_code'] == 0
    assert '/metrics' not in emu.gets
    assert result(tmp_path)['metrics_note'] == 'metrics off: the stage runs SGLang without --enable-metrics'


def test_a_scrape_over_the_bound_is_dropped_with_a_note(run_module, server, tmp_path, monkeypatch):
    monkeypatch.setattr(_harness_run, 'METRICS_MAX_BYTES', 64)
    emu = server({'/metrics': (200, counter_page)})
    assert run_module(bench_run, scripted_args(emu, tmp_path))['exit_code'] == 0
    row = result(tmp_path)
    assert row['metrics_file'] is None and row['metrics_note'] == 'GET /metrics answered more than 64 bytes; the scrape is dropped'


def test_scrape_metrics_reads_no_more_than_the_bound(server):
    big = b'#' * (1 << 20)
    emu = server({'/metrics': (200, big), '/small': (200, b'# nothing\n')})
    snapshot, note = _harness_run.scrape_metrics(emu.base_url, max_bytes=1000)
    assert snapshot is None and 'more than 1000 bytes' in note
    snapshot, note = _harness_run.scrape_metrics(emu.base_url, max_bytes=len(big), clock=lambda: 1700000000.25)
    assert note is None and snapshot == {'t': 1700000000.25, 'text': big.decode()}


def test_a_server_that_is_gone_leaves_a_note():
    snapshot, note = _harness_run.scrape_metrics('http://127.0.0.1:9', timeout=2)
    assert snapshot is None and note.startswith('GET /metrics failed: ')


def test_the_sglang_harness_scrapes_nothing(run_module, monkeypatch, tmp_path):
    FakeClient(monkeypatch)
    outcome = run_module(bench_run, sglang_args(tmp_path))
    assert outcome['exit_code'] == 0, outcome
    assert outcome['result']['metrics_file'] is None
    assert outcome['result']['metrics_note'] == "the sglang harness (SGLang's own client) does not scrape /metrics"


@pytest.mark.parametrize('flag', [True, False])
def test_the_emulator_serves_metrics_only_with_the_flag_and_its_counters_cover_the_run(run_module, emulator, tmp_path, flag):
    emu = emulator(DFLASH_ARGS + (('--enable-metrics',) if flag else ())).wait_ready()
    outcome = run_module(bench_run, dict(base_url=emu.base_url, concurrency=2, num_prompts=4, input_len=16, output_len=12,
                                         seed=5, warmup_requests=1, output_dir=str(tmp_path / 'stage'), stage='tp1-dflash'))
    assert outcome['exit_code'] == 0, outcome
    row = outcome['result']
    if not flag:
        assert row['metrics_file'] is None and row['metrics_note'] == 'the server serves no /metrics (SGLang needs --enable-metrics)'
        return
    before, after, _before_t, _after_t = read_scrapes(str(tmp_path / 'stage' / row['metrics_file']))
    counters = scrape_deltas(before, after)['counters']
    # the measured run's own requests, not the warm-up's: the scrapes bracket it
    assert counters['sglang:generation_tokens'] == row['total_output_tokens'] == 4 * 12
    assert counters['sglang:prompt_tokens'] == row['total_input_tokens']


def test_the_reports_server_figures_agree_with_the_requests_on_the_emulator(run_module, emulator, tmp_path):
    """The report's server figures (read.read_metrics, why.server_figures) from a real scrape of the emulator: the tokens
    its verify steps made per verify call, and its cache hits, are the requests' own (decode_tokens / decode_steps and
    cache_hit_rate), and the counters are the measured run's."""
    emu = emulator(DFLASH_ARGS + ('--enable-metrics',)).wait_ready()
    outcome = run_module(bench_run, dict(base_url=emu.base_url, concurrency=2, num_prompts=4, input_len=16, output_len=12,
                                         seed=7, warmup_requests=1, output_dir=str(tmp_path / 'stage'), stage='tp1-dflash'))
    assert outcome['exit_code'] == 0, outcome
    row = outcome['result']
    scrape = read_metrics(str(tmp_path / 'stage' / row['metrics_file']))
    assert 'error' not in scrape, scrape
    figures = server_figures([scrape])
    assert figures['server_generation_tokens'] == row['total_output_tokens']
    assert figures['server_requests'] == 4
    assert figures['server_verify_calls'] == row['decode_steps']
    assert figures['server_accept_length'] == pytest.approx(float(row['decode_tokens']) / row['decode_steps'])
    assert figures['server_cache_hit_rate'] == pytest.approx(row['cache_hit_rate'])
    assert figures['server_note'] is None


def test_server_figures_of_unreadable_and_autoregressive_scrapes(tmp_path):
    broken = tmp_path / 'raw-x-t0-c1-r1.metrics.json'
    broken.write_text('{"before": 1}')
    unreadable = read_metrics(str(broken))
    assert unreadable['error'].startswith('raw-x-t0-c1-r1.metrics.json: before is ') and str(tmp_path) not in unreadable['error']
    ar = {'counters': {'sglang:prompt_tokens': 300.0, 'sglang:generation_tokens': 120.0, 'sglang:num_requests': 3.0},
          'gauges': {}, 'histograms': {'sglang:queue_time_seconds': {'count': 3.0, 'sum': 0.006}}}
    figures = server_figures([ar, unreadable])
    # no cached_tokens family: SGLang counts it only once a request hits, so 0; no verify calls: no tau
    assert (figures['server_cached_tokens'], figures['server_cache_hit_rate']) == (0.0, 0.0)
    assert figures['server_accept_length'] is None and figures['server_verify_calls'] is None
    assert figures['server_queue_time_ms'] == pytest.approx(2.0)
    assert figures['server_note'].startswith('1 of 2 scrapes unreadable: raw-x-t0-c1-r1.metrics.json')
    assert server_figures([unreadable])['server_generation_tokens'] is None
