# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""train_run where PID 1 is not systemd: its secrets file, rendered by Ansible's template module for the supervisor
backend, read by the real supervisor script, must give the program each secret exactly; and the preflight refuses
what the supervisor cannot carry."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest
import yaml

from test_train_run_templates import ROLE, render

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO, 'plugins', 'module_utils'))
import _supervisor  # noqa: E402  pylint: disable=import-error,wrong-import-position

# One-line values the preflight lets through for the supervisor: quotes, backslashes, $ and = inside, not at the ends.
SECRETS = {
    'HF_TOKEN': 'hf_abc"def\\ghi$HOME`id`',
    'WANDB_API_KEY': 'a=b # not a comment',
    'PLAIN': 'x',
    'SPACED': 'in the middle',
}


def test_supervisor_gives_the_program_each_secret_exactly(tmp_path):
    run_dir = render(tmp_path, templates=('train-secrets.env.j2',), train_run_backend='supervisor',
                     train_run_secrets=SECRETS)
    env_file = str(run_dir / 'train-secrets.env')
    assert os.path.isfile(env_file)
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
    run_dir = render(tmp_path, templates=('train-secrets.env.j2',), train_run_backend='systemd',
                     train_run_secrets={'HF_TOKEN': 'a"b\\c$d'})
    assert 'HF_TOKEN="a\\"b\\\\c\\$d"\n' in (run_dir / 'train-secrets.env').read_text()


def test_the_preflight_refuses_what_the_supervisor_would_strip():
    with open(os.path.join(ROLE, 'vars', 'main.yml'), encoding='utf-8') as handle:
        unsafe = yaml.safe_load(handle)['_train_run_supervisor_unsafe_value']
    for value in (' lead', 'trail ', '"quoted"', 'end"', '\tx'):
        assert re.search(unsafe, value), value
    for value in SECRETS.values():
        assert not re.search(unsafe, value), value


@pytest.mark.parametrize('name', ['environment.yml', 'definition.yml', 'unit.yml', 'start.yml', 'run.yml'])
def test_no_literal_systemd_folder_in_the_tasks(name):
    with open(os.path.join(ROLE, 'tasks', name), encoding='utf-8') as handle:
        assert '/etc/systemd/system' not in handle.read()
