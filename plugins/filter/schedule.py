# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""schedule_check_spec: the campaign spec that checks a report's schedule (schedule.json) at its band edges.

Its documentation is in schedule_check_spec.yml beside this file.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

# What the check campaign leaves out of the spec it came from: the load study (the check measures the grid only).
DROPPED = ('slo', 'search', 'crossover')
SUFFIX = '-check'
MAX_ID = 64


def _fail(field, value, allowed):
    raise AnsibleFilterError('schedule_check_spec: %s is %r; allowed: %s' % (field, value, allowed))


def band_edges(bands):
    """The concurrencies where a schedule's bands meet, each band's first and last: sorted, distinct."""
    edges = set()
    for band in bands:
        edges.update((band['from'], band['to']))
    return sorted(edges)


def _entries(schedule, host):
    """The schedule's entries of one host for one dataset and temperature each (not the 'all' summary: a check
    measures per run)."""
    return [entry for entry in schedule if entry.get('host') == host and entry.get('dataset') != 'all' and entry.get('bands')]


def _methods(entries):
    """The spec's methods that make every band's setting: each method with the values its bands name, per parameter."""
    methods = {}
    for entry in entries:
        for band in entry['bands']:
            params = methods.setdefault(band['method'], {})
            for key, value in (band.get('params') or {}).items():
                if value not in params.setdefault(key, []):
                    params[key].append(value)
    return dict((method, dict((key, sorted(values)) for key, values in params.items())) for method, params in methods.items())


def _tp(spec_tp, sizes):
    """The spec's TP entries of the schedule's sizes (an entry is a size or a mapping with 'size')."""
    entries = spec_tp if isinstance(spec_tp, list) else [spec_tp]
    kept = [entry for entry in entries if (entry.get('size') if isinstance(entry, Mapping) else entry) in sizes]
    if not kept:
        _fail('the spec\'s tp', spec_tp, 'entries of the schedule\'s TP sizes %s' % sorted(sizes))
    return kept


def schedule_check_spec(spec, schedule, host, campaign=None):
    """The spec of the campaign that re-measures, on fresh servers, each setting of a host's schedule at every band
    edge: the same model, draft, workload and repeats, the schedule's TP sizes and settings, concurrency = the edges,
    no load study; its id is `campaign` (default <spec's campaign>-check)."""
    if not isinstance(spec, Mapping) or not spec.get('campaign'):
        _fail('the input', spec, 'a campaign spec (campaign, model, tp, methods, workload, concurrency, ...)')
    if not isinstance(schedule, list) or not all(isinstance(entry, Mapping) for entry in schedule):
        _fail('schedule', schedule, 'the list a report writes to schedule.json')
    entries = _entries(schedule, host)
    if not entries:
        _fail('schedule', '(no band of host %r)' % (host,), 'a schedule.json with bands of host %r' % (host,))
    for entry in entries:
        for position, band in enumerate(entry['bands']):
            for key in ('from', 'to', 'method'):
                if band.get(key) is None:
                    _fail('schedule bands[%d].%s of %s' % (position, key, entry.get('dataset')), band.get(key),
                          'a band as schedule.json writes it (from, to, stage, method, params)')
    check_id = campaign or '%s%s' % (spec['campaign'], SUFFIX)
    if len(check_id) > MAX_ID:
        _fail('campaign', check_id, 'an id of at most %d characters' % MAX_ID)
    out = dict((key, copy.deepcopy(value)) for key, value in spec.items() if key not in DROPPED)
    out['campaign'] = check_id
    out['description'] = 'checks the schedule of %s at its band edges (%s)' % (spec['campaign'], host)
    out['tp'] = _tp(spec.get('tp'), set(entry['tp'] for entry in entries))
    out['methods'] = _methods(entries)
    out['concurrency'] = sorted(set(edge for entry in entries for edge in band_edges(entry['bands'])))
    workload = dict(out.get('workload') or {})
    rate = workload.get('request_rate')
    if isinstance(rate, list):
        workload['request_rate'] = 'inf'  # the schedule ranks the closed-loop grid
    out['workload'] = workload
    return out


class FilterModule(object):
    """The schedule check's spec."""

    def filters(self):
        return {'schedule_check_spec': schedule_check_spec}
