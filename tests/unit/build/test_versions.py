# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""galaxy.yml's version, every version_added and the changelog's releases agree: nothing was added in a version that
the collection has not reached, and the collection's version is released or the next one."""

from __future__ import annotations

import os
import re

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def version(text):
    return tuple(int(part) for part in str(text).split('.'))


def versions_added():
    found = {}
    for folder in ('plugins', 'roles'):
        for root, _dirs, names in os.walk(os.path.join(REPO, folder)):
            for name in names:
                if name.endswith(('.py', '.yml')):
                    path = os.path.join(root, name)
                    with open(path, encoding='utf-8') as handle:
                        for match in re.finditer(r'version_added:\s*["\']?([0-9.]+)', handle.read()):
                            found.setdefault(match.group(1), []).append(os.path.relpath(path, REPO))
    return found


def test_galaxy_version_added_and_the_changelog_agree():
    with open(os.path.join(REPO, 'galaxy.yml'), encoding='utf-8') as handle:
        galaxy = version(yaml.safe_load(handle)['version'])
    with open(os.path.join(REPO, 'changelogs', 'changelog.yaml'), encoding='utf-8') as handle:
        releases = sorted(version(release) for release in yaml.safe_load(handle)['releases'])
    assert galaxy >= releases[-1]
    for added, paths in versions_added().items():
        assert version(added) <= galaxy, (added, paths)
        assert version(added) in releases or version(added) == galaxy, (added, paths)
