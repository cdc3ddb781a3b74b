# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The README's "Included content" names exactly what the collection holds: every role, playbook, module, filter and
test, and nothing that is not there (a hand list that cannot drift)."""

from __future__ import annotations

import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def section(title):
    with open(os.path.join(REPO, 'README.md'), encoding='utf-8') as handle:
        text = handle.read()
    body = text.split('## Included content', 1)[1].split('\n## ', 1)[0]
    for item in body.split('\n- ')[1:]:
        if item.startswith('**%s' % title):
            return set(re.findall(r'`([\w.]+)`', item))
    raise AssertionError('no %s in the README\'s Included content' % title)


def names(folder, suffix):
    return {name[:-len(suffix)] for name in os.listdir(os.path.join(REPO, folder))
            if name.endswith(suffix) and not name.startswith('_')}


def test_the_readme_lists_every_role_playbook_and_plugin():
    assert section('Roles') == set(os.listdir(os.path.join(REPO, 'roles')))
    assert section('Playbooks') == {name + '.yml' for name in names('playbooks', '.yml')}
    assert section('Modules') == names('plugins/modules', '.py')
    assert section('Filters') == names('plugins/filter', '.yml')
    assert section('Tests') == names('plugins/test', '.py')
