# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""results_layout and id_pattern: the contracts of module_utils/_common.py, for roles. Documented in <name>.yml."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.specdec.bench.plugins.module_utils._common import ID_PATTERN, RESULTS_LAYOUT, results_file


def results_layout(keys=None, **fields):
    """None or '': the whole layout; a key: its file name (fields dataset, temperature, concurrency filled; the
    temperature written as file names write it); a list: those keys."""
    if keys in (None, ''):
        return dict(RESULTS_LAYOUT)
    wanted = [keys] if isinstance(keys, str) else keys
    if not isinstance(wanted, (list, tuple)):
        raise AnsibleFilterError('results_layout: input is %r; allowed: none, a layout key or a list of keys' % (keys,))
    unknown = [key for key in wanted if key not in RESULTS_LAYOUT]
    if unknown:
        raise AnsibleFilterError('results_layout: %s not a layout key; allowed: %s'
                                 % (', '.join(map(repr, unknown)), ', '.join(sorted(RESULTS_LAYOUT))))
    if isinstance(keys, str):
        if not fields:
            return RESULTS_LAYOUT[keys]
        try:
            return results_file(keys, **fields)
        except (KeyError, IndexError, ValueError) as exc:
            raise AnsibleFilterError('results_layout: %r needs the fields of %r, got %s (%s)'
                                     % (keys, RESULTS_LAYOUT[keys], ', '.join(sorted(fields)), exc))
    return {key: RESULTS_LAYOUT[key] for key in wanted}


def id_pattern(_input=None):
    """The id pattern, for messages: a role names the allowed values with it."""
    return ID_PATTERN


class FilterModule:
    def filters(self):
        return {'results_layout': results_layout, 'id_pattern': id_pattern}
