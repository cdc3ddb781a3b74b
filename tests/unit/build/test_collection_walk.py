# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""docs/collection.md's walk "From site.yml to the SGLang command line" stays true: at most six files, from
playbooks/site.yml, each one there and naming the next (its role, task file, filter, package or module), the last one
building the stage's argv. A file renamed, or a step moved elsewhere, fails here until the walk says so."""

from __future__ import annotations

import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SECTION = '## From site.yml to the SGLang command line'
MOST = 6


def walk_section():
    with open(os.path.join(REPO, 'docs', 'collection.md'), encoding='utf-8') as handle:
        text = handle.read()
    assert SECTION in text, 'docs/collection.md has no section %r' % SECTION
    return text.split(SECTION, 1)[1].split('\n## ', 1)[0]


def walk():
    return re.findall(r'^\d+\. `([^`]+)`', walk_section(), re.MULTILINE)


def read(path):
    with open(os.path.join(REPO, path), encoding='utf-8') as handle:
        return handle.read()


def names_of(path):
    """Patterns any of which, found in a file, names path the way Ansible or Python reaches it from there."""
    parts = path.split('/')
    if parts[0] == 'roles' and parts[2:3] == ['tasks']:
        role, stem = parts[1], os.path.splitext(parts[-1])[0]
        if stem == 'main':
            return [r'specdec\.bench\.%s\b' % re.escape(role), re.escape(path)]
        return [r'(?<![\w/.-])%s\.yml\b' % re.escape(stem), r'tasks_from:\s*%s\b' % re.escape(stem), re.escape(path)]
    if parts[0] == 'playbooks':
        return [r'(?<![\w/.-])%s\b' % re.escape(parts[-1]), re.escape(path)]
    if path.endswith('.py'):
        module = path[:-len('.py')].split('/')
        if module[-1] == '__init__':
            module.pop()
        public = re.findall(r'^def ([a-z]\w*)\(', read(path), re.MULTILINE)
        return ([r'specdec\.bench\.%s\b' % re.escape(name) for name in public]
                + [r'\b%s\b' % re.escape('.'.join(module)), r'from \.%s import\b' % re.escape(module[-1]), re.escape(path)])
    return [re.escape(path)]


def test_the_walk_starts_at_site_yml_and_is_short():
    files = walk()
    assert files and files[0] == 'playbooks/site.yml', files
    assert len(files) <= MOST, 'the walk has %d files; at most %d' % (len(files), MOST)
    missing = [path for path in files if not os.path.isfile(os.path.join(REPO, path))]
    assert not missing, 'listed in docs/collection.md but not in the repository: %s' % missing


def test_each_file_names_the_next():
    files = walk()
    for here, there in zip(files, files[1:]):
        text = read(here)
        assert any(re.search(pattern, text) for pattern in names_of(there)), '%s does not name %s' % (here, there)


def test_the_last_file_builds_the_command_line():
    assert re.search(r"'argv'|\bargv\s*=", read(walk()[-1]))


def test_the_paths_the_section_names_exist():
    named = set(re.findall(r'`((?:playbooks|roles|plugins|tests)/[^`]+)`', walk_section()))
    missing = sorted(path for path in named if not os.path.exists(os.path.join(REPO, path)))
    assert not missing, missing


def test_a_role_is_not_named_by_a_longer_name():
    patterns = names_of('roles/plan/tasks/main.yml')
    assert not any(re.search(pattern, 'specdec.bench.plan_lines') for pattern in patterns)
    assert any(re.search(pattern, 'name: specdec.bench.plan\n') for pattern in patterns)
