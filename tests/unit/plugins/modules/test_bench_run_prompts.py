# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""bench_run with a host prompts file: the builtin harness against the SGLang emulator (per-request tau, EOS, sampling
params) and a scripted server (multi-turn concatenation, the server_info cross-check), and the sglang harness on
the same prompts through a fake run_command (its input file and command line)."""

from __future__ import annotations

import json
import os
import sys

import pytest

from ansible_collections.specdec.bench.plugins.module_utils._stage.harness import RESULT_KEYS
from ansible_collections.specdec.bench.plugins.modules import bench_run

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'module_utils'))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scripted_sglang as scripted  # noqa: E402  pylint: disable=wrong-import-position
from test_bench_run import PYTHON, FakeClient, options  # noqa: E402  pylint: disable=wrong-import-position

# Qwen3-style templated first turns and a second turn's segment, as workload_prepare writes them
HEAD = '<|im_start|>user\n'
TAIL = '<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n'
RECORDS = [
    {'id': 'tr-1', 'category': 'translation', 'turns': ['t'],
     'segments': [HEAD + 'Translate into French: the orchard opens at nine.' + TAIL]},
    {'id': 'math-1', 'category': 'math', 'turns': ['m'],
     'segments': [HEAD + 'Solve for x: 3x + 7 = 22. Show the equation steps.' + TAIL]},
    {'id': 'code-1', 'category': 'code', 'turns': ['c'],
     'segments': [HEAD + 'Write a python function that returns the sum of a list.' + TAIL]},
    {'id': 'chat-2', 'category': 'writing', 'turns': ['a', 'b'],
     'segments': [HEAD + 'Summarize the key points of a community orchard meeting.' + TAIL,
                  '<|im_end|>\n' + HEAD + 'Now translate that summary into German.' + TAIL]},
]
DATASET = dict(name='demo-set', kind='file', source='prompts/demo.jsonl', source_sha256='a' * 64,
               normalized_sha256='b' * 64, prompts_sha256='c' * 64, template_sha256='d' * 64, count=4,
               max_new_tokens=400, turns='all', chat_template_kwargs={'enable_thinking': False})


def prompts_file(tmp_path, records=None):
    path = tmp_path / ('prompts.jsonl' if records is None else 'given.jsonl')
    path.write_text(''.join(json.dumps(record) + '\n' for record in (records or RECORDS)), encoding='utf-8')
    return str(path)


def prompts_args(base_url, tmp_path, **extra):
    values = dict(harness='builtin', base_url=base_url, concurrency=2, prompts_file=prompts_file(tmp_path),
                  dataset=DATASET, max_new_tokens=400, ignore_eos=False, temperature=0.0, seed=5, warmup_requests=1,
                  output_dir=str(tmp_path / 'stage'), stage='tp1-test', request_timeout=10)
    values.update(extra)
    return values


def read_run(tmp_path, dataset='demo-set', temperature='0', concurrency=2):
    stem = '%s-t%s-c%d' % (dataset, temperature, concurrency)
    with open(str(tmp_path / 'stage' / ('result-%s-r1.json' % stem)), encoding='utf-8') as handle:
        row = json.load(handle)
    with open(str(tmp_path / 'stage' / ('raw-%s-r1.jsonl' % stem)), encoding='utf-8') as handle:
        records = [json.loads(line) for line in handle]
    return row, [record for record in records if not record['warmup']]


def test_builtin_runs_the_prompts_with_per_request_acceptance_and_eos(run_module, dflash, tmp_path):
    result = run_module(bench_run, prompts_args(dflash.base_url, tmp_path))
    assert result['exit_code'] == 0, result
    row = result['result']
    written, records = read_run(tmp_path)
    assert written == row and set(row) == set(RESULT_KEYS)
    # four conversations, five turn requests, all done
    assert (row['num_prompts'], row['completed'], row['failed'], row['complete'], row['requests']) == (4, 4, 0, True, 5)
    assert [(r['id'], r['turn']) for r in sorted(records, key=lambda r: (r['id'], r['turn']))] == [
        ('chat-2', 0), ('chat-2', 1), ('code-1', 0), ('math-1', 0), ('tr-1', 0)]
    # tau is the emulator's own answers' sum of completion tokens over their sum of verify steps
    tokens = sum(r['completion_tokens'] for r in records)
    steps = sum(r['spec_verify_ct'] for r in records)
    assert row['accept_length'] == pytest.approx(tokens / float(steps)) and row['accept_length_source'] == 'requests'
    per_request = sorted(r['completion_tokens'] / float(r['spec_verify_ct']) for r in records)
    assert per_request[0] <= row['accept_length_p10'] <= row['accept_length_median'] <= row['accept_length_p90'] <= per_request[-1]
    # the emulator's /server_info counts as SGLang's does: the verify steps' tokens since the flush, each request's
    # first (prefill) token left out; the cross-check compares the same quantity, so an exact server agrees
    assert row['accept_length_server_info'] == pytest.approx((tokens - 5) / float(steps))
    assert row['accept_length_disagreement'] == pytest.approx(0.0, abs=1e-9) and row['accept_length_flag'] is False
    # math and code accept more than translation, as the emulator follows content
    by_id = dict((r['id'], r['completion_tokens'] / float(r['spec_verify_ct'])) for r in records if r['turn'] == 0)
    assert by_id['math-1'] > by_id['tr-1'] and by_id['code-1'] > by_id['tr-1']
    # EOS ends answers: what each generated is counted, not what was asked
    assert any(r['finish_reason'] == 'stop' and r['completion_tokens'] < 400 for r in records)
    assert all(r['finish_reason'] in ('stop', 'length') for r in records)
    assert row['total_output_tokens'] == tokens and row['mean_output_len'] == pytest.approx(tokens / 5.0)
    assert row['mean_output_len'] < 400
    assert (row['dataset'], row['dataset_kind'], row['dataset_sha256'], row['prompts_sha256'], row['template_sha256']) == (
        'demo-set', 'file', 'b' * 64, 'c' * 64, 'd' * 64)
    assert (row['temperature'], row['top_p'], row['top_k'], row['ignore_eos'], row['max_new_tokens'], row['turns']) == (
        0.0, 1.0, -1, False, 400, 'all')
    assert row['input_len'] is None and row['output_len'] is None
    assert result['result_file'] == str(tmp_path / 'stage' / 'result-demo-set-t0-c2-r1.json')


def test_builtin_temperature_names_the_files_and_lowers_acceptance(run_module, dflash, tmp_path):
    greedy = run_module(bench_run, prompts_args(dflash.base_url, tmp_path, ignore_eos=True, max_new_tokens=48))
    hot = run_module(bench_run, prompts_args(dflash.base_url, tmp_path, ignore_eos=True, max_new_tokens=48,
                                             temperature=1.0, top_p=0.9, top_k=20))
    assert greedy['exit_code'] == 0 and hot['exit_code'] == 0, (greedy, hot)
    assert hot['result_file'].endswith('result-demo-set-t1-c2-r1.json')
    # the /metrics scrapes beside the raw logs come and go with the server's --enable-metrics (test_bench_run_metrics.py)
    assert sorted(name for name in os.listdir(str(tmp_path / 'stage')) if not name.endswith('.metrics.json')) == [
        'raw-demo-set-t0-c2-r1.jsonl', 'raw-demo-set-t1-c2-r1.jsonl', 'result-demo-set-t0-c2-r1.json', 'result-demo-set-t1-c2-r1.json']
    assert hot['result']['accept_length'] < greedy['result']['accept_length']
    # ignore_eos: every request runs to max_new_tokens
    assert greedy['result']['total_output_tokens'] == 5 * 48 and greedy['result']['mean_output_len'] == 48


def answer_turn(stream, body, number):
    """An answer naming its request, 6 tokens in 2 verify steps; /server_info of the scripted server has none."""
    stream.write(scripted.CHUNKED_HEAD)
    text = ' answer-%d' % number
    stream.write(scripted.chunk(scripted.event(text[:4], 2)))
    stream.write(scripted.chunk(scripted.event(text, 6, prompt_tokens=len(body['text']) // 4, spec_verify_ct=2,
                                               finish_reason={'type': 'stop', 'matched': 151645})))
    stream.write(scripted.chunk(b'data: [DONE]\n\n'))
    stream.write(b'0\r\n\r\n')


@pytest.fixture
def answering():
    server = scripted.ScriptedServer(answer_turn)
    yield server
    server.close()


def test_builtin_sends_each_turn_as_the_concatenation_of_segments_and_answers(run_module, answering, tmp_path):
    records = [{'id': 'mt-1', 'category': 'writing', 'turns': ['a', 'b', 'c'], 'segments': ['<u>A</u><a>', '<u>B</u><a>', '<u>C</u><a>']}]
    result = run_module(bench_run, prompts_args(answering.base_url, tmp_path, concurrency=1, warmup_requests=0,
                                                prompts_file=prompts_file(tmp_path, records), temperature=0.7,
                                                top_p=0.95, top_k=20, max_new_tokens=16))
    assert result['exit_code'] == 0, result
    texts = [body['text'] for body in answering.bodies]
    assert texts == ['<u>A</u><a>',
                     '<u>A</u><a> answer-0<u>B</u><a>',
                     '<u>A</u><a> answer-0<u>B</u><a> answer-1<u>C</u><a>']
    assert all(body['sampling_params'] == {'max_new_tokens': 16, 'temperature': 0.7, 'top_p': 0.95, 'top_k': 20,
                                           'ignore_eos': False} and body['stream'] is True for body in answering.bodies)
    row = result['result']
    assert (row['completed'], row['requests'], row['accept_length'], row['accept_length_server_info']) == (1, 3, 3.0, None)
    _row, raw = read_run(tmp_path, temperature='0.7', concurrency=1)
    assert [(r['id'], r['turn'], r['final'], r['finish_reason'], r['completion_tokens'], r['spec_verify_ct']) for r in raw] == [
        ('mt-1', 0, False, 'stop', 6, 2), ('mt-1', 1, False, 'stop', 6, 2), ('mt-1', 2, True, 'stop', 6, 2)]


def _too_many_tokens(stream, _body, _number):
    """A final chunk claiming more tokens than asked: the request fails."""
    stream.write(scripted.CHUNKED_HEAD)
    stream.write(scripted.chunk(scripted.event(' x', 99, spec_verify_ct=1)))
    stream.write(scripted.chunk(b'data: [DONE]\n\n'))
    stream.write(b'0\r\n\r\n')


def test_a_failed_turn_ends_its_conversation_and_counts_it_failed(run_module, tmp_path):
    server = scripted.ScriptedServer(scripted.by_number(answer_turn, _too_many_tokens))
    try:
        records = [{'id': 'mt-1', 'category': 'writing', 'turns': ['a', 'b', 'c'], 'segments': ['A', 'B', 'C']}]
        result = run_module(bench_run, prompts_args(server.base_url, tmp_path, concurrency=1, warmup_requests=0,
                                                    prompts_file=prompts_file(tmp_path, records), max_new_tokens=8,
                                                    fail_on_incomplete=False))
    finally:
        server.close()
    row = result['result']
    assert (row['completed'], row['failed'], row['complete'], row['requests']) == (0, 1, False, 2)
    assert len(server.bodies) == 2 and row['errors']


def test_a_disagreement_with_server_info_beyond_two_percent_is_flagged(run_module, tmp_path, monkeypatch):
    from ansible_collections.specdec.bench.plugins.module_utils._stage import builtin_driver as _builtin_driver  # pylint: disable=import-outside-toplevel
    server = scripted.ScriptedServer(answer_turn)
    try:
        # one request of 6 tokens in 2 verify steps: tau 3.0; the server's own count leaves the prefill token out, so an
        # exact server says (6 - 1) / 2 = 2.5
        for figure, flagged in ((2.5, False), (2.54, False), (2.56, True), (3.0, True), (2.4, True)):
            monkeypatch.setattr(_builtin_driver, 'request_json', lambda *_a, value=figure, **_k: {
                'internal_states': [{'avg_spec_accept_length': value}]})
            # a folder per figure: the same requests in one folder would reuse the first run's complete result
            result = run_module(bench_run, prompts_args(server.base_url, tmp_path, concurrency=1, warmup_requests=0,
                                                        max_new_tokens=16, output_dir=str(tmp_path / str(figure))))
            row = result['result']
            assert row['accept_length'] == 3.0 and row['accept_length_server_info'] == figure
            assert row['accept_length_disagreement'] == pytest.approx(abs(figure - 2.5) / figure)
            assert row['accept_length_flag'] is flagged
    finally:
        server.close()


@pytest.mark.parametrize('args, message', [
    (dict(max_new_tokens=None), 'max_new_tokens is required with prompts_file'),
    (dict(top_p=0.0), 'top_p must be'),
    (dict(top_k=0), 'top_k must be'),
    (dict(temperature=-0.5), 'temperature must be'),
    (dict(dataset=dict(DATASET, name='Bad Name')), 'dataset.name must match'),
])
def test_bad_prompts_options_are_refused(run_module, tmp_path, args, message):
    result = run_module(bench_run, prompts_args('http://127.0.0.1:9', tmp_path, **args))
    assert result['exit_code'] == 1 and message in result['msg']
    assert not (tmp_path / 'stage').exists()


def test_a_malformed_prompts_file_is_refused_naming_the_line(run_module, tmp_path):
    path = tmp_path / 'bad.jsonl'
    path.write_text(json.dumps(RECORDS[0]) + '\n{"id": "x", "segments": []}\n', encoding='utf-8')
    result = run_module(bench_run, prompts_args('http://127.0.0.1:9', tmp_path, prompts_file=str(path)))
    assert result['exit_code'] == 1 and 'line 2' in result['msg']


def test_sglang_harness_runs_the_same_prompts_first_turns(run_module, monkeypatch, tmp_path):
    client = FakeClient(monkeypatch)  # its captured line completed 8 prompts
    records = RECORDS + [dict(record, id=record['id'] + '-again') for record in RECORDS]
    result = run_module(bench_run, prompts_args('http://127.0.0.1:30000', tmp_path, harness='sglang', python=PYTHON,
                                                tokenizer='/tmp/tok', temperature=0.7, top_p=0.9,
                                                prompts_file=prompts_file(tmp_path, records)))
    assert result['exit_code'] == 0, result
    command = client.commands[-1]
    flags = options(command[3:])
    input_file = str(tmp_path / 'stage' / 'raw-demo-set-t0.7-c2-r1.input.jsonl')
    assert (flags['--dataset-name'], flags['--dataset-path'], flags['--num-prompts']) == ('custom', input_file, '8')
    assert (flags['--sharegpt-output-len'], flags['--temperature'], flags['--top-p']) == ('400', '0.7', '0.9')
    assert flags['--disable-ignore-eos'] is True and '--apply-chat-template' not in flags and '--random-input-len' not in flags
    with open(input_file, encoding='utf-8') as handle:
        lines = [json.loads(line) for line in handle]
    # the client sends conversations[0]'s content as it is: the builtin harness's first turns, already templated
    assert [line['conversations'][0]['content'] for line in lines] == [record['segments'][0] for record in records]
    assert all(line['conversations'][1]['role'] == 'assistant' and line['conversations'][1]['content'] for line in lines)
    row = result['result']
    assert (row['harness'], row['dataset'], row['turns'], row['num_prompts'], row['temperature']) == ('sglang', 'demo-set', 'first', 8, 0.7)
    assert row['input_len'] is None and row['accept_length'] is None and row['accept_length_server_info'] is not None


def test_sglang_harness_refuses_top_k(run_module, monkeypatch, tmp_path):
    FakeClient(monkeypatch)
    result = run_module(bench_run, prompts_args('http://127.0.0.1:30000', tmp_path, harness='sglang', python=PYTHON, top_k=20))
    assert result['exit_code'] == 1 and 'top_k' in result['msg']
