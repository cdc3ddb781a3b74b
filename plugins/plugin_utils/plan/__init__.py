# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign planner: a host's facts and a campaign spec -> the stages to run (controller side).

The engine of the specdec.bench filters campaign_plan, fit_tp and model_bytes (plugins/filter/plan.py, a thin adapter;
their documentation is in the .yml files of the same names beside it). Pure functions, so the plan can be printed in
check mode and tested without a host. A stage is made here and only here; roles read it and never rebuild it.
The package has one axis per module:
- common: the constants and checks the others share, and the one way to fail (the field, the problem, what is allowed);
- spec: the campaign spec checked, everything that does not depend on the host, before any stage is made; with
  workload (the prompt sets, sampling, concurrency and repeats), methods (the method table, the SGLang build and its
  flags) and checkpoints (the draft, a sweep's checkpoints, whether each is installed here, the disk they need);
- capacity: what fits (the weights and KV cache headroom per GPU at a TP size: fit_tp, model_bytes, a stage's fit);
- placement: where a stage runs (its GPUs: pins, a pool's slots; its CPUs and NUMA nodes: stage_pinning; its port);
- load: the request rates, the SLOs, the capacity search and the crossover (checked; the `load` of every stage);
- stage: one stage (id, unit, flags, environment, holders and conflicts);
- waves: the stages run at the same time, the CPUs they split, the interference stage.
Here: campaign_plan, the entry point, which takes the host's facts, the spec, the host's inputs and the checkpoint
inputs (HOST_INPUTS and CHECKPOINT_INPUTS: their names and defaults).
"""

from __future__ import annotations

import copy
import itertools

from ansible_collections.specdec.bench.plugins.module_utils._common import ID_PATTERN, ID_RE as _ID_RE
from .capacity import DEFAULT_MEM_FRACTION, DEFAULT_MIN_KV_HEADROOM_GIB, fit_tp, safetensors_total_size
from .checkpoints import DEFAULT_CHECKPOINT_DIR, DEFAULT_CHECKPOINT_MIN_FREE_GIB, check_checkpoint_options, check_disk, sweep_checkpoints
from .common import STEP_PARAM, check_keys, fail, is_int, is_positive_int, size_text
from .methods import build_profile, check_table_flags, method_table
from .placement import free_port, host_gpus, listening_ports, place, pool_key, stage_pinning
from .spec import spec_stoppable, spec_stoppable_processes, validate_spec
from .stage import make_stage
from .waves import Waves

__all__ = ['campaign_plan', 'fit_tp', 'safetensors_total_size', 'stage_pinning', 'size_text', 'STEP_PARAM', 'HOST_INPUTS',
           'CHECKPOINT_INPUTS', 'DEFAULT_BASE_PORT', 'DEFAULT_MEM_FRACTION', 'DEFAULT_MIN_KV_HEADROOM_GIB']

DEFAULT_BASE_PORT = 31000
# What the plan reads of the host besides its facts, and of the checkpoints of a draft sweep: name -> default.
HOST_INPUTS = {
    'methods': None,  # the per-method table (plan_methods); None: the build profile's
    'build': None,  # the SGLang build profile's name (plugins/plugin_utils/sglang_builds/builds.yml)
    'sglang_version': None,  # the SGLang version installed in the servers' interpreter, as read on the host
    'sglang_python': None,  # that interpreter
    'stoppable': None,  # the units the campaign may stop (names or glob patterns)
    'stoppable_processes': None,  # the processes no unit names it may stop, each {name, match}
    'base_port': DEFAULT_BASE_PORT,  # the first stage's port
    'strict': True,  # fail on a TP entry the host has too few or no such GPUs for, else an infeasible stage
    'model_bytes': None,  # the size of the weights when the spec has no model.bytes
}
CHECKPOINT_INPUTS = {
    'draft_checkpoints': None,  # the checkpoints a sweep picks from (checkpoint_facts)
    'installed_checkpoints': None,  # the copies already under <checkpoint_dir>/<run> on this host
    'checkpoint_dir': DEFAULT_CHECKPOINT_DIR,  # where a checkpoint set's checkpoints are copied
    'checkpoint_free_bytes': None,  # the free bytes there; None: the disk is not checked
    'checkpoint_min_free_gib': DEFAULT_CHECKPOINT_MIN_FREE_GIB,  # the GiB to keep free there
}


def _inputs(given, field, defaults):
    """One of the entry point's input mappings with its defaults filled; an unknown key fails, naming the allowed ones."""
    if given is None:
        given = {}
    check_keys(given, field, tuple(defaults))
    return dict(defaults, **given)


def campaign_plan(facts, spec, host=None, checkpoints=None):
    """The ordered stages of a campaign on one host: TP entries in spec order, then methods, then parameter values, then
    the draft's checkpoints (for the methods that use the draft, when it is a sweep).

    facts: the host's ansible_facts (the probe's); spec: the campaign spec; host: the host's inputs besides its facts and
    checkpoints: those of a draft sweep, mappings with the keys of HOST_INPUTS and CHECKPOINT_INPUTS (defaults filled).
    """
    host_inputs, checkpoint_inputs = _inputs(host, 'host', HOST_INPUTS), _inputs(checkpoints, 'checkpoints', CHECKPOINT_INPUTS)
    methods, build, sglang_version, sglang_python = (host_inputs[name] for name in ('methods', 'build', 'sglang_version', 'sglang_python'))
    stoppable, stoppable_processes = host_inputs['stoppable'], host_inputs['stoppable_processes']
    base_port, strict, model_bytes = host_inputs['base_port'], host_inputs['strict'], host_inputs['model_bytes']
    draft_checkpoints, installed_checkpoints = checkpoint_inputs['draft_checkpoints'], checkpoint_inputs['installed_checkpoints']
    checkpoint_dir, checkpoint_free_bytes = checkpoint_inputs['checkpoint_dir'], checkpoint_inputs['checkpoint_free_bytes']
    checkpoint_min_free_gib = checkpoint_inputs['checkpoint_min_free_gib']
    profile = build_profile(build, methods, sglang_version, sglang_python)
    table = method_table(methods or profile['methods'])
    if profile is not None:
        check_table_flags(table, profile)
    plan = validate_spec(spec, table, profile)
    plan['sglang_build'] = {
        'name': profile['name'] if profile else 'custom',
        'description': profile['description'] if profile else 'the method table given to the plan (plan_methods)',
        'release': profile['sglang_version'] if profile else None,
        'version': sglang_version,
        'python': sglang_python,
    }
    stoppable = {'units': spec_stoppable(stoppable), 'processes': spec_stoppable_processes(stoppable_processes)}
    if not is_int(base_port) or not 1024 <= base_port <= 65535:
        fail('base_port', 'is %r' % (base_port,), 'a port number in 1024-65535')
    weights_bytes = plan['model'].get('bytes') or model_bytes
    if weights_bytes is not None and not is_positive_int(weights_bytes):
        fail('model_bytes', 'is %r' % (weights_bytes,), 'a positive integer number of bytes (see specdec.bench.model_bytes)')
    checkpoint_dir = check_checkpoint_options(checkpoint_dir, checkpoint_free_bytes, checkpoint_min_free_gib)
    swept = None  # the (draft_checkpoint, why not) of a sweep, when a method uses the draft
    if plan['draft_sweep'] is not None and any('draft' in table[method]['uses'] for method, _matrix in plan['methods']):
        swept = sweep_checkpoints(plan['draft_sweep'], draft_checkpoints, installed_checkpoints, checkpoint_dir)
    gpus = host_gpus(facts)
    placements = [place(tp, gpus, strict) for tp in plan['tp']]  # every host check before the first stage is built
    busy_ports = listening_ports(facts)
    waves = Waves(plan['parallel'])
    stages, port = [], base_port
    for tp, (slots, why_not) in zip(plan['tp'], placements):
        pool = pool_key(tp, slots, why_not)
        for method, matrix in plan['methods']:
            sweep = swept if swept is not None and 'draft' in table[method]['uses'] else [None]
            for params, checkpoint in itertools.product(matrix, sweep):
                port = free_port(port, busy_ports, base_port, len(stages))

                def build(slot, port=port, method=method, params=params, checkpoint=checkpoint, tp=tp, slots=slots, why_not=why_not):
                    indices = slots[slot]
                    return make_stage(plan, table, tp, indices, why_not, gpus, method, params, port, stoppable, weights_bytes,
                                      checkpoint, pinning=stage_pinning([gpus[i] for i in indices], facts))
                stage = waves.place(slots, build)
                stage['pool'] = copy.deepcopy(pool)
                stages.append(dict(index=len(stages), **stage))
                port += 1
    waves.finish(stages)
    alone = waves.interference_stage(stages, free_port(port, busy_ports, base_port, len(stages)))
    if alone is not None:
        stages.append(dict(alone, index=len(stages)))
    seen = {}
    for stage in stages:  # a safety net: the spec checks above already make ids unique and safe
        if not _ID_RE.match(stage['id']) or len(stage['unit']) > 255:
            fail('stage id %r' % stage['id'], 'is not usable in a unit name', ID_PATTERN)
        if stage['id'] in seen:
            fail('stage %d (%s)' % (stage['index'], stage['id']), 'repeats stage %d' % seen[stage['id']], 'distinct stages')
        seen[stage['id']] = stage['index']
    check_disk(stages, checkpoint_dir, checkpoint_free_bytes, checkpoint_min_free_gib)
    return stages
