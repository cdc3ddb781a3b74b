# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The spec's workload (prompt sets, sampling, the random set's sizes), concurrency and repeats, checked, with their
defaults filled: what every stage's harness sends (its request rate, burstiness and cap: the load module's)."""

from __future__ import annotations

import json
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.specdec.bench.plugins.module_utils._common import temperature_tag
from ansible_collections.specdec.bench.plugins.plugin_utils import datasets as prompt_sets
from .common import ENV_NAME_RE, POSITIVE_INT, check_keys, fail, is_int, is_number, is_positive_int
from .load import spec_request_rate

# the random set's sizes: required unless workload.datasets names no random set (or gives them on its entry)
WORKLOAD_RANDOM = ('input_len', 'output_len', 'num_prompts')
WORKLOAD_OPTIONAL = ('seed', 'request_rate', 'warmup_requests', 'datasets', 'temperature', 'top_p', 'top_k',
                     'stop_at_eos', 'chat_template_kwargs', 'burstiness', 'max_concurrency')
DEFAULT_TEMPERATURE = 0.0
DEFAULT_TOP_P = 1.0
DEFAULT_TOP_K = -1
# what the harness passes to the chat template itself (transformers' apply_chat_template): a kwarg cannot set them
TEMPLATE_RESERVED = ('messages', 'tools', 'documents', 'add_generation_prompt')
# spec.repeats: measurements of each (dataset, temperature, concurrency) of a stage, after one warm-up (bench_run).
DEFAULT_REPEATS = 1
MAX_REPEATS = 100


def _temperatures(value):
    """workload.temperature: one number >= 0 or a non-empty list of them, as floats; distinct as results name them."""
    field = 'workload.temperature'
    values = value if isinstance(value, (list, tuple)) else [value]
    if not values:
        fail(field, 'is an empty list', 'a number >= 0 or a non-empty list of them (a sweep; default [0])')
    temperatures, tags = [], {}
    for position, item in enumerate(values):
        item_field = '%s[%d]' % (field, position) if isinstance(value, (list, tuple)) else field
        if not is_number(item) or item < 0:
            fail(item_field, 'is %r' % (item,), 'a number >= 0 (0 is greedy)')
        tag = temperature_tag(item)  # results are named by it (result-<dataset>-t<tag>-c<n>.json): it must be unique
        if tag in tags:
            fail(item_field, 'repeats %r as t%s, as %s[%d] (a duplicate run)' % (item, tag, field, tags[tag]),
                 'distinct temperatures, at most 6 significant digits')
        tags[tag] = position
        temperatures.append(float(item))
    return temperatures


def _template_kwargs(kwargs):
    """workload.chat_template_kwargs: variables for the target's chat template (enable_thinking: false), as JSON."""
    field = 'workload.chat_template_kwargs'
    if kwargs is None:
        return {}
    if not isinstance(kwargs, Mapping):
        fail(field, 'is %r' % (kwargs,), 'a mapping of template variable names to values, such as {enable_thinking: false}')
    for name, value in kwargs.items():
        if not isinstance(name, str) or not ENV_NAME_RE.match(name) or name in TEMPLATE_RESERVED:
            fail('%s key %r' % (field, name), 'is not a template variable the spec may set',
                 'names matching %s other than %s (the harness sets those)' % (ENV_NAME_RE.pattern[:-2], ', '.join(TEMPLATE_RESERVED)))
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            fail('%s.%s' % (field, name), 'is %r' % (value,), 'a JSON value (string, number, boolean, null, list, mapping)')
    return json.loads(json.dumps(dict(kwargs)))


def _datasets(workload):
    """workload.datasets checked (datasets.validate_datasets) with defaults filled; a random set takes the workload's sizes."""
    entries = workload.get('datasets', [prompt_sets.RANDOM])
    try:
        checked = prompt_sets.validate_datasets(entries, where='workload.datasets')
    except prompt_sets.DatasetError as exc:
        raise AnsibleFilterError('campaign_plan: %s' % exc)
    for position, entry in enumerate(checked):
        if entry['kind'] != 'random':
            continue
        for key in WORKLOAD_RANDOM:
            if entry.get(key) is not None:
                continue
            if not is_positive_int(workload.get(key)):
                if 'datasets' not in workload:  # today's spec, today's message
                    fail('workload.%s' % key, 'is %r' % (workload.get(key),), POSITIVE_INT)
                fail('workload.datasets[%d].%s' % (position, key), 'is missing and workload.%s is %r' % (key, workload.get(key)),
                     '%s, on the random entry or in workload.%s' % (POSITIVE_INT, key))
            entry[key] = workload[key]
    return checked


def spec_workload(workload):
    """The workload every stage runs: today's random-set keys as given, and the datasets and sampling, defaults filled."""
    check_keys(workload, 'workload', WORKLOAD_RANDOM + WORKLOAD_OPTIONAL)
    for key in WORKLOAD_RANDOM:
        if key in workload and not is_positive_int(workload[key]):
            fail('workload.%s' % key, 'is %r' % (workload[key],), POSITIVE_INT)
    for key in ('seed', 'warmup_requests'):
        if key in workload and (not is_int(workload[key]) or workload[key] < 0):
            fail('workload.%s' % key, 'is %r' % (workload[key],), 'an integer >= 0')
    # a list is a sweep: the grid runs closed-loop, each finite rate one open-loop run (the stage's load, load.spec_load)
    rate, _open_loop = spec_request_rate(workload.get('request_rate', 'inf'))
    top_p = workload.get('top_p', DEFAULT_TOP_P)
    if not is_number(top_p) or not 0 < top_p <= 1:
        fail('workload.top_p', 'is %r' % (top_p,), 'a number in (0, 1] (1: no nucleus cut, the default)')
    top_k = workload.get('top_k', DEFAULT_TOP_K)
    if not is_int(top_k) or not (top_k == -1 or top_k >= 1):
        fail('workload.top_k', 'is %r' % (top_k,), 'an integer >= 1, or -1 (no top-k cut, the default)')
    stop_at_eos = workload.get('stop_at_eos', True)
    if not isinstance(stop_at_eos, bool):
        fail('workload.stop_at_eos', 'is %r' % (stop_at_eos,), 'true (the default: generation ends at EOS) or false')
    result = dict((key, workload[key]) for key in WORKLOAD_RANDOM + ('seed', 'request_rate', 'warmup_requests')
                  if key in workload)
    if 'request_rate' in result:
        result['request_rate'] = rate  # YAML's .inf is 'inf': one spelling in the stages and the results
    result.update(
        datasets=_datasets(workload),
        temperature=_temperatures(workload.get('temperature', [DEFAULT_TEMPERATURE])),
        top_p=float(top_p), top_k=top_k, stop_at_eos=stop_at_eos,
        chat_template_kwargs=_template_kwargs(workload.get('chat_template_kwargs')))
    return result


def spec_concurrency(concurrency):
    values = concurrency if isinstance(concurrency, (list, tuple)) else None
    if not values:
        fail('concurrency', 'is %r' % (concurrency,), 'a non-empty list of positive integers')
    for position, value in enumerate(values):
        if not is_positive_int(value):
            fail('concurrency[%d]' % position, 'is %r' % (value,), POSITIVE_INT)
        if value in values[:position]:
            fail('concurrency[%d]' % position, 'repeats %r' % (value,), 'distinct positive integers')
    return list(values)


def spec_repeats(repeats):
    """How many times each dataset, temperature and concurrency of a stage is measured: 1 unless given."""
    if repeats is None:
        return DEFAULT_REPEATS
    if not is_int(repeats) or not 1 <= repeats <= MAX_REPEATS:
        fail('spec.repeats', 'is %r' % (repeats,), 'an integer from 1 to %d (default %d)' % (MAX_REPEATS, DEFAULT_REPEATS))
    return repeats
