# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Gathering of the systemd unit facts (systemctl), shared by unit_facts and probe.

Private to the specdec.bench collection. The I/O lives here; the parsing is in _systemd. Warnings go
through module.warn and fatal errors through module.fail_json, as in a module's main.
"""

from __future__ import annotations

import os

from ansible_collections.specdec.bench.plugins.module_utils._systemd import (
    SHOW_PROPERTIES,
    SYSTEMD_RUN_DIR,
    expand_patterns,
    is_glob,
    normalize_unit_name,
    parse_unit_list,
    units_from_show,
)

# systemctl's listings are parsed, so it runs in the C locale, without pager or colours.
ENVIRON = dict(LANG='C', LC_ALL='C', LC_MESSAGES='C', LANGUAGE='C', SYSTEMD_PAGER='', SYSTEMD_COLORS='0')


def list_units(module, systemctl, verb, patterns, extra):
    """Unit names a listing verb prints for the patterns; an exit code with no error text means no match."""
    rc, out, err = module.run_command([systemctl, verb, '--no-legend', '--no-pager', '--full', '--plain'] + extra + ['--'] + patterns)
    if rc != 0 and (err or '').strip():
        module.fail_json(msg='systemctl %s failed with exit code %d: %s' % (verb, rc, err.strip()), rc=rc, stdout=out, stderr=err)
    try:
        return parse_unit_list(out)
    except ValueError as exc:
        module.fail_json(msg='cannot parse systemctl %s output: %s' % (verb, exc), rc=rc, stdout=out, stderr=err)
    return []


def gather_unit_facts(module, names):
    """({systemd_units}, {patterns, unmatched_patterns}) for unit names and glob patterns, as unit_facts returns them."""
    module.run_command_environ_update.update(ENVIRON)
    try:
        requested = list(dict.fromkeys(normalize_unit_name(name) for name in names))
    except ValueError as exc:
        module.fail_json(msg=str(exc))

    systemctl = module.get_bin_path('systemctl')
    if systemctl is None or not os.path.isdir(SYSTEMD_RUN_DIR):
        module.warn('systemd is not running on this host (no systemctl or no %s): no unit facts' % SYSTEMD_RUN_DIR)
        return {'systemd_units': {}}, {'patterns': {}, 'unmatched_patterns': []}

    patterns = [name for name in requested if is_glob(name)]
    matches = {}
    if patterns:
        listed = list_units(module, systemctl, 'list-units', patterns, ['--all'])
        listed += list_units(module, systemctl, 'list-unit-files', patterns, [])
        matches = expand_patterns(patterns, listed)
    names = list(dict.fromkeys([name for name in requested if not is_glob(name)] + [name for pattern in patterns for name in matches[pattern]]))

    units = {}
    if names:
        command = [systemctl, 'show', '--property=%s' % ','.join(prop for prop, _key in SHOW_PROPERTIES), '--']
        rc, out, err = module.run_command(command + names)
        if rc != 0:
            module.fail_json(msg='systemctl show failed with exit code %d: %s' % (rc, (err or out).strip()), rc=rc, stdout=out, stderr=err)
        try:
            units = units_from_show(names, out)
        except ValueError as exc:
            module.fail_json(msg='cannot parse systemctl show output: %s' % exc, rc=rc, stdout=out, stderr=err)

    return {'systemd_units': units}, {'patterns': matches, 'unmatched_patterns': [pattern for pattern in patterns if not matches[pattern]]}
