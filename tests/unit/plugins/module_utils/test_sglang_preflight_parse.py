# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""What SGLang 0.5.23's own parser says when it refuses a command line (captured: tests/fixtures/sglang-0.5.23/parser)."""

from __future__ import annotations

import os

import pytest

from ansible_collections.specdec.bench.plugins.module_utils._sglang_preflight import (
    MARKER,
    parse_output,
    refusal,
    refusal_line,
)

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures', 'sglang-0.5.23', 'parser')


def captured(name):
    with open(os.path.join(FIXTURES, name), encoding='utf-8') as handle:
        return handle.read()


@pytest.mark.parametrize('name, flag, reason', [
    ('unrecognized.txt', '--mamba-scheduler-strategy', 'unrecognized arguments'),
    ('invalid_choice.txt', '--mamba-radix-cache-strategy',
     "invalid choice: 'always' (choose from 'auto', 'no_buffer', 'extra_buffer', 'extra_buffer_lazy')"),
    ('ambiguous.txt', '--cuda-graph-max-bs',
     'ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill'),
    ('invalid_int.txt', '--tp-size', "invalid int value: 'four'"),
    ('required.txt', '--model-path', 'required'),
])
def test_each_refusal_of_the_real_parser_names_its_flag_and_reason(name, flag, reason):
    assert refusal(captured(name)) == (flag, reason)


def test_a_refusal_without_argparse_error_keeps_its_last_line():
    assert refusal('Traceback ...\nImportError: no module named torch\n') == (None, 'ImportError: no module named torch')
    assert refusal('') == (None, 'refused with no message')


def test_the_refusal_line_names_stage_version_interpreter_flag_and_reason():
    assert refusal_line('tp1-dflash-n16', '0.5.23', '/opt/sglang/bin/python', '--mamba-scheduler-strategy',
                        'unrecognized arguments') == (
        'stage tp1-dflash-n16: SGLang 0.5.23 (/opt/sglang/bin/python) refuses --mamba-scheduler-strategy: '
        'unrecognized arguments')


def test_the_result_is_found_after_whatever_sglang_printed():
    out = 'INFO some import-time log\n{"not": "it"}\n%s{"sglang_version": "0.5.23", "error": null, "stages": {}}\n' % MARKER
    assert parse_output(out)['sglang_version'] == '0.5.23'
    with pytest.raises(ValueError):
        parse_output('Segmentation fault\n')
