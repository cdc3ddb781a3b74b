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

WRAPPER_ARGV = ['python3', '-m', 'sglang.launch_server', '--model-path', '/data/models/Qwen3.6-27B', '--port', '30100',
                '--tp-size', '1']


def fake_process(proc, pid, argv=None, environ=None, cwd='/root', exe='/usr/bin/python3.11', pgid=None, ticks=912345,
                 state='S', comm='python3'):
    """/proc/<pid> as the kernel writes it: NUL-separated cmdline and environ, stat, cwd and exe links."""
    folder = proc / str(pid)
    folder.mkdir(parents=True)
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
                     'program': str(bin_dir / 'python3'), 'cwd': '/root/work', 'env': env}


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
