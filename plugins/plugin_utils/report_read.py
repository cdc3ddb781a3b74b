# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, step 1: the collected results of one host and campaign, each file checked against its schema.

Every file is checked against the schema of its kind before the report uses it: one pure check per kind (check_plan,
check_status, check_result, check_server_info, check_gpus) returns None or why the document is not of its kind. A
file that is unreadable, not JSON or not of its kind is skipped as if it were absent, and listed with its path and
reason (skipped_files in the report, report.md, results.json and the action's return).

Result files are found by listing each stage folder against the layout's result pattern ({dataset}, {temperature},
{concurrency}, {repeat}); a run is keyed (dataset, temperature, concurrency) and holds one result per repeat (from 1).
A folder written before repeats holds PREVIOUS_RESULT files (result-<dataset>-t<T>-c<N>.json), and one written
before datasets LEGACY_RESULT files (result-c<N>.json, dataset 'random' at temperature 0): each reads as repeat 1, so
old campaigns still report and compare.

The raw per-request records of a run (the layout's raw file beside each result) are read only for a dataset whose
prepared entry names two or more categories (Spec-Bench's): the report's per-category rows come from them. A raw
file with a line that is not a request record is skipped like any other file.

A result's energy keys (issue 17, RESULT_ENERGY: what bench_run's telemetry measured of the repeat) are checked like
its other numbers; a result from before telemetry has none of them and reads as if they were null.

Stages run side by side (issue 19): a plan stage's wave, wave_stages and interference_of and a status.json's
ran_beside, wave and interference_of are checked when present; results from before them read as stages run alone
(ran_beside, interference_of, stage_wave).
"""

from __future__ import annotations

import json
import os
import re
import string

from ansible_collections.specdec.bench.plugins.module_utils._common import ID_PATTERN, ID_RE, RESULTS_LAYOUT, finite
from ansible_collections.specdec.bench.plugins.plugin_utils.report_time import TIMING_FILE, check_timing

# What the report reads of the normalized harness result (plugins/module_utils/_harness.py RESULT_KEYS).
RESULT_NUMBERS = (
    'output_throughput', 'accept_length', 'accept_length_source', 'request_throughput', 'completed', 'failed',
    'duration_s', 'mean_ttft_ms', 'median_ttft_ms', 'p99_ttft_ms', 'mean_itl_ms', 'median_itl_ms', 'p99_itl_ms',
    'median_tpot_ms', 'p99_tpot_ms', 'median_e2e_latency_ms', 'p99_e2e_latency_ms', 'harness',
)
# What the report reads of a result with a dataset (issue 15); an older result has none of them (null in the row).
RESULT_WORKLOAD = (
    'dataset_kind', 'dataset_source', 'dataset_source_sha256', 'dataset_sha256', 'prompts_sha256', 'template_sha256', 'turns',
    'top_p', 'top_k', 'ignore_eos', 'max_new_tokens', 'requests', 'mean_output_len', 'accept_length_server_info',
    'accept_length_disagreement', 'accept_length_flag', 'accept_length_p10', 'accept_length_median', 'accept_length_p90',
)
# A row is measured when its stage ran and the run at that concurrency completed every prompt.
MEASURED = 'ok'
# Of a result file's keys that the report reads, the counts, the texts and the flags; the others are finite numbers
# or null.
RESULT_COUNTS = ('completed', 'failed', 'num_prompts', 'requests', 'max_new_tokens')
RESULT_TEXTS = ('accept_length_source', 'harness', 'dataset', 'dataset_kind', 'dataset_source', 'dataset_source_sha256',
                'dataset_sha256', 'prompts_sha256', 'template_sha256', 'turns')
RESULT_FLAGS = ('ignore_eos', 'accept_length_flag')
# What the report reads of a repeat's energy (issue 17, bench_run's telemetry); a result without them reads as null.
# The numbers are finite and 0 or more, energy_samples a count, gpu_throttled a list of clock event reason names.
RESULT_ENERGY_NUMBERS = ('energy_j', 'avg_power_w', 'idle_power_w', 'output_tokens_per_j', 'j_per_output_token')
RESULT_ENERGY_TEXTS = ('energy_method', 'energy_backend', 'power_source', 'telemetry_file', 'energy_note')
RESULT_ENERGY = RESULT_ENERGY_NUMBERS + RESULT_ENERGY_TEXTS + ('energy_samples', 'gpu_throttled')
# The dataset and temperature of a run whose workload names none (today's random prompts, greedy).
RANDOM = 'random'
DEFAULT_TEMPERATURE = 0.0
# The result file name before datasets and temperatures (0.4): such a run is (RANDOM, DEFAULT_TEMPERATURE).
LEGACY_RESULT = 'result-c{concurrency}.json'
# The result file name before repeats (issue 16): such a file is repeat 1 of its run.
PREVIOUS_RESULT = 'result-{dataset}-t{temperature}-c{concurrency}.json'
# The raw file beside a result of each earlier layout.
EARLIER_RAW = {PREVIOUS_RESULT: 'raw-{dataset}-t{temperature}-c{concurrency}.jsonl', LEGACY_RESULT: 'raw-c{concurrency}.jsonl'}


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
    """Issue 19's keys of a plan stage or a status.json, each tolerated absent (results from before them): wave (a
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
    """A stage's draft_checkpoint (issue 18: the drafter checkpoint a stage of a checkpoint sweep measures), the keys
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
    """The plan's workload keys of issue 15: datasets (validated entries) and temperature (a number or a list)."""
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
    """A result file, as the harness writes it (plugins/module_utils/_harness.py): finite numbers or null."""
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


# The schema of each file of the results layout (module_utils/_common.py RESULTS_LAYOUT), by its layout key.
SCHEMAS = {'campaign': check_plan, 'status': check_status, 'result': check_result, 'server_info': check_server_info,
           'gpus': check_gpus, 'timing': check_timing}


class _Reader:
    """Reads the files of one results folder, each checked against its schema; keeps the skipped ones."""

    def __init__(self, results_root):
        self.results_root = results_root
        self.skipped = []
        self._reasons = {}  # path as read: why it was skipped

    def read(self, path, kind):
        """The document at path when it is of its kind; None when absent or skipped (then listed in self.skipped)."""
        try:
            with open(path, 'rb') as handle:
                data = handle.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            return self._skip(path, 'unreadable: %s' % (exc.strerror or exc))
        try:  # NaN and infinities parse; the schemas refuse them where the report reads a number
            doc = json.loads(data)
        except ValueError as exc:
            return self._skip(path, 'not valid JSON: %s' % exc)
        reason = SCHEMAS[kind](doc)
        if reason:
            return self._skip(path, reason)
        return doc

    def read_records(self, path):
        """The records of a raw file (JSON lines), each a request record; None when absent or skipped."""
        try:
            with open(path, 'rb') as handle:
                lines = handle.read().splitlines()
        except FileNotFoundError:
            return None
        except OSError as exc:
            return self._skip(path, 'unreadable: %s' % (exc.strerror or exc))
        records = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                return self._skip(path, 'line %d is not valid JSON: %s' % (number, exc))
            reason = check_raw_record(record)
            if reason:
                return self._skip(path, 'line %d: %s' % (number, reason))
            records.append(record)
        return records

    def _skip(self, path, reason):
        self.skipped.append({'path': os.path.relpath(path, self.results_root).replace(os.sep, '/'), 'reason': reason})
        self._reasons[path] = reason
        return None

    def reason(self, path):
        """Why the file at path was skipped, as a row gives it ('status.json skipped: ...'); None when it was not."""
        reason = self._reasons.get(path)
        return None if reason is None else '%s skipped: %s' % (os.path.basename(path), reason)


# What each field of a result file name matches: a dataset is an id, a temperature as temperature_tag writes it.
_NAME_FIELDS = {'dataset': '(?P<dataset>%s)' % ID_PATTERN, 'temperature': '(?P<temperature>[0-9][0-9.e+-]*)',
                'concurrency': '(?P<concurrency>[0-9]+)', 'repeat': '(?P<repeat>[0-9]+)'}


def result_name_regex(pattern):
    """The regex of a result file name pattern ('result-{dataset}-t{temperature}-c{concurrency}.json')."""
    parts = []
    for literal, field, _spec, _conversion in string.Formatter().parse(pattern):
        parts.append(re.escape(literal))
        if field is not None:
            parts.append(_NAME_FIELDS[field])
    return re.compile(r'%s\Z' % ''.join(parts))  # \Z, not $: a name with a final newline is no result file


def run_key(match):
    """(dataset, temperature, concurrency) of a matched result file name; None when its temperature is no number."""
    fields = match.groupdict()
    temperature = finite(fields.get('temperature', DEFAULT_TEMPERATURE))
    if temperature is None or temperature < 0:
        return None
    return (fields.get('dataset') or RANDOM, temperature, int(fields['concurrency']))


def _patterns(layout):
    """The result name patterns a stage folder may hold, the layout's first, each with its raw file's pattern."""
    patterns = [(layout['result'], layout.get('raw'))]
    for pattern in (PREVIOUS_RESULT, LEGACY_RESULT):
        if pattern != layout['result']:
            patterns.append((pattern, EARLIER_RAW[pattern]))
    return patterns


def find_runs(names, layout):
    """{(dataset, temperature, concurrency): {repeat: (result file name, raw file name or None)}} among names: the
    layout's result files, and those of the earlier layouts (PREVIOUS_RESULT, LEGACY_RESULT, each repeat 1); the
    layout's file wins a repeat that two name. A repeat 0 is no repeat (they count from 1)."""
    found = {}
    for pattern, raw_pattern in reversed(_patterns(layout)):
        regex = result_name_regex(pattern)
        for name in sorted(names):
            match = regex.match(name)
            key = run_key(match) if match else None
            repeat = int(match.group('repeat')) if key is not None and 'repeat' in regex.groupindex else 1
            if key is None or repeat < 1:
                continue
            raw = raw_pattern.format(**match.groupdict()) if raw_pattern else None
            found.setdefault(key, {})[repeat] = (name, raw)
    return found


def find_results(names, layout):
    """{(dataset, temperature, concurrency): {repeat: result file name}} of the result files among names (find_runs)."""
    return {run: {repeat: files[0] for repeat, files in repeats.items()} for run, repeats in find_runs(names, layout).items()}


def planned_runs(stage):
    """The runs a stage's plan names: its datasets x temperatures x concurrencies (random at 0 without datasets)."""
    workload = stage.get('workload') or {}
    datasets = [item['name'] for item in workload.get('datasets') or []] or [RANDOM]
    temperatures = workload.get('temperature')
    if temperatures is None:
        temperatures = [DEFAULT_TEMPERATURE]
    elif not isinstance(temperatures, list):
        temperatures = [temperatures]
    return [(dataset, float(temperature), concurrency) for dataset in datasets for temperature in temperatures
            for concurrency in stage.get('concurrency') or []]


def categorized(entry):
    """The names of the datasets of a stage whose prepared entry (status.json's, else the plan's) names two or more
    categories: their raw records are read for the per-category rows."""
    names = set()
    items = list((entry['status'] or {}).get('datasets') or []) + list((entry['stage'].get('workload') or {}).get('datasets') or [])
    for item in items:
        if isinstance(item.get('categories'), dict) and len(item['categories']) >= 2:
            names.add(item['name'])
    return names


def _stage_from_id(stage_id, campaign):
    """A stage that campaign.json does not list (a folder from elsewhere): what its id tells."""
    match = re.match(r'^tp([0-9]+)-([a-z0-9.]+)', stage_id)
    return {'id': stage_id, 'campaign': campaign, 'method': match.group(2) if match else None,
            'tp': int(match.group(1)) if match else None, 'params': {}, 'concurrency': [], 'feasible': None}


def read_host(results_root, host, campaign, layout=None):
    """What was collected for one host and campaign: the plan and every stage's status, results and snapshots.

    layout: the file names of the results folder, RESULTS_LAYOUT when None.
    Returns {'host', 'campaign', 'found', 'plan', 'timing' (the campaign's timing.json, report_time; None when absent),
    'stages': [{'stage': plan entry, 'status', 'results': {run: {repeat: result}}, 'raw': {run: {repeat: [record, ...]}},
    'server_info', 'gpus', 'skipped': {'status': reason, 'results': {run: reason}}}], 'skipped_files': [{'path',
    'reason'}]} in plan order, a run being (dataset,
    temperature, concurrency) and a repeat its number (1 for a file of an earlier layout); stage folders that the
    plan does not list follow, sorted. A stage's runs are those its plan names (planned_runs) and those it has result
    files of. 'raw' holds the records of the runs of categorized() datasets only. A file that is not of its schema is
    skipped (None, as if absent) and listed in skipped_files with its path relative to results_root; a run's skipped
    reason is its first skipped repeat's.
    """
    layout = layout or RESULTS_LAYOUT
    folder = os.path.join(results_root, host, campaign)
    reader = _Reader(results_root)
    data = {'host': host, 'campaign': campaign, 'found': os.path.isdir(folder), 'plan': None, 'timing': None, 'stages': [],
            'skipped_files': reader.skipped}
    if not data['found']:
        return data
    plan = reader.read(os.path.join(folder, layout['campaign']), 'campaign')
    data['plan'] = plan
    data['timing'] = reader.read(os.path.join(folder, layout.get('timing', TIMING_FILE)), 'timing')
    planned = list((plan or {}).get('stages') or [])
    names = set(planned_stage['id'] for planned_stage in planned)
    extra = sorted(name for name in os.listdir(folder)
                   if name not in names and not name.startswith('.') and os.path.isdir(os.path.join(folder, name)))
    for stage in planned + [_stage_from_id(name, campaign) for name in extra]:
        stage_dir = os.path.join(folder, stage['id'])
        entry = {'stage': stage, 'status': None, 'results': {}, 'raw': {}, 'server_info': None, 'gpus': None,
                 'skipped': {'status': None, 'results': {}}}
        data['stages'].append(entry)
        if not os.path.isdir(stage_dir):
            continue
        status_path = os.path.join(stage_dir, layout['status'])
        entry['status'] = reader.read(status_path, 'status')
        entry['skipped']['status'] = reader.reason(status_path)
        if entry['status'] is not None and entry['status']['status'] == MEASURED:
            _read_runs(reader, stage_dir, layout, entry)
            entry['server_info'] = reader.read(os.path.join(stage_dir, layout['server_info']), 'server_info')
        entry['gpus'] = reader.read(os.path.join(stage_dir, layout['gpus']), 'gpus')
    return data


def _read_runs(reader, stage_dir, layout, entry):
    """Fill a measured stage's results, raw records and skipped results from its folder."""
    files = find_runs(os.listdir(stage_dir), layout)
    wanted = categorized(entry)
    for run in sorted(files):
        results = entry['results'][run] = {}
        for repeat in sorted(files[run]):
            name, raw = files[run][repeat]
            result_path = os.path.join(stage_dir, name)
            results[repeat] = reader.read(result_path, 'result')
            if results[repeat] is None and run not in entry['skipped']['results'] and reader.reason(result_path):
                entry['skipped']['results'][run] = reader.reason(result_path)
            if run[0] in wanted and raw and results[repeat] is not None:
                records = reader.read_records(os.path.join(stage_dir, raw))
                if records is not None:
                    entry['raw'].setdefault(run, {})[repeat] = records


def ran_beside(entry):
    """The ids of the other stages in flight with a stage (status.json's ran_beside, issue 19); [] when it ran alone,
    did not run, or its status is from before the key."""
    return list((entry.get('status') or {}).get('ran_beside') or [])


def interference_of(entry):
    """The id of the stage an interference stage re-runs alone (the plan's interference_of, else its status.json's);
    None for every other stage."""
    return entry['stage'].get('interference_of') or (entry.get('status') or {}).get('interference_of')


def stage_wave(entry):
    """The wave a stage ran in (the plan's, else its status.json's); None when neither names one."""
    wave = entry['stage'].get('wave')
    return wave if wave is not None else (entry.get('status') or {}).get('wave')


def find_hosts(results_root, campaign):
    """The hosts under results_root that hold the campaign, sorted."""
    try:
        names = os.listdir(results_root)
    except FileNotFoundError:
        return []
    return sorted(name for name in names if os.path.isdir(os.path.join(results_root, name, campaign)))
