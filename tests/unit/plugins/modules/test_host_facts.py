# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""host_facts end to end. It only reads, so it runs against this machine; the toolchain is faked where versions matter."""

from __future__ import annotations

import os
import sys

import pytest

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.specdec.bench.plugins.module_utils import _host_probe
from ansible_collections.specdec.bench.plugins.modules import host_facts

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures')


# The /proc and /etc files host_facts reads, captured in a podman container (Debian bookworm); test_probe uses them too.
PODMAN_FILES = {
    '/proc/self/mountinfo': 'mountinfo.txt',
    '/proc/meminfo': 'meminfo.txt',
    '/proc/net/tcp': 'proc_net_tcp.txt',
    '/proc/net/tcp6': 'proc_net_tcp6.txt',
    '/etc/os-release': 'os-release.txt',
    '/proc/1/cgroup': 'pid1_cgroup.txt',
}


def read(*parts):
    with open(os.path.join(FIXTURES, *parts), encoding='utf-8') as handle:
        return handle.read()


def podman_files():
    """{path on the host: its captured text} of PODMAN_FILES."""
    return {path: read('proc', 'bookworm-podman', name) for path, name in PODMAN_FILES.items()}


def test_this_machine(run_module, tmp_path):
    missing = tmp_path / 'bench_results' / 'campaign'
    result = run_module(host_facts, {
        'paths': [str(missing), str(tmp_path)],
        'python_envs': [sys.executable, sys.prefix, str(tmp_path / 'no-venv')],
        'python_packages': ['pytest', 'no-such-distribution-xyz'],
    })
    assert result['changed'] is False and result.get('failed') is not True
    host = result['ansible_facts']['specdec_host']
    assert set(host) == {'disk', 'memory', 'cpu', 'os', 'systemd', 'init', 'container', 'gpu_visibility', 'listening_ports',
                         'toolchain', 'python_envs'}
    with open('/proc/1/comm', encoding='utf-8') as handle:
        assert host['init'] == {'pid1': handle.read().strip(), 'systemd': os.path.isdir('/run/systemd/system'),
                                'service_backend': 'systemd' if os.path.isdir('/run/systemd/system') else 'supervisor'}
    assert host['init']['systemd'] is host['systemd']

    disk = host['disk'][str(missing)]
    assert disk['exists'] is False and disk['checked_path'] == os.path.realpath(str(tmp_path))
    assert disk['total_bytes'] > 0 and 0 <= disk['free_bytes'] <= disk['total_bytes'] and disk['mount_point'].startswith('/')
    assert host['disk'][str(tmp_path)]['exists'] is True

    assert host['memory']['total_bytes'] > host['memory']['available_bytes'] > 0
    assert host['cpu']['count'] >= host['cpu']['usable'] >= 1
    assert host['os']['kernel'] == os.uname().release
    assert set(host['container']) == {'detected', 'type', 'markers'}
    assert set(host['gpu_visibility']['env']) == {'NVIDIA_VISIBLE_DEVICES', 'CUDA_VISIBLE_DEVICES'}
    assert all(set(port) == {'port', 'address', 'family'} for port in host['listening_ports'])
    assert set(host['toolchain']) == {'python3', 'pip', 'uv', 'nvcc'}

    envs = host['python_envs']
    assert envs[sys.executable]['packages'] == {'pytest': pytest.__version__, 'no-such-distribution-xyz': None}
    assert envs[sys.executable]['python_version'] == '%d.%d.%d' % sys.version_info[:3] and envs[sys.executable]['error'] is None
    if sys.prefix != sys.base_prefix:  # a virtualenv directory: its bin/python3 is used
        assert envs[sys.prefix]['python'].startswith(sys.prefix) and envs[sys.prefix]['packages']['pytest'] == pytest.__version__
    missing_env = envs[str(tmp_path / 'no-venv')]
    assert missing_env['python'] is None and 'no Python interpreter' in missing_env['error']
    assert missing_env['packages'] == {'pytest': None, 'no-such-distribution-xyz': None}


def test_check_mode(run_module):
    result = run_module(host_facts, {'_ansible_check_mode': True, 'python_packages': []})
    assert result['changed'] is False and 'specdec_host' in result['ansible_facts']


def test_toolchain_versions(monkeypatch, run_module):
    """Tool paths and --version outputs as on the real H200 box (sysinfo.txt, nvcc.txt); uv prints nothing usable."""
    paths = {'python3': '/opt/torch/.venv/bin/python3', 'pip3': '/opt/torch/.venv/bin/pip3', 'uv': '/usr/local/bin/uv',
             'nvcc': '/usr/local/cuda/bin/nvcc'}
    outputs = {
        '/opt/torch/.venv/bin/python3': (0, 'Python 3.12.3\n', ''),
        '/opt/torch/.venv/bin/pip3': (0, 'pip 24.0 from /opt/torch/.venv/lib/python3.12/site-packages/pip (python 3.12)\n', ''),
        '/usr/local/bin/uv': (2, '', 'error: unexpected argument\n'),
        '/usr/local/cuda/bin/nvcc': (0, read('nvidia-smi', 'h200-1gpu', 'nvcc.txt'), ''),
    }
    seen_dirs = {}

    def get_bin_path(_module, arg, required=False, opt_dirs=None):  # pylint: disable=unused-argument
        seen_dirs[arg] = opt_dirs
        return paths.get(arg)

    def run_command(module, args, **_kwargs):
        assert module.run_command_environ_update.get('LC_ALL') == 'C'
        assert isinstance(args, list) and args[1:] == ['--version']
        return outputs[args[0]]

    monkeypatch.setattr(AnsibleModule, 'get_bin_path', get_bin_path)
    monkeypatch.setattr(AnsibleModule, 'run_command', run_command)
    result = run_module(host_facts, {'python_packages': []})
    assert result['ansible_facts']['specdec_host']['toolchain'] == {
        'python3': {'path': '/opt/torch/.venv/bin/python3', 'version': '3.12.3'},
        'pip': {'path': '/opt/torch/.venv/bin/pip3', 'version': '24.0'},
        'uv': {'path': '/usr/local/bin/uv', 'version': None},
        'nvcc': {'path': '/usr/local/cuda/bin/nvcc', 'version': '13.0.88'},
    }
    assert '/usr/local/cuda/bin' in seen_dirs['nvcc']
    assert [text for text in result['warning_texts'] if 'uv' in text]


def test_missing_tools_are_null(monkeypatch, run_module):
    monkeypatch.setattr(AnsibleModule, 'get_bin_path', lambda _module, arg, required=False, opt_dirs=None: None)
    result = run_module(host_facts, {'python_packages': []})
    assert all(tool == {'path': None, 'version': None} for tool in result['ansible_facts']['specdec_host']['toolchain'].values())
    assert result['warning_texts'] == []


def test_python_env_that_fails(monkeypatch, run_module, tmp_path):
    python = tmp_path / 'venv' / 'bin' / 'python3'
    python.parent.mkdir(parents=True)
    python.write_text('#!/bin/sh\necho "ModuleNotFoundError: No module named json" >&2\nexit 1\n')
    python.chmod(0o755)
    garbage = tmp_path / 'garbage-python'
    garbage.write_text('#!/bin/sh\necho "not json"\n')
    garbage.chmod(0o755)
    monkeypatch.setattr(AnsibleModule, 'get_bin_path', lambda _module, arg, required=False, opt_dirs=None: None)
    result = run_module(host_facts, {'python_envs': [str(tmp_path / 'venv'), str(garbage)], 'python_packages': ['torch']})
    envs = result['ansible_facts']['specdec_host']['python_envs']
    assert envs[str(tmp_path / 'venv')]['python'] == str(python)
    assert envs[str(tmp_path / 'venv')]['error'] == 'exit code 1: ModuleNotFoundError: No module named json'
    assert envs[str(garbage)]['packages'] == {'torch': None} and 'no JSON' in envs[str(garbage)]['error']


def test_proc_files_replayed(monkeypatch, run_module):
    """/proc and /etc read from the real podman captures: ports, memory, OS, container markers, GPU visibility of PID 1."""
    captured = podman_files()
    with open(os.path.join(FIXTURES, 'proc', 'bookworm-podman', 'pid1_environ.bin'), 'rb') as handle:
        environ = handle.read() + b'NVIDIA_VISIBLE_DEVICES=0,1\x00'

    def read_file(path, binary=False):
        if path == '/proc/1/environ':
            return environ
        return captured.get(path)

    real_exists = os.path.exists
    monkeypatch.setattr(_host_probe, 'read_file', read_file)
    monkeypatch.setattr(_host_probe.os.path, 'exists', lambda path: path == '/run/.containerenv' or (
        path not in ('/.dockerenv', '/dev/lxd', '/var/run/secrets/kubernetes.io') and real_exists(path)))
    monkeypatch.setattr(AnsibleModule, 'get_bin_path', lambda _module, arg, required=False, opt_dirs=None: None)
    monkeypatch.delenv('KUBERNETES_SERVICE_HOST', raising=False)
    monkeypatch.delenv('container', raising=False)
    monkeypatch.setenv('CUDA_VISIBLE_DEVICES', 'GPU-9e1c631b-fafe-f96d-935d-1ff4b8a5bf54')
    monkeypatch.delenv('NVIDIA_VISIBLE_DEVICES', raising=False)
    host = run_module(host_facts, {'python_packages': []})['ansible_facts']['specdec_host']
    assert [port['port'] for port in host['listening_ports']] == [8080, 30000, 30001, 30002]
    assert host['memory'] == {'total_bytes': 24683584 * 1024, 'available_bytes': 24226996 * 1024, 'swap_total_bytes': 0}
    assert (host['os']['id'], host['os']['version_id'], host['os']['version_codename']) == ('debian', '12', 'bookworm')
    assert host['container']['type'] == 'podman' and '/run/.containerenv' in host['container']['markers']
    assert host['gpu_visibility'] == {
        'env': {'NVIDIA_VISIBLE_DEVICES': None, 'CUDA_VISIBLE_DEVICES': 'GPU-9e1c631b-fafe-f96d-935d-1ff4b8a5bf54'},
        'pid1': {'NVIDIA_VISIBLE_DEVICES': '0,1', 'CUDA_VISIBLE_DEVICES': None},
    }


@pytest.mark.parametrize('path, text, match', [
    ('/proc/meminfo', 'MemTotal: lots\n', '/proc/meminfo'),
    ('/proc/net/tcp', 'header\ngarbage\n', '/proc/net/tcp'),
    ('/proc/self/mountinfo', '/dev/vda / ext4 rw 0 0\n', 'mountinfo'),
])
def test_unparseable_proc_fails(monkeypatch, run_module, path, text, match):
    real = _host_probe.read_file
    monkeypatch.setattr(_host_probe, 'read_file', lambda name, binary=False: text if name == path else real(name, binary))
    result = run_module(host_facts, {'python_packages': []})
    assert result['failed'] and match in result['msg']


@pytest.mark.parametrize('comm, systemd, expected', [
    ('systemd\n', True, {'pid1': 'systemd', 'systemd': True, 'service_backend': 'systemd'}),
    # the real A100 box: a Docker container whose entrypoint is PID 1; the simulated one runs sim-init
    ('sim-init\n', False, {'pid1': 'sim-init', 'systemd': False, 'service_backend': 'supervisor'}),
    ('tini\n', False, {'pid1': 'tini', 'systemd': False, 'service_backend': 'supervisor'}),
    # systemd is the running init even when PID 1 cannot be read (hidepid) or is named otherwise (init)
    (None, True, {'pid1': None, 'systemd': True, 'service_backend': 'systemd'}),
    ('', False, {'pid1': None, 'systemd': False, 'service_backend': 'supervisor'}),
])
def test_init_facts(comm, systemd, expected):
    assert _host_probe.init_facts(comm, systemd) == expected


def test_a_host_whose_pid1_is_not_systemd(monkeypatch, run_module, tmp_path):
    """As on the A100 box: PID 1 is the container's entrypoint and /run/systemd/system does not exist."""
    real = _host_probe.read_file
    monkeypatch.setattr(_host_probe, 'read_file', lambda path, binary=False: 'sleep\n' if path == '/proc/1/comm' else real(path, binary))
    monkeypatch.setattr(_host_probe, 'SYSTEMD_RUN_DIR', str(tmp_path / 'run' / 'systemd' / 'system'))
    host = run_module(host_facts, {'python_packages': []})['ansible_facts']['specdec_host']
    assert host['init'] == {'pid1': 'sleep', 'systemd': False, 'service_backend': 'supervisor'}
    assert host['systemd'] is False
    (tmp_path / 'run' / 'systemd' / 'system').mkdir(parents=True)
    host = run_module(host_facts, {'python_packages': []})['ansible_facts']['specdec_host']
    assert host['init'] == {'pid1': 'sleep', 'systemd': True, 'service_backend': 'systemd'}
