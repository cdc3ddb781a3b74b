# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""probe end to end: one run gives what gpu_facts, unit_facts and host_facts give one by one on the same fake host.

nvidia-smi and systemctl answer from the captured fixtures, /proc from the bookworm-podman captures; Python
interpreters named in python_envs really run.
"""

from __future__ import annotations

import os
import sys

import pytest

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.specdec.bench.plugins.module_utils import _gpu_probe, _host_probe, _unit_probe
from ansible_collections.specdec.bench.plugins.modules import gpu_facts, host_facts, probe, unit_facts
from test_host_facts import podman_files  # pylint: disable=import-error

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures')
SMI = '/usr/bin/nvidia-smi'
GPU_FACTS = {'nvidia_gpus', 'nvidia_driver'}
GPU_KEYS = {'backend', 'dropped_fields'}
UNIT_FACTS = {'systemd_units'}
UNIT_KEYS = {'patterns', 'unmatched_patterns'}
HOST_FACTS = {'specdec_host'}
# What every module result holds beside its own keys (and 'warnings' when there are some).
RESULT_KEYS = {'changed', 'ansible_facts', 'invocation', 'exit_code', 'warning_texts'}


def read(*parts, binary=False):
    with open(os.path.join(FIXTURES, *parts), 'rb' if binary else 'r') as handle:
        return handle.read()


def cgroups(fixture):
    """Each pid's /proc/PID/cgroup of a GPU fixture; the h200 box's holder lives in one file with its notes."""
    if fixture == 'h200-1gpu':
        return {1: '0::/process_api/core\n', 444: read('nvidia-smi', 'h200-1gpu', 'holder_cgroup.txt').split('\n\n')[0]}
    directory = os.path.join(FIXTURES, 'nvidia-smi', fixture, 'cgroup')
    if not os.path.isdir(directory):
        return {}
    return dict((int(name.split('.')[0]), read('nvidia-smi', fixture, 'cgroup', name)) for name in os.listdir(directory))


class Host:
    """A GPU host with systemd: nvidia-smi and systemctl fakes, captured /proc files, a fixed file system size.

    Commands other than nvidia-smi and systemctl (the Python interpreters of python_envs) really run.
    """

    def __init__(self, monkeypatch, tmp_path, smi, systemctl, cgroup_texts=None, nvml=None):
        self.smi = smi
        self.systemctl = systemctl
        self.binaries = {'nvidia-smi': SMI, 'systemctl': systemctl.PATH}
        self.cgroups = dict(cgroup_texts or {})
        self.run_dir = tmp_path / 'run-systemd-system'
        self.run_dir.mkdir()
        self.files = dict(podman_files())
        self.files.update({
            '/proc/1/environ': read('proc', 'bookworm-podman', 'pid1_environ.bin', binary=True),
            '/proc/1/comm': 'systemd\n',
        })
        real_run_command = AnsibleModule.run_command

        def get_bin_path(_module, arg, required=False, opt_dirs=None):  # pylint: disable=unused-argument
            return self.binaries.get(arg)

        def run_command(module, args, **kwargs):
            assert isinstance(args, list), 'commands must be argument lists'
            assert module.run_command_environ_update.get('LC_ALL') == 'C', 'commands must run in the C locale'
            if args[0] == SMI:
                return self.smi.run(args)
            if args[0] == self.systemctl.PATH:
                return self.systemctl.run(args)
            return real_run_command(module, args, **kwargs)

        def read_proc_cgroup(pid):
            if pid not in self.cgroups:
                raise FileNotFoundError('/proc/%d/cgroup' % pid)
            return self.cgroups[pid]

        def statvfs(_path):
            return os.statvfs_result((4096, 4096, 1000000, 600000, 500000, 0, 0, 0, 0, 255))

        monkeypatch.setattr(AnsibleModule, 'get_bin_path', get_bin_path)
        monkeypatch.setattr(AnsibleModule, 'run_command', run_command)
        monkeypatch.setattr(_gpu_probe, 'read_proc_cgroup', read_proc_cgroup)
        monkeypatch.setattr(_gpu_probe, 'load_nvml', lambda: nvml)
        monkeypatch.setattr(_gpu_probe, 'supervisor_service', lambda pid: None)
        monkeypatch.setattr(_unit_probe, 'SYSTEMD_RUN_DIR', str(self.run_dir))
        monkeypatch.setattr(_host_probe, 'SYSTEMD_RUN_DIR', str(self.run_dir))
        monkeypatch.setattr(_host_probe, 'read_file', lambda path, binary=False: self.files.get(path))
        monkeypatch.setattr(_host_probe.os, 'statvfs', statvfs)

    def forget_calls(self):
        self.smi.calls.clear()
        self.systemctl.calls.clear()


@pytest.fixture
def make_host(monkeypatch, tmp_path, fake_smi, fake_systemctl):
    def make(fixture='dgx-h100-8gpu', apps='apps.txt', nvml=None):
        return Host(monkeypatch, tmp_path, fake_smi(fixture, apps=apps), fake_systemctl(), cgroups(fixture), nvml)
    return make


def host_args(tmp_path):
    return {'paths': [str(tmp_path / 'bench_results'), str(tmp_path)], 'python_envs': [sys.executable, str(tmp_path / 'no-venv')],
            'python_packages': ['pytest', 'no-such-distribution-xyz']}


@pytest.mark.parametrize('fixture, apps', [('dgx-h100-8gpu', 'apps.txt'), ('h200-1gpu', 'apps_busy.txt'), ('a100-470', 'apps.txt'), ('h100-mig', 'apps.txt')])
def test_probe_equals_the_three_modules(make_host, run_module, tmp_path, fixture, apps):
    host = make_host(fixture, apps)
    units = ['sglang-*', 'ddtree-qwen', 'nosuch', 'vllm-*']
    probed = run_module(probe, dict(host_args(tmp_path), units=units))
    probe_calls = (list(host.smi.calls), list(host.systemctl.calls))

    host.forget_calls()
    gpu = run_module(gpu_facts)
    units_alone = run_module(unit_facts, {'names': units})
    node = run_module(host_facts, host_args(tmp_path))
    assert (host.smi.calls, host.systemctl.calls) == probe_calls

    assert probed.get('failed') is not True and probed['changed'] is False
    assert probed['ansible_facts'] == dict(gpu['ansible_facts'], **dict(units_alone['ansible_facts'], **node['ansible_facts']))
    assert set(probed) - {'warnings'} == RESULT_KEYS | GPU_KEYS | UNIT_KEYS
    for key in GPU_KEYS:
        assert probed[key] == gpu[key]
    for key in UNIT_KEYS:
        assert probed[key] == units_alone[key]
    assert probed['warning_texts'] == gpu['warning_texts'] + units_alone['warning_texts'] + node['warning_texts']
    # the parts really were gathered, not all empty alike
    facts = probed['ansible_facts']
    assert facts['nvidia_gpus'] and facts['nvidia_driver']['version'] and facts['specdec_host']['systemd'] is True
    assert facts['systemd_units']['ddtree-qwen.service']['active_state'] == 'active'
    assert probed['unmatched_patterns'] == ['vllm-*.service']
    assert facts['specdec_host']['python_envs'][sys.executable]['packages']['pytest'] == pytest.__version__


def test_options_reach_the_gathering(make_host, run_module, fake_pynvml, tmp_path):
    """gpu_backend, topology and unexplained_tolerance_mib mean what backend, topology and the tolerance mean to gpu_facts."""
    host = make_host('h200-1gpu', 'apps_busy.txt', nvml=fake_pynvml())
    args = {'gpu_backend': 'smi', 'topology': False, 'unexplained_tolerance_mib': 8, 'gather': ['gpu']}
    probed = run_module(probe, args)
    alone = run_module(gpu_facts, {'backend': 'smi', 'topology': False, 'unexplained_tolerance_mib': 8})
    assert probed['backend'] == 'smi' and probed['ansible_facts'] == alone['ansible_facts']
    assert 'topo' not in [call[1] for call in host.smi.calls if len(call) > 1]
    assert probed['ansible_facts']['nvidia_gpus'][0]['topology'] is None

    by_nvml = run_module(probe, {'gather': ['gpu']})
    assert by_nvml['backend'] == 'nvml' and by_nvml['ansible_facts'] == run_module(gpu_facts)['ansible_facts']


@pytest.mark.parametrize('gather, facts, keys', [
    (['gpu'], GPU_FACTS, GPU_KEYS),
    (['units'], UNIT_FACTS, UNIT_KEYS),
    (['host'], HOST_FACTS, set()),
    (['gpu', 'host'], GPU_FACTS | HOST_FACTS, GPU_KEYS),
    (['units', 'units'], UNIT_FACTS, UNIT_KEYS),
    ([], set(), set()),
])
def test_gather_subsets(make_host, run_module, tmp_path, gather, facts, keys):
    host = make_host()
    args = dict(host_args(tmp_path), units=['ddtree-qwen'], gather=gather)
    result = run_module(probe, args)
    assert result.get('failed') is not True
    assert set(result['ansible_facts']) == facts
    assert set(result) - {'warnings'} == RESULT_KEYS | keys
    assert bool(host.smi.calls) == ('gpu' in gather)
    assert bool(host.systemctl.calls) == ('units' in gather)


def test_unknown_part_fails(make_host, run_module):
    host = make_host()
    result = run_module(probe, {'gather': ['gpu', 'disks']})
    assert result['failed'] and 'disks' in result['msg'] and host.smi.calls == []


def test_no_units_runs_no_systemctl(make_host, run_module, tmp_path):
    host = make_host()
    host.binaries.pop('systemctl')  # even without systemd: nothing was asked for, so nothing to warn about
    result = run_module(probe, host_args(tmp_path))
    assert result['ansible_facts']['systemd_units'] == {}
    assert result['patterns'] == {} and result['unmatched_patterns'] == []
    assert host.systemctl.calls == []
    assert not [text for text in result['warning_texts'] if 'systemd' in text]


def test_no_systemd(make_host, run_module, tmp_path):
    host = make_host()
    host.run_dir.rmdir()
    host.files['/proc/1/comm'] = 'sim-init\n'
    result = run_module(probe, dict(host_args(tmp_path), units=['ddtree-qwen', 'sglang-*']))
    assert result['exit_code'] == 0 and result['ansible_facts']['systemd_units'] == {}
    assert result['patterns'] == {} and result['unmatched_patterns'] == []
    assert host.systemctl.calls == []
    assert any('systemd is not running' in text for text in result['warning_texts'])
    assert result['ansible_facts']['specdec_host']['systemd'] is False
    assert result['ansible_facts']['specdec_host']['init'] == {'pid1': 'sim-init', 'systemd': False, 'service_backend': 'supervisor'}
    assert len(result['ansible_facts']['nvidia_gpus']) == 8


def test_no_gpu(make_host, run_module, tmp_path):
    host = make_host()
    host.binaries.pop('nvidia-smi')
    result = run_module(probe, dict(host_args(tmp_path), units=['ddtree-qwen']))
    assert result['exit_code'] == 0
    assert result['ansible_facts']['nvidia_gpus'] == [] and result['ansible_facts']['nvidia_driver'] == {'version': None, 'cuda_version': None}
    assert result['backend'] is None and result['dropped_fields'] == [] and host.smi.calls == []
    assert any('nvidia-smi is not installed' in text for text in result['warning_texts'])
    assert result['ansible_facts']['systemd_units']['ddtree-qwen.service']['main_pid'] == 80
    assert 'specdec_host' in result['ansible_facts']


def test_no_usable_gpu_and_no_systemd(make_host, run_module):
    host = make_host()
    host.smi.responses['query-gpu'] = (6, read('nvidia-smi', 'no-devices', 'query_gpu_nh.txt'), '')
    host.binaries.pop('systemctl')
    result = run_module(probe, {'units': ['sglang-*']})
    assert result['exit_code'] == 0
    assert result['ansible_facts']['nvidia_gpus'] == [] and result['ansible_facts']['systemd_units'] == {}
    assert result['backend'] == 'smi' and len(result['warning_texts']) == 2


@pytest.mark.parametrize('args, garbage_topo, match', [
    ({'units': ['--all']}, False, 'not a unit name'),
    ({'gather': ['units', 'gpu'], 'units': ['ddtree-qwen']}, True, 'cannot parse nvidia-smi topo -m output'),
])
def test_a_part_that_fails_fails_the_probe(make_host, run_module, args, garbage_topo, match):
    host = make_host()
    if garbage_topo:
        host.smi.responses['topo'] = (0, read('nvidia-smi', 'garbage', 'topo.txt'), '')
    result = run_module(probe, args)
    assert result['failed'] and match in result['msg']


def test_check_mode_gathers_the_same(make_host, run_module, tmp_path):
    make_host()
    args = dict(host_args(tmp_path), units=['sglang-*'])
    normal = run_module(probe, args)
    checked = run_module(probe, dict(args, _ansible_check_mode=True))
    assert checked['ansible_facts'] == normal['ansible_facts'] and checked['changed'] is False
