# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unpacking a host's campaign archive on the controller: verify it against the host's manifest, then merge.

Controller side, used by the specdec.bench.results_unpack action. The rules:
- Nothing is written unless every file of the archive is in the manifest with the same size and sha256, and every
  manifest entry is in the archive (a truncated or altered transfer changes nothing).
- A file already collected with the same content is left alone (a rerun changes nothing).
- A file whose content differs (a stage rerun on the host) replaces the collected one, and the collected one is
  kept as evidence under <campaign>/.collect/superseded/<UTC time>/<path>: nothing is silently clobbered.
- A collected file that the host no longer has (moved to a stage's attempt-<n>/ by a rerun there, or removed) moves to
  the same evidence folder, and is reported: the campaign folder holds what the host holds, so the report never reads
  a result the host has set aside, and nothing is lost.
- A member's bytes are counted while they are read: one larger than the manifest says is refused without reading on.
- The destination is checked before anything moves: a symbolic link anywhere below dest (host, campaign, stage folder,
  file) is refused, and so is a file where a folder is needed or a folder where a file is. The archive is extracted
  and verified in a temporary folder next to the campaign's; a new campaign folder is moved into place whole, an
  existing one is merged file by file, and a merge that fails halfway is undone move by move.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import shutil
import tarfile
import tempfile

from ansible_collections.specdec.bench.plugins.module_utils._common import CHUNK, atomic_write, file_sha256

META_DIR = '.collect'
MANIFEST_NAME = 'manifest.json'
SUPERSEDED_DIR = 'superseded'


class CollectError(ValueError):
    """The archive or manifest cannot be trusted, the destination cannot take it, or the arguments are wrong.

    Nothing was changed in the destination."""


def _is_size(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def check_manifest(manifest):
    """{path: entry} from the host's manifest; every path relative, normalized, outside .collect and unique, and
    no path a folder of another."""
    if not isinstance(manifest, list):
        raise CollectError('manifest is %r; allowed: the list results_archive returns' % type(manifest).__name__)
    entries = {}
    for entry in manifest:
        if (not isinstance(entry, dict) or not isinstance(entry.get('path'), str) or not isinstance(entry.get('sha256'), str)
                or not _is_size(entry.get('size'))):
            raise CollectError('manifest entry %r; allowed: {path, size, sha256} with size a number of bytes' % (entry,))
        path = entry['path']
        if (path.startswith('/') or posixpath.normpath(path) != path or path.split('/')[0] in ('..', '.', META_DIR)
                or '..' in path.split('/')):
            raise CollectError('manifest path %r; allowed: a normalized path inside the campaign folder, not under %s/' % (path, META_DIR))
        if path in entries:
            raise CollectError('manifest lists %s twice' % path)
        entries[path] = entry
    for path in entries:
        parts = path.split('/')
        for depth in range(1, len(parts)):
            if '/'.join(parts[:depth]) in entries:
                raise CollectError('manifest lists %s as a file and as a folder (of %s)' % ('/'.join(parts[:depth]), path))
    return entries


def copy_member(source, handle, digest, size, name):
    """Copy at most size bytes of source to handle, hashing them; one byte more is refused without reading on."""
    copied = 0
    while True:
        block = source.read(min(CHUNK, size - copied + 1))
        if not block:
            return copied
        copied += len(block)
        if copied > size:
            raise CollectError('%s holds more than the %d bytes the manifest says' % (name, size))
        digest.update(block)
        handle.write(block)


def extract_verified(archive, entries, staging):
    """Extract the archive's regular files into staging, each checked against its manifest entry; {path: mtime}.

    A member whose header size is not the manifest's is refused before it is read, and no member is read past the
    size the manifest gives it, so a small archive cannot fill the disk before the refusal.
    """
    seen = {}
    try:
        with tarfile.open(archive, 'r:*') as tar:
            for member in tar:
                if member.name not in entries:
                    raise CollectError('the archive holds %s, which the manifest does not list' % member.name)
                if not member.isfile():
                    raise CollectError('the archive holds %s, which is not a regular file' % member.name)
                if member.name in seen:
                    raise CollectError('the archive holds %s twice' % member.name)
                entry = entries[member.name]
                if member.size != entry['size']:
                    raise CollectError('%s is %d bytes in the archive; the manifest says %d' % (member.name, member.size, entry['size']))
                target = os.path.join(staging, *member.name.split('/'))
                os.makedirs(os.path.dirname(target), exist_ok=True)
                digest = hashlib.sha256()
                with open(target, 'wb') as handle:
                    copied = copy_member(tar.extractfile(member), handle, digest, entry['size'], member.name)
                if copied != entry['size'] or digest.hexdigest() != entry['sha256']:
                    raise CollectError('%s does not match the host\'s manifest (%d bytes, sha256 %s; manifest %d bytes, %s)' % (
                        member.name, copied, digest.hexdigest(), entry['size'], entry['sha256']))
                seen[member.name] = member.mtime
    except (tarfile.TarError, EOFError) as exc:
        raise CollectError('%s is not a readable archive: %s' % (archive, exc)) from exc
    missing = sorted(set(entries) - set(seen))
    if missing:
        raise CollectError('the archive lacks %d file(s) of the manifest, first %s' % (len(missing), missing[0]))
    return seen


def check_destination(root, campaign_dir, files, folders=()):
    """Refuse a destination that cannot take these files and folders (relative to campaign_dir) without following a link.

    Every existing entry from below root down to each file or folder must be a real folder (a file: a regular file);
    a symbolic link anywhere there, a file where a folder is needed or a folder where a file is, is a CollectError
    naming it. Nothing is written.
    """
    root = os.path.abspath(root)
    relative = os.path.relpath(os.path.abspath(campaign_dir), root)
    if relative == os.curdir or relative.split(os.sep)[0] == os.pardir:
        raise CollectError('%s is not a folder below %s' % (campaign_dir, root))
    checked = set()

    def check(path, folder):
        if path in checked:
            return
        checked.add(path)
        if os.path.islink(path):
            raise CollectError('%s is a symbolic link; allowed: real folders and files below %s (links are not followed)' % (path, root))
        if not os.path.lexists(path):
            return
        if folder and not os.path.isdir(path):
            raise CollectError('%s is a file where the archive needs a folder; move it away and collect again' % path)
        if not folder and not os.path.isfile(path):
            raise CollectError('%s is %s where the archive has a file; move it away and collect again' % (
                path, 'a folder' if os.path.isdir(path) else 'not a regular file'))

    for path, is_folder in [(path, False) for path in files] + [(path, True) for path in folders]:
        parts = relative.split(os.sep) + path.split('/')
        for depth in range(1, len(parts) + 1):
            check(os.path.join(root, *parts[:depth]), is_folder or depth < len(parts))


def collected_files(campaign_dir):
    """Relative paths of the files already collected for a campaign (outside .collect)."""
    found = []
    if not os.path.isdir(campaign_dir):
        return found
    for current, dirs, names in os.walk(campaign_dir):
        if current == campaign_dir and META_DIR in dirs:
            dirs.remove(META_DIR)
        for name in names:
            found.append(os.path.relpath(os.path.join(current, name), campaign_dir).replace(os.sep, '/'))
    return sorted(found)


def plan_merge(entries, campaign_dir):
    """{'added': [...], 'superseded': [...], 'unchanged': [...], 'only_on_controller': [...]} for a manifest."""
    plan = {'added': [], 'superseded': [], 'unchanged': [], 'only_on_controller': []}
    for path in sorted(entries):
        local = os.path.join(campaign_dir, *path.split('/'))
        if not os.path.lexists(local):
            plan['added'].append(path)
        elif os.path.isfile(local) and not os.path.islink(local) and file_sha256(local) == entries[path]['sha256']:
            plan['unchanged'].append(path)
        else:
            plan['superseded'].append(path)
    plan['only_on_controller'] = [path for path in collected_files(campaign_dir) if path not in entries]
    return plan


def _unique_dir(parent, name):
    path, number = os.path.join(parent, name), 1
    while os.path.exists(path):
        number += 1
        path = os.path.join(parent, '%s-%d' % (name, number))
    return path


class _Merge:
    """The moves and new folders of one merge, so that a merge failing halfway can be undone in reverse order."""

    def __init__(self):
        self.moves, self.folders = [], []

    def makedirs(self, path):
        missing = []
        while not os.path.isdir(path):
            missing.append(path)
            path = os.path.dirname(path)
        for folder in reversed(missing):
            os.mkdir(folder)
            self.folders.append(folder)

    def move(self, source, target):
        self.makedirs(os.path.dirname(target))
        os.replace(source, target)
        self.moves.append((source, target))

    def undo(self):
        """Put every moved file back and remove the new folders; the paths it could not restore."""
        failed = []
        for source, target in reversed(self.moves):
            try:
                os.replace(target, source)
            except OSError:
                failed.append(target)
        for folder in reversed(self.folders):
            try:
                os.rmdir(folder)
            except OSError:
                pass
        return failed


def _manifest_text(entries, source):
    return json.dumps({'source': source, 'files': [entries[path] for path in sorted(entries)]}, indent=2) + '\n'


def unpack(archive, manifest, campaign_dir, stamp, source=None, check=False, root=None):
    """Verify archive against manifest, then merge it into campaign_dir (see the module docstring for the rules).

    stamp names the evidence folder of this run (a UTC time). root is the folder below which no link is followed
    (dest; default the parent of campaign_dir's parent, <dest>/<host>/<campaign>). With check=True nothing is
    written; the plan is made from the manifest alone (the archive is not needed). Returns the plan with
    'superseded_dir' (or None).
    """
    entries = check_manifest(manifest)
    campaign_dir = os.path.abspath(campaign_dir)
    root = os.path.abspath(root) if root else os.path.dirname(os.path.dirname(campaign_dir))
    check_destination(root, campaign_dir, sorted(entries) + ['%s/%s' % (META_DIR, MANIFEST_NAME)], ['%s/%s' % (META_DIR, SUPERSEDED_DIR)])
    result = plan_merge(entries, campaign_dir)
    result['superseded_dir'] = None
    if check:
        return result
    parent = os.path.dirname(campaign_dir)
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix='.collect-', dir=parent)
    try:
        # a folder of ordinary mode inside the private temporary one: the campaign folder of a first collect
        staged_dir = os.path.join(staging, os.path.basename(campaign_dir))
        os.mkdir(staged_dir)
        mtimes = extract_verified(archive, entries, staged_dir)
        for path in entries:
            staged = os.path.join(staged_dir, *path.split('/'))
            os.chmod(staged, 0o644)
            os.utime(staged, (mtimes[path], mtimes[path]))
        if not os.path.lexists(campaign_dir):
            os.mkdir(os.path.join(staged_dir, META_DIR))
            atomic_write(os.path.join(staged_dir, META_DIR, MANIFEST_NAME), _manifest_text(entries, source))
            os.rename(staged_dir, campaign_dir)
        else:
            _merge(entries, campaign_dir, staged_dir, stamp, source, result)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return result


def _merge(entries, campaign_dir, staged_dir, stamp, source, result):
    """Move the verified files into an existing campaign folder, the superseded ones and those the host no longer has
    to evidence; undone on failure."""
    merge = _Merge()
    try:
        aside = result['superseded'] + result['only_on_controller']
        if aside:
            evidence = _unique_dir(os.path.join(campaign_dir, META_DIR, SUPERSEDED_DIR), stamp)
            result['superseded_dir'] = evidence
            for path in aside:
                merge.move(os.path.join(campaign_dir, *path.split('/')), os.path.join(evidence, *path.split('/')))
        for path in result['added'] + result['superseded']:
            merge.move(os.path.join(staged_dir, *path.split('/')), os.path.join(campaign_dir, *path.split('/')))
        manifest_path = os.path.join(campaign_dir, META_DIR, MANIFEST_NAME)
        staged_manifest = os.path.join(staged_dir, META_DIR + '.manifest')
        atomic_write(staged_manifest, _manifest_text(entries, source))
        if not os.path.exists(manifest_path) or file_sha256(manifest_path) != file_sha256(staged_manifest):
            if os.path.exists(manifest_path):  # moved aside, so that an undo puts it back like every other file
                merge.move(manifest_path, os.path.join(staged_dir, META_DIR + '.previous'))
            merge.move(staged_manifest, manifest_path)
    except OSError as exc:
        failed = merge.undo()
        result['superseded_dir'] = None
        if failed:
            raise OSError('cannot merge into %s: %s; undoing it failed for %s' % (campaign_dir, exc, ', '.join(failed))) from exc
        raise CollectError('cannot merge into %s: %s; the merge was undone' % (campaign_dir, exc)) from exc
