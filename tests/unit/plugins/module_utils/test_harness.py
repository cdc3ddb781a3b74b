# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The normalized result schema: SGLang's client lines (real captures) mapped onto it, builtin records reduced to it."""

from __future__ import annotations

import json
import math
import os

import pytest

from ansible_collections.specdec.bench.plugins.module_utils import _common
from ansible_collections.specdec.bench.plugins.module_utils._stage import harness
from ansible_collections.specdec.bench.plugins.module_utils._common import RESULTS_LAYOUT
from ansible_collections.specdec.bench.plugins.module_utils._stage.builtin_harness import arrival_times, generate_body, make_prompts

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures', 'sglang-client')
SCHEMA_KEYS = {
    'harness', 'concurrency', 'num_prompts', 'input_len', 'output_len', 'completed', 'failed', 'complete', 'duration_s',
    'output_throughput', 'request_throughput', 'accept_length', 'raw_file',
} | {'%s_%s' % (stat, metric) for stat in ('mean', 'median', 'p99') for metric in ('ttft_ms', 'itl_ms', 'tpot_ms', 'e2e_latency_ms')}
# the accept_length of the captured runs (/server_info's avg_spec_accept_length; none for autoregressive decoding)
ACCEPT_LENGTHS = [('ar', None), ('dflash', 3.526315789473684), ('ddtree64', 4.5423728813559325)]


def client_text(method):
    with open(os.path.join(FIXTURES, 'bench_serving_%s.jsonl' % method), encoding='utf-8') as handle:
        return handle.read()


def test_the_schema_holds_every_key_the_report_reads():
    assert SCHEMA_KEYS <= set(harness.RESULT_KEYS)
    assert len(set(harness.RESULT_KEYS)) == len(harness.RESULT_KEYS)
    with pytest.raises(ValueError, match='not result keys: speedup'):
        harness.result_row(speedup=2.0)


@pytest.mark.parametrize('method, accept_length', ACCEPT_LENGTHS)
def test_sglang_client_lines_map_exactly(method, accept_length):
    text = client_text(method)
    line = json.loads(text)  # Python's json reads the bare Infinity the client writes
    assert line['request_rate'] == float('inf')
    row = harness.from_sglang_client(text, num_prompts=8, seed=1, raw_file='/r/raw-c4.jsonl', stage='tp1-%s' % method)
    assert set(row) == set(harness.RESULT_KEYS)
    for key in harness.STAT_KEYS + ('completed', 'output_throughput', 'request_throughput', 'total_input_tokens', 'total_output_tokens'):
        assert row[key] == line[key], key
    assert row['duration_s'] == line['duration']
    # the client's throughputs are its counts over its duration, the same float operations
    assert row['request_throughput'] == line['completed'] / line['duration']
    assert row['output_throughput'] == line['total_output_tokens'] / line['duration']
    assert (row['harness'], row['stage'], row['seed'], row['raw_file']) == ('sglang', 'tp1-%s' % method, 1, '/r/raw-c4.jsonl')
    assert (row['concurrency'], row['input_len'], row['output_len']) == (4, 64, 64)
    assert row['request_rate'] is None  # infinite: strict JSON has no Infinity
    assert (row['completed'], row['failed'], row['complete']) == (8, 0, True)
    # the client keeps no per-request verify count: its /server_info figure is the cross-check, tau per requests null
    assert row['accept_length_server_info'] == accept_length
    assert row['accept_length'] is None and row['accept_length_source'] is None
    assert row['accept_length_disagreement'] is None and row['accept_length_flag'] is False
    assert (row['dataset'], row['dataset_kind'], row['requests']) == (None, None, 8)
    assert row['mean_output_len'] == line['total_output_tokens'] / 8.0
    assert row['mean_client_lag_ms'] is None
    json.dumps(row, allow_nan=False)


def test_sglang_client_output_with_progress_bar_carriage_returns_and_missing_prompts():
    text = ' 0%|          | 0/8\r 50%|#####     | 4/8\rnot json\n' + client_text('dflash').replace('"completed": 8', '"completed": 6')
    row = harness.from_sglang_client(text, num_prompts=8)
    assert (row['completed'], row['failed'], row['complete']) == (6, 2, False)
    assert harness.from_sglang_client(client_text('dflash'), num_prompts=8, interrupted=True)['complete'] is False


def test_sglang_client_output_without_a_result_line():
    with pytest.raises(ValueError, match='no JSON result line'):
        harness.from_sglang_client('Traceback (most recent call last):\n  ...\nConnectionRefusedError\n')


def test_not_a_number_becomes_null():
    row = harness.from_sglang_client('{"completed": 0, "duration": 1.0, "mean_ttft_ms": NaN, "accept_length": NaN}', num_prompts=4)
    assert row['mean_ttft_ms'] is None and row['accept_length'] is None and row['failed'] == 4
    assert row['accept_length_server_info'] is None and row['mean_output_len'] is None


@pytest.mark.parametrize('values, q, expected', [
    ([1, 2, 3, 4], 50, 2.5),
    ([1, 2, 3, 4], 99, 3.97),
    ([15, 20, 35, 40, 50], 40, 29.0),
    ([7], 99, 7),
    ([3, 1, 2], 0, 1),
    ([3, 1, 2], 100, 3),
])
def test_percentile_interpolates_linearly_as_numpy(values, q, expected):
    assert harness.percentile(values, q) == pytest.approx(expected)


def test_percentile_of_nothing_is_none():
    assert harness.percentile([], 50) is None


def chunk(text, tokens, **meta):
    meta['completion_tokens'] = tokens
    return {'text': text, 'meta_info': meta}


def test_request_timing_spreads_a_multi_token_chunk_over_its_tokens():
    timing = harness.RequestTiming(10.0)
    for now, event in [
        (10.050, chunk('', 0)),  # no text: not a token (SGLang's client skips it)
        (10.100, chunk('a', 1)),  # first token: TTFT
        (10.130, chunk('abcd', 4)),  # 3 tokens in one chunk: 30 ms spread over 3
        (10.140, chunk('abcd', 4)),  # no new token: skipped, and the gap keeps running
        (10.160, chunk('abcde', 5)),  # 30 ms since the last counted chunk
        (10.200, chunk('abcdefgh', 8, spec_verify_ct=3, spec_accept_length=8 / 3.0, prompt_tokens=16)),
        (10.210, '[DONE]'),
    ]:
        timing.feed(now, event)
    assert timing.ttft == pytest.approx(0.1)
    assert timing.itl == pytest.approx([0.01] * 3 + [0.03] + [0.04 / 3] * 3)
    assert timing.latency == pytest.approx(0.21)  # the [DONE] line ends the request, as in SGLang's client
    record = timing.record()
    assert (record['output_tokens'], record['prompt_tokens'], record['spec_verify_ct']) == (8, 16, 3)


def record(index, ttft, latency, tokens, itl, warmup=False, success=True, error=None, lag=0.0, verify=None):
    return dict(index=index, warmup=warmup, success=success, error=error, scheduled_s=0.0, intended_start_s=1.0,
                start_s=1.0 + lag, ttft_s=ttft, latency_s=latency, itl_s=itl, output_tokens=tokens, prompt_tokens=32,
                spec_verify_ct=verify, spec_accept_length=(tokens / float(verify)) if verify else None)


def hand_records():
    return [
        record(0, 9.0, 99.0, 5, [9.0] * 4, warmup=True),  # left out
        record(1, 0.1, 0.5, 5, [0.1, 0.1, 0.1, 0.1], lag=0.001, verify=2),
        record(2, 0.2, 0.8, 4, [0.3, 0.15, 0.15], lag=0.003, verify=2),
        record(3, 0.3, 1.0, 3, [0.35, 0.35], lag=0.002, verify=1),
        record(4, None, 0.05, 0, [], success=False, error='ConnectionResetError: reset by peer', lag=0.0),
    ]


def test_builtin_statistics_from_hand_made_timings():
    row = harness.from_builtin(hand_records(), 2.0, concurrency=2, num_prompts=5, input_len=32, output_len=5, seed=3,
                               raw_file='/r/raw-c2.jsonl')
    assert set(row) == set(harness.RESULT_KEYS)
    assert (row['completed'], row['failed'], row['complete']) == (3, 2, False)
    assert row['duration_s'] == 2.0 and row['request_throughput'] == 1.5
    assert row['total_output_tokens'] == 12 and row['output_throughput'] == 6.0 and row['total_input_tokens'] == 96
    assert row['mean_ttft_ms'] == pytest.approx(200.0) and row['median_ttft_ms'] == pytest.approx(200.0)
    assert row['p99_ttft_ms'] == pytest.approx(298.0)  # rank 1.98, between 200 and 300
    itls = [0.1] * 4 + [0.3, 0.15, 0.15] + [0.35, 0.35]
    assert row['mean_itl_ms'] == pytest.approx(sum(itls) / 9 * 1000)
    assert row['median_itl_ms'] == pytest.approx(150.0)
    assert row['p99_itl_ms'] == pytest.approx(350.0)
    tpots = [(0.5 - 0.1) / 4, (0.8 - 0.2) / 3, (1.0 - 0.3) / 2]
    assert row['mean_tpot_ms'] == pytest.approx(sum(tpots) / 3 * 1000)
    assert row['median_tpot_ms'] == pytest.approx(200.0)
    assert row['mean_e2e_latency_ms'] == pytest.approx(2300 / 3.0) and row['median_e2e_latency_ms'] == pytest.approx(800.0)
    assert row['accept_length'] == pytest.approx(12 / 5.0) and row['accept_length_source'] == 'requests'
    assert row['accept_length_median'] == pytest.approx(2.5)  # per request: 5/2, 4/2, 3/1
    assert row['accept_length_p10'] == pytest.approx(harness.percentile([2.5, 2.0, 3.0], 10))
    assert row['accept_length_p90'] == pytest.approx(harness.percentile([2.5, 2.0, 3.0], 90))
    assert row['accept_length_server_info'] is None and row['accept_length_flag'] is False
    assert row['requests'] == 4 and row['mean_output_len'] == pytest.approx(4.0)
    lags = [1.0, 3.0, 2.0, 0.0]
    assert row['mean_client_lag_ms'] == pytest.approx(1.5) and row['max_client_lag_ms'] == pytest.approx(3.0)
    assert row['p99_client_lag_ms'] == pytest.approx(harness.percentile(lags, 99))
    assert row['errors'] == ['ConnectionResetError: reset by peer']
    json.dumps(row, allow_nan=False)


def test_builtin_accept_length_is_the_requests_with_server_info_as_cross_check_and_null_for_autoregressive():
    server_info = {'internal_states': [{'avg_spec_accept_length': 3.25}]}
    row = harness.from_builtin(hand_records(), 2.0, 2, 5, 32, 5, server_info=server_info)
    assert (row['accept_length'], row['accept_length_source']) == (pytest.approx(2.4), 'requests')
    assert row['accept_length_server_info'] == 3.25
    # the server counts the tokens of verify steps only, not each request's first (prefill) token: (12 - 3) / 5
    assert row['accept_length_disagreement'] == pytest.approx(abs(1.8 - 3.25) / 3.25) and row['accept_length_flag'] is True
    exact = harness.from_builtin(hand_records(), 2.0, 2, 5, 32, 5, server_info={'avg_spec_accept_length': 1.8})
    assert exact['accept_length_disagreement'] == pytest.approx(0.0) and exact['accept_length_flag'] is False
    close = harness.from_builtin(hand_records(), 2.0, 2, 5, 32, 5, server_info={'avg_spec_accept_length': 1.83})
    assert close['accept_length_disagreement'] == pytest.approx(0.03 / 1.83) and close['accept_length_flag'] is False
    over = harness.from_builtin(hand_records(), 2.0, 2, 5, 32, 5, server_info={'avg_spec_accept_length': 1.75})
    assert over['accept_length_disagreement'] == pytest.approx(0.05 / 1.75) and over['accept_length_flag'] is True
    # the old per-request spec_accept_length without spec_verify_ct is no count of verify steps: not used
    averages_only = [dict(r, spec_verify_ct=None) for r in hand_records()]
    assert harness.from_builtin(averages_only, 2.0, 2, 5, 32, 5)['accept_length'] is None
    autoregressive = [dict(r, spec_verify_ct=None, spec_accept_length=None) for r in hand_records()]
    row = harness.from_builtin(autoregressive, 2.0, 2, 5, 32, 5, server_info={'internal_states': [{}]})
    assert row['accept_length'] is None and row['accept_length_source'] is None


def test_builtin_with_nothing_finished_has_null_statistics():
    row = harness.from_builtin([], None, 1, 4, 32, 8, interrupted=True)
    assert (row['completed'], row['failed'], row['complete']) == (0, 4, False)
    assert all(row[key] is None for key in harness.STAT_KEYS + ('output_throughput', 'duration_s'))


def test_prompts_and_arrivals_are_seeded():
    assert make_prompts(7, 3, 16) == make_prompts(7, 3, 16) != make_prompts(8, 3, 16)
    assert [len(prompt) for prompt in make_prompts(7, 3, 16)] == [16, 16, 16]
    assert arrival_times(1, 4, None) == arrival_times(1, 4, float('inf')) == [0.0] * 4
    times = arrival_times(1, 2000, 50.0)
    assert times == arrival_times(1, 2000, 50.0) and times[0] == 0.0 and times == sorted(times)
    assert times[-1] / 1999 == pytest.approx(1 / 50.0, rel=0.1)  # the mean gap of a Poisson process of rate 50
    body = generate_body([1, 2], 8)
    assert body['stream'] is True and body['sampling_params'] == {'max_new_tokens': 8, 'temperature': 0.0, 'top_p': 1.0,
                                                                  'top_k': -1, 'ignore_eos': True}
    assert math.isclose(harness.finite('3.5'), 3.5) and harness.finite(float('nan')) is None and harness.finite(True) is None


@pytest.mark.parametrize('concurrency', [1, 4, 64])
def test_bench_run_writes_the_layouts_names(concurrency):
    """bench_run names its files with these; they are the collection's results layout (module_utils/_common.py)."""
    fields = dict(dataset='gsm8k', temperature='0.7', concurrency=concurrency, repeat=2)
    assert harness.result_file_name('gsm8k', 0.7, concurrency, 2) == RESULTS_LAYOUT['result'].format(**fields)
    assert harness.raw_file_name('gsm8k', 0.7, concurrency, repeat=2) == RESULTS_LAYOUT['raw'].format(**fields)
    assert harness.raw_file_name('random', 0, concurrency, 'log') == 'raw-random-t0-c%d-r1.log' % concurrency


def turn(conversation, turn_index, final, success=True, tokens=4, verify=2):
    return dict(record(conversation, 0.1, 0.5, tokens, [0.1] * (tokens - 1), success=success, verify=verify),
                id='q%d' % conversation, turn=turn_index, final=final)


def test_builtin_counts_conversations_as_prompts_and_turns_as_requests():
    records = [turn(0, 0, False), turn(0, 1, True, tokens=6, verify=2),  # both turns done
               turn(1, 0, False), turn(1, 1, True, success=False, tokens=0, verify=None),  # second turn failed
               turn(2, 0, False, tokens=3, verify=3)]  # its second turn never sent (the run's deadline)
    row = harness.from_builtin(records, 1.0, 2, 3, None, None, dataset='mt-bench', dataset_kind='builtin',
                               temperature=0.0, ignore_eos=False, max_new_tokens=8, turns='all')
    assert (row['completed'], row['failed'], row['complete'], row['requests']) == (1, 2, False, 5)
    assert row['total_output_tokens'] == 4 + 6 + 4 + 3 and row['mean_output_len'] == pytest.approx(17 / 4.0)
    assert row['accept_length'] == pytest.approx(17 / 9.0)
    assert (row['dataset'], row['dataset_kind'], row['turns'], row['ignore_eos']) == ('mt-bench', 'builtin', 'all', False)


def test_finite_is_the_collections():
    assert harness.finite is _common.finite


def test_a_cells_summary_is_its_one_row_or_the_means_and_sums_of_its_repeats():
    one = harness.result_row(repeat=1, repeats=1, completed=4, output_throughput=10.0, raw_file='/r/raw-x-r1.jsonl')
    assert harness.cell_summary([one]) == one
    rows = [harness.result_row(harness='builtin', concurrency=4, repeat=r, repeats=3, completed=4, failed=0, complete=True,
                               output_throughput=t, accept_length=a, median_ttft_ms=m, accept_length_flag=f,
                               errors=e, raw_file='/r/raw-x-r%d.jsonl' % r)
            for r, t, a, m, f, e in ((1, 10.0, 3.0, None, False, []), (2, 20.0, 2.0, 5.0, True, ['boom']),
                                     (3, 30.0, None, 7.0, False, ['boom', 'bang']))]
    summary = harness.cell_summary(rows)
    assert set(summary) == set(harness.RESULT_KEYS)
    assert (summary['output_throughput'], summary['accept_length'], summary['median_ttft_ms']) == (20.0, 2.5, 6.0)
    assert (summary['completed'], summary['failed'], summary['complete'], summary['accept_length_flag']) == (12, 0, True, True)
    assert (summary['repeat'], summary['repeats'], summary['raw_file'], summary['concurrency']) == (None, 3, None, 4)
    assert summary['errors'] == ['boom', 'bang']
    assert harness.cell_summary([dict(rows[0], complete=False), rows[1]])['complete'] is False


# ---- acceptance in full, decode-only timing, cache hits (SPEC_KEYS, DECODE_KEYS, CACHE_KEYS)


def why_record(tokens, steps, ttft, latency, prompt, cached, turn, hist=None, correct=None, proposed=None):
    """A finished request as RequestTiming.record() and LoadRun keep it."""
    return {'success': True, 'warmup': False, 'start_s': 0.0, 'intended_start_s': 0.0, 'id': 'c%d' % turn, 'turn': turn,
            'ttft_s': ttft, 'latency_s': latency, 'itl_s': [], 'output_tokens': tokens, 'completion_tokens': tokens,
            'prompt_tokens': prompt, 'cached_tokens': cached, 'spec_verify_ct': steps, 'spec_correct_drafts_histogram': hist,
            'spec_num_correct_drafts': correct, 'spec_num_proposed_drafts': proposed}


def why_records():
    """Two requests: 10 tokens in 4 verify steps (turn 0) and 30 tokens in 6 (turn 1, its prompt mostly cached)."""
    return [why_record(10, 4, 0.1, 1.0, 100, 0, 0, hist=[1, 1, 2], correct=5, proposed=8),
            why_record(30, 6, 0.2, 6.0, 300, 240, 1, hist=[0, 2, 4], correct=10, proposed=12)]


def why_row(records):
    return harness.from_builtin(records, 6.0, concurrency=1, num_prompts=len(records), input_len=None, output_len=None)


def test_the_new_key_groups_are_in_the_schema_once():
    for group in (harness.SPEC_KEYS, harness.DECODE_KEYS, harness.CACHE_KEYS, harness.METRICS_KEYS):
        assert all(harness.RESULT_KEYS.count(key) == 1 for key in group)


def test_the_three_taus_and_the_pooled_acceptance_rate():
    row = why_row(why_records())
    assert row['accept_length'] == pytest.approx(40 / 10.0)  # step-pooled, the headline
    assert row['accept_length_mean_of_means'] == pytest.approx((2.5 + 5.0) / 2)  # 3.75
    assert row['accept_length_token_weighted'] == pytest.approx((10 * 2.5 + 30 * 5.0) / 40)  # 4.375
    assert row['accept_rate'] == pytest.approx((5 + 10) / (8 + 12.0))  # pooled, not the mean of 5/8 and 10/12


def test_the_histogram_is_summed_and_gives_acceptance_per_position():
    row = why_row(why_records())
    assert row['accept_histogram'] == [1, 3, 6]
    # position 1 accepted in every step with 1 or 2 correct drafts: 9 of 10; position 2 in those with 2: 6 of 10
    assert row['accept_by_position'] == pytest.approx([0.9, 0.6])


def test_histograms_of_different_lengths_add_up_position_by_position():
    records = why_records()
    records[0]['spec_correct_drafts_histogram'] = [4]
    row = why_row(records)
    assert row['accept_histogram'] == [4, 2, 4] and row['accept_by_position'] == pytest.approx([0.6, 0.4])


def test_decode_only_timing_leaves_the_first_token_out():
    row = why_row(why_records())
    # TPOTs (1.0 - 0.1) / 9 = 0.1 s and (6.0 - 0.2) / 29 = 0.2 s: mean 150 ms, sample sd sqrt(2 * 0.05^2 / 1)
    assert row['mean_tpot_ms'] == pytest.approx(150.0) and row['decode_tpot_n'] == 2
    assert row['decode_tpot_sd_ms'] == pytest.approx(math.sqrt(2 * 0.05 ** 2) * 1000)
    assert row['decode_time_s'] == pytest.approx(0.9 + 5.8) and row['decode_tokens'] == 9 + 29
    assert row['decode_steps'] == 4 + 6 and row['step_time_ms'] == pytest.approx(6.7 / 10 * 1000)
    assert row['request_tokens_per_s_mean'] == pytest.approx((10 / 1.0 + 30 / 6.0) / 2)  # Spec-Bench's, 7.5


def test_an_autoregressive_run_has_one_step_per_decode_token_and_no_acceptance():
    records = [why_record(10, None, 0.1, 1.0, 100, 0, 0), why_record(30, None, 0.2, 6.0, 300, 240, 1)]
    row = why_row(records)
    assert row['decode_steps'] == row['decode_tokens'] == 38
    assert row['step_time_ms'] == pytest.approx(6.7 / 38 * 1000)
    assert all(row[key] is None for key in harness.SPEC_KEYS + ('accept_length',))


def test_mixed_requests_have_no_step_count():
    records = why_records()
    records[1]['spec_verify_ct'] = None
    row = why_row(records)
    assert row['decode_steps'] is None and row['step_time_ms'] is None and row['decode_tokens'] == 38


def test_cache_hits_overall_and_by_turn():
    row = why_row(why_records())
    assert row['cached_tokens'] == 240 and row['cache_hit_rate'] == pytest.approx(240 / 400.0)
    assert row['cache_hit_rate_by_turn'] == pytest.approx([0.0, 0.8])
    # a turn none of whose requests carries the counts is null, not 0
    records = why_records()
    records[1]['turn'] = 2
    assert why_row(records)['cache_hit_rate_by_turn'][1] is None
    without = [dict(record, cached_tokens=None) for record in why_records()]
    assert all(why_row(without)[key] is None for key in harness.CACHE_KEYS)


def test_the_sglang_client_leaves_the_new_keys_null():
    row = harness.from_sglang_client(client_text('dflash'), num_prompts=8)
    for key in harness.SPEC_KEYS + harness.DECODE_KEYS + harness.CACHE_KEYS + harness.METRICS_KEYS:
        assert row[key] is None, key


def test_a_cells_summary_sums_histograms_and_averages_lists_by_position():
    first = dict(why_row(why_records()), repeat=1, metrics_file='raw-random-t0-c1-r1.metrics.json')
    second = dict(first, repeat=2, accept_histogram=[1, 1], cache_hit_rate_by_turn=[0.2], metrics_file='x')
    summary = harness.cell_summary([first, second])
    assert summary['accept_histogram'] == [2, 4, 6]
    assert summary['cache_hit_rate_by_turn'] == pytest.approx([0.1, 0.8])
    assert summary['metrics_file'] is None and summary['accept_rate'] == pytest.approx(0.75)


def test_request_records_keep_the_drafts_and_the_cache():
    timing = harness.RequestTiming(0.0)
    meta = {'completion_tokens': 4, 'prompt_tokens': 8, 'cached_tokens': 6, 'spec_verify_ct': 2, 'spec_accept_rate': 0.5,
            'spec_num_correct_drafts': 2, 'spec_num_proposed_drafts': 4, 'spec_correct_drafts_histogram': [1, 0, 1]}
    timing.feed(0.1, {'text': 'abcd', 'meta_info': meta})
    record = timing.record()
    for key in ('spec_accept_rate', 'spec_num_correct_drafts', 'spec_num_proposed_drafts', 'spec_correct_drafts_histogram',
                'cached_tokens'):
        assert record[key] == meta[key], key
