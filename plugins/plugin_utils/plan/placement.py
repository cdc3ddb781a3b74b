# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Where stages run: a TP entry's GPUs on this host (its pins, its pool's slots, or the first GPUs), the CPUs and NUMA
nodes local to them (stage_pinning), and the ports (the host's listening ones skipped)."""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.specdec.bench.plugins.module_utils._host_probe import format_cpu_list, parse_cpu_list
from .common import fail, is_int, powers_of_two


def host_gpus(facts):
    gpus = (facts or {}).get('nvidia_gpus') or []
    return dict((gpu.get('index'), gpu) for gpu in gpus if is_int(gpu.get('index')))


def place(tp, host, strict):
    """(slots, why not) for one TP entry on this host; host problems raise when strict.

    A slot is the GPU indices of one stage: the pins, or the first size GPUs of the host (one slot), or each consecutive
    group of size GPUs of the pool (a leftover shorter than size is no slot). [[]] and why not when the GPUs are missing.
    """
    indices = sorted(host)
    if tp['size'] > len(indices):
        if strict:
            fail(tp['field'] + '.size', 'is %d, larger than the host\'s %d GPU(s)' % (tp['size'], len(indices)),
                 ', '.join(str(size) for size in powers_of_two(len(indices))) or 'none (the host has no GPU)')
        return [[]], 'too few GPUs: TP%d needs %d, the host has %d' % (tp['size'], tp['size'], len(indices))
    given, key, what = (tp['pins'], 'gpus', 'pinned') if tp['pool'] is None else (tp['pool'], 'pool', 'pool')
    if given is None:
        return [indices[:tp['size']]], None
    missing = [pin for pin in given if pin not in host]
    if missing:
        if strict:
            fail('%s.%s[%d]' % (tp['field'], key, given.index(missing[0])),
                 '%s GPU %d, which the host does not have' % ('pins' if key == 'gpus' else 'lists', missing[0]),
                 'the host\'s GPU indices %s' % ', '.join(str(i) for i in indices))
        return [[]], '%s GPU(s) %s do not exist on the host (indices %s)' % (
            what, ', '.join(str(i) for i in missing), ', '.join(str(i) for i in indices))
    return _pool_slots(given, tp['size'])[0], None


def _pool_slots(pool, size):
    """(slots, leftover): the consecutive groups of size GPUs of a pool, and the GPUs after the last whole group."""
    whole = len(pool) - len(pool) % size
    return [list(pool[start:start + size]) for start in range(0, whole, size)], list(pool[whole:])


def pool_key(tp, slots, why_not):
    """A stage's `pool`: None without one; else its TP entry's id, the pool's GPUs, the size, its slots (none when the
    GPUs are missing) and the leftover GPUs no slot uses."""
    if tp['pool'] is None:
        return None
    leftover = _pool_slots(tp['pool'], tp['size'])[1]
    return {'tp': tp['prefix'], 'gpus': list(tp['pool']), 'size': tp['size'],
            'slots': [] if why_not else [list(slot) for slot in slots], 'unused': leftover}


def cpu_set(text):
    """A cpulist fact as a set; None when absent or not a cpulist (nvidia-smi prints N/A where it does not know)."""
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        return set(parse_cpu_list(text))
    except ValueError:
        return None


def _gpu_topology(gpu, key):
    """A GPU's topology fact (gpu_facts puts the topo -m row under topology; a flat key is read too)."""
    topology = gpu.get('topology') if isinstance(gpu.get('topology'), Mapping) else {}
    return topology.get(key, gpu.get(key))


def _pin_set(gpus, key, what, host_set, host_fact):
    """(cpulist, None) of the GPUs' key facts kept to host_set, or (None, why not)."""
    if host_set is None:
        return None, 'the host\'s online %s are unknown (%s; probe again)' % ('CPUs' if what == 'CPUs' else 'NUMA nodes', host_fact)
    sets = [cpu_set(_gpu_topology(gpu, key)) for gpu in gpus]
    unknown = [gpu.get('index') for gpu, found in zip(gpus, sets) if found is None]
    if unknown:
        return None, 'GPU %s %s no %s in the facts (nvidia-smi topo -m)' % (
            ','.join('%s' % (index,) for index in unknown), 'has' if len(unknown) == 1 else 'have', key)
    value = format_cpu_list(set().union(*sets) & host_set)
    if value:
        return value, None
    return None, '%s not online on this host (%s)' % (
        ', '.join("GPU %s's %s %s" % (gpu.get('index'), what, _gpu_topology(gpu, key)) for gpu in gpus)
        + (' is' if len(gpus) == 1 and what == 'NUMA node' else ' are'), format_cpu_list(host_set) or 'none')


def stage_pinning(gpus, facts):
    """(cpu_affinity, numa_nodes, pin_note) of a stage on these GPUs: a pure function of the GPU and host facts.

    cpu_affinity: the union of the GPUs' CPU affinity (nvidia-smi topo -m), kept to the host's online CPUs (and to the
    CPUs the probe may run on, which a container's cpuset limits), as a cpulist ("0-47,96-143"). numa_nodes: the union
    of the GPUs' NUMA affinity, kept to the online nodes, a cpulist too ("0"; "0-1" for a stage spanning two nodes).
    Each is None when a GPU's fact or the host's is unknown, or when none of them is online; pin_note then says why
    ("...: not pinned"; None when both are set).
    """
    if not gpus:
        return None, None, 'no GPUs placed: not pinned'
    cpu = ((facts or {}).get('specdec_host') or {}).get('cpu') or {}
    host_cpus, allowed = cpu_set(cpu.get('online')), cpu_set(cpu.get('allowed'))
    if host_cpus is not None and allowed is not None:
        host_cpus &= allowed
    cpus, cpu_note = _pin_set(gpus, 'cpu_affinity', 'CPUs', host_cpus, 'specdec_host.cpu.online')
    nodes, node_note = _pin_set(gpus, 'numa_affinity', 'NUMA node', cpu_set(cpu.get('numa_nodes')), 'specdec_host.cpu.numa_nodes')
    notes = []
    if cpu_note:
        notes.append(cpu_note + ': not pinned' + (' to CPUs' if nodes else ''))
    if node_note and node_note != cpu_note:
        notes.append(node_note + ': not pinned' + (' to a NUMA node' if cpus else ''))
    return cpus, nodes, '; '.join(notes) or None


def listening_ports(facts):
    ports = ((facts or {}).get('specdec_host') or {}).get('listening_ports') or []
    return set(port.get('port') if isinstance(port, Mapping) else port for port in ports)


def free_port(port, busy_ports, base_port, count):
    """The first port from port on that nothing on the host listens on, for the stage after count stages."""
    while port in busy_ports:
        port += 1
    if port > 65535:
        fail('base_port', 'is %d, too high for %d stages' % (base_port, count + 1), 'a lower port')
    return port
