# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""A name from a host is matched whole. Python's `$` also matches before a final newline, so
'checkpoint-400\\n' was a step and 'result-...json\\n' a result file; every pattern that checks such a name ends in
\\Z (or is applied with fullmatch). The shared id pattern (module_utils/_common.py, the id test, the id_pattern
filter), the result file names the report reads, the host text report.md writes as code, and systemd unit
names."""

from __future__ import annotations

import pytest

from ansible_collections.specdec.bench.plugins.filter.contracts import id_pattern
from ansible_collections.specdec.bench.plugins.module_utils import _common, _systemd
from ansible_collections.specdec.bench.plugins.module_utils._checkpoint import step_of
from ansible_collections.specdec.bench.plugins.plugin_utils.report import markdown_sections
from ansible_collections.specdec.bench.plugins.plugin_utils.report import read as report_read
from ansible_collections.specdec.bench.plugins.test.id import id_test

NEWLINES = ('\n', '\r\n', '\n\n')


@pytest.mark.parametrize('end', NEWLINES)
def test_the_shared_id_pattern_is_matched_whole(end):
    assert _common.is_id('tp1-dflash') and id_test('tp1-dflash')
    assert not _common.is_id('tp1-dflash' + end) and not id_test('tp1-dflash' + end)
    assert _common.ID_RE.match('tp1-dflash' + end) is None
    assert id_pattern() == _common.ID_PATTERN and not id_pattern().endswith('$')


@pytest.mark.parametrize('end', NEWLINES)
def test_a_checkpoint_name_is_matched_whole(end):
    assert step_of('checkpoint-400') == 400 and step_of('checkpoint-400' + end) is None


def test_a_result_file_name_is_matched_whole():
    layout = _common.RESULTS_LAYOUT
    assert list(report_read.find_results(['result-random-t0-c4-r1.json'], layout)) == [('random', 0.0, 4)]
    assert report_read.find_results(['result-random-t0-c4-r1.json\n'], layout) == {}
    assert report_read.result_name_regex(layout['result']).match('result-random-t0-c4-r1.json\n') is None


def test_a_unit_name_is_matched_whole():
    assert _systemd._UNIT_NAME_RE.match('sglang.service') is not None  # pylint: disable=protected-access
    assert _systemd._UNIT_NAME_RE.match('sglang.service\n') is None  # pylint: disable=protected-access


def test_host_text_with_a_final_newline_is_never_inline_code():
    """report.md writes host text as `code` only when it is safe: a final newline inside backticks ended the table row."""
    assert markdown_sections._md_code('/models/Qwen3-8B') == '`/models/Qwen3-8B`'  # pylint: disable=protected-access
    assert markdown_sections._md_code('/models/Qwen3-8B\n') == '/models/Qwen3-8B '  # pylint: disable=protected-access
