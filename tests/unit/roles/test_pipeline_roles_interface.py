# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every role's interface: defaults and meta/argument_specs.yml agree, required options are required in the
spec (not in prose), every task carries a tag of docs/tags.md, and no role reads another role's files."""

from __future__ import annotations

import os
import re

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
# Every role of the collection: a new role is held to the same interface without being listed here.
ROLES = sorted(name for name in os.listdir(os.path.join(REPO, 'roles')) if os.path.isdir(os.path.join(REPO, 'roles', name, 'tasks')))
PHASES = ('validate', 'preflight', 'install', 'configure', 'run', 'report')


def load(role, *path):
    with open(os.path.join(REPO, 'roles', role, *path), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def task_files(role):
    folder = os.path.join(REPO, 'roles', role, 'tasks')
    return sorted(os.path.join(folder, name) for name in os.listdir(folder) if name.endswith('.yml'))


@pytest.mark.parametrize('role', ROLES)
def test_defaults_and_argument_specs_agree(role):
    defaults = load(role, 'defaults', 'main.yml') or {}
    options = load(role, 'meta', 'argument_specs.yml')['argument_specs']['main']['options']
    required = {name for name, spec in options.items() if spec.get('required')}
    assert set(defaults) == set(options) - required
    for name, spec in options.items():
        assert name.startswith(role + '_') and spec.get('description'), name
        if name in required:
            assert 'default' not in spec and name not in defaults, name
        elif 'default' in spec and '{{' not in str(defaults[name]):
            assert spec['default'] == defaults[name], name


@pytest.mark.parametrize('role', ROLES)
def test_required_is_said_by_the_spec_not_the_prose(role):
    for entry in load(role, 'meta', 'argument_specs.yml')['argument_specs'].values():
        for name, spec in entry.get('options', {}).items():
            text = ' '.join(spec['description']) if isinstance(spec['description'], list) else spec['description']
            # "Required for <action>" is a condition the spec cannot say
            assert not re.search(r'\bRequired\b(?! for)', text), name


@pytest.mark.parametrize('role', ROLES)
def test_the_argument_spec_names_the_roles_output(role):
    for name, entry in load(role, 'meta', 'argument_specs.yml')['argument_specs'].items():
        assert any(line.startswith('Output: ') for line in entry['description']), name


def inherited_tags(tasks_by_file):
    """The tags a file's tasks get from the task that imports it (import_tasks) or applies them (include_tasks apply)."""
    inherited = {}
    for _depth in range(len(tasks_by_file)):  # an import inside an imported file inherits both
        for name, tasks in tasks_by_file.items():
            for task in tasks:
                imported = task.get('ansible.builtin.import_tasks')
                included = task.get('ansible.builtin.include_tasks')
                if imported:
                    tags = (task.get('tags') or []) + inherited.get(name, [])
                elif isinstance(included, dict) and (included.get('apply') or {}).get('tags'):
                    imported, tags = included['file'], included['apply']['tags']
                else:
                    continue
                inherited[imported] = sorted(set(inherited.get(imported, [])) | set(tags))
    return inherited


@pytest.mark.parametrize('role', ROLES)
def test_every_task_carries_a_tag_of_the_vocabulary(role):
    allowed = {'%s_%s' % (role, phase) for phase in PHASES}
    tasks_by_file = {}
    for path in task_files(role):
        with open(path, encoding='utf-8') as handle:
            tasks_by_file[os.path.basename(path)] = yaml.safe_load(handle) or []
    inherited = inherited_tags(tasks_by_file)
    for path in task_files(role):
        for task in tasks_by_file[os.path.basename(path)]:
            if 'ansible.builtin.import_tasks' in task:
                continue  # the tasks it imports carry the tags, their own and its
            tags = (task.get('tags') or []) + inherited.get(os.path.basename(path), [])
            assert tags and set(tags) <= allowed, '%s: %s has tags %s' % (os.path.basename(path), task.get('name'), tags)


@pytest.mark.parametrize('role', ROLES)
def test_no_role_reads_another_roles_files(role):
    for folder, _dirs, names in os.walk(os.path.join(REPO, 'roles', role)):
        for name in names:
            if name.endswith(('.yml', '.j2')):
                with open(os.path.join(folder, name), encoding='utf-8') as handle:
                    text = handle.read()
                assert not re.search(r'role_path\s*}}\s*/\.\.', text), os.path.join(folder, name)
                assert 'results_dir_layout' not in text, os.path.join(folder, name)


@pytest.mark.parametrize('role', ROLES)
def test_no_literal_systemd_folder_in_the_tasks(role):
    for path in task_files(role):
        with open(path, encoding='utf-8') as handle:
            assert '/etc/systemd/system' not in handle.read(), path


def _yaml_files(*folders):
    for folder in folders:
        for root, _dirs, names in os.walk(os.path.join(REPO, folder)):
            for name in names:
                if name.endswith(('.yml', '.yaml')):
                    yield os.path.join(root, name)


def test_every_entry_point_is_named_so_that_its_spec_is_validated():
    """ansible-core looks a role's argument spec up by the exact tasks_from string: `tasks_from: wave.yml` ran the wave
    entry point with no validation of its options; `tasks_from: wave` validates them."""
    named_with_extension = []
    for path in _yaml_files('roles', 'playbooks', 'molecule', 'tests/sim'):
        with open(path, encoding='utf-8') as handle:
            for number, line in enumerate(handle, 1):
                if re.search(r'\btasks_from:\s*["\']?[\w./-]+\.ya?ml\b', line):
                    named_with_extension.append('%s:%d: %s' % (os.path.relpath(path, REPO), number, line.strip()))
    assert not named_with_extension
