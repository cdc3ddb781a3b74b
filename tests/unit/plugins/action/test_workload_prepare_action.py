# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The workload_prepare action: arguments, check mode (it writes only the controller cache), refusals, results."""

from __future__ import annotations

import os
from unittest import mock

import pytest
from ansible.errors import AnsibleActionFail
from ansible.playbook.task import Task

from ansible_collections.specdec.bench.plugins.action import workload_prepare
from ansible_collections.specdec.bench.plugins.plugin_utils import datasets

HERE = os.path.dirname(os.path.abspath(__file__))
QWEN3 = os.path.join(HERE, '..', '..', '..', 'fixtures', 'chat-templates', 'qwen3', 'tokenizer_config.json')
PROMPTS = os.path.abspath(os.path.join(HERE, '..', '..', '..', '..', 'campaigns'))
FILES = {'tokenizer_config.json': open(QWEN3, encoding='utf-8').read()}


def run(args, check_mode=False):
    task = Task()
    task.args = args
    task.check_mode = check_mode
    action = workload_prepare.ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=None,
                                           shared_loader_obj=None)
    action._connection = mock.MagicMock()
    return action.run(task_vars={'inventory_hostname': 'ct200'})


@pytest.mark.parametrize('check_mode', [False, True])
def test_it_prepares_on_the_controller_in_check_mode_too(tmp_path, check_mode):
    entries = datasets.validate_datasets([{'name': 'demo-gsm8k', 'file': 'prompts/demo-gsm8k.jsonl', 'num_prompts': 2},
                                          'random'])
    result = run({'datasets': entries, 'chat_template': {'path': '/models/q', 'files': FILES},
                  'chat_template_kwargs': {'enable_thinking': False}, 'cache': str(tmp_path), 'base_dir': PROMPTS},
                 check_mode)
    assert result['changed'] is False and not result.get('failed')
    gsm8k, rand = result['prepared']
    assert (gsm8k['count'], gsm8k['source'], rand['kind']) == (2, os.path.join(PROMPTS, 'prompts', 'demo-gsm8k.jsonl'), 'random')
    assert os.path.isfile(gsm8k['prompts_path']) and gsm8k['prompts_path'].startswith(str(tmp_path))
    assert result['notes'] == gsm8k['notes'] and 'enable_thinking' in result['notes'][0]


def test_a_model_without_a_template_is_refused_for_a_real_set(tmp_path):
    with pytest.raises(AnsibleActionFail, match='^workload.datasets asks for demo: /models/q has no chat template'):
        run({'datasets': [{'name': 'demo', 'file': os.path.join(PROMPTS, 'prompts', 'demo-mbpp.jsonl')}],
             'chat_template': {'path': '/models/q', 'files': {}}, 'cache': str(tmp_path)})
    assert run({'datasets': None, 'chat_template': {'files': {}}, 'cache': str(tmp_path)})['prepared'][0]['name'] == 'random'


@pytest.mark.parametrize(('args', 'message'), [
    ({'chat_template': 'x'}, "chat_template is 'x'; allowed"),
    ({'chat_template': {'files': {'a': 1}}}, 'chat_template is'),
    ({'chat_template_kwargs': ['enable_thinking']}, 'chat_template_kwargs is'),
    ({'cache': 7}, 'cache is 7; allowed: a path'),
    ({'datasets': ['nope']}, r"workload.datasets\[0\].name is 'nope'"),
    ({'datasets': [{'name': 'x', 'kind': 'other'}]}, r'datasets\[0\] is'),
    ({'dataset': []}, 'Invalid options.*dataset'),
])
def test_bad_arguments_are_refused(args, message):
    with pytest.raises(AnsibleActionFail, match=message):
        run(args)


@pytest.mark.parametrize('files', [
    {'chat_template.jinja': "{{ messages[0].content + 1 }}"},  # TypeError
    {'chat_template.jinja': '{% for i in range(1000000) %}{% endfor %}'},  # OverflowError
    {'tokenizer_config.json': '[' * 200000},  # RecursionError in json
])
def test_a_template_that_raises_is_a_clean_refusal_naming_the_file(tmp_path, files):
    with pytest.raises(AnsibleActionFail, match=r'/models/q/(chat_template.jinja|tokenizer_config.json)'):
        run({'datasets': [{'name': 'demo', 'file': os.path.join(PROMPTS, 'prompts', 'demo-mbpp.jsonl')}],
             'chat_template': {'path': '/models/q', 'files': files}, 'cache': str(tmp_path)})
