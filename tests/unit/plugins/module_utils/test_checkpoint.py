# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""_checkpoint: names and steps, what a set picks, the folders a host lists, and a verified install that never overwrites."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct

import pytest

from ansible_collections.specdec.bench.plugins.module_utils import _checkpoint as ckpt


def safetensors(data, header=b'{}'):
    """A safetensors file's bytes: its header's length (8 bytes, little endian), the header, then the data."""
    return struct.pack('<Q', len(header)) + header + data


WEIGHTS = safetensors(bytes(range(256)) * 1024)[:262144]  # 262144 bytes, a whole safetensors file


def make_checkpoint(folder, step, weights=WEIGHTS, extra=None):
    """A checkpoint folder as the simulated trainer writes it: config.json + model.safetensors (+ extra files)."""
    folder.mkdir(parents=True)
    (folder / 'config.json').write_text(json.dumps({'specdec_sim': {'step': step, 'quality': 0.5}}))
    (folder / 'model.safetensors').write_bytes(weights)
    for relative, data in (extra or {}).items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_bytes(data)
    return folder


def manifest_of(folder, name=None, **fields):
    files = []
    for relative in ckpt.checkpoint_files(str(folder)):
        data = (folder / relative).read_bytes()
        files.append({'path': relative, 'bytes': len(data), 'sha256': hashlib.sha256(data).hexdigest()})
    manifest = {'source_host': 'a100box', 'source_path': '/root/train_runs/demo/checkpoints/' + (name or folder.name),
                'name': name or folder.name, 'step': ckpt.step_of(name or folder.name), 'run': 'demo', 'files': files}
    manifest.update(fields)
    return manifest


def tree(folder):
    """{relative path: bytes} of every file under folder."""
    return dict((os.path.relpath(os.path.join(current, name), folder), open(os.path.join(current, name), 'rb').read())
                for current, _dirs, names in os.walk(folder) for name in names)


@pytest.mark.parametrize(('name', 'step'), [
    ('checkpoint-4000', 4000), ('checkpoint_4000', 4000), ('step-40', 40), ('step4000', 4000), ('4000', 4000),
    ('global_step12', 12), ('final', None), ('latest', None), ('checkpoint-', None), ('', None), (None, None),
])
def test_step_of(name, step):
    assert ckpt.step_of(name) == step


def test_select_every_and_last():
    records = [{'step': step, 'name': 'c%d' % step} for step in (1200, 400, 800, 200, 1000, 400)]
    assert [r['step'] for r in ckpt.select(records)] == [200, 400, 800, 1000, 1200]
    assert [r['step'] for r in ckpt.select(records, every=400)] == [400, 800, 1200]
    assert [r['step'] for r in ckpt.select(records, every=400, last=2)] == [800, 1200]
    assert [r['step'] for r in ckpt.select(records, last=1)] == [1200]


@pytest.fixture(name='runroot')
def run_root(tmp_path):
    root = tmp_path / 'checkpoints'
    make_checkpoint(root / 'checkpoint-800', 800)
    make_checkpoint(root / 'checkpoint-400', 400, extra={'sub/optimizer.bin': b'opt'})
    make_checkpoint(root / '.checkpoint-1200.tmp', 1200)     # the trainer's save in progress
    make_checkpoint(root / '.incoming-checkpoint-4', 4)      # a copy in progress
    make_checkpoint(root / 'final', 2000)                    # not a step
    (root / 'checkpoint-1600').mkdir()                       # incomplete: no config.json
    (root / 'checkpoint-1600' / 'model.safetensors').write_bytes(b'x')
    (root / 'checkpoint-2000').mkdir()                       # incomplete: no weights
    (root / 'checkpoint-2000' / 'config.json').write_text('{}')
    (root / 'notes.txt').write_text('a file, not a folder')
    return root


def test_listing_names_steps_and_skips(runroot):
    records, problems = ckpt.list_checkpoints(root=str(runroot))
    assert [(r['name'], r['step']) for r in records] == [('checkpoint-400', 400), ('checkpoint-800', 800)]
    first = records[0]
    assert first['path'] == str(runroot / 'checkpoint-400')
    assert first['files'] == [{'path': 'config.json', 'bytes': len((runroot / 'checkpoint-400' / 'config.json').read_bytes())},
                              {'path': 'model.safetensors', 'bytes': len(WEIGHTS)}, {'path': 'sub/optimizer.bin', 'bytes': 3}]
    assert first['bytes'] == sum(f['bytes'] for f in first['files'])
    assert first['mtime'] == max(os.stat(runroot / 'checkpoint-400' / f['path']).st_mtime for f in first['files'])
    assert first['installed'] is None and 'sha256' not in first['files'][0]
    reasons = dict((os.path.basename(p['path']), p['reason']) for p in problems)
    assert sorted(reasons) == ['checkpoint-1600', 'checkpoint-2000']
    assert 'no config.json' in reasons['checkpoint-1600'] and 'no weights file' in reasons['checkpoint-2000']


def test_a_missing_root_lists_nothing(tmp_path):
    assert ckpt.list_checkpoints(root=str(tmp_path / 'nosuch')) == ([], [])


def test_checksums_match_hashlib_and_names_limit_them(runroot):
    records, problems = ckpt.list_checkpoints(root=str(runroot), checksums=True)
    assert len(problems) == 2  # the two incomplete folders
    for record in records:
        for entry in record['files']:
            data = (runroot / record['name'] / entry['path']).read_bytes()
            assert entry['sha256'] == hashlib.sha256(data).hexdigest()
    records, problems = ckpt.list_checkpoints(root=str(runroot), checksums=True, names=['checkpoint-800', 'checkpoint-9'])
    assert ['sha256' in r['files'][0] for r in records] == [False, True]
    assert {'path': 'checkpoint-9', 'reason': 'was named for checksums and is not among the checkpoints listed'} in problems
    assert ckpt.file_sha256(str(runroot / 'checkpoint-800' / 'model.safetensors')) == hashlib.sha256(WEIGHTS).hexdigest()


def test_explicit_paths_must_be_checkpoints(runroot, tmp_path):
    paths = [str(runroot / 'checkpoint-800'), str(runroot / 'final'), str(tmp_path / 'nosuch'), str(runroot / 'checkpoint-2000'),
             str(runroot / '.incoming-checkpoint-4'), str(runroot / 'notes.txt')]
    records, problems = ckpt.list_checkpoints(paths=paths)
    assert [r['name'] for r in records] == ['checkpoint-800']
    reasons = [p['reason'] for p in problems]
    assert [p['path'] for p in problems] == paths[1:]
    assert 'gives no training step' in reasons[0] and reasons[1] == 'does not exist' and 'no weights' in reasons[2]
    assert 'hidden' in reasons[3] and reasons[4] == 'is not a folder'


def test_pattern_lists_matching_folders_only(runroot):
    records, problems = ckpt.list_checkpoints(pattern=str(runroot / '*'))
    assert [r['step'] for r in records] == [400, 800] and len(problems) == 2
    records, _problems = ckpt.list_checkpoints(pattern=str(runroot / 'checkpoint-8*'))
    assert [r['step'] for r in records] == [800]


def test_installed_manifest_is_read_and_not_a_file(runroot):
    folder = runroot / 'checkpoint-800'
    (folder / ckpt.INSTALLED_MANIFEST).write_text(json.dumps({'source_host': 'a100box', 'files': []}))
    record = ckpt.list_checkpoints(paths=[str(folder)])[0][0]
    assert record['installed'] == {'source_host': 'a100box', 'files': []}
    assert ckpt.INSTALLED_MANIFEST not in [f['path'] for f in record['files']]
    (folder / ckpt.INSTALLED_MANIFEST).write_text('{not json')
    assert ckpt.list_checkpoints(paths=[str(folder)])[0][0]['installed'] is None


def test_free_bytes_of_the_nearest_existing_folder(tmp_path):
    path, free = ckpt.free_bytes(str(tmp_path / 'a' / 'b'))
    assert path == str(tmp_path)
    info = os.statvfs(str(tmp_path))
    assert free == info.f_bavail * info.f_frsize


# --- install ---------------------------------------------------------------------------------------------------

@pytest.fixture(name='copy')
def copied(tmp_path):
    """(source folder, staging copy beside dest, dest, manifest)."""
    source = make_checkpoint(tmp_path / 'train' / 'checkpoint-400', 400, extra={'sub/tokenizer.json': b'{}'})
    shipped = tmp_path / 'bench' / 'demo'
    staging = shipped / (ckpt.STAGING_PREFIX + 'checkpoint-400')
    staging.mkdir(parents=True)
    for relative, data in tree(str(source)).items():
        (staging / relative).parent.mkdir(parents=True, exist_ok=True)
        (staging / relative).write_bytes(data)
    return source, staging, shipped / 'checkpoint-400', manifest_of(source)


def test_install_verifies_and_renames(copy):
    source, staging, dest, manifest = copy
    result = ckpt.install(str(staging), str(dest), manifest)
    assert result['changed'] and result['dest'] == str(dest) and result['files'] == 3
    assert result['bytes'] == sum(len(data) for data in tree(str(source)).values())
    assert not staging.exists()
    files = tree(str(dest))
    written = json.loads(files.pop(ckpt.INSTALLED_MANIFEST))
    assert files == tree(str(source))
    assert written['installed'].endswith('Z') and written['bytes'] == result['bytes'] and written['run'] == 'demo'
    assert written['source_host'] == 'a100box' and written['files'] == sorted(manifest['files'], key=lambda f: f['path'])
    # listed on the benchmark host with what it was installed from
    record = ckpt.list_checkpoints(paths=[str(dest)])[0][0]
    assert record['installed']['source_path'] == manifest['source_path']
    # a second install of the same checkpoint changes nothing and removes its (new) copy
    staging.mkdir()
    again = ckpt.install(str(staging), str(dest), manifest)
    assert again['changed'] is False and again['reason'] == 'already installed' and not staging.exists()


def test_a_corrupted_byte_is_refused(copy):
    _source, staging, dest, manifest = copy
    data = bytearray(WEIGHTS)
    data[1000] ^= 0xFF
    (staging / 'model.safetensors').write_bytes(bytes(data))
    with pytest.raises(ckpt.CheckpointError) as error:
        ckpt.install(str(staging), str(dest), manifest)
    message = str(error.value)
    expected = hashlib.sha256(WEIGHTS).hexdigest()
    found = hashlib.sha256(bytes(data)).hexdigest()
    assert message.startswith('checkpoint checkpoint-400 from a100box: model.safetensors has sha256 %s (262144 bytes), '
                              'expected %s (262144 bytes): the copy is corrupted' % (found, expected))
    assert not dest.exists() and not staging.exists()


@pytest.mark.parametrize(('change', 'words'), [
    (lambda staging: (staging / 'model.safetensors').write_bytes(WEIGHTS[:1000]), 'model.safetensors has 1000 bytes, expected 262144 bytes'),
    (lambda staging: (staging / 'sub' / 'tokenizer.json').unlink(), 'sub/tokenizer.json is missing from the copy (expected 2 bytes'),
    (lambda staging: (staging / 'sub' / 'extra.bin').write_bytes(b'x'), 'the copy holds sub/extra.bin, which the source does not list'),
    (lambda staging: (staging / 'link').symlink_to(staging / 'config.json'), 'link in the copy is a symbolic link'),
])
def test_an_incomplete_or_different_copy_is_refused(copy, change, words):
    _source, staging, dest, manifest = copy
    change(staging)
    with pytest.raises(ckpt.CheckpointError) as error:
        ckpt.install(str(staging), str(dest), manifest)
    assert words in str(error.value) and str(error.value).endswith('refused, nothing installed')
    assert not dest.exists() and not staging.exists()


def test_an_existing_dest_with_other_content_is_never_overwritten(copy):
    source, staging, dest, manifest = copy
    make_checkpoint(dest, 400, weights=b'other weights')
    before = tree(str(dest))
    with pytest.raises(ckpt.CheckpointError) as error:
        ckpt.install(str(staging), str(dest), manifest)
    assert str(error.value) == '%s already exists with other content (not installed by specdec); it is never overwritten' % dest
    assert tree(str(dest)) == before and not staging.exists()
    # one installed from elsewhere is named
    (dest / ckpt.INSTALLED_MANIFEST).write_text(json.dumps(manifest_of(dest, source_host='h100box', source_path='/x/checkpoint-400')))
    before = tree(str(dest))
    with pytest.raises(ckpt.CheckpointError, match=r'\(installed from h100box:/x/checkpoint-400\)'):
        ckpt.install(str(staging), str(dest), manifest)
    assert tree(str(dest)) == before
    assert tree(str(source))  # the source is never touched


def test_check_mode_verifies_and_changes_nothing(copy):
    _source, staging, dest, manifest = copy
    before = tree(str(staging))
    result = ckpt.install(str(staging), str(dest), manifest, check_mode=True)
    assert result['changed'] and result['verified'] and not dest.exists() and tree(str(staging)) == before
    (staging / 'config.json').write_text('{"changed": 1}')
    with pytest.raises(ckpt.CheckpointError, match='config.json has'):
        ckpt.install(str(staging), str(dest), manifest, check_mode=True)
    assert staging.exists() and not dest.exists()
    missing = ckpt.install(str(staging) + 'x', str(dest), manifest, check_mode=True)
    assert missing['verified'] is False and not dest.exists()


def test_a_missing_copy_is_refused(copy):
    _source, staging, dest, manifest = copy
    with pytest.raises(ckpt.CheckpointError, match='does not exist'):
        ckpt.install(str(staging) + 'x', str(dest), manifest)


@pytest.mark.parametrize(('field', 'value', 'words'), [
    ('dest', 'relative/checkpoint-400', 'dest must be an absolute path'),
    ('dest', '/a/../checkpoint-400', 'dest must be an absolute path without ".."'),
    ('staging', '/elsewhere/checkpoint-400', 'staging must be a folder whose name starts with .incoming-'),
    ('staging', '/other/.incoming-checkpoint-400', 'must be beside dest'),
    ('name', 'a/b', 'manifest.name must be'),
    ('step', 500, 'manifest.step is 500 but manifest.name checkpoint-400 gives step 400'),
    ('step', -1, 'manifest.step must be an int >= 0'),
    ('files', [], 'manifest.files must be a non-empty list'),
    ('path', '../x', 'manifest.files[0].path must be a relative file path'),
    ('path', '/etc/passwd', 'manifest.files[0].path must be a relative file path'),
    ('bytes', -3, 'manifest.files[0].bytes must be an int >= 0'),
    ('bytes', True, 'manifest.files[0].bytes must be an int >= 0'),
    ('sha256', 'abc', 'manifest.files[0].sha256 must be 64 hex digits'),
])
def test_bad_arguments_name_the_field(copy, field, value, words):
    _source, staging, dest, manifest = copy
    args = {'staging': str(staging), 'dest': str(dest)}
    if field in args:
        args[field] = value
    elif field in ('path', 'bytes', 'sha256'):
        manifest['files'][0][field] = value
    else:
        manifest[field] = value
    with pytest.raises(ckpt.CheckpointError) as error:
        ckpt.install(args['staging'], args['dest'], manifest)
    assert words in str(error.value)
    assert staging.exists() and not dest.exists()


# --- checkpoints listed while a trainer writes or rotates them, and names with a trailing newline

def sharded(folder, shards=2, written=None, index=True):
    """A sharded checkpoint as save_pretrained writes it: config.json, model-0000i-of-0000n.safetensors (the first
    `written` of them) and model.safetensors.index.json naming them all."""
    folder.mkdir(parents=True)
    (folder / 'config.json').write_text('{}')
    names = ['model-%05d-of-%05d.safetensors' % (number, shards) for number in range(1, shards + 1)]
    for name in names[:shards if written is None else written]:
        (folder / name).write_bytes(safetensors(b'\0' * 64, b'{"w":{"dtype":"BF16","shape":[32],"data_offsets":[0,64]}}'))
    if index:
        (folder / 'model.safetensors.index.json').write_text(json.dumps(
            {'metadata': {'total_size': 64 * shards}, 'weight_map': dict(('layer%d.w' % i, name) for i, name in enumerate(names))}))
    return folder


@pytest.mark.parametrize(('write', 'words'), [
    (lambda folder: sharded(folder, written=1),
     'model.safetensors.index.json names model-00002-of-00002.safetensors, which is not there'),
    (lambda folder: sharded(folder, written=1, index=False),
     'model-00001-of-00002.safetensors is there but model-00002-of-00002.safetensors is not'),
    (lambda folder: make_checkpoint(folder, 1, weights=b''), 'model.safetensors is empty'),
    (lambda folder: make_checkpoint(folder, 1, weights=struct.pack('<Q', 100) + b'{"w"'),
     'model.safetensors has 12 bytes, fewer than the 108 its header declares'),
    (lambda folder: make_checkpoint(folder, 1, weights=b'\x02\0\0'),
     'model.safetensors has 3 bytes, fewer than the 8 of a safetensors header length'),
    (lambda folder: make_checkpoint(folder, 1, extra={'model.safetensors.index.json': b'{"weight_map": {"a": "model.saf'}),
     'model.safetensors.index.json is not a JSON object'),
    (lambda folder: make_checkpoint(folder, 1, extra={'pytorch_model.bin': b''}), 'pytorch_model.bin is empty'),
])
def test_a_checkpoint_still_being_written_is_not_listed(tmp_path, write, words):
    root = tmp_path / 'checkpoints'
    make_checkpoint(root / 'checkpoint-200', 200)
    write(root / 'checkpoint-400')
    records, problems = ckpt.list_checkpoints(root=str(root))
    assert [record['name'] for record in records] == ['checkpoint-200']
    assert [problem['path'] for problem in problems] == [str(root / 'checkpoint-400')]
    assert problems[0]['reason'].startswith('is not whole: ' + words), problems[0]['reason']


def test_a_whole_sharded_checkpoint_is_listed(tmp_path):
    folder = sharded(tmp_path / 'checkpoint-400', shards=3)
    records, problems = ckpt.list_checkpoints(paths=[str(folder)])
    assert problems == [] and [record['step'] for record in records] == [400]
    assert [entry['path'] for entry in records[0]['files']] == [
        'config.json', 'model-00001-of-00003.safetensors', 'model-00002-of-00003.safetensors',
        'model-00003-of-00003.safetensors', 'model.safetensors.index.json']


@pytest.mark.parametrize('where', ['checkpoint_files', 'file_sha256', 'listdir'])
def test_rotation_while_listing_is_a_problem_not_an_exception(runroot, monkeypatch, where):
    """The trainer's rotation deletes checkpoint-400 while it is listed with checksums (it raised FileNotFoundError):
    it is skipped with a note, and the rest is listed."""
    victim = str(runroot / 'checkpoint-400')
    target = ckpt if where != 'listdir' else ckpt.os
    original = getattr(target, where)

    def rotating(path, *args, **kwargs):
        if path.startswith(victim) and os.path.isdir(victim):
            shutil.rmtree(victim)
        return original(path, *args, **kwargs)

    monkeypatch.setattr(target, where, rotating)
    records, problems = ckpt.list_checkpoints(root=str(runroot), checksums=True)
    assert [record['name'] for record in records] == ['checkpoint-800']
    assert {'path': victim, 'reason': ckpt.VANISHED} in problems
    assert len(problems) == 3  # and the two incomplete folders, as before


def test_a_folder_emptied_while_its_files_are_read_is_not_listed(runroot, monkeypatch):
    """A rotation half done when the files were read (config.json gone, the rest listed) is no checkpoint."""
    victim = runroot / 'checkpoint-400'
    original = ckpt.checkpoint_record

    def half_rotated(folder, checksums=False):
        record = original(folder, checksums)
        if folder == str(victim):
            (victim / 'config.json').unlink()
        return record

    monkeypatch.setattr(ckpt, 'checkpoint_record', half_rotated)
    records, problems = ckpt.list_checkpoints(root=str(runroot))
    assert [record['name'] for record in records] == ['checkpoint-800']
    reason = 'changed while it was listed: has no config.json: not a checkpoint (or not written completely)'
    assert {'path': str(victim), 'reason': reason} in problems


@pytest.mark.parametrize('name', ['checkpoint-400\n', '400\n', 'step-400\n', 'checkpoint-400\n\n'])
def test_a_name_with_a_trailing_newline_gives_no_step(tmp_path, name):
    assert ckpt.step_of(name) is None
    root = tmp_path / 'checkpoints'
    make_checkpoint(root / name, 400)
    make_checkpoint(root / 'checkpoint-800', 800)
    records, problems = ckpt.list_checkpoints(root=str(root))
    assert [record['name'] for record in records] == ['checkpoint-800'] and problems == []
    records, problems = ckpt.list_checkpoints(paths=[str(root / name)])
    assert records == [] and 'gives no training step' in problems[0]['reason']


def test_a_manifest_sha256_with_a_trailing_newline_is_refused(tmp_path):
    folder = make_checkpoint(tmp_path / 'checkpoint-400', 400)
    manifest = manifest_of(folder)
    manifest['files'][0]['sha256'] += '\n'
    with pytest.raises(ckpt.CheckpointError, match=r'manifest.files\[0\].sha256 must be 64 hex digits'):
        ckpt.check_manifest(manifest)
