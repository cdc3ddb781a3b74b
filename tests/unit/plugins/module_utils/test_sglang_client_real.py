# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The sglang harness's command lines parsed by real SGLang 0.5.23's benchmark client, and its `custom` input file
read by the client's own dataset loader: the prompts it would send are the prompts file's first turns, unchanged.

Real SGLang pulls torch (several GB), too heavy for CI: these tests run when SPECDEC_SGLANG_PYTHON names the
interpreter of a venv that has it, and are skipped, saying why, when not.

    SPECDEC_SGLANG_PYTHON=/work/sglang-venv/bin/python .venv/bin/python -m pytest tests/unit/plugins/module_utils/test_sglang_client_real.py
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from ansible_collections.specdec.bench.plugins.module_utils._stage.sglang_client import custom_dataset, sglang_command

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
PARSE = os.path.join(REPO, 'tests', 'fixtures', 'sglang-client', 'parse_command.py')
PYTHON = os.environ.get('SPECDEC_SGLANG_PYTHON', '')

pytestmark = pytest.mark.skipif(
    not (PYTHON and os.access(PYTHON, os.X_OK)),
    reason='SPECDEC_SGLANG_PYTHON is %s: set it to the interpreter of a venv with real SGLang 0.5.23 to parse the '
           'sglang harness\'s command lines with the client\'s own argparse' % ('unset' if not PYTHON else 'not an executable (%s)' % PYTHON))

PARAMS = dict(base_url='http://127.0.0.1:30001', input_len=64, output_len=32, num_prompts=8, concurrency=4,
              request_rate=None, seed=7, warmup_requests=1, flush_cache=True, tokenizer='/models/tok', extra_args=[],
              temperature=0.0, top_p=1.0, top_k=-1, ignore_eos=True, max_new_tokens=256)
TAIL = '<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n'
RECORDS = [{'id': 'q%d' % n, 'category': 'math', 'turns': ['x'],
            'segments': ['<|im_start|>user\nWhat is %d + %d? Answer "in words".%s' % (n, n, TAIL)]} for n in range(5)]


def parse(command):
    """The real client's parsed args (and custom prompts) of a command line from sglang_command."""
    assert command[1:3] == ['-m', 'sglang.benchmark.serving']
    done = subprocess.run([PYTHON, PARSE] + command[3:], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_random_command_is_the_clients():
    parsed = parse(sglang_command(PYTHON, 'sglang.benchmark.serving', PARAMS, '/tmp/out.partial'))['args']
    assert (parsed['dataset_name'], parsed['random_input_len'], parsed['random_output_len'], parsed['random_range_ratio']) == (
        'random-ids', 64, 32, 1.0)
    assert (parsed['num_prompts'], parsed['max_concurrency'], parsed['request_rate'], parsed['seed']) == (8, 4, float('inf'), 7)
    assert parsed['flush_cache'] is True and parsed['disable_ignore_eos'] is False and parsed['temperature'] == 0.0


def test_the_prompts_command_sends_the_first_turns_unchanged_with_the_sampling_params(tmp_path):
    path = tmp_path / 'input.jsonl'
    path.write_text(custom_dataset(RECORDS), encoding='utf-8')
    params = dict(PARAMS, temperature=0.7, top_p=0.9, ignore_eos=False)
    out = parse(sglang_command(PYTHON, 'sglang.benchmark.serving', params, '/tmp/out.partial', str(path), len(RECORDS)))
    parsed = out['args']
    assert (parsed['dataset_name'], parsed['dataset_path'], parsed['num_prompts']) == ('custom', str(path), 5)
    assert (parsed['temperature'], parsed['top_p'], parsed['disable_ignore_eos']) == (0.7, 0.9, True)
    assert parsed['apply_chat_template'] is False and parsed['prompt_suffix'] == ''
    # the client shuffles (seeded) and keeps every record: each prompt is a first turn as the builtin harness sends it
    assert sorted(out['prompts']) == sorted(record['segments'][0] for record in RECORDS)
    assert out['output_lens'] == [256] * len(RECORDS)
