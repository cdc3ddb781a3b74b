# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""checkpoint_facts: a host's checkpoint folders through the module, read-only, with sha256 and free space when asked."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct

from ansible_collections.specdec.bench.plugins.modules import checkpoint_facts


def safetensors(data):
    """A safetensors file's bytes: its header's length (8 bytes, little endian), the header ({}), then the data."""
    return struct.pack('<Q', 2) + b'{}' + data


def make_checkpoint(folder, data=b'weights'):
    folder.mkdir(parents=True)
    (folder / 'config.json').write_text(json.dumps({'specdec_sim': {'step': 1, 'quality': 0.5}}))
    (folder / 'model.safetensors').write_bytes(safetensors(data))


def test_root_lists_checkpoints_sorted_by_step(run_module, tmp_path):
    root = tmp_path / 'checkpoints'
    for name in ('checkpoint-1000', 'checkpoint-200', '.checkpoint-1200.tmp', 'final'):
        make_checkpoint(root / name)
    (root / 'checkpoint-1400').mkdir()
    result = run_module(checkpoint_facts, dict(root=str(root)))
    assert result['exit_code'] == 0 and result['changed'] is False and result['root_exists'] is True
    assert [(c['name'], c['step']) for c in result['checkpoints']] == [('checkpoint-200', 200), ('checkpoint-1000', 1000)]
    assert result['checkpoints'][0]['files'][1] == {'path': 'model.safetensors', 'bytes': 17}
    assert [p['path'] for p in result['problems']] == [str(root / 'checkpoint-1400')]
    assert result['space'] is None


def test_checksums_for_named_checkpoints_and_space(run_module, tmp_path):
    root = tmp_path / 'checkpoints'
    make_checkpoint(root / 'checkpoint-1', b'one')
    make_checkpoint(root / 'checkpoint-2', b'two')
    result = run_module(checkpoint_facts, dict(root=str(root), checksums=True, names=['checkpoint-2'],
                                               space_path=str(tmp_path / 'shipped' / 'demo')))
    first, second = result['checkpoints']
    assert 'sha256' not in first['files'][1]
    assert second['files'][1]['sha256'] == hashlib.sha256(safetensors(b'two')).hexdigest()
    info = os.statvfs(str(tmp_path))
    assert result['space'] == {'path': str(tmp_path), 'free_bytes': info.f_bavail * info.f_frsize}


def test_a_missing_root_is_no_error(run_module, tmp_path):
    result = run_module(checkpoint_facts, dict(root=str(tmp_path / 'nosuch'), _ansible_check_mode=True))
    assert result['exit_code'] == 0 and result['checkpoints'] == [] and result['root_exists'] is False
    assert result['changed'] is False


def test_paths_and_pattern(run_module, tmp_path):
    make_checkpoint(tmp_path / 'a' / 'step-30')
    make_checkpoint(tmp_path / 'b' / 'step-10')
    result = run_module(checkpoint_facts, dict(paths=[str(tmp_path / 'a' / 'step-30'), str(tmp_path / 'b' / 'step-10'),
                                                      str(tmp_path / 'c')]))
    assert [c['step'] for c in result['checkpoints']] == [10, 30] and result['root_exists'] is None
    assert result['problems'] == [{'path': str(tmp_path / 'c'), 'reason': 'does not exist'}]
    result = run_module(checkpoint_facts, dict(pattern=str(tmp_path / '*' / 'step-*')))
    assert [c['path'] for c in result['checkpoints']] == [str(tmp_path / 'b' / 'step-10'), str(tmp_path / 'a' / 'step-30')]


def test_exactly_one_source_and_names_need_checksums(run_module, tmp_path):
    both = run_module(checkpoint_facts, dict(root=str(tmp_path), pattern='/x/*'))
    assert both['failed'] and 'mutually exclusive' in both['msg']
    none = run_module(checkpoint_facts, dict(checksums=True))
    assert none['failed'] and 'one of the following is required' in none['msg']
    names = run_module(checkpoint_facts, dict(root=str(tmp_path), names=['checkpoint-1']))
    assert names['failed'] and names['msg'] == 'names picks the checkpoints whose files get sha256; it needs checksums: true'


def test_rotation_during_a_checksum_listing_is_a_problem_not_a_failure(run_module, tmp_path, monkeypatch):
    """The trainer's rotation deleted a checkpoint while its sha256 were read: FileNotFoundError failed the
    listing (488 of 1253 listings). It is skipped with a note; a checkpoint still being written is not listed."""
    from ansible_collections.specdec.bench.plugins.module_utils import _checkpoint  # pylint: disable=import-outside-toplevel
    root = tmp_path / 'checkpoints'
    for name in ('checkpoint-100', 'checkpoint-200', 'checkpoint-300'):
        make_checkpoint(root / name)
    (root / 'checkpoint-300' / 'model.safetensors').write_bytes(b'')  # the trainer is writing it
    sha256 = _checkpoint.file_sha256

    def rotating(path, *args):
        if os.path.isdir(str(root / 'checkpoint-100')):
            shutil.rmtree(str(root / 'checkpoint-100'))
        return sha256(path, *args)

    monkeypatch.setattr(_checkpoint, 'file_sha256', rotating)
    result = run_module(checkpoint_facts, dict(root=str(root), checksums=True))
    assert result['exit_code'] == 0, result
    assert [c['name'] for c in result['checkpoints']] == ['checkpoint-200']
    reasons = dict((os.path.basename(p['path']), p['reason']) for p in result['problems'])
    assert reasons['checkpoint-100'].startswith('vanished while it was listed')
    assert reasons['checkpoint-300'].startswith('is not whole: model.safetensors is empty')
