# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""train_run's secrets file, as specdec.bench.service writes it from the role's _train_run_secrets (one format, systemd's
EnvironmentFile= quoting, for both backends), read by the real supervisor script, must give the program each secret
exactly; and the preflight refuses what the supervisor cannot carry."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest
import yaml

from test_service_units import role_values
from test_train_run_templates import ROLE

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO, 'plugins', 'module_utils'))
import _supervisor  # noqa: E402  pylint: disable=import-error,wrong-import-position
from ansible_collections.specdec.bench.plugins.module_utils._service import write_env_file  # noqa: E402

# One-line values the preflight lets through for the supervisor: quotes, backslashes, $ and = inside, not at the ends.
SECRETS = {
    'HF_TOKEN': 'hf_abc"def\\ghi$HOME`id`',
    'WANDB_API_KEY': 'a=b # not a comment',
    'PLAIN': 'x',
    'SPACED': 'in the middle',
}


def secrets_file(tmp_path, secrets):
    """The role's secrets option (_train_run_secrets) for these secrets, written by the module's writer."""
    case = {'train_run_name': 'dflash-test', 'train_run_secrets': secrets, 'train_run_secrets_dir': str(tmp_path / 'secrets')}
    option = role_values(tmp_path, 'train_run', [case], '_train_run_secrets')[0]
    assert option['path'] == str(tmp_path / 'secrets' / 'train-dflash-test.env')
    assert write_env_file(option['path'], option['env'], option['comment'])
    assert not write_env_file(option['path'], option['env'], option['comment'])  # unchanged: not written again
    assert os.stat(option['path']).st_mode & 0o777 == 0o600 and os.stat(str(tmp_path / 'secrets')).st_mode & 0o777 == 0o700
    return option['path']


def test_supervisor_gives_the_program_each_secret_exactly(tmp_path):
    env_file = secrets_file(tmp_path, SECRETS)
    folder = str(tmp_path / 'specdec-train-dflash-test.service')
    os.makedirs(folder)
    dump = str(tmp_path / 'env.json')
    with open(os.path.join(folder, 'service.json'), 'w', encoding='utf-8') as handle:
        json.dump({'name': 'specdec-train-dflash-test.service', 'env': {}, 'env_files': ['-' + env_file], 'cwd': '/',
                   'argv': [sys.executable, '-c', 'import json, os, sys; json.dump(dict(os.environ), open(sys.argv[1], "w"))',
                            dump]}, handle)
    subprocess.run([sys.executable, '-c', _supervisor.SUPERVISOR_SCRIPT, folder], check=True, timeout=30)
    deadline = time.monotonic() + 15
    while _supervisor.status(folder)['state'] == 'running' and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _supervisor.status(folder)['state'] == 'exited'
    with open(dump, encoding='utf-8') as handle:
        env = json.load(handle)
    assert {name: env.get(name) for name in SECRETS} == SECRETS


def test_systemd_gets_its_quoting(tmp_path):
    text = open(secrets_file(tmp_path, {'HF_TOKEN': 'a"b\\c$d'}), encoding='utf-8').read()
    assert text.startswith('#\n# Ansible managed\n#\n# Environment of the training run dflash-test ')
    assert text.endswith('HF_TOKEN="a\\"b\\\\c\\$d"\n')


def test_the_preflight_refuses_what_the_supervisor_would_strip():
    with open(os.path.join(ROLE, 'vars', 'main.yml'), encoding='utf-8') as handle:
        unsafe = yaml.safe_load(handle)['_train_run_supervisor_unsafe_value']
    for value in (' lead', 'trail ', '"quoted"', 'end"', '\tx'):
        assert re.search(unsafe, value), value
    for value in SECRETS.values():
        assert not re.search(unsafe, value), value


@pytest.mark.parametrize('name', ['environment.yml', 'definition.yml', 'start.yml', 'run.yml'])
def test_no_literal_systemd_folder_in_the_tasks(name):
    with open(os.path.join(ROLE, 'tasks', name), encoding='utf-8') as handle:
        assert '/etc/systemd/system' not in handle.read()
