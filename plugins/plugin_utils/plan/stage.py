# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One stage: its id, unit, SGLang flags and environment from the method table, its fit, the holders of its GPUs and
the conflicts it stops."""

from __future__ import annotations

import copy
import fnmatch

from ansible_collections.specdec.bench.plugins.module_utils._process import RESTORED_SERVICE
from .capacity import stage_fit
from .common import STEP_PARAM, STEP_SHORT
from .load import stage_load
from .methods import METRICS_FLAG

HOST = '127.0.0.1'
UNIT_PREFIX = 'specdec-'


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


def _common_args(plan, tp, port):
    """The flags every stage's server gets (COMMON_FLAGS, and METRICS_FLAG when the plan has metrics on), before its method's."""
    args = [
        ['--model-path', plan['model']['path']],
        ['--tp-size', str(tp)],
        ['--host', HOST],
        ['--port', str(port)],
        ['--mem-fraction-static', str(plan['mem_fraction'])],
    ]
    if plan['enable_metrics']:
        args.append(METRICS_FLAG)
    return args


def make_stage(plan, table, tp, indices, why_not, host, method, params, port, stoppable, weights_bytes, checkpoint=None, pinning=(None, None, None)):
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
        fit, reason = stage_fit(plan, stage_bytes, gpus, tp['size'], [host[index].get('memory_total_mib') for index in sorted(host)])
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
        # the open-loop rates, SLOs, capacity search and crossover concurrencies its server also runs (load.stage_load)
        'load': stage_load(plan['load'], plan['concurrency']),
        'sglang_build': dict(plan['sglang_build']),
        # SGLang's /metrics (--enable-metrics in argv), which bench_run scrapes around each measured run; why not when off
        'enable_metrics': plan['enable_metrics'],
        # the report's task accuracy options (spec.accuracy): execute_code runs the code sets' tests in its sandbox
        'accuracy': dict(plan['accuracy']),
        'metrics_note': plan['metrics_note'],
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
        # when it runs (Waves): its wave and the stages in it, why it runs alone, the stage it re-runs alone; its TP's pool
        'wave': None,
        'wave_stages': [],
        'alone': None,
        'interference_of': None,
        'pool': None,
    }
