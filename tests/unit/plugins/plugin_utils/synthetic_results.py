# SPDX-License-Identifier: GPL-3.0-or-later
"""Collected campaign results made here, in the layout bench_stage writes, for the report's tests and benchmark.

Each run (dataset, temperature, concurrency) gets per-request records shaped as the builtin harness writes them (the
layout's raw file), and its result file is made from those records by the harness's own code (_harness.from_builtin),
so the tests can recompute every number from the raw records independently. The modelled timings follow the shape
the DDTree paper reports: acceptance length keeps rising with the budget while the cost of a verify step grows, so the
speedup peaks at an intermediate budget. Acceptance also depends on the dataset (math and code accept more than chat,
DATASET_TAU) and falls with the temperature; a real set's requests stop at EOS (fewer tokens than max_new_tokens).
legacy=True writes a campaign as it was collected before datasets: result-c<N>.json files without the new keys.
repeats=N writes N measured repeats of every run (result-...-r<r>.json and raw-...-r<r>.jsonl, as bench_run lays them
out, each result with its repeat and repeats); without it a run is one result (repeat 1 of the layout). A dataset of
DATASET_CATEGORIES gives each request a category (by its index) whose acceptance is CATEGORY_TAU times the set's.
energy=True adds each result's energy keys as bench_run's telemetry writes them (energy_result): the
stage's GPUs draw power_model's watts over the run, measured by NVML's counter; throttled names the runs whose GPUs
saw a clock event reason.
Every request also carries what SGLang's final meta_info gives (spec_correct_drafts_histogram, spec_num_correct_drafts,
spec_num_proposed_drafts, spec_accept_rate, cached_tokens; spec_histogram models them without touching the random
stream, so the earlier figures stay as they were), and each result the harness's acceptance, decode and cache keys
(why_keys, the contract's definitions transcribed here, so the report's tests do not hang on the harness's code). The cache is a radix cache: every request
but a run's first finds the shared system prompt (SYSTEM_SHARE of its prompt); turns=N makes each prompt an N-turn
conversation whose later turns find the whole earlier conversation, unless its stage is in lost_cache (the hybrid
Mamba/attention case: speculation keeps only the system prompt's hit).
"""
import hashlib
import json
import math
import random
from pathlib import Path

from ansible_collections.specdec.bench.plugins.module_utils._common import RESULTS_LAYOUT as LAYOUT
from ansible_collections.specdec.bench.plugins.module_utils._common import temperature_tag
from ansible_collections.specdec.bench.plugins.module_utils._stage.harness import from_builtin

SHORT = {'budget': 'b', 'topk': 'k', 'num_draft_tokens': 'n'}
# How a dataset's prompts scale the acceptance length (math and code accept more than open chat).
DATASET_TAU = {'random': 1.0, 'gsm8k': 1.25, 'math500': 1.3, 'humaneval': 1.2, 'mbpp': 1.15, 'mt-bench': 0.85, 'spec-bench': 0.9}
# The keys of a result before datasets (schema 1 as 0.4 wrote it): a legacy result keeps only these.
LEGACY_KEYS = (
    'schema_version', 'harness', 'stage', 'concurrency', 'num_prompts', 'input_len', 'output_len', 'request_rate', 'seed',
    'completed', 'failed', 'complete', 'duration_s', 'total_input_tokens', 'total_output_tokens', 'output_throughput',
    'request_throughput', 'mean_ttft_ms', 'median_ttft_ms', 'p99_ttft_ms', 'mean_itl_ms', 'median_itl_ms', 'p99_itl_ms',
    'mean_tpot_ms', 'median_tpot_ms', 'p99_tpot_ms', 'mean_e2e_latency_ms', 'median_e2e_latency_ms', 'p99_e2e_latency_ms',
    'accept_length', 'accept_length_source', 'mean_client_lag_ms', 'p99_client_lag_ms', 'max_client_lag_ms', 'errors',
    'raw_file')
LEGACY_LAYOUT = dict(LAYOUT, result='result-c{concurrency}.json', raw='raw-c{concurrency}.jsonl')
# A run's files before repeats (0.5), and with them.
PREVIOUS_LAYOUT = dict(LAYOUT, result='result-{dataset}-t{temperature}-c{concurrency}.json',
                       raw='raw-{dataset}-t{temperature}-c{concurrency}.jsonl')
REPEAT_LAYOUT = dict(LAYOUT, result='result-{dataset}-t{temperature}-c{concurrency}-r{repeat}.json',
                     raw='raw-{dataset}-t{temperature}-c{concurrency}-r{repeat}.jsonl')
# The categories of a set's prompts (request i has the (i mod n)-th), and how each scales the acceptance length.
DATASET_CATEGORIES = {'spec-bench': ('writing', 'math', 'coding')}
CATEGORY_TAU = {'writing': 0.8, 'math': 1.2, 'coding': 1.1}
GPU_NAME = 'NVIDIA RTX PRO 6000 Blackwell Server Edition'
# The share of every prompt that is the shared system prompt (a radix cache hit for every request but a run's first).
SYSTEM_SHARE = 0.25
# The deepest a verify step accepts: a DFlash block of 16 proposes 15 drafts; a DDTree path is at most as deep.
MAX_DEPTH = 15


def draft_tokens(method, params):
    """SGLang's speculative_num_draft_tokens of a stage: DFlash's block, DDTree's budget plus the root; None for AR."""
    if method == 'dflash':
        return params.get('num_draft_tokens', 16)
    if method == 'ddtree':
        return params['budget'] + 1
    return None


def spec_histogram(tokens, verify, depth):
    """The correct-drafts histogram of one request (index = correct drafts in a verify step, value = steps): its verify
    steps spread as a truncated geometric over 0..depth (each position accepted with the same chance given the one
    before), then moved a step up or down until the correct drafts add up to what its tokens say: tokens - 1 - verify
    (the verify steps made every token but the first, each its correct drafts plus one). Deterministic: no random draw."""
    correct = min(max(tokens - 1 - verify, 0), verify * depth)
    mean = correct / float(verify)
    low, high = 0.0, 1.0
    for _step in range(60):  # bisection on p: the mean sum_{i=1..depth} p^i rises with p
        p = (low + high) / 2.0
        if sum(p ** i for i in range(1, depth + 1)) < mean:
            low = p
        else:
            high = p
    p = (low + high) / 2.0
    shares = [p ** j * (1.0 - p) for j in range(depth)] + [p ** depth]
    counts = [int(verify * share) for share in shares]
    for index in sorted(range(len(shares)), key=lambda j: verify * shares[j] - counts[j], reverse=True)[:verify - sum(counts)]:
        counts[index] += 1  # largest remainders
    made = sum(index * count for index, count in enumerate(counts))
    while made < correct:  # the lowest step that can accept one more does
        index = next(j for j in range(depth) if counts[j])
        counts[index] -= 1
        counts[index + 1] += 1
        made += 1
    while made > correct:  # the highest step accepts one fewer
        index = next(j for j in range(depth, 0, -1) if counts[j])
        counts[index] -= 1
        counts[index - 1] += 1
        made -= 1
    return counts


def spec_fields(record, method, params):
    """SGLang's final meta_info acceptance fields of a request record (spec_verify_ct already set), None for AR."""
    total = draft_tokens(method, params)
    verify = record.get('spec_verify_ct')
    if not total or not verify:
        return {'spec_correct_drafts_histogram': None, 'spec_num_correct_drafts': None, 'spec_num_proposed_drafts': None,
                'spec_accept_rate': None}
    histogram = spec_histogram(record['output_tokens'], verify, min(total - 1, MAX_DEPTH))
    correct = sum(index * count for index, count in enumerate(histogram))
    proposed = verify * (total - 1)
    return {'spec_correct_drafts_histogram': histogram, 'spec_num_correct_drafts': correct, 'spec_num_proposed_drafts': proposed,
            'spec_accept_rate': correct / float(proposed)}


def why_keys(records):
    """The harness's acceptance, decode and cache keys of a run from its records, as the issue's contract defines
    them, over the finished measured requests."""
    done = [r for r in records if not r.get('warmup') and r.get('success')]
    spec = [r for r in done if r.get('spec_verify_ct')]
    tokens = [(r.get('completion_tokens') or r['output_tokens'], r['spec_verify_ct']) for r in spec]
    proposed = sum(r.get('spec_num_proposed_drafts') or 0 for r in spec)
    histogram = None
    for r in spec:
        if r.get('spec_correct_drafts_histogram'):
            if histogram is None:
                histogram = [0] * len(r['spec_correct_drafts_histogram'])
            for index, count in enumerate(r['spec_correct_drafts_histogram']):
                histogram[index] += count
    decoded = [r for r in done if (r.get('output_tokens') or 0) > 1 and r.get('ttft_s') is not None and r.get('latency_s') is not None]
    tpots = [(r['latency_s'] - r['ttft_s']) / (r['output_tokens'] - 1) for r in decoded]
    carry = [r.get('spec_verify_ct') is not None for r in decoded]
    decode_tokens = sum(r['output_tokens'] - 1 for r in decoded)
    steps = sum(r['spec_verify_ct'] for r in decoded) if all(carry) else decode_tokens if not any(carry) else None
    decode_time = sum(r['latency_s'] - r['ttft_s'] for r in decoded)
    prompt = sum(r.get('prompt_tokens') or 0 for r in done)
    cached = sum(r.get('cached_tokens') or 0 for r in done)
    by_turn = []
    for turn in range(max([r.get('turn') or 0 for r in done] or [0]) + 1):
        mine = [r for r in done if (r.get('turn') or 0) == turn]
        total = sum(r.get('prompt_tokens') or 0 for r in mine)
        by_turn.append(sum(r.get('cached_tokens') or 0 for r in mine) / float(total) if total else None)
    mean = sum(tpots) / len(tpots) if tpots else None
    return {
        'accept_rate': sum(r.get('spec_num_correct_drafts') or 0 for r in spec) / float(proposed) if proposed else None,
        'accept_length_mean_of_means': sum(t / float(v) for t, v in tokens) / len(tokens) if tokens else None,
        'accept_length_token_weighted': sum(t * t / float(v) for t, v in tokens) / sum(t for t, v in tokens) if tokens else None,
        'accept_histogram': histogram,
        'accept_by_position': [sum(histogram[i:]) / float(sum(histogram)) for i in range(1, len(histogram))] if histogram else None,
        'decode_tpot_sd_ms': math.sqrt(sum((x - mean) ** 2 for x in tpots) / (len(tpots) - 1)) * 1000.0 if len(tpots) > 1 else None,
        'decode_tpot_n': len(tpots), 'decode_time_s': decode_time if decoded else None,
        'decode_tokens': decode_tokens if decoded else None, 'decode_steps': steps if decoded else None,
        'step_time_ms': decode_time / steps * 1000.0 if decoded and steps else None,
        'request_tokens_per_s_mean': sum(r['output_tokens'] / r['latency_s'] for r in done) / len(done) if done else None,
        'cached_tokens': cached, 'cache_hit_rate': cached / float(prompt) if prompt else None,
        'cache_hit_rate_by_turn': by_turn,
    }


def power_model(method, params, tp, concurrency):
    """(idle watts, busy watts) of a stage's GPUs together: the draft model's work and the batch draw more."""
    _tau, cost = tau_and_cost(method, params)
    return 70.0 * tp, tp * (180.0 + 25.0 * math.sqrt(concurrency)) * (1.0 + 0.5 * (cost - 1.0))


def energy_result(rng, row, method, params, tp, concurrency, throttled=False, name=None):
    """The energy keys of one repeat's result (bench_run's energy_keys): power_model's draw over the run's duration,
    a 2% spread between repeats, by the counter (pynvml)."""
    idle, busy = power_model(method, params, tp, concurrency)
    energy = busy * rng.uniform(0.98, 1.02) * row['duration_s']
    tokens = row['total_output_tokens']
    return {'energy_j': energy, 'avg_power_w': energy / row['duration_s'], 'idle_power_w': idle * rng.uniform(0.99, 1.01),
            'output_tokens_per_j': tokens / energy, 'j_per_output_token': energy / tokens, 'energy_method': 'counter',
            'energy_backend': 'pynvml', 'energy_samples': max(2, int(row['duration_s'] / 0.1)), 'power_source': 'instant',
            'gpu_throttled': ['sw_power_cap'] if throttled else [], 'telemetry_file': name, 'energy_note': None}


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


def run_tau(method, params, dataset='random', temperature=0.0):
    """The acceptance length of a run: the method's, scaled by the dataset and lowered by the temperature."""
    tau, _cost = tau_and_cost(method, params)
    if tau is None:
        return None
    return 1.0 + (tau - 1.0) * DATASET_TAU.get(dataset, 1.0) * (1.0 - 0.2 * min(temperature, 2.0))


def request_records(rng, method, params, tp, concurrency, num_prompts, input_len, output_len, warmup=1, dataset=None,
                    temperature=0.0, turns=1, lost_cache=False):
    """Per-request records of one run, as _builtin_harness.LoadRun writes them (times relative to the run's start).

    dataset: None for today's random prompts (every request output_len tokens, ignore_eos); a name for a real set:
    each request stops at an EOS between half of output_len (max_new_tokens) and all of it, and carries its id.
    turns: the turns of each prompt's conversation (a real set only); lost_cache: later turns find only the system prompt.
    """
    base_tau = run_tau(method, params, dataset or 'random', temperature)
    _tau, cost = tau_and_cost(method, params)
    categories = DATASET_CATEGORIES.get(dataset)
    step = 0.02 * cost * (1.0 + 0.12 * (concurrency - 1)) / tp ** 0.7
    records = []
    for index in range(warmup):
        records.append({'index': index, 'warmup': True, 'success': True, 'error': None, 'scheduled_s': 0.0,
                        'intended_start_s': 0.0, 'start_s': 0.0, 'end_s': 0.5, 'ttft_s': 0.1, 'latency_s': 0.5,
                        'itl_s': [0.01] * (output_len - 1), 'output_tokens': output_len, 'prompt_tokens': input_len,
                        'spec_verify_ct': None, 'spec_accept_length': None})
    slots = [0.0] * concurrency
    history = {}
    for index, turn in [(index, turn) for index in range(num_prompts) for turn in range(turns if dataset is not None else 1)]:
        category = categories[index % len(categories)] if categories else None
        tau = 1.0 + (base_tau - 1.0) * CATEGORY_TAU[category] if category and base_tau else base_tau
        slot = min(range(concurrency), key=lambda i: slots[i])
        intended = slots[slot]
        start = intended + rng.uniform(0.0, 0.0005)
        ttft = 0.004 * input_len / 64.0 * (1.0 + 0.1 * (concurrency - 1)) * rng.uniform(0.9, 1.1)
        per_token = step / (tau or 1.0)
        tokens = output_len if dataset is None else rng.randint(max(2, output_len // 2), output_len)
        itl = [round(per_token * rng.uniform(0.8, 1.2), 7) for _token in range(tokens - 1)]
        latency = ttft + sum(itl) + rng.uniform(0.0, 0.0002)
        end = start + latency
        slots[slot] = end
        jitter = 1.0 if dataset is None else rng.uniform(0.9, 1.1)  # random prompts: the figures of earlier reports
        verify = max(1, int(round(tokens / (tau * jitter)))) if tau else None
        earlier = history.get(index, 0)  # the conversation so far: its earlier prompts and answers
        prompt = earlier + input_len
        shared = int(SYSTEM_SHARE * input_len) if (index, turn) != (0, 0) else 0
        history[index] = prompt + tokens
        record = {'index': index, 'warmup': False, 'success': True, 'error': None, 'scheduled_s': 0.0,
                  'intended_start_s': intended, 'start_s': start, 'end_s': end, 'ttft_s': ttft,
                  'latency_s': latency, 'itl_s': itl, 'output_tokens': tokens, 'prompt_tokens': prompt,
                  'spec_verify_ct': verify, 'spec_accept_length': tokens / verify if verify else None,
                  'cached_tokens': shared if turn == 0 or lost_cache else max(earlier, shared)}
        record.update(spec_fields(record, method, params))
        if dataset is not None:
            record.update(id=str(index + 1), turn=turn, final=turn == turns - 1, completion_tokens=tokens,
                          finish_reason='stop' if tokens < output_len else 'length')
            if category:
                record['category'] = category
        records.append(record)
    return records


def prepared(name, num_prompts, max_new_tokens, kind='builtin'):
    """A dataset as workload_prepare returns it (the controller paths left out, as status.json lists it)."""
    if name == 'random':
        return {'name': 'random', 'kind': 'random', 'num_prompts': num_prompts, 'input_len': 64, 'output_len': max_new_tokens}

    def digest(what):
        return hashlib.sha256(('%s-%s' % (what, name)).encode('utf-8')).hexdigest()
    return {'name': name, 'kind': kind, 'source': 'https://example.invalid/%s/test.jsonl' % name,
            'source_sha256': digest('source'), 'pinned': 'table', 'format': 'turns', 'count': num_prompts,
            'categories': categories_of(name, num_prompts), 'turns': 'all', 'max_new_tokens': max_new_tokens,
            'num_prompts': num_prompts, 'normalized_sha256': digest('normalized'), 'template_sha256': digest('template'),
            'chat_template_kwargs': {}, 'prompts_sha256': digest('prompts'), 'notes': []}


def categories_of(name, num_prompts):
    """{category: prompts} of a prepared set: DATASET_CATEGORIES' share the prompts by index, any other is 'general'."""
    names = DATASET_CATEGORIES.get(name)
    if not names:
        return {'general': num_prompts}
    return {category: len(range(index, num_prompts, len(names))) for index, category in enumerate(names)}


def gpus_doc(count=8, name=GPU_NAME, mib=97887, driver='580.95.05', cuda='13.0'):
    return {'nvidia_gpus': [{'index': i, 'uuid': 'GPU-%08d' % i, 'name': name, 'memory_total_mib': mib} for i in range(count)],
            'nvidia_driver': {'version': driver, 'cuda_version': cuda}}


def write_json(path, data):
    path.write_text(json.dumps(data, indent=2) + '\n')


def make_campaign(root, host, campaign, matrix, concurrency=(1, 4), num_prompts=8, input_len=64, output_len=32, seed=0,
                  faults=None, gpus=None, write_raw=True, sglang_build=None, datasets=None, temperatures=None, legacy=False,
                  server_bias=None, repeats=None, energy=False, throttled=None, turns=1, lost_cache=()):
    """Write <root>/<host>/<campaign>/ for matrix [(tp, method, params)]; returns the stage dicts (the plan).

    faults: {stage id: ('failed', reason) | ('infeasible', reason) | ('never',) | ('incomplete', concurrency)}.
    datasets: None for a workload without datasets (random prompts, temperature 0, as before datasets), else names
    (each run with max_new_tokens output_len and num_prompts prompts); temperatures: the sweep (default [0]).
    server_bias: {stage id: factor} of the /server_info τ against the requests' (a disagreement to flag).
    legacy: the files a campaign collected before datasets holds (result-c<N>.json without the new keys).
    repeats: None for one result per run (LAYOUT's names at repeat 1, no repeat keys); N for N repeats (REPEAT_LAYOUT).
    energy: each result gets its energy keys (energy_result); throttled: {stage id: [(concurrency, repeat)]} whose GPUs
    were throttled (gpu_throttled ['sw_power_cap']).
    turns: the turns of each conversation of a real set; lost_cache: the stage ids whose later turns lose their cache hits.
    """
    faults = faults or {}
    server_bias = server_bias or {}
    layout = LEGACY_LAYOUT if legacy else REPEAT_LAYOUT if repeats else LAYOUT
    entries = [prepared(name, num_prompts, output_len) for name in datasets] if datasets else None
    temperatures = list(temperatures) if temperatures else [0.0]
    runs = [(entry['name'] if entries else 'random', float(t)) for entry in (entries or [None]) for t in temperatures]
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
                 'workload': workload(input_len, output_len, num_prompts, entries, temperatures, legacy),
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
        for (dataset, temperature), c, repeat in [(run, c, r) for run in runs for c in concurrency for r in range(1, (repeats or 1) + 1)]:
            real = dataset if entries and dataset != 'random' else None
            records = request_records(rng, method, params, tp, c, num_prompts, input_len, output_len, dataset=real,
                                      temperature=temperature, turns=turns, lost_cache=sid in lost_cache)
            interrupted = False
            if fault == ('incomplete', c):
                records[-1].update(success=False, error='ReadTimeout: the server stopped answering')
                interrupted = True
            names = {'dataset': dataset, 'temperature': temperature_tag(temperature), 'concurrency': c, 'repeat': repeat}
            raw_name = layout['raw'].format(**names)
            if write_raw:
                (stage_dir / raw_name).write_text(''.join(json.dumps(record) + '\n' for record in records))
            measured = [r for r in records if not r['warmup']]
            tau = run_tau(method, params, dataset, temperature)
            done = [r for r in measured if r['success'] and r['spec_verify_ct']]
            # the server counts the same steps (its figure also holds the warm-up: server_bias models the gap)
            # as SGLang counts: the tokens of verify steps, without each request's first (prefill) token
            served = sum(r['output_tokens'] - 1 for r in done) / sum(r['spec_verify_ct'] for r in done) if done else None
            info = {'internal_states': [{'avg_spec_accept_length': served * server_bias.get(sid, 1.0)}]} if served else None
            row = from_builtin(records, max(r['end_s'] for r in measured), c, num_prompts, input_len, output_len,
                               seed=1, raw_file='/root/bench_results/%s/%s/%s' % (campaign, sid, raw_name), stage=sid,
                               interrupted=interrupted, server_info=info, **run_workload(entries, dataset, temperature, output_len))
            row.update(why_keys(records))  # the contract's figures, whatever the harness of this tree computes
            if legacy:
                row = {key: row[key] for key in LEGACY_KEYS}
                row['accept_length_source'] = 'server_info' if tau else None
            if repeats:
                row.update(repeat=repeat, repeats=repeats)
            if energy:
                telemetry = LAYOUT['telemetry'].format(**names) if 'telemetry' in LAYOUT else None
                row.update(energy_result(rng, row, method, params, tp, c, (c, repeat) in (throttled or {}).get(sid, ()), telemetry))
            write_json(stage_dir / layout['result'].format(**names), row)
            if repeat == 1:
                headline.append({'concurrency': c, 'output_throughput': row['output_throughput'], 'accept_length': row['accept_length']})
        tau, _cost = tau_and_cost(method, params)
        info = {'version': '0.5.23', 'model_path': stage['model_path'], 'tp_size': tp,
                'speculative_draft_model_path': stage['draft_path'], 'internal_states': [{}]}
        if tau:
            info['internal_states'][0]['avg_spec_accept_length'] = tau
        write_json(stage_dir / LAYOUT['server_info'], info)
        write_json(stage_dir / LAYOUT['gpus'], gpus)
        status = {'stage': sid, 'status': 'ok', 'reason': None, 'started': '2026-12-02T10:00:00Z',
                  'finished': '2026-12-02T10:01:00Z', 'headline': headline}
        if repeats:
            status['repeats'] = repeats
        if entries:
            status['datasets'] = entries
        write_json(stage_dir / LAYOUT['status'], status)
    write_json(folder / LAYOUT['campaign'], {'campaign': campaign, 'host': host, 'stages': stages})
    return stages


def workload(input_len, output_len, num_prompts, entries, temperatures, legacy):
    """A stage's workload as the plan writes it: today's keys, and the normalized datasets and sampling."""
    values = {'input_len': input_len, 'output_len': output_len, 'num_prompts': num_prompts}
    if legacy:
        return values
    values.update(temperature=[float(t) for t in temperatures], top_p=1.0, top_k=-1, stop_at_eos=True, chat_template_kwargs={})
    if entries:
        values['datasets'] = [{'name': e['name'], 'kind': e['kind'], 'num_prompts': e['num_prompts'],
                               'max_new_tokens': e.get('max_new_tokens'), 'turns': e.get('turns'), 'categories': None}
                              for e in entries]
    return values


def run_workload(entries, dataset, temperature, output_len):
    """The dataset and sampling keys bench_stage gives bench_run for one run (recorded in its result)."""
    entry = next((e for e in entries or [] if e['name'] == dataset), None)
    values = {'dataset': dataset, 'temperature': float(temperature), 'top_p': 1.0, 'top_k': -1,
              'ignore_eos': entry is None or entry['kind'] == 'random', 'dataset_kind': 'random'}
    if entry is not None and entry['kind'] != 'random':
        values.update(dataset_kind=entry['kind'], dataset_source=entry['source'], dataset_source_sha256=entry['source_sha256'],
                      dataset_sha256=entry['normalized_sha256'], prompts_sha256=entry['prompts_sha256'],
                      template_sha256=entry['template_sha256'], turns=entry['turns'], max_new_tokens=output_len)
    return values


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
