# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""train_monitor's command line, built once (vars/main.yml) for the unit and the supervisor's definition: rendered by
specdec.bench.service into the unit, it keeps its words and pairs, and the preflight reads the port back."""

from __future__ import annotations

import re
import shlex

from ansible_collections.specdec.bench.plugins.module_utils._service import check_definition
from ansible_collections.specdec.bench.plugins.module_utils._systemd import render_unit
from test_service_units import role_values


def render(tmp_path, **overrides):
    """The unit and the argv with the role's defaults and vars, plus overrides."""
    variables = {
        'train_monitor_run_name': 'dflash-test',
        'train_monitor_run_dir': '/root/train_runs/dflash-test',
        'train_monitor_run_unit': 'specdec-train-dflash-test.service',
        'train_monitor_backend': 'systemd',
    }
    variables.update(overrides)
    definition = role_values(tmp_path, 'train_monitor', [variables], '_train_monitor_definition')[0]
    unit = render_unit(check_definition(definition)) if variables['train_monitor_backend'] == 'systemd' else None
    return unit, definition['argv']


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
