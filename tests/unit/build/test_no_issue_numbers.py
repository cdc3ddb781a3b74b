# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""No tracked file outside the changelogs points at a tracker number ("issue" and a number) instead of saying the
reason or the behaviour: a reader of the code or the docs has no tracker to look it up in. The released changelog text
(changelogs/ and the CHANGELOG.md generated from it) keeps its history as written."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

TRACKER_NUMBER = re.compile(r'\bissues? ?#?[0-9]+', re.IGNORECASE)

# Release history, written when each release was cut.
HISTORY = ('changelogs/', 'CHANGELOG.md')

# Files allowed a tracker number: none.
ALLOWED = frozenset()


def tracked_files():
    try:
        listing = subprocess.run(['git', 'ls-files', '-z'], cwd=REPO, check=True, capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip('not a git checkout: the tracked files are unknown')
    return [name for name in listing.decode('utf-8').split('\0') if name]


def mentions(path):
    try:
        with open(os.path.join(REPO, path), encoding='utf-8') as handle:
            text = handle.read()
    except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
        return []  # binary (PNG, tarball), or deleted in the working tree
    return ['%s:%d: %s' % (path, text.count('\n', 0, match.start()) + 1, match.group(0))
            for match in TRACKER_NUMBER.finditer(text)]


def test_no_tracker_numbers_outside_the_changelogs():
    found = []
    for path in tracked_files():
        if path.startswith(HISTORY) or path in ALLOWED:
            continue
        found += mentions(path)
    assert not found, 'say the reason or the behaviour instead of the tracker number:\n' + '\n'.join(found)


def test_the_pattern_finds_the_forms_in_use():
    # written in two parts, so that this file holds none of them
    for word, number in (('(issue', ' 19)'), ('Issue', ' 29: a name'), ('issues', ' 15'), ('issue', ' #7'), ('issue', '21')):
        assert TRACKER_NUMBER.search(word + number), word + number
    for text in ('an issue with 3 GPUs', 'tissue', 'the issues'):
        assert not TRACKER_NUMBER.search(text), text
