# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report: collected results of one or more hosts -> rows, Markdown, LaTeX, CSV, JSON, plots, comparison.

Controller side, used by the specdec.bench.report action. Reading and rendering are pure functions of the
collected folders (<results>/<host>/<campaign>/, laid out as roles/results_dir names it), each file checked against
the schema of its kind (a bad one is skipped and listed); only write_set writes, the files as a set, and it rewrites a
file only when its content changed, so a second run with the same results changes nothing.

Definitions (as in the DFlash and DDTree papers):
- speedup: output throughput (tokens/s) of a stage over that of the baseline method (autoregressive) on the same host,
  TP and concurrency. Empty when that baseline was not measured: never guessed from another TP or concurrency.
- acceptance length tau: tokens per verify step as the server reports it (/server_info avg_spec_accept_length, or the
  requests' meta_info); autoregressive decoding reports none (it is 1 by definition).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import re
import shutil
import tempfile

BASELINE_METHOD = 'autoregressive'
ID_PATTERN = r'^[a-z0-9][a-z0-9._-]*$'
_ID_RE = re.compile(ID_PATTERN)
# Methods and parameters as a reader of the papers knows them; anything else is shown as it is named.
METHOD_NAMES = {'autoregressive': 'AR', 'dflash': 'DFlash', 'ddtree': 'DDTree'}
PARAM_NAMES = {'budget': 'B', 'topk': 'k', 'num_draft_tokens': 'n'}
# The sweep parameter of the budget plots.
BUDGET_PARAM = 'budget'
# Every column of results.csv, in order; results.json rows carry the same keys.
ROW_KEYS = (
    'host', 'campaign', 'stage', 'method', 'setting', 'tp', 'budget', 'topk', 'num_draft_tokens', 'concurrency',
    'status', 'reason', 'output_throughput', 'speedup', 'baseline_stage', 'accept_length', 'accept_length_source',
    'request_throughput', 'completed', 'failed', 'duration_s',
    'mean_ttft_ms', 'median_ttft_ms', 'p99_ttft_ms', 'mean_itl_ms', 'median_itl_ms', 'p99_itl_ms',
    'median_tpot_ms', 'p99_tpot_ms', 'median_e2e_latency_ms', 'p99_e2e_latency_ms',
    'harness', 'gpu_name', 'gpu_count', 'gpus', 'driver', 'cuda', 'model', 'draft', 'sglang_version', 'sglang_build',
)
# Numbers copied from the normalized harness result (plugins/module_utils/_harness.py RESULT_KEYS).
RESULT_NUMBERS = (
    'output_throughput', 'accept_length', 'accept_length_source', 'request_throughput', 'completed', 'failed',
    'duration_s', 'mean_ttft_ms', 'median_ttft_ms', 'p99_ttft_ms', 'mean_itl_ms', 'median_itl_ms', 'p99_itl_ms',
    'median_tpot_ms', 'p99_tpot_ms', 'median_e2e_latency_ms', 'p99_e2e_latency_ms', 'harness',
)
# A row is measured when its stage ran and the run at that concurrency completed every prompt.
MEASURED = 'ok'
COMPARE_KEYS = (
    'host', 'stage', 'setting', 'tp', 'concurrency', 'status_before', 'status_after',
    'output_throughput_before', 'output_throughput_after', 'output_throughput_delta_pct',
    'speedup_before', 'speedup_after', 'speedup_delta',
    'accept_length_before', 'accept_length_after', 'accept_length_delta',
    'median_ttft_ms_before', 'median_ttft_ms_after', 'median_ttft_ms_delta_pct',
    'median_itl_ms_before', 'median_itl_ms_after', 'median_itl_ms_delta_pct',
)


class ReportError(ValueError):
    """Bad input to the report: the message names the field and what is allowed."""


# ---------------------------------------------------------------------------------------------------------------
# Reading the collected results
#
# Every file is checked against the schema of its kind before the report uses it: one pure check per kind (check_plan,
# check_status, check_result, check_server_info, check_gpus) returns None or why the document is not of its kind. A
# file that is unreadable, not JSON or not of its kind is skipped as if it were absent, and listed with its path and
# reason (skipped_files in the report, report.md, results.json and the action's return).

STAGE_ID_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]*$')
# Of a result file's keys that the report reads, the counts and the texts; the others are finite numbers or null.
RESULT_COUNTS = ('completed', 'failed', 'num_prompts')
RESULT_TEXTS = ('accept_length_source', 'harness')


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
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


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
    if not isinstance(stage.get('id'), str) or not STAGE_ID_RE.match(stage['id']):
        return _bad(field + '.id', stage.get('id'), 'a stage id matching %s (it names the stage folder)' % STAGE_ID_RE.pattern)
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
    return _first(_optional_str(stage, key) for key in ('method', 'reason', 'model_path', 'draft_path'))


def build_label(build):
    """'sglang-ddtree-pr29907 (0.5.23+sim in /usr/bin/python3)': the profile and the SGLang the stage's flags were for."""
    if not build or not build.get('name'):
        return None
    found = build.get('version') or (('release %s' % build['release']) if build.get('release') else None)
    where = ' in %s' % build['python'] if build.get('python') else ''
    return '%s (%s%s)' % (build['name'], found or 'version unknown', where) if found or where else build['name']


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
    return _optional_str(doc, 'reason')


def check_result(doc):
    """result-c<N>.json, as the harness writes it (plugins/module_utils/_harness.py): finite numbers or null."""
    reason = _check_object(doc)
    if reason:
        return reason
    if doc.get('complete') is not None and not isinstance(doc['complete'], bool):
        return _bad('complete', doc['complete'], 'true or false')
    for key in RESULT_NUMBERS + ('num_prompts',):
        value = doc.get(key)
        if value is None:
            continue
        if key in RESULT_TEXTS:
            if not isinstance(value, str):
                return _bad(key, value, 'a string or null')
        elif key in RESULT_COUNTS:
            if not _is_count(value):
                return _bad(key, value, 'a count (an integer, 0 or more) or null')
        elif not _is_finite(value):
            return _bad(key, value, 'a finite number or null')
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


# The schema of each file of the layout (roles/results_dir results_dir_layout), by its layout key.
SCHEMAS = {'campaign': check_plan, 'status': check_status, 'result': check_result, 'server_info': check_server_info,
           'gpus': check_gpus}


class _Reader:
    """Reads the files of one results folder, each checked against its schema; keeps the skipped ones."""

    def __init__(self, results_root):
        self.results_root = results_root
        self.skipped = []

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

    def _skip(self, path, reason):
        self.skipped.append({'path': os.path.relpath(path, self.results_root).replace(os.sep, '/'), 'reason': reason})
        return None

    def reason(self, path):
        """Why the file at path was skipped, as a row gives it ('status.json skipped: ...'); None when it was not."""
        relative = os.path.relpath(path, self.results_root).replace(os.sep, '/')
        for item in self.skipped:
            if item['path'] == relative:
                return '%s skipped: %s' % (os.path.basename(path), item['reason'])
        return None


def _result_name_regex(layout):
    prefix, _sep, suffix = layout['result'].partition('{concurrency}')
    return re.compile('^%s([0-9]+)%s$' % (re.escape(prefix), re.escape(suffix)))


def _stage_from_id(stage_id, campaign):
    """A stage that campaign.json does not list (a folder from elsewhere): what its id tells."""
    match = re.match(r'^tp([0-9]+)-([a-z0-9.]+)', stage_id)
    return {'id': stage_id, 'campaign': campaign, 'method': match.group(2) if match else None,
            'tp': int(match.group(1)) if match else None, 'params': {}, 'concurrency': [], 'feasible': None}


def read_host(results_root, host, campaign, layout):
    """What was collected for one host and campaign: the plan and every stage's status, results and snapshots.

    Returns {'host', 'campaign', 'found', 'plan', 'stages': [{'stage': plan entry, 'status', 'results': {c: row},
    'server_info', 'gpus', 'skipped': {'status': reason, 'results': {c: reason}}}], 'skipped_files': [{'path',
    'reason'}]} in plan order; stage folders that the plan does not list follow, sorted. A file that is not of its
    schema is skipped (None, as if absent) and listed in skipped_files with its path relative to results_root.
    """
    folder = os.path.join(results_root, host, campaign)
    reader = _Reader(results_root)
    data = {'host': host, 'campaign': campaign, 'found': os.path.isdir(folder), 'plan': None, 'stages': [],
            'skipped_files': reader.skipped}
    if not data['found']:
        return data
    plan = reader.read(os.path.join(folder, layout['campaign']), 'campaign')
    data['plan'] = plan
    planned = list((plan or {}).get('stages') or [])
    names = set(planned_stage['id'] for planned_stage in planned)
    extra = sorted(name for name in os.listdir(folder)
                   if name not in names and not name.startswith('.') and os.path.isdir(os.path.join(folder, name)))
    result_re = _result_name_regex(layout)
    for stage in planned + [_stage_from_id(name, campaign) for name in extra]:
        stage_dir = os.path.join(folder, stage['id'])
        entry = {'stage': stage, 'status': None, 'results': {}, 'server_info': None, 'gpus': None,
                 'skipped': {'status': None, 'results': {}}}
        data['stages'].append(entry)
        if not os.path.isdir(stage_dir):
            continue
        status_path = os.path.join(stage_dir, layout['status'])
        entry['status'] = reader.read(status_path, 'status')
        entry['skipped']['status'] = reader.reason(status_path)
        if entry['status'] is not None and entry['status']['status'] == MEASURED:
            concurrencies = list(stage.get('concurrency') or [])
            if not concurrencies:
                concurrencies = sorted(int(m.group(1)) for m in map(result_re.match, os.listdir(stage_dir)) if m)
            for concurrency in concurrencies:
                result_path = os.path.join(stage_dir, layout['result'].format(concurrency=concurrency))
                entry['results'][concurrency] = reader.read(result_path, 'result')
                if reader.reason(result_path):
                    entry['skipped']['results'][concurrency] = reader.reason(result_path)
            entry['server_info'] = reader.read(os.path.join(stage_dir, layout['server_info']), 'server_info')
        entry['gpus'] = reader.read(os.path.join(stage_dir, layout['gpus']), 'gpus')
    return data


def find_hosts(results_root, campaign):
    """The hosts under results_root that hold the campaign, sorted."""
    try:
        names = os.listdir(results_root)
    except FileNotFoundError:
        return []
    return sorted(name for name in names if os.path.isdir(os.path.join(results_root, name, campaign)))


# ---------------------------------------------------------------------------------------------------------------
# Rows

def setting_label(method, params):
    """How a paper names a setting: 'DDTree B=64 k=4', 'DFlash n=16', 'AR'."""
    parts = [METHOD_NAMES.get(method, method or '?')]
    for name in sorted(params or {}, key=lambda n: (list(PARAM_NAMES).index(n) if n in PARAM_NAMES else 99, n)):
        parts.append('%s=%s' % (PARAM_NAMES.get(name, name), params[name]))
    return ' '.join(parts)


def _number(value):
    if value is None or isinstance(value, bool):
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _stage_gpus(stage, gpus_doc):
    """(names of the stage's GPUs, how many, driver, CUDA) from its GPU snapshot."""
    gpus_doc = gpus_doc or {}
    listed = gpus_doc.get('nvidia_gpus') or []
    wanted = set(stage.get('gpus') or [])
    mine = [gpu for gpu in listed if gpu.get('uuid') in wanted] if wanted else listed
    names = []
    for gpu in mine:
        if gpu.get('name') and gpu['name'] not in names:
            names.append(gpu['name'])
    driver = gpus_doc.get('nvidia_driver') or {}
    return ' + '.join(names) or None, len(mine) or None, driver.get('version'), driver.get('cuda_version')


# The status of a row whose status.json or result file was skipped (not of its schema); its reason names the file.
INVALID = 'invalid'


def _row_status(stage_status, result, skipped=None):
    """The status of one (stage, concurrency) row: ok only when the run completed every prompt."""
    if skipped:
        return INVALID
    if stage_status is None:
        return 'not run'
    status = stage_status.get('status') or 'unknown'
    if status != MEASURED:
        return status
    if result is None:
        return 'missing'
    return MEASURED if result.get('complete') else 'incomplete'


def stage_rows(host, campaign, entry):
    """One row per concurrency of a stage (its planned ones; those with results when the plan has none)."""
    stage, status = entry['stage'], entry['status']
    params = stage.get('params') or {}
    server_info = entry['server_info'] or {}
    gpu_name, gpu_count, driver, cuda = _stage_gpus(stage, entry['gpus'])
    reason = (status or {}).get('reason')
    if status is None:
        reason = entry['skipped']['status'] or stage.get('reason') or 'no status.json: the stage never ran'
    base = {
        'host': host, 'campaign': campaign, 'stage': stage['id'], 'method': stage.get('method'),
        'setting': setting_label(stage.get('method'), params), 'tp': stage.get('tp'),
        'budget': params.get('budget'), 'topk': params.get('topk'), 'num_draft_tokens': params.get('num_draft_tokens'),
        'reason': reason,
        'gpu_name': gpu_name, 'gpu_count': gpu_count, 'gpus': ','.join(stage.get('gpus') or []) or None,
        'driver': driver, 'cuda': cuda,
        'model': server_info.get('model_path') or stage.get('model_path'),
        'draft': server_info.get('speculative_draft_model_path') or stage.get('draft_path'),
        'sglang_version': server_info.get('version') or (stage.get('sglang_build') or {}).get('version'),
        'sglang_build': (stage.get('sglang_build') or {}).get('name'),
    }
    concurrencies = sorted(set(stage.get('concurrency') or []) | set(entry['results']))
    rows = []
    for concurrency in concurrencies:
        result = entry['results'].get(concurrency)
        row = dict.fromkeys(ROW_KEYS)
        row.update(base)
        row['concurrency'] = concurrency
        skipped = entry['skipped']['status'] or entry['skipped']['results'].get(concurrency)
        row['status'] = _row_status(status, result, skipped)
        if row['status'] == INVALID:
            row['reason'] = skipped
        elif row['status'] in ('missing', 'incomplete'):
            row['reason'] = ('no result file for this concurrency' if result is None else
                             'incomplete run: %s of %s prompts completed' % (result.get('completed'), result.get('num_prompts')))
        if result is not None:
            for key in RESULT_NUMBERS:
                value = result.get(key)
                row[key] = value if key in ('accept_length_source', 'harness') else _number(value)
            for key in ('completed', 'failed'):
                row[key] = int(row[key]) if row[key] is not None else None
        rows.append(row)
    return rows


def add_speedup(rows, baseline_method=BASELINE_METHOD):
    """Fill speedup: output throughput over the baseline's on the same host, TP and concurrency; empty without one."""
    baselines = {}
    for row in rows:
        if row['method'] == baseline_method and row['status'] == MEASURED and row['output_throughput']:
            baselines.setdefault((row['host'], row['tp'], row['concurrency']), []).append(row)
    for row in rows:
        row['speedup'] = None
        row['baseline_stage'] = None
        if row['status'] != MEASURED or row['output_throughput'] is None:
            continue
        candidates = baselines.get((row['host'], row['tp'], row['concurrency'])) or []
        if len(candidates) > 1:  # the same TP on other GPUs: only the baseline on the same GPUs counts
            candidates = [c for c in candidates if c['gpus'] == row['gpus']]
        if len(candidates) == 1:
            row['speedup'] = row['output_throughput'] / candidates[0]['output_throughput']
            row['baseline_stage'] = candidates[0]['stage']
    return rows


def _environment(host_data):
    """The host's environment as its stages recorded it: GPUs, driver, CUDA, SGLang version(s), model, draft."""
    gpus, drivers, cudas, versions, models, drafts, builds = {}, [], [], [], [], [], []

    def note(values, value):
        if value and value not in values:
            values.append(value)
    for entry in host_data['stages']:
        doc = entry['gpus'] or {}
        for gpu in doc.get('nvidia_gpus') or []:
            gpus.setdefault(gpu.get('uuid') or gpu.get('index'), gpu)
        note(drivers, (doc.get('nvidia_driver') or {}).get('version'))
        note(cudas, (doc.get('nvidia_driver') or {}).get('cuda_version'))
        info = entry['server_info'] or {}
        note(versions, info.get('version'))
        note(builds, build_label(entry['stage'].get('sglang_build')))
        note(models, info.get('model_path') or entry['stage'].get('model_path'))
        note(drafts, info.get('speculative_draft_model_path') or entry['stage'].get('draft_path'))
    kinds = {}
    for gpu in sorted(gpus.values(), key=lambda g: (g.get('index') is None, g.get('index'))):
        key = (gpu.get('name') or 'unknown GPU', gpu.get('memory_total_mib'))
        kinds[key] = kinds.get(key, 0) + 1
    workload = {}
    for entry in host_data['stages']:
        if entry['stage'].get('workload'):
            workload = entry['stage']['workload']
            break
    return {
        'gpus': [{'name': name, 'memory_total_mib': mib, 'count': count} for (name, mib), count in kinds.items()],
        'driver': ', '.join(drivers) or None, 'cuda': ', '.join(cudas) or None,
        'sglang_version': ', '.join(versions) or None, 'sglang_build': ', '.join(builds) or None,
        'model': ', '.join(models) or None,
        'draft': ', '.join(drafts) or None, 'workload': workload,
    }


def _sort_key(row, method_order):
    params = (row['budget'] or 0, row['topk'] or 0, row['num_draft_tokens'] or 0)
    return (row['host'], row['tp'] or 0, method_order.get(row['method'], len(method_order)), params, row['stage'],
            row['concurrency'] or 0)


def build_report(host_data, campaign, baseline_method=BASELINE_METHOD):
    """The report's data from read_host() of each host: rows (speedup filled), environments, not-measured stages, best."""
    rows = []
    for data in host_data:
        for entry in data['stages']:
            rows.extend(stage_rows(data['host'], campaign, entry))
    add_speedup(rows, baseline_method)
    method_order = {baseline_method: 0}
    for row in rows:
        method_order.setdefault(row['method'], len(method_order))
    rows.sort(key=lambda r: _sort_key(r, method_order))
    not_measured = []
    for data in host_data:
        for entry in data['stages']:
            status = INVALID if entry['skipped']['status'] else (entry['status'] or {}).get('status') or 'not run'
            if status != MEASURED:
                not_measured.append({
                    'host': data['host'], 'stage': entry['stage']['id'], 'tp': entry['stage'].get('tp'),
                    'setting': setting_label(entry['stage'].get('method'), entry['stage'].get('params')),
                    'status': status,
                    'reason': entry['skipped']['status'] or (entry['status'] or {}).get('reason') or entry['stage'].get('reason')
                    or ('no status.json: the stage never ran' if entry['status'] is None else None),
                })
    return {
        'campaign': campaign,
        'baseline_method': baseline_method,
        'hosts': [{'host': data['host'], 'found': data['found'], 'stages': len(data['stages']),
                   'environment': _environment(data)} for data in host_data],
        'rows': rows,
        'not_measured': not_measured,
        'best': best_settings(rows, baseline_method),
        'skipped_files': sorted((item for data in host_data for item in data.get('skipped_files', [])), key=lambda item: item['path']),
    }


def best_settings(rows, baseline_method=BASELINE_METHOD):
    """Per host, TP and concurrency, the measured row with the highest output throughput."""
    best = {}
    for row in rows:
        if row['status'] != MEASURED or row['output_throughput'] is None:
            continue
        key = (row['host'], row['tp'], row['concurrency'])
        if key not in best or row['output_throughput'] > best[key]['output_throughput']:
            best[key] = row
    return [{'host': row['host'], 'tp': row['tp'], 'concurrency': row['concurrency'], 'stage': row['stage'],
             'setting': row['setting'], 'output_throughput': row['output_throughput'], 'speedup': row['speedup'],
             'accept_length': row['accept_length'], 'is_baseline': row['method'] == baseline_method}
            for _key, row in sorted(best.items(), key=lambda item: (item[0][0], item[0][1] or 0, item[0][2] or 0))]


# ---------------------------------------------------------------------------------------------------------------
# Rendering

def _csv_value(value):
    if value is None:
        return ''
    if isinstance(value, bool):
        return 'true' if value else 'false'
    return value


def render_csv(rows, keys=ROW_KEYS):
    out = io.StringIO()
    writer = csv.writer(out, lineterminator='\n')
    writer.writerow(keys)
    for row in rows:
        writer.writerow([_csv_value(row.get(key)) for key in keys])
    return out.getvalue()


def render_json(report):
    return json.dumps(report, indent=2, sort_keys=False, allow_nan=False) + '\n'


def _fmt(value, digits=2, suffix=''):
    return '–' if value is None else '%.*f%s' % (digits, value, suffix)


def _groups(rows):
    """{(host, tp): {'settings': [(stage, setting, method)], 'concurrency': [...], 'cells': {(stage, c): row}}} in row order."""
    groups = {}
    for row in rows:
        group = groups.setdefault((row['host'], row['tp']), {'settings': [], 'concurrency': [], 'cells': {}})
        setting = (row['stage'], row['setting'], row['method'])
        if setting not in group['settings']:
            group['settings'].append(setting)
        if row['concurrency'] not in group['concurrency']:
            group['concurrency'].append(row['concurrency'])
        group['cells'][(row['stage'], row['concurrency'])] = row
    for group in groups.values():
        group['concurrency'].sort()
    return groups


def _best_stage(group, concurrency):
    best = None
    for (stage, _setting, _method) in group['settings']:
        row = group['cells'].get((stage, concurrency))
        if row and row['status'] == MEASURED and row['output_throughput'] is not None:
            if best is None or row['output_throughput'] > best['output_throughput']:
                best = row
    return best


# Text from a host (reasons, settings, versions, GPU names, folder names) is data in report.md, never markup: HTML's
# <, > and & become entities, a table pipe and Markdown's own \\ ` [ ] are backslash-escaped, line breaks are spaces.
_MD_SPECIAL = {'&': '&amp;', '<': '&lt;', '>': '&gt;', '|': '\\|', '\\': '\\\\', '`': '\\`', '[': '\\[', ']': '\\]',
               '\n': ' ', '\r': ' '}
_MD_CODE_RE = re.compile(r'^[A-Za-z0-9._:/@+=, -]+$')


def md_escape(text):
    return ''.join(_MD_SPECIAL.get(char, char) for char in str(text))


def _md_code(text):
    """Text from a host as inline code when that is safe (an id, a path), else escaped plain text."""
    text = str(text)
    return '`%s`' % text if _MD_CODE_RE.match(text) else md_escape(text)


def _gpu_line(env):
    if not env['gpus']:
        return 'none recorded'
    return ', '.join('%d× %s%s' % (gpu['count'], md_escape(gpu['name']), ' (%s MiB)' % gpu['memory_total_mib'] if gpu['memory_total_mib'] else '')
                     for gpu in env['gpus'])


def render_markdown(report, plots=None):
    """report.md: per host the environment, then per TP a table of settings against concurrency, then what did not run."""
    plots = plots or {}
    lines = ['# Campaign `%s`: speculative decoding benchmark' % report['campaign'], '']
    lines += [
        'Each cell: output throughput (tok/s) · speedup over %s at the same host, TP and concurrency · '
        'acceptance length τ (tokens per verify step, as the server reports it). **Bold**: the best throughput '
        'at that concurrency. – : not measured; a speedup is left empty when its %s baseline was not measured.'
        % (METHOD_NAMES.get(report['baseline_method'], report['baseline_method']), report['baseline_method']), '',
        'Settings: AR is autoregressive decoding (the baseline, τ = 1 by definition); DFlash n=… drafts a block of n tokens '
        'and verifies it linearly; DDTree B=… k=… verifies a tree of at most B draft tokens built from the top-k candidates '
        'at each DFlash position. Stage ids (`tp4-ddtree-b64-k4`) name the stage folders of the collected results.', '']
    skipped = report.get('skipped_files') or []
    if skipped:
        lines += ['## Files skipped', '',
                  '%d collected file(s) were not read: unreadable, not JSON, or not what the stage writes. Their stages show '
                  'what is known without them.' % len(skipped), '', '| file | reason |', '| --- | --- |']
        lines += ['| %s | %s |' % (_md_code(item['path']), md_escape(item['reason'])) for item in skipped]
        lines.append('')
    groups = _groups(report['rows'])
    if report['best']:
        lines += ['## Best setting per host, TP and concurrency', '',
                  '| host | TP | concurrency | best setting | tok/s | speedup | τ |', '| --- | ---: | ---: | --- | ---: | ---: | ---: |']
        for best in report['best']:
            lines.append('| %s | %s | %s | %s | %s | %s | %s |' % (
                md_escape(best['host']), best['tp'], best['concurrency'], md_escape(best['setting']),
                _fmt(best['output_throughput'], 1), _fmt(best['speedup'], 2, '×'), _fmt(best['accept_length'])))
        lines.append('')
    for host in report['hosts']:
        env = host['environment']
        lines += ['## Host %s' % _md_code(host['host']), '']
        if not host['found']:
            lines += ['Nothing was collected for this campaign from this host.', '']
            continue
        workload = env['workload'] or {}
        lines += [
            '- GPUs: %s' % _gpu_line(env),
            '- NVIDIA driver %s, CUDA %s, SGLang %s' % tuple(md_escape(env[key] or '–') for key in ('driver', 'cuda', 'sglang_version')),
            '- SGLang build profile: %s' % md_escape(env.get('sglang_build') or '– (not recorded)'),
            '- Model %s%s' % (_md_code(env['model'] or '–'), ', draft %s' % _md_code(env['draft']) if env['draft'] else ''),
            '- Workload: %s input tokens, %s output tokens, %s prompts per concurrency' % tuple(
                md_escape(workload.get(key, '–')) for key in ('input_len', 'output_len', 'num_prompts')),
            '']
        host_groups = [(key, group) for key, group in groups.items() if key[0] == host['host']]
        measured = [key for key, group in host_groups if any(r['status'] == MEASURED for r in group['cells'].values())]
        if not measured:
            lines += ['No stage of this campaign was measured on this host (see below for why).', '']
        for (_host, tp), group in host_groups:
            if (_host, tp) not in measured:
                continue
            lines += _markdown_group(tp, group, report['baseline_method'])
        for name in ('speedup', 'accept_length', 'throughput'):
            if (host['host'], name) in plots:
                lines += ['![%s](%s)' % (name.replace('_', ' '), plots[(host['host'], name)]), '']
        missing = [item for item in report['not_measured'] if item['host'] == host['host']]
        if missing:
            lines += ['### Not measured', '', '| stage | setting | TP | status | reason |', '| --- | --- | ---: | --- | --- |']
            for item in missing:
                lines.append('| %s | %s | %s | %s | %s |' % (
                    _md_code(item['stage']), md_escape(item['setting']), item['tp'], md_escape(item['status']),
                    md_escape(item['reason'] or '–')))
            lines.append('')
        not_run = set(item['stage'] for item in missing)
        partial = [row for row in report['rows'] if row['host'] == host['host'] and row['stage'] not in not_run
                   and row['status'] in ('missing', 'incomplete', INVALID)]
        if partial:
            lines += ['Runs without a complete result: ' + '; '.join(
                '%s c=%s %s (%s)' % (_md_code(row['stage']), row['concurrency'], md_escape(row['status']), md_escape(row['reason']))
                for row in partial), '']
    return '\n'.join(lines).rstrip('\n') + '\n'


def _baseline_note(group, baseline_method):
    """Why a TP table has no speedups at some concurrency: its baseline was not measured there."""
    baseline = [row for row in group['cells'].values() if row['method'] == baseline_method]
    missing = [c for c in group['concurrency']
               if not any(row['concurrency'] == c and row['status'] == MEASURED for row in baseline)]
    if not missing:
        return []
    why = '; '.join(sorted(set('%s %s%s' % (_md_code(row['stage']), md_escape(row['status']),
                                            ': %s' % md_escape(row['reason']) if row['reason'] else '')
                               for row in baseline if row['concurrency'] in missing))) or 'no %s stage at this TP' % baseline_method
    return ['No %s baseline measured at c=%s (%s): speedup left empty there.' % (
        baseline_method, ', '.join(str(c) for c in missing), why), '']


def _markdown_group(tp, group, baseline_method):
    concurrency = group['concurrency']
    gpus = next((row['gpus'] for row in group['cells'].values() if row['gpus']), None)
    lines = ['### TP%s%s' % (tp, ' (%d GPU(s))' % len(gpus.split(',')) if gpus else ''), '']
    lines.append('| setting | ' + ' | '.join('c=%s' % c for c in concurrency) + ' |')
    lines.append('| --- | ' + ' | '.join('---:' for _c in concurrency) + ' |')
    best = {c: _best_stage(group, c) for c in concurrency}
    for stage, setting, _method in group['settings']:
        cells = []
        for c in concurrency:
            row = group['cells'].get((stage, c))
            if row is None or row['status'] != MEASURED:
                cells.append('– (%s)' % (md_escape(row['status']) if row else 'not planned'))
                continue
            text = '%s · %s · τ %s' % (_fmt(row['output_throughput'], 1), _fmt(row['speedup'], 2, '×'), _fmt(row['accept_length']))
            cells.append('**%s**' % text if best[c] is row else text)
        lines.append('| %s | %s |' % (md_escape(setting), ' | '.join(cells)))
    lines.append('')
    lines += _baseline_note(group, baseline_method)
    lines.append('Latency (ms), median TTFT / median ITL / p99 ITL:')
    lines.append('')
    lines.append('| setting | ' + ' | '.join('c=%s' % c for c in concurrency) + ' |')
    lines.append('| --- | ' + ' | '.join('---:' for _c in concurrency) + ' |')
    for stage, setting, _method in group['settings']:
        cells = []
        for c in concurrency:
            row = group['cells'].get((stage, c))
            if row is None or row['status'] != MEASURED:
                cells.append('–')
            else:
                cells.append('%s / %s / %s' % (_fmt(row['median_ttft_ms'], 1), _fmt(row['median_itl_ms'], 2), _fmt(row['p99_itl_ms'], 2)))
        lines.append('| %s | %s |' % (md_escape(setting), ' | '.join(cells)))
    lines.append('')
    return lines


# < > | print as other glyphs in TeX's default font encoding; a line break in a cell or caption would end a paragraph.
_TEX_SPECIAL = {'\\': r'\textbackslash{}', '&': r'\&', '%': r'\%', '$': r'\$', '#': r'\#', '_': r'\_',
                '{': r'\{', '}': r'\}', '~': r'\textasciitilde{}', '^': r'\textasciicircum{}',
                '<': r'\textless{}', '>': r'\textgreater{}', '|': r'\textbar{}', '\n': ' ', '\r': ' '}


def tex_escape(text):
    return ''.join(_TEX_SPECIAL.get(char, char) for char in str(text))


def _tex_fmt(value, digits):
    return '--' if value is None else '%.*f' % (digits, value)


def render_latex(report):
    """report.tex: one booktabs table per host and TP (throughput, speedup, tau per concurrency), ready to \\input.

    Needs \\usepackage{booktabs} in the including document; nothing else.
    """
    out = ['%% specdec.bench report of campaign %s; needs \\usepackage{booktabs}' % tex_escape(report['campaign'])]
    groups = _groups(report['rows'])
    baseline = METHOD_NAMES.get(report['baseline_method'], report['baseline_method'])
    for (host, tp), group in groups.items():
        if not any(row['status'] == MEASURED for row in group['cells'].values()):
            continue
        concurrency = group['concurrency']
        best = {c: _best_stage(group, c) for c in concurrency}
        # Narrower with more concurrencies, so four of them still fit an article's text width (the table is a group:
        # the size and column gap end with it).
        size, gap = (r'\small', 6) if len(concurrency) <= 2 else (r'\footnotesize', 4) if len(concurrency) == 3 else (r'\scriptsize', 2)
        out += ['', r'\begin{table}[ht]', r'\centering', size, r'\setlength{\tabcolsep}{%dpt}' % gap,
                r'\begin{tabular}{l%s}' % ('rrr' * len(concurrency)), r'\toprule']
        out.append('Setting & ' + ' & '.join(r'\multicolumn{3}{c}{$c=%s$}' % c for c in concurrency) + r' \\')
        out.append(' '.join(r'\cmidrule(lr){%d-%d}' % (2 + 3 * i, 4 + 3 * i) for i in range(len(concurrency))))
        out.append(' & ' + ' & '.join(r'tok/s & $\times$ & $\tau$' for _c in concurrency) + r' \\')
        out.append(r'\midrule')
        for stage, setting, _method in group['settings']:
            cells = []
            for c in concurrency:
                row = group['cells'].get((stage, c))
                if row is None or row['status'] != MEASURED:
                    cells += ['--', '--', '--']
                    continue
                values = [_tex_fmt(row['output_throughput'], 0), _tex_fmt(row['speedup'], 2), _tex_fmt(row['accept_length'], 2)]
                if best[c] is row:
                    values = [r'\textbf{%s}' % value if value != '--' else value for value in values]
                cells += values
            out.append('%s & %s \\\\' % (tex_escape(setting), ' & '.join(cells)))
        out += [r'\bottomrule', r'\end{tabular}',
                r'\caption{%s, TP%s: output throughput, speedup over %s at the same TP and concurrency, '
                r'acceptance length $\tau$; best throughput per concurrency in bold.}' % (
                    tex_escape(host), tp, tex_escape(baseline)),
                r'\label{tab:%s-%s-tp%s}' % (
                    re.sub('[^A-Za-z0-9-]', '-', report['campaign']), re.sub('[^A-Za-z0-9-]', '-', host), tp),
                r'\end{table}']
    return '\n'.join(out) + '\n'


# ---------------------------------------------------------------------------------------------------------------
# Comparing two campaigns

def _delta(after, before):
    return None if after is None or before is None else after - before


def _delta_pct(after, before):
    return None if after is None or not before else (after - before) / before * 100.0


def compare_rows(after_rows, before_rows):
    """One row per host, stage and concurrency of either campaign, before and after side by side with deltas."""
    before = dict(((r['host'], r['stage'], r['concurrency']), r) for r in before_rows)
    after = dict(((r['host'], r['stage'], r['concurrency']), r) for r in after_rows)
    keys = [(r['host'], r['stage'], r['concurrency']) for r in after_rows]
    keys += [(r['host'], r['stage'], r['concurrency']) for r in before_rows if (r['host'], r['stage'], r['concurrency']) not in after]
    out = []
    for key in keys:
        old, new = before.get(key) or {}, after.get(key) or {}
        either = new or old
        row = {'host': key[0], 'stage': key[1], 'setting': either.get('setting'), 'tp': either.get('tp'), 'concurrency': key[2],
               'status_before': old.get('status', 'absent'), 'status_after': new.get('status', 'absent'),
               'sglang_build_before': old.get('sglang_build'), 'sglang_build_after': new.get('sglang_build')}
        for metric, kind in (('output_throughput', 'pct'), ('speedup', 'abs'), ('accept_length', 'abs'),
                             ('median_ttft_ms', 'pct'), ('median_itl_ms', 'pct')):
            row[metric + '_before'], row[metric + '_after'] = old.get(metric), new.get(metric)
            if kind == 'pct':
                row[metric + '_delta_pct'] = _delta_pct(new.get(metric), old.get(metric))
            else:
                row[metric + '_delta'] = _delta(new.get(metric), old.get(metric))
        out.append(row)
    return out


def _signed(value, digits, suffix=''):
    return '–' if value is None else '%+.*f%s' % (digits, value, suffix)


def render_comparison_markdown(after, before, rows, skipped=None):
    """compare-<before>.md; skipped: the files of either campaign that were skipped ([{'path', 'reason'}])."""
    lines = ['# Campaign `%s` against `%s`' % (after, before), '',
             'Before → after per host, stage and concurrency; Δ is after minus before (throughput and latency in %). '
             'Speedups are each against their own campaign\'s baseline.', '']
    builds = sorted(set('%s: %s → %s' % (row['host'], row['sglang_build_before'] or '–', row['sglang_build_after'] or '–')
                        for row in rows if row['status_before'] != 'absent' and row['status_after'] != 'absent'
                        and row['sglang_build_before'] != row['sglang_build_after']))
    if builds:
        lines += ['**The two campaigns ran different SGLang builds** (%s): a difference below may come from the build, '
                  'not only from what the campaigns set out to compare.' % md_escape('; '.join(builds)), '']
    lines += ['| host | TP | setting | c | tok/s before → after | Δ tok/s | speedup before → after | Δ speedup | '
              'τ before → after | Δ τ | median TTFT ms before → after | Δ TTFT |',
              '| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |']
    for row in rows:
        lines.append('| %s | %s | %s | %s | %s → %s | %s | %s → %s | %s | %s → %s | %s | %s → %s | %s |' % (
            md_escape(row['host']), row['tp'], md_escape(row['setting']), row['concurrency'],
            _fmt(row['output_throughput_before'], 1), _fmt(row['output_throughput_after'], 1),
            _signed(row['output_throughput_delta_pct'], 1, '%'),
            _fmt(row['speedup_before']), _fmt(row['speedup_after']), _signed(row['speedup_delta'], 2),
            _fmt(row['accept_length_before']), _fmt(row['accept_length_after']), _signed(row['accept_length_delta'], 2),
            _fmt(row['median_ttft_ms_before'], 1), _fmt(row['median_ttft_ms_after'], 1),
            _signed(row['median_ttft_ms_delta_pct'], 1, '%')))
    changed = [row for row in rows if row['status_before'] != row['status_after']]
    if changed:
        lines += ['', 'Status changed: ' + '; '.join('%s %s c=%s: %s → %s' % (
            _md_code(row['host']), _md_code(row['stage']), row['concurrency'], md_escape(row['status_before']),
            md_escape(row['status_after'])) for row in changed)]
    if skipped:
        lines += ['', 'Files skipped (unreadable, not JSON, or not what the stage writes): ' + '; '.join(
            '%s (%s)' % (_md_code(item['path']), md_escape(item['reason'])) for item in skipped)]
    return '\n'.join(lines) + '\n'


# ---------------------------------------------------------------------------------------------------------------
# Plots

def plot_series(rows, host, baseline_method=BASELINE_METHOD):
    """What the plots of one host show, as plain data (so it is testable without matplotlib).

    {'tps': [...], 'budget': {tp: {(topk, concurrency): [(budget, speedup, tau)]}}, 'reference': {tp: {(setting,
    concurrency): (speedup, tau)}}, 'throughput': {tp: {setting: [(concurrency, tok/s)]}}}
    """
    measured = [r for r in rows if r['host'] == host and r['status'] == MEASURED and r['output_throughput'] is not None]
    series = {'tps': sorted(set(r['tp'] for r in measured if r['tp'] is not None)), 'budget': {}, 'reference': {}, 'throughput': {}}
    for row in measured:
        tp = row['tp']
        if row[BUDGET_PARAM] is not None:
            series['budget'].setdefault(tp, {}).setdefault((row['topk'], row['concurrency']), []).append(
                (row[BUDGET_PARAM], row['speedup'], row['accept_length']))
        elif row['method'] != baseline_method:
            series['reference'].setdefault(tp, {})[(row['setting'], row['concurrency'])] = (row['speedup'], row['accept_length'])
        series['throughput'].setdefault(tp, {}).setdefault(row['setting'], []).append((row['concurrency'], row['output_throughput']))
    for per_tp in series['budget'].values():
        for points in per_tp.values():
            points.sort(key=lambda point: point[0])
    for per_tp in series['throughput'].values():
        for points in per_tp.values():
            points.sort()
    return series


MAX_THROUGHPUT_LINES = 8
# Fixed margins, not constrained layout: the layout pass redraws every figure and doubled the time of the plots.
FIGURE_MARGINS = {'left': 0.07, 'bottom': 0.15, 'top': 0.86, 'wspace': 0.28}
LEGEND_INCHES = 1.9
PANEL_INCHES = (4.2, 3.6)


def _throughput_lines(per_setting, methods):
    """The settings drawn: all when there are at most MAX_THROUGHPUT_LINES, else the best one of each method.

    per_setting: {setting: [(concurrency, tok/s)]}; methods: {setting: method}. Best = highest mean throughput.
    Returns [(setting, legend label)], the baseline first.
    """
    def mean(setting):
        points = per_setting[setting]
        return sum(value for _c, value in points) / len(points)
    ranked = sorted(per_setting, key=lambda setting: -mean(setting))
    if len(ranked) <= MAX_THROUGHPUT_LINES:
        return [(setting, setting) for setting in ranked]
    best, counts = {}, {}
    for setting in ranked:
        method = methods.get(setting)
        counts[method] = counts.get(method, 0) + 1
        best.setdefault(method, setting)
    return [(setting, '%s (best of %d)' % (setting, counts[method]) if counts[method] > 1 else setting)
            for method, setting in best.items()]


def _best_topk(points_by_key, index):
    """Of the top-k values swept at one TP, the one whose budget sweep reaches the highest value at any concurrency."""
    def peak(topk):
        return max([p[index] for key, points in points_by_key.items() if key[0] == topk for p in points if p[index] is not None]
                   or [float('-inf')])
    return max(sorted(set(key[0] for key in points_by_key), key=lambda k: k or 0), key=peak)


def _log2_axis(axis, values, label):
    """Values evenly spaced as powers of two, labelled as they are (drawn on a linear axis: cheaper than a log one)."""
    kept = []
    for value in values:  # a tick only where its label does not run into the previous one (24 next to 32)
        if not kept or math.log2(value) - math.log2(kept[-1]) >= 0.5:
            kept.append(value)
    axis.set_xticks([math.log2(value) for value in kept], [str(value) for value in kept])
    axis.set_xlabel(label)


# Bump when the drawing below changes, so figures kept from an earlier run are drawn again.
PLOT_STYLE = 1
PLOT_CACHE = '.plots.json'


def plot_figures(report):
    """Every figure of the report as plain data: [(file name, (host, kind), spec)]; _draw turns a spec into a PNG.

    Against the budget (speedup, acceptance length), each concurrency is one line of one top-k (the one with the highest
    peak when several were swept, named in the panel's title); other speculative methods are dashed lines of the same
    colour. Against concurrency, every setting is a line, or each method's best one when there are more than
    MAX_THROUGHPUT_LINES. One panel per TP.
    """
    baseline_label = METHOD_NAMES.get(report['baseline_method'], report['baseline_method'])
    methods = dict((row['setting'], row['method']) for row in report['rows'])
    figures = []
    for host in report['hosts']:
        name = host['host']
        series = plot_series(report['rows'], name, report['baseline_method'])
        safe = re.sub('[^A-Za-z0-9._-]', '_', name)
        budget_tps = [tp for tp in series['tps'] if tp in series['budget']]
        for metric, index, label in (('speedup', 1, 'speedup over %s' % baseline_label), ('accept_length', 2, 'acceptance length τ')):
            if not budget_tps:
                break
            panels = []
            for tp in budget_tps:
                per_key = series['budget'][tp]
                topks = sorted(set(key[0] for key in per_key), key=lambda k: k or 0)
                topk = _best_topk(per_key, index)
                lines = []
                for concurrency in sorted(set(key[1] for key in per_key)):
                    points = [(p[0], p[index]) for p in per_key.get((topk, concurrency), []) if p[index] is not None]
                    references = [(setting, values[index - 1]) for (setting, ref_c), values in sorted(series['reference'].get(tp, {}).items())
                                  if ref_c == concurrency and values[index - 1] is not None]
                    lines.append((concurrency, points, references))
                title = '%s TP%s' % (name, tp)
                if topk is not None:
                    title += ', top-k %s%s' % (topk, ' (best of %s)' % ', '.join(str(k) for k in topks) if len(topks) > 1 else '')
                budgets = sorted(set(point[0] for points in per_key.values() for point in points))
                panels.append({'tp': tp, 'title': title, 'x': budgets, 'lines': lines})
            figures.append(('%s_vs_budget-%s.png' % (metric, safe), (name, metric), {
                'kind': 'budget', 'metric': metric, 'label': label, 'baseline': baseline_label, 'panels': panels,
                'title': '%s vs DDTree budget (campaign %s)' % (label[0].upper() + label[1:], report['campaign'])}))
        if series['tps']:
            panels = []
            for tp in series['tps']:
                per_setting = series['throughput'].get(tp, {})
                panels.append({'tp': tp, 'title': '%s TP%s' % (name, tp),
                               'x': sorted(set(p[0] for points in per_setting.values() for p in points)),
                               'lines': [(legend, per_setting[setting], setting == baseline_label)
                                         for setting, legend in _throughput_lines(per_setting, methods)]})
            figures.append(('throughput_vs_concurrency-%s.png' % safe, (name, 'throughput'), {
                'kind': 'throughput', 'panels': panels,
                'title': 'Output throughput vs concurrency per method (campaign %s)' % report['campaign']}))
    return figures


def _draw(spec):
    """The PNG bytes of one figure spec (see plot_figures). Imports matplotlib: raises ImportError without it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # pylint: disable=import-outside-toplevel
    from matplotlib.figure import Figure  # pylint: disable=import-outside-toplevel
    from matplotlib.ticker import MaxNLocator  # pylint: disable=import-outside-toplevel

    count = len(spec['panels'])
    width = PANEL_INCHES[0] * count + 0.6 + LEGEND_INCHES
    figure = Figure(figsize=(width, PANEL_INCHES[1]))
    FigureCanvasAgg(figure)
    axes = [figure.add_subplot(1, count, number + 1) for number in range(count)]
    figure.subplots_adjust(right=1.0 - LEGEND_INCHES / width, **dict(FIGURE_MARGINS, left=0.55 / width))
    for axis, panel in zip(axes, spec['panels']):
        axis.yaxis.set_major_locator(MaxNLocator(5))
        if spec['kind'] == 'budget':
            reference_labelled = False
            for number, (concurrency, points, references) in enumerate(panel['lines']):
                color = 'C%d' % (number % 10)
                if points:
                    axis.plot([math.log2(x) for x, _y in points], [y for _x, y in points], marker='o', color=color,
                              label='concurrency %s' % concurrency)
                for setting, value in references:
                    axis.axhline(value, linestyle='--', linewidth=0.9, color=color,
                                 label=None if reference_labelled else '%s (dashed)' % setting)
                    reference_labelled = True
            if spec['metric'] == 'speedup':
                axis.axhline(1.0, linestyle=':', linewidth=0.8, color='black')
            if not any(points for _c, points, _r in panel['lines']):
                why = 'no %s baseline measured' % spec['baseline'] if spec['metric'] == 'speedup' else 'none reported'
                axis.text(0.5, 0.5, 'no %s at TP%s\n(%s)' % (spec['label'], panel['tp'], why),
                          transform=axis.transAxes, ha='center', va='center', fontsize=9, color='grey')
            _log2_axis(axis, panel['x'], 'DDTree budget B (tree nodes)')
            axis.set_ylabel(spec['label'])
        else:
            for legend, points, baseline in panel['lines']:
                axis.plot([math.log2(x) for x, _y in points], [y for _x, y in points], marker='o', label=legend,
                          linestyle='--' if baseline else '-')
            _log2_axis(axis, panel['x'], 'concurrency (requests in flight)')
            axis.set_ylabel('output throughput (tok/s)')
        axis.set_title(panel['title'], fontsize=9, y=1.0)  # a fixed y skips matplotlib's title placement pass
        axis.grid(True, alpha=0.3)
    _figure_legend(figure, axes)
    figure.suptitle(spec['title'], fontsize=10)
    return _png(figure)


def write_plots(report, output_dir, write, keep=None, cache=None):
    """Draw the plots; {(host, 'speedup'|'accept_length'|'throughput'): file name} and the new cache.

    write(name, data) stores a drawn file, keep(name) registers one left as it is. A figure whose input (and the drawing
    code's PLOT_STYLE) is what cache says it was when its file, still unchanged, was drawn is not drawn again: the same
    results give the same figure. Raises ImportError when a figure must be drawn and matplotlib is missing.
    """
    cache = cache or {}
    made, new_cache = {}, {}
    for file_name, key, spec in plot_figures(report):
        digest = hashlib.sha256(repr((PLOT_STYLE, spec)).encode('utf-8')).hexdigest()
        path = os.path.join(output_dir, file_name)
        old = cache.get(file_name) or {}
        if keep is not None and old.get('input') == digest and old.get('sha256') and _file_sha256(path) == old['sha256']:
            keep(file_name)
            new_cache[file_name] = old
        else:
            data = _draw(spec)
            write(file_name, data)
            new_cache[file_name] = {'input': digest, 'sha256': hashlib.sha256(data).hexdigest()}
        made[key] = file_name
    return made, new_cache


def _file_sha256(path):
    try:
        with open(path, 'rb') as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None


def _figure_legend(figure, axes):
    """One legend per figure, right of the panels (the lines mean the same in every panel); one per panel was a
    quarter of the drawing time."""
    handles, labels = {}, []
    for axis in axes:
        for handle, label in zip(*axis.get_legend_handles_labels()):
            if label not in handles:
                handles[label] = handle
                labels.append(label)
    labels.sort(key=lambda label: label.endswith('(dashed)'))  # the reference lines after the measured ones
    if labels:
        figure.legend([handles[label] for label in labels], labels, loc='center right', fontsize=7, frameon=False)


def _png(figure):
    buffer = io.BytesIO()
    # No software tag or date in the file, so the same results make the same bytes (a rerun changes nothing).
    # zlib level 1: a third of the encoding time for files about a third larger.
    figure.savefig(buffer, format='png', dpi=100, metadata={'Software': None}, pil_kwargs={'compress_level': 1})
    return buffer.getvalue()


# ---------------------------------------------------------------------------------------------------------------
# Writing

def check_id(field, value):
    if not isinstance(value, str) or not _ID_RE.match(value):
        raise ReportError('%s is %r; allowed: a campaign id matching %s' % (field, value, ID_PATTERN))
    return value


def _file_bytes(path):
    try:
        with open(path, 'rb') as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _write_staged(path, data):
    with open(path, 'wb') as handle:
        handle.write(data)
    os.chmod(path, 0o644)


def write_set(folder, outputs):
    """Write the report's files {name: bytes} into folder as a set; the names whose content changed, in order.

    The changed files are first all written into a temporary folder inside folder, then renamed into place, so a
    failure while writing leaves the previous set as it was, never a new results.csv beside an old report.md.
    A file that already holds its bytes is not touched.
    """
    os.makedirs(folder, exist_ok=True)
    changed = [name for name, data in outputs.items() if _file_bytes(os.path.join(folder, name)) != data]
    if not changed:
        return []
    staging = tempfile.mkdtemp(prefix='.report-', dir=folder)
    try:
        for name in changed:
            _write_staged(os.path.join(staging, name), outputs[name])
        for name in changed:
            os.replace(os.path.join(staging, name), os.path.join(folder, name))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return changed


def generate(results_root, campaign, output_dir, layout, hosts=None, compare_to=None, baseline_method=BASELINE_METHOD,
             plots=True):
    """Read, build and write the report. Returns {'files': {name: path}, 'changed': [names], 'report': report,
    'plots_skipped': reason or None, 'lines': summary lines, 'skipped_files': [{'path', 'reason'}] of this campaign
    and of compare_to, paths relative to results_root}. The files are written as a set (write_set)."""
    check_id('campaign', campaign)
    if compare_to is not None:
        check_id('compare_to', compare_to)
    for key in ('campaign', 'status', 'result', 'server_info', 'gpus'):
        if not isinstance(layout.get(key), str) or not layout[key]:
            raise ReportError('layout.%s is %r; allowed: a file name (roles/results_dir results_dir_layout)' % (key, layout.get(key)))
    if '{concurrency}' not in layout['result']:
        raise ReportError('layout.result is %r; allowed: a file name with {concurrency}' % layout['result'])
    if not os.path.isdir(results_root):
        raise ReportError('results_dir %s is not a folder; allowed: the folder collect fills (<host>/<campaign>/)' % results_root)
    chosen = hosts
    if hosts is None:
        hosts = find_hosts(results_root, campaign)
        if not hosts:
            raise ReportError('results_dir %s holds no host with campaign %s; allowed: a campaign collected there' % (results_root, campaign))
    report = build_report([read_host(results_root, host, campaign, layout) for host in hosts], campaign, baseline_method)
    # Everything is made in memory first and written as a set at the end: a failure on the way writes nothing.
    outputs, files = {}, {}

    def write(name, data):
        files[name] = os.path.join(output_dir, name)
        outputs[name] = data if isinstance(data, bytes) else data.encode('utf-8')

    def keep(name):
        files[name] = os.path.join(output_dir, name)

    plot_files, plots_skipped, cache = {}, None, None
    if plots:
        cache = _read_plot_cache(os.path.join(output_dir, PLOT_CACHE))
        try:
            plot_files, cache = write_plots(report, output_dir, write, keep, cache)
        except ImportError as exc:
            cache = None
            plots_skipped = 'matplotlib is not importable on the controller (%s); pip install matplotlib for the plots' % exc
    else:
        plots_skipped = 'plots=false'
    write('results.csv', render_csv(report['rows']))
    write('results.json', render_json(report))
    write('report.md', render_markdown(report, plot_files))
    write('report.tex', render_latex(report))
    skipped = list(report['skipped_files'])
    if compare_to is not None:
        before_hosts = chosen if chosen is not None else find_hosts(results_root, compare_to)
        before = build_report([read_host(results_root, host, compare_to, layout) for host in before_hosts], compare_to, baseline_method)
        skipped += before['skipped_files']
        rows = compare_rows(report['rows'], before['rows'])
        write('compare-%s.csv' % compare_to, render_csv(rows, COMPARE_KEYS))
        write('compare-%s.md' % compare_to, render_comparison_markdown(campaign, compare_to, rows, skipped))
    if cache is not None:
        outputs[PLOT_CACHE] = (json.dumps(cache, indent=1, sort_keys=True) + '\n').encode('utf-8')
    changed = [name for name in write_set(output_dir, outputs) if name != PLOT_CACHE]
    measured = sum(1 for row in report['rows'] if row['status'] == MEASURED)
    lines = ['campaign %s: %d host(s), %d row(s), %d measured, %d stage(s) not measured; report in %s' % (
        campaign, len(hosts), len(report['rows']), measured, len(report['not_measured']), os.path.join(output_dir, 'report.md'))]
    for best in report['best']:
        lines.append('%s TP%s c=%s: best %s %.1f tok/s%s' % (
            best['host'], best['tp'], best['concurrency'], best['setting'], best['output_throughput'],
            ', %.2fx' % best['speedup'] if best['speedup'] is not None else ''))
    for item in skipped:
        lines.append('skipped %s: %s' % (item['path'], item['reason']))
    return {'files': files, 'changed': changed, 'report': report, 'plots_skipped': plots_skipped, 'lines': lines,
            'skipped_files': skipped}


def _read_plot_cache(path):
    """The plot cache; a missing or broken one only means every figure is drawn again."""
    try:
        with open(path, 'rb') as handle:
            cache = json.loads(handle.read())
    except (OSError, ValueError):
        return {}
    return cache if isinstance(cache, dict) and all(isinstance(value, dict) for value in cache.values()) else {}
