# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.specdec.bench.plugins.module_utils import _proc as proc

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures')
PODMAN = ('proc', 'bookworm-podman')


def read(*parts, **kwargs):
    mode = 'rb' if kwargs.get('binary') else 'r'
    with open(os.path.join(FIXTURES, *parts), mode) as handle:
        return handle.read()


def sysinfo_section(number):
    """One '---' separated section of the real H200 sysinfo.txt."""
    return read('nvidia-smi', 'h200-1gpu', 'sysinfo.txt').split('---\n')[number]


def test_parse_meminfo_real():
    values = proc.parse_meminfo(read(*PODMAN, 'meminfo.txt'))
    assert values['MemTotal'] == 24683584 * 1024
    assert values['MemAvailable'] == 24226996 * 1024
    assert values['HugePages_Total'] == 0  # a count, not kB


@pytest.mark.parametrize('text', ['', 'MemTotal: lots kB\n', 'MemFree: 1 kB\n'])
def test_parse_meminfo_garbage(text):
    with pytest.raises(ValueError):
        proc.parse_meminfo(text)


def test_parse_os_release_real():
    ubuntu = proc.parse_os_release(sysinfo_section(1))
    assert (ubuntu['ID'], ubuntu['VERSION_ID'], ubuntu['PRETTY_NAME'], ubuntu['VERSION_CODENAME']) == ('ubuntu', '24.04', 'Ubuntu 24.04.3 LTS', 'noble')
    debian = proc.parse_os_release(read(*PODMAN, 'os-release.txt'))
    assert (debian['ID'], debian['VERSION_ID'], debian['NAME']) == ('debian', '12', 'Debian GNU/Linux')


def test_parse_os_release_quoting():
    values = proc.parse_os_release('# comment\nNAME=\'Rocky Linux\'\nID="rocky"\nVARIANT="a \\"b\\""\nBROKEN="unterminated\n')
    assert values == {'NAME': 'Rocky Linux', 'ID': 'rocky', 'VARIANT': 'a "b"', 'BROKEN': 'unterminated'}


def test_parse_mountinfo_real_and_find_mount():
    mounts = proc.parse_mountinfo(read(*PODMAN, 'mountinfo.txt'))
    assert mounts[0]['mount_point'] == '/' and mounts[0]['fstype'] == 'overlay'
    assert proc.find_mount('/root/bench_results', mounts)['fstype'] == 'overlay'
    assert proc.find_mount('/tmp/x', mounts)['mount_point'] == '/tmp'
    assert proc.find_mount('/tmpfoo', mounts)['mount_point'] == '/'
    hosts = proc.find_mount('/etc/hosts', mounts)
    assert (hosts['fstype'], hosts['source']) == ('ext4', '/dev/vda')
    assert proc.find_mount('/sys/fs/cgroup/systemd', mounts)['fstype'] == 'cgroup'


def test_parse_mountinfo_escapes_and_stacking():
    text = ('22 1 8:1 / / rw - ext4 /dev/sda1 rw\n'
            '40 22 8:2 / /data/model\\040dir rw shared:5 - xfs /dev/sdb1 rw\n'
            '41 40 0:50 / /data/model\\040dir rw - tmpfs tmpfs rw\n')
    mounts = proc.parse_mountinfo(text)
    assert mounts[1]['mount_point'] == '/data/model dir'
    assert proc.find_mount('/data/model dir/Qwen', mounts)['fstype'] == 'tmpfs'  # the last mount on a point hides the earlier


def test_parse_mountinfo_garbage():
    with pytest.raises(ValueError):
        proc.parse_mountinfo('/dev/vda / ext4 rw 0 0\n')  # /proc/mounts, not mountinfo


@pytest.mark.parametrize('value, expected', [
    ('0100007F:1F90', ('127.0.0.1', 8080)),
    ('00000000:7531', ('0.0.0.0', 30001)),
    ('00000000000000000000000000000000:7530', ('::', 30000)),
    ('00000000000000000000000001000000:7532', ('::1', 30002)),
    ('0000000000000000FFFF00000100007F:1F90', ('::ffff:127.0.0.1', 8080)),
    ('B80D0120000000000000000001000000:0016', ('2001:db8::1', 22)),
])
def test_decode_proc_net_address(value, expected):
    assert proc.decode_proc_net_address(value) == expected


def test_listening_ports_real():
    entries = proc.parse_proc_net_tcp(read(*PODMAN, 'proc_net_tcp.txt'), 'ipv4')
    entries += proc.parse_proc_net_tcp(read(*PODMAN, 'proc_net_tcp6.txt'), 'ipv6')
    # the two ESTABLISHED rows (state 01) are not listening
    assert proc.listening_ports(entries) == [
        {'port': 8080, 'address': '127.0.0.1', 'family': 'ipv4'},
        {'port': 30000, 'address': '::', 'family': 'ipv6'},
        {'port': 30001, 'address': '0.0.0.0', 'family': 'ipv4'},
        {'port': 30002, 'address': '::1', 'family': 'ipv6'},
    ]


def test_listening_ports_deduplicates_reuseport():
    line = '   %d: 00000000:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1%d 1 0 100 0 0 10 0\n'
    text = '  sl  local_address rem_address   st\n' + line % (0, 1) + line % (1, 2)
    assert proc.listening_ports(proc.parse_proc_net_tcp(text, 'ipv4')) == [{'port': 30000, 'address': '0.0.0.0', 'family': 'ipv4'}]


@pytest.mark.parametrize('text', ['header\nnot a socket line\n', 'header\n   0: 0100007F 00000000:0000 0A a b c d e f g\n'])
def test_parse_proc_net_tcp_garbage(text):
    with pytest.raises(ValueError):
        proc.parse_proc_net_tcp(text, 'ipv4')


def test_parse_proc_cgroup_and_systemd_path():
    entries = proc.parse_proc_cgroup(read('systemd', 'bookworm-252', 'cgroup_ddtree_qwen.txt'))
    assert entries[-1] == ('0', [], '/libpod_parent/libpod-0e3a9441acb5e5c8feb7a042b2c249ecb7ac79b1de52653e3dcb375939de1561')
    assert proc.systemd_cgroup_path(entries).endswith('/system.slice/ddtree-qwen.service')
    assert proc.systemd_cgroup_path(proc.parse_proc_cgroup('0::/system.slice/a.service\n')) == '/system.slice/a.service'
    assert proc.systemd_cgroup_path(proc.parse_proc_cgroup('4:memory:/x\n')) is None
    with pytest.raises(ValueError):
        proc.parse_proc_cgroup('garbage\n')


def test_parse_environ_real():
    environ = proc.parse_environ(read(*PODMAN, 'pid1_environ.bin', binary=True))
    assert environ['container'] == 'podman'
    assert environ['HOSTNAME'] == '0e3a9441acb5'


def test_detect_container_real_podman():
    result = proc.detect_container({'/run/.containerenv'}, proc.parse_environ(read(*PODMAN, 'pid1_environ.bin', binary=True)), {},
                                   read(*PODMAN, 'pid1_cgroup.txt'))
    assert result['detected'] and result['type'] == 'podman'
    assert result['markers'][:2] == ['/run/.containerenv', '/proc/1/environ:container=podman']
    assert [marker for marker in result['markers'] if marker.startswith('/proc/1/cgroup:')] == [
        '/proc/1/cgroup:/libpod_parent/libpod-0e3a9441acb5e5c8feb7a042b2c249ecb7ac79b1de52653e3dcb375939de1561/init.scope']


def test_detect_container_real_h200_docker():
    """The real H200 container: /.dockerenv, a /proc/1/cgroup that names no runtime, NVIDIA_VISIBLE_DEVICES=0."""
    environ = dict(line.split('=', 1) for line in sysinfo_section(8).splitlines() if '=' in line and not line.startswith('sh:'))
    result = proc.detect_container({'/.dockerenv'}, environ, {}, sysinfo_section(5))
    assert result == {'detected': True, 'type': 'docker', 'markers': ['/.dockerenv']}
    assert proc.gpu_visibility(environ) == {'NVIDIA_VISIBLE_DEVICES': '0', 'CUDA_VISIBLE_DEVICES': None}


@pytest.mark.parametrize('files, pid1_env, env, cgroup, kind, marker', [
    (set(), {}, {}, '0::/init.scope\n', None, None),
    ({'/dev/lxd'}, {}, {}, '', 'lxc', '/dev/lxd'),
    (set(), {'container': 'lxc'}, {}, '', 'lxc', '/proc/1/environ:container=lxc'),
    (set(), {'container': 'lxc-libvirt'}, {}, '', 'lxc', '/proc/1/environ:container=lxc-libvirt'),
    (set(), {'container': 'systemd-nspawn'}, {}, '0::/\n', 'systemd-nspawn', '/proc/1/environ:container=systemd-nspawn'),
    (set(), None, {'KUBERNETES_SERVICE_HOST': '10.96.0.1'}, '', 'kubernetes', 'env:KUBERNETES_SERVICE_HOST'),
    ({'/.dockerenv', '/var/run/secrets/kubernetes.io'}, {}, {}, '', 'kubernetes', '/var/run/secrets/kubernetes.io'),
    (set(), {}, {}, '12:memory:/docker/8e1f4c2b9d7a\n0::/\n', 'docker', '/proc/1/cgroup:/docker/8e1f4c2b9d7a'),
    (set(), {}, {}, '0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-ab.scope\n', 'kubernetes',
     '/proc/1/cgroup:/kubepods.slice/kubepods-pod1.slice/cri-containerd-ab.scope'),
    (set(), {}, {}, '0::/lxc.payload.gpu1/init.scope\n', 'lxc', '/proc/1/cgroup:/lxc.payload.gpu1/init.scope'),
])
def test_detect_container_markers(files, pid1_env, env, cgroup, kind, marker):
    result = proc.detect_container(files, pid1_env, env, cgroup)
    assert result['type'] == kind
    assert result['detected'] is (marker is not None)
    if marker:
        assert marker in result['markers']


def test_gpu_visibility_unreadable_environment():
    assert proc.gpu_visibility(None) is None


@pytest.mark.parametrize('tool, text, expected', [
    ('python3', read(*PODMAN, 'python3_version.txt'), '3.11.2'),
    ('python3', 'Python 3.12.3\n', '3.12.3'),
    ('pip', read(*PODMAN, 'pip_version.txt'), '23.2.1'),
    ('pip', 'pip 24.0 from /usr/lib/python3/dist-packages/pip (python 3.12)\n', '24.0'),
    ('uv', 'uv 0.9.5 (d5f39331a 2025-10-21)\n', '0.9.5'),
    ('uv', 'uv 0.1.44\n', '0.1.44'),
    ('nvcc', read(*PODMAN, 'nvcc_version.txt'), '13.0.88'),
    ('nvcc', read('nvidia-smi', 'h200-1gpu', 'nvcc.txt'), '13.0.88'),
    ('nvcc', 'Cuda compilation tools, release 12.4, V12.4.131\n', '12.4.131'),
    ('nvcc', 'bash: nvcc: command not found\n', None),
    ('uv', 'error: unexpected argument\n', None),
])
def test_parse_tool_version(tool, text, expected):
    assert proc.parse_tool_version(tool, text) == expected


def test_package_versions_script_runs_here():
    """The probe script run by a real interpreter: installed distributions have versions, missing ones are null."""
    out = subprocess.run([sys.executable, '-c', proc.PACKAGE_VERSIONS_SCRIPT, 'pytest', 'no-such-distribution-xyz'],
                         check=True, capture_output=True, text=True, cwd='/').stdout
    data = proc.parse_package_versions(out)
    assert data['packages']['pytest'] == pytest.__version__
    assert data['packages']['no-such-distribution-xyz'] is None
    assert data['python_version'] == '%d.%d.%d' % sys.version_info[:3]


@pytest.mark.parametrize('text', ['', 'Traceback (most recent call last):', json.dumps({'python_version': '3.11.2'}), '[1, 2]'])
def test_parse_package_versions_garbage(text):
    with pytest.raises(ValueError):
        proc.parse_package_versions(text)
