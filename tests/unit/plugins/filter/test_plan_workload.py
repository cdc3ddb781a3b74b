# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""campaign_plan's workload: the prompt sets (workload.datasets), the temperature sweep and the sampling, checked
before any stage is made and carried, normalized, in every stage's workload."""

from __future__ import annotations

import copy
import datetime
import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.specdec.bench.plugins.plugin_utils.plan import campaign_plan
from ansible_collections.specdec.bench.plugins.plugin_utils import datasets

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
DDTREE_BUILD = 'sglang-ddtree-pr29907'
REAL_SETS = ['mt-bench', 'gsm8k', 'humaneval', 'math500', 'spec-bench']


def facts():
    """Four free 96 GB GPUs: every stage of the specs below is placed and fits."""
    return {'nvidia_gpus': [{'index': i, 'uuid': 'GPU-%d' % i, 'memory_total_mib': 97887, 'processes': []} for i in range(4)],
            'specdec_host': {'listening_ports': []}}


def spec(**workload):
    """Two stages (autoregressive, DFlash at TP1); workload as given (no defaults added here)."""
    return {'campaign': 'qwen36-sets', 'model': {'path': '/models/Qwen3.6-27B', 'bytes': 55 * 10 ** 9},
            'draft': '/models/Qwen3.6-27B-DFlash', 'tp': [1],
            'methods': {'autoregressive': {}, 'dflash': {'num_draft_tokens': [16]}},
            'workload': workload, 'concurrency': [1, 4]}


def plan(workload_spec):
    return campaign_plan(facts(), workload_spec, {'build': DDTREE_BUILD})


def workload_of(**workload):
    stages = plan(spec(**workload))
    assert len(stages) == 2 and stages[0]['workload'] == stages[1]['workload']
    return stages[0]['workload']


def refusal(**workload):
    with pytest.raises(AnsibleFilterError) as error:
        plan(spec(**workload))
    message = str(error.value)
    assert message.startswith('campaign_plan: ')
    return message


# --- accepted -----------------------------------------------------------------------------------------------------

def test_without_datasets_the_one_set_is_random_with_the_workload_sizes_and_the_defaults():
    workload = workload_of(input_len=512, output_len=128, num_prompts=16, seed=3, warmup_requests=2)
    assert workload == {
        'input_len': 512, 'output_len': 128, 'num_prompts': 16, 'seed': 3, 'warmup_requests': 2,
        'datasets': [{'name': 'random', 'kind': 'random', 'num_prompts': 16, 'input_len': 512, 'output_len': 128}],
        'temperature': [0.0], 'top_p': 1.0, 'top_k': -1, 'stop_at_eos': True, 'chat_template_kwargs': {}}


def test_real_sets_by_name_take_the_table_defaults_and_need_no_random_sizes():
    workload = workload_of(datasets=REAL_SETS)
    assert [entry['name'] for entry in workload['datasets']] == REAL_SETS
    assert all(entry['kind'] == 'builtin' and entry['max_new_tokens'] == 2048 and entry['turns'] == 'all'
               and entry['categories'] is None for entry in workload['datasets'])
    # the references' counts, from dataset_sources.yml (spec-bench: all 480)
    assert [entry['num_prompts'] for entry in workload['datasets']] == [80, 128, 164, 128, None]
    assert not set(workload) & {'input_len', 'output_len', 'num_prompts'}


def test_the_entries_are_validate_datasets_own_output():
    entries = ['gsm8k', {'name': 'spec-bench', 'categories': ['translation', 'rag'], 'turns': 'first'},
               {'name': 'mine', 'file': 'prompts/mine.jsonl', 'num_prompts': 5, 'max_new_tokens': 256}]
    workload = workload_of(datasets=copy.deepcopy(entries))
    assert workload['datasets'] == datasets.validate_datasets(entries)
    assert workload['datasets'][2] == {'name': 'mine', 'kind': 'file', 'file': 'prompts/mine.jsonl', 'num_prompts': 5,
                                       'max_new_tokens': 256, 'turns': 'all', 'categories': None}


@pytest.mark.parametrize('random_entry, expected', [
    ('random', {'num_prompts': 64, 'input_len': 1024, 'output_len': 256}),
    ({'name': 'random', 'output_len': 32}, {'num_prompts': 64, 'input_len': 1024, 'output_len': 32}),
    ({'name': 'random', 'num_prompts': 8, 'input_len': 16, 'output_len': 32}, {'num_prompts': 8, 'input_len': 16, 'output_len': 32}),
])
def test_a_random_set_beside_real_ones_takes_the_workload_sizes_it_does_not_give(random_entry, expected):
    workload = workload_of(datasets=['gsm8k', random_entry], input_len=1024, output_len=256, num_prompts=64)
    assert workload['datasets'][1] == dict(expected, name='random', kind='random')


def test_a_random_entry_with_all_its_sizes_needs_none_in_the_workload():
    entry = {'name': 'random', 'num_prompts': 8, 'input_len': 16, 'output_len': 32}
    assert workload_of(datasets=[entry])['datasets'] == [dict(entry, kind='random')]


@pytest.mark.parametrize('given, expected', [
    (0, [0.0]), (0.7, [0.7]), ([0, 1], [0.0, 1.0]), ([1.0, 0, 0.6], [1.0, 0.0, 0.6]), (2, [2.0]),
])
def test_temperature_is_a_list_of_floats_in_spec_order(given, expected):
    temperatures = workload_of(datasets=['gsm8k'], temperature=given)['temperature']
    assert temperatures == expected and all(isinstance(t, float) for t in temperatures)


def test_sampling_and_template_options_reach_every_stage_as_given():
    workload = workload_of(datasets=['mt-bench'], temperature=[0, 1], top_p=0.95, top_k=20, stop_at_eos=False,
                           chat_template_kwargs={'enable_thinking': False, 'tags': ['a'], 'depth': {'max': 2}})
    assert (workload['top_p'], workload['top_k'], workload['stop_at_eos']) == (0.95, 20, False)
    assert workload['chat_template_kwargs'] == {'enable_thinking': False, 'tags': ['a'], 'depth': {'max': 2}}
    assert isinstance(workload_of(datasets=['gsm8k'], top_p=1)['top_p'], float)


def test_stages_do_not_share_their_workload_and_the_spec_is_untouched():
    given = spec(datasets=['gsm8k', {'name': 'spec-bench', 'categories': ['qa']}], chat_template_kwargs={'x': [1]})
    before = copy.deepcopy(given)
    stages = plan(given)
    stages[0]['workload']['datasets'][0]['num_prompts'] = 1
    stages[0]['workload']['chat_template_kwargs']['x'].append(2)
    stages[0]['workload']['temperature'].append(1.0)
    assert stages[1]['workload']['datasets'][0]['num_prompts'] == 128
    assert stages[1]['workload']['chat_template_kwargs'] == {'x': [1]} and stages[1]['workload']['temperature'] == [0.0]
    assert given == before


# --- refused, naming the field and what is allowed, before any stage is made ----------------------------------------

@pytest.mark.parametrize('entries', [
    [], 'gsm8k', ['gsm9k'], ['gsm8k', 'gsm8k'], [{'name': 'gsm8k', 'file': 'x.jsonl'}], [{'name': 'Mine', 'file': 'x.jsonl'}],
    [{'name': 'gsm8k', 'turns': 'last'}], [{'name': 'gsm8k', 'categories': ['math']}],
    [{'name': 'spec-bench', 'categories': ['poetry']}], [{'name': 'gsm8k', 'num_prompts': 0}],
    [{'name': 'gsm8k', 'max_new_tokens': 1.5}], [{'name': 'gsm8k', 'prompts': 5}], [{'name': 'random', 'turns': 'all'}], [7],
])
def test_a_bad_dataset_entry_is_refused_with_validate_datasets_own_message(entries):
    with pytest.raises(datasets.DatasetError) as expected:
        datasets.validate_datasets(copy.deepcopy(entries), where='workload.datasets')
    assert refusal(datasets=entries, input_len=8, output_len=8, num_prompts=8) == 'campaign_plan: %s' % expected.value
    assert str(expected.value).startswith('workload.datasets')


@pytest.mark.parametrize('entries, fragments', [
    (['gsm9k'], ['workload.datasets[0].name', "'gsm9k'", 'allowed: gsm8k, humaneval, math500, mbpp, mt-bench, spec-bench, random']),
    (['mt-bench', 'mt-bench'], ['workload.datasets[1].name', 'each dataset once']),
    ([{'name': 'spec-bench', 'categories': ['poetry']}], ['workload.datasets[0].categories', 'poetry', 'translation']),
])
def test_dataset_refusals_name_the_entry_and_the_allowed_values(entries, fragments):
    message = refusal(datasets=entries)
    for fragment in fragments:
        assert fragment in message, (fragment, message)


@pytest.mark.parametrize('workload, fragments', [
    # no datasets: today's spec, today's message
    ({'input_len': 512, 'output_len': 128}, ['workload.num_prompts is None', 'a positive integer']),
    # a random entry that gives a size neither itself nor the workload has
    ({'datasets': ['gsm8k', 'random'], 'input_len': 512, 'output_len': 128},
     ['workload.datasets[1].num_prompts is missing and workload.num_prompts is None', 'on the random entry or in workload.num_prompts']),
    ({'datasets': [{'name': 'random', 'input_len': 4, 'output_len': 4}]}, ['workload.datasets[0].num_prompts is missing']),
    # the random sizes are checked when given, whether a random set uses them or not
    ({'datasets': ['gsm8k'], 'input_len': 0}, ['workload.input_len is 0', 'a positive integer']),
    ({'datasets': ['gsm8k'], 'output_len': '128'}, ["workload.output_len is '128'", 'a positive integer']),
])
def test_random_sizes_are_required_only_where_a_random_set_needs_them(workload, fragments):
    message = refusal(**workload)
    for fragment in fragments:
        assert fragment in message, (fragment, message)


@pytest.mark.parametrize('value, fragments', [
    (-0.1, ['workload.temperature is -0.1', 'a number >= 0']),
    ('0.7', ["workload.temperature is '0.7'", 'a number >= 0']),
    (True, ['workload.temperature is True', 'a number >= 0']),
    (None, ['workload.temperature is None', 'a number >= 0']),
    ([], ['workload.temperature is an empty list', 'a non-empty list']),
    ([0, 'hot'], ["workload.temperature[1] is 'hot'", 'a number >= 0']),
    ([0, 1, 0.0], ['workload.temperature[2] repeats 0.0 as t0, as workload.temperature[0]', 'distinct temperatures']),
    # results are named by '%g': two temperatures that name the same file are one run twice
    ([0.1234567, 0.1234568], ['workload.temperature[1] repeats 0.1234568 as t0.123457', 'at most 6 significant digits']),
    ([0, float('nan')], ['workload.temperature[1] is nan', 'a finite number']),
    (float('inf'), ['workload.temperature is inf', 'a finite number']),
])
def test_a_bad_temperature_is_refused(value, fragments):
    message = refusal(datasets=['gsm8k'], temperature=value)
    for fragment in fragments:
        assert fragment in message, (fragment, message)


@pytest.mark.parametrize('key, value, fragments', [
    ('top_p', 0, ['workload.top_p is 0', 'a number in (0, 1]']),
    ('top_p', 1.5, ['workload.top_p is 1.5', 'a number in (0, 1]']),
    ('top_p', '0.9', ["workload.top_p is '0.9'", 'a number in (0, 1]']),
    ('top_p', True, ['workload.top_p is True', 'a number in (0, 1]']),
    ('top_k', 0, ['workload.top_k is 0', 'an integer >= 1, or -1']),
    ('top_k', -2, ['workload.top_k is -2', 'an integer >= 1, or -1']),
    ('top_k', 20.0, ['workload.top_k is 20.0', 'an integer >= 1, or -1']),
    ('top_k', False, ['workload.top_k is False', 'an integer >= 1, or -1']),
    ('stop_at_eos', 'yes', ["workload.stop_at_eos is 'yes'", 'true', 'or false']),
    ('stop_at_eos', 1, ['workload.stop_at_eos is 1', 'true', 'or false']),
    ('chat_template_kwargs', ['enable_thinking'], ['workload.chat_template_kwargs is', 'a mapping of template variable names']),
    ('chat_template_kwargs', {'enable thinking': False}, ["workload.chat_template_kwargs key 'enable thinking'", 'the harness sets those']),
    ('chat_template_kwargs', {'messages': []},
     ["workload.chat_template_kwargs key 'messages'", 'other than messages, tools, documents, add_generation_prompt']),
    ('chat_template_kwargs', {'add_generation_prompt': False}, ["key 'add_generation_prompt'", 'the harness sets those']),
    ('chat_template_kwargs', {1: True}, ['workload.chat_template_kwargs key 1']),
    ('chat_template_kwargs', {'today': datetime.date(2026, 1, 1)}, ['workload.chat_template_kwargs.today is', 'a JSON value']),
    ('chat_template_kwargs', {'depth': float('nan')}, ['workload.chat_template_kwargs.depth is nan', 'a finite number']),
    ('temperatures', [0], ['workload has unknown key(s) temperatures', 'temperature, top_p, top_k, stop_at_eos, chat_template_kwargs']),
])
def test_a_bad_sampling_or_template_option_is_refused(key, value, fragments):
    message = refusal(datasets=['gsm8k'], **{key: value})
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_the_workload_is_refused_before_host_problems_are_looked_at():
    """A spec fault wins over a host fault: the same spec fails the same way on every host."""
    bad = spec(datasets=['gsm9k'])
    bad['tp'] = [8]  # larger than the host
    with pytest.raises(AnsibleFilterError, match=r'workload\.datasets\[0\]\.name'):
        plan(bad)


def test_the_documented_example_plans_and_its_stages_carry_the_documented_workload():
    docs = os.path.join(REPO_ROOT, 'plugins', 'filter', 'campaign_plan.yml')
    with open(docs, encoding='utf-8') as handle:
        documented = yaml.safe_load(handle)
    example = yaml.safe_load(documented['EXAMPLES'])[0]['vars']['campaign_spec']
    host = {'nvidia_gpus': [{'index': i, 'uuid': 'GPU-%d' % i, 'memory_total_mib': 97887, 'processes': []} for i in range(8)]}
    workload = campaign_plan(host, example, {'build': DDTREE_BUILD})[0]['workload']
    assert [entry['name'] for entry in workload['datasets']] == REAL_SETS
    sample = documented['RETURN']['_value']['contains']['workload']['sample']
    assert set(sample) == set(workload) | {'input_len', 'output_len', 'num_prompts'}
    # the sample's entries are what the plan makes of them
    given = [{'name': 'mt-bench'}, {'name': 'spec-bench', 'categories': ['translation', 'math_reasoning']},
             {'name': 'mine', 'file': 'prompts/mine.jsonl', 'num_prompts': 32, 'max_new_tokens': 512, 'turns': 'first'},
             'random']
    planned = workload_of(datasets=given, input_len=512, output_len=256, num_prompts=64, temperature=[0, 1],
                          chat_template_kwargs={'enable_thinking': False})
    assert planned == sample
