# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from ansible_collections.specdec.bench.plugins.module_utils import _systemd as systemd
from ansible_collections.specdec.bench.plugins.module_utils._proc import parse_proc_cgroup, systemd_cgroup_path

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures')
# the argument order of show.txt (see tests/fixtures/systemd/bookworm-252/README.md)
SHOW_NAMES = ['ddtree-qwen.service', 'sglang-dflash-smoke.service', 'sglang-ddtree-tree.service', 'nosuch.service',
              'sglang-stage@tp1-ar.service', 'dbus.socket', 'sglang-masked.service', 'sglang-missing-worker.service']


def read(*parts):
    with open(os.path.join(FIXTURES, *parts), encoding='utf-8') as handle:
        return handle.read()


@pytest.mark.parametrize('name, expected', [
    ('ddtree-qwen', 'ddtree-qwen.service'),
    ('ddtree-qwen.service', 'ddtree-qwen.service'),
    (' sglang-* ', 'sglang-*.service'),
    ('sglang-stage@tp1-ar', 'sglang-stage@tp1-ar.service'),
    ('dbus.socket', 'dbus.socket'),
    ('sglang-*.timer', 'sglang-*.timer'),
    ('sglang-stage@tp[14]-*', 'sglang-stage@tp[14]-*.service'),
    ('system-sglang\\x2dstage.slice', 'system-sglang\\x2dstage.slice'),
])
def test_normalize_unit_name(name, expected):
    assert systemd.normalize_unit_name(name) == expected


@pytest.mark.parametrize('name', ['', '  ', '--all', 'two words', 'a;b', 'x' * 300, 'unit/with/slash'])
def test_normalize_unit_name_rejects(name):
    with pytest.raises(ValueError):
        systemd.normalize_unit_name(name)


def test_is_glob():
    assert systemd.is_glob('sglang-*.service') and systemd.is_glob('gpu?.service') and systemd.is_glob('tp[14].service')
    assert not systemd.is_glob('sglang-stage@tp1.service')


def test_parse_unit_list_real():
    assert systemd.parse_unit_list(read('systemd', 'bookworm-252', 'list_units.txt')) == [
        'ddtree-qwen.service', 'sglang-ddtree-tree.service', 'sglang-missing-worker.service', 'sglang-router.service',
        'sglang-stage@tp1-ar.service']
    assert systemd.parse_unit_list(read('systemd', 'bookworm-252', 'list_unit_files.txt')) == [
        'ddtree-qwen.service', 'sglang-ddtree-tree.service', 'sglang-dflash-smoke.service', 'sglang-masked.service',
        'sglang-router.service', 'sglang-stage@.service']


def test_parse_unit_list_real_bullets_without_plain():
    names = systemd.parse_unit_list(read('systemd', 'bookworm-252', 'list_units_noplain.txt'))
    assert names == ['sglang-ddtree-tree.service', 'sglang-missing-worker.service', 'sglang-router.service', 'sglang-stage@tp1-ar.service']
    # the UTF-8 bullet, as printed outside the C locale
    assert systemd.parse_unit_list('\u25cf sglang-x.service not-found inactive dead sglang-x.service\n') == ['sglang-x.service']


def test_parse_unit_list_empty_and_garbage():
    assert systemd.parse_unit_list(read('systemd', 'bookworm-252', 'list_units_nomatch.txt')) == []
    with pytest.raises(ValueError):
        systemd.parse_unit_list('Failed to connect to bus: No such file or directory\n')


def test_expand_patterns_leaves_templates_out():
    listed = systemd.parse_unit_list(read('systemd', 'bookworm-252', 'list_units.txt'))
    listed += systemd.parse_unit_list(read('systemd', 'bookworm-252', 'list_unit_files.txt'))
    matches = systemd.expand_patterns(['sglang-*.service', 'vllm-*.service', 'sglang-stage@*.service'], listed)
    assert matches == {
        'sglang-*.service': ['sglang-ddtree-tree.service', 'sglang-dflash-smoke.service', 'sglang-masked.service',
                             'sglang-missing-worker.service', 'sglang-router.service', 'sglang-stage@tp1-ar.service'],
        'vllm-*.service': [],
        'sglang-stage@*.service': ['sglang-stage@tp1-ar.service'],
    }


def test_parse_show_real_blocks_in_argument_order():
    blocks = systemd.parse_show(read('systemd', 'bookworm-252', 'show.txt'))
    assert [block['Id'] for block in blocks] == SHOW_NAMES
    assert 'MainPID' not in blocks[5]  # a socket has no main process


def test_units_from_show_real():
    units = systemd.units_from_show(SHOW_NAMES, read('systemd', 'bookworm-252', 'show.txt'))
    assert units['ddtree-qwen.service'] == {
        'id': 'ddtree-qwen.service', 'description': 'DDTree Qwen3.6-27B server', 'load_state': 'loaded', 'active_state': 'active',
        'sub_state': 'running', 'main_pid': 80, 'unit_file_state': 'enabled', 'fragment_path': '/etc/systemd/system/ddtree-qwen.service',
        'result': 'success', 'n_restarts': 0}
    stopped = units['sglang-dflash-smoke.service']
    assert (stopped['load_state'], stopped['active_state'], stopped['sub_state'], stopped['main_pid'], stopped['unit_file_state']) == \
        ('loaded', 'inactive', 'dead', None, 'static')
    failed = units['sglang-ddtree-tree.service']
    assert (failed['active_state'], failed['sub_state'], failed['result'], failed['unit_file_state']) == ('failed', 'failed', 'exit-code', 'disabled')
    missing = units['nosuch.service']
    assert (missing['load_state'], missing['active_state'], missing['unit_file_state'], missing['fragment_path']) == ('not-found', 'inactive', None, None)
    assert units['sglang-stage@tp1-ar.service']['main_pid'] == 85
    assert units['dbus.socket']['main_pid'] is None and units['dbus.socket']['n_restarts'] is None
    assert units['sglang-masked.service']['load_state'] == 'masked'
    assert units['sglang-missing-worker.service']['load_state'] == 'not-found'


def test_units_from_show_keeps_the_requested_alias():
    units = systemd.units_from_show(['dbus-daemon.service'], 'Id=dbus.service\nLoadState=loaded\nMainPID=12\n')
    assert units['dbus-daemon.service']['id'] == 'dbus.service'


@pytest.mark.parametrize('names, text, match', [
    (['a.service', 'b.service'], 'Id=a.service\nLoadState=loaded\n', '1 blocks for 2 units'),
    (['a.service'], 'Failed to get properties: Access denied\n', 'not KEY=VALUE'),
    (['a.service'], 'Id=a.service\nMainPID=abc\n', 'MainPID'),
])
def test_units_from_show_garbage(names, text, match):
    with pytest.raises(ValueError, match=match):
        systemd.units_from_show(names, text)


@pytest.mark.parametrize('pid1_path, expected', [
    ('/init.scope', '/'),
    ('/', '/'),
    (None, '/'),
    ('/libpod_parent/libpod-0e3a9441acb5/init.scope', '/libpod_parent/libpod-0e3a9441acb5'),
    ('/process_api/core', '/process_api/core'),
])
def test_cgroup_root(pid1_path, expected):
    assert systemd.cgroup_root(pid1_path) == expected


@pytest.mark.parametrize('path, root, expected', [
    ('/system.slice/ddtree-qwen.service', '/', 'ddtree-qwen.service'),
    ('/system.slice/sglang.service/payload/worker', '/', 'sglang.service'),
    ('/system.slice/system-sglang\\x2dstage.slice/sglang-stage@tp4-dflash.service', '/', 'sglang-stage@tp4-dflash.service'),
    ('/user.slice/user-0.slice/session-12.scope', '/', 'session-12.scope'),
    ('/user.slice/user-1000.slice/user@1000.service/app.slice/jupyter.service', '/', 'user@1000.service'),
    ('/user.slice/user-0.slice', '/', None),
    ('/init.scope', '/', 'init.scope'),
    ('/system.slice/docker-8e1f4c2b.scope', '/', 'docker-8e1f4c2b.scope'),
    ('/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice/cri-containerd-ab12.scope', '/', 'cri-containerd-ab12.scope'),
    ('/system.slice/_cpu.service', '/', 'cpu.service'),
    ('/process_api/1f06963cf23d61497cb6ab8840d89a14', '/', None),
    ('/docker/8e1f4c2b9d7a', '/', None),
    ('/', '/', None),
    ('', '/', None),
    (None, '/', None),
    # a container's systemd without a cgroup namespace: paths carry the container's cgroup first
    ('/libpod_parent/libpod-0e3a/system.slice/ddtree-qwen.service', '/libpod_parent/libpod-0e3a', 'ddtree-qwen.service'),
    ('/libpod_parent/libpod-0e3a', '/libpod_parent/libpod-0e3a', None),
    ('/libpod_parent/libpod-0e3ab/system.slice/x.service', '/libpod_parent/libpod-0e3a', None),
    ('/process_api/1f06963cf23d61497cb6ab8840d89a14', '/process_api/core', None),
])
def test_unit_from_cgroup_path(path, root, expected):
    assert systemd.unit_from_cgroup_path(path, root) == expected


@pytest.mark.parametrize('fixture, pid1, expected', [
    # real: a service of systemd 252 in a podman container on a hybrid host
    (('systemd', 'bookworm-252', 'cgroup_ddtree_qwen.txt'), ('systemd', 'bookworm-252', 'cgroup_pid1.txt'), 'ddtree-qwen.service'),
    # real: a process podman exec started, in no unit
    (('systemd', 'bookworm-252', 'cgroup_exec.txt'), ('systemd', 'bookworm-252', 'cgroup_pid1.txt'), None),
    # real: the H200 container's GPU holder (no systemd there)
    (('nvidia-smi', 'h200-1gpu', 'holder_cgroup.txt'), None, None),
    (('nvidia-smi', 'h100-mig', 'cgroup', '3311.txt'), ('nvidia-smi', 'h100-mig', 'cgroup', '1.txt'), 'mig-inference.service'),
    # docker (cgroupfs) on a hybrid host: name=systemd says /docker/<id>; 0:: would wrongly say containerd.service
    (('nvidia-smi', 'h100-mig', 'cgroup', '4100.txt'), ('nvidia-smi', 'h100-mig', 'cgroup', '1.txt'), None),
    (('nvidia-smi', 'dgx-h100-8gpu', 'cgroup', '47028.txt'), ('nvidia-smi', 'dgx-h100-8gpu', 'cgroup', '1.txt'), 'ddtree-qwen.service'),
])
def test_unit_of_a_pid_from_proc_cgroup(fixture, pid1, expected):
    pid1_text = read(*pid1) if pid1 else '0::/process_api/core\n'
    root = systemd.cgroup_root(systemd_cgroup_path(parse_proc_cgroup(pid1_text)))
    text = read(*fixture).split('\n\n')[0]  # holder_cgroup.txt also carries the cmdline after a blank line
    assert systemd.unit_from_cgroup_path(systemd_cgroup_path(parse_proc_cgroup(text)), root) == expected


def test_cgroup_v1_only_name_systemd_line():
    entries = parse_proc_cgroup('11:memory:/system.slice/x.service\n1:name=systemd:/system.slice/x.service\n')
    assert systemd.unit_from_cgroup_path(systemd_cgroup_path(entries)) == 'x.service'


# ---- unit files: quoting and rendering ----

LAYOUT = {'comment': ['#', '# a unit'], 'Unit': ['description'],
          'Service': ['env', 'env_files', 'cwd', 'argv', 'timeout_stop_sec', 'cpu_affinity', 'numa_nodes', {'Restart': 'no'}]}


def definition(**extra):
    base = {'argv': ['/usr/bin/python3', '-m', 'x'], 'description': 'd', 'unit': LAYOUT}
    base.update(extra)
    return base


@pytest.mark.parametrize(('word', 'quoted'), [
    ('plain', "'plain'"),
    ('a b', "'a b'"),
    ("it's", "'it\\'s'"),
    ('"dq"', "'\"dq\"'"),
    ('back\\slash', "'back\\\\slash'"),
    ('100%', "'100%%'"),
    ('%n%h', "'%%n%%h'"),
    ('$HOME ${X}', "'$$HOME $${X}'"),
    ('', "''"),
    ('{"x": \'%s $y\'}', "'{\"x\": \\'%%s $$y\\'}'"),
])
def test_exec_word_quotes_for_systemd(word, quoted):
    assert systemd.exec_word('definition.argv[1]', word) == quoted


@pytest.mark.parametrize(('value', 'quoted'), [
    ('x', '"N=x"'),
    ('say "hi"', '"N=say \\"hi\\""'),
    ('a\\b', '"N=a\\\\b"'),
    ('50%', '"N=50%%"'),
    ("$HOME `id` it's", '"N=$HOME `id` it\'s"'),  # Environment= expands no variable
    (7, '"N=7"'),
])
def test_environment_values_are_double_quoted(value, quoted):
    assert systemd.env_assignment('definition.env', 'N', value) == quoted


def test_environment_file_lines_escape_what_systemd_unescapes():
    assert systemd.env_file_assignment('secrets.env', 'T', 'a"b\\c$d`e f') == 'T="a\\"b\\\\c\\$d\\`e f"'
    assert systemd.env_file_text({'B': '2', 'A': '1'}, ['# c']) == '# c\nA="1"\nB="2"\n'


@pytest.mark.parametrize('char', ['\n', '\r', '\x00', '\t', '\x1b', '\x7f', '\x85', '\u2028', '\u2029'])
def test_control_characters_are_refused_naming_the_field(char):
    for make, field in (
            (lambda: systemd.exec_word('definition.argv[2]', 'a%sb' % char), 'definition.argv[2]'),
            (lambda: systemd.env_assignment('definition.env', 'TOKEN', 'x%sExecStartPre=/bin/true' % char), 'definition.env.TOKEN'),
            (lambda: systemd.unit_value('definition.unit.Service[3].ReadWritePaths', 'a%s' % char),
             'definition.unit.Service[3].ReadWritePaths'),
            (lambda: systemd.env_file_assignment('secrets.env', 'HF_TOKEN', 'x%s' % char), 'secrets.env.HF_TOKEN')):
        with pytest.raises(ValueError, match=re.escape(field) + ' holds the control character'):
            make()


def test_render_refuses_a_control_character_in_any_field():
    with pytest.raises(ValueError, match=r'definition\.argv\[3\] holds'):
        systemd.render_unit(definition(argv=['/bin/x', 'a', 'b', 'c\nExecStartPre=/bin/true']))
    with pytest.raises(ValueError, match=r'definition\.description holds'):
        systemd.render_unit(definition(description='d\r'))
    with pytest.raises(ValueError, match=r'definition\.unit\.comment holds'):
        systemd.render_unit(definition(unit=dict(LAYOUT, comment=['# a\n[Service]'])))


@pytest.mark.parametrize('name', ['', '1A', 'A-B', 'A=B', 'A B', 'É'])
def test_environment_names_are_refused_naming_the_field(name):
    with pytest.raises(ValueError, match=r'definition\.env has the name'):
        systemd.env_assignment('definition.env', name, 'x')


def test_render_writes_the_layout_in_order():
    text = systemd.render_unit(definition(
        env={'Z': 'z', 'CUDA_VISIBLE_DEVICES': 'GPU-1', 'A': 'a'}, env_files=['-/etc/s.env'], cwd='/srv/100%',
        timeout_stop_sec=60, cpu_affinity='0-3', numa_nodes='0', description='50% d'))
    assert text == (
        '#\n# a unit\n[Unit]\nDescription=50%% d\n\n[Service]\n'
        'Environment="CUDA_VISIBLE_DEVICES=GPU-1"\nEnvironment="A=a"\nEnvironment="Z=z"\n'
        'EnvironmentFile=-/etc/s.env\nWorkingDirectory=/srv/100%%\n'
        "ExecStart='/usr/bin/python3' '-m' 'x'\nTimeoutStopSec=60\n"
        'CPUAffinity=0-3\nNUMAPolicy=bind\nNUMAMask=0\nRestart=no\n')


def test_empty_fields_write_nothing_and_their_comment_neither():
    layout = {'Service': [{'field': 'cpu_affinity', 'comment': ['# pinned']}, 'argv', {'NoNewPrivileges': True},
                          {'CapabilityBoundingSet': ''}]}
    assert systemd.render_unit({'argv': ['/bin/x'], 'unit': layout}) == (
        "[Service]\nExecStart='/bin/x'\nNoNewPrivileges=true\nCapabilityBoundingSet=\n")
    pinned = systemd.render_unit({'argv': ['/bin/x'], 'cpu_affinity': '1', 'unit': layout})
    assert pinned.startswith('[Service]\n# pinned\nCPUAffinity=1\n')


@pytest.mark.parametrize(('exec_lines', 'expected'), [
    ([0, 1], "ExecStart='/p' 'a' 'b' 'c'\n"),
    ([1, 1], "ExecStart='/p' \\\n    'a' \\\n    'b' \\\n    'c'\n"),
    ([2, 2], "ExecStart='/p' 'a' \\\n    'b' 'c'\n"),
    (['1', 3], "ExecStart='/p' \\\n    'a' 'b' 'c'\n"),
    ([4, 1], "ExecStart='/p' 'a' 'b' 'c'\n"),
])
def test_exec_start_lines(exec_lines, expected):
    text = systemd.render_unit({'argv': ['/p', 'a', 'b', 'c'], 'unit': {'exec_lines': exec_lines, 'Service': ['argv']}})
    assert text == '[Service]\n' + expected


@pytest.mark.parametrize(('changes', 'fragment'), [
    ({'unit': {'Service': ['env']}}, 'places no argv'),
    ({'env': {'A': '1'}, 'unit': {'Service': ['argv']}}, 'definition.env is set but definition.unit places no env'),
    ({'numa_nodes': '0', 'unit': {'Service': ['argv']}}, 'definition.numa_nodes is set'),
    ({'unit': {'Service': ['argv', 'bogus']}}, r'definition.unit.Service\[1\] is .bogus.'),
    ({'unit': {'Service': ['argv', {'A': 1, 'B': 2}]}}, 'one Key: value pair'),
    ({'unit': {'Service': ['argv', {'Bad Key': 1}]}}, 'one Key: value pair'),
    ({'unit': {'Service': ['argv'], 'Timer': []}}, 'allowed: a mapping with keys'),
    ({'unit': {'Service': ['argv'], 'exec_lines': [1, 0]}}, 'exec_lines'),
    ({'unit': {'Service': ['argv', 'cpu_affinity'], 'comment': ['not a comment']}}, 'comment lines starting with #'),
    ({'cpu_affinity': '0-3;x', 'unit': {'Service': ['argv', 'cpu_affinity']}}, 'definition.cpu_affinity is'),
    ({'unit': None}, 'definition.unit is None'),
])
def test_a_bad_layout_is_refused_naming_the_field(changes, fragment):
    with pytest.raises(ValueError, match=fragment):
        systemd.render_unit(dict({'argv': ['/bin/x']}, **changes))


@pytest.mark.skipif(shutil.which('systemd-analyze') is None, reason='no systemd-analyze here')
def test_systemd_reads_the_words_back_exactly(tmp_path):
    """systemd-analyze parses the rendered ExecStart= and Environment= without a warning (a bad escape would be one)."""
    hostile = ['a b', "it's", '"q"', 'back\\slash', '100%', '$HOME', '', '{"x": \'%s $y\'}']
    unit = tmp_path / 'specdec-quoting.service'
    unit.write_text(systemd.render_unit({
        'argv': [sys.executable, '-c', 'pass'] + hostile, 'env': {'N': 'say "hi" 50% \\o/ $x'}, 'description': 'quoting',
        'unit': {'Unit': ['description'], 'Service': [{'Type': 'simple'}, 'env', 'argv']}}))
    result = subprocess.run(['systemd-analyze', 'verify', str(unit)], capture_output=True, text=True, timeout=60, check=False)
    assert str(unit) not in result.stderr, result.stderr
