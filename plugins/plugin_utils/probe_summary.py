# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The probe summary: what a person reads about a host, from the facts that specdec.bench.probe sets.

Pure functions, used on the controller by the probe action plugin and the probe_summary filters.
"""

from __future__ import annotations


def _gpu(gpu):
    return {
        'index': gpu.get('index'),
        'uuid': gpu.get('uuid'),
        'name': gpu.get('name'),
        'compute_capability': gpu.get('compute_capability'),
        'memory_used_mib': gpu.get('memory_used_mib'),
        'memory_total_mib': gpu.get('memory_total_mib'),
        'holders': [
            {'pid': p.get('pid'), 'unit': p.get('unit'), 'used_memory_mib': p.get('used_memory_mib')}
            for p in gpu.get('processes') or []
        ],
        'unexplained_memory_mib': gpu.get('unexplained_memory_mib'),
        'nvlink_peers': sorted(link.get('index') for link in gpu.get('nvlink') or []),
    }


def probe_summary(facts, host):
    facts = facts or {}
    node = facts.get('specdec_host') or {}
    driver = facts.get('nvidia_driver') or {}
    container = node.get('container') or {}
    init = node.get('init') or {}
    return {
        'host': host,
        'os': (node.get('os') or {}).get('pretty_name'),
        'container': container.get('type') if container.get('detected') else None,
        'init': {'pid1': init.get('pid1'), 'service_backend': init.get('service_backend')},
        'cpu_count': (node.get('cpu') or {}).get('count'),
        'memory_total_bytes': (node.get('memory') or {}).get('total_bytes'),
        'driver': driver.get('version'),
        'cuda': driver.get('cuda_version'),
        'gpus': [_gpu(gpu) for gpu in sorted(facts.get('nvidia_gpus') or [], key=lambda g: g.get('index'))],
        'units': {
            name: {key: unit.get(key) for key in ('load_state', 'active_state', 'sub_state', 'main_pid')}
            for name, unit in sorted((facts.get('systemd_units') or {}).items())
        },
        'disks': {
            path: {key: disk.get(key) for key in ('exists', 'checked_path', 'mount_point', 'free_bytes', 'total_bytes')}
            for path, disk in sorted((node.get('disk') or {}).items())
        },
        'listening_ports': sorted(set(p.get('port') for p in node.get('listening_ports') or [])),
        'toolchain': {name: tool.get('version') for name, tool in sorted((node.get('toolchain') or {}).items())},
        'python_envs': {
            path: env.get('packages') for path, env in sorted((node.get('python_envs') or {}).items())
        },
    }


def _mib(value):
    return '?' if value is None else str(value)


def probe_summary_lines(summary):
    """The summary as the lines a person reads: the host, one line per GPU and who holds it, the units."""
    gpus = summary.get('gpus') or []
    lines = ['%s: %s%s, %s CPUs, driver %s, CUDA %s, %d GPU(s)' % (
        summary.get('host'), summary.get('os') or 'unknown OS',
        ' (%s container)' % summary['container'] if summary.get('container') else '',
        summary.get('cpu_count'), summary.get('driver'), summary.get('cuda'), len(gpus))]
    init = summary.get('init') or {}
    if init.get('service_backend') == 'supervisor':  # systemd hosts, the usual case, get no line
        lines.append("init %s (no systemd: services run under specdec's supervisor)" % (init.get('pid1') or 'unknown'))
    for gpu in gpus:
        holders = ', '.join('%s pid %s %s MiB' % (h.get('unit') or 'no unit', h.get('pid'), _mib(h.get('used_memory_mib')))
                            for h in gpu.get('holders') or [])
        unexplained = gpu.get('unexplained_memory_mib')
        lines.append('GPU%s %s cc %s: %s/%s MiB used%s%s%s' % (
            gpu.get('index'), gpu.get('name'), gpu.get('compute_capability'), _mib(gpu.get('memory_used_mib')),
            _mib(gpu.get('memory_total_mib')), ', held by ' + holders if holders else ', free',
            ', %s MiB unexplained' % unexplained if unexplained else '',
            ', NVLink to GPU%s' % ','.join(str(i) for i in gpu['nvlink_peers']) if gpu.get('nvlink_peers') else ''))
    for name, unit in sorted((summary.get('units') or {}).items()):
        state = unit.get('load_state') if unit.get('load_state') != 'loaded' else '%s/%s' % (unit.get('active_state'), unit.get('sub_state'))
        lines.append('unit %s: %s%s' % (name, state, ' pid %s' % unit['main_pid'] if unit.get('main_pid') else ''))
    for path, disk in sorted((summary.get('disks') or {}).items()):
        free = disk.get('free_bytes')
        lines.append('disk %s: %s GiB free on %s%s' % (
            path, '?' if free is None else round(free / 2 ** 30, 1), disk.get('mount_point'),
            '' if disk.get('exists') else ' (does not exist yet; checked %s)' % disk.get('checked_path')))
    return lines
