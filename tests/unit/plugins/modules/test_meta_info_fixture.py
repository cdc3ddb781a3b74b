# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""SGLang 0.5.23's final meta_info of a speculative request (tests/fixtures/sglang-0.5.23/meta_info, its keys and
arithmetic as the source builds them) read by the harness, and the emulator's against the same reading."""

from __future__ import annotations

import json
import os
import urllib.request

from ansible_collections.specdec.bench.plugins.module_utils._stage.builtin_harness import check_meta
from ansible_collections.specdec.bench.plugins.module_utils._stage.harness import RequestTiming, from_builtin
from conftest import DFLASH_ARGS  # noqa: E402  pylint: disable=import-error

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures', 'sglang-0.5.23', 'meta_info',
                       'dflash-final-chunk.json')
SPEC_KEYS = ('spec_accept_rate', 'spec_accept_length', 'spec_num_correct_drafts', 'spec_num_proposed_drafts', 'spec_verify_ct',
             'spec_correct_drafts_histogram')


def read_chunk(chunk, prompt_len, asked):
    """The harness's reading of a final chunk: checked, then the request's record and its row's acceptance keys."""
    check_meta(chunk['meta_info'], asked, prompt_len)
    timing = RequestTiming(0.0)
    timing.feed(0.1, chunk)
    timing.feed(0.5, '[DONE]')
    record = dict(timing.record(), success=True, start_s=0.0, intended_start_s=0.0, turn=0)
    return record, from_builtin([record], 1.0, 1, 1, prompt_len, asked)


def test_the_harness_keeps_every_field_of_sglang_s_final_meta_info():
    with open(FIXTURE, encoding='utf-8') as handle:
        chunk = json.load(handle)
    record, row = read_chunk(chunk, 120, 64)
    meta = chunk['meta_info']
    for key in SPEC_KEYS + ('cached_tokens', 'prompt_tokens', 'completion_tokens'):
        assert record[key] == meta[key], key
    assert row['accept_length'] == 3.2 and row['accept_rate'] == meta['spec_accept_rate']
    assert row['accept_histogram'] == [4, 4, 4, 4, 2, 1, 1]
    assert row['accept_by_position'][0] == 16.0 / 20 and row['cache_hit_rate'] == 96.0 / 120


def test_the_emulator_s_final_meta_info_reads_the_same(emulator):
    emu = emulator(DFLASH_ARGS).wait_ready()
    body = {'text': 'Explain radix trees briefly.', 'sampling_params': {'max_new_tokens': 48, 'temperature': 0, 'ignore_eos': True}}
    request = urllib.request.Request(emu.base_url + '/generate', data=json.dumps(body).encode(), headers={'Content-Type': 'application/json'})
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=30) as response:
        chunk = json.loads(response.read())
    with open(FIXTURE, encoding='utf-8') as handle:
        real = json.load(handle)['meta_info']
    meta = chunk['meta_info']
    assert set(real) <= set(meta), sorted(set(real) - set(meta))
    for key, value in real.items():
        assert isinstance(meta[key], type(value)) or (isinstance(value, float) and isinstance(meta[key], int)), key
    record, row = read_chunk(chunk, meta['prompt_tokens'], 48)
    steps, hist = meta['spec_verify_ct'], meta['spec_correct_drafts_histogram']
    assert sum(hist) == steps and sum(i * count for i, count in enumerate(hist)) == meta['spec_num_correct_drafts']
    assert meta['spec_num_proposed_drafts'] == steps * 15 and meta['spec_accept_length'] == 48.0 / steps
    assert record['spec_correct_drafts_histogram'] == hist and row['accept_histogram'] == hist
