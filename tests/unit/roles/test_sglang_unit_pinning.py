# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""sglang_unit's stage unit, rendered by specdec.bench.service from the definition the role builds with its defaults
and vars: a pinned stage gets CPUAffinity=, NUMAPolicy=bind and NUMAMask=; an unpinned one, or sglang_unit_pin false,
none of them."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from ansible_collections.specdec.bench.plugins.module_utils._service import check_definition
from ansible_collections.specdec.bench.plugins.module_utils._systemd import render_unit
from test_service_units import role_values

PIN_KEYS = ('CPUAffinity', 'NUMAPolicy', 'NUMAMask')


def stage(stage_id, cpu_affinity=None, numa_nodes=None, pinned_keys=True):
    item = {
        'id': stage_id, 'campaign': 'pin', 'unit': 'specdec-pin-%s.service' % stage_id, 'description': 'pin %s' % stage_id,
        'feasible': True, 'gpus': ['GPU-1'], 'env': {'CUDA_VISIBLE_DEVICES': 'GPU-1'},
        'argv': ['--model-path=/models/m', '--host=127.0.0.1', '--port=31000'],
    }
    if pinned_keys:  # a stage planned before pinning has no such keys
        item.update(cpu_affinity=cpu_affinity, numa_nodes=numa_nodes, pin_note=None if cpu_affinity else 'why not')
    return item


def render(tmp_path, stages, **overrides):
    """Each stage's unit text, by stage id."""
    variables = {'sglang_unit_campaign': 'pin'}
    variables.update(overrides)
    definitions = role_values(tmp_path, 'sglang_unit', [dict(variables, item=item) for item in stages], '_sglang_unit_definition')
    return dict((item['id'], render_unit(check_definition(definition))) for item, definition in zip(stages, definitions))


def service_keys(text):
    """The [Service] section's key=value lines (comments left out)."""
    section = text.split('[Service]', 1)[1]
    return [tuple(line.split('=', 1)) for line in section.splitlines() if re.match(r'^[A-Za-z]+=', line)]


@pytest.fixture(name='units', scope='module')
def units_fixture(tmp_path_factory):
    return render(tmp_path_factory.mktemp('units'), [
        stage('node0', '0-47,96-143', '0'), stage('both', '0-191', '0-1'), stage('cpus-only', '0-1', None),
        stage('unpinned'), stage('before', pinned_keys=False)])


def test_a_pinned_stage_gets_its_cpus_and_node(units):
    keys = service_keys(units['node0'])
    assert ('CPUAffinity', '0-47,96-143') in keys and ('NUMAPolicy', 'bind') in keys and ('NUMAMask', '0') in keys
    # pinned before the command runs: the lines sit with the environment, ahead of ExecStart
    names = [key for key, _value in keys]
    assert names.index('CPUAffinity') < names.index('ExecStart') and names.index('NUMAMask') < names.index('ExecStart')


def test_a_stage_across_two_nodes_binds_both(units):
    keys = service_keys(units['both'])
    assert ('CPUAffinity', '0-191') in keys and ('NUMAMask', '0-1') in keys


def test_cpus_without_a_node_bind_no_memory(units):
    keys = dict(service_keys(units['cpus-only']))
    assert keys['CPUAffinity'] == '0-1' and 'NUMAPolicy' not in keys and 'NUMAMask' not in keys


@pytest.mark.parametrize('stage_id', ['unpinned', 'before'])
def test_an_unpinned_stage_has_no_pinning(units, stage_id):
    keys = dict(service_keys(units[stage_id]))
    assert not set(PIN_KEYS) & set(keys) and 'ExecStart' in keys


def test_sglang_unit_pin_false_pins_nothing(tmp_path):
    text = render(tmp_path, [stage('node0', '0-47,96-143', '0')], sglang_unit_pin=False)['node0']
    assert not set(PIN_KEYS) & set(dict(service_keys(text)))


@pytest.mark.skipif(shutil.which('systemd-analyze') is None, reason='no systemd-analyze here')
def test_systemd_reads_the_pinning_lines(units, tmp_path):
    """systemd parses CPUAffinity= and NUMAMask= (an unknown or malformed value would be a warning naming the line)."""
    path = tmp_path / 'specdec-pin-both.service'
    path.write_text(units['both'].replace("'/usr/bin/python3'", "'%s'" % sys.executable))
    result = subprocess.run(['systemd-analyze', 'verify', str(path)], capture_output=True, text=True, timeout=60, check=False)
    output = result.stdout + result.stderr
    assert not re.search(r'CPUAffinity|NUMAPolicy|NUMAMask', output), output
