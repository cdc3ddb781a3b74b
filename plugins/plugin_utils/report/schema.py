# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, data: the schema of each collected file.

One pure check per kind (check_plan, check_status, check_result, check_server_info, check_gpus, check_raw_record,
check_search; the timing file's is time.check_timing) returns None or why the document is not of its kind; SCHEMAS
maps the results layout's keys to them. A result's energy keys (RESULT_ENERGY: what bench_run's telemetry measured of the repeat) are
checked like its other numbers; a result from before telemetry has none of them. A plan stage's wave, wave_stages and
interference_of and a status.json's ran_beside, wave and interference_of are checked when present.
"""

from __future__ import annotations

from ansible_collections.specdec.bench.plugins.module_utils._common import ID_PATTERN, ID_RE, finite
from .time import check_timing


# What the report reads of the normalized harness result (plugins/module_utils/_stage/harness.py RESULT_KEYS).
RESULT_NUMBERS = (
    'output_throughput', 'accept_length', 'accept_length_source', 'request_throughput', 'completed', 'failed',
    'duration_s', 'mean_ttft_ms', 'median_ttft_ms', 'p99_ttft_ms', 'mean_itl_ms', 'median_itl_ms', 'p99_itl_ms',
    'median_tpot_ms', 'p99_tpot_ms', 'median_e2e_latency_ms', 'p99_e2e_latency_ms', 'harness',
)


# What the report reads of a result with a dataset; an older result has none of them (null in the row).
RESULT_WORKLOAD = (
    'dataset_kind', 'dataset_source', 'dataset_source_sha256', 'dataset_sha256', 'prompts_sha256', 'template_sha256', 'turns',
    'top_p', 'top_k', 'ignore_eos', 'max_new_tokens', 'requests', 'mean_output_len', 'accept_length_server_info',
    'accept_length_disagreement', 'accept_length_flag', 'accept_length_p10', 'accept_length_median', 'accept_length_p90',
)


# Of a result file's keys that the report reads, the counts, the texts and the flags; the others are finite numbers
# or null.
RESULT_COUNTS = ('completed', 'failed', 'num_prompts', 'requests', 'max_new_tokens')


RESULT_TEXTS = ('accept_length_source', 'harness', 'dataset', 'dataset_kind', 'dataset_source', 'dataset_source_sha256',
                'dataset_sha256', 'prompts_sha256', 'template_sha256', 'turns')


RESULT_FLAGS = ('ignore_eos', 'accept_length_flag')


# What the report reads of a repeat's energy(bench_run's telemetry); a result without them reads as null.
# The numbers are finite and 0 or more, energy_samples a count, gpu_throttled a list of clock event reason names.
RESULT_ENERGY_NUMBERS = ('energy_j', 'avg_power_w', 'idle_power_w', 'output_tokens_per_j', 'j_per_output_token')


RESULT_ENERGY_TEXTS = ('energy_method', 'energy_backend', 'power_source', 'telemetry_file', 'energy_note')


RESULT_ENERGY = RESULT_ENERGY_NUMBERS + RESULT_ENERGY_TEXTS + ('energy_samples', 'gpu_throttled')


def _what(value):
    """A value as a message names it: a container by its kind, anything else as it is."""
    if isinstance(value, (dict, list)):
        return 'a %s' % type(value).__name__
    return repr(value)


def _bad(field, value, allowed):
    return '%s is %s; allowed: %s' % (field, _what(value), allowed)


def _is_count(value, minimum=0):
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def _is_finite(value):
    """A JSON number (not a string that parses as one) that is finite."""
    return isinstance(value, (int, float)) and finite(value) is not None


def _optional_str(doc, key):
    return None if doc.get(key) is None or isinstance(doc[key], str) else _bad(key, doc[key], 'a string or null')


def _first(reasons):
    return next((reason for reason in reasons if reason), None)


def _check_object(doc):
    return None if isinstance(doc, dict) else _bad('the document', doc, 'an object')


def _check_stage(stage, field):
    """One stage of campaign.json (as specdec.bench.campaign_plan makes it), the keys the report reads."""
    if not isinstance(stage, dict):
        return _bad(field, stage, 'an object (a stage)')
    # ID_RE without is_id's length limit: campaign_plan bounds a stage id only by its unit name's length.
    if not isinstance(stage.get('id'), str) or not ID_RE.match(stage['id']):
        return _bad(field + '.id', stage.get('id'), 'a stage id matching %s (it names the stage folder)' % ID_PATTERN)
    if stage.get('tp') is not None and not _is_count(stage['tp'], 1):
        return _bad(field + '.tp', stage['tp'], 'a positive integer')
    for key in ('params', 'workload'):
        if stage.get(key) is not None and not isinstance(stage[key], dict):
            return _bad('%s.%s' % (field, key), stage[key], 'an object')
    for name, value in sorted((stage.get('params') or {}).items()):
        if not _is_count(value, 1):
            return _bad('%s.params.%s' % (field, name), value, 'a positive integer')
    for name in ('input_len', 'output_len', 'num_prompts'):
        value = (stage.get('workload') or {}).get(name)
        if value is not None and not _is_count(value, 1):
            return _bad('%s.workload.%s' % (field, name), value, 'a positive integer')
    reason = _check_workload(stage.get('workload') or {}, field + '.workload')
    if reason:
        return reason
    for key, allowed, valid in (('concurrency', 'a positive integer', lambda item: _is_count(item, 1)),
                                ('gpus', 'a GPU UUID (a string)', lambda item: isinstance(item, str))):
        items = stage.get(key)
        if items is None:
            continue
        if not isinstance(items, list):
            return _bad('%s.%s' % (field, key), items, 'a list')
        for index, item in enumerate(items):
            if not valid(item):
                return _bad('%s.%s[%d]' % (field, key, index), item, allowed)
    build = stage.get('sglang_build')
    if build is not None:
        if not isinstance(build, dict):
            return _bad(field + '.sglang_build', build, 'an object (the SGLang build profile)')
        reason = _first(_optional_str(build, key) for key in ('name', 'release', 'version', 'python', 'description'))
        if reason:
            return '%s.sglang_build: %s' % (field, reason)
    reason = _check_draft_checkpoint(stage.get('draft_checkpoint'), field + '.draft_checkpoint') or _check_wave(stage, field)
    if reason:
        return reason
    return _first(_optional_str(stage, key) for key in ('method', 'reason', 'model_path', 'draft_path', 'alone'))


def _check_ids(doc, key, field):
    """A list of stage ids (wave_stages, ran_beside), or absent/null."""
    items = doc.get(key)
    if items is None:
        return None
    if not isinstance(items, list):
        return _bad('%s%s' % (field, key), items, 'a list of stage ids')
    for index, item in enumerate(items):
        if not isinstance(item, str) or not ID_RE.match(item):
            return _bad('%s%s[%d]' % (field, key, index), item, 'a stage id matching %s' % ID_PATTERN)
    return None


def _check_wave(doc, field=None):
    """The parallel waves' keys of a plan stage or a status.json, each tolerated absent (results from before them): wave (a
    1-based wave number or null), wave_stages and ran_beside (lists of stage ids), interference_of (the id of the
    stage an interference stage re-runs alone, or null)."""
    where = '%s.' % field if field else ''
    if doc.get('wave') is not None and not _is_count(doc['wave'], 1):
        return _bad(where + 'wave', doc['wave'], 'a wave number (an integer, 1 or more) or null')
    original = doc.get('interference_of')
    if original is not None and (not isinstance(original, str) or not ID_RE.match(original)):
        return _bad(where + 'interference_of', original, 'the id of the stage it re-runs alone (matching %s) or null' % ID_PATTERN)
    return _check_ids(doc, 'wave_stages', where) or _check_ids(doc, 'ran_beside', where)


def _check_draft_checkpoint(checkpoint, field):
    """A stage's draft_checkpoint (the drafter checkpoint a stage of a checkpoint sweep measures), the keys
    the report reads; null for a stage with a single draft. Other keys are tolerated."""
    if checkpoint is None:
        return None
    if not isinstance(checkpoint, dict):
        return _bad(field, checkpoint, 'an object (the checkpoint the stage measures) or null')
    reason = _first(_optional_str(checkpoint, key) for key in ('name', 'run', 'source_host', 'source_path', 'path'))
    if reason:
        return '%s.%s' % (field, reason)
    for key in ('step', 'bytes'):
        if checkpoint.get(key) is not None and not _is_count(checkpoint[key]):
            return _bad('%s.%s' % (field, key), checkpoint[key], 'a count (an integer, 0 or more) or null')
    if checkpoint.get('present') is not None and not isinstance(checkpoint['present'], bool):
        return _bad(field + '.present', checkpoint['present'], 'true or false')
    return None


def _check_datasets(items, field):
    """A list of dataset entries (the plan's validated ones, or status.json's prepared ones): objects named by an id."""
    if not isinstance(items, list):
        return _bad(field, items, 'a list of datasets')
    for index, item in enumerate(items):
        where = '%s[%d]' % (field, index)
        if not isinstance(item, dict):
            return _bad(where, item, 'an object (a dataset)')
        if not isinstance(item.get('name'), str) or not ID_RE.match(item['name']):
            return _bad(where + '.name', item.get('name'), 'a dataset name matching %s' % ID_PATTERN)
        reason = _first(_optional_str(item, key) for key in (
            'kind', 'source', 'source_sha256', 'pinned', 'format', 'turns', 'normalized_sha256', 'prompts_sha256',
            'template_sha256'))
        if reason:
            return '%s.%s' % (where, reason)
        for key in ('count', 'num_prompts', 'max_new_tokens', 'input_len', 'output_len'):
            if item.get(key) is not None and not _is_count(item[key]):
                return _bad('%s.%s' % (where, key), item[key], 'a count (an integer, 0 or more)')
    return None


def _check_workload(workload, field):
    """The plan's workload keys: datasets (validated entries) and temperature (a number or a list)."""
    if workload.get('datasets') is not None:
        reason = _check_datasets(workload['datasets'], field + '.datasets')
        if reason:
            return reason
    temperature = workload.get('temperature')
    if temperature is None:
        return None
    for index, value in enumerate(temperature if isinstance(temperature, list) else [temperature]):
        if not _is_finite(value) or isinstance(value, bool) or value < 0:
            where = '%s.temperature%s' % (field, '[%d]' % index if isinstance(temperature, list) else '')
            return _bad(where, value, 'a number, 0 or more')
    return None


def check_plan(doc):
    """campaign.json, as the results_dir role writes it: {'stages': [stage, ...]}, stage ids distinct."""
    reason = _check_object(doc)
    if reason:
        return reason
    stages = doc.get('stages')
    if stages is None:
        return None
    if not isinstance(stages, list):
        return _bad('stages', stages, 'a list of stages')
    seen = set()
    for index, stage in enumerate(stages):
        reason = _check_stage(stage, 'stages[%d]' % index)
        if reason:
            return reason
        if stage['id'] in seen:
            return 'stages[%d].id %s repeats an earlier stage; allowed: distinct stage ids' % (index, stage['id'])
        seen.add(stage['id'])
    return None


def check_status(doc):
    """status.json, as specdec.bench.stage_record writes it: a status name and its reason."""
    reason = _check_object(doc)
    if reason:
        return reason
    if not isinstance(doc.get('status'), str) or not doc['status']:
        return _bad('status', doc.get('status'), 'a status name (ok, failed, infeasible)')
    if doc.get('datasets') is not None:
        reason = _check_datasets(doc['datasets'], 'datasets')
        if reason:
            return reason
    return _check_wave(doc) or _optional_str(doc, 'reason')


def check_result(doc):
    """A result file, as the harness writes it (plugins/module_utils/_stage/harness.py): finite numbers or null."""
    reason = _check_object(doc)
    if reason:
        return reason
    for key in ('complete',) + RESULT_FLAGS:
        if doc.get(key) is not None and not isinstance(doc[key], bool):
            return _bad(key, doc[key], 'true or false')
    for key in RESULT_NUMBERS + ('num_prompts', 'dataset', 'temperature') + RESULT_WORKLOAD:
        value = doc.get(key)
        if value is None or key in RESULT_FLAGS:
            continue
        if key in RESULT_TEXTS:
            if not isinstance(value, str):
                return _bad(key, value, 'a string or null')
        elif key in RESULT_COUNTS:
            if not _is_count(value):
                return _bad(key, value, 'a count (an integer, 0 or more) or null')
        elif not _is_finite(value):
            return _bad(key, value, 'a finite number or null')
    return _check_energy(doc)


def _check_energy(doc):
    """A result's energy keys (RESULT_ENERGY), each null when the repeat was measured without energy."""
    for key in RESULT_ENERGY_NUMBERS:
        value = doc.get(key)
        if value is not None and (not _is_finite(value) or isinstance(value, bool) or value < 0):
            return _bad(key, value, 'a finite number, 0 or more, or null')
    if doc.get('energy_samples') is not None and not _is_count(doc['energy_samples']):
        return _bad('energy_samples', doc['energy_samples'], 'a count (an integer, 0 or more) or null')
    reason = _first(_optional_str(doc, key) for key in RESULT_ENERGY_TEXTS)
    if reason:
        return reason
    throttled = doc.get('gpu_throttled')
    if throttled is not None and (not isinstance(throttled, list) or not all(isinstance(item, str) for item in throttled)):
        return _bad('gpu_throttled', throttled, 'a list of clock event reason names (strings), or null')
    return None


def check_server_info(doc):
    """server_info.json, SGLang's /server_info as stage_record saved it; only the keys the report shows are checked."""
    return _check_object(doc) or _first(_optional_str(doc, key) for key in ('version', 'model_path', 'speculative_draft_model_path'))


def check_gpus(doc):
    """gpus.json, the GPU snapshot stage_record writes: {'nvidia_gpus': [gpu, ...], 'nvidia_driver': {...}}."""
    reason = _check_object(doc)
    if reason:
        return reason
    gpus = doc.get('nvidia_gpus')
    if gpus is not None and not isinstance(gpus, list):
        return _bad('nvidia_gpus', gpus, 'a list of GPUs')
    for index, gpu in enumerate(gpus or []):
        field = 'nvidia_gpus[%d]' % index
        if not isinstance(gpu, dict):
            return _bad(field, gpu, 'an object (a GPU)')
        if gpu.get('index') is not None and not _is_count(gpu['index']):
            return _bad(field + '.index', gpu['index'], 'a GPU index (an integer, 0 or more)')
        if gpu.get('memory_total_mib') is not None and not _is_count(gpu['memory_total_mib']):
            return _bad(field + '.memory_total_mib', gpu['memory_total_mib'], 'a number of MiB (an integer)')
        reason = _first(_optional_str(gpu, key) for key in ('uuid', 'name'))
        if reason:
            return '%s.%s' % (field, reason)
    driver = doc.get('nvidia_driver')
    if driver is not None and not isinstance(driver, dict):
        return _bad('nvidia_driver', driver, 'an object')
    reason = _first(_optional_str(driver or {}, key) for key in ('version', 'cuda_version'))
    return 'nvidia_driver.%s' % reason if reason else None


def check_raw_record(doc):
    """One line of a raw file, a request record as the builtin harness writes it; only the keys the report reads."""
    reason = _check_object(doc)
    if reason:
        return reason
    for key in ('warmup', 'success'):
        if doc.get(key) is not None and not isinstance(doc[key], bool):
            return _bad(key, doc[key], 'true or false')
    for key in ('output_tokens', 'completion_tokens', 'spec_verify_ct'):
        if doc.get(key) is not None and not _is_count(doc[key]):
            return _bad(key, doc[key], 'a count (an integer, 0 or more) or null')
    if doc.get('latency_s') is not None and not _is_finite(doc['latency_s']):
        return _bad('latency_s', doc['latency_s'], 'a finite number or null')
    return _optional_str(doc, 'category')


REFERENCE_KINDS = ('gsm8k', 'math500', 'humaneval', 'mbpp')
# The fields each kind of grading reference must have (datasets.py's _reference), text unless listed in REFERENCE_LISTS.
REFERENCE_FIELDS = {'gsm8k': ('answer',), 'math500': ('answer',), 'humaneval': ('prompt', 'test', 'entry_point'),
                    'mbpp': ('test_list', 'test_setup_code', 'challenge_test_list')}
REFERENCE_LISTS = ('test_list', 'challenge_test_list')


def check_reference(doc):
    """One line of a references file: {id, kind, and the kind's fields}."""
    reason = _check_object(doc)
    if reason:
        return reason
    if not isinstance(doc.get('id'), str) or not doc['id']:
        return _bad('id', doc.get('id'), 'a record id (a non-empty string)')
    if doc.get('kind') not in REFERENCE_KINDS:
        return _bad('kind', doc.get('kind'), ', '.join(REFERENCE_KINDS))
    for key in REFERENCE_FIELDS[doc['kind']]:
        value = doc.get(key)
        if key in REFERENCE_LISTS:
            if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
                return _bad(key, value, 'a list of strings')
        elif not isinstance(value, str):
            return _bad(key, value, 'a string')
    return None


# What a capacity search's file holds (module_utils/_stage/load_search.py's result as stage_run writes it).
SEARCH_KINDS = ('concurrency', 'request_rate')
SEARCH_NUMBERS = ('lo', 'hi', 'resolution', 'capacity', 'capacity_low', 'capacity_high', 'seconds', 'max_seconds', 'temperature')


def check_search(doc):
    """A capacity search's file (search-<dataset>-t<T>-<kind>.json): its kind, finite numbers or null, runs a count,
    points a list of objects; the other keys are tolerated."""
    reason = _check_object(doc)
    if reason:
        return reason
    if doc.get('kind') not in SEARCH_KINDS:
        return _bad('kind', doc.get('kind'), ' or '.join(SEARCH_KINDS))
    for key in SEARCH_NUMBERS:
        if doc.get(key) is not None and (isinstance(doc[key], bool) or not _is_finite(doc[key])):
            return _bad(key, doc[key], 'a finite number or null')
    for key in ('runs', 'max_runs'):
        if doc.get(key) is not None and not _is_count(doc[key]):
            return _bad(key, doc[key], 'a count (an integer, 0 or more) or null')
    points = doc.get('points')
    if points is not None and (not isinstance(points, list) or not all(isinstance(point, dict) for point in points)):
        return _bad('points', points, 'a list of objects (the measured points)')
    return _first(_optional_str(doc, key) for key in ('binding', 'bound_by', 'stage', 'dataset'))


# The schema of each file of the results layout (module_utils/_common.py RESULTS_LAYOUT), by its layout key.
SCHEMAS = {'campaign': check_plan, 'status': check_status, 'result': check_result, 'server_info': check_server_info,
           'gpus': check_gpus, 'timing': check_timing, 'search': check_search}
