# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""plugin_utils/chat_template.py renders as transformers' apply_chat_template does.

Against outputs the real transformers 5.19 recorded (tests/fixtures/chat-templates/qwen3/expected.json, made by
render_with_transformers.py there) always; and against the real transformers itself, in a subprocess, when
SPECDEC_TRANSFORMERS_PYTHON names a Python that has it (e.g. /work/sglang-venv/bin/python).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time

import pytest
import yaml

from ansible_collections.specdec.bench.plugins.plugin_utils import bounded_child, chat_template

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures', 'chat-templates')
QWEN3 = os.path.join(FIXTURES, 'qwen3')
CASES = os.path.join(FIXTURES, 'cases.json')
TRANSFORMERS_PYTHON = os.environ.get('SPECDEC_TRANSFORMERS_PYTHON')


def load_cases():
    with open(CASES, encoding='utf-8') as handle:
        return json.load(handle)


def recorded():
    with open(os.path.join(QWEN3, 'expected.json'), encoding='utf-8') as handle:
        return json.load(handle)


def transformers_render(model_dir, cases):
    """What the real transformers makes of ``cases`` with ``model_dir``'s tokenizer files."""
    with tempfile.NamedTemporaryFile('w', suffix='.json', encoding='utf-8') as handle:
        json.dump(cases, handle)
        handle.flush()
        out = subprocess.run([TRANSFORMERS_PYTHON, os.path.join(FIXTURES, 'render_with_transformers.py'),
                              str(model_dir), handle.name], capture_output=True, text=True, check=True, timeout=300)
    return json.loads(out.stdout)


def ours(model_dir, cases):
    return {case['name']: chat_template.render_for_model(str(model_dir), case['messages'],
                                                         case.get('chat_template_kwargs'), tools=case.get('tools'))
            for case in cases}


def test_qwen3_renders_as_transformers_recorded_it_thinking_on_and_off():
    cases = load_cases()
    expected = recorded()
    assert sorted(expected) == sorted(case['name'] for case in cases)
    assert ours(QWEN3, cases) == expected
    # the switch the references use: enable_thinking=False closes an empty think block after the assistant header
    assert expected['single-turn-thinking-off'] == expected['single-turn-thinking-default'] + '<think>\n\n</think>\n\n'
    assert expected['single-turn-thinking-on'].endswith('<|im_start|>assistant\n')


@pytest.mark.skipif(not TRANSFORMERS_PYTHON, reason='SPECDEC_TRANSFORMERS_PYTHON names no Python with transformers')
def test_qwen3_renders_as_the_real_transformers_does():
    cases = load_cases()
    assert ours(QWEN3, cases) == transformers_render(QWEN3, cases) == recorded()


def test_tojson_is_json_dumps_without_html_escaping():
    rendered = recorded()['tools-non-ascii-thinking-off']
    assert '"description": "Météo <actuelle> & prévisions"' in rendered  # jinja2's own tojson would write \u003c


def qwen3_template():
    with open(os.path.join(QWEN3, 'tokenizer_config.json'), encoding='utf-8') as handle:
        return json.load(handle)['chat_template']


def test_chat_template_jinja_replaces_the_tokenizer_configs_template(tmp_path):
    (tmp_path / 'tokenizer_config.json').write_text(json.dumps({'chat_template': 'IGNORED', 'eos_token': '<|im_end|>'}))
    (tmp_path / 'chat_template.jinja').write_text(qwen3_template(), encoding='utf-8')
    cases = load_cases()
    assert ours(tmp_path, cases) == recorded()


def test_a_list_of_named_templates_uses_default_or_tool_use_with_tools(tmp_path):
    config = {'eos_token': '<|im_end|>', 'chat_template': [
        {'name': 'default', 'template': qwen3_template()},
        {'name': 'tool_use', 'template': 'TOOLS{{ tools | length }}'}]}
    (tmp_path / 'tokenizer_config.json').write_text(json.dumps(config))
    cases = load_cases()
    plain = [case for case in cases if not case.get('tools')]
    assert ours(tmp_path, plain) == {name: text for name, text in recorded().items()
                                     if name in {case['name'] for case in plain}}
    with_tools = [case for case in cases if case.get('tools')]
    assert ours(tmp_path, with_tools) == {with_tools[0]['name']: 'TOOLS1'}
    if TRANSFORMERS_PYTHON:
        assert transformers_render(tmp_path, cases) == ours(tmp_path, cases)


SPECIAL = ("{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{{ eos_token }}\n{% endfor %}"
           "{% if add_generation_prompt %}[assistant]{% endif %}{% if greeting is defined %}{{ greeting }}{% endif %}")


def test_special_tokens_come_from_the_config_and_kwargs_override_them(tmp_path):
    config = {'bos_token': {'__type': 'AddedToken', 'content': '<s>', 'special': True}, 'eos_token': '</s>',
              'pad_token': None, 'chat_template': SPECIAL}
    (tmp_path / 'tokenizer_config.json').write_text(json.dumps(config))
    cases = [{'name': 'tokens', 'messages': [{'role': 'user', 'content': 'hi'}]},
             {'name': 'override', 'messages': [{'role': 'user', 'content': 'hi'}],
              'chat_template_kwargs': {'eos_token': '<END>', 'greeting': 'hello'}}]
    expected = {'tokens': '<s>[user]hi</s>\n[assistant]', 'override': '<s>[user]hi<END>\n[assistant]hello'}
    assert ours(tmp_path, cases) == expected
    if TRANSFORMERS_PYTHON:
        assert transformers_render(tmp_path, cases) == expected


def test_environment_trims_blocks_and_has_loop_controls_and_raise_exception():
    template = ("{% for m in messages %}\n  {% if m.role == 'system' %}{% continue %}{% endif %}\n"
                "{{ m.content }}\n{% endfor %}")
    messages = [{'role': 'system', 'content': 'S'}, {'role': 'user', 'content': 'U'}]
    # trim_blocks drops the newline after a block tag, lstrip_blocks the indentation before one
    assert chat_template.render(template, messages) == 'U\n'
    with pytest.raises(chat_template.ChatTemplateError, match='only user and assistant'):
        chat_template.render("{{ raise_exception('only user and assistant') }}", messages)
    assert chat_template.render("{{ strftime_now('%Y') | length }}", messages) == '4'


def test_a_generation_block_renders_its_body():
    template = "{% for m in messages %}{% generation %}{{ m.content }}{% endgeneration %}{% endfor %}"
    assert chat_template.render(template, [{'role': 'assistant', 'content': 'A'}]) == 'A'


def test_a_folder_without_a_template_is_refused_naming_the_files_looked_for(tmp_path):
    (tmp_path / 'tokenizer_config.json').write_text(json.dumps({'eos_token': '</s>'}))
    with pytest.raises(chat_template.ChatTemplateError) as refused:
        chat_template.render_for_model(str(tmp_path), [{'role': 'user', 'content': 'hi'}])
    message = str(refused.value)
    for name in ('chat_template.jinja', 'additional_chat_templates', 'tokenizer_config.json'):
        assert name in message
    empty = tmp_path / 'empty'
    empty.mkdir()
    with pytest.raises(chat_template.ChatTemplateError, match='has no chat template'):
        chat_template.load_model_template(str(empty))


def test_several_templates_without_default_are_refused_with_their_names(tmp_path):
    (tmp_path / 'tokenizer_config.json').write_text(json.dumps(
        {'chat_template': [{'name': 'rag', 'template': 'x'}, {'name': 'tool_use', 'template': 'y'}]}))
    templates, _tokens = chat_template.load_model_template(str(tmp_path))
    with pytest.raises(chat_template.ChatTemplateError, match='rag, tool_use'):
        chat_template.pick_template(templates)
    assert chat_template.pick_template(templates, name='rag') == 'x'


def test_additional_chat_templates_are_named_by_their_file(tmp_path):
    shutil.copy(os.path.join(QWEN3, 'tokenizer_config.json'), str(tmp_path))
    (tmp_path / 'chat_template.jinja').write_text('DEFAULT', encoding='utf-8')
    (tmp_path / 'additional_chat_templates').mkdir()
    (tmp_path / 'additional_chat_templates' / 'tool_use.jinja').write_text('TOOLS', encoding='utf-8')
    templates, tokens = chat_template.load_model_template(str(tmp_path))
    assert templates == {'default': 'DEFAULT', 'tool_use': 'TOOLS'}
    assert tokens == {'eos_token': '<|im_end|>', 'pad_token': '<|endoftext|>'}


def test_malformed_configs_and_empty_conversations_are_refused(tmp_path):
    (tmp_path / 'tokenizer_config.json').write_text('{not json')
    with pytest.raises(chat_template.ChatTemplateError, match='not valid JSON'):
        chat_template.load_model_template(str(tmp_path))
    with pytest.raises(chat_template.ChatTemplateError, match='named templates'):
        chat_template.named_templates(42)
    with pytest.raises(chat_template.ChatTemplateError, match='name, template'):
        chat_template.named_templates([{'template': 'x'}])
    with pytest.raises(chat_template.ChatTemplateError, match='empty conversation'):
        chat_template.render('x', [])


# ---- a template from a host is bounded: every failure is one ChatTemplateError ----------------------------------

NESTED_LOOPS = '{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}'


@pytest.mark.parametrize(('template', 'bounds', 'message'), [
    # jinja's compiler folds constant expressions: this hangs before anything renders
    ('{{ (10 ** 100000000) % 7 }}', {'RENDER_CPU_SECONDS': 1}, r'used more than 1 s of CPU'),
    (NESTED_LOOPS, {'RENDER_CPU_SECONDS': 1}, r'used more than 1 s of CPU'),
    (NESTED_LOOPS, {'RENDER_TIMEOUT': 1}, r'took longer than 1 s'),
    ("{{ ('x' * 1000000000) | length }}", {'RENDER_MEMORY_BYTES': 128 << 20}, r'needed more than 128 MiB of memory'),
])
def test_a_template_past_a_bound_is_refused_saying_which(monkeypatch, template, bounds, message):
    monkeypatch.setattr(chat_template, 'RENDER_TIMEOUT', 20, raising=False)
    monkeypatch.setattr(chat_template, 'RENDER_CPU_SECONDS', 20, raising=False)
    for name, value in bounds.items():
        monkeypatch.setattr(chat_template, name, value, raising=False)
    started = time.monotonic()
    with pytest.raises(chat_template.ChatTemplateError, match=r'^rendering with the chat template ' + message):
        chat_template.render(template, [{'role': 'user', 'content': 'hi'}])
    assert time.monotonic() - started < 10


@pytest.mark.parametrize(('template', 'message'), [
    ('{% for i in range(1000000) %}{% endfor %}', r'failed: OverflowError: Range too big'),
    ("{{ 1 + 'a' }}", r'failed: TypeError: unsupported operand'),
    ('{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}', r'failed: RecursionError'),
    ('{{ ' + '(' * 5000 + '1' + ')' * 5000 + ' }}', r'does not compile: RecursionError'),
    ('{{ 2.0 ** 100000 }}', r'failed: OverflowError'),
    ("{{ '\\ud800' }}", r'failed: UnicodeEncodeError'),
    ('{% for %}', r'does not compile: TemplateSyntaxError'),
])
def test_a_template_that_raises_is_refused_not_a_crash(template, message):
    with pytest.raises(chat_template.ChatTemplateError, match=r'^the chat template ' + message):
        chat_template.render(template, [{'role': 'user', 'content': 'hi'}])


def test_render_many_renders_a_batch_in_one_child_and_names_the_conversation_that_failed(monkeypatch):
    children = []
    run = bounded_child.run
    monkeypatch.setattr(bounded_child, 'run', lambda *args, **kwargs: children.append(1) or run(*args, **kwargs))
    template = "{% if messages[0].content == 'bad' %}{{ raise_exception('no bad') }}{% endif %}{{ messages[0].content }}"
    batch = [{'messages': [{'role': 'user', 'content': str(i)}]} for i in range(300)]
    assert chat_template.render_many(template, batch) == [str(i) for i in range(300)]
    with pytest.raises(chat_template.ChatTemplateError, match='refused the conversation: no bad') as refused:
        chat_template.render_many(template, batch[:7] + [{'messages': [{'role': 'user', 'content': 'bad'}]}])
    assert refused.value.index == 7
    assert len(children) == 2


def test_an_oversized_or_deeply_nested_model_file_is_refused_naming_it(tmp_path, monkeypatch):
    monkeypatch.setattr(chat_template, 'MAX_TEMPLATE_BYTES', 1000, raising=False)
    (tmp_path / 'chat_template.jinja').write_text('x' * 1001)
    with pytest.raises(chat_template.ChatTemplateError, match=r'chat_template.jinja is larger than 1000 bytes'):
        chat_template.load_model_template(str(tmp_path))
    (tmp_path / 'chat_template.jinja').unlink()
    monkeypatch.undo()
    (tmp_path / 'tokenizer_config.json').write_text('[' * 200000)
    with pytest.raises(chat_template.ChatTemplateError, match=r'tokenizer_config.json is JSON nested more than 100 '):
        chat_template.load_model_template(str(tmp_path))


def test_the_campaign_role_refuses_on_the_host_what_the_controller_refuses():
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..', 'roles', 'campaign',
                           'vars', 'main.yml'), encoding='utf-8') as handle:
        role_vars = yaml.safe_load(handle)
    assert role_vars['_campaign_template_max_bytes'] == chat_template.MAX_TEMPLATE_BYTES
