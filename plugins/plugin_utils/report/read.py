# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, data: the collected results of one host and campaign, each file checked against its schema.

Every file is checked against the schema of its kind (schema.SCHEMAS) before the report uses it. A file that is
unreadable, not JSON or not of its kind is skipped as if it were absent, and listed with its path and reason
(skipped_files in the report, report.md, results.json and the action's return).

Result files are found by listing each stage folder against the layout's result pattern ({dataset}, {temperature},
{concurrency}, {repeat}); a run is keyed (dataset, temperature, concurrency) and holds one result per repeat (from 1).
A folder written before repeats holds PREVIOUS_RESULT files (result-<dataset>-t<T>-c<N>.json), and one written
before datasets LEGACY_RESULT files (result-c<N>.json, dataset 'random' at temperature 0): each reads as repeat 1, so
old campaigns still report and compare.

The raw per-request records of a run (the layout's raw file beside each result) are read only for a dataset whose
prepared entry names two or more categories (Spec-Bench's): the report's per-category rows come from them. A raw
file with a line that is not a request record is skipped like any other file.

Stages run side by side: results from before the wave keys read as stages run alone (ran_beside, interference_of,
stage_wave).

The load family (a stage whose plan has `load`): each open-loop or extra closed-loop run's files name its request rate
(LOAD_RESULT, `result-<dataset>-t<T>-c<N>-q<rate>-r<r>.json`, rate 'inf' for closed loop), a name the grid's pattern
never matches, so the grid's rows are what they were; they are read into the stage's 'load' (and their raw records
into 'load_raw' when the plan has an SLO), and each capacity search's file (SEARCH, `search-<dataset>-t<T>-<kind>.json`)
into 'searches'. With an SLO the grid runs' raw records are read too ('slo_raw'): goodput counts the requests that met
it (pays.py).
"""

from __future__ import annotations

import json
import os
import re
import string

from ansible_collections.specdec.bench.plugins.module_utils._common import ID_PATTERN, RESULTS_LAYOUT, finite
from ansible_collections.specdec.bench.plugins.plugin_utils.server_metrics import MetricsError, read_scrapes, scrape_deltas
from ansible_collections.specdec.bench.plugins.module_utils._stage import outputs as packed_outputs
from .schema import check_raw_record, check_reference, SCHEMAS
from .time import TIMING_FILE


# A row is measured when its stage ran and the run at that concurrency completed every prompt.
MEASURED = 'ok'


# The dataset and temperature of a run whose workload names none (today's random prompts, greedy).
RANDOM = 'random'


DEFAULT_TEMPERATURE = 0.0


# The result file name before datasets and temperatures (0.4): such a run is (RANDOM, DEFAULT_TEMPERATURE).
LEGACY_RESULT = 'result-c{concurrency}.json'


# The result file name before repeats: such a file is repeat 1 of its run.
PREVIOUS_RESULT = 'result-{dataset}-t{temperature}-c{concurrency}.json'


# The load family's file names (module_utils/_common.py RESULTS_LAYOUT's load_result, load_raw and search; these are
# the defaults when the layout has none).
LOAD_RESULT = 'result-{dataset}-t{temperature}-c{concurrency}-q{rate}-r{repeat}.json'
LOAD_RAW = 'raw-{dataset}-t{temperature}-c{concurrency}-q{rate}-r{repeat}.jsonl'
# The grading references of a prompt set (RESULTS_LAYOUT's references), in the campaign folder.
REFERENCES = 'references/{sha256}.jsonl'
SEARCH = 'search-{dataset}-t{temperature}-{kind}.json'


# The raw file beside a result of each earlier layout.
EARLIER_RAW = {PREVIOUS_RESULT: 'raw-{dataset}-t{temperature}-c{concurrency}.jsonl', LEGACY_RESULT: 'raw-c{concurrency}.jsonl'}


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

    def read_lines(self, path, check):
        """The objects of a JSON-lines file, each checked by check (a reason or None); None when absent or skipped."""
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
            reason = check(record)
            if reason:
                return self._skip(path, 'line %d: %s' % (number, reason))
            records.append(record)
        return records

    def read_records(self, path):
        """The records of a raw file (JSON lines), each a request record; None when absent or skipped."""
        return self.read_lines(path, check_raw_record)

    def read_references(self, path):
        """{id: reference} of a references file (JSON lines, datasets.py's), None when absent or skipped."""
        records = self.read_lines(path, check_reference)
        return None if records is None else dict((record['id'], record) for record in records)

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
                'concurrency': '(?P<concurrency>[0-9]+)', 'repeat': '(?P<repeat>[0-9]+)',
                'rate': '(?P<rate>inf|[0-9][0-9.e+-]*)', 'kind': '(?P<kind>concurrency|request_rate)'}


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


def rate_value(tag):
    """A request rate as a file name writes it ('inf', '2', '0.5') as a float (inf for closed loop); None when it is
    no positive number."""
    if tag == 'inf':
        return float('inf')
    value = finite(tag)
    return value if value is not None and value > 0 else None


def find_load_runs(names, layout):
    """{(dataset, temperature, concurrency, rate): {repeat: (result file name, raw file name)}} of the load family's
    result files among names (LOAD_RESULT: the rate in the name; rate inf for closed loop)."""
    regex = result_name_regex(layout.get('load_result', LOAD_RESULT))
    raw_pattern = layout.get('load_raw', LOAD_RAW)
    found = {}
    for name in sorted(names):
        match = regex.match(name)
        key = run_key(match) if match else None
        rate = rate_value(match.group('rate')) if key is not None else None
        if rate is None or int(match.group('repeat')) < 1:
            continue
        found.setdefault(key + (rate,), {})[int(match.group('repeat'))] = (name, raw_pattern.format(**match.groupdict()))
    return found


def find_searches(names, layout):
    """[(dataset, temperature, kind, file name)] of the capacity searches' files among names (SEARCH), sorted."""
    regex = result_name_regex(layout.get('search', SEARCH))
    found = []
    for name in sorted(names):
        match = regex.match(name)
        temperature = finite(match.group('temperature')) if match else None
        if temperature is not None and temperature >= 0:
            found.append((match.group('dataset'), temperature, match.group('kind'), name))
    return found


def slo_of(stage):
    """The normalized SLO of a stage's plan (stage['load']['slo']); None without one."""
    return (stage.get('load') or {}).get('slo') or None


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
    Returns {'host', 'campaign', 'found', 'plan', 'timing' (the campaign's timing.json, time; None when absent),
    'stages': [{'stage': plan entry, 'status', 'results': {run: {repeat: result}}, 'raw': {run: {repeat: [record, ...]}},
    'outputs': {run: {repeat: [kept_outputs() item]}} (runs at temperature 0 and of graded() datasets), 'server_info',
    'gpus', 'skipped': {'status': reason, 'results': {run: reason}}, and for a stage with load files or searches
    'load': {(dataset, temperature, concurrency, rate): {repeat: result}}, 'load_raw' and 'slo_raw' (with an SLO: the
    load and grid runs' records, {run: {repeat: [record, ...]}}), 'searches': [search document]}], 'skipped_files':
    [{'path', 'reason'}], 'references': {sha256: {id: reference}, or None when absent or skipped}} in plan order, a
    run being (dataset, temperature, concurrency) and a repeat its number (1 for a file of an earlier layout); stage folders that the
    plan does not list follow, sorted. A stage's runs are those its plan names (planned_runs) and those it has result
    files of. 'raw' holds the records of the runs of categorized() datasets only. A file that is not of its schema is
    skipped (None, as if absent) and listed in skipped_files with its path relative to results_root; a run's skipped
    reason is its first skipped repeat's.
    """
    layout = layout or RESULTS_LAYOUT
    folder = os.path.join(results_root, host, campaign)
    reader = _Reader(results_root)
    data = {'host': host, 'campaign': campaign, 'found': os.path.isdir(folder), 'plan': None, 'timing': None, 'stages': [],
            'references': {}, 'skipped_files': reader.skipped}
    if not data['found']:
        return data
    plan = reader.read(os.path.join(folder, layout['campaign']), 'campaign')
    data['plan'] = plan
    data['timing'] = reader.read(os.path.join(folder, layout.get('timing', TIMING_FILE)), 'timing')
    planned = list((plan or {}).get('stages') or [])
    names = set(planned_stage['id'] for planned_stage in planned)
    not_stages = set([os.path.dirname(layout.get('references', REFERENCES))])
    extra = sorted(name for name in os.listdir(folder) if name not in names and name not in not_stages
                   and not name.startswith('.') and os.path.isdir(os.path.join(folder, name)))
    for stage in planned + [_stage_from_id(name, campaign) for name in extra]:
        stage_dir = os.path.join(folder, stage['id'])
        entry = {'stage': stage, 'status': None, 'results': {}, 'raw': {}, 'outputs': {}, 'metrics': {}, 'server_info': None,
                 'gpus': None, 'skipped': {'status': None, 'results': {}}}
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
        for sha256 in graded(entry).values():
            if sha256 not in data['references']:
                data['references'][sha256] = reader.read_references(
                    os.path.join(folder, layout.get('references', REFERENCES).format(sha256=sha256)))
    return data


def graded(entry):
    """{dataset name: the sha256 of its references} of the datasets of a stage that have grading references
    (status.json's prepared entries name them): their outputs are read to grade them."""
    return dict((item['name'], item['references_sha256']) for item in (entry['status'] or {}).get('datasets') or []
                if isinstance(item, dict) and isinstance(item.get('references_sha256'), str)
                and re.match(r'[0-9a-f]{64}\Z', item['references_sha256']))


def kept_outputs(records):
    """The outputs of a run's measured requests: [{'id', 'turn', 'final', 'ids', 'text'}] of each successful, not
    warm-up record that kept one (records of a harness that keeps none, or of earlier versions, give []); an output
    that does not unpack (a corrupt line) is left out."""
    out = []
    for record in records or []:
        if record.get('warmup') or not record.get('success') or not isinstance(record.get('output'), dict):
            continue
        try:
            ids, text = packed_outputs.unpack(record['output'])
        except ValueError:
            continue
        out.append({'id': record.get('id') if record.get('id') is not None else str(record.get('index')),
                    'turn': record.get('turn') or 0, 'final': record.get('final', True), 'ids': ids, 'text': text})
    return out


def _read_runs(reader, stage_dir, layout, entry):
    """Fill a measured stage's results, raw records, kept outputs and skipped results from its folder."""
    files = find_runs(os.listdir(stage_dir), layout)
    wanted = categorized(entry)
    grade = graded(entry)
    for run in sorted(files):
        results = entry['results'][run] = {}
        for repeat in sorted(files[run]):
            name, raw = files[run][repeat]
            result_path = os.path.join(stage_dir, name)
            results[repeat] = reader.read(result_path, 'result')
            if results[repeat] is None and run not in entry['skipped']['results'] and reader.reason(result_path):
                entry['skipped']['results'][run] = reader.reason(result_path)
            metrics = (results[repeat] or {}).get('metrics_file')
            if isinstance(metrics, str) and metrics and os.path.basename(metrics) == metrics:
                entry['metrics'].setdefault(run, {})[repeat] = read_metrics(os.path.join(stage_dir, metrics))
            if (run[0] in wanted or run[0] in grade or run[1] == 0) and raw and results[repeat] is not None:
                records = reader.read_records(os.path.join(stage_dir, raw))
                if records is not None and run[0] in wanted:
                    entry['raw'].setdefault(run, {})[repeat] = records
                kept = kept_outputs(records)
                if kept:
                    entry['outputs'].setdefault(run, {})[repeat] = kept
    _read_load(reader, stage_dir, layout, entry, files)


def _read_load(reader, stage_dir, layout, entry, grid):
    """Fill a measured stage's load family (load, load_raw, slo_raw, searches) from its folder; a stage without load
    files, searches or an SLO gets no key, so what the grid's report holds is what it was."""
    names = os.listdir(stage_dir)
    slo = slo_of(entry['stage'])
    load = find_load_runs(names, layout)
    searches = find_searches(names, layout)
    if load:
        entry['load'], entry['load_raw'] = {}, {}
    for run in sorted(load):
        results = entry['load'][run] = {}
        for repeat in sorted(load[run]):
            name, raw = load[run][repeat]
            results[repeat] = reader.read(os.path.join(stage_dir, name), 'result')
            if slo and results[repeat] is not None:
                records = reader.read_records(os.path.join(stage_dir, raw))
                if records is not None:
                    entry['load_raw'].setdefault(run, {})[repeat] = records
    if slo:
        entry['slo_raw'] = {}
        for run in sorted(grid):
            for repeat in sorted(grid[run]):
                name, raw = grid[run][repeat]
                if raw and (entry['results'].get(run) or {}).get(repeat) is not None:
                    records = (entry['raw'].get(run) or {}).get(repeat)
                    records = records if records is not None else reader.read_records(os.path.join(stage_dir, raw))
                    if records is not None:
                        entry['slo_raw'].setdefault(run, {})[repeat] = records
    if searches:
        entry['searches'] = []
        for _dataset, _temperature, _kind, name in searches:
            doc = reader.read(os.path.join(stage_dir, name), 'search')
            if doc is not None:
                entry['searches'].append(dict(doc, file=name))


def read_metrics(path):
    """A run's server metrics (its metrics_file: /metrics scraped before and after the measured run) as
    server_metrics.scrape_deltas gives them, or {'error': why} when the file cannot be read or parsed."""
    try:
        before, after = read_scrapes(path)[:2]
        return scrape_deltas(before, after)
    except MetricsError as exc:
        return {'error': str(exc).replace(path, os.path.basename(path))}


def ran_beside(entry):
    """The ids of the other stages in flight with a stage (status.json's ran_beside); [] when it ran alone,
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
