# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Gathering of the host facts (/proc, /etc/os-release, statvfs, the init system, tool and interpreter runs), shared by host_facts and probe.

Private to the specdec.bench collection. The I/O lives here; the parsing is in _proc. Warnings go
through module.warn and fatal errors through module.fail_json, as in a module's main.
"""

from __future__ import annotations

import os
import pwd

from ansible_collections.specdec.bench.plugins.module_utils._proc import (
    CONTAINER_FILES,
    PACKAGE_VERSIONS_SCRIPT,
    detect_container,
    find_mount,
    gpu_visibility,
    listening_ports,
    parse_environ,
    parse_meminfo,
    parse_mountinfo,
    parse_os_release,
    parse_package_versions,
    parse_proc_net_tcp,
    parse_tool_version,
)
from ansible_collections.specdec.bench.plugins.module_utils._systemd import SYSTEMD_RUN_DIR

# The options documented by the specdec.bench.host_probe doc fragment.
HOST_OPTIONS = dict(
    paths=dict(type='list', elements='path', default=[]),
    python_envs=dict(type='list', elements='path', default=[]),
    python_packages=dict(type='list', elements='str', default=['torch', 'sglang', 'vllm', 'speculators']),
)
# Version banners are parsed, so tools run in the C locale.
ENVIRON = dict(LANG='C', LC_ALL='C', LC_MESSAGES='C', LANGUAGE='C')
OS_RELEASE_FILES = ('/etc/os-release', '/usr/lib/os-release')
OS_KEYS = (('ID', 'id'), ('ID_LIKE', 'id_like'), ('NAME', 'name'), ('PRETTY_NAME', 'pretty_name'),
           ('VERSION_ID', 'version_id'), ('VERSION_CODENAME', 'version_codename'))
# (fact name, executables tried in order, extra directories searched after PATH; relative ones are under $HOME)
TOOLS = (
    ('python3', ('python3',), []),
    ('pip', ('pip3', 'pip'), []),
    ('uv', ('uv',), ['.local/bin', '.cargo/bin']),  # where uv's installer puts it, often not on a non-login PATH
    ('nvcc', ('nvcc',), ['/usr/local/cuda/bin']),
)


# The kernel's lists of online CPUs and NUMA nodes (cpulist format: "0-47,96-143"); no node file means one node, 0.
CPU_ONLINE = '/sys/devices/system/cpu/online'
NODE_ONLINE = '/sys/devices/system/node/online'


def parse_cpu_list(text):
    """A kernel cpulist ("0-3,8,10-11", also Cpus_allowed_list and nvidia-smi's CPU affinity) as a sorted list of ints.

    Commas or whitespace separate the items; an empty text is an empty list. ValueError names the bad item.
    """
    numbers = set()
    for item in (text or '').replace(',', ' ').split():
        first, dash, last = item.partition('-')
        if not first.isdigit() or (dash and not last.isdigit()):
            raise ValueError('cpu list item %r of %r; allowed: N or N-M, comma-separated' % (item, text))
        low, high = int(first), int(last) if dash else int(first)
        if high < low:
            raise ValueError('cpu list range %r of %r ends before it starts' % (item, text))
        numbers.update(range(low, high + 1))
    return sorted(numbers)


def format_cpu_list(numbers):
    """Integers as a compact cpulist, runs as ranges: [0, 1, 2, 5] -> "0-2,5"; "" for none."""
    items, run = [], []
    for number in sorted(set(numbers)):
        if run and number == run[-1] + 1:
            run.append(number)
            continue
        if run:
            items.append('%d-%d' % (run[0], run[-1]) if len(run) > 1 else '%d' % run[0])
        run = [number]
    if run:
        items.append('%d-%d' % (run[0], run[-1]) if len(run) > 1 else '%d' % run[0])
    return ','.join(items)


def online_facts(cpu_online_text, node_online_text, allowed_cpus):
    """{online, allowed, numa_nodes} of cpu facts, as cpulists: the online CPUs (the sysfs list, else the allowed ones),
    the CPUs this process may run on (sched_getaffinity; None when unknown), the online NUMA nodes (no node list: "0").

    A text that does not parse counts as absent, so a strange sysfs never fails the probe.
    """
    allowed = format_cpu_list(allowed_cpus) if allowed_cpus else None
    try:
        online = format_cpu_list(parse_cpu_list(cpu_online_text)) if cpu_online_text and cpu_online_text.strip() else None
    except ValueError:
        online = None
    try:
        nodes = format_cpu_list(parse_cpu_list(node_online_text)) if node_online_text and node_online_text.strip() else None
    except ValueError:
        nodes = None
    return {'online': online or allowed, 'allowed': allowed, 'numa_nodes': nodes or '0'}


def read_file(path, binary=False):
    """A file's contents, or None when it cannot be read (missing, permission)."""
    try:
        if binary:
            with open(path, 'rb') as handle:
                return handle.read()
        with open(path, encoding='utf-8', errors='replace') as handle:
            return handle.read()
    except OSError:
        return None


def parsed(module, parser, text, what):
    try:
        return parser(text)
    except ValueError as exc:
        module.fail_json(msg='cannot parse %s: %s' % (what, exc))
    return None


def disk_facts(path, mounts):
    checked = os.path.abspath(path)
    while not os.path.exists(checked):
        checked = os.path.dirname(checked)
    checked = os.path.realpath(checked)
    stat = os.statvfs(checked)
    mount = find_mount(checked, mounts) or {}
    return {
        'exists': os.path.exists(path),
        'checked_path': checked,
        'mount_point': mount.get('mount_point'),
        'fstype': mount.get('fstype'),
        'source': mount.get('source'),
        'total_bytes': stat.f_blocks * stat.f_frsize,
        'used_bytes': (stat.f_blocks - stat.f_bfree) * stat.f_frsize,
        'free_bytes': stat.f_bavail * stat.f_frsize,
    }


def os_facts(module):
    text = None
    for path in OS_RELEASE_FILES:
        text = read_file(path)
        if text is not None:
            break
    release = parse_os_release(text or '')
    facts = dict((key, release.get(name)) for name, key in OS_KEYS)
    facts['kernel'] = os.uname().release
    if text is None:
        module.warn('no os-release file: OS facts are null')
    return facts


def tool_facts(module):
    home = os.environ.get('HOME') or pwd.getpwuid(os.getuid()).pw_dir
    tools = {}
    for name, executables, extra_dirs in TOOLS:
        opt_dirs = [os.path.join(home, directory) for directory in extra_dirs]
        path = None
        for executable in executables:
            path = module.get_bin_path(executable, opt_dirs=opt_dirs)
            if path:
                break
        version = None
        if path:
            rc, out, err = module.run_command([path, '--version'])
            # old Pythons print their version on stderr
            version = parse_tool_version(name, (out or '') + (err or '')) if rc == 0 else None
            if version is None:
                module.warn('%s --version gave no version (exit code %d): %s' % (path, rc, ((out or '') + (err or '')).strip()[:200]))
        tools[name] = {'path': path, 'version': version}
    return tools


def interpreter(path):
    """The Python executable of an interpreter path or a virtual environment directory, or None."""
    if os.path.isdir(path):
        for name in ('bin/python3', 'bin/python'):
            candidate = os.path.join(path, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
        return None
    if os.path.isfile(path) and os.access(path, os.X_OK):
        return path
    return None


def python_env_facts(module, path, packages):
    python = interpreter(path)
    result = {'python': python, 'python_version': None, 'packages': dict((name, None) for name in packages), 'error': None}
    if python is None:
        result['error'] = 'no Python interpreter at %s' % path
        return result
    # cwd / keeps a stray module in the caller's directory from shadowing importlib
    rc, out, err = module.run_command([python, '-c', PACKAGE_VERSIONS_SCRIPT] + list(packages), cwd='/')
    if rc != 0:
        lines = (err or out or '').strip().splitlines()
        result['error'] = 'exit code %d: %s' % (rc, lines[-1] if lines else '')
        return result
    try:
        data = parse_package_versions(out)
    except ValueError as exc:
        result['error'] = str(exc)
        return result
    result['python_version'] = data.get('python_version')
    result['packages'].update(data['packages'])
    return result


def init_facts(pid1_comm, systemd_running):
    """The init system: PID 1's name, whether systemd runs (sd_booted()), and where specdec.bench.service runs
    services: under systemd exactly when it runs, else under specdec's own supervisor."""
    return {
        'pid1': (pid1_comm or '').strip() or None,
        'systemd': systemd_running,
        'service_backend': 'systemd' if systemd_running else 'supervisor',
    }


def gather_host_facts(module, paths, python_envs, python_packages):
    """({specdec_host}, {}): the host's facts; host_facts and probe return nothing beside them."""
    module.run_command_environ_update.update(ENVIRON)
    mounts = parsed(module, parse_mountinfo, read_file('/proc/self/mountinfo') or '', '/proc/self/mountinfo')
    meminfo = parsed(module, parse_meminfo, read_file('/proc/meminfo'), '/proc/meminfo')
    ports = []
    for family, path in (('ipv4', '/proc/net/tcp'), ('ipv6', '/proc/net/tcp6')):
        text = read_file(path)
        if text is not None:  # tcp6 is absent when IPv6 is disabled
            ports.extend(parsed(module, lambda data, family=family: parse_proc_net_tcp(data, family), text, path))
    pid1_environ_raw = read_file('/proc/1/environ', binary=True)
    pid1_environ = parse_environ(pid1_environ_raw) if pid1_environ_raw is not None else None
    systemd_running = os.path.isdir(SYSTEMD_RUN_DIR)
    try:
        allowed_cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        allowed_cpus = None
    usable_cpus = len(allowed_cpus) if allowed_cpus else os.cpu_count()

    try:
        container = detect_container(
            present_files=set(path for path, _kind in CONTAINER_FILES if os.path.exists(path)),
            pid1_environ=pid1_environ,
            module_environ=dict(os.environ),
            pid1_cgroup=read_file('/proc/1/cgroup'),
        )
    except ValueError as exc:
        module.fail_json(msg='cannot parse /proc/1/cgroup: %s' % exc)

    facts = {
        'disk': dict((path, disk_facts(path, mounts)) for path in paths),
        'memory': {
            'total_bytes': meminfo.get('MemTotal'),
            'available_bytes': meminfo.get('MemAvailable'),
            'swap_total_bytes': meminfo.get('SwapTotal'),
        },
        'cpu': dict(online_facts(read_file(CPU_ONLINE), read_file(NODE_ONLINE), allowed_cpus), count=os.cpu_count(), usable=usable_cpus),
        'os': os_facts(module),
        'systemd': systemd_running,
        'init': init_facts(read_file('/proc/1/comm'), systemd_running),
        'container': container,
        'gpu_visibility': {'env': gpu_visibility(dict(os.environ)), 'pid1': gpu_visibility(pid1_environ)},
        'listening_ports': listening_ports(ports),
        'toolchain': tool_facts(module),
        'python_envs': dict((path, python_env_facts(module, path, python_packages)) for path in python_envs),
    }
    return {'specdec_host': facts}, {}
