# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The draft: one model, or a sweep of drafter checkpoints (a list, a glob on this host, or a checkpoint set of a
training run on another host); the checkpoints a sweep picks, whether each is already installed here, and whether
the ones to copy fit the disk."""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.specdec.bench.plugins.module_utils._checkpoint import INSTALLED_MANIFEST, select, step_of
from ansible_collections.specdec.bench.plugins.module_utils._common import ID_PATTERN, ID_RE as _ID_RE
from .common import (GIB, MODEL_KEYS, POSITIVE_INT, check_id, check_keys, check_path, fail, is_int, is_number,
                     is_positive_int, one_line, size_text)

# draft as a sweep: a list of these, a glob on this host, or a checkpoint set of a training run on another host
DRAFT_ENTRY_KEYS = ('path', 'bytes', 'step')
DRAFT_GLOB_KEYS = ('glob', 'every', 'last')
DRAFT_SET_KEYS = ('run', 'host', 'every', 'last', 'root')
DRAFT_FORMS = ('a path or {path, bytes} (one draft); a list of paths or {path, bytes, step}, {glob, every, last}, or '
               '{run, host, every, last, root} (a sweep of checkpoints)')
DEFAULT_CHECKPOINT_DIR = '/var/lib/specdec/checkpoints'
DEFAULT_CHECKPOINT_MIN_FREE_GIB = 1


def _optional_positive(draft, key):
    value = draft.get(key)
    if value is not None and not is_positive_int(value):
        fail('draft.%s' % key, 'is %r' % (value,), POSITIVE_INT + ', or left out (all)')
    return value


def _draft_list(entries):
    """draft as a list: each a path or {path, bytes, step}; the step from the entry or the folder's name."""
    if not entries:
        fail('draft', 'is an empty list', 'a non-empty list of paths or {%s}' % ', '.join(DRAFT_ENTRY_KEYS))
    checked, steps, paths = [], {}, {}
    for position, entry in enumerate(entries):
        field = 'draft[%d]' % position
        if isinstance(entry, str):
            entry = {'path': entry}
        check_keys(entry, field, DRAFT_ENTRY_KEYS)
        check_path(entry.get('path'), field + '.path')
        path = posixpath.normpath(entry['path'])
        if entry.get('bytes') is not None and not is_positive_int(entry['bytes']):
            fail(field + '.bytes', 'is %r' % (entry['bytes'],), 'a positive integer number of bytes')
        name = posixpath.basename(path)
        step = entry.get('step')
        if step is None:
            step = step_of(name)
            if step is None or step < 1:
                fail(field + '.step', 'is missing and %s has no step in its name' % entry['path'],
                     'a positive integer step, or a folder named by its step (checkpoint-4000)')
        elif not is_positive_int(step):
            fail(field + '.step', 'is %r' % (step,), 'a positive integer step')
        if step in steps:
            fail(field + '.step', 'repeats step %d of draft[%d] (a duplicate stage)' % (step, steps[step]), 'distinct steps')
        if path in paths:
            fail(field + '.path', 'repeats %s of draft[%d] (a duplicate stage)' % (path, paths[path]), 'distinct paths')
        steps[step], paths[path] = position, position
        checked.append({'name': name, 'step': step, 'path': path, 'bytes': entry.get('bytes')})
    return {'kind': 'list', 'entries': checked}


def spec_draft(draft):
    """(the one draft {path, bytes} or {}, the sweep or None) after the checks that need no host."""
    if draft is None:
        return {}, None
    if isinstance(draft, str):
        draft = {'path': draft}
    if isinstance(draft, (list, tuple)):
        return {}, _draft_list(draft)
    if isinstance(draft, Mapping) and 'run' in draft:
        check_keys(draft, 'draft', DRAFT_SET_KEYS)
        check_id(draft['run'], 'draft.run')
        host = draft.get('host')
        if not isinstance(host, str) or not host or not one_line(host) or host != host.strip():
            fail('draft.host', 'is %r' % (host,), 'the inventory name of the training host')
        if draft.get('root') is not None:
            check_path(draft['root'], 'draft.root')
        return {}, {'kind': 'set', 'run': draft['run'], 'host': host, 'root': draft.get('root'),
                    'every': _optional_positive(draft, 'every'), 'last': _optional_positive(draft, 'last')}
    if isinstance(draft, Mapping) and 'glob' in draft:
        check_keys(draft, 'draft', DRAFT_GLOB_KEYS)
        check_path(draft['glob'], 'draft.glob')
        return {}, {'kind': 'glob', 'glob': draft['glob'],
                    'every': _optional_positive(draft, 'every'), 'last': _optional_positive(draft, 'last')}
    if isinstance(draft, Mapping) and any(key not in MODEL_KEYS for key in draft):
        fail('draft', 'has unknown key(s) %s' % ', '.join(sorted(str(key) for key in draft if key not in MODEL_KEYS)), DRAFT_FORMS)
    check_keys(draft, 'draft', MODEL_KEYS)
    check_path(draft.get('path'), 'draft.path')
    if draft.get('bytes') is not None and not is_positive_int(draft['bytes']):
        fail('draft.bytes', 'is %r' % (draft['bytes'],), 'a positive integer number of bytes')
    return dict(draft), None


def _records(records, field):
    """Checkpoint records as specdec.bench.checkpoint_facts returns them, checked: name, step, path, bytes."""
    allowed = 'checkpoint records as specdec.bench.checkpoint_facts returns them ({name, step, path, bytes, ...})'
    if not isinstance(records, (list, tuple)):
        fail(field, 'is %r' % (records,), 'a list of ' + allowed)
    checked = []
    for position, record in enumerate(records):
        where = '%s[%d]' % (field, position)
        if not isinstance(record, Mapping):
            fail(where, 'is %r' % (record,), allowed)
        name, path, size = record.get('name'), record.get('path'), record.get('bytes')
        if not isinstance(name, str) or not _ID_RE.match(name):
            fail(where + '.name', 'is %r' % (name,), 'a checkpoint folder name matching %s (checkpoint-4000)' % ID_PATTERN)
        step = record.get('step') if record.get('step') is not None else step_of(name)
        if not is_int(step) or step < 0:
            fail(where + '.step', 'is %r' % (step,), 'the training step, an integer >= 0')
        check_path(path, where + '.path')
        if not is_int(size) or size < 0:
            fail(where + '.bytes', 'is %r' % (size,), 'the checkpoint\'s size, an integer number of bytes >= 0')
        installed = record.get('installed')
        if installed is not None and not isinstance(installed, Mapping):
            fail(where + '.installed', 'is %r' % (installed,), 'null or the checkpoint\'s .specdec-checkpoint.json')
        checked.append({'name': name, 'step': step, 'path': posixpath.normpath(path), 'bytes': size,
                        'installed': dict(installed) if installed else None})
    return checked


def _picked_none(sweep, listed, where):
    raise AnsibleFilterError(
        'campaign_plan: draft: %s picked no checkpoint (%d listed %s, every %s, last %s); allowed: a set that picks at least one '
        'checkpoint: another every or last, or a run that has written checkpoints (step 0 is not measured)' % (
            'checkpoint set of run %s on %s' % (sweep['run'], sweep['host']) if sweep['kind'] == 'set' else 'glob %s' % sweep['glob'],
            listed, where, sweep['every'] or 'not set', sweep['last'] or 'not set'))


def _installed_here(record, dest, host, installed):
    """(present, why not) for a checkpoint of a set at dest on this host: installed from that very source, or not there."""
    found = next((item for item in installed if item['path'] == dest), None)
    if found is None:
        return False, None
    manifest = found['installed'] or {}
    if (manifest.get('source_host'), manifest.get('source_path'), manifest.get('bytes')) == (host, record['path'], record['bytes']):
        return True, None
    if not manifest:
        what = 'a checkpoint folder no copy of specdec installed (no %s)' % INSTALLED_MANIFEST
    else:
        what = 'installed from %s:%s, %s bytes' % (manifest.get('source_host'), manifest.get('source_path'), manifest.get('bytes'))
    return False, 'a different checkpoint is already at %s (%s; this one is %s:%s, %d bytes); it is never overwritten' % (
        dest, what, host, record['path'], record['bytes'])


def sweep_checkpoints(sweep, records, installed, checkpoint_dir):
    """[(draft_checkpoint, why the stage cannot run or None)] of a sweep, in step order."""
    if sweep['kind'] == 'list':
        return [(dict(entry, run=None, source_host=None, source_path=entry['path'], present=True), None)
                for entry in sorted(sweep['entries'], key=lambda item: item['step'])]
    what = ('checkpoint set of run %s on %s' % (sweep['run'], sweep['host']) if sweep['kind'] == 'set'
            else 'glob %s' % sweep['glob'])
    if records is None:
        fail('draft', 'is a %s, and draft_checkpoints (the checkpoints it picks from) is not given' % what,
             'draft_checkpoints as the campaign role lists them (specdec.bench.checkpoint_facts on the %s)' % (
                 'training host' if sweep['kind'] == 'set' else 'benchmark host'))
    records = [record for record in _records(records, 'draft_checkpoints') if record['step'] >= 1]
    if sweep['kind'] == 'glob':
        matching = [record for record in records if fnmatch.fnmatchcase(record['path'], posixpath.normpath(sweep['glob']))]
        picked = select(matching, sweep['every'], sweep['last'])
        if not picked:
            _picked_none(sweep, len(records), '(%d matching)' % len(matching))
        return [({'name': record['name'], 'step': record['step'], 'run': None, 'source_host': None, 'source_path': record['path'],
                  'path': record['path'], 'bytes': record['bytes'], 'present': True}, None) for record in picked]
    picked = select(records, sweep['every'], sweep['last'])
    if not picked:
        root = sweep['root'] or (posixpath.dirname(records[0]['path']) if records else '<train_run_root>/%s/checkpoints' % sweep['run'])
        _picked_none(sweep, len(records), 'at %s' % root)
    here = _records(installed or [], 'installed_checkpoints')
    result = []
    for record in picked:
        dest = posixpath.join(checkpoint_dir, sweep['run'], record['name'])
        present, reason = _installed_here(record, dest, sweep['host'], here)
        result.append(({'name': record['name'], 'step': record['step'], 'run': sweep['run'], 'source_host': sweep['host'],
                        'source_path': record['path'], 'path': dest, 'bytes': record['bytes'], 'present': present}, reason))
    return result


def check_disk(stages, checkpoint_dir, free_bytes, min_free_gib):
    """The checkpoints the feasible stages still need copied fit at checkpoint_dir, keeping min_free_gib free."""
    if free_bytes is None:
        return
    needed = {}
    for stage in stages:
        checkpoint = stage.get('draft_checkpoint')
        if stage['feasible'] and checkpoint and not checkpoint['present']:
            needed.setdefault(checkpoint['path'], checkpoint)
    total = sum(checkpoint['bytes'] for checkpoint in needed.values())
    if needed and total > free_bytes - min_free_gib * GIB:
        names = [checkpoint['name'] for checkpoint in sorted(needed.values(), key=lambda item: item['step'])]
        raise AnsibleFilterError(
            'campaign_plan: draft: the %d %s to copy (%s) %s %s and %s has %s free, keeping checkpoint_min_free_gib %s; '
            'allowed: more free space, or fewer checkpoints (draft.every, draft.last)' % (
                len(names), 'checkpoint' if len(names) == 1 else 'checkpoints', ', '.join(names[:5]) + (', ...' if len(names) > 5 else ''),
                'takes' if len(names) == 1 else 'take', size_text(total), checkpoint_dir,
                size_text(max(free_bytes, 0)), min_free_gib))


def check_checkpoint_options(checkpoint_dir, free_bytes, min_free_gib):
    check_path(checkpoint_dir, 'checkpoint_dir')
    if free_bytes is not None and (not is_int(free_bytes) or free_bytes < 0):
        fail('checkpoint_free_bytes', 'is %r' % (free_bytes,), 'the free bytes at checkpoint_dir, an integer >= 0, or null (not checked)')
    if not is_number(min_free_gib) or min_free_gib < 0:
        fail('checkpoint_min_free_gib', 'is %r' % (min_free_gib,), 'a number of GiB >= 0')
    return posixpath.normpath(checkpoint_dir)
