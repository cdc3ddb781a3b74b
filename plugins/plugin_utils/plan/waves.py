# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Waves: the stages run at the same time, made greedily in plan order on disjoint GPUs (spec.parallel), the CPUs
their stages split, and the interference stage that re-runs the first stage of the largest wave alone."""

from __future__ import annotations

import copy

from ansible_collections.specdec.bench.plugins.module_utils._host_probe import format_cpu_list
from .placement import cpu_set
from .stage import UNIT_PREFIX

# the stage appended to a parallel campaign, re-running the first stage of its largest wave alone
ALONE_SUFFIX = '-alone'


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


class Waves:
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
            cpus = cpu_set(stage['cpu_affinity'])
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
            cpus = cpu_set(stage['cpu_affinity'])
            others = sum(1 for other in members if other is not stage and cpus & (cpu_set(other['cpu_affinity']) or set()))
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
            # only the grid's first run: no open-loop run, search or crossover point (the SLOs still judge it)
            load=dict(stage['load'], request_rates=[], search=None, crossover_concurrency=[]),
            wave=self.count + 1,
            wave_stages=[stage_id],
            alone='measures interference: re-runs %s alone' % original['id'],
            interference_of=original['id'],
            pool=copy.deepcopy(original['pool']),
        )
        return stage
