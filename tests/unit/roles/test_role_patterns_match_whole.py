# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The roles' checks of names that end up in unit and env files (environment and secret names, unit names,
cpulists, the monitor's address and GPUs) match the whole value: with `$`, a name with a final newline passed, and
would have ended a line of the file it was written into. Each pattern is read from the role as Jinja reads it and
applied with Ansible's own `match` test."""

from __future__ import annotations

import os
import re

import jinja2
import pytest
import yaml
from ansible.plugins.test.core import match

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def role_var(role, name):
    with open(os.path.join(REPO, 'roles', role, 'vars', 'main.yml'), encoding='utf-8') as handle:
        return yaml.safe_load(handle)[name]


def task_pattern(role, tasks_file, subject):
    """The pattern literal of `<subject> is match('...')` (or select('match', '...')) in a role's tasks file, as the
    string Jinja makes of it."""
    with open(os.path.join(REPO, 'roles', role, 'tasks', tasks_file), encoding='utf-8') as handle:
        text = handle.read()
    found = re.search(re.escape(subject) + r"[^\n]*?match'?,? ?\(?\s*('(?:[^'\\]|\\.)*')", text)
    assert found, (role, tasks_file, subject)
    return jinja2.Environment().from_string('{{ %s }}' % found.group(1)).render()


PATTERNS = {
    'sglang_unit env and secret names': (lambda: role_var('sglang_unit', '_sglang_unit_env_name_regex'), 'HF_TOKEN'),
    'sglang_unit cpulists': (lambda: role_var('sglang_unit', '_sglang_unit_cpulist_regex'), '0-47,96-143'),
    'sglang_unit unit names': (lambda: task_pattern('sglang_unit', 'validate.yml', 'item.unit'), 'specdec-c-tp1.service'),
    'train_run env and secret names': (lambda: role_var('train_run', '_train_run_env_name_regex'), 'WANDB_API_KEY'),
    'train_monitor run unit': (lambda: task_pattern('train_monitor', 'preflight.yml', 'train_monitor_run_unit'),
                               'specdec-train-demo.service'),
    'train_monitor bind address': (lambda: task_pattern('train_monitor', 'preflight.yml', 'train_monitor_bind_address is'),
                                   '127.0.0.1'),
    'train_monitor GPUs': (lambda: task_pattern('train_monitor', 'preflight.yml', 'train_monitor_gpus |'),
                           'GPU-ff5bd000-d5b2-bc39-142e-dcdc7a95938f'),
}


@pytest.mark.parametrize('what', sorted(PATTERNS))
def test_a_name_with_a_final_newline_is_refused(what):
    pattern, good = PATTERNS[what][0](), PATTERNS[what][1]
    assert match(good, pattern), (what, pattern)
    for end in ('\n', '\r\n', ' '):
        assert not match(good + end, pattern), (what, pattern, end)


def test_a_reserved_name_is_still_reserved():
    reserved = role_var('train_run', '_train_run_reserved_env')
    assert all(match(name, reserved) for name in ('HOME', 'CUDA_VISIBLE_DEVICES', 'SPECDEC_RUN_DIR'))
    assert not match('HOMEDIR', reserved)
