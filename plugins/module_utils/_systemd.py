# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure parsers for systemctl output and systemd cgroup paths. Private to the specdec.bench collection."""

from __future__ import annotations

import fnmatch
import re

UNIT_TYPES = (
    '.service', '.socket', '.target', '.timer', '.mount', '.automount', '.swap', '.path', '.slice', '.scope', '.device',
)
# The properties unit_facts asks `systemctl show` for, and the fact key each becomes.
SHOW_PROPERTIES = (
    ('Id', 'id'),
    ('Description', 'description'),
    ('LoadState', 'load_state'),
    ('ActiveState', 'active_state'),
    ('SubState', 'sub_state'),
    ('MainPID', 'main_pid'),
    ('UnitFileState', 'unit_file_state'),
    ('FragmentPath', 'fragment_path'),
    ('Result', 'result'),
    ('NRestarts', 'n_restarts'),
)
_INT_PROPERTIES = ('MainPID', 'NRestarts')
# sd_booted(): systemd is the running init system exactly when this directory exists.
SYSTEMD_RUN_DIR = '/run/systemd/system'
GLOB_CHARS = ('*', '?', '[')
# Unit name characters systemd accepts, plus the glob characters fnmatch understands.
_UNIT_NAME_RE = re.compile(r'[A-Za-z0-9:_.\\@*?\[\]!-]+\Z')
# list-units marks failed and not-found units with a bullet (a '*' in the C locale).
_BULLETS = ('*', '\u25cf', '\u25cb', '\u00d7')


def is_glob(name):
    return any(char in name for char in GLOB_CHARS)


def normalize_unit_name(name):
    """A unit name or glob with its type: a name without a unit type suffix is a service.

    Raises ValueError for names systemctl would reject (or read as an option).
    """
    name = name.strip()
    if not name or name.startswith('-') or len(name) > 255 or not _UNIT_NAME_RE.match(name):
        raise ValueError('not a unit name or pattern: %r' % name)
    if not name.endswith(UNIT_TYPES):
        name += '.service'
    return name


def parse_unit_list(text):
    """Unit names from `systemctl list-units --all --plain --no-legend --full` or `list-unit-files --no-legend --full`.

    The first column is the unit (after the bullet list-units puts before failed or not-found units).
    """
    names = []
    for line in (text or '').splitlines():
        tokens = line.split()
        if tokens and tokens[0] in _BULLETS:
            tokens = tokens[1:]
        if not tokens:
            continue
        name = tokens[0]
        if not name.endswith(UNIT_TYPES):
            raise ValueError('not a systemctl unit listing line: %r' % line)
        names.append(name)
    return names


def expand_patterns(patterns, listed):
    """Match normalized glob patterns against listed unit names.

    Returns {pattern: [matching names, sorted]}; template units (name@.service) are left out, since
    only their instances have a state.
    """
    candidates = sorted(set(name for name in listed if '@.' not in name))
    return dict((pattern, [name for name in candidates if fnmatch.fnmatchcase(name, pattern)]) for pattern in patterns)


def parse_show(text):
    """`systemctl show` output: one dict of KEY: VALUE per blank-line separated block, in order."""
    blocks = []
    current = None
    for number, line in enumerate((text or '').splitlines(), 1):
        if not line.strip():
            current = None
            continue
        key, sep, value = line.partition('=')
        if not sep or not key or not re.match(r'[A-Za-z][A-Za-z0-9]*\Z', key):
            raise ValueError('systemctl show line %d is not KEY=VALUE: %r' % (number, line))
        if current is None:
            current = {}
            blocks.append(current)
        current[key] = value
    return blocks


def unit_record(properties):
    """One unit's facts from its `systemctl show` properties: missing or empty values are None, MainPID 0 is None."""
    record = {}
    for prop, key in SHOW_PROPERTIES:
        value = properties.get(prop)
        if value == '' or value == '[not set]':
            value = None
        if prop in _INT_PROPERTIES and value is not None:
            try:
                value = int(value)
            except ValueError:
                raise ValueError('%s is not a number: %r' % (prop, value)) from None
            if prop == 'MainPID' and value == 0:
                value = None
        record[key] = value
    return record


def units_from_show(names, text):
    """{requested name: unit_record} from `systemctl show ... -- <names>`, whose blocks come in argument order.

    The requested name is kept as the key even when it is an alias (`id` holds the real name).
    """
    blocks = parse_show(text)
    if len(blocks) != len(names):
        raise ValueError('systemctl show printed %d blocks for %d units' % (len(blocks), len(names)))
    return dict((name, unit_record(block)) for name, block in zip(names, blocks))


def cgroup_root(pid1_path):
    """The cgroup systemd runs its tree under, from PID 1's own cgroup path (as systemd's cg_get_root_path).

    On a host or under a cgroup namespace it is /; in a container without a cgroup namespace it is the
    container's cgroup (/libpod_parent/libpod-<id>), which prefixes every unit's path there.
    """
    path = (pid1_path or '/').rstrip('/')
    for suffix in ('/init.scope', '/system.slice', '/system'):
        if path.endswith(suffix):
            path = path[:-len(suffix)]
            break
    return path or '/'


def unit_from_cgroup_path(path, root='/'):
    """The systemd unit that owns a cgroup path, as systemd itself resolves it, or None.

    The path is taken relative to `root` (see cgroup_root); slices are skipped and the first .service
    or .scope below them is the unit: /system.slice/ddtree-qwen.service/payload -> ddtree-qwen.service,
    /user.slice/user-0.slice/session-3.scope -> session-3.scope. A path outside systemd's tree
    (/docker/<id>, /process_api/core, the root itself) has no unit.
    """
    if not path:
        return None
    root = root.rstrip('/')
    if root:
        if path != root and not path.startswith(root + '/'):
            return None
        path = path[len(root):]
    for part in path.strip('/').split('/'):
        if part.startswith('_'):
            part = part[1:]  # systemd escapes cgroup names that would clash with kernel files with a leading '_'
        if part.endswith('.slice'):
            continue
        if part.endswith(('.service', '.scope')):
            return part
        return None
    return None
