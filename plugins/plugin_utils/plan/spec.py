# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign spec checked, everything about it that does not depend on the host, before any stage is made: the
keys, the campaign id, the model, the draft (its checks in the checkpoints module), the methods and their parameter
matrices, the TP entries and their pools, parallel, the workload (its checks in the workload module), extra_args and
env, the load: request rates, SLOs, the capacity search and the crossover (its checks in the load module); and the
host's stoppable units and processes."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.specdec.bench.plugins.module_utils._common import ID_PATTERN, ID_RE as _ID_RE
from ansible_collections.specdec.bench.plugins.module_utils._systemd import normalize_unit_name
from .capacity import DEFAULT_MEM_FRACTION, DEFAULT_MIN_KV_HEADROOM_GIB
from .checkpoints import spec_draft
from .common import (MODEL_KEYS, ONE_LINE, POSITIVE_INT, STEP_PARAM, check_id, check_keys, check_path, fail, is_int,
                     is_number, is_positive_int, one_line)
from .load import spec_load
from .methods import COMMON_FLAGS, METRICS_FLAG, arg_items, check_extra_args, env_items, flag_name, server_metrics
from .workload import spec_concurrency, spec_repeats, spec_workload

CAMPAIGN_MAX_LEN = 64
SPEC_KEYS = ('campaign', 'description', 'model', 'draft', 'tp', 'methods', 'workload', 'concurrency', 'repeats',
             'mem_fraction', 'min_kv_headroom_gib', 'extra_args', 'env', 'parallel', 'enable_metrics', 'slo', 'search',
             'crossover', 'accuracy')
# The task accuracy's options (the report grades the outputs; docs/report.md "Lossless and accurate"): execute_code runs
# the humaneval and mbpp reference tests against the generated code, in the controller's sandbox (bubblewrap).
ACCURACY_KEYS = ('execute_code',)
TP_KEYS = ('size', 'gpus', 'id', 'pool')
# spec.parallel: how many stages may run at once, on disjoint GPUs (1, the default, is one at a time)
PARALLEL_ALLOWED = 'true, false or a number of stages >= 1'
# Where an infinity means something: an unbounded request rate (the scalar, or an entry of the sweep).
INFINITY_ALLOWED = ('workload.request_rate',)
_LIST_ENTRY_RE = re.compile(r'\[\d+\]\Z')


def _check_finite(value, field='spec'):
    """One check for the whole spec: no NaN anywhere, no infinity but where it means something."""
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value) or _LIST_ENTRY_RE.sub('', field) not in INFINITY_ALLOWED:
            fail(field, 'is %r' % (value,), 'a finite number')
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _check_finite(item, '%s.%s' % (field, key) if field != 'spec' else str(key))
    elif isinstance(value, (list, tuple)):
        for position, item in enumerate(value):
            _check_finite(item, '%s[%d]' % (field, position))


def _int_values(value, field):
    """A parameter's values: one positive integer or a non-empty list of distinct ones."""
    values = value if isinstance(value, (list, tuple)) else [value]
    if not values:
        fail(field, 'is an empty list', 'a positive integer or a non-empty list of them')
    for position, item in enumerate(values):
        item_field = '%s[%d]' % (field, position) if isinstance(value, (list, tuple)) else field
        if not is_positive_int(item):
            fail(item_field, 'is %r' % (item,), POSITIVE_INT)
        if item in values[:position]:
            fail(item_field, 'repeats %r (a duplicate stage)' % (item,), 'distinct values')
    return list(values)


def _spec_methods(spec_methods, table):
    """[(method, [params dict, ...])] in spec order, each method's parameter matrix in table order."""
    allowed = ', '.join(sorted(table))
    if not isinstance(spec_methods, Mapping) or not spec_methods:
        fail('methods', 'is %r' % (spec_methods,), 'a mapping of method name to parameters, methods: %s' % allowed)
    plans = []
    for method, given in spec_methods.items():
        if method not in table:
            fail('methods.%s' % method, 'is not a known method', allowed)
        rules = table[method]['params']
        given = given or {}
        if not isinstance(given, Mapping):
            fail('methods.%s' % method, 'is %r' % (given,), 'a mapping of parameters: %s' % (', '.join(rules) or 'none ({})'))
        for param in given:
            if param not in rules:
                fail('methods.%s.%s' % (method, param), 'is not a parameter of %s' % method, ', '.join(rules) or 'none ({})')
        axes = []
        for param, rule in rules.items():
            field = 'methods.%s.%s' % (method, param)
            if param in given:
                axes.append(_int_values(given[param], field))
            elif rule['required']:
                fail(field, 'is required', 'a positive integer or a list of them')
            else:
                axes.append([rule['default']])
        plans.append((method, [dict(zip(rules, combo)) for combo in itertools.product(*axes)]))
    return plans


def _spec_tp(entries):
    """[{size, pins (list or None), prefix, field}] after the host-independent checks."""
    if not isinstance(entries, (list, tuple)) or not entries:
        fail('tp', 'is %r' % (entries,), 'a non-empty list of {size, gpus (optional), id (optional)}')
    tps = []
    for position, entry in enumerate(entries):
        field = 'tp[%d]' % position
        if is_int(entry):
            entry = {'size': entry}
        check_keys(entry, field, TP_KEYS)
        size = entry.get('size')
        if not is_positive_int(size) or size & (size - 1):
            fail(field + '.size', 'is %r' % (size,), 'a power of two (1, 2, 4, 8, ...) no larger than the host\'s GPU count')
        pins = entry.get('gpus')
        if pins is not None:
            if not isinstance(pins, (list, tuple)):
                fail(field + '.gpus', 'is %r' % (pins,), 'a list of %d GPU indices' % size)
            for pin_position, pin in enumerate(pins):
                if not is_int(pin) or pin < 0:
                    fail('%s.gpus[%d]' % (field, pin_position), 'is %r' % (pin,), 'a GPU index (0, 1, 2, ...)')
                if pin in pins[:pin_position]:
                    fail('%s.gpus[%d]' % (field, pin_position), 'pins GPU %d twice' % pin, 'distinct GPU indices')
            if len(pins) != size:
                fail(field + '.gpus', 'lists %d GPU(s) for size %d' % (len(pins), size), 'exactly %d GPU indices (tp size)' % size)
            pins = list(pins)
        pool = _spec_pool(entry, field, size)
        prefix = entry.get('id', 'tp%d' % size)
        check_id(prefix, field + '.id')
        for other in tps:
            if other['size'] == size and other['pins'] == pins and other['pool'] == pool:
                fail(field, 'repeats %s (size %d, %s: duplicate stages)' % (
                    other['field'], size, 'pool %s' % pool if pool is not None else 'gpus %s' % pins), 'distinct TP entries')
            if other['prefix'] == prefix:
                fail(field, 'has the id %r of %s (duplicate stages)' % (prefix, other['field']),
                     'distinct TP entries; give one an id matching %s' % ID_PATTERN)
        tps.append({'size': size, 'pins': pins, 'pool': pool, 'prefix': prefix, 'field': field})
    return tps


def _spec_pool(entry, field, size):
    """A TP entry's pool: None, or its distinct GPU indices (at least size of them), in the order given."""
    pool = entry.get('pool')
    if pool is None:
        return None
    allowed = 'a list of at least %d distinct GPU indices (tp size %d), its slots the consecutive groups of %d' % (size, size, size)
    if entry.get('gpus') is not None:
        fail(field + '.pool', 'is given together with %s.gpus' % field,
             'either gpus (one slot, every stage on it) or pool (%s), not both' % allowed)
    if not isinstance(pool, (list, tuple)):
        fail(field + '.pool', 'is %r' % (pool,), allowed)
    for position, index in enumerate(pool):
        if not is_int(index) or index < 0:
            fail('%s.pool[%d]' % (field, position), 'is %r' % (index,), 'a GPU index (0, 1, 2, ...)')
        if index in pool[:position]:
            fail('%s.pool[%d]' % (field, position), 'lists GPU %d twice' % index, 'distinct GPU indices')
    if len(pool) < size:
        fail(field + '.pool', 'lists %d GPU(s) for size %d' % (len(pool), size), allowed)
    return list(pool)


def _spec_parallel(parallel):
    """spec.parallel as the most stages in flight at once: 1 (false, the default: one at a time), a number, or None
    (true: as many as disjoint GPUs allow)."""
    if parallel is None or parallel is False:
        return 1
    if parallel is True:
        return None
    if not is_int(parallel) or parallel < 1:
        fail('parallel', 'is %r' % (parallel,), PARALLEL_ALLOWED)
    return parallel


def spec_stoppable(stoppable):
    if stoppable is None:
        return []
    if not isinstance(stoppable, (list, tuple)):
        fail('stoppable', 'is %r' % (stoppable,), 'a list of unit names or glob patterns')
    try:
        return [normalize_unit_name(name) for name in stoppable]
    except (AttributeError, ValueError) as exc:
        raise AnsibleFilterError('campaign_plan: stoppable %s; allowed: unit names or glob patterns ([A-Za-z0-9:_.@-] and *?[])' % exc)


def spec_stoppable_processes(processes):
    """specdec_stoppable_processes as [(name, compiled regex)], in order: the first entry that matches names a holder."""
    if processes is None:
        return []
    allowed = 'a list of {name: <id, %s>, match: <Python regex searched in the command line>}' % ID_PATTERN
    if not isinstance(processes, (list, tuple)):
        fail('stoppable_processes', 'is %r' % (processes,), allowed)
    rules, names = [], set()
    for position, entry in enumerate(processes):
        field = 'stoppable_processes[%d]' % position
        if not isinstance(entry, Mapping) or set(entry) != {'name', 'match'}:
            fail(field, 'is %r' % (entry,), 'a mapping with exactly the keys name, match')
        name, match = entry['name'], entry['match']
        if not isinstance(name, str) or not _ID_RE.match(name):
            fail(field + '.name', 'is %r' % (name,), 'an id matching %s' % ID_PATTERN)
        if name in names:
            fail(field + '.name', 'repeats %r' % name, 'distinct names')
        names.add(name)
        if not isinstance(match, str) or not match:
            fail(field + '.match', 'is %r' % (match,), 'a non-empty Python regular expression')
        try:
            rules.append((name, re.compile(match)))
        except re.error as exc:
            fail(field + '.match', 'is %r, not a regular expression (%s)' % (match, exc), 'a Python regular expression')
    return rules


def spec_accuracy(accuracy):
    """The spec's accuracy options, normalized: {'execute_code': bool}, off by default."""
    if accuracy is None:
        return {'execute_code': False}
    check_keys(accuracy, 'accuracy', ACCURACY_KEYS)
    execute = accuracy.get('execute_code', False)
    if not isinstance(execute, bool):
        fail('accuracy.execute_code', 'is %r' % (execute,), 'true (run the humaneval and mbpp tests on the generated code in '
             'the controller\'s bubblewrap sandbox) or false')
    return {'execute_code': execute}


def validate_spec(spec, table, build=None):
    """Everything about the spec that does not depend on the host, checked before any stage is built."""
    check_keys(spec, 'spec', SPEC_KEYS)
    _check_finite(spec)
    description = spec.get('description')
    if description is not None and (not isinstance(description, str) or not one_line(description)):
        fail('description', 'is %r' % (description,), ONE_LINE)
    check_id(spec.get('campaign'), 'campaign')
    if len(spec['campaign']) > CAMPAIGN_MAX_LEN:
        fail('campaign', 'is %d characters long' % len(spec['campaign']), 'at most %d characters' % CAMPAIGN_MAX_LEN)
    model = spec.get('model')
    if isinstance(model, str):
        model = {'path': model}
    check_keys(model, 'model', MODEL_KEYS)
    check_path(model.get('path'), 'model.path')
    if model.get('bytes') is not None and not is_positive_int(model['bytes']):
        fail('model.bytes', 'is %r' % (model['bytes'],), 'a positive integer number of bytes (metadata.total_size)')
    draft, sweep = spec_draft(spec.get('draft'))
    mem_fraction = spec.get('mem_fraction', DEFAULT_MEM_FRACTION)
    if not is_number(mem_fraction) or not 0 < mem_fraction <= 1:
        fail('mem_fraction', 'is %r' % (mem_fraction,), 'a number in (0, 1], SGLang\'s --mem-fraction-static')
    headroom = spec.get('min_kv_headroom_gib', DEFAULT_MIN_KV_HEADROOM_GIB)
    if not is_number(headroom) or headroom < 0:
        fail('min_kv_headroom_gib', 'is %r' % (headroom,), 'a number of GiB >= 0')
    methods = _spec_methods(spec.get('methods'), table)
    for method, _matrix in methods:
        if 'draft' in table[method]['uses'] and not draft and sweep is None:
            fail('draft.path', 'is missing; method %s needs a draft model' % method, 'an absolute path on the host')
        if 'draft' in table[method]['uses'] and sweep is not None and STEP_PARAM in table[method]['params']:
            fail('draft', 'is a sweep of checkpoints, whose step names the stages, and method %s has a parameter %s of its own'
                 % (method, STEP_PARAM), 'one draft (a path), or a method table without a parameter named %s' % STEP_PARAM)
    metrics, metrics_note = server_metrics(spec.get('enable_metrics'), build)
    extra_args = arg_items(spec.get('extra_args') or [], 'extra_args')
    planned = set(COMMON_FLAGS) | {METRICS_FLAG}  # set by enable_metrics, on or off
    for method, _matrix in methods:
        planned.update(flag_name(arg) for arg in table[method]['args'])
    check_extra_args(extra_args, planned, build)
    env = env_items(spec.get('env'), 'env')
    if 'CUDA_VISIBLE_DEVICES' in env:
        fail('env.CUDA_VISIBLE_DEVICES', 'is set by the plan (GPUs by UUID)', 'any other variable')
    tps, workload = _spec_tp(spec.get('tp')), spec_workload(spec.get('workload'))
    concurrency, repeats = spec_concurrency(spec.get('concurrency')), spec_repeats(spec.get('repeats'))
    return {
        'campaign': spec['campaign'],
        'model': model, 'draft': draft, 'draft_sweep': sweep,
        'mem_fraction': mem_fraction, 'min_kv_headroom_gib': headroom,
        'methods': methods,
        'tp': tps,
        'workload': workload,
        'concurrency': concurrency,
        'repeats': repeats,
        # the open-loop rates, the SLOs, the capacity search and the crossover's concurrencies (load.spec_load)
        'load': spec_load(spec, concurrency, repeats),
        'extra_args': extra_args,
        'env': env,
        'parallel': _spec_parallel(spec.get('parallel', False)),
        'enable_metrics': metrics, 'metrics_note': metrics_note,
        # what the report's task accuracy may do (spec_accuracy)
        'accuracy': spec_accuracy(spec.get('accuracy')),
    }
