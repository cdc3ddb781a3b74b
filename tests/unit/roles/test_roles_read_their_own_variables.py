# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""No role reads another role's variables: a Jinja expression in a role's tasks, handlers, templates, defaults or vars
names only its own variables, the collection-wide specdec_* ones (docs/variables.md) and Ansible's. A role that
includes another (the campaign role) may pass it its variables and read what it leaves (plan_stages, ...)."""

from __future__ import annotations

import os
import re

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
# Every role of the collection, as the interface tests iterate them.
ROLES = sorted(name for name in os.listdir(os.path.join(REPO, 'roles')) if os.path.isdir(os.path.join(REPO, 'roles', name, 'tasks')))
FOLDERS = ('tasks', 'handlers', 'templates', 'defaults', 'vars')
# Keys whose whole value is a Jinja expression without braces.
BARE = ('when', 'that', 'failed_when', 'changed_when', 'until')
# A variable of another host, where that host's own role keeps its files: the training host's train_run_root is where
# the campaign finds a checkpoint set's checkpoints when the spec names no root (reading, not passing, is the point).
ALLOWED = {('campaign', 'train_run_root')}


def expressions(value, key=None):
    """The Jinja expressions of a YAML value: what {{ }} and {% %} hold, and the whole of a when/that/... string."""
    if isinstance(value, dict):
        for name, item in value.items():
            yield from expressions(item, name)
    elif isinstance(value, list):
        for item in value:
            yield from expressions(item, key)
    elif isinstance(value, str):
        if key in BARE:
            yield value
        else:
            yield from jinja_blocks(value)


def jinja_blocks(text):
    return [outer or inner for outer, inner in re.findall(r'{{(.*?)}}|{%(.*?)%}', text, flags=re.S)]


def names_read(expression):
    """The variable names an expression reads: its identifiers, not attributes (a.b), keyword arguments or literals,
    plus the names it reads of another host (hostvars[host].name, hostvars[host]['name'])."""
    others = re.findall(r'''hostvars\[[^\]]*\](?:\.(\w+)|\[['"](\w+)['"]\])''', expression)
    bare = re.sub(r"'[^']*'|\"[^\"]*\"", "''", expression)
    bare = re.sub(r'\b\w+\s*=(?!=)', '', bare)  # keyword arguments
    found = set(re.findall(r'(?<![\w.])([A-Za-z_]\w*)', bare))
    return found | {dotted or quoted for dotted, quoted in others}


def role_files(role):
    for folder in FOLDERS:
        for root, _dirs, names in os.walk(os.path.join(REPO, 'roles', role, folder)):
            for name in sorted(names):
                if name.endswith(('.yml', '.yaml', '.j2')):
                    yield os.path.join(root, name)


def role_expressions(role):
    for path in role_files(role):
        with open(path, encoding='utf-8') as handle:
            text = handle.read()
        found = expressions(yaml.safe_load(text)) if path.endswith(('.yml', '.yaml')) else jinja_blocks(text)
        for expression in found:
            yield os.path.relpath(path, REPO), expression


def included_roles(role):
    """The roles this role includes or imports (or depends on): it may pass them variables and read what they leave."""
    included = set()
    for path in list(role_files(role)) + [os.path.join(REPO, 'roles', role, 'meta', 'main.yml')]:
        if os.path.isfile(path):
            with open(path, encoding='utf-8') as handle:
                included |= set(re.findall(r'(?:name|role):\s*specdec\.bench\.(\w+)\s*$', handle.read(), flags=re.M))
    return included - {role}


def other_roles_variable(name, role):
    """The role whose variable name is, when it is another role's (longest prefix: train_run_ is not train_)."""
    owners = [other for other in ROLES if name.lstrip('_').startswith(other + '_')]
    owner = max(owners, key=len) if owners else None
    return owner if owner and owner != role else None


@pytest.mark.parametrize('role', ROLES)
def test_a_role_reads_only_its_own_and_the_collection_wide_variables(role):
    allowed_roles = included_roles(role)
    read = []
    for path, expression in role_expressions(role):
        for name in sorted(names_read(expression)):
            owner = other_roles_variable(name, role)
            if owner and owner not in allowed_roles and (role, name) not in ALLOWED:
                read.append('%s reads %s (a variable of %s)' % (path, name, owner))
    assert not read, '\n'.join(read)


def test_the_check_sees_what_it_must():
    """The scan itself: a read in an expression is found, a name in prose, an attribute or a keyword argument is not."""
    assert names_read(" results_dir_root | default('/root/bench_results') ") >= {'results_dir_root', 'default'}
    assert 'campaign_plan' not in names_read(' ansible_facts | specdec.bench.campaign_plan(spec, checkpoints=x) ')
    assert 'checkpoints' not in names_read(' f(spec, checkpoints=x) ')
    assert 'campaign_dir' not in names_read(' __collect_merged.campaign_dir ')
    assert 'train_run_root' in names_read(" hostvars[h].train_run_root | default('/root/train_runs') ")
    assert 'train_run_root' in names_read(" hostvars[h]['train_run_root'] ")
    assert list(expressions({'msg': 'set probe_paths', 'when': 'sglang_unit_dir is defined'})) == ['sglang_unit_dir is defined']
    assert other_roles_variable('sglang_unit_dir', 'bench_stage') == 'sglang_unit'
    assert other_roles_variable('_campaign_id', 'campaign') is None
    assert other_roles_variable('train_monitor_port', 'train_run') == 'train_monitor'
    assert other_roles_variable('specdec_state_dir', 'plan') is None
    assert included_roles('campaign') >= {'plan', 'bench_stage', 'sglang_unit', 'conflicts'}
    assert not included_roles('bench_stage')
