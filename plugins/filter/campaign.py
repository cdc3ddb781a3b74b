# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""campaign_done, campaign_todo, campaign_spec_changes, campaign_summary_lines and stage_progress_line: what the
campaign and bench_stage roles decide and print, as pure functions. Documented in the .yml files of the same names."""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.specdec.bench.plugins.filter.stage import campaign_waves, load_work

# What makes a stage's results that stage's: a stage recorded in campaign.json with other values is another experiment.
# Not `repeats`: more repeats of the same experiment fill it in.
# A checkpoint of a draft sweep is compared without `present`: it turns true once the checkpoint is copied here.
IDENTITY_KEYS = ('method', 'params', 'tp', 'gpus', 'workload', 'concurrency', 'model_path', 'draft_path', 'draft_checkpoint')
_NOT_IDENTITY = {'draft_checkpoint': ('present',)}
# A plan still finds these infeasible: a stage recorded so is done, one that fits now runs.
_DONE = 'ok'
_INFEASIBLE = 'infeasible'


def _stages(status):
    stages = (status or {}).get('stages') if isinstance(status, Mapping) else None
    return stages if isinstance(stages, Mapping) else {}


def recorded_repeats(status):
    """The repeats an ok stage's status records; 1 for a status from before repeats (or one that names none)."""
    repeats = (status or {}).get('repeats') if isinstance(status, Mapping) else None
    return repeats if isinstance(repeats, int) and not isinstance(repeats, bool) and repeats >= 1 else 1


def stage_done(stage, status):
    """Whether a planned stage is finished by its recorded status: ok with at least the planned repeats (a stage's
    `repeats`, 1 when it names none) and, when its plan asks for a load study (stage.load_work), the same load recorded
    (a rerun measures what is missing: every run already measured is reused), or infeasible while the plan still finds
    it so."""
    found = (status or {}).get('status') if isinstance(status, Mapping) else None
    if found == _DONE:
        if load_work(stage.get('load')) and status.get('load') != stage.get('load'):
            return False  # its load study (rates, crossover points, searches) is not the one planned: the stage runs again
        return recorded_repeats(status) >= (stage.get('repeats') or 1)
    return found == _INFEASIBLE and not stage.get('feasible')


def campaign_done(plan_stages, status, force=False):
    """The ids of the planned stages this run skips: status ok with at least the planned repeats, or infeasible while
    the plan still finds them so."""
    if force:
        return []
    recorded = _stages(status)
    return [stage['id'] for stage in plan_stages or [] if stage_done(stage, recorded.get(stage['id']))]


def campaign_todo(plan_stages, status, force=False, ship_failed=None):
    """What this run of the campaign does, from the plan, what earlier runs recorded and the checkpoints that could
    not be copied here (checkpoint_ship_failed: destination path to reason):

    - done: the ids campaign_done skips; todo: the other stages, in plan order;
    - preflight: the stages to run that start a server (feasible), which sglang_preflight parses;
    - ship: the draft checkpoints those stages need that this host lacks, copied from their source host;
    - waves: the stages to run that start a server, grouped as campaign_waves does (not those whose checkpoint failed);
    - not_running: the stages to run in no wave (infeasible, or their checkpoint failed), which bench_stage records;
    - weights: the model and draft folders the waves load, once each, in order (not a checkpoint that failed).
    """
    ship_failed = ship_failed if isinstance(ship_failed, Mapping) else {}
    done = campaign_done(plan_stages, status, force)
    todo = [stage for stage in plan_stages or [] if stage['id'] not in done]
    feasible = [stage for stage in todo if stage.get('feasible')]
    checkpoints = [stage.get('draft_checkpoint') for stage in feasible]
    ship = [checkpoint for checkpoint in checkpoints
            if checkpoint and not checkpoint.get('present') and checkpoint.get('source_host')]
    waves = campaign_waves(todo, ship_failed)
    running = set(stage['id'] for wave in waves for stage in wave)
    weights = []
    for path in [stage.get('model_path') for stage in feasible] + [stage.get('draft_path') for stage in feasible if stage.get('draft_path')]:
        if path not in weights and path not in ship_failed:
            weights.append(path)
    return {
        'done': done,
        'todo': todo,
        'preflight': feasible,
        'ship': ship,
        'waves': waves,
        'not_running': [stage for stage in todo if stage['id'] not in running],
        'weights': weights,
    }


def _identity(key, value):
    """A stage's value of key as far as it names the experiment (a draft checkpoint without `present`)."""
    if key in _NOT_IDENTITY and isinstance(value, Mapping):
        return dict((name, item) for name, item in value.items() if name not in _NOT_IDENTITY[key])
    return value


def _stage_identity(stage, key):
    """A stage's value of key as far as it names the experiment. A stage placed from a GPU pool is named by its pool
    (GPU indices and size), not by the slot it got: which GPU of the pool runs it depends on its wave and is not part
    of the experiment (each is the same GPU model; the GPU snapshot records which one ran it)."""
    pool = stage.get('pool')
    if key == 'gpus' and isinstance(pool, Mapping):
        return {'pool': pool.get('gpus'), 'size': pool.get('size')}
    return _identity(key, stage.get(key))


def campaign_spec_changes(plan_stages, recorded_plan, keys=IDENTITY_KEYS):
    """'<stage id> (<keys that differ>)' for each planned stage that campaign.json recorded with other values; a stage
    campaign.json does not have is new (not a change), a draft checkpoint's `present` is not compared, and a stage from
    a GPU pool is compared by its pool, not by the GPU it got."""
    recorded = {stage.get('id'): stage for stage in recorded_plan or [] if isinstance(stage, Mapping)}
    changes = []
    for stage in plan_stages or []:
        if stage['id'] not in recorded:
            continue
        differ = [key for key in keys if key in stage and _stage_identity(stage, key) != _stage_identity(recorded[stage['id']], key)]
        if differ:
            changes.append('%s (%s)' % (stage['id'], ', '.join(differ)))
    return changes


def truncate(text, length, end='...', leeway=5):
    """Jinja's truncate: text longer than length + leeway is cut at a word boundary to at most length characters."""
    text = '%s' % (text,)
    if len(text) <= length + leeway:
        return text
    cut = text[:length - len(end)].rsplit(' ', 1)[0]
    return cut + end


def _number(value, fmt):
    return fmt % value if value is not None else '-'


def headline_text(headline):
    """' | [<dataset> T<temperature> ]c<concurrency> <tok/s> tok/s[ tau <accept length>][ (mean of <repeats>)]' for
    each harness run of a stage's headline (the dataset and temperature where the run names them; the means of its
    repeats where it has more than one)."""
    parts = []
    for run in headline or []:
        where = ''
        if run.get('dataset') is not None:
            where = '%s T%s ' % (run['dataset'], _number(run.get('temperature'), '%g'))
        part = ' | %sc%s %s tok/s' % (where, run.get('concurrency'), _number(run.get('output_throughput'), '%.1f'))
        if run.get('accept_length') is not None:
            part += ' tau %.2f' % run['accept_length']
        if isinstance(run.get('repeats'), int) and run['repeats'] > 1:
            part += ' (mean of %d)' % run['repeats']
        parts.append(part)
    return ''.join(parts)


def stage_progress_line(status, label=''):
    """One line per stage while a campaign runs: where it is, what happened, the numbers that matter."""
    status = status or {}
    line = '%s%s: %s' % (label + ' ' if label else '', status.get('stage'), status.get('status'))
    if status.get('status') in ('ok', 'skipped'):
        line += headline_text(status.get('headline'))
        timings = status.get('timings')
        if isinstance(timings, Mapping) and timings.get('ready_s') is not None:
            line += ' | ready %.1f s' % float(timings['ready_s'])
        return line
    return line + ' (%s)' % truncate(status.get('reason') or 'no reason recorded', 300)


def campaign_summary_lines(status, plan_stages, campaign, host, results_root):
    """The campaign's status as lines: the counts, one line per planned stage, where the results are."""
    counts = (status or {}).get('counts') or {}
    recorded = _stages(status)
    lines = ['%s on %s: %s' % (campaign, host, ', '.join('%s %s' % (counts[name], name) for name in sorted(counts)))]
    for stage in plan_stages or []:
        found = recorded.get(stage['id']) or {'status': 'missing'}
        line = '%s: %s' % (stage['id'], found.get('status'))
        if found.get('status') == 'ok':
            line += headline_text(found.get('headline'))
        elif found.get('reason'):
            line += ' (%s)' % truncate(found['reason'], 200)
        lines.append(line)
    lines.append('Results on the host: %s/%s/' % (results_root, campaign))
    return lines


class FilterModule:
    def filters(self):
        return {
            'campaign_done': campaign_done,
            'campaign_todo': campaign_todo,
            'campaign_spec_changes': campaign_spec_changes,
            'campaign_summary_lines': campaign_summary_lines,
            'stage_progress_line': stage_progress_line,
        }
