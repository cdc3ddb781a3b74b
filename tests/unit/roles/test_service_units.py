# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The units of sglang_unit, train_run and train_monitor, rendered in Python (specdec.bench.service state=defined) from
the definition each role builds with its defaults and vars, are byte for byte the units the roles' Jinja templates
wrote for the same inputs (tests/fixtures/units: the inputs in cases.json, <role>-<n>.service what the templates
rendered)."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from ansible_collections.specdec.bench.plugins.module_utils._service import check_definition, supervisor_definition
from ansible_collections.specdec.bench.plugins.module_utils._systemd import render_unit
from testhelpers import local_play, run_playbook  # pylint: disable=import-error

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
FIXTURES = os.path.join(REPO, 'tests', 'fixtures', 'units')
DEFINITIONS = {'sglang_unit': '_sglang_unit_definition', 'train_run': '_train_run_definition',
               'train_monitor': '_train_monitor_definition'}
with open(os.path.join(FIXTURES, 'cases.json'), encoding='utf-8') as _handle:
    CASES = json.load(_handle)


def role_values(tmp_path, role, cases, expression):
    """expression, evaluated with the role's defaults and vars plus each case's variables, one JSON value per case."""
    tasks = [{'ansible.builtin.copy': {'content': '{{ %s | to_json }}' % expression, 'dest': str(tmp_path / ('%d.json' % index)),
                                       'mode': '0644'}, 'vars': case} for index, case in enumerate(cases)]
    playbook = local_play(tasks, vars_files=[os.path.join(REPO, 'roles', role, 'defaults', 'main.yml'),
                                             os.path.join(REPO, 'roles', role, 'vars', 'main.yml')])
    (tmp_path / 'play.yml').write_text(yaml.safe_dump(playbook))
    run_playbook(tmp_path / 'play.yml')
    return [json.loads((tmp_path / ('%d.json' % index)).read_text()) for index in range(len(cases))]


@pytest.fixture(name='definitions', scope='module')
def definitions_fixture(tmp_path_factory):
    out = {}
    for role, expression in DEFINITIONS.items():
        out[role] = role_values(tmp_path_factory.mktemp(role), role, CASES[role], expression)
    return out


@pytest.mark.parametrize(('role', 'index'), [(role, index) for role in sorted(CASES) for index in range(len(CASES[role]))])
def test_the_python_unit_is_the_templates_unit(definitions, role, index):
    with open(os.path.join(FIXTURES, '%s-%d.service' % (role, index)), encoding='utf-8') as handle:
        expected = handle.read()
    assert render_unit(check_definition(definitions[role][index])) == expected


@pytest.mark.parametrize('role', sorted(DEFINITIONS))
def test_the_supervisor_gets_the_same_definition_without_the_layout(definitions, role):
    data = supervisor_definition(definitions[role][0], 'x.service')
    assert 'unit' not in data and 'numa_nodes' not in data and data['argv'] == definitions[role][0]['argv']
