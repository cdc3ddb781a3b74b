# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""stage_attempt: an earlier attempt's files move to attempt-<n>/, never over an existing one."""

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.specdec.bench.plugins.module_utils._stage import stage_attempt as _stage_attempt
from ansible_collections.specdec.bench.plugins.modules import stage_attempt


def test_attempt_files_are_the_visible_plain_files_sorted():
    names = ['status.json', '.status.json.tmp', 'attempt-1', 'result-random-t0-c1.json', 'journal.txt']
    assert stage_attempt.attempt_files(names, lambda name: not name.startswith('attempt-')) == [
        'journal.txt', 'result-random-t0-c1.json', 'status.json']


@pytest.mark.parametrize(('names', 'expected'), [
    ([], 'attempt-1'),
    (['attempt-1'], 'attempt-2'),
    (['attempt-1', 'attempt-3'], 'attempt-2'),
    (['attempt-1', 'attempt-2', 'status.json'], 'attempt-3'),
])
def test_next_attempt_is_the_first_free_number(names, expected):
    assert stage_attempt.next_attempt(names) == expected


@pytest.fixture(name='stage')
def stage_dir(tmp_path):
    stage = tmp_path / 'qwen36-ct200' / 'tp1-dflash-n16'
    (stage / 'attempt-1').mkdir(parents=True)
    (stage / 'attempt-1' / 'status.json').write_text('{"status": "failed"}')
    for name, text in {'status.json': '{"status": "failed"}', 'result-random-t0-c1.json': '{}', '.hidden': 'x'}.items():
        (stage / name).write_text(text)
    (stage / 'link.json').symlink_to(stage / 'status.json')
    return stage


def test_the_files_move_to_the_next_attempt(run_module, stage):
    result = run_module(stage_attempt, dict(dir=str(stage)))
    assert result['exit_code'] == 0 and result['changed']
    assert result['attempt'] == str(stage / 'attempt-2') and result['files'] == ['result-random-t0-c1.json', 'status.json']
    assert sorted(os.listdir(stage / 'attempt-2')) == ['result-random-t0-c1.json', 'status.json']
    assert stat.S_IMODE(os.stat(stage / 'attempt-2').st_mode) == 0o750
    assert sorted(os.listdir(stage)) == ['.hidden', 'attempt-1', 'attempt-2', 'link.json']
    assert (stage / 'attempt-1' / 'status.json').read_text() == '{"status": "failed"}'
    # nothing left to keep: a second run changes nothing
    again = run_module(stage_attempt, dict(dir=str(stage)))
    assert not again['changed'] and again['attempt'] is None and again['files'] == []


def test_check_mode_names_the_attempt_and_moves_nothing(run_module, stage):
    result = run_module(stage_attempt, dict(dir=str(stage), _ansible_check_mode=True))
    assert result['changed'] and result['attempt'] == str(stage / 'attempt-2')
    assert not (stage / 'attempt-2').exists() and (stage / 'status.json').exists()


def test_a_missing_or_empty_folder_is_no_change(run_module, tmp_path):
    assert not run_module(stage_attempt, dict(dir=str(tmp_path / 'nosuch')))['changed']
    assert not run_module(stage_attempt, dict(dir=str(tmp_path)))['changed']


def test_an_existing_attempt_folder_is_never_written_into(stage, monkeypatch):
    # another writer made attempt-2 between the listing and the mkdir
    monkeypatch.setattr(_stage_attempt, 'next_attempt', lambda names: 'attempt-1')
    with pytest.raises(FileExistsError):
        stage_attempt.rotate(str(stage), 0o750)
    assert (stage / 'status.json').exists()
    assert os.listdir(stage / 'attempt-1') == ['status.json']


def test_a_refused_move_fails_the_module(run_module, stage, monkeypatch):
    monkeypatch.setattr(_stage_attempt, 'next_attempt', lambda names: 'attempt-1')
    result = run_module(stage_attempt, dict(dir=str(stage)))
    assert result['failed'] and 'attempt-1' in result['msg'] and (stage / 'status.json').exists()


def test_kept_files_are_copied_into_the_attempt_and_stay_in_place_unchanged(run_module, stage):
    (stage / 'result-random-t0-c1-r1.json').write_text('{"complete": true}')
    (stage / 'raw-random-t0-c1-r1.jsonl').write_text('{}\n')
    os.utime(stage / 'raw-random-t0-c1-r1.jsonl', ns=(1_000_000_000, 1_000_000_000))
    result = run_module(stage_attempt, dict(dir=str(stage), keep=['result-*-r*.json', 'raw-*-r*.*']))
    assert result['exit_code'] == 0 and result['changed']
    assert result['kept'] == ['raw-random-t0-c1-r1.jsonl', 'result-random-t0-c1-r1.json']
    assert result['files'] == ['raw-random-t0-c1-r1.jsonl', 'result-random-t0-c1-r1.json', 'result-random-t0-c1.json',
                               'status.json']
    # the attempt is a whole record; the per-repeat files stay for reuse, as they were (content and times)
    assert sorted(os.listdir(stage / 'attempt-2')) == result['files']
    assert sorted(os.listdir(stage)) == ['.hidden', 'attempt-1', 'attempt-2', 'link.json', 'raw-random-t0-c1-r1.jsonl',
                                         'result-random-t0-c1-r1.json']
    for name in result['kept']:
        assert (stage / name).read_text() == (stage / 'attempt-2' / name).read_text()
    assert os.stat(stage / 'raw-random-t0-c1-r1.jsonl').st_mtime_ns == 1_000_000_000
    assert os.stat(stage / 'attempt-2' / 'raw-random-t0-c1-r1.jsonl').st_mtime_ns == 1_000_000_000


def test_check_mode_names_what_would_be_kept(run_module, stage):
    result = run_module(stage_attempt, dict(dir=str(stage), keep=['result-*'], _ansible_check_mode=True))
    assert result['kept'] == ['result-random-t0-c1.json'] and not (stage / 'attempt-2').exists()
