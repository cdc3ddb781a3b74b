# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""train_monitor's command line, built once (vars/main.yml) for the unit and the supervisor's definition: rendered by
Ansible's own template module into the unit, it keeps its words and pairs, and the preflight reads the port back."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROLE = os.path.join(REPO, 'roles', 'train_monitor')


def render(tmp_path, **overrides):
    """The unit and the argv (as JSON) with the role's defaults and vars, plus overrides."""
    variables = {
        'train_monitor_run_name': 'dflash-test',
        'train_monitor_run_dir': '/root/train_runs/dflash-test',
        'train_monitor_run_unit': 'specdec-train-dflash-test.service',
        'train_monitor_backend': 'systemd',
        'ansible_python_interpreter': sys.executable,
    }
    variables.update(overrides)
    playbook = [{
        'hosts': 'localhost', 'gather_facts': False, 'connection': 'local',
        'vars_files': [os.path.join(ROLE, 'defaults', 'main.yml'), os.path.join(ROLE, 'vars', 'main.yml')],
        'tasks': [
            {'ansible.builtin.template': {'src': os.path.join(ROLE, 'templates', 'specdec-train-monitor.service.j2'),
                                          'dest': str(tmp_path / 'monitor.service'), 'mode': '0644'}},
            {'ansible.builtin.copy': {'content': '{{ _train_monitor_argv | to_json }}', 'dest': str(tmp_path / 'argv.json'),
                                      'mode': '0644'}},
        ],
    }]
    (tmp_path / 'render.yml').write_text(yaml.safe_dump(playbook))
    (tmp_path / 'vars.yml').write_text(yaml.safe_dump(variables))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_LOCALHOST_WARNING='false',
               ANSIBLE_INVENTORY_UNPARSED_WARNING='false')
    result = subprocess.run([os.path.join(REPO, '.venv', 'bin', 'ansible-playbook'), '-i', 'localhost,', '-e',
                             '@%s' % (tmp_path / 'vars.yml'), str(tmp_path / 'render.yml')],
                            capture_output=True, text=True, cwd=REPO, env=env, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return (tmp_path / 'monitor.service').read_text(), yaml.safe_load((tmp_path / 'argv.json').read_text())


def test_the_unit_runs_the_same_command_line_as_the_definition(tmp_path):
    unit, argv = render(tmp_path, train_monitor_allowed_hosts=['monitor.example', 'box.lan'])
    assert argv[:2] == ['/usr/bin/python3', '/opt/specdec/train-monitor/specdec_train_monitor.py']
    pairs = dict(zip(argv[2::2], argv[3::2]))
    assert len(argv) % 2 == 0 and pairs['--port'] == '8080' and pairs['--backend'] == 'systemd'
    assert pairs['--state-dir'] == '/var/lib/specdec/services' and pairs['--unit'] == 'specdec-train-dflash-test.service'
    assert argv[-4:] == ['--allowed-host', 'monitor.example', '--allowed-host', 'box.lan']
    exec_start = re.search(r'^ExecStart=(.*?)(?<!\\)$', unit.replace('\\\n', ' '), re.M).group(1)
    assert shlex.split(exec_start) == argv
    # what the preflight reads back: the quoted words of the unit, the one after '--port'
    words = re.findall("'([^']*)'", unit)
    assert words[words.index('--port') + 1] == '8080'
    assert "'--port' '8080'" in unit


def test_the_backend_reaches_the_service(tmp_path):
    _unit, argv = render(tmp_path, train_monitor_backend='supervisor', train_monitor_service_dir='/srv/services')
    pairs = dict(zip(argv[2::2], argv[3::2]))
    assert pairs['--backend'] == 'supervisor' and pairs['--state-dir'] == '/srv/services'
