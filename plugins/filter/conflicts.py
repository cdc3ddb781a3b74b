# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""conflicts_holders and conflicts_record: what the conflicts role stops and what it records first;
conflicts_restore_units and conflicts_restore_processes: what its restore starts again. Pure functions, documented
in the .yml file of each name."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.specdec.bench.plugins.module_utils._process import RESTORED_SERVICE, restore_definition
from ansible_collections.specdec.bench.plugins.module_utils._systemd import normalize_unit_name

BACKENDS = ('systemd', 'supervisor')
ACTIVE_STATES = ('active', 'activating', 'reloading')


def _unique(items):
    out = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def _patterns(stoppable):
    try:
        return [normalize_unit_name(name) for name in stoppable or []]
    except (AttributeError, ValueError) as exc:
        raise AnsibleFilterError('conflicts_holders: stoppable %s; allowed: unit names or glob patterns' % exc)


def _refused(holder, patterns, process_names):
    """The plan said the holder may be stopped; the role's own inputs must say so too (they may differ from the plan's)."""
    if not holder.get('stoppable'):
        return True
    unit = holder.get('unit')
    if unit:
        return (not any(fnmatch.fnmatchcase(unit, pattern) for pattern in patterns)
                and unit not in [RESTORED_SERVICE % name for name in process_names])
    return holder.get('stoppable_process') not in process_names


def conflicts_holders(stages, stoppable=None, stoppable_processes=None):
    """Who holds the GPUs of the feasible stages, and what of it may be stopped.

    Returns holders (each once), refused (holders the plan or this host's lists do not allow stopping), units (to stop,
    sorted), processes (holders no unit names, once per pid, by pid), process_pids, gpus (UUIDs to wait for),
    servers (the feasible stages' own units) and repeated ({process name: [pids]} for a name matching several).
    """
    feasible = [stage for stage in stages or [] if stage.get('feasible')]
    holders = _unique(holder for stage in feasible for holder in stage.get('holders') or [])
    patterns = _patterns(stoppable)
    process_names = [entry.get('name') for entry in stoppable_processes or [] if isinstance(entry, Mapping)]
    processes = {}
    for holder in holders:
        if not holder.get('unit') and holder.get('stoppable_process') and holder.get('pid') not in processes:
            processes[holder['pid']] = holder
    processes = [processes[pid] for pid in sorted(processes)]
    pids_by_name = {}
    for holder in processes:
        pids_by_name.setdefault(holder['stoppable_process'], []).append(holder['pid'])
    return {
        'holders': holders,
        'refused': [holder for holder in holders if _refused(holder, patterns, process_names)],
        'units': sorted(set(holder['unit'] for holder in holders if holder.get('unit'))),
        'processes': processes,
        'process_pids': [holder['pid'] for holder in processes],
        'gpus': _unique(holder.get('uuid') for holder in holders),
        'servers': [stage['unit'] for stage in feasible],
        'repeated': {name: pids for name, pids in pids_by_name.items() if len(pids) > 1},
    }


def _prior_state(result, backend):
    """A unit's state before the campaign stops it, from ansible.builtin.systemd_service or specdec.bench.service."""
    if backend == 'systemd':
        status = result.get('status') or {}
        return {'active_state': status.get('ActiveState'), 'sub_state': status.get('SubState'),
                'unit_file_state': status.get('UnitFileState'), 'main_pid': int(status.get('MainPID') or 0)}
    service = result.get('service') or {}
    return {'active_state': 'active' if service.get('state') == 'running' else 'inactive', 'sub_state': service.get('state'),
            'unit_file_state': 'supervisor', 'main_pid': service.get('pid')}


def conflicts_record(prior, backend, campaign, servers, old=None):
    """The record written before anything stops: each unit's prior state, the processes and servers recorded earlier.

    prior: the loop results reading each unit; old: the record of an earlier, interrupted run, whose units keep their
    first state (it saw them before anything was stopped) and whose processes and servers are kept.
    """
    if backend not in BACKENDS:
        raise AnsibleFilterError('conflicts_record: backend is %r; allowed: %s' % (backend, ', '.join(BACKENDS)))
    old = old or {}
    units = {result['item']: _prior_state(result, backend) for result in prior or [] if not result.get('skipped')}
    units.update(old.get('units') or {})
    return {
        'campaign': campaign,
        'units': units,
        'processes': old.get('processes') or {},
        'servers': sorted(set(servers or []) | set(old.get('servers') or [])),
    }


def conflicts_restore_units(record):
    """The units a record says were running before the campaign stopped them, sorted."""
    units = (record or {}).get('units') or {}
    return sorted(name for name, state in units.items() if (state or {}).get('active_state') in ACTIVE_STATES)


def conflicts_restore_processes(record, campaign=''):
    """The processes a record says specdec.bench.process_stop stopped, by name: {name, service, pid, argv, definition}.

    definition is what the supervisor service runs (restore_definition, the function process_stop checked before the
    stop): the recorded words, cwd and environment, as the recorded uid, gid and groups.
    """
    entries = (record or {}).get('processes') or {}
    if not isinstance(entries, Mapping):
        raise AnsibleFilterError('conflicts_restore_processes: processes is %r; allowed: a mapping of names to entries'
                                 % (entries,))
    restored = []
    for name in sorted(entries):
        entry = entries[name]
        if not isinstance(entry, Mapping):
            raise AnsibleFilterError('conflicts_restore_processes: processes.%s is %r; allowed: an entry process_stop '
                                     'recorded' % (name, entry))
        try:
            definition = restore_definition(name, entry, campaign)
        except ValueError as exc:
            raise AnsibleFilterError('conflicts_restore_processes: %s' % exc) from None
        restored.append({'name': name, 'service': RESTORED_SERVICE % name, 'pid': entry['pid'], 'argv': entry['argv'],
                         'definition': definition})
    return restored


class FilterModule:
    def filters(self):
        return {
            'conflicts_holders': conflicts_holders,
            'conflicts_record': conflicts_record,
            'conflicts_restore_units': conflicts_restore_units,
            'conflicts_restore_processes': conflicts_restore_processes,
        }
