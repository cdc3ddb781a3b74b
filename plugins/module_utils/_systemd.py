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


# ---- unit files: quoting and rendering (specdec.bench.service state=defined on systemd) ----

# systemd ends a line at LF, CR and NUL; a value carries no control character nor a Unicode line separator.
_CONTROL_RE = re.compile('[\x00-\x1f\x7f-\x9f\u2028\u2029]')
ENV_NAME_RE = re.compile(r'[A-Za-z_][A-Za-z0-9_]*\Z')
_CPULIST_RE = re.compile(r'[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*\Z')
_KEY_RE = re.compile(r'[A-Za-z][A-Za-z0-9-]*\Z')
# The definition's fields a unit's layout places (see render_unit), and the [Service] key each becomes.
UNIT_FIELDS = ('description', 'env', 'env_files', 'cwd', 'argv', 'timeout_stop_sec', 'cpu_affinity', 'numa_nodes')
UNIT_SECTIONS = ('Unit', 'Service', 'Install')
# Fields with an effect on the program: a layout that leaves one out while the definition sets it is refused.
_EFFECTIVE_FIELDS = ('env', 'env_files', 'argv', 'cpu_affinity', 'numa_nodes')


def one_line(field, value):
    """The value as text; ValueError naming the field when it holds a control character (it would end the line)."""
    text = value if isinstance(value, str) else str(value)
    found = _CONTROL_RE.search(text)
    if found:
        raise ValueError('%s holds the control character %r; allowed: one line, no control characters'
                         % (field, found.group(0)))
    return text


def unit_value(field, value):
    """A value as a unit file's KEY=VALUE line carries it: % starts a specifier everywhere, so it is doubled; a boolean
    is true or false."""
    if isinstance(value, bool):
        value = 'true' if value else 'false'
    return one_line(field, value).replace('%', '%%')


def exec_word(field, word):
    """One word of ExecStart=, single-quoted: \\ and ' escaped inside the quotes, % doubled (specifiers), $ doubled
    (variables); systemd hands the program the word exactly, an empty one too."""
    text = one_line(field, word)
    return "'%s'" % text.replace('\\', '\\\\').replace("'", "\\'").replace('%', '%%').replace('$', '$$')


def env_assignment(field, name, value):
    """One Environment= value, double-quoted: "NAME=value" with \\ and " escaped and % doubled (no $ expansion there)."""
    if not isinstance(name, str) or not ENV_NAME_RE.match(name):
        raise ValueError('%s has the name %r; allowed: letters, digits and _, not starting with a digit' % (field, name))
    text = one_line('%s.%s' % (field, name), value)
    return '"%s=%s"' % (name, text.replace('\\', '\\\\').replace('"', '\\"').replace('%', '%%'))


def env_file_assignment(field, name, value):
    """One line of an EnvironmentFile= (systemd's, and the supervisor's reader of it): NAME="value" with \\, ", $ and `
    escaped; no specifiers there."""
    if not isinstance(name, str) or not ENV_NAME_RE.match(name):
        raise ValueError('%s has the name %r; allowed: letters, digits and _, not starting with a digit' % (field, name))
    text = one_line('%s.%s' % (field, name), value)
    return '%s="%s"' % (name, text.replace('\\', '\\\\').replace('"', '\\"').replace('$', '\\$').replace('`', '\\`'))


def env_file_text(env, comment=()):
    """An environment file: the comment lines, then one NAME="value" line per name, sorted."""
    lines = [_comment_line('secrets.comment', line) for line in comment]
    lines.extend(env_file_assignment('secrets.env', name, env[name]) for name in sorted(env))
    return ''.join(line + '\n' for line in lines)


def _comment_line(field, line):
    text = one_line(field, line)
    if not text.startswith('#'):
        raise ValueError('%s has the line %r; allowed: comment lines starting with #' % (field, text))
    return text


def _env_lines(env):
    # the GPUs the process is pinned to first, then the rest by name
    names = sorted(env, key=lambda name: (name != 'CUDA_VISIBLE_DEVICES', name))
    return ['Environment=' + env_assignment('definition.env', name, env[name]) for name in names]


def _exec_start(argv, layout):
    words = [exec_word('definition.argv[%d]' % index, word) for index, word in enumerate(argv)]
    first, then = layout
    if not first or first >= len(words):
        return ['ExecStart=' + ' '.join(words)]
    # the first words on the ExecStart= line, then `then` words per continued line
    lines = ['ExecStart=' + ' '.join(words[:first]) + ' \\']
    rest = words[first:]
    chunks = [rest[index:index + then] for index in range(0, len(rest), then)]
    for number, chunk in enumerate(chunks):
        lines.append('    ' + ' '.join(chunk) + (' \\' if number < len(chunks) - 1 else ''))
    return lines


def _field_lines(field, definition, layout):
    value = definition.get(field)
    if field == 'description':
        return ['Description=' + unit_value('definition.description', value)] if value not in (None, '') else []
    if field == 'env':
        return _env_lines(value or {})
    if field == 'env_files':
        return ['EnvironmentFile=' + unit_value('definition.env_files[%d]' % index, path)
                for index, path in enumerate(value or [])]
    if field == 'cwd':
        return ['WorkingDirectory=' + unit_value('definition.cwd', value)] if value not in (None, '') else []
    if field == 'argv':
        return _exec_start(value, layout)
    if field == 'timeout_stop_sec':
        return ['TimeoutStopSec=' + unit_value('definition.timeout_stop_sec', value)] if value not in (None, '') else []
    if field == 'cpu_affinity':
        return ['CPUAffinity=' + value] if value not in (None, '') else []
    # numa_nodes: memory from these nodes only
    return ['NUMAPolicy=bind', 'NUMAMask=' + value] if value not in (None, '') else []


def _exec_layout(unit):
    layout = unit.get('exec_lines') or [0, 1]
    if isinstance(layout, list):
        layout = [int(n) if isinstance(n, str) and n.isdigit() else n for n in layout]
    if (not isinstance(layout, list) or len(layout) != 2
            or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in layout) or layout[1] < 1):
        raise ValueError('definition.unit.exec_lines is %r; allowed: [words on the ExecStart= line (0: all), words on '
                         'each continued line (1 or more)]' % (layout,))
    return layout


def check_unit_layout(definition):
    """ValueError naming the field when definition.unit is not a layout render_unit can write."""
    unit = definition.get('unit')
    if not isinstance(unit, dict) or any(key not in ('comment', 'exec_lines') + UNIT_SECTIONS for key in unit):
        raise ValueError('definition.unit is %r; allowed: a mapping with keys comment, exec_lines, %s'
                         % (unit, ', '.join(UNIT_SECTIONS)))
    _exec_layout(unit)
    placed = set()
    for section in UNIT_SECTIONS:
        entries = unit.get(section) or []
        if not isinstance(entries, list):
            raise ValueError('definition.unit.%s is %r; allowed: a list of entries' % (section, entries))
        for index, entry in enumerate(entries):
            where = 'definition.unit.%s[%d]' % (section, index)
            if isinstance(entry, str) and not entry.startswith('#'):
                if entry not in UNIT_FIELDS:
                    raise ValueError('%s is %r; allowed: a comment ("# ..."), one of the fields %s, {field: F, comment: '
                                     '[...]} or {Key: value}' % (where, entry, ', '.join(UNIT_FIELDS)))
                placed.add(entry)
            elif isinstance(entry, dict) and 'field' in entry:
                if entry['field'] not in UNIT_FIELDS or any(key not in ('field', 'comment') for key in entry):
                    raise ValueError('%s is %r; allowed: {field: one of %s, comment: [comment lines]}'
                                     % (where, entry, ', '.join(UNIT_FIELDS)))
                placed.add(entry['field'])
            elif isinstance(entry, dict):
                if len(entry) != 1 or not _KEY_RE.match(str(next(iter(entry)))):
                    raise ValueError('%s is %r; allowed: one Key: value pair' % (where, entry))
            elif not isinstance(entry, str):
                raise ValueError('%s is %r; allowed: a comment, a field name or a mapping' % (where, entry))
    for field in _EFFECTIVE_FIELDS:
        if definition.get(field) not in (None, '', [], {}) and field not in placed:
            raise ValueError('definition.%s is set but definition.unit places no %s; allowed: a layout that writes '
                             'every field the definition sets' % (field, field))
    if 'argv' not in placed:
        raise ValueError('definition.unit places no argv; allowed: a layout with the field argv in Service')
    for field in ('cpu_affinity', 'numa_nodes'):
        value = definition.get(field)
        if value not in (None, '') and not (isinstance(value, str) and _CPULIST_RE.match(value)):
            raise ValueError('definition.%s is %r; allowed: a cpulist ("0-47,96-143") or null' % (field, value))


def render_unit(definition):
    """A systemd unit file's text from a service definition (see specdec.bench.service) and its layout.

    definition.unit is the layout: comment (the lines at the top), exec_lines ([words on the ExecStart= line, 0 for all;
    words per continued line]) and the sections Unit, Service and Install (written in that order, those given), each a
    list of entries: a comment line ("# ..."), a field of the definition (description, env, env_files, cwd, argv,
    timeout_stop_sec, cpu_affinity, numa_nodes; a field without a value writes nothing), {field: F, comment: [lines]}
    (the comment only when F writes something) or {Key: value} (Key=value, % doubled). Every value is checked for
    control characters and quoted for systemd here. ValueError names the field.
    """
    check_unit_layout(definition)
    unit = definition['unit']
    layout = _exec_layout(unit)
    lines = [_comment_line('definition.unit.comment', line) for line in unit.get('comment') or []]
    sections = [section for section in UNIT_SECTIONS if section in unit]
    for number, section in enumerate(sections):
        if number:
            lines.append('')
        lines.append('[%s]' % section)
        for index, entry in enumerate(unit[section] or []):
            where = 'definition.unit.%s[%d]' % (section, index)
            if isinstance(entry, str) and entry.startswith('#'):
                lines.append(_comment_line(where, entry))
            elif isinstance(entry, str):
                lines.extend(_field_lines(entry, definition, layout))
            elif 'field' in entry:
                written = _field_lines(entry['field'], definition, layout)
                if written:
                    lines.extend(_comment_line(where + '.comment', line) for line in entry.get('comment') or [])
                lines.extend(written)
            else:
                key, value = next(iter(entry.items()))
                lines.append('%s=%s' % (key, unit_value('%s.%s' % (where, key), '' if value is None else value)))
    return ''.join(line + '\n' for line in lines)
