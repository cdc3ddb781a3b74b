# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The SGLang build each stage was planned for, in the report, and a comparison across builds that says so."""
import csv
import sys
from pathlib import Path

import pytest

from ansible_collections.specdec.bench.plugins.plugin_utils.report import generate
from ansible_collections.specdec.bench.plugins.plugin_utils.report.schema import check_plan
from ansible_collections.specdec.bench.plugins.plugin_utils.report.rows import build_label

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synthetic_results as synth  # noqa: E402  pylint: disable=wrong-import-position

RELEASE = {'name': 'sglang-0.5.23', 'release': '0.5.23', 'version': '0.5.23', 'python': '/opt/sglang/bin/python',
           'description': 'SGLang 0.5.23, the release'}
DDTREE = {'name': 'sglang-ddtree-pr29907', 'release': '0.5.23', 'version': '0.5.23+ddtree', 'python': '/opt/ddtree/bin/python',
          'description': 'SGLang 0.5.23 with DDTree from PR 29907'}
MATRIX = [(1, 'autoregressive', {}), (1, 'dflash', {'num_draft_tokens': 16})]


@pytest.fixture(name='root')
def results_root(tmp_path):
    root = tmp_path / 'results'
    synth.make_campaign(root, 'ct200', 'new', MATRIX, sglang_build=DDTREE)
    synth.make_campaign(root, 'ct200', 'old', MATRIX, sglang_build=RELEASE, seed=3)
    synth.make_campaign(root, 'ct200', 'same', MATRIX, sglang_build=DDTREE, seed=5)
    return root


def test_the_build_label_names_profile_version_and_interpreter():
    assert build_label(DDTREE) == 'sglang-ddtree-pr29907 (0.5.23+ddtree in /opt/ddtree/bin/python)'
    assert build_label({'name': 'custom', 'release': None, 'version': None, 'python': None}) == 'custom'
    assert build_label(None) is None


def test_each_row_and_the_host_section_carry_the_build(root, tmp_path):
    made = generate(str(root), 'new', str(tmp_path / 'out'), synth.LAYOUT, plots=False)
    with open(tmp_path / 'out' / 'results.csv', newline='', encoding='utf-8') as handle:
        rows = list(csv.DictReader(handle))
    assert {row['sglang_build'] for row in rows} == {'sglang-ddtree-pr29907'}
    md = (tmp_path / 'out' / 'report.md').read_text()
    assert '- SGLang build profile: sglang-ddtree-pr29907 (0.5.23+ddtree in /opt/ddtree/bin/python)' in md
    assert made['report']['hosts'][0]['environment']['sglang_build'].startswith('sglang-ddtree-pr29907')


def test_a_comparison_across_builds_says_so_and_one_within_a_build_does_not(root, tmp_path):
    generate(str(root), 'new', str(tmp_path / 'a'), synth.LAYOUT, plots=False, compare_to='old')
    md = (tmp_path / 'a' / 'compare-old.md').read_text()
    assert '**The two campaigns ran different SGLang builds** (ct200: sglang-0.5.23 → sglang-ddtree-pr29907)' in md
    generate(str(root), 'new', str(tmp_path / 'b'), synth.LAYOUT, plots=False, compare_to='same')
    assert 'different SGLang builds' not in (tmp_path / 'b' / 'compare-same.md').read_text()


def test_a_build_that_is_not_an_object_is_a_bad_campaign_json():
    assert 'stages[0].sglang_build' in check_plan({'campaign': 'c', 'stages': [{'id': 'tp1-autoregressive', 'sglang_build': 'x'}]})
