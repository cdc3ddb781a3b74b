# SPDX-License-Identifier: GPL-3.0-or-later
"""Collected campaign results made here, in the layout bench_stage writes, for the report's tests and benchmark.

Each run at one concurrency gets per-request records shaped as the builtin harness writes them (raw-c<N>.jsonl),
and its result-c<N>.json is made from those records by the harness's own code (_harness.from_builtin), so the
tests can recompute every number from the raw records independently. The modelled timings follow the shape the
DDTree paper reports: acceptance length keeps rising with the budget while the cost of a verify step grows, so the
speedup peaks at an intermediate budget.
"""
import json
import math
import random
from pathlib import Path

from ansible_collections.specdec.bench.plugins.module_utils._common import RESULTS_LAYOUT as LAYOUT
from ansible_collections.specdec.bench.plugins.module_utils._harness import from_builtin

SHORT = {'budget': 'b', 'topk': 'k', 'num_draft_tokens': 'n'}
GPU_NAME = 'NVIDIA RTX PRO 6000 Blackwell Server Edition'


def stage_id(tp, method, params):
    return 'tp%d-%s' % (tp, '-'.join([method] + ['%s%s' % (SHORT[name], value) for name, value in params.items()]))


def tau_and_cost(method, params):
    """(acceptance length, verify step cost relative to one autoregressive step)."""
    if method == 'dflash':
        return 1.0 + 0.6 * math.sqrt(params.get('num_draft_tokens', 16)), 1.3
    if method == 'ddtree':
        budget = params['budget']
        return 1.0 + 4.5 * (1.0 - math.exp(-budget / 40.0)) + 0.05 * params.get('topk', 4), 1.0 + budget / 100.0
    return None, 1.0


def request_records(rng, method, params, tp, concurrency, num_prompts, input_len, output_len, warmup=1):
    """Per-request records of one run, as _builtin_harness.LoadRun writes them (times relative to the run's start)."""
    tau, cost = tau_and_cost(method, params)
    step = 0.02 * cost * (1.0 + 0.12 * (concurrency - 1)) / tp ** 0.7
    records = []
    for index in range(warmup):
        records.append({'index': index, 'warmup': True, 'success': True, 'error': None, 'scheduled_s': 0.0,
                        'intended_start_s': 0.0, 'start_s': 0.0, 'end_s': 0.5, 'ttft_s': 0.1, 'latency_s': 0.5,
                        'itl_s': [0.01] * (output_len - 1), 'output_tokens': output_len, 'prompt_tokens': input_len,
                        'spec_verify_ct': None, 'spec_accept_length': None})
    slots = [0.0] * concurrency
    for index in range(num_prompts):
        slot = min(range(concurrency), key=lambda i: slots[i])
        intended = slots[slot]
        start = intended + rng.uniform(0.0, 0.0005)
        ttft = 0.004 * input_len / 64.0 * (1.0 + 0.1 * (concurrency - 1)) * rng.uniform(0.9, 1.1)
        per_token = step / (tau or 1.0)
        itl = [round(per_token * rng.uniform(0.8, 1.2), 7) for _token in range(output_len - 1)]
        latency = ttft + sum(itl) + rng.uniform(0.0, 0.0002)
        end = start + latency
        slots[slot] = end
        verify = max(1, int(round(output_len / tau))) if tau else None
        records.append({'index': index, 'warmup': False, 'success': True, 'error': None, 'scheduled_s': 0.0,
                        'intended_start_s': intended, 'start_s': start, 'end_s': end, 'ttft_s': ttft,
                        'latency_s': latency, 'itl_s': itl, 'output_tokens': output_len, 'prompt_tokens': input_len,
                        'spec_verify_ct': verify, 'spec_accept_length': output_len / verify if verify else None})
    return records


def gpus_doc(count=8, name=GPU_NAME, mib=97887, driver='580.95.05', cuda='13.0'):
    return {'nvidia_gpus': [{'index': i, 'uuid': 'GPU-%08d' % i, 'name': name, 'memory_total_mib': mib} for i in range(count)],
            'nvidia_driver': {'version': driver, 'cuda_version': cuda}}


def write_json(path, data):
    path.write_text(json.dumps(data, indent=2) + '\n')


def make_campaign(root, host, campaign, matrix, concurrency=(1, 4), num_prompts=8, input_len=64, output_len=32, seed=0,
                  faults=None, gpus=None, write_raw=True, sglang_build=None):
    """Write <root>/<host>/<campaign>/ for matrix [(tp, method, params)]; returns the stage dicts (the plan).

    faults: {stage id: ('failed', reason) | ('infeasible', reason) | ('never',) | ('incomplete', concurrency)}.
    """
    faults = faults or {}
    gpus = gpus or gpus_doc()
    rng = random.Random(seed)
    folder = Path(root) / host / campaign
    folder.mkdir(parents=True, exist_ok=True)
    stages = []
    for tp, method, params in matrix:
        sid = stage_id(tp, method, params)
        fault = faults.get(sid, ('ok',))
        uuids = [gpu['uuid'] for gpu in gpus['nvidia_gpus'][1:1 + tp]] if tp < len(gpus['nvidia_gpus']) else \
            [gpu['uuid'] for gpu in gpus['nvidia_gpus'][:tp]]
        stage = {'id': sid, 'campaign': campaign, 'method': method, 'params': dict(params), 'tp': tp,
                 'gpu_indices': list(range(1, 1 + tp)), 'gpus': uuids, 'port': 31000 + len(stages),
                 'unit': 'specdec-%s-%s.service' % (campaign, sid), 'model_path': '/models/Qwen3.6-27B',
                 'draft_path': None if method == 'autoregressive' else '/models/Qwen3.6-27B-DFlash',
                 'workload': {'input_len': input_len, 'output_len': output_len, 'num_prompts': num_prompts},
                 'concurrency': list(concurrency), 'feasible': fault[0] != 'infeasible',
                 'reason': fault[1] if fault[0] == 'infeasible' else None}
        if sglang_build is not None:
            stage['sglang_build'] = dict(sglang_build)
        stages.append(stage)
        stage_dir = folder / sid
        stage_dir.mkdir(exist_ok=True)
        if fault[0] == 'never':
            continue
        if fault[0] in ('failed', 'infeasible'):
            write_json(stage_dir / LAYOUT['status'], {'stage': sid, 'status': fault[0], 'reason': fault[1], 'started': None,
                                                      'finished': None, 'headline': []})
            continue
        headline = []
        for c in concurrency:
            records = request_records(rng, method, params, tp, c, num_prompts, input_len, output_len)
            interrupted = False
            if fault == ('incomplete', c):
                records[-1].update(success=False, error='ReadTimeout: the server stopped answering')
                interrupted = True
            raw_name = LAYOUT['raw'].format(concurrency=c)
            if write_raw:
                (stage_dir / raw_name).write_text(''.join(json.dumps(record) + '\n' for record in records))
            measured = [r for r in records if not r['warmup']]
            row = from_builtin(records, max(r['end_s'] for r in measured), c, num_prompts, input_len, output_len,
                               seed=1, raw_file='/root/bench_results/%s/%s/%s' % (campaign, sid, raw_name), stage=sid,
                               interrupted=interrupted)
            write_json(stage_dir / LAYOUT['result'].format(concurrency=c), row)
            headline.append({'concurrency': c, 'output_throughput': row['output_throughput'], 'accept_length': row['accept_length']})
        tau, _cost = tau_and_cost(method, params)
        info = {'version': '0.5.23', 'model_path': stage['model_path'], 'tp_size': tp,
                'speculative_draft_model_path': stage['draft_path'], 'internal_states': [{}]}
        if tau:
            info['internal_states'][0]['avg_spec_accept_length'] = tau
        write_json(stage_dir / LAYOUT['server_info'], info)
        write_json(stage_dir / LAYOUT['gpus'], gpus)
        write_json(stage_dir / LAYOUT['status'], {'stage': sid, 'status': 'ok', 'reason': None, 'started': '2026-12-02T10:00:00Z',
                                                  'finished': '2026-12-02T10:01:00Z', 'headline': headline})
    write_json(folder / LAYOUT['campaign'], {'campaign': campaign, 'host': host, 'stages': stages})
    return stages


def ct200_matrix(tps=(1, 4), budgets=(16, 32, 64, 128, 256), topks=(4,)):
    """The CT200 campaign's shape: AR, DFlash and a DDTree budget sweep per TP."""
    matrix = []
    for tp in tps:
        matrix.append((tp, 'autoregressive', {}))
        matrix.append((tp, 'dflash', {'num_draft_tokens': 16}))
        for budget in budgets:
            for topk in topks:
                matrix.append((tp, 'ddtree', {'budget': budget, 'topk': topk}))
    return matrix
