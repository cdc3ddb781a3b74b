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

from ansible_collections.specdec.bench.plugins.modules import bench_run

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
ROLE = os.path.join(REPO, 'roles', 'bench_stage')
OMIT = '__omit_place_holder__'
LIMITS = ('request_timeout', 'request_deadline', 'run_deadline')


def load(*path):
    with open(os.path.join(ROLE, *path), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def bench_run_task():
    tasks = [task for task in load('tasks', 'run.yml')[0]['block'] if 'specdec.bench.bench_run' in task]
    assert len(tasks) == 1
    return tasks[0]['specdec.bench.bench_run']


def render(expression, **variables):
    """A task argument as Ansible templates it (its plain Jinja2 part), omit as its placeholder."""
    values = dict(load('defaults', 'main.yml'), omit=OMIT)
    values.update(variables)
    return jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(expression).render(values)


def test_every_argument_is_an_option_of_bench_run():
    options = yaml.safe_load(bench_run.DOCUMENTATION)['options']
    assert set(bench_run_task()) <= set(options)


@pytest.mark.parametrize('workload, rate', [
    ({'input_len': 8, 'output_len': 8, 'num_prompts': 4, 'request_rate': 2.5}, '2.5'),
    ({'input_len': 8, 'output_len': 8, 'num_prompts': 4, 'request_rate': 'inf'}, 'inf'),
    ({'input_len': 8, 'output_len': 8, 'num_prompts': 4}, 'inf'),  # the plan's default
])
def test_the_stages_request_rate_reaches_bench_run(workload, rate):
    args = bench_run_task()
    assert render(args['request_rate'], bench_stage_stage={'workload': workload}) == rate
    assert float(rate) > 0  # what bench_run's float option makes of it


def test_the_limits_are_omitted_when_null_so_bench_run_derives_them_and_passed_when_set():
    args = bench_run_task()
    for key in LIMITS:
        assert render(args[key]) == OMIT, key
        assert render(args[key], **{'bench_stage_' + key: 42.5}) == '42.5', key


def test_defaults_and_argument_specs_agree():
    defaults = load('defaults', 'main.yml')
    options = load('meta', 'argument_specs.yml')['argument_specs']['main']['options']
    required = {name for name, spec in options.items() if spec.get('required')}
    assert required == {'bench_stage_stage'}
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
