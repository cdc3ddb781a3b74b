# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""plan_lines: a campaign's plan as lines to read, one per stage. Documented in plan_lines.yml."""

from __future__ import annotations

import json

from ansible_collections.specdec.bench.plugins.filter.campaign import truncate
from ansible_collections.specdec.bench.plugins.plugin_utils.plan import STEP_PARAM, size_text


def _none(value):
    return 'none' if value in (None, '') else '%s' % (value,)


def holder_text(holder):
    """'GPU<index> pid <pid> unit <unit>[ (<command line>)] <MiB> MiB': who holds a GPU a stage needs."""
    text = 'GPU%s pid %s unit %s' % (holder.get('gpu_index'), _none(holder.get('pid')), _none(holder.get('unit')))
    if not holder.get('unit') and holder.get('cmdline'):
        text += ' (%s)' % truncate(holder['cmdline'], 120)
    return text + ' %s MiB' % (holder.get('used_memory_mib'),)


def checkpoint_text(checkpoint):
    """'draft checkpoint-400 (step 400)[ of run R], to copy from H (256.0 KiB)' or '..., already here'."""
    text = 'draft %s (step %s)' % (checkpoint.get('name'), checkpoint.get('step'))
    if checkpoint.get('run'):
        text += ' of run %s' % checkpoint['run']
    if checkpoint.get('present') or not checkpoint.get('source_host'):
        return text + ', already here'
    return text + ', to copy from %s (%s)' % (checkpoint['source_host'], size_text(checkpoint.get('bytes')))


def pinning_text(stage):
    """'pinned to CPUs 0-47,96-143, NUMA node 0', one of the two and why not the other, or why not pinned; None for a
    stage planned before pinning (no cpu_affinity key)."""
    if 'cpu_affinity' not in stage:
        return None
    cpus, nodes, note = stage.get('cpu_affinity'), stage.get('numa_nodes'), stage.get('pin_note')
    parts = []
    if cpus:
        parts.append('CPUs %s' % cpus)
    if nodes:
        parts.append('NUMA node%s %s' % ('s' if any(sep in nodes for sep in ',-') else '', nodes))
    if not parts:
        return note or 'not pinned'
    return 'pinned to ' + ', '.join(parts) + (' (%s)' % note if note else '')


def stage_line(stage, count):
    """stage <n>/<N> <id>: <method> <params>, TP<n> on GPU(s) <indices>, port <p>, feasible and its CPU and NUMA pinning or
    why not, its draft checkpoint, blockers, stops, and the stage an interference stage re-runs alone."""
    params = dict(stage.get('params') or {})
    checkpoint = stage.get('draft_checkpoint')
    if checkpoint:
        params.pop(STEP_PARAM, None)  # the checkpoint's text says it
    line = 'stage %d/%d %s: %s' % (stage['index'] + 1, count, stage['id'], stage.get('method'))
    if params:
        line += ' ' + ' '.join('%s=%s' % (key, params[key]) for key in sorted(params))
    line += ', TP%s on GPU(s) %s, port %s, ' % (
        stage.get('tp'), ','.join('%s' % (index,) for index in stage.get('gpu_indices') or []) or 'none', stage.get('port'))
    line += 'feasible' if stage.get('feasible') else 'infeasible: %s' % (stage.get('reason'),)
    pinning = pinning_text(stage) if stage.get('feasible') else None
    if pinning:
        line += ', ' + pinning
    if checkpoint:
        line += ', ' + checkpoint_text(checkpoint)
    if stage.get('blocked'):
        line += ', BLOCKED by ' + '; '.join(holder_text(h) for h in stage.get('holders') or [] if not h.get('stoppable'))
    if stage.get('conflicts'):
        line += ', stops ' + ', '.join(stage['conflicts'])
    if stage.get('interference_of'):
        line += ', re-runs %s alone at concurrency %s (measures interference)' % (
            stage['interference_of'], ','.join('%s' % (c,) for c in stage.get('concurrency') or []))
    return line


def dataset_text(entry):
    """One prompt set as the plan knows it: name, prompts, categories, turns, new tokens (or random's lengths)."""
    if entry.get('name') == 'random':
        return 'random (%s prompts, %s in / %s out)' % (entry.get('num_prompts'), entry.get('input_len'), entry.get('output_len'))
    text = '%s (%s prompts' % (entry.get('name'), entry.get('num_prompts') or 'all')
    if entry.get('categories'):
        text += ', categories ' + ','.join('%s' % (c,) for c in entry['categories'])
    return text + ', %s turns, max %s new tokens)' % (entry.get('turns'), entry.get('max_new_tokens'))


def workload_line(workload):
    """'workload: <sets>; temperature <t...>; top_p <p>, top_k <k>; stops at EOS | ignores EOS[; chat template kwargs]'."""
    line = 'workload: ' + ', '.join(dataset_text(entry) for entry in workload.get('datasets') or [])
    line += '; temperature ' + ', '.join('%g' % (t,) for t in workload.get('temperature') or [0])
    line += '; top_p %s, top_k %s' % (workload.get('top_p', 1.0), workload.get('top_k', -1))
    line += '; stops at EOS' if workload.get('stop_at_eos', True) else '; ignores EOS'
    if workload.get('chat_template_kwargs'):
        line += '; chat template kwargs ' + json.dumps(workload['chat_template_kwargs'], sort_keys=True)
    return line


def metrics_line(stages):
    """'server metrics off: <why>' when the servers run without --enable-metrics (spec.enable_metrics false, or a
    build without the flag); None when they have it (the default: their command lines say so) or for a plan made
    before the option (no enable_metrics key)."""
    stage = next((stage for stage in stages if 'enable_metrics' in stage), None)
    if stage is None or stage['enable_metrics']:
        return None
    return stage.get('metrics_note') or 'server metrics off'


def checkpoints_line(stages):
    """'draft checkpoints: N to copy (size) from H, M already here' for a draft sweep; None without checkpoints."""
    checkpoints = {}
    for stage in stages:
        if stage.get('draft_checkpoint'):
            checkpoints.setdefault(stage['draft_checkpoint'].get('path'), (stage['draft_checkpoint'], []))[1].append(stage)
    if not checkpoints:
        return None
    copies = [item for item, users in checkpoints.values()
              if item.get('source_host') and not item.get('present') and any(user.get('feasible') for user in users)]
    here = sum(1 for item, _users in checkpoints.values() if item.get('present') or not item.get('source_host'))
    line = 'draft checkpoints: %d to copy' % len(copies)
    if copies:
        line += ' (%s) from %s' % (size_text(sum(item.get('bytes') or 0 for item in copies)),
                                   ', '.join(sorted(set(item['source_host'] for item in copies))))
    return line + ', %d already here' % here


def _gpus_text(indices):
    indices = list(indices or [])
    return '%s %s' % ('GPU' if len(indices) == 1 else 'GPUs', ','.join('%s' % (index,) for index in indices) or 'none')


def pool_lines(stages):
    """'pool <tp id>: GPUs 1,2,...,7, 7 slot(s) of 1 GPU[; GPU(s) 6 unused (fewer than 4 left)]', once per TP entry with
    a pool."""
    lines, seen = [], set()
    for stage in stages:
        pool = stage.get('pool')
        if not isinstance(pool, dict) or pool.get('tp') in seen:
            continue
        seen.add(pool.get('tp'))
        size = pool.get('size')
        line = 'pool %s: %s, %d slot(s) of %s %s' % (pool.get('tp'), _gpus_text(pool.get('gpus')), len(pool.get('slots') or []),
                                                     size, 'GPU' if size == 1 else 'GPUs')
        if pool.get('unused'):
            line += '; %s unused (fewer than %s left for a slot)' % (_gpus_text(pool['unused']), size)
        lines.append(line)
    return lines


def wave_line(wave, members):
    """'wave 1 (5 stages at once): <id> on GPU 1, <id> on GPU 2, ...', 'wave 7: <id> alone (<why>)' or
    'wave 2: <id> on GPUs 1,2,3,4'."""
    if len(members) > 1:
        return 'wave %s (%d stages at once): %s' % (wave, len(members), ', '.join(
            '%s on %s' % (stage['id'], _gpus_text(stage.get('gpu_indices'))) for stage in members))
    stage = members[0]
    if stage.get('alone'):
        return 'wave %s: %s alone (%s)' % (wave, stage['id'], stage['alone'])
    return 'wave %s: %s on %s' % (wave, stage['id'], _gpus_text(stage.get('gpu_indices')))


def wave_lines(stages):
    """The waves of a plan that runs stages side by side (a wave of two stages or more, or an interference stage): a
    line with their count, then one per wave; [] for a plan that runs one stage at a time (or planned before waves)."""
    waves = {}
    for stage in stages:
        if stage.get('wave') is not None:
            waves.setdefault(stage['wave'], []).append(stage)
    if not any(len(members) > 1 or members[0].get('interference_of') for members in waves.values()):
        return []
    most = max(len(members) for members in waves.values())
    lines = ['%d wave(s), at most %d stage(s) at once' % (len(waves), most)]
    return lines + [wave_line(wave, waves[wave]) for wave in sorted(waves)]


def plan_lines(plan_stages, campaign, host):
    """The plan's header (stages, feasible, blocked), its workload (the same in every stage), why the servers serve no
    /metrics when they do not, the draft checkpoints of a sweep (how many to copy, how many already here), the GPU pools,
    one line per stage, then the waves of a plan that runs stages side by side."""
    stages = plan_stages or []
    lines = ['%s on %s: %d stage(s), %d feasible, %d blocked' % (
        campaign, host, len(stages), sum(1 for s in stages if s.get('feasible')), sum(1 for s in stages if s.get('blocked')))]
    workload = next((stage['workload'] for stage in stages if isinstance(stage.get('workload'), dict)), None)
    if workload and workload.get('datasets'):
        lines.append(workload_line(workload))
    metrics = metrics_line(stages)
    if metrics:
        lines.append(metrics)
    checkpoints = checkpoints_line(stages)
    if checkpoints:
        lines.append(checkpoints)
    lines += pool_lines(stages)
    return lines + [stage_line(stage, len(stages)) for stage in stages] + wave_lines(stages)


class FilterModule:
    def filters(self):
        return {'plan_lines': plan_lines}
