# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Drafter checkpoints: their names and steps, which of them a checkpoint set picks, and (on the host) their files.

Pure functions first (step_of, select), used by the plan on the controller and by the modules on the hosts; then the
host side (standard library only: modules run on the host's bare Python 3.9+).

A checkpoint is a folder holding config.json and at least one weights file (*.safetensors or *.bin), named by its
training step: checkpoint-4000, checkpoint_4000, step-4000, step_4000, step4000, or 4000 (speculators' epoch folders
are numbers too). Other folders (final, latest, best) are not steps and are not listed. The name is matched whole
(to the end of the string, not to "$", which also matches before a final newline: checkpoint-400 and a newline is no
step).

A trainer writes a checkpoint file by file, so a folder is complete only when every weights file is whole (a
safetensors file at least as long as the header its first 8 bytes declare) and every file its index
(*.index.json's weight_map) or a shard's name (model-00001-of-00002.safetensors) calls for is there. A folder that
vanishes while it is listed (a trainer's rotation deletes old checkpoints) is a problem noted, never an exception.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type  # pylint: disable=invalid-name

import datetime
import errno
import glob
import json
import os
import re
import shutil
import struct
import time

from ansible_collections.specdec.bench.plugins.module_utils._common import file_sha256

# checkpoint-4000, checkpoint_4000, step-4000, step_4000, step4000, 4000
STEP_RE = re.compile(r'(?:checkpoint[-_]?|step[-_]?|ckpt[-_]?|global_step[-_]?)?([0-9]+)\Z')
# what the install writes into a checkpoint folder it completed: where the files came from and their sha256
INSTALLED_MANIFEST = '.specdec-checkpoint.json'
# where a copy is assembled on the benchmark host before it is verified and renamed into place
STAGING_PREFIX = '.incoming-'
WEIGHT_SUFFIXES = ('.safetensors', '.bin')
CONFIG = 'config.json'
SHA256_RE = re.compile(r'[0-9a-fA-F]{64}\Z')
# model.safetensors.index.json, pytorch_model.bin.index.json: the index of a sharded checkpoint's weights
INDEX_SUFFIXES = tuple(suffix + '.index.json' for suffix in WEIGHT_SUFFIXES)
# model-00001-of-00002.safetensors: shard 1 of 2 (the index names them all; this catches a folder without its index yet)
SHARD_RE = re.compile(r'(?P<prefix>.+)-(?P<number>[0-9]+)-of-(?P<count>[0-9]+)(?P<suffix>\.safetensors|\.bin)\Z')
# safetensors' own bound on its JSON header (100 MB): a larger declared length is no safetensors file
SAFETENSORS_HEADER_MAX = 100 * 1000 * 1000
VANISHED = 'vanished while it was listed (deleted meanwhile, e.g. by the trainer\'s checkpoint rotation): skipped'


def step_of(name):
    """The training step a checkpoint folder's name gives (checkpoint-4000 -> 4000), or None."""
    match = STEP_RE.match(name or '')
    return int(match.group(1)) if match else None


def select(checkpoints, every=None, last=None):
    """The checkpoints a set picks: steps that are multiples of `every` (all when None), then the `last` of them.

    checkpoints: records with a 'step' (int); the result is sorted by step, each step once (the first record wins).
    """
    seen, ordered = set(), []
    for record in sorted(checkpoints, key=lambda item: item['step']):
        if record['step'] in seen:
            continue
        seen.add(record['step'])
        if every and record['step'] % every:
            continue
        ordered.append(record)
    if last:
        ordered = ordered[-last:]
    return ordered


# ---------------------------------------------------------------------------------------------------------------
# Host side: the checkpoint folders on a host, their files and sha256, the free space, and a verified install.


class CheckpointError(Exception):
    """A refusal: the message says what was refused and why (the module fails with it as it is)."""


def checkpoint_files(folder):
    """The files of a checkpoint folder: relative paths, sorted, of every file under it, except INSTALLED_MANIFEST.

    os.walk does not descend into symbolic links to folders; a symbolic link to a file is listed (and later read and
    hashed through the link, as a checkpoint in a Hugging Face cache links its blobs); a broken link is not a file.
    """
    files = []

    def raise_error(error):
        raise error

    # onerror: a folder (or subfolder) that vanished is an error, not a checkpoint without files
    for current, dirs, names in os.walk(folder, onerror=raise_error):
        dirs.sort()
        for name in names:
            path = os.path.join(current, name)
            relative = os.path.relpath(path, folder)
            if relative == INSTALLED_MANIFEST or not os.path.isfile(path):
                continue
            files.append(relative)
    return sorted(files)


def weights_reason(path):
    """Why a weights file is not whole (empty; a safetensors file shorter than its header declares), or None.

    A safetensors file starts with its JSON header's length N (8 bytes, little endian), then the header: a whole one
    has at least 8 + N bytes. Raises OSError when the file cannot be read (or vanished).
    """
    name = os.path.basename(path)
    with open(path, 'rb') as handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            return '%s is empty' % name
        if not name.endswith('.safetensors'):
            return None
        head = handle.read(8)
    if len(head) < 8:
        return '%s has %d bytes, fewer than the 8 of a safetensors header length' % (name, size)
    declared = struct.unpack('<Q', head)[0]
    if declared > SAFETENSORS_HEADER_MAX:
        return '%s declares a %d-byte header: not a safetensors file' % (name, declared)
    if size < 8 + declared:
        return '%s has %d bytes, fewer than the %d its header declares' % (name, size, 8 + declared)
    return None


def index_reason(folder, name):
    """Why an index (*.index.json) says the checkpoint is not whole (unreadable; a file of its weight_map missing or
    not whole), or None. Raises OSError when the index cannot be read (or vanished)."""
    with open(os.path.join(folder, name), 'rb') as handle:
        data = handle.read()
    try:
        weight_map = json.loads(data.decode('utf-8')).get('weight_map')
    except (ValueError, AttributeError, RecursionError):
        return '%s is not a JSON object' % name
    if not isinstance(weight_map, dict) or not all(isinstance(value, str) for value in weight_map.values()):
        return '%s has no weight_map of tensor names to files' % name
    for shard in sorted(set(weight_map.values())):
        if _bad_path(shard) or not os.path.isfile(os.path.join(folder, shard)):
            return '%s names %s, which is not there' % (name, shard)
        reason = weights_reason(os.path.join(folder, shard))
        if reason:
            return reason
    return None


def shards_reason(names):
    """Why a sharded checkpoint's files say one is missing (model-00001-of-00002.safetensors without 00002), or None."""
    for name in sorted(names):
        match = SHARD_RE.match(name)
        if not match:
            continue
        width, count = len(match.group('number')), int(match.group('count'))
        for number in range(1, min(count, 100000) + 1):
            sibling = '%s-%0*d-of-%s%s' % (match.group('prefix'), width, number, match.group('count'), match.group('suffix'))
            if sibling not in names:
                return '%s is there but %s is not' % (name, sibling)
    return None


def incomplete_reason(folder):
    """Why a folder is not a whole checkpoint, or None when it is one: no config.json, no weights file at its top, a
    weights file not whole, a file its index or a shard's name calls for missing. A folder that vanished: VANISHED."""
    reason = _incomplete_reason(folder)
    return VANISHED if reason and not os.path.isdir(folder) else reason


def _incomplete_reason(folder):
    later = ' (not a checkpoint, or not written completely)'
    try:
        names = set(os.listdir(folder))
        if CONFIG not in names or not os.path.isfile(os.path.join(folder, CONFIG)):
            return 'has no %s: not a checkpoint (or not written completely)' % CONFIG
        weights = sorted(name for name in names if name.endswith(WEIGHT_SUFFIXES) and os.path.isfile(os.path.join(folder, name)))
        if not weights:
            return 'has no weights file (%s): not a checkpoint (or not written completely)' % ', '.join('*' + s for s in WEIGHT_SUFFIXES)
        for name in weights:
            reason = weights_reason(os.path.join(folder, name))
            if reason:
                return 'is not whole: %s%s' % (reason, later)
        for name in sorted(name for name in names if name.endswith(INDEX_SUFFIXES)):
            reason = index_reason(folder, name)
            if reason:
                return 'is not whole: %s%s' % (reason, later)
        reason = shards_reason(set(weights))
        if reason:
            return 'is not whole: %s%s' % (reason, later)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return VANISHED
        return 'cannot be read: %s' % (exc.strerror or exc)
    return None


def read_installed(folder):
    """The parsed INSTALLED_MANIFEST of a folder: a dict, or None when there is none or it is not a JSON object."""
    try:
        with open(os.path.join(folder, INSTALLED_MANIFEST), encoding='utf-8') as handle:
            value = json.load(handle)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def checkpoint_record(folder, checksums=False):
    """The record of one checkpoint folder: name, step, path, bytes, mtime, files (with sha256 when asked), installed."""
    files, total, newest = [], 0, 0.0
    for relative in checkpoint_files(folder):
        path = os.path.join(folder, relative)
        info = os.stat(path)
        entry = {'path': relative, 'bytes': info.st_size}
        if checksums:
            entry['sha256'] = file_sha256(path)
        files.append(entry)
        total += info.st_size
        newest = max(newest, info.st_mtime)
    name = os.path.basename(os.path.normpath(folder))
    return {'name': name, 'step': step_of(name), 'path': folder, 'bytes': total, 'mtime': newest, 'files': files,
            'installed': read_installed(folder)}


def _candidates(root, paths, pattern):
    """(folder, explicit) pairs: root's direct subfolders, the given paths (explicit), or the pattern's folders."""
    if paths is not None:
        return [(os.path.normpath(path), True) for path in paths]
    if pattern is not None:
        found = sorted(path for path in glob.glob(pattern) if os.path.isdir(path))
        return [(os.path.normpath(path), False) for path in found]
    try:
        names = sorted(os.listdir(root)) if root is not None else []
    except (FileNotFoundError, NotADirectoryError):  # no root (or it vanished meanwhile): nothing to list
        return []
    return [(os.path.join(root, name), False) for name in names if os.path.isdir(os.path.join(root, name))]


def list_checkpoints(root=None, paths=None, pattern=None, checksums=False, names=None):
    """(checkpoints, problems) on this host: checkpoint records sorted by step (then name), and what was not listed.

    root: its direct subfolders (a missing root lists nothing); paths: these folders, each of which must be a
    checkpoint (else it is a problem); pattern: the folders glob.glob finds. Hidden folders (.incoming-*, the
    trainer's .checkpoint-<step>.tmp) are never listed and are not problems; neither are folders whose name gives no
    step (final, latest) under root or a pattern. A folder that is not a whole checkpoint (incomplete_reason) is
    skipped and noted, and so is one that vanished or changed while it was read (checked again after its record).
    checksums: sha256 of every file; names: only these checkpoints get them (a name not found is a problem).
    problems: [{path, reason}].
    """
    records, problems = [], []
    for folder, explicit in _candidates(root, paths, pattern):
        name = os.path.basename(folder)
        if name.startswith('.'):
            if explicit:
                problems.append({'path': folder, 'reason': 'is a hidden folder (a copy or a save in progress), not a checkpoint'})
            continue
        if explicit and not os.path.isdir(folder):
            problems.append({'path': folder, 'reason': 'is not a folder' if os.path.lexists(folder) else 'does not exist'})
            continue
        if step_of(name) is None:
            if explicit:
                problems.append({'path': folder, 'reason': 'its name gives no training step (checkpoint-<step>, step-<step> or <step>)'})
            continue
        reason = incomplete_reason(folder)
        if reason:
            problems.append({'path': folder, 'reason': reason})
            continue
        wanted = checksums and (names is None or name in names)
        try:
            record = checkpoint_record(folder, wanted)
        except OSError as exc:
            problems.append({'path': folder, 'reason': VANISHED if exc.errno == errno.ENOENT else
                             'cannot be read: %s' % (exc.strerror or exc)})
            continue
        # a rotation that deleted it (or a trainer that rewrote it) while its files were read: the record is not it
        reason = incomplete_reason(folder)
        if reason:
            problems.append({'path': folder, 'reason': reason if reason == VANISHED else 'changed while it was listed: ' + reason})
            continue
        records.append(record)
    for missing in sorted(set(names or ()) - set(record['name'] for record in records)) if checksums else ():
        problems.append({'path': missing, 'reason': 'was named for checksums and is not among the checkpoints listed'})
    records.sort(key=lambda record: (record['step'], record['name']))
    return records, problems


def free_bytes(path):
    """(the nearest existing ancestor of path, or path itself; its filesystem's bytes free to unprivileged users)."""
    current = os.path.abspath(path)
    while not os.path.exists(current):
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    info = os.statvfs(current)
    return current, info.f_bavail * info.f_frsize


# --- install ---------------------------------------------------------------------------------------------------

def _bad_path(value):
    """True for a relative file path that is empty, absolute, or has a '..' (or empty, '.') component."""
    parts = value.split('/')
    return not value or value.startswith('/') or any(part in ('', '.', '..') for part in parts)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def check_manifest(manifest):
    """The manifest, normalized (files sorted by path, sha256 lower case, bytes total); CheckpointError naming the field."""
    if not isinstance(manifest, dict):
        raise CheckpointError('manifest must be a dict {source_host, source_path, name, step, run, files}, got %r' % (manifest,))
    name = manifest.get('name')
    if not isinstance(name, str) or not name or '/' in name or name.startswith('.') or name in ('.', '..'):
        raise CheckpointError('manifest.name must be the checkpoint folder name (no "/", not hidden), got %r' % (name,))
    step = manifest.get('step')
    if step is None:
        step = step_of(name)
    elif not _is_int(step) or step < 0:
        raise CheckpointError('manifest.step must be an int >= 0 or null, got %r' % (step,))
    elif step_of(name) is not None and step_of(name) != step:
        raise CheckpointError('manifest.step is %d but manifest.name %s gives step %d' % (step, name, step_of(name)))
    for field in ('source_host', 'source_path', 'run'):
        if manifest.get(field) is not None and not isinstance(manifest.get(field), str):
            raise CheckpointError('manifest.%s must be a str or null, got %r' % (field, manifest.get(field)))
    files = manifest.get('files')
    if not isinstance(files, list) or not files:
        raise CheckpointError('manifest.files must be a non-empty list of {path, bytes, sha256}, got %r' % (files,))
    normalized, seen = [], set()
    for index, entry in enumerate(files):
        where = 'manifest.files[%d]' % index
        if not isinstance(entry, dict):
            raise CheckpointError('%s must be a dict {path, bytes, sha256}, got %r' % (where, entry))
        path, size, digest = entry.get('path'), entry.get('bytes'), entry.get('sha256')
        if not isinstance(path, str) or _bad_path(path) or path == INSTALLED_MANIFEST:
            raise CheckpointError('%s.path must be a relative file path without "..", "." or a leading "/" (and not %s), got %r'
                                  % (where, INSTALLED_MANIFEST, path))
        if path in seen:
            raise CheckpointError('%s.path %s is listed twice' % (where, path))
        seen.add(path)
        if not _is_int(size) or size < 0:
            raise CheckpointError('%s.bytes must be an int >= 0, got %r' % (where, size))
        if not isinstance(digest, str) or not SHA256_RE.match(digest):
            raise CheckpointError('%s.sha256 must be 64 hex digits, got %r' % (where, digest))
        normalized.append({'path': path, 'bytes': size, 'sha256': digest.lower()})
    normalized.sort(key=lambda entry: entry['path'])
    return {'source_host': manifest.get('source_host'), 'source_path': manifest.get('source_path'), 'name': name,
            'step': step, 'run': manifest.get('run'), 'bytes': sum(entry['bytes'] for entry in normalized),
            'files': normalized}


def check_folders(staging, dest):
    """Normalized (staging, dest); CheckpointError unless both are absolute, without '..', and siblings."""
    for field, value in (('dest', dest), ('staging', staging)):
        if not isinstance(value, str) or not value.startswith('/') or '..' in value.split('/'):
            raise CheckpointError('%s must be an absolute path without "..", got %r' % (field, value))
    staging, dest = os.path.normpath(staging), os.path.normpath(dest)
    if not os.path.basename(staging).startswith(STAGING_PREFIX):
        raise CheckpointError('staging must be a folder whose name starts with %s, got %s' % (STAGING_PREFIX, staging))
    if os.path.basename(dest).startswith('.') or dest == '/':
        raise CheckpointError('dest must name a folder that is not hidden, got %s' % dest)
    if os.path.dirname(staging) != os.path.dirname(dest):
        raise CheckpointError('staging %s must be beside dest %s (in %s), so the rename stays on one filesystem'
                              % (staging, dest, os.path.dirname(dest)))
    return staging, dest


def _file_set(files):
    return set((entry.get('path'), entry.get('bytes'), str(entry.get('sha256', '')).lower()) for entry in files or ()
               if isinstance(entry, dict))


def _remove_staging(staging):
    """Remove a staging folder, only one whose name starts with STAGING_PREFIX (never anything else)."""
    if os.path.basename(staging).startswith(STAGING_PREFIX) and os.path.isdir(staging) and not os.path.islink(staging):
        shutil.rmtree(staging)


def _origin(manifest):
    return manifest['source_host'] and ' from %s' % manifest['source_host'] or ''


def verify_copy(staging, manifest):
    """None when staging holds exactly the manifest's files with their bytes and sha256, else why not (a sentence)."""
    label = 'checkpoint %s%s' % (manifest['name'], _origin(manifest))
    refused = 'refused, nothing installed'
    present = set()
    for current, dirs, names in os.walk(staging):
        for name in dirs + names:
            path = os.path.join(current, name)
            if os.path.islink(path):
                return ('%s: %s in the copy is a symbolic link; the copy must hold the files themselves; %s'
                        % (label, os.path.relpath(path, staging), refused))
        present.update(os.path.relpath(os.path.join(current, name), staging) for name in names)
    present.discard(INSTALLED_MANIFEST)
    expected = dict((entry['path'], entry) for entry in manifest['files'])
    extra = sorted(present - set(expected))
    if extra:
        return '%s: the copy holds %s, which the source does not list; %s' % (label, ', '.join(extra), refused)
    for entry in manifest['files']:  # sizes first: cheap, and a short copy is named as one
        path = os.path.join(staging, entry['path'])
        if entry['path'] not in present or not os.path.isfile(path):
            return ('%s: %s is missing from the copy (expected %d bytes, sha256 %s); %s'
                    % (label, entry['path'], entry['bytes'], entry['sha256'], refused))
        size = os.path.getsize(path)
        if size != entry['bytes']:
            return ('%s: %s has %d bytes, expected %d bytes (sha256 %s): the copy is incomplete or corrupted; %s'
                    % (label, entry['path'], size, entry['bytes'], entry['sha256'], refused))
    for entry in manifest['files']:
        path = os.path.join(staging, entry['path'])
        digest = file_sha256(path)
        if digest != entry['sha256']:
            return ('%s: %s has sha256 %s (%d bytes), expected %s (%d bytes): the copy is corrupted; %s'
                    % (label, entry['path'], digest, os.path.getsize(path), entry['sha256'], entry['bytes'], refused))
    return None


def _fsync_dir(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def install(staging, dest, manifest, check_mode=False):
    """Verify a copy in staging against the manifest and rename it to dest, which is never overwritten.

    manifest: {source_host, source_path, name, step, run, files: [{path, bytes, sha256}]}.
    Returns {changed, dest, bytes, files, verify_seconds} (files: how many), or {changed: False, dest, reason} when dest
    already holds these files (installed by an earlier run). Raises CheckpointError on a refusal; a copy that does not
    verify (or whose dest holds other content) is removed, dest is never touched. check_mode verifies only (a missing
    staging folder is then no error: the copy did not run either) and writes, renames and removes nothing.
    """
    staging, dest = check_folders(staging, dest)
    manifest = check_manifest(manifest)
    if os.path.lexists(dest):
        installed = read_installed(dest) if os.path.isdir(dest) and not os.path.islink(dest) else None
        if installed is not None and _file_set(installed.get('files')) == _file_set(manifest['files']):
            if not check_mode:
                _remove_staging(staging)
            return {'changed': False, 'dest': dest, 'reason': 'already installed', 'bytes': manifest['bytes'],
                    'files': len(manifest['files'])}
        if installed is not None:
            origin = 'installed from %s:%s' % (installed.get('source_host'), installed.get('source_path'))
        else:
            origin = 'not installed by specdec'
        if not check_mode:
            _remove_staging(staging)
        raise CheckpointError('%s already exists with other content (%s); it is never overwritten' % (dest, origin))
    if not os.path.isdir(staging) or os.path.islink(staging):
        if check_mode:
            return {'changed': True, 'dest': dest, 'bytes': manifest['bytes'], 'files': len(manifest['files']),
                    'verify_seconds': 0.0, 'verified': False}
        raise CheckpointError('checkpoint %s%s: the copy %s does not exist (or is not a folder); nothing installed'
                              % (manifest['name'], _origin(manifest), staging))
    started = time.monotonic()
    problem = verify_copy(staging, manifest)
    seconds = round(time.monotonic() - started, 3)
    if problem:
        if not check_mode:
            _remove_staging(staging)
        raise CheckpointError(problem)
    result = {'changed': True, 'dest': dest, 'bytes': manifest['bytes'], 'files': len(manifest['files']),
              'verify_seconds': seconds, 'verified': True}
    if check_mode:
        return result
    record = dict(manifest, installed=datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ'))
    with open(os.path.join(staging, INSTALLED_MANIFEST), 'w', encoding='utf-8') as handle:
        json.dump(record, handle, indent=1, sort_keys=True)
        handle.write('\n')
        handle.flush()
        os.fsync(handle.fileno())
    _fsync_dir(staging)
    parent = os.path.dirname(dest)
    os.makedirs(parent, 0o755, exist_ok=True)
    if os.path.lexists(dest):  # made since the check above: still never overwritten
        raise CheckpointError('%s appeared while the copy was verified; it is never overwritten' % dest)
    os.rename(staging, dest)
    _fsync_dir(parent)
    return result
