# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The training roles' interface: every default documented in meta/argument_specs.yml (every entry point) and back,
required options without a default, every task tagged <role>_<phase>, and playbooks/train.yml checking once."""

from __future__ import annotations

import os
import re

import pytest
import yaml

from ansible_collections.specdec.bench.plugins.module_utils._common import ID_PATTERN

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ENTRY_POINTS = ['main', 'preflight', 'start']


def _has_entry_points(name):
    path = os.path.join(REPO, 'roles', name, 'meta', 'argument_specs.yml')
    if not os.path.isfile(path):
        return False
    with open(path, encoding='utf-8') as handle:
        return set(ENTRY_POINTS) <= set(yaml.safe_load(handle)['argument_specs'])


# Every role with a preflight and a start entry point (a check, then a start a playbook runs after all checks).
ROLES = sorted(name for name in os.listdir(os.path.join(REPO, 'roles')) if _has_entry_points(name))
PHASES = ['validate', 'preflight', 'install', 'configure', 'run', 'report']
# Keys of a task that are not its action.
TASK_KEYS = {'name', 'tags', 'when', 'vars', 'register', 'notify', 'loop', 'loop_control', 'changed_when', 'failed_when',
             'check_mode', 'no_log', 'until', 'retries', 'delay', 'listen', 'block', 'rescue', 'always'}


def load(role, *path):
    with open(os.path.join(REPO, 'roles', role, *path), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def tasks_of(role, file_name, tags=()):
    """(file, task, inherited + own tags) of every task an entry point runs, through import_tasks and blocks."""
    found = []
    for task in load(role, 'tasks', file_name):
        own = tuple(tags) + tuple(task.get('tags', ()))
        if 'block' in task:
            for key in ('block', 'rescue', 'always'):
                for inner in task.get(key, ()):
                    found.extend(tasks_in_block(role, file_name, inner, own))
        elif 'ansible.builtin.import_tasks' in task:
            found.extend(tasks_of(role, task['ansible.builtin.import_tasks'], own))
        else:
            found.append((file_name, task, own))
    return found


def tasks_in_block(role, file_name, task, tags):
    own = tuple(tags) + tuple(task.get('tags', ()))
    if 'ansible.builtin.import_tasks' in task:
        return tasks_of(role, task['ansible.builtin.import_tasks'], own)
    return [(file_name, task, own)]


@pytest.mark.parametrize('role', ROLES)
@pytest.mark.parametrize('entry_point', ENTRY_POINTS)
def test_defaults_and_argument_specs_agree(role, entry_point):
    defaults = load(role, 'defaults', 'main.yml')
    options = load(role, 'meta', 'argument_specs.yml')['argument_specs'][entry_point]['options']
    required = {name for name, spec in options.items() if spec.get('required')}
    assert set(defaults) == set(options) - required
    for name, spec in options.items():
        assert name.startswith(role + '_') and spec.get('description'), name
        if 'default' in spec:
            assert spec['default'] == defaults[name], name
        # a required option has no default anywhere, and says so in the spec only
        if name in required:
            assert 'default' not in spec, name
        assert 'Required' not in str(spec['description']), name


@pytest.mark.parametrize(('role', 'required'), [
    ('train_run', {'train_run_name'}),
    ('train_monitor', {'train_monitor_run_name', 'train_monitor_run_dir', 'train_monitor_run_unit'}),
])
def test_the_run_to_start_or_show_is_required(role, required):
    for entry_point in ENTRY_POINTS:
        options = load(role, 'meta', 'argument_specs.yml')['argument_specs'][entry_point]['options']
        assert {name for name, spec in options.items() if spec.get('required')} == required


@pytest.mark.parametrize('role', ROLES)
def test_main_is_the_preflight_then_the_start(role):
    assert [task['ansible.builtin.import_tasks'] for task in load(role, 'tasks', 'main.yml')] == [
        'preflight.yml', 'start.yml']
    assert not [task for _file, task, _tags in tasks_of(role, 'start.yml') if _file == 'preflight.yml']


@pytest.mark.parametrize('role', ROLES)
@pytest.mark.parametrize('entry_point', ENTRY_POINTS)
def test_every_task_carries_its_phase(role, entry_point):
    phase_tags = {role + '_' + phase for phase in PHASES}
    for file_name, task, tags in tasks_of(role, entry_point + '.yml'):
        ours = [tag for tag in tags if tag.startswith(role + '_')]
        assert ours and set(ours) <= phase_tags and len(set(ours)) <= 2, (file_name, task['name'], tags)


@pytest.mark.parametrize(('role', 'file_name', 'phase'), [
    ('train_run', 'preflight.yml', 'preflight'),
    ('train_run', 'folder.yml', 'configure'),
    ('train_run', 'run.yml', 'run'),
    ('train_monitor', 'install.yml', 'install'),
    ('train_monitor', 'configure.yml', 'configure'),
    ('train_monitor', 'run.yml', 'run'),
])
def test_each_file_is_its_phase(role, file_name, phase):
    tags = [tags for _file, _task, tags in tasks_of(role, file_name)]
    assert tags and all(role + '_' + phase in task_tags or role + '_validate' in task_tags for task_tags in tags)


@pytest.mark.parametrize('role', ROLES)
def test_the_argument_checks_are_validate_and_need_no_host(role):
    """The first check of each role reads its arguments only: it is the validate phase, not the preflight."""
    first = load(role, 'tasks', 'preflight.yml')[0]
    assert 'ansible.builtin.assert' in first and role + '_validate' in first['tags']
    assert any('is specdec.bench.id' in condition for condition in first['ansible.builtin.assert']['that'])
    assert "'' | specdec.bench.id_pattern" in first['ansible.builtin.assert']['fail_msg']


@pytest.mark.parametrize('role', ROLES)
def test_no_role_local_id_regex_and_no_path_into_the_collection(role):
    variables = load(role, 'vars', 'main.yml')
    assert not [name for name, value in variables.items() if ID_PATTERN in str(value)]
    for folder in ('tasks', 'vars', 'defaults', 'handlers', 'templates'):
        for name in sorted(os.listdir(os.path.join(REPO, 'roles', role, folder))) if os.path.isdir(os.path.join(REPO, 'roles', role, folder)) else []:
            with open(os.path.join(REPO, 'roles', role, folder, name), encoding='utf-8') as handle:
                text = handle.read()
            assert '/../' not in text and 'module_utils' not in text, (folder, name)


@pytest.mark.parametrize('role', ROLES)
def test_systemd_folder_is_a_variable(role):
    """/etc/systemd/system is the default of <role>_unit_dir, documented with it, and written nowhere else."""
    assert load(role, 'defaults', 'main.yml')[role + '_unit_dir'] == '/etc/systemd/system'
    spec = load(role, 'meta', 'argument_specs.yml')['argument_specs']['main']['options'][role + '_unit_dir']
    assert spec['default'] == '/etc/systemd/system' and spec['type'] == 'path'
    for folder in ('tasks', 'vars', 'handlers', 'templates'):
        for name in sorted(os.listdir(os.path.join(REPO, 'roles', role, folder))) if os.path.isdir(os.path.join(REPO, 'roles', role, folder)) else []:
            with open(os.path.join(REPO, 'roles', role, folder, name), encoding='utf-8') as handle:
                assert '/etc/systemd' not in handle.read(), (folder, name)


def test_the_playbook_checks_each_role_once_before_it_starts_either():
    with open(os.path.join(REPO, 'playbooks', 'train.yml'), encoding='utf-8') as handle:
        play = yaml.safe_load(handle)[0]
    imports = [(task['ansible.builtin.import_role']['name'].rsplit('.', 1)[1],
                task['ansible.builtin.import_role'].get('tasks_from', 'main')) for task in play['tasks']]
    assert imports == [('train_run', 'preflight'), ('train_monitor', 'preflight'),
                       ('train_run', 'start'), ('train_monitor', 'start')]
    for role in ROLES:
        specs = load(role, 'meta', 'argument_specs.yml')['argument_specs']
        runs = [task['name'] for role_name, entry_point in imports if role_name == role
                for file_name, task, _tags in tasks_of(role, entry_point + '.yml') if file_name == 'preflight.yml']
        # every check once; an entry point named without .yml is the one Ansible validates the arguments against
        assert runs and len(runs) == len(set(runs)), runs
        assert all(entry_point in specs for role_name, entry_point in imports if role_name == role)


def test_the_default_pipeline_has_every_setting_it_reads():
    dflash = load('train_run', 'defaults', 'main.yml')['train_run_dflash']
    with open(os.path.join(REPO, 'roles', 'train_run', 'templates', 'train_dflash.sh.j2'), encoding='utf-8') as handle:
        template = handle.read()
    used = set(re.findall(r'\bd\.([a-z_]+)', template)) | set(re.findall(r'\bsmoke\.([a-z_]+)', template))
    assert {'speculators_dir', 'target_layer_ids', 'max_samples'} <= used
    assert used <= set(dflash) | set(dflash['smoke']), used - set(dflash)
