# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""plugin_utils/workload.py: the host prompts file's segments, the template check, random passthrough, notes."""

from __future__ import annotations

import hashlib
import json
import os
import time

import pytest

from ansible_collections.specdec.bench.plugins.plugin_utils import bounded_child, chat_template, datasets
from ansible_collections.specdec.bench.plugins.plugin_utils import workload

HERE = os.path.dirname(os.path.abspath(__file__))
QWEN3 = os.path.join(HERE, '..', '..', '..', 'fixtures', 'chat-templates', 'qwen3', 'tokenizer_config.json')
PROMPTS = os.path.join(HERE, '..', '..', '..', '..', 'campaigns', 'prompts')
QWEN3_FILES = {'tokenizer_config.json': open(QWEN3, encoding='utf-8').read()}


def qwen3():
    return workload.model_template(QWEN3_FILES, '/models/Qwen3.6-27B')


def concatenation(parts, answers, turn):
    return parts[0] + ''.join(answers[j] + parts[j + 1] for j in range(turn))


@pytest.mark.parametrize('answers', [['Bonjour', 'Bonne nuit.'], ['x' * 300 + '\n\n```py\nprint(1)\n```', 'ok']])
def test_segments_joined_with_the_answers_are_the_templates_rendering(answers):
    template, tokens, _origin = qwen3()
    turns = ['Translate to French: good morning', 'And good night?', 'Thanks!']
    parts = workload.segments(turns, template, tokens)
    assert len(parts) == 3
    assert parts[0] == chat_template.render(template, [{'role': 'user', 'content': turns[0]}], tokens)
    for turn in (1, 2):
        messages = []
        for i in range(turn + 1):
            messages.append({'role': 'user', 'content': turns[i]})
            if i < turn:
                messages.append({'role': 'assistant', 'content': answers[i]})
        assert concatenation(parts, answers, turn) == chat_template.render(template, messages, tokens)
    assert parts[1] == '<|im_end|>\n<|im_start|>user\nAnd good night?<|im_end|>\n<|im_start|>assistant\n'


def test_a_single_turn_is_the_first_turn_with_the_generation_prompt_thinking_off():
    template, tokens, _origin = qwen3()
    parts = workload.segments(['What is 2+2?'], template, tokens, {'enable_thinking': False})
    assert parts == ['<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n']


def test_thinking_off_keeps_the_empty_think_block_in_earlier_turns_as_the_model_saw_it():
    """Qwen3 with enable_thinking=false ends its generation prompt in an empty think block that it leaves out of
    earlier assistant turns: later turns keep it there (what the model saw), and only that differs."""
    template, tokens, _origin = qwen3()
    kwargs = {'enable_thinking': False}
    assert workload.kept_prompt(template, tokens, kwargs) == '<think>\n\n</think>\n\n'
    assert workload.kept_prompt(template, tokens, {}) == ''
    turns, answers = ['a', 'b', 'c'], ['one', 'two']
    parts = workload.segments(turns, template, tokens, kwargs)
    rendered = chat_template.render(template, [{'role': 'user', 'content': 'a'}, {'role': 'assistant', 'content': 'one'},
                                               {'role': 'user', 'content': 'b'}, {'role': 'assistant', 'content': 'two'},
                                               {'role': 'user', 'content': 'c'}], tokens, kwargs)
    sent = concatenation(parts, answers, 2)
    assert sent != rendered
    assert sent == rendered.replace('assistant\none', 'assistant\n<think>\n\n</think>\n\none').replace(
        'assistant\ntwo', 'assistant\n<think>\n\n</think>\n\ntwo')
    assert all(part.endswith('<|im_start|>assistant\n<think>\n\n</think>\n\n') for part in parts)


def test_a_template_that_renders_earlier_answers_otherwise_is_refused_naming_it():
    template = ("{% for m in messages %}{% if m.role == 'user' %}U:{{ m.content }}\n{% else %}[{{ m.content }}]\n"
                "{% endif %}{% endfor %}{% if add_generation_prompt %}A: {% endif %}")
    with pytest.raises(workload.WorkloadError) as error:
        workload.segments(['a', 'b'], template, origin='/m/chat_template.jinja')
    message = str(error.value)
    assert message.startswith('/m/chat_template.jinja renders an earlier answer differently')
    assert 'turn 2' in message and 'at character 4' in message and 'turns: first' in message


def test_a_template_that_drops_the_answers_is_refused():
    template = "{% for m in messages %}{% if m.role == 'user' %}U:{{ m.content }}\n{% endif %}{% endfor %}A:"
    with pytest.raises(workload.WorkloadError, match=r'answer appears 0 times.*turns: first'):
        workload.segments(['a', 'b'], template)
    assert workload.segments(['a'], template) == ['U:a\nA:']


def test_the_model_template_jinja_file_wins_and_a_folder_without_one_is_refused():
    template, tokens, origin = workload.model_template(dict(QWEN3_FILES, **{'chat_template.jinja': 'J{{ eos_token }}'}), '/m')
    assert (template, tokens['eos_token'], origin) == ('J{{ eos_token }}', '<|im_end|>', '/m/chat_template.jinja')
    named = json.dumps({'chat_template': [{'name': 'default', 'template': 'D'}, {'name': 'tool_use', 'template': 'T'}]})
    assert workload.model_template({'tokenizer_config.json': named}, '/m')[::2] == ('D', '/m/tokenizer_config.json chat_template (default)')
    with pytest.raises(workload.WorkloadError, match=r'^/m has no chat template \(looked for chat_template.jinja and the '
                                                     r'chat_template key of tokenizer_config.json\)'):
        workload.model_template({'tokenizer_config.json': '{"eos_token": "x"}'}, '/m')
    with pytest.raises(workload.WorkloadError, match='tokenizer_config.json is not valid JSON'):
        workload.model_template({'tokenizer_config.json': '{'}, '/m')


def demo(name, **entry):
    return dict({'name': 'demo-' + name, 'file': os.path.join(PROMPTS, 'demo-%s.jsonl' % name)}, **entry)


def test_prepare_workload_writes_the_host_prompts_files_and_passes_random_through(tmp_path):
    entries = datasets.validate_datasets([demo('mt-bench', num_prompts=2), {'name': 'random', 'input_len': 64},
                                          demo('gsm8k', max_new_tokens=128)])
    prepared = workload.prepare_workload(entries, QWEN3_FILES, {}, cache=str(tmp_path), model_path='/models/q')
    assert [entry['name'] for entry in prepared] == ['demo-mt-bench', 'random', 'demo-gsm8k']
    for entry in prepared:
        assert tuple(entry) == workload.PREPARED_KEYS + (('input_len', 'output_len') if entry['kind'] == 'random' else ())
    chat, rand, math = prepared
    assert rand == dict(dict.fromkeys(workload.PREPARED_KEYS), name='random', kind='random', num_prompts=None,
                        input_len=64, output_len=None, notes=[])
    assert (chat['kind'], chat['count'], chat['turns'], chat['max_new_tokens'], math['max_new_tokens']) == ('file', 2, 'all', 2048, 128)
    template = json.loads(QWEN3_FILES['tokenizer_config.json'])['chat_template']
    assert chat['template_sha256'] == hashlib.sha256(template.encode('utf-8')).hexdigest() == math['template_sha256']
    assert chat['prompts_path'] == str(tmp_path / 'prompts' / (chat['prompts_sha256'] + '.jsonl'))
    data = open(chat['prompts_path'], 'rb').read()
    assert hashlib.sha256(data).hexdigest() == chat['prompts_sha256']
    records = [json.loads(line) for line in data.decode('utf-8').splitlines()]
    assert [sorted(r) for r in records] == [['category', 'id', 'segments', 'turns']] * 2
    assert records[0]['id'] == 'demo-1' and len(records[0]['segments']) == len(records[0]['turns']) == 2
    assert records[0]['segments'][0].startswith('<|im_start|>user\nWrite a 150-word welcome note')
    normalized = open(os.path.join(str(tmp_path), 'normalized', chat['normalized_sha256'] + '.jsonl'), 'rb').read()
    assert [json.loads(line)['turns'] for line in normalized.decode().splitlines()] == [r['turns'] for r in records]
    assert chat['notes'] == ['demo-mt-bench: 2 prompts (all turns) templated with /models/q/tokenizer_config.json chat_template']
    again = workload.prepare_workload(entries, QWEN3_FILES, {}, cache=str(tmp_path), model_path='/models/q')
    assert again == prepared


def test_the_template_and_its_kwargs_decide_the_prompts_file(tmp_path):
    entries = datasets.validate_datasets([demo('gsm8k')])
    on = workload.prepare_workload(entries, QWEN3_FILES, {}, cache=str(tmp_path))[0]
    off = workload.prepare_workload(entries, QWEN3_FILES, {'enable_thinking': False}, cache=str(tmp_path))[0]
    assert on['normalized_sha256'] == off['normalized_sha256'] and on['prompts_sha256'] != off['prompts_sha256']
    assert off['chat_template_kwargs'] == {'enable_thinking': False}
    assert off['notes'][-1].endswith('chat_template and {"enable_thinking": false}')
    first = json.loads(open(off['prompts_path'], encoding='utf-8').readline())
    assert first['segments'][0].endswith('<|im_start|>assistant\n<think>\n\n</think>\n\n')


def test_multi_turn_with_thinking_off_says_what_it_keeps_and_an_unfit_template_is_refused(tmp_path):
    off = workload.prepare_workload([demo('mt-bench')], QWEN3_FILES, {'enable_thinking': False}, cache=str(tmp_path),
                                    model_path='/m')[0]
    assert off['notes'][-1] == ('demo-mt-bench: the template leaves "<think>\\n\\n</think>\\n\\n" of its generation prompt '
                                'out of earlier assistant turns; later turns keep it there, as the model saw it (the chat '
                                'endpoint would render them without it)')
    single = workload.prepare_workload([demo('gsm8k'), demo('mt-bench', turns='first')], QWEN3_FILES,
                                       {'enable_thinking': False}, cache=str(tmp_path), model_path='/m')
    assert all(len(entry['notes']) == 1 for entry in single)
    assert all(len(json.loads(line)['segments']) == 1 for line in open(single[1]['prompts_path'], encoding='utf-8'))
    files = {'chat_template.jinja': "{% for m in messages %}{% if m.role == 'user' %}U:{{ m.content }}\n{% else %}"
                                    "[{{ m.content }}]\n{% endif %}{% endfor %}{% if add_generation_prompt %}A: {% endif %}"}
    with pytest.raises(workload.WorkloadError, match=r'^demo-mt-bench: record demo-1: /m/chat_template.jinja renders'):
        workload.prepare_workload([demo('mt-bench')], files, cache=str(tmp_path), model_path='/m')


def test_a_real_set_without_a_template_is_refused_and_random_needs_none(tmp_path):
    with pytest.raises(workload.WorkloadError, match=r'^workload.datasets asks for demo-gsm8k: /models/q has no chat template'):
        workload.prepare_workload([demo('gsm8k'), 'random'], {}, cache=str(tmp_path), model_path='/models/q')
    assert not (tmp_path / 'prompts').exists()
    assert workload.prepare_workload(None, {}, cache=str(tmp_path))[0]['kind'] == 'random'
    assert workload.prepare_workload(['random'], None, cache=str(tmp_path))[0]['name'] == 'random'


def test_dataset_errors_become_workload_errors(tmp_path):
    with pytest.raises(workload.WorkloadError, match=r"workload.datasets\[0\].name is 'nope'"):
        workload.prepare_workload(['nope'], QWEN3_FILES, cache=str(tmp_path))
    with pytest.raises(workload.WorkloadError, match='cannot read the file'):
        workload.prepare_workload([{'name': 'x', 'file': 'missing.jsonl'}], QWEN3_FILES, cache=str(tmp_path),
                                  base_dir=str(tmp_path))


# ---- what the host sends is bounded ----------------------------------------------------------------------------

@pytest.mark.parametrize(('template', 'message'), [
    ('{% for i in range(1000000) %}{% endfor %}', r'record demo-1: the chat template failed: OverflowError: Range too big'),
    ("{{ messages[0].content + 1 }}", r'record demo-1: the chat template failed: TypeError'),
    ('{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}', r'record demo-1: the chat template failed: RecursionError'),
    ('{{ (10 ** 100000000) % 7 }}', r'rendering with the chat template used more than 1 s of CPU'),
])
def test_a_template_that_fails_or_passes_a_bound_refuses_the_set_naming_the_file(tmp_path, monkeypatch, template,
                                                                                 message):
    monkeypatch.setattr(chat_template, 'RENDER_CPU_SECONDS', 1, raising=False)
    monkeypatch.setattr(chat_template, 'RENDER_TIMEOUT', 20, raising=False)
    started = time.monotonic()
    with pytest.raises(workload.WorkloadError, match=r'^demo-gsm8k: %s.*\(/m/chat_template.jinja\)$' % message):
        workload.prepare_workload([demo('gsm8k')], {'chat_template.jinja': template}, cache=str(tmp_path),
                                  model_path='/m')
    assert time.monotonic() - started < 10


def test_an_oversized_or_deeply_nested_template_file_is_refused_naming_it(monkeypatch):
    monkeypatch.setattr(chat_template, 'MAX_TEMPLATE_BYTES', 1000, raising=False)
    with pytest.raises(workload.WorkloadError, match=r'^/m/chat_template.jinja is 1001 bytes; allowed: at most 1000 '):
        workload.model_template({'chat_template.jinja': 'x' * 1001}, '/m')
    with pytest.raises(workload.WorkloadError, match=r'^/m/tokenizer_config.json is 1002 bytes; allowed: at most 1000 '):
        workload.model_template({'tokenizer_config.json': '"%s"' % ('x' * 1000)}, '/m')
    monkeypatch.undo()
    for config in ('[' * 200000, '{"chat_template": "x", "eos_token": %s1%s}' % ('[' * 150, ']' * 150)):
        with pytest.raises(workload.WorkloadError, match=r'^/m/tokenizer_config.json is JSON nested more than 100 levels '
                                                         r'deep$'):
            workload.model_template({'tokenizer_config.json': config}, '/m')


def test_every_prompt_of_a_set_is_rendered_in_one_child(tmp_path, monkeypatch):
    children = []
    run = bounded_child.run
    monkeypatch.setattr(bounded_child, 'run', lambda *args, **kwargs: children.append(1) or run(*args, **kwargs))
    prepared = workload.prepare_workload([demo('mt-bench'), demo('gsm8k')], QWEN3_FILES, {'enable_thinking': False},
                                         cache=str(tmp_path))
    assert [entry['count'] for entry in prepared] == [8, 4] and len(children) == 2
