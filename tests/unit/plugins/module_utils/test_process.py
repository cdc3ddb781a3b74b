# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""_process: a process no unit names, read from /proc (fake /proc trees in tmp folders) and its conflicts record."""

from __future__ import annotations

import json
import os
import stat

import pytest

from ansible_collections.specdec.bench.plugins.module_utils import _process as process

STATUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures', 'proc', 'status')
WRAPPER_ARGV = ['python3', '-m', 'sglang.launch_server', '--model-path', '/data/models/Qwen3.6-27B', '--port', '30100',
                '--tp-size', '1']


def status_bytes(name):
    """A real /proc/<pid>/status (tests/fixtures/proc/status/<name>.txt)."""
    with open(os.path.join(STATUS, name + '.txt'), 'rb') as handle:
        return handle.read()


def fake_process(proc, pid, argv=None, environ=None, cwd='/root', exe='/usr/bin/python3.11', pgid=None, ticks=912345,
                 state='S', comm='python3', status='root'):
    """/proc/<pid> as the kernel writes it: NUL-separated cmdline and environ, stat, status (a real one, by name),
    cwd and exe links."""
    folder = proc / str(pid)
    folder.mkdir(parents=True)
    if status is not None:
        (folder / 'status').write_bytes(status_bytes(status))
    if argv is not None:
        (folder / 'cmdline').write_bytes(b''.join(word.encode() + b'\0' for word in argv))
    if environ is not None:
        (folder / 'environ').write_bytes(b''.join(('%s=%s' % item).encode() + b'\0' for item in environ.items()))
    (folder / 'stat').write_text('%d (%s) %s 1 %d %d 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0\n'
                                 % (pid, comm, state, pgid or pid, pgid or pid, ticks))
    if cwd:
        os.symlink(cwd, folder / 'cwd')
    if exe:
        os.symlink(exe, folder / 'exe')
    return folder


# --- the command line in the GPU facts ----------------------------------------------------------------------------------

def test_cmdline_text_joins_the_words_with_spaces():
    assert process.cmdline_text(b'python3\0-m\0sglang.launch_server\0--port\x0030100\0') == \
        'python3 -m sglang.launch_server --port 30100'
    assert process.cmdline_text(b'sglang::scheduler_TP0') == 'sglang::scheduler_TP0'  # a title set by the program


def test_cmdline_text_is_bounded_and_empty_is_none():
    assert len(process.cmdline_text(b'x' * 10000 + b'\0')) == process.CMDLINE_MAX_CHARS == 4096
    assert process.cmdline_text(b'') is None  # a zombie
    assert process.cmdline_text(b'\xff\xfe\0') == '\ufffd\ufffd'


def test_read_cmdline_from_a_proc_tree(tmp_path):
    fake_process(tmp_path, 4242, argv=WRAPPER_ARGV)
    fake_process(tmp_path, 7, argv=[])
    assert process.read_cmdline(4242, str(tmp_path)) == ' '.join(WRAPPER_ARGV)
    assert process.read_cmdline(7, str(tmp_path)) is None
    assert process.read_cmdline(99999, str(tmp_path)) is None  # gone, or another pid namespace


def test_read_cmdline_of_a_real_process():
    assert 'pytest' in process.read_cmdline(os.getpid())


# --- the record ---------------------------------------------------------------------------------------------------------

def test_snapshot_reads_what_it_takes_to_start_it_again(tmp_path):
    bin_dir = tmp_path / 'venv' / 'bin'
    bin_dir.mkdir(parents=True)
    (bin_dir / 'python3').write_text('')
    (bin_dir / 'python3').chmod(0o755)
    env = {'PATH': '%s:/usr/bin' % bin_dir, 'CUDA_VISIBLE_DEVICES': 'GPU-a100-0', 'HF_TOKEN': 'hf_secret', 'EMPTY': ''}
    fake_process(tmp_path / 'proc', 4242, argv=WRAPPER_ARGV, environ=env, cwd='/root/work', pgid=4242)
    entry = process.snapshot(4242, str(tmp_path / 'proc'))
    # the venv's python as the shell found it on PATH, not /proc/<pid>/exe (the resolved base interpreter)
    assert entry == {'pid': 4242, 'start_ticks': 912345, 'pgid': 4242, 'leads_group': True, 'argv': WRAPPER_ARGV,
                     'program': str(bin_dir / 'python3'), 'cwd': '/root/work', 'env': env, 'uid': 0, 'gid': 0,
                     'groups': []}


def test_snapshot_of_a_group_member_and_a_program_found_by_exe(tmp_path):
    fake_process(tmp_path, 4243, argv=['no-such-program', '--serve'], environ={'PATH': '/nonexistent'}, pgid=4242)
    entry = process.snapshot(4243, str(tmp_path))
    assert (entry['leads_group'], entry['pgid'], entry['program']) == (False, 4242, '/usr/bin/python3.11')


@pytest.mark.parametrize('broken, message', [
    ({'argv': None}, 'cannot read process 4242'),
    ({'environ': None}, 'cannot read process 4242'),
    ({'cwd': None}, 'cannot read process 4242'),
    ({'argv': []}, 'has no command line'),
    ({'state': 'Z'}, 'is gone'),
    ({'exe': None, 'argv': ['missing']}, "cannot find the program 'missing'"),
    ({'status': None}, 'cannot read process 4242'),
    ({'status': 'setuid'}, r'process 4242: Uid is 65534 0 0 0 \(real, effective, saved, filesystem\): they differ'),
    ({'status': 'keepcaps'}, 'process 4242: CapPrm is 000001fffeffffff: capabilities uid 65534 does not have'),
])
def test_snapshot_refuses_what_it_could_not_restore(tmp_path, broken, message):
    kwargs = dict(dict(argv=WRAPPER_ARGV, environ={'PATH': '/nonexistent'}), **broken)
    fake_process(tmp_path, 4242, **kwargs)
    with pytest.raises(ValueError, match=message):
        process.snapshot(4242, str(tmp_path))


@pytest.mark.parametrize('word, expected', [
    ('/opt/venv/bin/python3', '/opt/venv/bin/python3'),
    ('./run.sh', '/srv/app/run.sh'),
    ('bin/../run.sh', '/srv/app/run.sh'),
    ('python3', '/second/python3'),
    ('nowhere', '/proc-exe'),
])
def test_resolve_program_as_the_shell_would(word, expected):
    files = {'/second/python3', '/srv/app/python3'}
    found = process.resolve_program(word, '/srv/app', {'PATH': '/first:/second'}, exe='/proc-exe',
                                    executable=files.__contains__)
    assert found == expected


def test_start_ticks_and_same_process(tmp_path):
    fake_process(tmp_path, 50, argv=['x'], comm='a (strange) name')
    fake_process(tmp_path, 51, argv=['x'], state='Z')
    assert process.start_ticks(50, str(tmp_path)) == 912345
    assert process.start_ticks(51, str(tmp_path)) is None
    assert process.same_process({'pid': 50, 'start_ticks': 912345}, str(tmp_path))
    assert not process.same_process({'pid': 50, 'start_ticks': 1}, str(tmp_path))  # a reused pid


def test_the_record_is_written_whole_with_mode_0600(tmp_path):
    path = str(tmp_path / 'conflicts' / 'qwen36.json')
    assert process.read_record(path) == {}
    process.write_record(path, {'campaign': 'qwen36', 'processes': {'w': {'env': {'HF_TOKEN': 'hf_secret'}}}})
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    assert process.read_record(path)['processes']['w']['env'] == {'HF_TOKEN': 'hf_secret'}
    assert os.listdir(os.path.dirname(path)) == ['qwen36.json']
    with open(path, 'w', encoding='utf-8') as handle:
        json.dump([1], handle)
    with pytest.raises(ValueError, match='not a JSON object'):
        process.read_record(path)


# --- the owner a restore runs it as ---------------------------------------------------------------------------------

@pytest.mark.parametrize('name, expected', [
    ('nobody', {'uid': 65534, 'gid': 65534, 'groups': [65534]}),
    ('root', {'uid': 0, 'gid': 0, 'groups': []}),  # root with its capabilities: restored as root
])
def test_the_owner_from_a_real_status(name, expected):
    assert process.owner(4242, process.parse_status(status_bytes(name))) == expected


@pytest.mark.parametrize('name, field', [('setuid', 'Uid'), ('keepcaps', 'CapPrm')])
def test_an_owner_a_restore_could_not_be_is_named_with_its_field(name, field):
    with pytest.raises(ValueError, match='^process 4242: %s is ' % field):
        process.owner(4242, process.parse_status(status_bytes(name)))


def test_a_set_group_id_process_and_a_missing_groups_line_are_refused():
    status = process.parse_status(status_bytes('nobody'))
    with pytest.raises(ValueError, match=r'Gid is 65534 0 65534 65534 .*set-group-ID'):
        process.owner(7, dict(status, Gid='65534\t0\t65534\t65534'))
    with pytest.raises(ValueError, match="Groups is None"):
        process.owner(7, dict((key, value) for key, value in status.items() if key != 'Groups'))


# --- what the restore runs -----------------------------------------------------------------------------------------

ENTRY = {'pid': 4242, 'argv': ['python3', '-m', 'sglang.launch_server', '--tag', '', '--port', '30100'],
         'program': '/opt/venv/bin/python3', 'cwd': '/srv/run', 'env': {'PATH': '/opt/venv/bin:/usr/bin', 'EMPTY': ''},
         'uid': 65534, 'gid': 65534, 'groups': [44, 65534]}


def test_the_restore_runs_the_recorded_words_as_the_owner_with_exactly_its_environment():
    assert process.restore_definition('hand-wrapper', ENTRY, 'qwen36') == {
        'argv': ['/opt/venv/bin/python3', '-m', 'sglang.launch_server', '--tag', '', '--port', '30100'],
        'env': {'PATH': '/opt/venv/bin:/usr/bin', 'EMPTY': ''}, 'env_files': [], 'inherit_env': False, 'cwd': '/srv/run',
        'uid': 65534, 'gid': 65534, 'groups': [44, 65534],
        'description': 'hand-wrapper, started by hand, stopped by campaign qwen36 (pid 4242)'}


@pytest.mark.parametrize('change, message', [
    ({'uid': None}, 'has no uid'),  # a record of an older process_stop: never restored as root by default
    ({'argv': ['python3', 'serve', '\udcff']}, r'argv\[2\] is .*not UTF-8'),
    ({'env': {'TOKEN': 'a\udcffb'}}, 'env.TOKEN is .*not UTF-8'),
    ({'program': 'python3'}, r'definition.argv\[0\] is .python3.; allowed: an absolute path'),
    ({'groups': [-1]}, r'definition.groups\[0\] is -1'),
    ({'uid': 4294967295}, 'definition.uid is 4294967295'),
])
def test_what_the_restore_refuses_is_named(change, message):
    entry = dict((key, value) for key, value in dict(ENTRY, **change).items() if value is not None)
    with pytest.raises(ValueError, match=r'^processes.hand-wrapper \(pid 4242\) cannot be restored: ' + message):
        process.restore_definition('hand-wrapper', entry)


def test_a_program_or_cwd_gone_before_the_stop_is_refused(tmp_path):
    program = tmp_path / 'serve'
    program.write_text('')
    program.chmod(0o755)
    entry = dict(ENTRY, program=str(program), cwd=str(tmp_path))
    assert process.check_restorable('w', entry)['argv'][0] == str(program)
    with pytest.raises(ValueError, match='cwd .* is not a folder now'):
        process.check_restorable('w', dict(entry, cwd='%s (deleted)' % tmp_path))
    program.chmod(0o644)
    with pytest.raises(ValueError, match='is not an executable file now'):
        process.check_restorable('w', entry)
