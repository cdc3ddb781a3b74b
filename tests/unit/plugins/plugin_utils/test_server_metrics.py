# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""server_metrics: two /metrics texts (the exposition format prometheus_client writes, as SGLang serves it with
--enable-metrics, labelled per model and TP rank) to what changed over a run, and the scrape file bench_run writes."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.specdec.bench.plugins.plugin_utils.server_metrics import MetricsError, read_scrapes, scrape_deltas

FIXTURE = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'sglang-0.5.23', 'metrics', 'metrics.txt')

BEFORE = '''# HELP sglang:prompt_tokens_total Number of prefill tokens processed.
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="qwen",tp_rank="0"} 100.0
sglang:prompt_tokens_total{model_name="qwen",tp_rank="1"} 100.0
# HELP sglang:prompt_tokens_created Number of prefill tokens processed.
# TYPE sglang:prompt_tokens_created gauge
sglang:prompt_tokens_created{model_name="qwen",tp_rank="0"} 1.7e+09
sglang:prompt_tokens_created{model_name="qwen",tp_rank="1"} 1.7e+09
# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="qwen",tp_rank="0"} 4.0
sglang:num_running_reqs{model_name="qwen",tp_rank="1"} 4.0
# HELP sglang:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_bucket{le="0.1",model_name="qwen"} 2.0
sglang:time_to_first_token_seconds_bucket{le="+Inf",model_name="qwen"} 3.0
sglang:time_to_first_token_seconds_count{model_name="qwen"} 3.0
sglang:time_to_first_token_seconds_sum{model_name="qwen"} 0.45
'''

AFTER = '''# HELP sglang:prompt_tokens_total Number of prefill tokens processed.
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="qwen",tp_rank="0"} 160.0
sglang:prompt_tokens_total{model_name="qwen",tp_rank="1"} 140.0
# HELP sglang:prompt_tokens_created Number of prefill tokens processed.
# TYPE sglang:prompt_tokens_created gauge
sglang:prompt_tokens_created{model_name="qwen",tp_rank="0"} 1.7e+09
sglang:prompt_tokens_created{model_name="qwen",tp_rank="1"} 1.7e+09
# HELP sglang:generation_tokens_total Number of generation tokens processed.
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="qwen",tp_rank="0"} 512.0
# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="qwen",tp_rank="0"} 0.0
sglang:num_running_reqs{model_name="qwen",tp_rank="1"} 1.0
# HELP sglang:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_bucket{le="0.1",model_name="qwen"} 6.0
sglang:time_to_first_token_seconds_bucket{le="+Inf",model_name="qwen"} 8.0
sglang:time_to_first_token_seconds_count{model_name="qwen"} 8.0
sglang:time_to_first_token_seconds_sum{model_name="qwen"} 1.2
'''


def test_counter_deltas_summed_over_label_sets():
    deltas = scrape_deltas(BEFORE, AFTER)
    # (160 - 100) + (140 - 100); a family new after the run counts from 0
    assert deltas['counters'] == {'sglang:prompt_tokens': 100.0, 'sglang:generation_tokens': 512.0}


def test_gauges_are_the_value_after_without_created_times():
    assert scrape_deltas(BEFORE, AFTER)['gauges'] == {'sglang:num_running_reqs': 1.0}


def test_histogram_count_and_sum_deltas():
    histogram = scrape_deltas(BEFORE, AFTER)['histograms']['sglang:time_to_first_token_seconds']
    assert histogram['count'] == 5.0 and histogram['sum'] == pytest.approx(0.75)


def test_names_keep_only_those_families():
    deltas = scrape_deltas(BEFORE, AFTER, names=['sglang:prompt_tokens'])
    assert deltas == {'counters': {'sglang:prompt_tokens': 100.0}, 'gauges': {}, 'histograms': {}}


def test_a_counter_that_went_down_names_it():
    restarted = AFTER.replace('tp_rank="0"} 160.0', 'tp_rank="0"} 10.0')
    with pytest.raises(MetricsError, match='sglang:prompt_tokens_total went down'):
        scrape_deltas(BEFORE, restarted)


def test_a_counter_gone_after_the_run_names_it():
    gone = '\n'.join(line for line in AFTER.splitlines() if 'prompt_tokens_total' not in line) + '\n'
    with pytest.raises(MetricsError, match='sglang:prompt_tokens is in the scrape before'):
        scrape_deltas(BEFORE, gone)


def test_an_unparsable_text_is_an_error():
    with pytest.raises(MetricsError, match='cannot be parsed'):
        scrape_deltas(BEFORE, 'sglang:prompt_tokens_total{model_name="qwen" 1.0\n')


def test_read_scrapes(tmp_path):
    path = tmp_path / 'raw-random-t0-c4-r1.metrics.json'
    path.write_text(json.dumps({'before': {'t': 1700000000.5, 'text': BEFORE}, 'after': {'t': 1700000060, 'text': AFTER}}))
    assert read_scrapes(str(path)) == (BEFORE, AFTER, 1700000000.5, 1700000060.0)


@pytest.mark.parametrize('doc, problem', [
    ({'before': {'t': 1.0, 'text': BEFORE}}, 'after is'),
    ({'before': {'t': 1.0, 'text': BEFORE}, 'after': {'t': 'noon', 'text': AFTER}}, 'after.t is'),
    ({'before': {'t': 1.0, 'text': 3}, 'after': {'t': 2.0, 'text': AFTER}}, 'before is'),
])
def test_read_scrapes_refuses_a_file_of_another_shape(tmp_path, doc, problem):
    path = tmp_path / 'metrics.json'
    path.write_text(json.dumps(doc))
    with pytest.raises(MetricsError, match=problem):
        read_scrapes(str(path))


@pytest.mark.skipif(not os.path.exists(FIXTURE), reason='the captured SGLang 0.5.23 /metrics text is not there')
def test_the_captured_sglang_text_parses():
    with open(FIXTURE, encoding='utf-8') as handle:
        text = handle.read()
    deltas = scrape_deltas(text, text)
    # SGLang 0.5.23's metrics collector: spec acceptance, cache hits, queue time, token usage
    assert {'sglang:prompt_tokens', 'sglang:generation_tokens', 'sglang:cached_tokens', 'sglang:spec_verify_calls'} <= set(deltas['counters'])
    assert {'sglang:spec_accept_length', 'sglang:cache_hit_rate', 'sglang:token_usage'} <= set(deltas['gauges'])
    assert 'sglang:queue_time_seconds' in deltas['histograms']
    assert all(value == 0 for value in deltas['counters'].values())
    assert all(item == {'count': 0, 'sum': 0} for item in deltas['histograms'].values())
