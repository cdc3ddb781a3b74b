# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""specdec.bench.stage_attempt's engine: move the files of a stage's earlier attempt to attempt-<n>/.

stage_attempt(params, check_mode) returns the module's result or raises StageError; ARGUMENT_SPEC is its options.
"""

from __future__ import annotations

import fnmatch
import os
import shutil

from .errors import StageError

PREFIX = 'attempt-'

ARGUMENT_SPEC = dict(
    dir=dict(type='path', required=True),
    mode=dict(type='raw', default='0750'),
    keep=dict(type='list', elements='str', default=[]),
)


def attempt_files(names, is_file):
    """The names of an attempt's files among a folder's entries: plain files, not hidden ones, sorted."""
    return sorted(name for name in names if not name.startswith('.') and is_file(name))


def next_attempt(names):
    """attempt-<n> with the smallest n >= 1 not among names (as the shell loop did: the first free number)."""
    taken = set(names)
    number = 1
    while PREFIX + str(number) in taken:
        number += 1
    return PREFIX + str(number)


def kept_files(files, keep):
    """The files matching a pattern of keep (fnmatch, case-sensitive), sorted."""
    return sorted(name for name in files if any(fnmatch.fnmatchcase(name, pattern) for pattern in keep))


def rotate(directory, mode, check_mode=False, keep=()):
    """Move the attempt's files into the next attempt-<n>/, copying those that match keep and leaving them in place;
    (attempt folder or None, files it got, files kept in place)."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return None, [], []
    files = attempt_files(names, lambda name: os.path.isfile(os.path.join(directory, name))
                          and not os.path.islink(os.path.join(directory, name)))
    if not files:
        return None, [], []
    kept = kept_files(files, keep)
    target = os.path.join(directory, next_attempt(names))
    if check_mode:
        return target, files, kept
    # mkdir fails on an existing path: an attempt folder made since listdir is never written into.
    os.mkdir(target, mode)
    os.chmod(target, mode)
    for name in files:
        destination = os.path.join(target, name)
        if os.path.lexists(destination):
            raise FileExistsError('%s exists' % destination)
        if name in kept:
            shutil.copy2(os.path.join(directory, name), destination)
        else:
            os.rename(os.path.join(directory, name), destination)
    return target, files, kept


def stage_attempt(params, check_mode=False):
    """The earlier attempt's files kept: {changed, attempt, files, kept}; StageError when they cannot be."""
    mode = params['mode']
    try:
        mode = int(mode, 8) if isinstance(mode, str) else int(mode)
    except ValueError:
        raise StageError('mode must be an octal mode such as 0750, got %r' % (params['mode'],))
    try:
        target, files, kept = rotate(params['dir'], mode, check_mode, params['keep'])
    except OSError as exc:
        raise StageError('could not keep the earlier attempt of %s: %s' % (params['dir'], exc))
    return dict(changed=target is not None, attempt=target, files=files, kept=kept)
