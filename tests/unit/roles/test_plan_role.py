# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The plan role run by ansible-playbook against localhost, with the GPU facts a tiny module sets: two plans in one
play must each judge memory from their own model's index, never from a fact an earlier plan left behind."""

from __future__ import annotations

import json
import os

import yaml

from testhelpers import local_play, run_playbook  # pylint: disable=import-error

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
GIB = 1024 ** 3
GPUS = [{'index': 0, 'uuid': 'GPU-a', 'name': 'A100', 'memory_total_mib': 40960, 'memory_used_mib': 0,
         'processes': [], 'unexplained_memory_mib': 0}]
# sets ansible_facts from its argument, as the probe would
FAKE_FACTS = '''#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule
module = AnsibleModule(argument_spec=dict(facts=dict(type='dict', required=True)), supports_check_mode=True)
module.exit_json(changed=False, ansible_facts=module.params['facts'])
'''


def spec(campaign, model):
    return {'campaign': campaign, 'model': model, 'tp': [1], 'methods': {'autoregressive': {}},
            'workload': {'input_len': 16, 'output_len': 16, 'num_prompts': 1}, 'concurrency': [1]}


def run_plans(tmp_path, specs):
    """Plan each spec in turn in one play; the list of plan_stages after each."""
    (tmp_path / 'library').mkdir()
    (tmp_path / 'library' / 'fake_facts.py').write_text(FAKE_FACTS)
    out = tmp_path / 'plans.json'
    tasks = [{'name': 'Set the GPU facts', 'fake_facts': {'facts': {'nvidia_gpus': GPUS}}}]
    for position, campaign_spec in enumerate(specs):
        tasks += [
            {'name': 'Plan %d' % position, 'ansible.builtin.include_role': {'name': 'specdec.bench.plan'},
             'vars': {'plan_campaign_spec': campaign_spec, 'plan_sglang_build': 'sglang-0.5.23', 'plan_print': False}},
            {'name': 'Keep plan %d' % position,
             'ansible.builtin.set_fact': {'plans': '{{ plans | default([]) + [plan_stages] }}'}},
        ]
    write = {'content': '{{ plans | to_json }}', 'dest': str(out), 'mode': '0644'}
    tasks.append({'name': 'Write the plans', 'ansible.builtin.copy': write})
    playbook = tmp_path / 'plans.yml'
    playbook.write_text(yaml.safe_dump(local_play(tasks)))
    run_playbook(playbook)
    return json.loads(out.read_text())


def test_a_later_plan_never_takes_an_earlier_models_size(tmp_path):
    big = tmp_path / 'big'
    big.mkdir()
    (big / 'model.safetensors.index.json').write_text(json.dumps({'metadata': {'total_size': 60 * GIB}}))
    small = tmp_path / 'small'  # no index: the memory is not judged
    small.mkdir()
    first, second, third = run_plans(tmp_path, [spec('big', str(big)), spec('small', str(small)),
                                                spec('given', {'path': str(small), 'bytes': 8 * GIB})])
    assert not first[0]['feasible'] and 'do not fit at TP1' in first[0]['reason']
    assert second[0]['feasible'], second[0]
    assert third[0]['feasible'], third[0]


def test_the_old_build_variable_is_refused_by_its_new_name(tmp_path):
    """A host that still sets sglang_build (renamed specdec_sglang_build) is refused before the plan, naming both,
    rather than having its build profile ignored in silence."""
    out = tmp_path / 'refusal.txt'
    tasks = [{'name': 'Plan', 'block': [
        {'name': 'Plan with the old variable', 'ansible.builtin.include_role': {'name': 'specdec.bench.plan'},
         'vars': {'plan_campaign_spec': spec('old', str(tmp_path)), 'sglang_build': 'sglang-0.5.23', 'plan_print': False}},
    ], 'rescue': [
        {'name': 'Keep the refusal',
         'ansible.builtin.copy': {'content': '{{ ansible_failed_result.msg }}', 'dest': str(out), 'mode': '0644'}},
    ]}]
    playbook = tmp_path / 'old.yml'
    playbook.write_text(yaml.safe_dump(local_play(tasks)))
    run_playbook(playbook)
    refusal = out.read_text()
    assert 'sglang_build is set (sglang-0.5.23)' in refusal and 'specdec_sglang_build' in refusal, refusal
