# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The test `specdec.bench.id`: a campaign, stage, TP, run or process name (module_utils/_common.py ID_PATTERN)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: id
short_description: Whether a value is a specdec.bench id
version_added: 0.4.0
author: specdec.bench developers (!UNKNOWN)
description:
  - True for a string matching C([a-z0-9][a-z0-9._-]*) of at most O(max_len) characters; such an id names folders
    and service units, so it holds no C(/), spaces or shell characters.
  - The pattern is defined once, in the collection's C(module_utils/_common.py); its text is the test's C(pattern).
options:
  _input:
    description: The value to test.
    type: raw
    required: true
  max_len:
    description: The most characters allowed.
    type: int
    default: 64
"""

EXAMPLES = r"""
- name: Refuse a bad campaign id
  ansible.builtin.assert:
    that: campaign is specdec.bench.id
    fail_msg: "campaign is {{ campaign | to_json }}; allowed: an id matching {{ '' | specdec.bench.id_pattern }}"
"""

RETURN = r"""
_value:
  description: Whether the input is an id.
  type: bool
"""

from ansible_collections.specdec.bench.plugins.module_utils._common import ID_MAX_LEN, is_id


def id_test(value, max_len=ID_MAX_LEN):
    return is_id(value, max_len)


class TestModule:
    def tests(self):
        return {'id': id_test}
