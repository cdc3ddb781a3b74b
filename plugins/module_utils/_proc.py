# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure parsers for /proc, /etc/os-release and tool version banners. Private to the specdec.bench collection."""

from __future__ import annotations

import ipaddress
import json
import re
import shlex

TCP_LISTEN = '0A'
GPU_VISIBILITY_VARS = ('NVIDIA_VISIBLE_DEVICES', 'CUDA_VISIBLE_DEVICES')

# Files whose presence marks a container, and the container type each one means.
CONTAINER_FILES = (
    ('/.dockerenv', 'docker'),
    ('/run/.containerenv', 'podman'),
    ('/dev/lxd', 'lxc'),
    ('/var/run/secrets/kubernetes.io', 'kubernetes'),
)
# /proc/1/cgroup path fragments left by container runtimes (empty under a private cgroup namespace).
CGROUP_HINTS = (
    (re.compile(r'kubepods'), 'kubernetes'),
    (re.compile(r'libpod'), 'podman'),
    (re.compile(r'/docker[-/]|docker-[0-9a-f]+\.scope'), 'docker'),
    (re.compile(r'/lxc[./]|lxc\.payload'), 'lxc'),
    (re.compile(r'containerd'), 'containerd'),
)
# When markers disagree (docker under kubernetes, podman leaving container=podman), the first type here wins.
CONTAINER_PRECEDENCE = ('kubernetes', 'podman', 'docker', 'lxc', 'systemd-nspawn', 'containerd')

VERSION_PATTERNS = {
    'python3': re.compile(r'^Python\s+(\S+)', re.MULTILINE),
    'pip': re.compile(r'^pip\s+(\S+)', re.MULTILINE),
    'uv': re.compile(r'^uv\s+(\S+)', re.MULTILINE),
    'nvcc': re.compile(r'release\s+[0-9.]+,\s+V(\S+)'),
}

# Run by each target interpreter (any Python 3): prints {"python_version", "packages": {name: version or null}}.
PACKAGE_VERSIONS_SCRIPT = r'''
import json, sys
try:
    from importlib.metadata import version as _version, PackageNotFoundError as _Missing
except ImportError:
    try:
        from importlib_metadata import version as _version, PackageNotFoundError as _Missing
    except ImportError:
        _version = None
def find(name):
    if _version is not None:
        try:
            return _version(name)
        except _Missing:
            return None
    import pkg_resources
    try:
        return pkg_resources.get_distribution(name).version
    except pkg_resources.DistributionNotFound:
        return None
sys.stdout.write(json.dumps({
    "python_version": "%d.%d.%d" % tuple(sys.version_info[:3]),
    "packages": dict((name, find(name)) for name in sys.argv[1:]),
}))
'''


def parse_meminfo(text):
    """/proc/meminfo as {key: bytes} (kB values are converted; counters without a unit are kept)."""
    values = {}
    for line in (text or '').splitlines():
        key, sep, rest = line.partition(':')
        if not sep:
            continue
        parts = rest.split()
        if not parts:
            continue
        try:
            number = int(parts[0])
        except ValueError:
            raise ValueError('/proc/meminfo line is not "Key: number [kB]": %r' % line) from None
        values[key.strip()] = number * 1024 if len(parts) > 1 and parts[1] == 'kB' else number
    if 'MemTotal' not in values:
        raise ValueError('/proc/meminfo has no MemTotal')
    return values


def parse_os_release(text):
    """/etc/os-release as {KEY: value}, shell quoting removed."""
    values = {}
    for line in (text or '').splitlines():
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        key, sep, value = line.partition('=')
        if not sep:
            continue
        try:
            words = shlex.split(value)
        except ValueError:
            words = [value.strip('"\'')]
        values[key.strip()] = ' '.join(words)
    return values


def _unescape_mount(value):
    """mountinfo escapes space, tab, newline and backslash as octal (\\040)."""
    return re.sub(r'\\([0-7]{3})', lambda match: chr(int(match.group(1), 8)), value)


def parse_mountinfo(text):
    """/proc/self/mountinfo as a list of {mount_point, root, fstype, source, options}, in mount order."""
    mounts = []
    for line in (text or '').splitlines():
        if not line.strip():
            continue
        left, sep, right = line.partition(' - ')
        fields = left.split()
        tail = right.split()
        if not sep or len(fields) < 6 or len(tail) < 2:
            raise ValueError('not a mountinfo line: %r' % line)
        mounts.append({
            'mount_point': _unescape_mount(fields[4]),
            'root': _unescape_mount(fields[3]),
            'options': fields[5],
            'fstype': tail[0],
            'source': _unescape_mount(tail[1]),
        })
    return mounts


def find_mount(path, mounts):
    """The mount holding an absolute, symlink-resolved path: the longest mount point above it, the last one mounted on ties."""
    best = None
    for mount in mounts:
        point = mount['mount_point']
        if point == '/' or path == point or path.startswith(point.rstrip('/') + '/'):
            if best is None or len(point) >= len(best['mount_point']):
                best = mount
    return best


def decode_proc_net_address(value):
    """'0100007F:1F90' -> ('127.0.0.1', 8080); IPv6 (32 hex digits) in /proc/net/tcp6's word order."""
    host, sep, port = value.partition(':')
    if not sep:
        raise ValueError('not an address:port pair: %r' % value)
    raw = bytes.fromhex(host)
    if len(raw) == 4:
        address = ipaddress.IPv4Address(raw[::-1])
    elif len(raw) == 16:
        # the kernel prints each 32-bit word in host (little-endian) order
        address = ipaddress.IPv6Address(b''.join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))
        if address.ipv4_mapped is not None:  # written one way by every Python version
            return '::ffff:%s' % address.ipv4_mapped, int(port, 16)
    else:
        raise ValueError('not an IPv4 or IPv6 address: %r' % host)
    return str(address), int(port, 16)


def parse_proc_net_tcp(text, family):
    """Listening sockets (state 0A) of /proc/net/tcp or tcp6 as [{port, address, family}]."""
    listening = []
    for line in (text or '').splitlines()[1:]:
        fields = line.split()
        if not fields:
            continue
        if len(fields) < 10 or not fields[0].endswith(':'):
            raise ValueError('not a /proc/net/%s line: %r' % ('tcp6' if family == 'ipv6' else 'tcp', line))
        if fields[3] != TCP_LISTEN:
            continue
        address, port = decode_proc_net_address(fields[1])
        listening.append({'port': port, 'address': address, 'family': family})
    return listening


def listening_ports(entries):
    """Sorted, de-duplicated listening sockets (SO_REUSEPORT lists one port several times)."""
    unique = set((entry['port'], entry['family'], entry['address']) for entry in entries)
    return [{'port': port, 'address': address, 'family': family} for port, family, address in sorted(unique)]


def parse_proc_cgroup(text):
    """/proc/PID/cgroup as [(hierarchy id, [controllers], path)]."""
    entries = []
    for line in (text or '').splitlines():
        if not line.strip():
            continue
        parts = line.split(':', 2)
        if len(parts) != 3:
            raise ValueError('not a /proc/PID/cgroup line: %r' % line)
        entries.append((parts[0], [name for name in parts[1].split(',') if name], parts[2]))
    return entries


def systemd_cgroup_path(entries):
    """The cgroup path systemd manages: cgroup v1's name=systemd line, else the unified (0::) line, else None.

    name=systemd comes first: on a hybrid host a container's systemd manages only that hierarchy, its 0:: line
    stays at the container's root.
    """
    for _hierarchy, controllers, path in entries:
        if 'name=systemd' in controllers:
            return path
    for hierarchy, controllers, path in entries:
        if hierarchy == '0' and not controllers:
            return path
    return None


def parse_environ(data):
    """/proc/PID/environ (NUL separated, bytes or text) as a dict."""
    if isinstance(data, bytes):
        data = data.decode('utf-8', 'replace')
    values = {}
    for item in (data or '').split('\0'):
        key, sep, value = item.partition('=')
        if sep and key:
            values[key] = value
    return values


def detect_container(present_files, pid1_environ, module_environ, pid1_cgroup):
    """Container detection from its markers: {detected, type, markers}.

    present_files: the CONTAINER_FILES paths that exist; pid1_environ: /proc/1/environ as a dict, or
    None when unreadable; module_environ: this process's environment; pid1_cgroup: /proc/1/cgroup text.
    """
    markers = []
    types = []
    for path, kind in CONTAINER_FILES:
        if path in present_files:
            markers.append(path)
            types.append(kind)
    for source, environ in (('/proc/1/environ', pid1_environ or {}), ('env', module_environ or {})):
        kind = environ.get('container')
        if kind:
            markers.append('%s:container=%s' % (source, kind))
            types.append('lxc' if kind.startswith('lxc') else kind)
        if environ.get('KUBERNETES_SERVICE_HOST'):
            markers.append('%s:KUBERNETES_SERVICE_HOST' % source)
            types.append('kubernetes')
    cgroup_kinds = set()
    for _hierarchy, _controllers, path in parse_proc_cgroup(pid1_cgroup or ''):
        for pattern, kind in CGROUP_HINTS:
            if pattern.search(path):
                if kind not in cgroup_kinds:  # one marker per runtime, not one per hierarchy line
                    cgroup_kinds.add(kind)
                    markers.append('/proc/1/cgroup:%s' % path)
                    types.append(kind)
                break
    markers = list(dict.fromkeys(markers))
    kind = None
    for candidate in CONTAINER_PRECEDENCE:
        if candidate in types:
            kind = candidate
            break
    if kind is None and types:
        kind = types[0]
    return {'detected': bool(markers), 'type': kind, 'markers': markers}


def gpu_visibility(environ):
    """The GPU visibility variables of one environment, None where unset; None for an unreadable environment."""
    if environ is None:
        return None
    return dict((name, environ.get(name)) for name in GPU_VISIBILITY_VARS)


def parse_tool_version(tool, text):
    """The version in `<tool> --version` output (python3, pip, uv, nvcc), or None when it has none."""
    match = VERSION_PATTERNS[tool].search(text or '')
    return match.group(1) if match else None


def parse_package_versions(text):
    """PACKAGE_VERSIONS_SCRIPT's output; raises ValueError when it is not that JSON object."""
    try:
        data = json.loads(text)
    except ValueError:
        raise ValueError('package version probe printed no JSON: %r' % (text or '')[:200]) from None
    if not isinstance(data, dict) or not isinstance(data.get('packages'), dict):
        raise ValueError('package version probe printed an unexpected object: %r' % (text or '')[:200])
    return data
