# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""model_bytes, fit_tp and campaign_plan: a host's facts and a campaign spec -> the stages to run.

Pure functions, so the plan can be printed in check mode and tested without a host. A stage is made here and only
here; roles read it and never rebuild it. Their documentation is in the .yml files of the same names beside this file.
"""

from __future__ import annotations

import copy
import fnmatch
import itertools
import json
import math
import posixpath
import re
import string
import unicodedata
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.specdec.bench.plugins.module_utils._checkpoint import INSTALLED_MANIFEST, select, step_of
from ansible_collections.specdec.bench.plugins.module_utils._common import ID_PATTERN, ID_RE as _ID_RE, temperature_tag
from ansible_collections.specdec.bench.plugins.module_utils._host_probe import format_cpu_list, parse_cpu_list
from ansible_collections.specdec.bench.plugins.module_utils._process import RESTORED_SERVICE
from ansible_collections.specdec.bench.plugins.module_utils._systemd import normalize_unit_name
from ansible_collections.specdec.bench.plugins.plugin_utils import datasets as prompt_sets
from ansible_collections.specdec.bench.plugins.plugin_utils import sglang_build as builds

GIB = 1024 ** 3
DEFAULT_MEM_FRACTION = 0.9
DEFAULT_MIN_KV_HEADROOM_GIB = 4
DEFAULT_BASE_PORT = 31000
HOST = '127.0.0.1'
_ENV_NAME_RE = re.compile(r'[A-Za-z_][A-Za-z0-9_]*\Z')
_FLAG_RE = re.compile(r'--[A-Za-z0-9][A-Za-z0-9_-]*\Z')
CAMPAIGN_MAX_LEN = 64
UNIT_PREFIX = 'specdec-'

SPEC_KEYS = ('campaign', 'description', 'model', 'draft', 'tp', 'methods', 'workload', 'concurrency', 'repeats',
             'mem_fraction', 'min_kv_headroom_gib', 'extra_args', 'env', 'parallel')
MODEL_KEYS = ('path', 'bytes')
# draft as a sweep: a list of these, a glob on this host, or a checkpoint set of a training run on another host
DRAFT_ENTRY_KEYS = ('path', 'bytes', 'step')
DRAFT_GLOB_KEYS = ('glob', 'every', 'last')
DRAFT_SET_KEYS = ('run', 'host', 'every', 'last', 'root')
DRAFT_FORMS = ('a path or {path, bytes} (one draft); a list of paths or {path, bytes, step}, {glob, every, last}, or '
               '{run, host, every, last, root} (a sweep of checkpoints)')
# a checkpoint's step in stage ids and params: tp1-dflash-n16-s400
STEP_PARAM = 'step'
STEP_SHORT = 's'
DEFAULT_CHECKPOINT_DIR = '/var/lib/specdec/checkpoints'
DEFAULT_CHECKPOINT_MIN_FREE_GIB = 1
TP_KEYS = ('size', 'gpus', 'id', 'pool')
# spec.parallel: how many stages may run at once, on disjoint GPUs (1, the default, is one at a time)
PARALLEL_ALLOWED = 'true, false or a number of stages >= 1'
# the stage appended to a parallel campaign, re-running the first stage of its largest wave alone
ALONE_SUFFIX = '-alone'
# the random set's sizes: required unless workload.datasets names no random set (or gives them on its entry)
WORKLOAD_RANDOM = ('input_len', 'output_len', 'num_prompts')
WORKLOAD_OPTIONAL = ('seed', 'request_rate', 'warmup_requests', 'datasets', 'temperature', 'top_p', 'top_k',
                     'stop_at_eos', 'chat_template_kwargs')
DEFAULT_TEMPERATURE = 0.0
DEFAULT_TOP_P = 1.0
DEFAULT_TOP_K = -1
# what the harness passes to the chat template itself (transformers' apply_chat_template): a kwarg cannot set them
TEMPLATE_RESERVED = ('messages', 'tools', 'documents', 'add_generation_prompt')
METHOD_TABLE_KEYS = ('args', 'env', 'params', 'description')
PARAM_KEYS = ('type', 'required', 'default', 'short')
PARAM_TYPES = ('int',)
# What a method's args and env may refer to besides its own params.
STAGE_FIELDS = ('model', 'draft', 'tp', 'port')
COMMON_FLAGS = ('--model-path', '--tp-size', '--host', '--port', '--mem-fraction-static')
POSITIVE_INT = 'a positive integer (1, 2, 3, ...)'
# spec.repeats: measurements of each (dataset, temperature, concurrency) of a stage, after one warm-up (bench_run).
DEFAULT_REPEATS = 1
MAX_REPEATS = 100
ONE_LINE = 'text on one line (no control characters: systemd ends a unit line at CR and NUL too)'
# Where an infinity means something: an unbounded request rate.
INFINITY_ALLOWED = ('workload.request_rate',)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_positive_int(value):
    return _is_int(value) and value > 0


def _powers_of_two(limit):
    sizes, size = [], 1
    while size <= limit:
        sizes.append(size)
        size *= 2
    return sizes


def _gib(value):
    return round(value, 2)


def _fail(field, problem, allowed):
    raise AnsibleFilterError('campaign_plan: %s %s; allowed: %s' % (field, problem, allowed))


def _one_line(text):
    """True when text has no control character or line separator (what a unit file line cannot hold)."""
    return not any(unicodedata.category(char) in ('Cc', 'Zl', 'Zp') for char in text)


def _check_finite(value, field='spec'):
    """One check for the whole spec: no NaN anywhere, no infinity but where it means something."""
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value) or field not in INFINITY_ALLOWED:
            _fail(field, 'is %r' % (value,), 'a finite number')
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _check_finite(item, '%s.%s' % (field, key) if field != 'spec' else str(key))
    elif isinstance(value, (list, tuple)):
        for position, item in enumerate(value):
            _check_finite(item, '%s[%d]' % (field, position))


# --- model_bytes and fit_tp ---------------------------------------------------------------------------------------

def safetensors_total_size(index):
    """metadata.total_size of a safetensors index (model.safetensors.index.json), parsed or as its JSON text."""
    if isinstance(index, (str, bytes)):
        try:
            index = json.loads(index)
        except ValueError as exc:
            raise AnsibleFilterError('model_bytes: the safetensors index is not JSON: %s' % exc)
    total = ((index or {}).get('metadata') or {}).get('total_size') if isinstance(index, Mapping) else None
    if isinstance(total, str) and total.isdigit():
        total = int(total)
    if not _is_positive_int(total):
        raise AnsibleFilterError('model_bytes: metadata.total_size of the safetensors index is %r; allowed: %s'
                                 % (total, POSITIVE_INT))
    return total


def _memory_mib(gpus, caller):
    """memory_total_mib of each GPU, from GPU facts or plain numbers."""
    if not isinstance(gpus, (list, tuple)):
        raise AnsibleFilterError('%s: gpus is %r; allowed: a list of GPU facts or of memory_total_mib numbers' % (caller, gpus))
    memory = []
    for position, gpu in enumerate(gpus):
        mib = gpu.get('memory_total_mib') if isinstance(gpu, Mapping) else gpu
        if not _is_number(mib) or mib <= 0:
            raise AnsibleFilterError('%s: gpus[%d].memory_total_mib is %r; allowed: a positive number of MiB'
                                     % (caller, position, mib))
        memory.append(mib)
    return memory


def _check_capacity_options(weights_bytes, mem_fraction, min_kv_headroom_gib, caller):
    if not _is_number(weights_bytes) or weights_bytes <= 0:
        raise AnsibleFilterError('%s: model bytes are %r; allowed: a positive number of bytes' % (caller, weights_bytes))
    if not _is_number(mem_fraction) or not 0 < mem_fraction <= 1:
        raise AnsibleFilterError('%s: mem_fraction is %r; allowed: a number in (0, 1]' % (caller, mem_fraction))
    if not _is_number(min_kv_headroom_gib) or min_kv_headroom_gib < 0:
        raise AnsibleFilterError('%s: min_kv_headroom_gib is %r; allowed: a number >= 0' % (caller, min_kv_headroom_gib))


def _capacity(weights_bytes, memory_mib, tp, mem_fraction, min_kv_headroom_gib):
    """The headroom rule at one TP size, on the smallest GPU of the group.

    usable = mem_fraction x GPU memory (what SGLang's --mem-fraction-static lets it take), weights shard evenly
    over tp GPUs, and the rest of usable is the KV cache: it fits when that is at least min_kv_headroom_gib.
    """
    gpu_gib = min(memory_mib) / 1024.0
    usable = mem_fraction * gpu_gib
    weights = weights_bytes / float(tp) / GIB
    headroom = usable - weights
    return {
        'tp': tp,
        'gpu_memory_gib': _gib(gpu_gib),
        'usable_per_gpu_gib': _gib(usable),
        'weights_per_gpu_gib': _gib(weights),
        'kv_headroom_per_gpu_gib': _gib(headroom),
        'fits': headroom >= min_kv_headroom_gib,
    }


def _short_of_memory(capacity, mem_fraction, min_kv_headroom_gib):
    return ('at TP%d the weights take %s GiB per GPU, leaving %s GiB for the KV cache of the %s GiB usable '
            '(mem_fraction %s x %s GiB GPU memory), below min_kv_headroom_gib %s' % (
                capacity['tp'], capacity['weights_per_gpu_gib'], capacity['kv_headroom_per_gpu_gib'],
                capacity['usable_per_gpu_gib'], mem_fraction, capacity['gpu_memory_gib'], min_kv_headroom_gib))


def fit_tp(weights_bytes, gpus, mem_fraction=DEFAULT_MEM_FRACTION, min_kv_headroom_gib=DEFAULT_MIN_KV_HEADROOM_GIB):
    """The smallest power-of-two TP size that holds the weights with KV headroom left, and how many such groups fit."""
    memory = _memory_mib(gpus, 'fit_tp')
    _check_capacity_options(weights_bytes, mem_fraction, min_kv_headroom_gib, 'fit_tp')
    candidates = [_capacity(weights_bytes, memory, tp, mem_fraction, min_kv_headroom_gib) for tp in _powers_of_two(len(memory))]
    best = next((c for c in candidates if c['fits']), None)
    result = {
        'fits': best is not None,
        'min_tp': best['tp'] if best else None,
        'dp_replicas': len(memory) // best['tp'] if best else 0,
        'weights_per_gpu_gib': best['weights_per_gpu_gib'] if best else None,
        'kv_headroom_per_gpu_gib': best['kv_headroom_per_gpu_gib'] if best else None,
        'model_gib': _gib(weights_bytes / float(GIB)),
        'gpu_count': len(memory),
        'gpu_memory_gib': _gib(min(memory) / 1024.0) if memory else None,
        'usable_per_gpu_gib': _gib(mem_fraction * min(memory) / 1024.0) if memory else None,
        'candidates': candidates,
        'reason': None,
    }
    if not memory:
        result['reason'] = 'no GPUs'
    elif best is None:
        result['reason'] = '%s GiB of weights do not fit on %d GPU(s): %s' % (
            result['model_gib'], len(memory), _short_of_memory(candidates[-1], mem_fraction, min_kv_headroom_gib))
    return result


# --- campaign spec validation -------------------------------------------------------------------------------------

def _check_keys(value, field, allowed):
    if not isinstance(value, Mapping):
        _fail(field, 'is %r, not a mapping' % (value,), 'a mapping with keys %s' % ', '.join(allowed))
    unknown = sorted(str(key) for key in value if key not in allowed)
    if unknown:
        _fail(field, 'has unknown key(s) %s' % ', '.join(unknown), ', '.join(allowed))


def _check_id(value, field):
    if not isinstance(value, str) or not _ID_RE.match(value):
        _fail(field, 'is %r' % (value,), 'an id matching %s (lower-case letters, digits, ".", "_", "-"; '
                                         'no "/", spaces or shell characters)' % ID_PATTERN)


def _check_path(value, field):
    if not isinstance(value, str) or not value.startswith('/') or not _one_line(value):
        _fail(field, 'is %r' % (value,), 'an absolute path on the host, ' + ONE_LINE)


def _int_values(value, field):
    """A parameter's values: one positive integer or a non-empty list of distinct ones."""
    values = value if isinstance(value, (list, tuple)) else [value]
    if not values:
        _fail(field, 'is an empty list', 'a positive integer or a non-empty list of them')
    for position, item in enumerate(values):
        item_field = '%s[%d]' % (field, position) if isinstance(value, (list, tuple)) else field
        if not _is_positive_int(item):
            _fail(item_field, 'is %r' % (item,), POSITIVE_INT)
        if item in values[:position]:
            _fail(item_field, 'repeats %r (a duplicate stage)' % (item,), 'distinct values')
    return list(values)


def _arg_items(args, field):
    """A list of '--flag' strings and [flag, value] pairs, as lists of strings."""
    if not isinstance(args, (list, tuple)):
        _fail(field, 'is %r' % (args,), "a list of '--flag' strings and [flag, value] pairs")
    items = []
    for position, item in enumerate(args):
        item_field = '%s[%d]' % (field, position)
        pair = isinstance(item, (list, tuple))
        flag = item[0] if pair and item else item
        if (pair and len(item) != 2) or not isinstance(flag, str) or not _FLAG_RE.match(flag):
            _fail(item_field, 'is %r' % (item,), "'--flag' or [--flag, value], the flag matching %s" % _FLAG_RE.pattern[:-2])
        if pair:
            value = item[1]
            if isinstance(value, bool) or not isinstance(value, (str, int, float)) or not _one_line(str(value)):
                _fail(item_field + '[1]', 'is %r' % (value,), 'a string or number, ' + ONE_LINE)
            items.append([flag, str(value)])
        else:
            items.append(flag)
    return items


def _env_items(env, field):
    if env is None:
        return {}
    if not isinstance(env, Mapping):
        _fail(field, 'is %r' % (env,), 'a mapping of environment variable names to values')
    items = {}
    for name, value in env.items():
        if not isinstance(name, str) or not _ENV_NAME_RE.match(name):
            _fail('%s key %r' % (field, name), 'is not an environment variable name', _ENV_NAME_RE.pattern[:-2])
        if isinstance(value, bool) or not isinstance(value, (str, int, float)) or not _one_line(str(value)):
            _fail('%s.%s' % (field, name), 'is %r' % (value,), 'a string or number, ' + ONE_LINE)
        items[name] = str(value)
    return items


def _template_fields(text, field, known):
    """The {names} a str.format template uses; all must be known."""
    try:
        names = [field[1] for field in string.Formatter().parse(text) if field[1] is not None]
    except ValueError as exc:
        raise AnsibleFilterError('campaign_plan: method table %s is %r: %s; allowed: str.format templates with '
                                 '{name} fields (double a literal brace)' % (field, text, exc))
    for name in names:
        if name not in known:
            raise AnsibleFilterError('campaign_plan: method table %s uses {%s}; allowed fields: %s'
                                     % (field, name, ', '.join('{%s}' % k for k in known)))
    return names


def _method_table(methods):
    """Validated per-method table (a build profile's methods, or plan_methods): name -> {args, env, params}, and the fields each uses."""
    if not isinstance(methods, Mapping) or not methods:
        raise AnsibleFilterError('campaign_plan: methods (the per-method table: plan_methods or a build profile\'s) is %r; allowed: '
                                 'a mapping of method name to {args, env, params}' % (methods,))
    table = {}
    for name, entry in methods.items():
        where = 'method table %s' % name
        if not isinstance(name, str) or not _ID_RE.match(name):
            raise AnsibleFilterError('campaign_plan: method table key %r; allowed: a name matching %s' % (name, ID_PATTERN))
        entry = entry or {}
        if not isinstance(entry, Mapping) or any(key not in METHOD_TABLE_KEYS for key in entry):
            raise AnsibleFilterError('campaign_plan: %s is %r; allowed keys: %s' % (where, entry, ', '.join(METHOD_TABLE_KEYS)))
        params = {}
        for param, rule in (entry.get('params') or {}).items():
            rule = rule or {}
            if (not isinstance(param, str) or not _ENV_NAME_RE.match(param) or param in STAGE_FIELDS
                    or not isinstance(rule, Mapping) or any(key not in PARAM_KEYS for key in rule)):
                raise AnsibleFilterError('campaign_plan: %s.params.%s is %r; allowed: a name other than %s with keys %s'
                                         % (where, param, rule, ', '.join(STAGE_FIELDS), ', '.join(PARAM_KEYS)))
            if rule.get('type', 'int') not in PARAM_TYPES:
                raise AnsibleFilterError('campaign_plan: %s.params.%s.type is %r; allowed: %s'
                                         % (where, param, rule.get('type'), ', '.join(PARAM_TYPES)))
            short = rule.get('short', param)
            if not isinstance(short, str) or not re.match(r'[a-z0-9_]+\Z', short):
                raise AnsibleFilterError('campaign_plan: %s.params.%s.short is %r; allowed: [a-z0-9_]+' % (where, param, short))
            default = rule.get('default')
            if default is not None and not _is_positive_int(default):
                raise AnsibleFilterError('campaign_plan: %s.params.%s.default is %r; allowed: %s' % (where, param, default, POSITIVE_INT))
            # a parameter without a default must be given, whatever `required` says: its templates need a value
            params[param] = {'required': bool(rule.get('required')) or default is None, 'default': default, 'short': short}
        known = STAGE_FIELDS + tuple(params)
        args = _arg_items(entry.get('args') or [], where + '.args')
        env = _env_items(entry.get('env'), where + '.env')
        uses = set()
        for position, item in enumerate(args):
            if isinstance(item, list):
                uses.update(_template_fields(item[1], '%s.args[%d]' % (name, position), known))
        for var, value in env.items():
            uses.update(_template_fields(value, '%s.env.%s' % (name, var), known))
        table[name] = {'args': args, 'env': env, 'params': params, 'uses': uses}
    return table


def _spec_methods(spec_methods, table):
    """[(method, [params dict, ...])] in spec order, each method's parameter matrix in table order."""
    allowed = ', '.join(sorted(table))
    if not isinstance(spec_methods, Mapping) or not spec_methods:
        _fail('methods', 'is %r' % (spec_methods,), 'a mapping of method name to parameters, methods: %s' % allowed)
    plans = []
    for method, given in spec_methods.items():
        if method not in table:
            _fail('methods.%s' % method, 'is not a known method', allowed)
        rules = table[method]['params']
        given = given or {}
        if not isinstance(given, Mapping):
            _fail('methods.%s' % method, 'is %r' % (given,), 'a mapping of parameters: %s' % (', '.join(rules) or 'none ({})'))
        for param in given:
            if param not in rules:
                _fail('methods.%s.%s' % (method, param), 'is not a parameter of %s' % method, ', '.join(rules) or 'none ({})')
        axes = []
        for param, rule in rules.items():
            field = 'methods.%s.%s' % (method, param)
            if param in given:
                axes.append(_int_values(given[param], field))
            elif rule['required']:
                _fail(field, 'is required', 'a positive integer or a list of them')
            else:
                axes.append([rule['default']])
        plans.append((method, [dict(zip(rules, combo)) for combo in itertools.product(*axes)]))
    return plans


def _spec_tp(entries):
    """[{size, pins (list or None), prefix, field}] after the host-independent checks."""
    if not isinstance(entries, (list, tuple)) or not entries:
        _fail('tp', 'is %r' % (entries,), 'a non-empty list of {size, gpus (optional), id (optional)}')
    tps = []
    for position, entry in enumerate(entries):
        field = 'tp[%d]' % position
        if _is_int(entry):
            entry = {'size': entry}
        _check_keys(entry, field, TP_KEYS)
        size = entry.get('size')
        if not _is_positive_int(size) or size & (size - 1):
            _fail(field + '.size', 'is %r' % (size,), 'a power of two (1, 2, 4, 8, ...) no larger than the host\'s GPU count')
        pins = entry.get('gpus')
        if pins is not None:
            if not isinstance(pins, (list, tuple)):
                _fail(field + '.gpus', 'is %r' % (pins,), 'a list of %d GPU indices' % size)
            for pin_position, pin in enumerate(pins):
                if not _is_int(pin) or pin < 0:
                    _fail('%s.gpus[%d]' % (field, pin_position), 'is %r' % (pin,), 'a GPU index (0, 1, 2, ...)')
                if pin in pins[:pin_position]:
                    _fail('%s.gpus[%d]' % (field, pin_position), 'pins GPU %d twice' % pin, 'distinct GPU indices')
            if len(pins) != size:
                _fail(field + '.gpus', 'lists %d GPU(s) for size %d' % (len(pins), size), 'exactly %d GPU indices (tp size)' % size)
            pins = list(pins)
        pool = _spec_pool(entry, field, size)
        prefix = entry.get('id', 'tp%d' % size)
        _check_id(prefix, field + '.id')
        for other in tps:
            if other['size'] == size and other['pins'] == pins and other['pool'] == pool:
                _fail(field, 'repeats %s (size %d, %s: duplicate stages)' % (
                    other['field'], size, 'pool %s' % pool if pool is not None else 'gpus %s' % pins), 'distinct TP entries')
            if other['prefix'] == prefix:
                _fail(field, 'has the id %r of %s (duplicate stages)' % (prefix, other['field']),
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
        _fail(field + '.pool', 'is given together with %s.gpus' % field,
              'either gpus (one slot, every stage on it) or pool (%s), not both' % allowed)
    if not isinstance(pool, (list, tuple)):
        _fail(field + '.pool', 'is %r' % (pool,), allowed)
    for position, index in enumerate(pool):
        if not _is_int(index) or index < 0:
            _fail('%s.pool[%d]' % (field, position), 'is %r' % (index,), 'a GPU index (0, 1, 2, ...)')
        if index in pool[:position]:
            _fail('%s.pool[%d]' % (field, position), 'lists GPU %d twice' % index, 'distinct GPU indices')
    if len(pool) < size:
        _fail(field + '.pool', 'lists %d GPU(s) for size %d' % (len(pool), size), allowed)
    return list(pool)


def _spec_parallel(parallel):
    """spec.parallel as the most stages in flight at once: 1 (false, the default: one at a time), a number, or None
    (true: as many as disjoint GPUs allow)."""
    if parallel is None or parallel is False:
        return 1
    if parallel is True:
        return None
    if not _is_int(parallel) or parallel < 1:
        _fail('parallel', 'is %r' % (parallel,), PARALLEL_ALLOWED)
    return parallel


def _temperatures(value):
    """workload.temperature: one number >= 0 or a non-empty list of them, as floats; distinct as results name them."""
    field = 'workload.temperature'
    values = value if isinstance(value, (list, tuple)) else [value]
    if not values:
        _fail(field, 'is an empty list', 'a number >= 0 or a non-empty list of them (a sweep; default [0])')
    temperatures, tags = [], {}
    for position, item in enumerate(values):
        item_field = '%s[%d]' % (field, position) if isinstance(value, (list, tuple)) else field
        if not _is_number(item) or item < 0:
            _fail(item_field, 'is %r' % (item,), 'a number >= 0 (0 is greedy)')
        tag = temperature_tag(item)  # results are named by it (result-<dataset>-t<tag>-c<n>.json): it must be unique
        if tag in tags:
            _fail(item_field, 'repeats %r as t%s, as %s[%d] (a duplicate run)' % (item, tag, field, tags[tag]),
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
        _fail(field, 'is %r' % (kwargs,), 'a mapping of template variable names to values, such as {enable_thinking: false}')
    for name, value in kwargs.items():
        if not isinstance(name, str) or not _ENV_NAME_RE.match(name) or name in TEMPLATE_RESERVED:
            _fail('%s key %r' % (field, name), 'is not a template variable the spec may set',
                  'names matching %s other than %s (the harness sets those)' % (_ENV_NAME_RE.pattern[:-2], ', '.join(TEMPLATE_RESERVED)))
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            _fail('%s.%s' % (field, name), 'is %r' % (value,), 'a JSON value (string, number, boolean, null, list, mapping)')
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
            if not _is_positive_int(workload.get(key)):
                if 'datasets' not in workload:  # today's spec, today's message
                    _fail('workload.%s' % key, 'is %r' % (workload.get(key),), POSITIVE_INT)
                _fail('workload.datasets[%d].%s' % (position, key), 'is missing and workload.%s is %r' % (key, workload.get(key)),
                      '%s, on the random entry or in workload.%s' % (POSITIVE_INT, key))
            entry[key] = workload[key]
    return checked


def _spec_workload(workload):
    """The workload every stage runs: today's random-set keys as given, and the datasets and sampling, defaults filled."""
    _check_keys(workload, 'workload', WORKLOAD_RANDOM + WORKLOAD_OPTIONAL)
    for key in WORKLOAD_RANDOM:
        if key in workload and not _is_positive_int(workload[key]):
            _fail('workload.%s' % key, 'is %r' % (workload[key],), POSITIVE_INT)
    for key in ('seed', 'warmup_requests'):
        if key in workload and (not _is_int(workload[key]) or workload[key] < 0):
            _fail('workload.%s' % key, 'is %r' % (workload[key],), 'an integer >= 0')
    rate = workload.get('request_rate', 'inf')
    if rate != 'inf' and (not _is_number(rate) or rate <= 0):
        _fail('workload.request_rate', 'is %r' % (rate,), 'a positive number of requests per second, or "inf"')
    top_p = workload.get('top_p', DEFAULT_TOP_P)
    if not _is_number(top_p) or not 0 < top_p <= 1:
        _fail('workload.top_p', 'is %r' % (top_p,), 'a number in (0, 1] (1: no nucleus cut, the default)')
    top_k = workload.get('top_k', DEFAULT_TOP_K)
    if not _is_int(top_k) or not (top_k == -1 or top_k >= 1):
        _fail('workload.top_k', 'is %r' % (top_k,), 'an integer >= 1, or -1 (no top-k cut, the default)')
    stop_at_eos = workload.get('stop_at_eos', True)
    if not isinstance(stop_at_eos, bool):
        _fail('workload.stop_at_eos', 'is %r' % (stop_at_eos,), 'true (the default: generation ends at EOS) or false')
    result = dict((key, workload[key]) for key in WORKLOAD_RANDOM + ('seed', 'request_rate', 'warmup_requests')
                  if key in workload)
    if 'request_rate' in result and rate != 'inf' and math.isinf(rate):
        result['request_rate'] = 'inf'  # YAML's .inf: one spelling in the stages and the results
    result.update(
        datasets=_datasets(workload),
        temperature=_temperatures(workload.get('temperature', [DEFAULT_TEMPERATURE])),
        top_p=float(top_p), top_k=top_k, stop_at_eos=stop_at_eos,
        chat_template_kwargs=_template_kwargs(workload.get('chat_template_kwargs')))
    return result


def _spec_concurrency(concurrency):
    values = concurrency if isinstance(concurrency, (list, tuple)) else None
    if not values:
        _fail('concurrency', 'is %r' % (concurrency,), 'a non-empty list of positive integers')
    for position, value in enumerate(values):
        if not _is_positive_int(value):
            _fail('concurrency[%d]' % position, 'is %r' % (value,), POSITIVE_INT)
        if value in values[:position]:
            _fail('concurrency[%d]' % position, 'repeats %r' % (value,), 'distinct positive integers')
    return list(values)


def _spec_repeats(repeats):
    """How many times each dataset, temperature and concurrency of a stage is measured: 1 unless given."""
    if repeats is None:
        return DEFAULT_REPEATS
    if not _is_int(repeats) or not 1 <= repeats <= MAX_REPEATS:
        _fail('spec.repeats', 'is %r' % (repeats,), 'an integer from 1 to %d (default %d)' % (MAX_REPEATS, DEFAULT_REPEATS))
    return repeats


def _spec_stoppable(stoppable):
    if stoppable is None:
        return []
    if not isinstance(stoppable, (list, tuple)):
        _fail('stoppable', 'is %r' % (stoppable,), 'a list of unit names or glob patterns')
    try:
        return [normalize_unit_name(name) for name in stoppable]
    except (AttributeError, ValueError) as exc:
        raise AnsibleFilterError('campaign_plan: stoppable %s; allowed: unit names or glob patterns ([A-Za-z0-9:_.@-] and *?[])' % exc)


def _spec_stoppable_processes(processes):
    """specdec_stoppable_processes as [(name, compiled regex)], in order: the first entry that matches names a holder."""
    if processes is None:
        return []
    allowed = 'a list of {name: <id, %s>, match: <Python regex searched in the command line>}' % ID_PATTERN
    if not isinstance(processes, (list, tuple)):
        _fail('stoppable_processes', 'is %r' % (processes,), allowed)
    rules, names = [], set()
    for position, entry in enumerate(processes):
        field = 'stoppable_processes[%d]' % position
        if not isinstance(entry, Mapping) or set(entry) != {'name', 'match'}:
            _fail(field, 'is %r' % (entry,), 'a mapping with exactly the keys name, match')
        name, match = entry['name'], entry['match']
        if not isinstance(name, str) or not _ID_RE.match(name):
            _fail(field + '.name', 'is %r' % (name,), 'an id matching %s' % ID_PATTERN)
        if name in names:
            _fail(field + '.name', 'repeats %r' % name, 'distinct names')
        names.add(name)
        if not isinstance(match, str) or not match:
            _fail(field + '.match', 'is %r' % (match,), 'a non-empty Python regular expression')
        try:
            rules.append((name, re.compile(match)))
        except re.error as exc:
            _fail(field + '.match', 'is %r, not a regular expression (%s)' % (match, exc), 'a Python regular expression')
    return rules


def _flag_name(item):
    return item[0] if isinstance(item, list) else item


def _check_table_flags(table, build):
    """Every flag of the method table is one the build's SGLang parser knows by that exact name."""
    for method, entry in table.items():
        for position, item in enumerate(entry['args']):
            flag = _flag_name(item)
            how, option = builds.resolve_flag(build['options'], flag)
            if how != 'exact':
                raise AnsibleFilterError(
                    'campaign_plan: method table %s.args[%d] is %s, which SGLang %s (build %s) does not know%s; allowed: '
                    'the options of that build (plugins/plugin_utils/sglang_builds/%s%s)' % (
                        method, position, flag, build['sglang_version'], build['name'],
                        ' by that name (it would be read as %s)' % option['flags'][0] if option else '',
                        build['options_file'], ' and ' + ', '.join(build['extra_flags']) if build['extra_flags'] else ''))


def _check_extra_args(extra_args, planned, build):
    """No extra flag may set what the plan sets: not by its name, an alias or an abbreviation SGLang accepts."""
    planned_list = ', '.join(sorted(planned))
    for position, item in enumerate(extra_args):
        flag, field = _flag_name(item), 'extra_args[%d]' % position
        if flag in planned:
            _fail(field, 'repeats %s, which the plan sets' % flag, 'flags other than %s' % planned_list)
        if build is None:  # a method table of the user's own with no build: abbreviations of planned flags only
            prefixed = sorted(other for other in planned if other.startswith(flag))
            if prefixed:
                _fail(field, 'is %s, an abbreviation of %s, which the plan sets (SGLang accepts abbreviations)'
                      % (flag, ', '.join(prefixed)), 'flags other than %s' % planned_list)
            continue
        how, option = builds.resolve_flag(build['options'], flag)
        where = 'SGLang %s (build %s)' % (build['sglang_version'], build['name'])
        if how == 'unknown':
            _fail(field, 'is %s, which %s does not know (it would exit with "unrecognized arguments")' % (flag, where),
                  'an option of that build')
        if how == 'ambiguous':
            _fail(field, 'is %s, which %s finds ambiguous (it could match %s)' % (flag, where, ', '.join(option)),
                  'an option of that build, spelled out')
        sets = [other for other in planned if (builds.resolve_flag(build['options'], other)[1] or {}).get('dest') == option['dest']]
        if sets:
            _fail(field, 'is %s, which %s reads as %s (%s of it), which the plan sets' % (
                flag, where, option['flags'][0], 'an alias' if how == 'exact' else 'an abbreviation'),
                'flags other than %s and their aliases and abbreviations' % planned_list)


def size_text(value):
    """Bytes for people: '256.0 KiB', '1.5 GiB'."""
    value = float(value or 0)
    for unit in ('B', 'KiB', 'MiB', 'GiB'):
        if value < 1024 or unit == 'GiB':
            return '%d B' % value if unit == 'B' else '%.1f %s' % (value, unit)
        value /= 1024.0
    return None  # not reached


def _optional_positive(draft, key):
    value = draft.get(key)
    if value is not None and not _is_positive_int(value):
        _fail('draft.%s' % key, 'is %r' % (value,), POSITIVE_INT + ', or left out (all)')
    return value


def _draft_list(entries):
    """draft as a list: each a path or {path, bytes, step}; the step from the entry or the folder's name."""
    if not entries:
        _fail('draft', 'is an empty list', 'a non-empty list of paths or {%s}' % ', '.join(DRAFT_ENTRY_KEYS))
    checked, steps, paths = [], {}, {}
    for position, entry in enumerate(entries):
        field = 'draft[%d]' % position
        if isinstance(entry, str):
            entry = {'path': entry}
        _check_keys(entry, field, DRAFT_ENTRY_KEYS)
        _check_path(entry.get('path'), field + '.path')
        path = posixpath.normpath(entry['path'])
        if entry.get('bytes') is not None and not _is_positive_int(entry['bytes']):
            _fail(field + '.bytes', 'is %r' % (entry['bytes'],), 'a positive integer number of bytes')
        name = posixpath.basename(path)
        step = entry.get('step')
        if step is None:
            step = step_of(name)
            if step is None or step < 1:
                _fail(field + '.step', 'is missing and %s has no step in its name' % entry['path'],
                      'a positive integer step, or a folder named by its step (checkpoint-4000)')
        elif not _is_positive_int(step):
            _fail(field + '.step', 'is %r' % (step,), 'a positive integer step')
        if step in steps:
            _fail(field + '.step', 'repeats step %d of draft[%d] (a duplicate stage)' % (step, steps[step]), 'distinct steps')
        if path in paths:
            _fail(field + '.path', 'repeats %s of draft[%d] (a duplicate stage)' % (path, paths[path]), 'distinct paths')
        steps[step], paths[path] = position, position
        checked.append({'name': name, 'step': step, 'path': path, 'bytes': entry.get('bytes')})
    return {'kind': 'list', 'entries': checked}


def _spec_draft(draft):
    """(the one draft {path, bytes} or {}, the sweep or None) after the checks that need no host."""
    if draft is None:
        return {}, None
    if isinstance(draft, str):
        draft = {'path': draft}
    if isinstance(draft, (list, tuple)):
        return {}, _draft_list(draft)
    if isinstance(draft, Mapping) and 'run' in draft:
        _check_keys(draft, 'draft', DRAFT_SET_KEYS)
        _check_id(draft['run'], 'draft.run')
        host = draft.get('host')
        if not isinstance(host, str) or not host or not _one_line(host) or host != host.strip():
            _fail('draft.host', 'is %r' % (host,), 'the inventory name of the training host')
        if draft.get('root') is not None:
            _check_path(draft['root'], 'draft.root')
        return {}, {'kind': 'set', 'run': draft['run'], 'host': host, 'root': draft.get('root'),
                    'every': _optional_positive(draft, 'every'), 'last': _optional_positive(draft, 'last')}
    if isinstance(draft, Mapping) and 'glob' in draft:
        _check_keys(draft, 'draft', DRAFT_GLOB_KEYS)
        _check_path(draft['glob'], 'draft.glob')
        return {}, {'kind': 'glob', 'glob': draft['glob'],
                    'every': _optional_positive(draft, 'every'), 'last': _optional_positive(draft, 'last')}
    if isinstance(draft, Mapping) and any(key not in MODEL_KEYS for key in draft):
        _fail('draft', 'has unknown key(s) %s' % ', '.join(sorted(str(key) for key in draft if key not in MODEL_KEYS)), DRAFT_FORMS)
    _check_keys(draft, 'draft', MODEL_KEYS)
    _check_path(draft.get('path'), 'draft.path')
    if draft.get('bytes') is not None and not _is_positive_int(draft['bytes']):
        _fail('draft.bytes', 'is %r' % (draft['bytes'],), 'a positive integer number of bytes')
    return dict(draft), None


def _records(records, field):
    """Checkpoint records as specdec.bench.checkpoint_facts returns them, checked: name, step, path, bytes."""
    allowed = 'checkpoint records as specdec.bench.checkpoint_facts returns them ({name, step, path, bytes, ...})'
    if not isinstance(records, (list, tuple)):
        _fail(field, 'is %r' % (records,), 'a list of ' + allowed)
    checked = []
    for position, record in enumerate(records):
        where = '%s[%d]' % (field, position)
        if not isinstance(record, Mapping):
            _fail(where, 'is %r' % (record,), allowed)
        name, path, size = record.get('name'), record.get('path'), record.get('bytes')
        if not isinstance(name, str) or not _ID_RE.match(name):
            _fail(where + '.name', 'is %r' % (name,), 'a checkpoint folder name matching %s (checkpoint-4000)' % ID_PATTERN)
        step = record.get('step') if record.get('step') is not None else step_of(name)
        if not _is_int(step) or step < 0:
            _fail(where + '.step', 'is %r' % (step,), 'the training step, an integer >= 0')
        _check_path(path, where + '.path')
        if not _is_int(size) or size < 0:
            _fail(where + '.bytes', 'is %r' % (size,), 'the checkpoint\'s size, an integer number of bytes >= 0')
        installed = record.get('installed')
        if installed is not None and not isinstance(installed, Mapping):
            _fail(where + '.installed', 'is %r' % (installed,), 'null or the checkpoint\'s .specdec-checkpoint.json')
        checked.append({'name': name, 'step': step, 'path': posixpath.normpath(path), 'bytes': size,
                        'installed': dict(installed) if installed else None})
    return checked


def _picked_none(sweep, listed, where):
    raise AnsibleFilterError(
        'campaign_plan: draft: %s picked no checkpoint (%d listed %s, every %s, last %s); allowed: a set that picks at least one '
        'checkpoint: another every or last, or a run that has written checkpoints (step 0 is not measured)' % (
            'checkpoint set of run %s on %s' % (sweep['run'], sweep['host']) if sweep['kind'] == 'set' else 'glob %s' % sweep['glob'],
            listed, where, sweep['every'] or 'not set', sweep['last'] or 'not set'))


def _installed_here(record, dest, host, installed):
    """(present, why not) for a checkpoint of a set at dest on this host: installed from that very source, or not there."""
    found = next((item for item in installed if item['path'] == dest), None)
    if found is None:
        return False, None
    manifest = found['installed'] or {}
    if (manifest.get('source_host'), manifest.get('source_path'), manifest.get('bytes')) == (host, record['path'], record['bytes']):
        return True, None
    if not manifest:
        what = 'a checkpoint folder no copy of specdec installed (no %s)' % INSTALLED_MANIFEST
    else:
        what = 'installed from %s:%s, %s bytes' % (manifest.get('source_host'), manifest.get('source_path'), manifest.get('bytes'))
    return False, 'a different checkpoint is already at %s (%s; this one is %s:%s, %d bytes); it is never overwritten' % (
        dest, what, host, record['path'], record['bytes'])


def _sweep_checkpoints(sweep, records, installed, checkpoint_dir):
    """[(draft_checkpoint, why the stage cannot run or None)] of a sweep, in step order."""
    if sweep['kind'] == 'list':
        return [(dict(entry, run=None, source_host=None, source_path=entry['path'], present=True), None)
                for entry in sorted(sweep['entries'], key=lambda item: item['step'])]
    what = ('checkpoint set of run %s on %s' % (sweep['run'], sweep['host']) if sweep['kind'] == 'set'
            else 'glob %s' % sweep['glob'])
    if records is None:
        _fail('draft', 'is a %s, and draft_checkpoints (the checkpoints it picks from) is not given' % what,
              'draft_checkpoints as the campaign role lists them (specdec.bench.checkpoint_facts on the %s)' % (
                  'training host' if sweep['kind'] == 'set' else 'benchmark host'))
    records = [record for record in _records(records, 'draft_checkpoints') if record['step'] >= 1]
    if sweep['kind'] == 'glob':
        matching = [record for record in records if fnmatch.fnmatchcase(record['path'], posixpath.normpath(sweep['glob']))]
        picked = select(matching, sweep['every'], sweep['last'])
        if not picked:
            _picked_none(sweep, len(records), '(%d matching)' % len(matching))
        return [({'name': record['name'], 'step': record['step'], 'run': None, 'source_host': None, 'source_path': record['path'],
                  'path': record['path'], 'bytes': record['bytes'], 'present': True}, None) for record in picked]
    picked = select(records, sweep['every'], sweep['last'])
    if not picked:
        root = sweep['root'] or (posixpath.dirname(records[0]['path']) if records else '<train_run_root>/%s/checkpoints' % sweep['run'])
        _picked_none(sweep, len(records), 'at %s' % root)
    here = _records(installed or [], 'installed_checkpoints')
    result = []
    for record in picked:
        dest = posixpath.join(checkpoint_dir, sweep['run'], record['name'])
        present, reason = _installed_here(record, dest, sweep['host'], here)
        result.append(({'name': record['name'], 'step': record['step'], 'run': sweep['run'], 'source_host': sweep['host'],
                        'source_path': record['path'], 'path': dest, 'bytes': record['bytes'], 'present': present}, reason))
    return result


def _check_disk(stages, checkpoint_dir, free_bytes, min_free_gib):
    """The checkpoints the feasible stages still need copied fit at checkpoint_dir, keeping min_free_gib free."""
    if free_bytes is None:
        return
    needed = {}
    for stage in stages:
        checkpoint = stage.get('draft_checkpoint')
        if stage['feasible'] and checkpoint and not checkpoint['present']:
            needed.setdefault(checkpoint['path'], checkpoint)
    total = sum(checkpoint['bytes'] for checkpoint in needed.values())
    if needed and total > free_bytes - min_free_gib * GIB:
        names = [checkpoint['name'] for checkpoint in sorted(needed.values(), key=lambda item: item['step'])]
        raise AnsibleFilterError(
            'campaign_plan: draft: the %d %s to copy (%s) %s %s and %s has %s free, keeping checkpoint_min_free_gib %s; '
            'allowed: more free space, or fewer checkpoints (draft.every, draft.last)' % (
                len(names), 'checkpoint' if len(names) == 1 else 'checkpoints', ', '.join(names[:5]) + (', ...' if len(names) > 5 else ''),
                'takes' if len(names) == 1 else 'take', size_text(total), checkpoint_dir,
                size_text(max(free_bytes, 0)), min_free_gib))


def _check_checkpoint_options(checkpoint_dir, free_bytes, min_free_gib):
    _check_path(checkpoint_dir, 'checkpoint_dir')
    if free_bytes is not None and (not _is_int(free_bytes) or free_bytes < 0):
        _fail('checkpoint_free_bytes', 'is %r' % (free_bytes,), 'the free bytes at checkpoint_dir, an integer >= 0, or null (not checked)')
    if not _is_number(min_free_gib) or min_free_gib < 0:
        _fail('checkpoint_min_free_gib', 'is %r' % (min_free_gib,), 'a number of GiB >= 0')
    return posixpath.normpath(checkpoint_dir)


def _validate(spec, table, build=None):
    """Everything about the spec that does not depend on the host, checked before any stage is built."""
    _check_keys(spec, 'spec', SPEC_KEYS)
    _check_finite(spec)
    description = spec.get('description')
    if description is not None and (not isinstance(description, str) or not _one_line(description)):
        _fail('description', 'is %r' % (description,), ONE_LINE)
    _check_id(spec.get('campaign'), 'campaign')
    if len(spec['campaign']) > CAMPAIGN_MAX_LEN:
        _fail('campaign', 'is %d characters long' % len(spec['campaign']), 'at most %d characters' % CAMPAIGN_MAX_LEN)
    model = spec.get('model')
    if isinstance(model, str):
        model = {'path': model}
    _check_keys(model, 'model', MODEL_KEYS)
    _check_path(model.get('path'), 'model.path')
    if model.get('bytes') is not None and not _is_positive_int(model['bytes']):
        _fail('model.bytes', 'is %r' % (model['bytes'],), 'a positive integer number of bytes (metadata.total_size)')
    draft, sweep = _spec_draft(spec.get('draft'))
    mem_fraction = spec.get('mem_fraction', DEFAULT_MEM_FRACTION)
    if not _is_number(mem_fraction) or not 0 < mem_fraction <= 1:
        _fail('mem_fraction', 'is %r' % (mem_fraction,), 'a number in (0, 1], SGLang\'s --mem-fraction-static')
    headroom = spec.get('min_kv_headroom_gib', DEFAULT_MIN_KV_HEADROOM_GIB)
    if not _is_number(headroom) or headroom < 0:
        _fail('min_kv_headroom_gib', 'is %r' % (headroom,), 'a number of GiB >= 0')
    methods = _spec_methods(spec.get('methods'), table)
    for method, _matrix in methods:
        if 'draft' in table[method]['uses'] and not draft and sweep is None:
            _fail('draft.path', 'is missing; method %s needs a draft model' % method, 'an absolute path on the host')
        if 'draft' in table[method]['uses'] and sweep is not None and STEP_PARAM in table[method]['params']:
            _fail('draft', 'is a sweep of checkpoints, whose step names the stages, and method %s has a parameter %s of its own'
                  % (method, STEP_PARAM), 'one draft (a path), or a method table without a parameter named %s' % STEP_PARAM)
    extra_args = _arg_items(spec.get('extra_args') or [], 'extra_args')
    planned = set(COMMON_FLAGS)
    for method, _matrix in methods:
        planned.update(_flag_name(arg) for arg in table[method]['args'])
    _check_extra_args(extra_args, planned, build)
    env = _env_items(spec.get('env'), 'env')
    if 'CUDA_VISIBLE_DEVICES' in env:
        _fail('env.CUDA_VISIBLE_DEVICES', 'is set by the plan (GPUs by UUID)', 'any other variable')
    return {
        'campaign': spec['campaign'],
        'model': model, 'draft': draft, 'draft_sweep': sweep,
        'mem_fraction': mem_fraction, 'min_kv_headroom_gib': headroom,
        'methods': methods,
        'tp': _spec_tp(spec.get('tp')),
        'workload': _spec_workload(spec.get('workload')),
        'concurrency': _spec_concurrency(spec.get('concurrency')),
        'repeats': _spec_repeats(spec.get('repeats')),
        'extra_args': extra_args,
        'env': env,
        'parallel': _spec_parallel(spec.get('parallel', False)),
    }


# --- the stages -----------------------------------------------------------------------------------------------------

def _host_gpus(facts):
    gpus = (facts or {}).get('nvidia_gpus') or []
    return dict((gpu.get('index'), gpu) for gpu in gpus if _is_int(gpu.get('index')))


def _place(tp, host, strict):
    """(slots, why not) for one TP entry on this host; host problems raise when strict.

    A slot is the GPU indices of one stage: the pins, or the first size GPUs of the host (one slot), or each consecutive
    group of size GPUs of the pool (a leftover shorter than size is no slot). [[]] and why not when the GPUs are missing.
    """
    indices = sorted(host)
    if tp['size'] > len(indices):
        if strict:
            _fail(tp['field'] + '.size', 'is %d, larger than the host\'s %d GPU(s)' % (tp['size'], len(indices)),
                  ', '.join(str(size) for size in _powers_of_two(len(indices))) or 'none (the host has no GPU)')
        return [[]], 'too few GPUs: TP%d needs %d, the host has %d' % (tp['size'], tp['size'], len(indices))
    given, key, what = (tp['pins'], 'gpus', 'pinned') if tp['pool'] is None else (tp['pool'], 'pool', 'pool')
    if given is None:
        return [indices[:tp['size']]], None
    missing = [pin for pin in given if pin not in host]
    if missing:
        if strict:
            _fail('%s.%s[%d]' % (tp['field'], key, given.index(missing[0])),
                  '%s GPU %d, which the host does not have' % ('pins' if key == 'gpus' else 'lists', missing[0]),
                  'the host\'s GPU indices %s' % ', '.join(str(i) for i in indices))
        return [[]], '%s GPU(s) %s do not exist on the host (indices %s)' % (
            what, ', '.join(str(i) for i in missing), ', '.join(str(i) for i in indices))
    return _pool_slots(given, tp['size'])[0], None


def _pool_slots(pool, size):
    """(slots, leftover): the consecutive groups of size GPUs of a pool, and the GPUs after the last whole group."""
    whole = len(pool) - len(pool) % size
    return [list(pool[start:start + size]) for start in range(0, whole, size)], list(pool[whole:])


def _cpu_set(text):
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
    sets = [_cpu_set(_gpu_topology(gpu, key)) for gpu in gpus]
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
    host_cpus, allowed = _cpu_set(cpu.get('online')), _cpu_set(cpu.get('allowed'))
    if host_cpus is not None and allowed is not None:
        host_cpus &= allowed
    cpus, cpu_note = _pin_set(gpus, 'cpu_affinity', 'CPUs', host_cpus, 'specdec_host.cpu.online')
    nodes, node_note = _pin_set(gpus, 'numa_affinity', 'NUMA node', _cpu_set(cpu.get('numa_nodes')), 'specdec_host.cpu.numa_nodes')
    notes = []
    if cpu_note:
        notes.append(cpu_note + ': not pinned' + (' to CPUs' if nodes else ''))
    if node_note and node_note != cpu_note:
        notes.append(node_note + ': not pinned' + (' to a NUMA node' if cpus else ''))
    return cpus, nodes, '; '.join(notes) or None


def _stoppable_process(unit, cmdline, processes):
    """The name of the specdec_stoppable_processes entry that covers a holder, or None.

    A holder no unit names is matched by its command line; a supervisor service that restored such a process
    (specdec-restored-<name>.service) stays covered by its entry.
    """
    for name, pattern in processes:
        if unit is None and cmdline and pattern.search(cmdline):
            return name
        if unit is not None and unit == RESTORED_SERVICE % name:
            return name
    return None


def _holders(gpus, stoppable, processes):
    """Who holds the stage's GPUs: each compute process, and memory no visible process explains (no pid, no unit).

    stoppable_process names the specdec_stoppable_processes entry of a holder that no unit names (the conflicts role
    stops it by pid, recording its command line and environment) or that runs as the service restoring one.
    """
    holders = []
    for gpu in gpus:
        for proc in gpu.get('processes') or []:
            unit = proc.get('unit')
            process = _stoppable_process(unit, proc.get('cmdline'), processes) if proc.get('pid') else None
            holders.append({
                'gpu_index': gpu.get('index'), 'uuid': gpu.get('uuid'), 'pid': proc.get('pid'), 'process': proc.get('name'),
                'unit': unit, 'used_memory_mib': proc.get('used_memory_mib'), 'cmdline': proc.get('cmdline'),
                'stoppable': process is not None or (bool(unit) and any(fnmatch.fnmatchcase(unit, pattern) for pattern in stoppable)),
                'stoppable_process': process,
            })
        if gpu.get('unexplained_memory_mib'):
            holders.append({
                'gpu_index': gpu.get('index'), 'uuid': gpu.get('uuid'), 'pid': None, 'process': None, 'unit': None,
                'used_memory_mib': gpu['unexplained_memory_mib'], 'cmdline': None, 'stoppable': False, 'stoppable_process': None,
            })
    return holders


def _listening_ports(facts):
    ports = ((facts or {}).get('specdec_host') or {}).get('listening_ports') or []
    return set(port.get('port') if isinstance(port, Mapping) else port for port in ports)


def _common_args(plan, tp, port):
    """The flags every stage's server gets (COMMON_FLAGS), before its method's."""
    return [
        ['--model-path', plan['model']['path']],
        ['--tp-size', str(tp)],
        ['--host', HOST],
        ['--port', str(port)],
        ['--mem-fraction-static', str(plan['mem_fraction'])],
    ]


def _fit(plan, stage_bytes, gpus, tp, host_memory):
    """(capacity at this TP, why not); (None, None) when the model size is unknown."""
    if not stage_bytes:
        return None, None
    memory = [gpu.get('memory_total_mib') for gpu in gpus]
    if not all(_is_number(mib) and mib > 0 for mib in memory + host_memory):
        return None, 'GPU memory is unknown in the facts (memory_total_mib)'
    fit = _capacity(stage_bytes, memory, tp, plan['mem_fraction'], plan['min_kv_headroom_gib'])
    host_fit = fit_tp(stage_bytes, host_memory, plan['mem_fraction'], plan['min_kv_headroom_gib'])
    fit.update(model_bytes=stage_bytes, min_tp=host_fit['min_tp'], dp_replicas=len(host_memory) // tp)
    if fit['fits']:
        return fit, None
    return fit, 'the weights (%s GiB) do not fit at TP%d: %s; %s' % (
        host_fit['model_gib'], tp, _short_of_memory(fit, plan['mem_fraction'], plan['min_kv_headroom_gib']),
        'the smallest TP that fits is %d' % host_fit['min_tp'] if host_fit['min_tp'] else 'no TP size fits on this host')


def _stage(plan, table, tp, indices, why_not, host, method, params, port, stoppable, weights_bytes, checkpoint=None, pinning=(None, None, None)):
    """One stage; checkpoint: (draft_checkpoint, why it cannot run or None) for a stage of a draft sweep, else None;
    pinning: stage_pinning's (cpu_affinity, numa_nodes, pin_note) for its GPUs."""
    entry = table[method]
    shorts = dict((name, rule['short']) for name, rule in entry['params'].items())
    draft, draft_bytes = plan['draft'].get('path'), plan['draft'].get('bytes')
    if checkpoint is not None:
        checkpoint, why_not_here = checkpoint
        params = dict(params, **{STEP_PARAM: checkpoint['step']})
        shorts[STEP_PARAM] = STEP_SHORT
        draft, draft_bytes = checkpoint['path'], checkpoint['bytes']
        why_not = why_not or why_not_here
    stage_id = '-'.join([tp['prefix'], method] + ['%s%d' % (shorts[name], value) for name, value in params.items()])
    gpus = [host[i] for i in indices]
    uuids = [gpu.get('uuid') for gpu in gpus]
    reason = why_not
    if reason is None and not all(uuids):
        reason = 'GPU(s) %s have no UUID in the facts; stages pin GPUs by UUID' % ', '.join(
            str(gpu.get('index')) for gpu in gpus if not gpu.get('uuid'))
    uses_draft = 'draft' in entry['uses']
    stage_bytes = weights_bytes
    if stage_bytes and uses_draft and draft_bytes:
        stage_bytes += draft_bytes  # the draft model shares the stage's GPUs
    fit = None
    if reason is None:
        fit, reason = _fit(plan, stage_bytes, gpus, tp['size'], [host[index].get('memory_total_mib') for index in sorted(host)])
    values = dict(params, model=plan['model']['path'], draft=draft, tp=tp['size'], port=port)
    sglang_args = _common_args(plan, tp['size'], port)
    sglang_args += [[item[0], item[1].format_map(values)] if isinstance(item, list) else item for item in entry['args']]
    sglang_args += [list(item) if isinstance(item, list) else item for item in plan['extra_args']]
    # The server's command line after the launcher, word for word: what the unit runs and the preflight parses.
    # --flag=value keeps a value that starts with '-' a value.
    argv = [item if isinstance(item, str) else '%s=%s' % (item[0], item[1]) for item in sglang_args]
    env = {'CUDA_VISIBLE_DEVICES': ','.join(uuid or '' for uuid in uuids)}
    env.update((name, value.format_map(values)) for name, value in entry['env'].items())
    env.update(plan['env'])
    holders = _holders(gpus, stoppable['units'], stoppable['processes'])
    cpu_affinity, numa_nodes, pin_note = pinning
    return {
        'id': stage_id,
        'campaign': plan['campaign'],
        'unit': '%s%s-%s.service' % (UNIT_PREFIX, plan['campaign'], stage_id),
        'description': '%s %s: %s%s%s, TP%d on GPU(s) %s' % (
            plan['campaign'], stage_id, method, ''.join(' %s=%d' % item for item in params.items() if item[0] != STEP_PARAM or not checkpoint),
            ' step %d' % checkpoint['step'] if checkpoint else '', tp['size'], ','.join(str(i) for i in indices) or 'none'),
        'method': method,
        'params': dict(params),
        'tp': tp['size'],
        'gpu_indices': list(indices),
        'gpus': [uuid for uuid in uuids if uuid],
        'port': port,
        'model_path': plan['model']['path'],
        'draft_path': draft if uses_draft else None,
        'draft_checkpoint': dict(checkpoint) if checkpoint else None,
        'sglang_args': sglang_args,
        'argv': argv,
        'env': env,
        'workload': copy.deepcopy(plan['workload']),
        'concurrency': list(plan['concurrency']),
        'repeats': plan['repeats'],
        'sglang_build': dict(plan['sglang_build']),
        'feasible': reason is None,
        'reason': reason,
        'fit': fit,
        # the CPUs and NUMA nodes local to the stage's GPUs that are online here (cpulists), or None and why not
        'cpu_affinity': cpu_affinity,
        'numa_nodes': numa_nodes,
        'pin_note': pin_note,
        'holders': holders,
        # what the stage stops: units, and processes no unit names, by their specdec_stoppable_processes name
        'conflicts': sorted(set(h['unit'] if h['unit'] else 'process %s' % h['stoppable_process']
                                for h in holders if h['unit'] or h['stoppable_process'])),
        'blocked': any(not h['stoppable'] for h in holders),
        # when it runs (_Waves): its wave and the stages in it, why it runs alone, the stage it re-runs alone; its TP's pool
        'wave': None,
        'wave_stages': [],
        'alone': None,
        'interference_of': None,
        'pool': None,
    }


def _free_port(port, busy_ports, base_port, count):
    """The first port from port on that nothing on the host listens on, for the stage after count stages."""
    while port in busy_ports:
        port += 1
    if port > 65535:
        _fail('base_port', 'is %d, too high for %d stages' % (base_port, count + 1), 'a lower port')
    return port


def _pool_key(tp, slots, why_not):
    """A stage's `pool`: None without one; else its TP entry's id, the pool's GPUs, the size, its slots (none when the
    GPUs are missing) and the leftover GPUs no slot uses."""
    if tp['pool'] is None:
        return None
    leftover = _pool_slots(tp['pool'], tp['size'])[1]
    return {'tp': tp['prefix'], 'gpus': list(tp['pool']), 'size': tp['size'],
            'slots': [] if why_not else [list(slot) for slot in slots], 'unused': leftover}


def _holder_name(holder):
    if holder['unit']:
        return holder['unit']
    if holder['pid']:
        return 'pid %s (%s) on GPU %s' % (holder['pid'], holder['process'], holder['gpu_index'])
    return '%s MiB no process explains on GPU %s' % (holder['used_memory_mib'], holder['gpu_index'])


def _alone_reason(stage):
    """Why a feasible stage must run alone, whatever parallel says: it stops a conflict, or something holds its GPUs."""
    if stage['blocked']:
        return 'its GPUs are held by %s, which may not be stopped' % ', '.join(
            _holder_name(holder) for holder in stage['holders'] if not holder['stoppable'])
    if stage['conflicts']:
        return 'stops %s' % ', '.join(stage['conflicts'])
    return None


def _chunks(items, count):
    """items split into count consecutive chunks whose sizes differ by at most one, the larger first."""
    size, extra = divmod(len(items), count)
    chunks, start = [], 0
    for position in range(count):
        end = start + size + (1 if position < extra else 0)
        chunks.append(items[start:end])
        start = end
    return chunks


class _Waves:
    """Groups stages into waves, the stages run at the same time, greedy in plan order (see campaign_plan.yml).

    limit: the most stages of a wave (None: no limit); 1 is one stage at a time, each feasible stage its own wave, every
    stage on its TP entry's first slot, pinned as stage_pinning says: the plan without parallel.
    """

    def __init__(self, limit):
        self.limit = limit
        self.parallel = limit != 1
        self.count = 0
        self.current = []  # the GPU sets of the stages of the wave still open; [] when closed
        self.made = []  # (build, slot) of each stage in plan order, to re-run one alone

    def place(self, slots, build):
        """The stage build(slot) makes, on the slot its wave leaves it, with its wave and why it runs alone.

        Its feasibility, and whether it must run alone, are those on its entry's first slot (where it runs when alone).
        Beside other stages it takes the first slot whose GPUs no stage of the open wave has and on which it is feasible
        and stops nothing; without one, or with the wave full, it starts a new wave on the first slot.
        """
        stage = build(0)
        self.made.append((build, 0))
        if not stage['feasible']:
            return stage
        stage['alone'] = _alone_reason(stage)
        if self.parallel and not stage['alone'] and self.current and (self.limit is None or len(self.current) < self.limit):
            taken = set().union(*self.current)
            for slot, indices in enumerate(slots):
                if taken & set(indices):
                    continue
                beside = stage if slot == 0 else build(slot)
                if beside['feasible'] and not _alone_reason(beside):
                    beside['wave'] = self.count
                    self.current.append(set(indices))
                    self.made[-1] = (build, slot)
                    return beside
        self.count += 1
        stage['wave'] = self.count
        self.current = [set(slots[0])] if self.parallel and not stage['alone'] else []
        return stage

    def finish(self, stages):
        """Each stage's wave_stages, and disjoint CPU sets within each wave that runs stages side by side."""
        waves = {}
        for stage in stages:
            if stage['wave'] is not None:
                waves.setdefault(stage['wave'], []).append(stage)
        for wave, members in waves.items():
            for stage in members:
                stage['wave_stages'] = [member['id'] for member in members]
            if len(members) > 1:
                self._split_cpus(wave, members)

    @staticmethod
    def _split_cpus(wave, members):
        """Stages of a wave sharing local CPUs split them: per identical set, in order of first appearance, the CPUs no
        earlier set gave away, in consecutive chunks in plan order; too few CPUs for its stages, a set is shared."""
        groups = {}
        for stage in members:
            cpus = _cpu_set(stage['cpu_affinity'])
            if cpus:
                groups.setdefault(frozenset(cpus), []).append(stage)
        given, sharing = set(), []
        for cpus, group in groups.items():
            free = sorted(cpus - given)
            given.update(free)
            if len(free) < len(group):
                sharing.extend(group)  # each keeps the whole set
                continue
            for stage, chunk in zip(group, _chunks(free, len(group))):
                stage['cpu_affinity'] = format_cpu_list(chunk)
        for stage in sharing:
            cpus = _cpu_set(stage['cpu_affinity'])
            others = sum(1 for other in members if other is not stage and cpus & (_cpu_set(other['cpu_affinity']) or set()))
            note = 'shares CPUs %s with %d other stage(s) of wave %d: fewer online CPUs local to its GPUs than stages' % (
                stage['cpu_affinity'], others, wave)
            stage['pin_note'] = '; '.join(text for text in (stage['pin_note'], note) if text)

    def interference_stage(self, stages, port):
        """The stage that re-runs the first stage of the largest wave (the first such) alone, at its first concurrency,
        on its GPUs with all their local CPUs: None without parallel or without a wave of two stages or more."""
        if not self.parallel:
            return None
        sizes = {}
        for stage in stages:
            if stage['wave'] is not None:
                sizes[stage['wave']] = sizes.get(stage['wave'], 0) + 1
        largest = max(sorted(sizes), key=lambda wave: sizes[wave], default=None)
        if largest is None or sizes[largest] < 2:
            return None
        original = next(stage for stage in stages if stage['wave'] == largest)
        build, slot = self.made[original['index']]
        stage = build(slot, port=port)
        stage_id = original['id'] + ALONE_SUFFIX
        stage.update(
            id=stage_id,
            unit='%s%s-%s.service' % (UNIT_PREFIX, stage['campaign'], stage_id),
            description=stage['description'].replace(' %s: ' % original['id'], ' %s: ' % stage_id, 1) + ', alone',
            concurrency=list(original['concurrency'][:1]),
            wave=self.count + 1,
            wave_stages=[stage_id],
            alone='measures interference: re-runs %s alone' % original['id'],
            interference_of=original['id'],
            pool=copy.deepcopy(original['pool']),
        )
        return stage


def _build(build, methods, sglang_version, sglang_python):
    """The SGLang build profile the stages are made for (None: a user's own method table and no build named)."""
    if build is not None and not isinstance(build, str):
        _fail('sglang_build', 'is %r' % (build,), 'the name of a build profile')
    if not build and methods:
        return None
    try:
        return builds.select(builds.load_builds(), name=build or None, version=sglang_version, python=sglang_python)
    except builds.BuildError as exc:
        raise AnsibleFilterError('campaign_plan: %s' % exc)


def campaign_plan(facts, spec, methods=None, stoppable=None, base_port=DEFAULT_BASE_PORT, model_bytes=None, strict=True,
                  build=None, sglang_version=None, sglang_python=None, stoppable_processes=None, draft_checkpoints=None,
                  installed_checkpoints=None, checkpoint_dir=DEFAULT_CHECKPOINT_DIR, checkpoint_free_bytes=None,
                  checkpoint_min_free_gib=DEFAULT_CHECKPOINT_MIN_FREE_GIB):
    """The ordered stages of a campaign on one host: TP entries in spec order, then methods, then parameter values, then
    the draft's checkpoints (for the methods that use the draft, when it is a sweep)."""
    profile = _build(build, methods, sglang_version, sglang_python)
    table = _method_table(methods or profile['methods'])
    if profile is not None:
        _check_table_flags(table, profile)
    plan = _validate(spec, table, profile)
    plan['sglang_build'] = {
        'name': profile['name'] if profile else 'custom',
        'description': profile['description'] if profile else 'the method table given to the plan (plan_methods)',
        'release': profile['sglang_version'] if profile else None,
        'version': sglang_version,
        'python': sglang_python,
    }
    stoppable = {'units': _spec_stoppable(stoppable), 'processes': _spec_stoppable_processes(stoppable_processes)}
    if not _is_int(base_port) or not 1024 <= base_port <= 65535:
        _fail('base_port', 'is %r' % (base_port,), 'a port number in 1024-65535')
    weights_bytes = plan['model'].get('bytes') or model_bytes
    if weights_bytes is not None and not _is_positive_int(weights_bytes):
        _fail('model_bytes', 'is %r' % (weights_bytes,), 'a positive integer number of bytes (see specdec.bench.model_bytes)')
    checkpoint_dir = _check_checkpoint_options(checkpoint_dir, checkpoint_free_bytes, checkpoint_min_free_gib)
    checkpoints = None
    if plan['draft_sweep'] is not None and any('draft' in table[method]['uses'] for method, _matrix in plan['methods']):
        checkpoints = _sweep_checkpoints(plan['draft_sweep'], draft_checkpoints, installed_checkpoints, checkpoint_dir)
    host = _host_gpus(facts)
    placements = [_place(tp, host, strict) for tp in plan['tp']]  # every host check before the first stage is built
    busy_ports = _listening_ports(facts)
    waves = _Waves(plan['parallel'])
    stages, port = [], base_port
    for tp, (slots, why_not) in zip(plan['tp'], placements):
        pool = _pool_key(tp, slots, why_not)
        for method, matrix in plan['methods']:
            sweep = checkpoints if checkpoints is not None and 'draft' in table[method]['uses'] else [None]
            for params, checkpoint in itertools.product(matrix, sweep):
                port = _free_port(port, busy_ports, base_port, len(stages))

                def build(slot, port=port, method=method, params=params, checkpoint=checkpoint, tp=tp, slots=slots, why_not=why_not):
                    indices = slots[slot]
                    return _stage(plan, table, tp, indices, why_not, host, method, params, port, stoppable, weights_bytes, checkpoint,
                                  pinning=stage_pinning([host[i] for i in indices], facts))
                stage = waves.place(slots, build)
                stage['pool'] = copy.deepcopy(pool)
                stages.append(dict(index=len(stages), **stage))
                port += 1
    waves.finish(stages)
    alone = waves.interference_stage(stages, _free_port(port, busy_ports, base_port, len(stages)))
    if alone is not None:
        stages.append(dict(alone, index=len(stages)))
    seen = {}
    for stage in stages:  # a safety net: the spec checks above already make ids unique and safe
        if not _ID_RE.match(stage['id']) or len(stage['unit']) > 255:
            _fail('stage id %r' % stage['id'], 'is not usable in a unit name', ID_PATTERN)
        if stage['id'] in seen:
            _fail('stage %d (%s)' % (stage['index'], stage['id']), 'repeats stage %d' % seen[stage['id']], 'distinct stages')
        seen[stage['id']] = stage['index']
    _check_disk(stages, checkpoint_dir, checkpoint_free_bytes, checkpoint_min_free_gib)
    return stages


class FilterModule:
    def filters(self):
        return {'model_bytes': safetensors_total_size, 'fit_tp': fit_tp, 'campaign_plan': campaign_plan}
