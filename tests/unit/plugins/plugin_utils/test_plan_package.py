# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign planner as a package (plugins/plugin_utils/plan/): small modules, the filter a thin adapter over it,
and the entry point's two input mappings (the host's inputs, the checkpoint inputs) as campaign_plan.yml documents
them. What the plan makes is pinned by tests/unit/plugins/filter/test_plan_golden.py."""

from __future__ import annotations

import os
import re

import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible.module_utils import _internal as _module_internal
from ansible_collections.specdec.bench.plugins.filter import plan as plan_filter
from ansible_collections.specdec.bench.plugins.plugin_utils import plan as planner

# Importing controller code flips module_utils into controller mode for the whole test process (see test_plan.py).
_module_internal.is_controller = False


@pytest.fixture(autouse=True)
def _controller_mode(monkeypatch):
    monkeypatch.setattr(_module_internal, 'is_controller', True)


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
PACKAGE = os.path.join(REPO, 'plugins', 'plugin_utils', 'plan')
MAX_LINES = 500
MODULES = ['__init__.py', 'capacity.py', 'checkpoints.py', 'common.py', 'load.py', 'methods.py', 'placement.py', 'spec.py', 'stage.py',
           'waves.py', 'workload.py']
FACTS = {'nvidia_gpus': [{'index': i, 'uuid': 'GPU-%d' % i, 'memory_total_mib': 40960, 'processes': []} for i in range(2)],
         'specdec_host': {'listening_ports': []}}
SPEC = {'campaign': 'pkg', 'model': {'path': '/models/m'}, 'tp': [1, 2], 'methods': {'autoregressive': {}},
        'workload': {'input_len': 8, 'output_len': 8, 'num_prompts': 2}, 'concurrency': [1]}
BUILD = {'build': 'sglang-0.5.23'}


def test_the_package_has_its_modules_each_under_500_lines():
    files = sorted(name for name in os.listdir(PACKAGE) if name.endswith('.py'))
    assert files == MODULES
    for name in files:
        with open(os.path.join(PACKAGE, name), encoding='utf-8') as handle:
            count = sum(1 for _line in handle)
        assert count < MAX_LINES, '%s has %d lines; keep every module of the planner under %d' % (name, count, MAX_LINES)


def test_the_modules_import_each_other_relatively_and_never_the_filters():
    for name in MODULES:
        with open(os.path.join(PACKAGE, name), encoding='utf-8') as handle:
            text = handle.read()
        assert 'plugin_utils.plan' not in text.replace('plugins/plugin_utils/plan/', ''), name
        assert not re.search(r'^from ansible_collections\.specdec\.bench\.plugins\.filter', text, re.M), name


def test_the_filter_file_is_a_thin_adapter_over_the_package():
    expected = {'model_bytes': planner.safetensors_total_size, 'fit_tp': planner.fit_tp, 'campaign_plan': planner.campaign_plan}
    assert plan_filter.FilterModule().filters() == expected
    with open(os.path.join(REPO, 'plugins', 'filter', 'plan.py'), encoding='utf-8') as handle:
        assert sum(1 for _line in handle) < 30


def documented_options():
    with open(os.path.join(REPO, 'plugins', 'filter', 'campaign_plan.yml'), encoding='utf-8') as handle:
        return yaml.safe_load(handle)['DOCUMENTATION']['options']


@pytest.mark.parametrize('option, inputs', [('host', planner.HOST_INPUTS), ('checkpoints', planner.CHECKPOINT_INPUTS)])
def test_the_documented_input_mappings_are_the_entry_points(option, inputs):
    documented = documented_options()[option]
    assert documented['type'] == 'dict' and documented['default'] == {}
    assert sorted(documented['suboptions']) == sorted(inputs)
    for name, suboption in documented['suboptions'].items():
        default = suboption.get('default')
        assert default == inputs[name] or (default == [] and inputs[name] is None), (name, default, inputs[name])


def test_the_documented_options_are_the_facts_the_spec_and_the_two_mappings():
    assert sorted(documented_options()) == ['_input', 'checkpoints', 'host', 'spec']


def test_left_out_inputs_take_their_defaults():
    stages = planner.campaign_plan(FACTS, SPEC, BUILD)
    assert stages == planner.campaign_plan(FACTS, SPEC, dict(planner.HOST_INPUTS, **BUILD), dict(planner.CHECKPOINT_INPUTS))
    assert stages == planner.campaign_plan(FACTS, SPEC, BUILD, None) == planner.campaign_plan(FACTS, SPEC, BUILD, {})
    assert [stage['port'] for stage in stages] == [planner.DEFAULT_BASE_PORT, planner.DEFAULT_BASE_PORT + 1]


def test_the_inputs_are_read_by_their_old_names():
    stages = planner.campaign_plan(FACTS, SPEC, dict(BUILD, base_port=40000, strict=False, model_bytes=10 ** 9))
    assert [stage['port'] for stage in stages] == [40000, 40001]
    assert stages[0]['fit']['model_bytes'] == 10 ** 9


@pytest.mark.parametrize('host, checkpoints, message', [
    (dict(BUILD, base_prot=40000), None,
     'campaign_plan: host has unknown key(s) base_prot; allowed: methods, build, sglang_version, sglang_python, stoppable, '
     'stoppable_processes, base_port, strict, model_bytes'),
    (dict(BUILD, checkpoint_dir='/x'), None, 'campaign_plan: host has unknown key(s) checkpoint_dir; allowed: methods'),
    (BUILD, {'strict': False}, 'campaign_plan: checkpoints has unknown key(s) strict; allowed: draft_checkpoints, '
                               'installed_checkpoints, checkpoint_dir, checkpoint_free_bytes, checkpoint_min_free_gib'),
    (['sglang-0.5.23'], None, "campaign_plan: host is ['sglang-0.5.23'], not a mapping; allowed: a mapping with keys methods"),
    (BUILD, '/var/lib/specdec/checkpoints', "campaign_plan: checkpoints is '/var/lib/specdec/checkpoints', not a mapping"),
])
def test_a_bad_input_mapping_is_refused_naming_the_allowed_keys(host, checkpoints, message):
    with pytest.raises(AnsibleFilterError) as error:
        planner.campaign_plan(FACTS, SPEC, host, checkpoints)
    assert str(error.value).startswith(message), str(error.value)
