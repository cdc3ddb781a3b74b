# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""_harness_run: what both of bench_run's harness drivers share (limits, file names, workload keys, the row's file)."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.specdec.bench.plugins.module_utils._common import RESULTS_LAYOUT
from ansible_collections.specdec.bench.plugins.module_utils._stage.harness import SCHEMA_VERSION, result_row
from ansible_collections.specdec.bench.plugins.module_utils._stage.harness_run import (
    REUSE_KEYS,
    prompts_shape,
    reusable_row,
    run_files,
    run_limits,
    workload,
    write_row,
)


def test_the_limits_are_derived_from_the_workload_unless_given():
    params = dict(request_timeout=None, request_deadline=None, run_deadline=None, input_len=1024, output_len=256,
                  concurrency=16, num_prompts=64, request_rate=None)
    limits = run_limits(params)
    assert limits['request_timeout'] == 60 + 1024 * 16 / 2000.0
    assert limits['request_deadline'] == limits['request_timeout'] + 256 * 0.5
    assert limits['run_deadline'] == 4 * limits['request_deadline']  # four waves of 16
    paced = run_limits(dict(params, request_rate=8.0, num_prompts=65))
    assert paced['run_deadline'] == 2 * 65 / 8.0 + 5 * limits['request_deadline']
    assert run_limits(dict(params, request_timeout=5.0, run_deadline=7.0)) == dict(
        request_timeout=5.0, request_deadline=5.0 + 128, run_deadline=7.0)


def test_the_run_files_are_the_results_layouts():
    result, raw, log = run_files('/r/c/tp1', 'random', 0.0, 16, 2)
    fields = dict(dataset='random', temperature='0', concurrency=16, repeat=2)
    assert result == '/r/c/tp1/' + RESULTS_LAYOUT['result'].format(**fields) == '/r/c/tp1/result-random-t0-c16-r2.json'
    assert raw == '/r/c/tp1/' + RESULTS_LAYOUT['raw'].format(**fields) == '/r/c/tp1/raw-random-t0-c16-r2.jsonl'
    assert log == '/r/c/tp1/raw-random-t0-c16-r2.log'
    assert run_files('/r', 'gsm8k', 0.7, 1)[0] == '/r/result-gsm8k-t0.7-c1-r1.json'


def test_the_workload_keys_hold_an_infinite_rate_as_null():
    params = dict(concurrency=2, num_prompts=8, input_len=16, output_len=4, request_rate=float('inf'), seed=3,
                  stage='tp1-x', harness='builtin', base_url='http://127.0.0.1:1')
    assert workload(params) == dict(concurrency=2, num_prompts=8, input_len=16, output_len=4, request_rate=None,
                                    burstiness=None, seed=3,
                                    stage='tp1-x', dataset='random', dataset_kind='random', dataset_source=None,
                                    dataset_source_sha256=None, dataset_sha256=None, prompts_sha256=None,
                                    template_sha256=None, turns=None, temperature=0.0, top_p=1.0, top_k=-1,
                                    ignore_eos=True, max_new_tokens=4, repeats=1, warmup_requests=None)
    assert workload(dict(params, repeats=3, warmup_requests=2))['repeats'] == 3
    assert workload(dict(params, request_rate=2.5))['request_rate'] == 2.5
    # burstiness: the arrivals' gamma shape at a finite rate only (1.0, Poisson, by default)
    assert workload(dict(params, request_rate=2.5))['burstiness'] == 1.0
    assert workload(dict(params, request_rate=2.5, burstiness=0.5))['burstiness'] == 0.5


def test_the_workload_of_a_prompts_file_records_its_dataset_and_sampling():
    dataset = dict(name='gsm8k', kind='builtin', source='http://127.0.0.1/test.jsonl', source_sha256='a' * 64,
                   normalized_sha256='b' * 64, prompts_sha256='c' * 64, template_sha256='d' * 64, turns='all')
    params = dict(concurrency=2, num_prompts=None, input_len=None, output_len=None, request_rate=None, seed=1,
                  stage='tp1-x', prompts_file='/var/lib/specdec/datasets/c.jsonl', dataset=dataset, temperature=0.7,
                  top_p=0.95, top_k=20, ignore_eos=False, max_new_tokens=2048, repeats=3, warmup_requests=1)
    values = workload(params, num_prompts=12, turns='all')
    assert values == dict(concurrency=2, num_prompts=12, input_len=None, output_len=None, request_rate=None, burstiness=None,
                          seed=1,
                          stage='tp1-x', dataset='gsm8k', dataset_kind='builtin', dataset_source=dataset['source'],
                          dataset_source_sha256='a' * 64, dataset_sha256='b' * 64, prompts_sha256='c' * 64,
                          template_sha256='d' * 64, turns='all', temperature=0.7, top_p=0.95, top_k=20,
                          ignore_eos=False, max_new_tokens=2048, repeats=3, warmup_requests=1)


def test_the_limits_of_a_prompts_file_count_its_longest_conversation_and_every_turn():
    records = [{'segments': ['x' * 100]}, {'segments': ['y' * 50, 'z' * 30]}]
    shape = prompts_shape(records, 64)
    assert shape == dict(input_len=max(100, 80 + 64), output_len=64, num_prompts=3)
    params = dict(request_timeout=None, request_deadline=None, run_deadline=None, input_len=None, output_len=None,
                  concurrency=2, num_prompts=None, request_rate=None)
    limits = run_limits(params, shape)
    assert limits['request_timeout'] == 60 + 144 * 2 / 2000.0
    assert limits['request_deadline'] == limits['request_timeout'] + 64 * 0.5
    assert limits['run_deadline'] == 2 * limits['request_deadline']


def test_a_row_is_written_as_strict_json_or_not_at_all(tmp_path):
    path = str(tmp_path / 'result-c1.json')
    write_row(path, {'completed': 1, 'errors': []})
    with open(path, encoding='utf-8') as handle:
        assert json.load(handle) == {'completed': 1, 'errors': []}
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o644)
    with pytest.raises(ValueError):
        write_row(path, {'completed': float('nan')})
    with open(path, encoding='utf-8') as handle:
        assert json.load(handle) == {'completed': 1, 'errors': []}
    assert os.listdir(str(tmp_path)) == ['result-c1.json']


def recorded(tmp_path, repeat=1, **changes):
    """A complete recorded repeat of the workload of test_the_workload_keys_hold_an_infinite_rate_as_null, its raw file beside it."""
    params = dict(concurrency=2, num_prompts=8, input_len=16, output_len=4, request_rate=None, seed=3, stage='tp1-x',
                  repeats=2, warmup_requests=1)
    row = result_row(**dict(dict(workload(params), harness='builtin', complete=True, repeat=repeat), **changes))
    result, raw, _log = run_files(str(tmp_path), 'random', 0.0, 2, repeat)
    write_row(result, row)
    with open(raw, 'w', encoding='utf-8') as handle:
        handle.write('{}\n')
    return result, raw, dict(row, repeats=3, warmup_requests=4)


def test_a_complete_recorded_repeat_of_the_same_requests_is_reused_whatever_its_planned_repeats(tmp_path):
    result, raw, expected = recorded(tmp_path)
    row = reusable_row(result, raw, expected, SCHEMA_VERSION)
    assert row is not None and row['repeats'] == 2 and row['repeat'] == 1


@pytest.mark.parametrize('key, value', [('seed', 4), ('concurrency', 4), ('temperature', 0.7), ('top_p', 0.9), ('top_k', 20),
                                        ('ignore_eos', False), ('max_new_tokens', 8), ('num_prompts', 9), ('input_len', 17),
                                        ('prompts_sha256', 'c' * 64), ('harness', 'sglang'), ('request_rate', 2.0),
                                        ('stage', 'tp1-y'), ('dataset', 'gsm8k'), ('turns', 'first')])
def test_a_recorded_repeat_of_other_requests_is_measured_again(tmp_path, key, value):
    result, raw, expected = recorded(tmp_path)
    assert key in REUSE_KEYS
    assert reusable_row(result, raw, dict(expected, **{key: value}), SCHEMA_VERSION) is None


def test_an_incomplete_missing_or_unreadable_repeat_is_measured_again(tmp_path):
    result, raw, expected = recorded(tmp_path, complete=False)
    assert reusable_row(result, raw, expected, SCHEMA_VERSION) is None
    result, raw, expected = recorded(tmp_path)
    assert reusable_row(result, raw, dict(expected, repeat=2), SCHEMA_VERSION) is None  # another repeat's row
    assert reusable_row(result, raw, expected, SCHEMA_VERSION + 1) is None
    os.unlink(raw)
    assert reusable_row(result, raw, expected, SCHEMA_VERSION) is None  # its raw records are gone
    recorded(tmp_path)
    with open(result, 'w', encoding='utf-8') as handle:
        handle.write('{"complete": tr')
    assert reusable_row(result, raw, expected, SCHEMA_VERSION) is None
    assert reusable_row(str(tmp_path / 'nope.json'), raw, expected, SCHEMA_VERSION) is None
