# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The load family's file names (RESULTS_LAYOUT, rate_tag): they carry the rate, and a grid reader never takes one for
a grid run's file."""

from __future__ import annotations

import re

import pytest

from ansible_collections.specdec.bench.plugins.module_utils._common import ID_PATTERN, RESULTS_LAYOUT, rate_tag, results_file
from ansible_collections.specdec.bench.plugins.module_utils._stage.harness_run import arrivals_path, run_files, telemetry_path

# a grid result file name as a reader matches it: a dataset is an id (it may hold dashes), the other fields numbers
GRID = re.compile(r'result-(%s)-t([0-9][0-9.e+-]*)-c([0-9]+)-r([0-9]+)\.json\Z' % ID_PATTERN)


@pytest.mark.parametrize('rate, tag', [(None, 'inf'), ('inf', 'inf'), (float('inf'), 'inf'), (2.0, '2'), (0.5, '0.5'),
                                       ('4', '4'), (5.65685, '5.65685'), (12.5, '12.5')])
def test_rate_tag_writes_a_rate_whole_and_infinity_as_inf(rate, tag):
    assert rate_tag(rate) == tag


@pytest.mark.parametrize('dataset', ['random', 'gsm8k', 'mt-bench', 'a-t0-c1'])
@pytest.mark.parametrize('rate', [2.0, 0.5, None])
def test_a_load_result_is_never_a_grid_result(dataset, rate):
    name = results_file('load_result', dataset=dataset, temperature=0.7, concurrency=64, rate=rate_tag(rate), repeat=1)
    assert name == 'result-%s-t0.7-c64-q%s-r1.json' % (dataset, rate_tag(rate))
    assert GRID.match(name) is None
    assert GRID.match(results_file('result', dataset=dataset, temperature=0.7, concurrency=64, repeat=1))


def test_a_load_runs_files_carry_its_rate():
    result, raw, log = run_files('/r/c/tp1', 'gsm8k', 0.0, 64, 2, rate=2.0, load=True)
    assert result == '/r/c/tp1/result-gsm8k-t0-c64-q2-r2.json' and raw == '/r/c/tp1/raw-gsm8k-t0-c64-q2-r2.jsonl'
    assert log == '/r/c/tp1/raw-gsm8k-t0-c64-q2-r2.log'
    assert telemetry_path(result) == '/r/c/tp1/' + RESULTS_LAYOUT['load_telemetry'].format(
        dataset='gsm8k', temperature='0', concurrency=64, rate='2', repeat=2)
    assert run_files('/r', 'gsm8k', 0.0, 8, 1, load=True)[0] == '/r/result-gsm8k-t0-c8-qinf-r1.json'
    assert run_files('/r', 'gsm8k', 0.0, 8, 1, rate=2.0)[0] == '/r/result-gsm8k-t0-c8-r1.json'  # a grid run at a rate
    assert arrivals_path('/r', 'gsm8k', 0.0, 64, 0.5) == '/r/arrivals-gsm8k-t0-c64-q0.5.json'
    assert results_file('search', dataset='gsm8k', temperature=0.0, kind='request_rate') == 'search-gsm8k-t0-request_rate.json'
