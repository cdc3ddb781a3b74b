# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""_harness_run: what both of bench_run's harness drivers share (limits, file names, workload keys, the row's file)."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.specdec.bench.plugins.module_utils._common import RESULTS_LAYOUT
from ansible_collections.specdec.bench.plugins.module_utils._harness_run import run_files, run_limits, workload, write_row


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
    result, raw, log = run_files('/r/c/tp1', 16)
    assert result == '/r/c/tp1/' + RESULTS_LAYOUT['result'].format(concurrency=16) == '/r/c/tp1/result-c16.json'
    assert raw == '/r/c/tp1/' + RESULTS_LAYOUT['raw'].format(concurrency=16) == '/r/c/tp1/raw-c16.jsonl'
    assert log == '/r/c/tp1/raw-c16.log'


def test_the_workload_keys_hold_an_infinite_rate_as_null():
    params = dict(concurrency=2, num_prompts=8, input_len=16, output_len=4, request_rate=float('inf'), seed=3,
                  stage='tp1-x', harness='builtin', base_url='http://127.0.0.1:1')
    assert workload(params) == dict(concurrency=2, num_prompts=8, input_len=16, output_len=4, request_rate=None, seed=3,
                                    stage='tp1-x')
    assert workload(dict(params, request_rate=2.5))['request_rate'] == 2.5


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
