# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, data: does speculation change the answers? Outputs against AR's, and task accuracy.

Both read the outputs the builtin harness keeps in each raw record (read.kept_outputs: token ids and text of every
measured request); docs/report.md "Lossless and accurate" defines every figure.

Equality at temperature 0 (equality_rows), after Spec-Bench's evaluation/equal.py, which compares each method's
outputs with the autoregressive baseline's for the same prompts: per host, stage, dataset and concurrency, each
request's token ids against AR's for the same prompt (id and turn) on the same host and TP. AR's reference is its
run at its lowest concurrency, first repeat. The figures: the share of requests token-identical to it, the first
position where the ids differ (0-based; the shorter length when one is a prefix of the other) as its 10th, 50th and
90th percentiles over the requests that differ, and the shares identical in their first 32 and 128 tokens. AR's own
rows are the floor: batch-dependent numerics (other batch shapes, other kernels) make AR at concurrency c differ from
AR at its lowest one, so a method at c is set against AR's own share at c, and flagged only beyond it: when AR is
identical to itself there (floor 100%), any difference is the method's; else when Newcombe's interval for the
difference of the two shares lies below 0.

Task accuracy (accuracy_rows), per host, stage, dataset (with references) and temperature, graded on the run at the
stage's lowest concurrency, first measured repeat, one answer per prompt (its final turn), as the papers report it:
gsm8k and math500 by answers.grade (the \\boxed{} answer or the last number against '#### n'; math-verify's
equivalence for math500), humaneval and mbpp by running the reference tests on the extracted code in the sandbox
(sandbox.run_program) only when the plan's accuracy.execute_code is on. The accuracy's 95% interval is Wilson's, and
its difference to AR's (same host, TP, dataset, temperature) has Newcombe's hybrid score interval (method 10); the
prompts are the same on both sides, so this interval for independent samples is conservative. A method whose interval
for the difference lies below 0 is flagged.

verdicts(equality, accuracy) -> {(host, stage): [note, ...]}: the stages flagged by either, for the marks in every table
that shows a speedup (tables.verdict_mark).
"""

from __future__ import annotations

import json

from ansible_collections.specdec.bench.plugins.plugin_utils import answers
from .keys import BASELINE_METHOD, METHOD_NAMES
from .read import MEASURED

# The shares of the first tokens equal (docs/report.md): a short answer's span and a long one's.
PREFIXES = (32, 128)
EQUALITY_KEYS = ('host', 'stage', 'method', 'setting', 'tp', 'dataset', 'temperature', 'concurrency', 'baseline_stage',
                 'reference_concurrency', 'compared', 'identical', 'identical_share', 'identical_32_share',
                 'identical_128_share', 'diverge_p10', 'diverge_median', 'diverge_p90', 'floor_share', 'floor_compared',
                 'flagged', 'note')
ACCURACY_KEYS = ('host', 'stage', 'method', 'setting', 'tp', 'dataset', 'kind', 'temperature', 'concurrency', 'repeat',
                 'graded', 'correct', 'accuracy', 'accuracy_low', 'accuracy_high', 'baseline_stage', 'baseline_accuracy',
                 'delta', 'delta_low', 'delta_high', 'flagged', 'note')
CODE_KINDS = ('humaneval', 'mbpp')


def first_difference(left, right):
    """The first index where two id lists differ, the shorter length when one is a prefix of the other; None when
    they are identical."""
    for index, (one, other) in enumerate(zip(left, right)):
        if one != other:
            return index
    return None if len(left) == len(right) else min(len(left), len(right))


def percentile(values, q):
    """The q-th percentile (0-100) of values, linear between the closest ranks (numpy's default); None for none."""
    ordered = sorted(values)
    if not ordered:
        return None
    position = (len(ordered) - 1) * q / 100.0
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _share(count, total):
    return count / float(total) if total else None


def compare_outputs(outputs, reference):
    """The equality figures of outputs (kept_outputs items) against reference ({(id, turn): ids}): the requests with a
    reference counted; see the module docstring."""
    positions, identical, compared = [], 0, 0
    prefix = dict.fromkeys(PREFIXES, 0)
    for item in outputs:
        base = reference.get((item['id'], item['turn']))
        if base is None:
            continue
        compared += 1
        at = first_difference(item['ids'], base)
        if at is None:
            identical += 1
        else:
            positions.append(at)
        for span in PREFIXES:
            if at is None or at >= span:
                prefix[span] += 1
    return {'compared': compared, 'identical': identical, 'identical_share': _share(identical, compared),
            'identical_32_share': _share(prefix[32], compared), 'identical_128_share': _share(prefix[128], compared),
            'diverge_p10': percentile(positions, 10), 'diverge_median': percentile(positions, 50),
            'diverge_p90': percentile(positions, 90)}


def _entries(host_data):
    return dict(((data['host'], entry['stage']['id']), entry) for data in host_data for entry in data['stages'])


def _repeats(entry, run):
    """The measured repeats' outputs of a run, by repeat, in order."""
    by_repeat = (entry or {}).get('outputs', {}).get(run) or {}
    return [(repeat, by_repeat[repeat]) for repeat in sorted(by_repeat)]


def _reference_run(entry, dataset, temperature):
    """(concurrency, {(id, turn): ids}) of an AR stage's lowest-concurrency run of dataset and temperature, its first
    repeat with outputs; (None, {}) when it kept none."""
    runs = sorted(run for run in (entry or {}).get('outputs', {}) if run[0] == dataset and run[1] == temperature)
    for run in runs:
        repeats = _repeats(entry, run)
        if repeats:
            return run[2], dict(((item['id'], item['turn']), item['ids']) for item in repeats[0][1])
    return None, {}


def _row_base(row, keys):
    out = dict.fromkeys(keys)
    out.update((name, row.get(name)) for name in ('host', 'stage', 'method', 'setting', 'tp', 'dataset', 'temperature',
                                                  'concurrency', 'baseline_stage') if name in keys)
    return out


def equality_rows(host_data, rows, baseline_method=BASELINE_METHOD):
    """One equality row (EQUALITY_KEYS) per measured row at temperature 0 whose stage kept outputs and whose AR
    baseline (its row's baseline_stage, or the stage itself for AR) kept a reference run; in rows' order."""
    entries = _entries(host_data)
    out, floors = [], {}
    for row in rows:
        if row['status'] != MEASURED or row['temperature'] != 0 or not row.get('baseline_stage'):
            continue
        run = (row['dataset'], row['temperature'], row['concurrency'])
        repeats = _repeats(entries.get((row['host'], row['stage'])), run)
        if not repeats:
            continue
        ref_c, reference = _reference_run(entries.get((row['host'], row['baseline_stage'])), row['dataset'], 0.0)
        if not reference:
            continue
        item = _row_base(row, EQUALITY_KEYS)
        item['reference_concurrency'] = ref_c
        # AR's reference run is compared from its second repeat on (against its own first one is no test)
        own = row['stage'] == row['baseline_stage'] and row['concurrency'] == ref_c
        kept = [output for repeat_index, (_repeat, outputs) in enumerate(repeats) if not (own and repeat_index == 0)
                for output in outputs]
        item.update(compare_outputs(kept, reference))
        if row['method'] == baseline_method:
            floors[(row['host'], row['baseline_stage'], row['dataset'], row['concurrency'])] = item
        out.append(item)
    for item in out:
        floor = floors.get((item['host'], item['baseline_stage'], item['dataset'], item['concurrency']))
        if item['method'] == baseline_method:
            item['flagged'] = False
            item['note'] = 'the floor: %s against itself at its concurrency %s' % (
                METHOD_NAMES.get(baseline_method, baseline_method), item['reference_concurrency'])
            if not item['compared']:
                item['note'] += ' (one repeat: nothing to compare)'
            continue
        if floor is None or floor['identical_share'] is None:
            # at AR's reference concurrency the floor is 100% by definition; elsewhere AR was not compared there
            item['floor_share'] = 1.0
            if item['concurrency'] != item['reference_concurrency']:
                item['note'] = 'no %s floor at this concurrency: 100%% assumed' % METHOD_NAMES.get(baseline_method, baseline_method)
        else:
            item['floor_share'], item['floor_compared'] = floor['identical_share'], floor['compared']
        item['flagged'] = _below_floor(item)
        if item['flagged']:
            item['note'] = '; '.join(filter(None, (item['note'], 'outputs differ from %s beyond its own floor' % (
                METHOD_NAMES.get(baseline_method, baseline_method)))))
    return out


def _below_floor(item):
    """A method's identical share below AR's floor: any difference where the floor is 100%, else beyond the Newcombe
    interval of the difference of the two shares."""
    share, floor = item['identical_share'], item['floor_share']
    if share is None or floor is None or share >= floor:
        return False
    if floor >= 1.0 or not item.get('floor_compared'):
        return True
    _diff, _low, high = answers.newcombe_difference(item['identical'], item['compared'],
                                                    int(round(floor * item['floor_compared'])), item['floor_compared'])
    return high is not None and high < 0


def grade_outputs(outputs, references, execute=None, cache=None):
    """(graded, correct, ungraded reason or None) of a run's final-turn outputs against {id: reference}; the
    grades are cached by (reference, text) in cache (a dict), so the same answer to the same reference is graded once
    per report (two sets of one kind may share record ids, never their references)."""
    graded = correct = 0
    reason = None
    cache = {} if cache is None else cache
    for item in outputs:
        if not item.get('final', True):
            continue
        reference = references.get(item['id'])
        if reference is None:
            continue
        if reference['kind'] in CODE_KINDS and execute is None:
            reason = 'code not run: the plan has no accuracy.execute_code'
            continue
        key = (json.dumps(reference, sort_keys=True), item['text'])
        if key not in cache:
            cache[key] = answers.grade(reference, item['text'], execute)
        if cache[key] is None:
            continue
        graded += 1
        correct += 1 if cache[key] else 0
    return graded, correct, reason


def stage_references(host_data):
    """{(host, stage id, dataset name): {id: reference}} of every stage's datasets whose references were read."""
    out = {}
    for data in host_data:
        for entry in data['stages']:
            for item in (entry['status'] or {}).get('datasets') or []:
                refs = data['references'].get(item.get('references_sha256')) if isinstance(item, dict) else None
                if refs:
                    out[(data['host'], entry['stage']['id'], item['name'])] = refs
    return out


def execute_code_of(entry):
    """Whether a stage's plan lets the report run its code sets' tests (the plan's accuracy.execute_code)."""
    return bool((entry['stage'].get('accuracy') or {}).get('execute_code'))


def accuracy_rows(host_data, rows, baseline_method=BASELINE_METHOD, execute=None):
    """One accuracy row (ACCURACY_KEYS) per host, stage, graded dataset and temperature (rows' order, each row's first
    run at its lowest concurrency); execute(program) -> bool runs a code set's program (sandbox), used only for a
    stage whose plan has accuracy.execute_code."""
    entries = _entries(host_data)
    references = stage_references(host_data)
    cache, out, seen = {}, [], set()
    for row in rows:
        key = (row['host'], row['stage'], row['dataset'], row['temperature'])
        refs = references.get((row['host'], row['stage'], row['dataset']))
        if row['status'] != MEASURED or key in seen or not refs:
            continue
        seen.add(key)
        entry = entries[(row['host'], row['stage'])]
        runs = sorted(run for run in entry['outputs'] if run[:2] == (row['dataset'], row['temperature']))
        repeats = _repeats(entry, runs[0]) if runs else []
        if not repeats:
            continue
        item = _row_base(row, ACCURACY_KEYS)
        item.update(concurrency=runs[0][2], repeat=repeats[0][0], kind=next(iter(refs.values()))['kind'])
        item['graded'], item['correct'], item['note'] = grade_outputs(
            repeats[0][1], refs, execute if execute_code_of(entry) else None, cache)
        if item['graded']:
            item['accuracy'] = item['correct'] / float(item['graded'])
            item['accuracy_low'], item['accuracy_high'] = answers.wilson(item['correct'], item['graded'])
        out.append(item)
    by_stage = dict(((item['host'], item['stage'], item['dataset'], item['temperature']), item) for item in out)
    baselines = {}
    for row in rows:  # a run's AR stage: the first of its rows that has one
        if row.get('baseline_stage'):
            baselines.setdefault((row['host'], row['stage'], row['dataset'], row['temperature']), row['baseline_stage'])
    for item in out:
        item['flagged'] = False
        row_base = baselines.get((item['host'], item['stage'], item['dataset'], item['temperature']))
        item['baseline_stage'] = row_base
        base = by_stage.get((item['host'], row_base, item['dataset'], item['temperature'])) if row_base else None
        if base is None or item['method'] == baseline_method or not base['graded'] or not item['graded']:
            continue
        item['baseline_accuracy'] = base['accuracy']
        item['delta'], item['delta_low'], item['delta_high'] = answers.newcombe_difference(
            item['correct'], item['graded'], base['correct'], base['graded'])
        item['flagged'] = item['delta_high'] is not None and item['delta_high'] < 0
        if item['flagged']:
            item['note'] = '; '.join(filter(None, (item['note'], 'accuracy significantly below %s' % (
                METHOD_NAMES.get(baseline_method, baseline_method)))))
    return out


# The mark of a stage whose answers differ from AR's, after its setting label in every table (docs/report.md).
ANSWERS_MARK = '¶'


def answers_note(baseline_method=BASELINE_METHOD):
    """The footnote of ANSWERS_MARK."""
    return ('%s its outputs at T=0 differ from %s\'s beyond %s\'s own floor, or its task accuracy is significantly '
            'below %s\'s: its speedup is not a lossless one (see "Lossless and accurate")'
            % ((ANSWERS_MARK,) + (METHOD_NAMES.get(baseline_method, baseline_method),) * 3))


def mark_settings(items, flagged):
    """Append ANSWERS_MARK to the setting label of every item (a report row) of a flagged [host, stage]."""
    wanted = set(tuple(pair) for pair in flagged)
    for item in items:
        if (item.get('host'), item.get('stage')) in wanted and item.get('setting') and not item['setting'].endswith(ANSWERS_MARK):
            item['setting'] = '%s %s' % (item['setting'], ANSWERS_MARK)


def lossless_report(host_data, rows, baseline_method=BASELINE_METHOD, execute=None):
    """{'equality': equality_rows, 'accuracy': accuracy_rows, 'verdicts': [{'host', 'stage', 'setting', 'notes'}],
    'flagged': [[host, stage], ...]}, or None when no stage kept outputs (results of a harness that keeps none)."""
    if not any(entry.get('outputs') for data in host_data for entry in data['stages']):
        return None
    equality = equality_rows(host_data, rows, baseline_method)
    accuracy = accuracy_rows(host_data, rows, baseline_method, execute)
    found = verdicts(equality, accuracy)
    settings = dict(((row['host'], row['stage']), row['setting']) for row in rows)
    return {'equality': equality, 'accuracy': accuracy,
            'verdicts': [{'host': host, 'stage': stage, 'setting': settings.get((host, stage)), 'notes': notes}
                         for (host, stage), notes in sorted(found.items())],
            'flagged': [[host, stage] for host, stage in sorted(found)]}


COMPARE_ACCURACY_KEYS = ('host', 'stage', 'setting', 'tp', 'dataset', 'temperature', 'graded_before', 'accuracy_before',
                         'graded_after', 'accuracy_after', 'delta', 'delta_low', 'delta_high', 'significant')


def compare_accuracy(after, before):
    """Per host, stage, dataset and temperature graded in both campaigns (their accuracy rows): before and after,
    the difference after - before with Newcombe's interval, significant when it excludes 0."""
    old = dict(((item['host'], item['stage'], item['dataset'], item['temperature']), item) for item in before or [])
    out = []
    for item in after or []:
        prior = old.get((item['host'], item['stage'], item['dataset'], item['temperature']))
        if prior is None or not item['graded'] or not prior['graded']:
            continue
        row = dict((key, item[key]) for key in ('host', 'stage', 'setting', 'tp', 'dataset', 'temperature'))
        row.update(graded_before=prior['graded'], accuracy_before=prior['accuracy'], graded_after=item['graded'],
                   accuracy_after=item['accuracy'])
        row['delta'], row['delta_low'], row['delta_high'] = answers.newcombe_difference(
            item['correct'], item['graded'], prior['correct'], prior['graded'])
        row['significant'] = row['delta_low'] is not None and (row['delta_low'] > 0 or row['delta_high'] < 0)
        out.append(row)
    return out


def verdicts(equality, accuracy):
    """{(host, stage): [why, ...]} of the stages flagged by the equality or the accuracy rows, each reason once."""
    out = {}
    for item in equality:
        if item['flagged']:
            out.setdefault((item['host'], item['stage']), []).append(
                '%s at concurrency %s: %.0f%% of outputs identical to AR at T=0, AR\'s own floor %.0f%%' % (
                    item['dataset'], item['concurrency'], 100 * item['identical_share'], 100 * item['floor_share']))
    for item in accuracy:
        if item['flagged']:
            out.setdefault((item['host'], item['stage']), []).append(
                '%s at T=%g: accuracy %.1f%% against AR\'s %.1f%% (difference %+.1f points, 95%% CI %+.1f to %+.1f)' % (
                    item['dataset'], item['temperature'], 100 * item['accuracy'], 100 * item['baseline_accuracy'],
                    100 * item['delta'], 100 * item['delta_low'], 100 * item['delta_high']))
    return out
