# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""checkpoint_ship_line: how one drafter checkpoint travelled to the benchmark host, as the campaign prints it.

Its documentation is in checkpoint_ship_line.yml beside this file.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

UNITS = ('B', 'KiB', 'MiB', 'GiB', 'TiB')


def human_bytes(value):
    """1536 -> '1.5 KiB'."""
    value = float(value or 0)
    for unit in UNITS:
        if value < 1024 or unit == UNITS[-1]:
            return '%d B' % value if unit == 'B' else '%.1f %s' % (value, unit)
        value /= 1024.0
    return None  # not reached


def checkpoint_ship_line(result):
    """'checkpoint-400 (step 400) from a100box: ok, 256.0 KiB through the controller (why); 256.0 KiB fetched'."""
    if not isinstance(result, Mapping) or not result.get('name'):
        raise AnsibleFilterError('checkpoint_ship_line: the input is %r; allowed: one entry of checkpoint_ship_results' % (result,))
    head = '%s (step %s) from %s to %s: %s' % (
        result['name'], result.get('step'), result.get('source_host'), result.get('path'), result.get('status'))
    if result.get('status') != 'ok':
        return '%s: %s' % (head, result.get('reason'))
    if not result.get('bytes'):
        return '%s, already in place (%s)' % (head, result.get('why'))
    how = 'directly' if result.get('transfer') == 'direct' else 'through the controller'
    line = '%s, %s copied %s (%s)' % (head, human_bytes(result['bytes']), how, result.get('why'))
    if result.get('transfer') == 'controller':
        line += '; %s fetched from %s, the rest from the controller\'s cache' % (
            human_bytes(result.get('fetched_bytes')), result.get('source_host'))
    return line


class FilterModule:
    def filters(self):
        return {'checkpoint_ship_line': checkpoint_ship_line}
