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
- A collected file that the host no longer has is kept, and reported.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import shutil
import tarfile
import tempfile

META_DIR = '.collect'
MANIFEST_NAME = 'manifest.json'
SUPERSEDED_DIR = 'superseded'
CHUNK = 1024 * 1024


class CollectError(ValueError):
    """The archive or manifest cannot be trusted, or the arguments are wrong: nothing was written."""


def check_manifest(manifest):
    """{path: entry} from the host's manifest; every path relative, normalized, outside .collect and unique."""
    if not isinstance(manifest, list):
        raise CollectError('manifest is %r; allowed: the list results_archive returns' % type(manifest).__name__)
    entries = {}
    for entry in manifest:
        if not isinstance(entry, dict) or not isinstance(entry.get('path'), str) or not isinstance(entry.get('sha256'), str):
            raise CollectError('manifest entry %r; allowed: {path, size, sha256}' % (entry,))
        path = entry['path']
        if (path.startswith('/') or posixpath.normpath(path) != path or path.split('/')[0] in ('..', '.', META_DIR)
                or '..' in path.split('/')):
            raise CollectError('manifest path %r; allowed: a normalized path inside the campaign folder, not under %s/' % (path, META_DIR))
        if path in entries:
            raise CollectError('manifest lists %s twice' % path)
        entries[path] = entry
    return entries


def file_sha256(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as handle:
        for block in iter(lambda: handle.read(CHUNK), b''):
            digest.update(block)
    return digest.hexdigest()


def extract_verified(archive, entries, staging):
    """Extract the archive's regular files into staging, each checked against its manifest entry; {path: mtime}."""
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
                target = os.path.join(staging, *member.name.split('/'))
                os.makedirs(os.path.dirname(target), exist_ok=True)
                digest = hashlib.sha256()
                source = tar.extractfile(member)
                with open(target, 'wb') as handle:
                    for block in iter(lambda: source.read(CHUNK), b''):
                        digest.update(block)
                        handle.write(block)
                entry = entries[member.name]
                if digest.hexdigest() != entry['sha256'] or ('size' in entry and member.size != entry['size']):
                    raise CollectError('%s does not match the host\'s manifest (sha256 %s, manifest %s)' % (
                        member.name, digest.hexdigest(), entry['sha256']))
                seen[member.name] = member.mtime
    except (tarfile.TarError, EOFError) as exc:
        raise CollectError('%s is not a readable archive: %s' % (archive, exc)) from exc
    missing = sorted(set(entries) - set(seen))
    if missing:
        raise CollectError('the archive lacks %d file(s) of the manifest, first %s' % (len(missing), missing[0]))
    return seen


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


def write_if_changed(path, text):
    data = text.encode('utf-8')
    try:
        with open(path, 'rb') as handle:
            if handle.read() == data:
                return False
    except FileNotFoundError:
        pass
    tmp = '%s.tmp-%d' % (path, os.getpid())
    with open(tmp, 'wb') as handle:
        handle.write(data)
    os.replace(tmp, path)
    return True


def unpack(archive, manifest, campaign_dir, stamp, source=None, check=False):
    """Verify archive against manifest, then merge it into campaign_dir (see the module docstring for the rules).

    stamp names the evidence folder of this run (a UTC time). With check=True nothing is written; the plan is
    made from the manifest alone (the archive is not needed). Returns the plan with 'superseded_dir' (or None).
    """
    entries = check_manifest(manifest)
    if check:
        result = plan_merge(entries, campaign_dir)
        result['superseded_dir'] = None
        return result
    parent = os.path.dirname(campaign_dir.rstrip('/'))
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix='.collect-', dir=parent)
    try:
        mtimes = extract_verified(archive, entries, staging)
        result = plan_merge(entries, campaign_dir)
        result['superseded_dir'] = None
        if result['superseded']:
            evidence = _unique_dir(os.path.join(campaign_dir, META_DIR, SUPERSEDED_DIR), stamp)
            result['superseded_dir'] = evidence
            for path in result['superseded']:
                kept = os.path.join(evidence, *path.split('/'))
                os.makedirs(os.path.dirname(kept), exist_ok=True)
                os.replace(os.path.join(campaign_dir, *path.split('/')), kept)
        for path in result['added'] + result['superseded']:
            target = os.path.join(campaign_dir, *path.split('/'))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            staged = os.path.join(staging, *path.split('/'))
            os.chmod(staged, 0o644)
            os.utime(staged, (mtimes[path], mtimes[path]))
            os.replace(staged, target)
        meta = os.path.join(campaign_dir, META_DIR)
        os.makedirs(meta, exist_ok=True)
        write_if_changed(os.path.join(meta, MANIFEST_NAME),
                         json.dumps({'source': source, 'files': [entries[path] for path in sorted(entries)]}, indent=2) + '\n')
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return result
