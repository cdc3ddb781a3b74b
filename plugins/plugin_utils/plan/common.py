# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign planner's shared pieces: the constants several modules use, the type tests, the one way to fail
(an AnsibleFilterError naming the field, the problem and what is allowed) and the checks of ids, paths and keys."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.specdec.bench.plugins.module_utils._common import ID_PATTERN, ID_RE as _ID_RE

GIB = 1024 ** 3
ENV_NAME_RE = re.compile(r'[A-Za-z_][A-Za-z0-9_]*\Z')
MODEL_KEYS = ('path', 'bytes')
# a checkpoint's step in stage ids and params: tp1-dflash-n16-s400
STEP_PARAM = 'step'
STEP_SHORT = 's'
POSITIVE_INT = 'a positive integer (1, 2, 3, ...)'
ONE_LINE = 'text on one line (no control characters: systemd ends a unit line at CR and NUL too)'


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_positive_int(value):
    return is_int(value) and value > 0


def powers_of_two(limit):
    sizes, size = [], 1
    while size <= limit:
        sizes.append(size)
        size *= 2
    return sizes


def gib(value):
    return round(value, 2)


def fail(field, problem, allowed):
    raise AnsibleFilterError('campaign_plan: %s %s; allowed: %s' % (field, problem, allowed))


def one_line(text):
    """True when text has no control character or line separator (what a unit file line cannot hold)."""
    return not any(unicodedata.category(char) in ('Cc', 'Zl', 'Zp') for char in text)


def check_keys(value, field, allowed):
    if not isinstance(value, Mapping):
        fail(field, 'is %r, not a mapping' % (value,), 'a mapping with keys %s' % ', '.join(allowed))
    unknown = sorted(str(key) for key in value if key not in allowed)
    if unknown:
        fail(field, 'has unknown key(s) %s' % ', '.join(unknown), ', '.join(allowed))


def check_id(value, field):
    if not isinstance(value, str) or not _ID_RE.match(value):
        fail(field, 'is %r' % (value,), 'an id matching %s (lower-case letters, digits, ".", "_", "-"; '
                                        'no "/", spaces or shell characters)' % ID_PATTERN)


def check_path(value, field):
    if not isinstance(value, str) or not value.startswith('/') or not one_line(value):
        fail(field, 'is %r' % (value,), 'an absolute path on the host, ' + ONE_LINE)


def size_text(value):
    """Bytes for people: '256.0 KiB', '1.5 GiB'."""
    value = float(value or 0)
    for unit in ('B', 'KiB', 'MiB', 'GiB'):
        if value < 1024 or unit == 'GiB':
            return '%d B' % value if unit == 'B' else '%.1f %s' % (value, unit)
        value /= 1024.0
    return None  # not reached
