# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""page_cache_warm: which files are read, the fit decision against MemAvailable, and the reading itself (real files)."""

from __future__ import annotations

import os

import pytest

from ansible_collections.specdec.bench.plugins.modules import page_cache_warm

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
MEMINFO_FIXTURE = os.path.join(REPO, 'tests', 'fixtures', 'proc', 'bookworm-podman', 'meminfo.txt')
MIB = 1024 * 1024
GIB = 1024 * MIB


def write(path, size):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(os.urandom(size) if size < MIB else b'w' * size)
    return path


def model_folder(root):
    """A flat model folder as a hub download leaves it: weights, index, tokenizer, plus a hidden cache and a subfolder."""
    write(root / 'model-00001-of-00002.safetensors', 3 * MIB)
    write(root / 'model-00002-of-00002.safetensors', 2 * MIB)
    write(root / 'model.safetensors.index.json', 100)
    write(root / 'config.json', 50)
    write(root / 'tokenizer.json', 200)
    write(root / 'merges.txt', 70)  # no default pattern matches
    write(root / 'README.md', 10)
    write(root / '.cache' / 'huggingface' / 'download' / 'model.safetensors.metadata', 30)
    write(root / 'original' / 'consolidated.pt', 1000)
    write(root / 'original' / 'deeper' / 'more.safetensors', 1000)  # two levels down: passed over
    return root


@pytest.fixture
def meminfo(tmp_path, monkeypatch):
    """Point the module at a meminfo file saying `available` bytes (None: a kernel without MemAvailable)."""
    def set_available(available):
        path = tmp_path / 'meminfo'
        text = 'MemTotal:       %d kB\nMemFree:        1024 kB\n' % (64 * GIB // 1024)
        if available is not None:
            text += 'MemAvailable:   %d kB\n' % (available // 1024)
        path.write_text(text)
        monkeypatch.setattr(page_cache_warm, 'MEMINFO', str(path))
    return set_available


@pytest.fixture
def advised(monkeypatch):
    """Record posix_fadvise calls (the files the module opened for reading), as (fd is int, offset, length, advice)."""
    calls = []
    monkeypatch.setattr(os, 'posix_fadvise', lambda fd, offset, length, advice: calls.append((offset, length, advice)), raising=False)
    monkeypatch.setattr(os, 'POSIX_FADV_SEQUENTIAL', 2, raising=False)
    return calls


# --- pure functions ---------------------------------------------------------------------------------------------------

def test_mem_available_from_a_real_meminfo():
    with open(MEMINFO_FIXTURE, encoding='utf-8') as handle:
        assert page_cache_warm.mem_available(handle.read()) == 24226996 * 1024


def test_mem_available_of_a_kernel_without_it_is_none():
    assert page_cache_warm.mem_available('MemTotal:  1000 kB\nMemFree:  500 kB\n') is None


def test_read_mem_available_of_a_missing_or_garbled_file_is_none(tmp_path):
    assert page_cache_warm.read_mem_available(str(tmp_path / 'nosuch')) is None
    (tmp_path / 'garbled').write_text('MemTotal: lots\n')
    assert page_cache_warm.read_mem_available(str(tmp_path / 'garbled')) is None


def test_decide_fits_up_to_the_fraction_exactly():
    assert page_cache_warm.decide(80, 100, 0.8) == (True, '')
    assert page_cache_warm.decide(0, 0, 0.8) == (True, '')
    fits, note = page_cache_warm.decide(81, 100, 0.8)
    assert fits is False and 'not warmed' in note


def test_decide_note_when_too_big():
    fits, note = page_cache_warm.decide(int(51.2 * GIB), 40 * GIB, 0.8)
    assert fits is False
    assert note == 'the weights take 51.2 GiB, MemAvailable 40.0 GiB x 0.8 = 32.0 GiB: not warmed, each stage loads from disk'


def test_decide_with_mem_available_unknown_does_not_warm():
    fits, note = page_cache_warm.decide(5 * MIB, None, 0.8)
    assert fits is False
    assert note.startswith('the weights take 5.0 MiB, MemAvailable is unknown (no /proc/meminfo')
    assert note.endswith('not warmed, each stage loads from disk')


def test_list_files_top_level_and_one_level_down_hidden_passed_over(tmp_path):
    root = model_folder(tmp_path / 'model')
    listed, empty = page_cache_warm.list_files([str(root)], ['*.safetensors', '*.json', '*.pt', 'tokenizer*'])
    assert [os.path.relpath(item['path'], str(root)) for item in listed] == [
        'config.json', 'model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors',
        'model.safetensors.index.json', 'tokenizer.json', os.path.join('original', 'consolidated.pt')]
    assert listed[1]['bytes'] == 3 * MIB and empty == []


def test_list_files_counts_each_file_once(tmp_path):
    """The same folder twice, a folder linked in, a file linked and a hard link: each file read once."""
    model = model_folder(tmp_path / 'model')
    draft = tmp_path / 'draft'
    write(draft / 'model.safetensors', MIB)
    os.link(str(model / 'config.json'), str(draft / 'config.json'))  # hard link: another path, same inode
    os.symlink(str(model / 'tokenizer.json'), str(draft / 'tokenizer.json'))
    os.symlink(str(draft), str(tmp_path / 'draft-link'))
    listed, _notes = page_cache_warm.list_files([str(model), str(draft), str(tmp_path / 'draft-link'), str(model / 'config.json')],
                                                ['*.safetensors', '*.json'])
    paths = [item['path'] for item in listed]
    assert len(paths) == len(set(paths))
    assert sorted(os.path.relpath(path, str(tmp_path)) for path in paths) == sorted([
        'model/config.json', 'model/model-00001-of-00002.safetensors', 'model/model-00002-of-00002.safetensors',
        'model/model.safetensors.index.json', 'model/tokenizer.json', 'draft/model.safetensors'])


def test_a_file_named_directly_is_read_whatever_its_name(tmp_path):
    write(tmp_path / 'weights.ckpt', 10)
    listed, _notes = page_cache_warm.list_files([str(tmp_path / 'weights.ckpt')], ['*.safetensors'])
    assert listed == [{'path': str(tmp_path / 'weights.ckpt'), 'bytes': 10}]


def test_read_files_of_an_empty_file_without_timeout(tmp_path):
    write(tmp_path / 'empty.json', 0)
    ticks = iter(range(100))
    done = page_cache_warm.read_files([{'path': str(tmp_path / 'empty.json'), 'bytes': 0}], 4096, 0, clock=lambda: next(ticks))
    assert done == (0, 1, 1, False)


def test_read_files_reads_every_byte_in_chunks(tmp_path):
    first, second = write(tmp_path / 'a.bin', 5 * MIB + 3), write(tmp_path / 'b.bin', 17)
    listed = [{'path': str(first), 'bytes': 5 * MIB + 3}, {'path': str(second), 'bytes': 17}]
    done, files, seconds, timed_out = page_cache_warm.read_files(listed, MIB, 0)
    assert (done, files, timed_out) == (5 * MIB + 20, 2, False) and seconds >= 0


def test_read_files_timeout_is_checked_after_each_chunk(tmp_path):
    write(tmp_path / 'a.bin', 4 * MIB)
    clock = iter(float(second) for second in range(100))
    done, files, seconds, timed_out = page_cache_warm.read_files([{'path': str(tmp_path / 'a.bin'), 'bytes': 4 * MIB}],
                                                                 MIB, 2.5, clock=lambda: next(clock))
    # start at 0; looks after chunks 1, 2, 3 see 1, 2, 3: the third passes the deadline of 2.5
    assert (done, files, timed_out) == (3 * MIB, 0, True) and seconds == 4


# --- the module -------------------------------------------------------------------------------------------------------

def test_warms_when_the_weights_fit(run_module, tmp_path, meminfo, advised):
    model = model_folder(tmp_path / 'model')
    draft = tmp_path / 'draft'
    write(draft / 'model.safetensors', MIB)
    write(draft / 'config.json', 40)
    meminfo(100 * GIB)
    result = run_module(page_cache_warm, dict(paths=[str(model), str(draft)], chunk_bytes=MIB))
    expected = 3 * MIB + 2 * MIB + 100 + 50 + 200 + 1000 + MIB + 40
    assert result['exit_code'] == 0 and result['changed'] is False
    assert result['warmed'] is True and result['fits'] is True and result['timed_out'] is False
    assert (result['bytes'], result['total_bytes'], result['files'], result['total_files']) == (expected, expected, 8, 8)
    assert result['mem_available_bytes'] == 100 * GIB
    assert result['seconds'] >= 0 and result['note'].startswith('read 6.0 MiB (8 files) in ')
    assert result['note'].endswith('each stage loads the weights from memory')
    assert advised == [(0, 0, 2)] * 8  # each file opened once and read sequentially from 0 to its end
    assert [item['path'] for item in result['listed']][-2:] == [str(draft / 'config.json'), str(draft / 'model.safetensors')]


def test_does_not_read_when_the_weights_do_not_fit(run_module, tmp_path, meminfo, advised):
    write(tmp_path / 'model' / 'model.safetensors', 9 * MIB)
    meminfo(10 * MIB)
    result = run_module(page_cache_warm, dict(paths=[str(tmp_path / 'model')]))
    assert result['exit_code'] == 0 and result['changed'] is False
    assert (result['warmed'], result['fits'], result['bytes'], result['files'], result['total_bytes']) == (False, False, 0, 0, 9 * MIB)
    assert result['note'] == 'the weights take 9.0 MiB, MemAvailable 10.0 MiB x 0.8 = 8.0 MiB: not warmed, each stage loads from disk'
    assert result['gib_per_s'] is None and advised == []


def test_max_fraction_one_lets_them_fit(run_module, tmp_path, meminfo, advised):
    write(tmp_path / 'model' / 'model.safetensors', 9 * MIB)
    meminfo(10 * MIB)
    result = run_module(page_cache_warm, dict(paths=[str(tmp_path / 'model')], max_fraction=1))
    assert result['warmed'] is True and result['bytes'] == 9 * MIB and len(advised) == 1


def test_without_mem_available_nothing_is_read(run_module, tmp_path, meminfo, advised):
    write(tmp_path / 'model' / 'model.safetensors', MIB)
    meminfo(None)
    result = run_module(page_cache_warm, dict(paths=[str(tmp_path / 'model')]))
    assert result['exit_code'] == 0 and result['warmed'] is False and result['mem_available_bytes'] is None
    assert 'MemAvailable is unknown' in result['note'] and advised == []


def test_check_mode_lists_and_decides_but_reads_nothing(run_module, tmp_path, meminfo, advised):
    model = model_folder(tmp_path / 'model')
    meminfo(100 * GIB)
    result = run_module(page_cache_warm, dict(paths=[str(model)], _ansible_check_mode=True))
    assert result['exit_code'] == 0 and result['changed'] is False
    assert (result['warmed'], result['fits'], result['bytes'], result['total_files']) == (False, True, 0, 6)
    assert result['note'] == 'check mode: would read 5.0 MiB (6 files)'
    assert advised == []


def test_timeout_reports_what_was_read(run_module, tmp_path, meminfo, advised, monkeypatch):
    write(tmp_path / 'model' / 'a.safetensors', 2 * MIB)
    write(tmp_path / 'model' / 'b.safetensors', 2 * MIB)
    meminfo(100 * GIB)
    clock = iter(float(second) for second in range(100))
    original = page_cache_warm.read_files
    monkeypatch.setattr(page_cache_warm, 'read_files', lambda *args: original(*args, clock=lambda: next(clock)))
    result = run_module(page_cache_warm, dict(paths=[str(tmp_path / 'model')], chunk_bytes=MIB, timeout=2.5))
    assert result['exit_code'] == 0 and result['changed'] is False
    assert (result['warmed'], result['timed_out'], result['bytes'], result['files'], result['seconds']) == (False, True, 3 * MIB, 1, 4)
    assert result['gib_per_s'] == round(3 / 1024 / 4, 3)
    assert result['note'].startswith('stopped at the timeout of 2.5 s after reading 3.0 MiB of 4.0 MiB (1 of 2 files)')


def test_a_missing_path_fails_naming_it_and_what_exists(run_module, tmp_path, meminfo):
    write(tmp_path / 'models' / 'Qwen3.6-27B' / 'config.json', 10)
    (tmp_path / 'models' / 'Qwen3.6-27B-DFlash').mkdir()
    meminfo(100 * GIB)
    missing = tmp_path / 'models' / 'Qwen3.6-27B-EAGLE3' / 'sub'
    result = run_module(page_cache_warm, dict(paths=[str(tmp_path / 'models' / 'Qwen3.6-27B'), str(missing)]))
    assert result['failed'] is True
    assert result['msg'] == 'paths: %s does not exist; %s holds: Qwen3.6-27B, Qwen3.6-27B-DFlash' % (missing, tmp_path / 'models')


def test_a_folder_without_matching_files_is_warned_about(run_module, tmp_path, meminfo, advised):
    write(tmp_path / 'model' / 'model.safetensors', 10)
    write(tmp_path / 'draft' / 'notes.txt', 10)
    meminfo(100 * GIB)
    result = run_module(page_cache_warm, dict(paths=[str(tmp_path / 'model'), str(tmp_path / 'draft')]))
    assert result['exit_code'] == 0 and result['warmed'] is True and result['files'] == 1
    assert any(str(tmp_path / 'draft') in text and 'matches the patterns' in text for text in result['warning_texts'])


def test_a_device_file_is_refused(run_module, meminfo):
    meminfo(100 * GIB)
    result = run_module(page_cache_warm, dict(paths=['/dev/zero']))
    assert result['failed'] is True and result['msg'] == 'paths: /dev/zero is neither a folder nor a regular file'


@pytest.mark.parametrize('args, message', [
    (dict(paths=[]), 'paths must name at least one folder or file'),
    (dict(patterns=[]), 'patterns must hold at least one file name pattern'),
    (dict(max_fraction=0), 'max_fraction is 0.0; it must be more than 0 and at most 1'),
    (dict(max_fraction=1.5), 'max_fraction is 1.5; it must be more than 0 and at most 1'),
    (dict(max_fraction=float('nan')), 'max_fraction is nan; it must be more than 0 and at most 1'),
    (dict(chunk_bytes=100), 'chunk_bytes is 100; it must be from 4096 (4 KiB) to 1073741824 (1 GiB)'),
    (dict(timeout=-1), 'timeout is -1.0; it must be 0 (no limit) or a finite number of seconds more than 0'),
])
def test_option_errors_name_the_option_and_the_allowed_values(run_module, tmp_path, args, message):
    result = run_module(page_cache_warm, dict(dict(paths=[str(tmp_path)]), **args))
    assert result['failed'] is True and result['msg'].startswith(message)
