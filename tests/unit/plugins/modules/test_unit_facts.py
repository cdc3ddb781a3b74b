# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""unit_facts end to end: systemctl answers from real systemd 252 captures (tests/fixtures/systemd/bookworm-252)."""

from __future__ import annotations

import os

import pytest

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.specdec.bench.plugins.module_utils import _unit_probe
from ansible_collections.specdec.bench.plugins.modules import unit_facts

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures', 'systemd', 'bookworm-252')
SYSTEMCTL = '/usr/bin/systemctl'
PROPERTIES = '--property=Id,Description,LoadState,ActiveState,SubState,MainPID,UnitFileState,FragmentPath,Result,NRestarts'


def read(name):
    with open(os.path.join(FIXTURES, name), encoding='utf-8') as handle:
        return handle.read()


@pytest.fixture
def host(monkeypatch, tmp_path, fake_systemctl):
    """A host with systemd running, whose systemctl is a FakeSystemctl (host.systemctl)."""
    class Host:
        systemctl = fake_systemctl()
        binaries = {'systemctl': SYSTEMCTL}

    def run_command(module, args, **_kwargs):
        assert module.run_command_environ_update.get('LC_ALL') == 'C', 'systemctl must run in the C locale'
        return Host.systemctl.run(args)

    monkeypatch.setattr(AnsibleModule, 'get_bin_path', lambda _module, arg, required=False, opt_dirs=None: Host.binaries.get(arg))
    monkeypatch.setattr(AnsibleModule, 'run_command', run_command)
    monkeypatch.setattr(_unit_probe, 'SYSTEMD_RUN_DIR', str(tmp_path))
    return Host


def test_names_need_one_show_call(host, run_module):
    result = run_module(unit_facts, {'names': ['ddtree-qwen', 'nosuch', 'sglang-ddtree-tree.service', 'sglang-dflash-smoke', 'ddtree-qwen.service']})
    units = result['ansible_facts']['systemd_units']
    assert host.systemctl.calls == [[SYSTEMCTL, 'show', PROPERTIES, '--', 'ddtree-qwen.service', 'nosuch.service',
                                     'sglang-ddtree-tree.service', 'sglang-dflash-smoke.service']]
    assert units['ddtree-qwen.service'] == {
        'id': 'ddtree-qwen.service', 'description': 'DDTree Qwen3.6-27B server', 'load_state': 'loaded', 'active_state': 'active',
        'sub_state': 'running', 'main_pid': 80, 'unit_file_state': 'enabled', 'fragment_path': '/etc/systemd/system/ddtree-qwen.service',
        'result': 'success', 'n_restarts': 0}
    # the three states systemctl is-active cannot tell apart
    states = dict((name, (unit['load_state'], unit['active_state'], unit['sub_state'])) for name, unit in units.items())
    assert states['nosuch.service'] == ('not-found', 'inactive', 'dead')
    assert states['sglang-dflash-smoke.service'] == ('loaded', 'inactive', 'dead')
    assert states['sglang-ddtree-tree.service'] == ('loaded', 'failed', 'failed')
    assert result['changed'] is False and result['patterns'] == {} and result['unmatched_patterns'] == []


def test_patterns_expand_over_loaded_units_and_unit_files(host, run_module):
    result = run_module(unit_facts, {'names': ['sglang-*', 'ddtree-qwen']})
    assert [call[1] for call in host.systemctl.calls] == ['list-units', 'list-unit-files', 'show']
    assert host.systemctl.calls[0][-2:] == ['--', 'sglang-*.service']
    matched = ['sglang-ddtree-tree.service', 'sglang-dflash-smoke.service', 'sglang-masked.service', 'sglang-missing-worker.service',
               'sglang-router.service', 'sglang-stage@tp1-ar.service']
    assert result['patterns'] == {'sglang-*.service': matched}
    units = result['ansible_facts']['systemd_units']
    assert sorted(units) == sorted(['ddtree-qwen.service'] + matched)
    assert 'sglang-stage@.service' not in units  # a template has no state of its own
    # stopped and unloaded: only list-unit-files knows it
    assert units['sglang-dflash-smoke.service']['unit_file_state'] == 'static'
    assert units['sglang-missing-worker.service']['load_state'] == 'not-found'
    assert units['sglang-masked.service']['load_state'] == 'masked'
    assert units['sglang-stage@tp1-ar.service']['main_pid'] == 85


def test_pattern_matching_nothing(host, run_module):
    result = run_module(unit_facts, {'names': ['vllm-*']})
    assert result['ansible_facts']['systemd_units'] == {}
    assert result['unmatched_patterns'] == ['vllm-*.service'] and result['patterns'] == {'vllm-*.service': []}
    assert [call[1] for call in host.systemctl.calls] == ['list-units', 'list-unit-files']


@pytest.mark.parametrize('binary, run_dir', [(None, True), (SYSTEMCTL, False)])
def test_no_systemd_is_a_warning(host, run_module, monkeypatch, tmp_path, binary, run_dir):
    host.binaries = {'systemctl': binary} if binary else {}
    if not run_dir:
        monkeypatch.setattr(_unit_probe, 'SYSTEMD_RUN_DIR', str(tmp_path / 'missing'))
    result = run_module(unit_facts, {'names': ['ddtree-qwen']})
    assert result['exit_code'] == 0 and result['ansible_facts'] == {'systemd_units': {}}
    assert host.systemctl.calls == []
    assert any('systemd is not running' in text for text in result['warning_texts'])


@pytest.mark.parametrize('name', ['--all', 'two words', ''])
def test_invalid_name_fails(host, run_module, name):
    result = run_module(unit_facts, {'names': ['ddtree-qwen', name]})
    assert result['failed'] and 'not a unit name' in result['msg'] and host.systemctl.calls == []


@pytest.mark.parametrize('verb, response, match', [
    ('show', (1, '', 'Failed to connect to bus: No such file or directory\n'), 'systemctl show failed with exit code 1'),
    ('show', (0, 'Id=ddtree-qwen.service\nthis is not a property\n', 'cannot parse systemctl show output'), 'cannot parse'),
    ('show', (0, '', ''), '0 blocks for 1 units'),
    ('list-units', (1, '', 'Failed to list units: Access denied\n'), 'systemctl list-units failed'),
    ('list-unit-files', (0, 'garbage without a unit\n', ''), 'cannot parse systemctl list-unit-files output'),
])
def test_systemctl_failures_fail(host, run_module, verb, response, match):
    host.systemctl.responses[verb] = response
    names = ['sglang-*'] if verb.startswith('list') else ['ddtree-qwen']
    result = run_module(unit_facts, {'names': names})
    assert result['failed'] and match in result['msg']


def test_show_with_template_failure_text_is_reported(host, run_module):
    host.systemctl.responses['show'] = (1, read('show_template.txt'), read('show_template.stderr'))
    result = run_module(unit_facts, {'names': ['sglang-stage@.service']})
    assert result['failed'] and 'neither a valid invocation ID nor unit name' in result['msg']


def test_check_mode(host, run_module):
    result = run_module(unit_facts, {'names': ['ddtree-qwen'], '_ansible_check_mode': True})
    assert result['changed'] is False and result['ansible_facts']['systemd_units']['ddtree-qwen.service']['main_pid'] == 80
