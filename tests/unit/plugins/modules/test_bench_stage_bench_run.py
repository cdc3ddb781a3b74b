# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""How the bench_stage role calls bench_run: the stage's whole workload (its request rate included) and the role's
limits reach the module, every argument is one of the module's options, and the role's defaults are documented."""

from __future__ import annotations

import os

import jinja2
import pytest
import yaml
from jinja2.nativetypes import NativeEnvironment

from ansible_collections.specdec.bench.plugins.filter.stage import SETTINGS, stage_run_args
from ansible_collections.specdec.bench.plugins.modules import bench_run

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
ROLE = os.path.join(REPO, 'roles', 'bench_stage')
LIMITS = ('request_timeout', 'request_deadline', 'run_deadline')
STAGE = {'id': 'tp1-autoregressive', 'unit': 'specdec-c-tp1-autoregressive.service', 'port': 31000, 'concurrency': [1],
         'gpus': [], 'workload': {'input_len': 8, 'output_len': 8, 'num_prompts': 4}}


def load(*path):
    with open(os.path.join(ROLE, *path), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def role_settings(**variables):
    """The role's _bench_stage_settings as Ansible templates them (native types) from its defaults; the values
    that need facts or other roles are given."""
    values = dict(load('defaults', 'main.yml'), bench_stage_backend='systemd', bench_stage_campaign='c',
                  bench_stage_results_root='/root/bench_results', bench_stage_unit_dir='/etc/systemd/system',
                  bench_stage_stop_timeout=60, bench_stage_service_dir='/var/lib/specdec/services',
                  _bench_stage_reusable=['result-*'], _bench_stage_file_mode='0640')
    values.update(variables)
    env = NativeEnvironment(undefined=jinja2.StrictUndefined)
    env.filters['bool'] = lambda value: value in (True, 'true', 'True', 'yes', 1)
    return dict((key, env.from_string(expression).render(values) if isinstance(expression, str) else expression)
                for key, expression in load('vars', 'main.yml')['_bench_stage_settings'].items())


def bench_run_args(stage=None, **variables):
    """The options of the stage's first bench_run, as stage_run gets them from the role."""
    return stage_run_args(stage or STAGE, role_settings(**variables))['runs'][0]


def test_the_role_passes_every_setting_and_every_argument_is_an_option_of_bench_run():
    assert set(role_settings()) == set(SETTINGS)
    options = yaml.safe_load(bench_run.DOCUMENTATION)['options']
    assert set(bench_run_args(bench_stage_request_timeout=1.0, bench_stage_request_deadline=2.0, bench_stage_run_deadline=3.0)) <= set(options)


@pytest.mark.parametrize('workload, rate', [
    ({'input_len': 8, 'output_len': 8, 'num_prompts': 4, 'request_rate': 2.5}, 2.5),
    ({'input_len': 8, 'output_len': 8, 'num_prompts': 4, 'request_rate': 'inf'}, 'inf'),
    ({'input_len': 8, 'output_len': 8, 'num_prompts': 4}, 'inf'),  # the plan's default
])
def test_the_stages_request_rate_reaches_bench_run(workload, rate):
    assert bench_run_args(dict(STAGE, workload=workload))['request_rate'] == rate
    assert float(rate) > 0  # what bench_run's float option makes of it


def test_the_limits_are_omitted_when_null_so_bench_run_derives_them_and_passed_when_set():
    for key in LIMITS:
        assert key not in bench_run_args(), key
        assert bench_run_args(**{'bench_stage_' + key: 42.5})[key] == 42.5, key


def test_defaults_and_argument_specs_agree():
    defaults = load('defaults', 'main.yml')
    specs = load('meta', 'argument_specs.yml')['argument_specs']
    options = specs['main']['options']
    required = {name for name, spec in options.items() if spec.get('required')}
    assert required == {'bench_stage_stage'}
    # the wave entry point requires its list; its other options are main's
    assert specs['wave']['options']['bench_stage_wave']['required'] and set(specs['wave']['options']) == set(options)
    assert set(defaults) == set(options) - required
    for name, spec in options.items():
        assert name.startswith('bench_stage_') and spec.get('description'), name
        if 'default' not in spec and '{{' in str(defaults.get(name)):
            # an int taken from another variable cannot be an int default in the spec: the prose names it
            assert 'Default' in str(spec['description']), name
            continue
        assert spec.get('default') == defaults.get(name), name
    for key in LIMITS:
        assert defaults['bench_stage_' + key] is None and options['bench_stage_' + key]['type'] == 'float'
