# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""stage_run_args, stage_wave_line, campaign_waves and stage_lock_wait: what one specdec.bench.stage_run call of a stage
gets, how a wave is announced, which stages run together, and how long a stage of a killed run may still hold its lock.

Their documentation is in stage_run_args.yml, stage_wave_line.yml, campaign_waves.yml and stage_lock_wait.yml beside
this file. One place
for a stage's harness runs: the matrix (prompt set x temperature x concurrency, in that order) and each run's
bench_run options; then the load family (open-loop rates, crossover concurrencies) and the capacity searches, built
from the same run options (docs/plan.md, "Load, SLOs and the capacity search").
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.specdec.bench.plugins.module_utils._stage.stage_run import lock_wait_s

# What bench_run records of a prompt set in each result (its controller paths and notes stay on the controller).
DATASET_KEYS = ('name', 'kind', 'source', 'source_sha256', 'normalized_sha256', 'prompts_sha256', 'template_sha256', 'count',
                'max_new_tokens', 'turns', 'chat_template_kwargs')
# What status.json lists of the sets the stage ran: the prepared entries without controller paths and notes.
NOT_RECORDED = ('prompts_path', 'references_path', 'notes')
INFINITE = 'inf'
DEFAULT_BURSTINESS = 1.0
# the capacity searches of a stage, in the order they run (the plan's load.search keys)
SEARCH_KINDS = ('concurrency', 'request_rate')
RANDOM = {'name': 'random', 'kind': 'random', 'num_prompts': None, 'input_len': None, 'output_len': None}
SETTINGS = {
    'results_root': None, 'campaign': None, 'harness': 'builtin', 'python': 'python3', 'datasets': [],
    'datasets_dir': '/var/lib/specdec/datasets', 'keep': [], 'backend': 'systemd', 'service_dir': '/var/lib/specdec/services',
    'unit_dir': '/etc/systemd/system', 'stop_timeout': 60, 'ready_timeout': 900, 'journal_lines': 200,
    'request_timeout': None, 'request_deadline': None, 'run_deadline': None, 'telemetry': 'auto', 'telemetry_interval': 0.1,
    'mode': '0640', 'lease_timeout': 0, 'poll': 5.0, 'stages_dir': '/var/lib/specdec/stages',
}


def _fail(field, value, allowed):
    raise AnsibleFilterError('stage_run_args: %s is %r; allowed: %s' % (field, value, allowed))


def _first(*values):
    """The first value that is set (not None, not empty): an entry's own size before the workload's."""
    for value in values:
        if value is not None and value != '':
            return value
    return None


def stage_dir(stage, settings):
    return '%s/%s/%s' % (settings['results_root'], settings['campaign'], stage['id'])


def _run(stage, settings, dataset, temperature, concurrency):
    """The bench_run options of one harness run of the stage: a grid run, or the base of a load run or a search point
    (every field that shapes the requests the same as the grid's)."""
    workload = stage.get('workload') or {}
    random = dataset.get('kind') == 'random'
    run = {
        'harness': settings['harness'],
        'python': settings['python'],
        'base_url': 'http://127.0.0.1:%d' % stage['port'],
        'stage': stage['id'],
        'concurrency': concurrency,
        'dataset': dict((key, value) for key, value in dataset.items() if key in DATASET_KEYS),
        'temperature': float(temperature),
        'top_p': workload.get('top_p', 1.0),
        'top_k': workload.get('top_k', -1),
        # random prompts always run to output_len; a prompt set stops at EOS unless the workload says otherwise
        'ignore_eos': random or not workload.get('stop_at_eos', True),
        'seed': workload.get('seed', 1),
        'warmup_requests': workload.get('warmup_requests', 1),
        'request_rate': workload.get('request_rate', 'inf'),
        'flush_cache': True,
        'repeats': int(stage.get('repeats') or 1),
        # the energy of the stage's own GPUs (the plan's UUIDs) per measured repeat
        'gpus': list(stage.get('gpus') or []),
        'telemetry': str(settings['telemetry']),
        'telemetry_interval': float(settings['telemetry_interval']),
        # /metrics scraped around each measured run where the plan gave the server --enable-metrics
        'metrics': bool(stage.get('enable_metrics')),
        'output_dir': stage_dir(stage, settings),
    }
    if random:
        # random prompts as the workload asks (an entry's own sizes first)
        for key in ('num_prompts', 'input_len', 'output_len'):
            run[key] = _first(dataset.get(key), workload.get(key))
    else:
        run['num_prompts'] = dataset.get('count')
        run['prompts_file'] = '%s/%s.jsonl' % (settings['datasets_dir'], dataset.get('prompts_sha256'))
        run['max_new_tokens'] = dataset.get('max_new_tokens')
    for key in ('request_timeout', 'request_deadline', 'run_deadline'):
        if settings.get(key) is not None:
            run[key] = settings[key]
    burstiness = (stage.get('load') or {}).get('burstiness', DEFAULT_BURSTINESS)
    if run['request_rate'] != INFINITE and burstiness != DEFAULT_BURSTINESS:
        # a scalar finite workload.request_rate: the grid's arrivals are gamma with the spec's burstiness (bench_run's
        # default, 1.0, is Poisson: left out, a grid run is today's)
        run['burstiness'] = float(burstiness)
    return run


def _cells(stage, settings):
    """(dataset, temperature) of each cell of the stage's matrix, in the order they run."""
    workload = stage.get('workload') or {}
    return [(dataset, temperature) for dataset in settings.get('datasets') or [RANDOM]
            for temperature in workload.get('temperature') or [0]]


def stage_runs(stage, settings):
    """The bench_run options of each harness run of the stage's grid, in the order they run."""
    return [_run(stage, settings, dataset, temperature, concurrency)
            for dataset, temperature in _cells(stage, settings) for concurrency in stage.get('concurrency') or []]


def _open_loop(base, rate, load):
    """base as an open-loop run: arrivals at rate (gamma, shape burstiness), at most max_concurrency in flight."""
    return dict(base, concurrency=int(load['max_concurrency']), request_rate=float(rate), burstiness=float(load['burstiness']),
                name_rate=True)


def _closed_loop(base, concurrency):
    """base as a closed-loop run of the load family: concurrency requests in flight, all at once (rate inf)."""
    run = dict(base, concurrency=int(concurrency), request_rate=INFINITE, name_rate=True)
    run.pop('burstiness', None)
    return run


def stage_load_runs(stage, settings):
    """The stage's load family (bench_run options, named with their rate): per dataset and temperature, one open-loop
    run per finite rate of workload.request_rate (ascending), then one closed-loop run per crossover concurrency;
    after the grid. A stage planned without `load` has none. The arrivals' seed, count, rate and burstiness come
    from the spec: the same for every stage of a host (a paired design)."""
    load = stage.get('load')
    if not load:
        return []
    runs = []
    for dataset, temperature in _cells(stage, settings):
        base = _run(stage, settings, dataset, temperature, int(load['max_concurrency']))
        runs.extend(_open_loop(base, rate, load) for rate in load.get('request_rates') or [])
        runs.extend(_closed_loop(base, concurrency) for concurrency in load.get('crossover_concurrency') or [])
    return runs


def stage_searches(stage, settings):
    """The stage's capacity searches: per dataset and temperature, the concurrency search then the request rate
    search, as the plan's `load.search` asks; each point is `base` with the value searched (stage_run)."""
    load = stage.get('load')
    search = (load or {}).get('search')
    if not search:
        return []
    searches = []
    for dataset, temperature in _cells(stage, settings):
        base = _run(stage, settings, dataset, temperature, int(load['max_concurrency']))
        for kind in SEARCH_KINDS:
            bounds = search.get(kind)
            if not bounds:
                continue
            if kind == 'concurrency':
                point = _closed_loop(base, bounds['min'])
            else:
                point = _open_loop(base, bounds['min'], load)
            searches.append({
                'kind': kind, 'base': point, 'slo': copy.deepcopy(load['slo']),
                'min': bounds['min'], 'max': bounds['max'], 'resolution': bounds['resolution'],
                'max_runs': int(search['max_runs']), 'max_seconds': float(search['max_seconds']),
            })
    return searches


def _check_burstiness(stage, settings):
    """Arrivals other than Poisson need the built-in harness: SGLang's benchmark client has no --burstiness (bench_run
    refuses such a run; refused here before the stage's server starts)."""
    load = stage.get('load') or {}
    burstiness = load.get('burstiness', DEFAULT_BURSTINESS)
    paced = load.get('request_rates') or (load.get('search') or {}).get('request_rate') or (
        (stage.get('workload') or {}).get('request_rate', INFINITE) != INFINITE)
    if settings['harness'] == 'sglang' and burstiness != DEFAULT_BURSTINESS and paced:
        _fail('settings.harness (with workload.burstiness %g)' % burstiness, settings['harness'],
              'builtin: SGLang\'s benchmark client draws Poisson arrivals only (burstiness 1.0)')


def load_work(load):
    """True when a stage's plan `load` asks for harness runs beyond the grid: open-loop rates, crossover
    concurrencies or a capacity search (an SLO alone is read off the grid's runs)."""
    return bool(isinstance(load, Mapping) and (load.get('request_rates') or load.get('crossover_concurrency') or load.get('search')))


def stage_run_args(stage, settings, wave=None):
    """The options of one specdec.bench.stage_run call for a stage of the plan (settings: the bench_stage role's, see
    SETTINGS; wave: the ids of the stages started with it, itself included)."""
    if not isinstance(stage, Mapping) or not stage.get('id') or not isinstance(stage.get('port'), int):
        _fail('the input', stage, 'one stage of specdec.bench.campaign_plan (id, port, unit, ...)')
    if not isinstance(settings, Mapping):
        _fail('settings', settings, 'a dict of the bench_stage settings')
    unknown = sorted(set(settings) - set(SETTINGS))
    if unknown:
        _fail('settings.%s' % unknown[0], settings[unknown[0]], ', '.join(sorted(SETTINGS)))
    settings = dict(SETTINGS, **settings)
    for key in ('results_root', 'campaign'):
        if not settings.get(key):
            _fail('settings.' + key, settings.get(key), 'a non-empty string')
    try:
        lease, poll = float(settings['lease_timeout']), float(settings['poll'])
    except (TypeError, ValueError):
        _fail('settings.lease_timeout and settings.poll', (settings['lease_timeout'], settings['poll']), 'numbers of seconds')
    if poll <= 0:
        _fail('settings.poll (bench_stage_poll)', poll, 'a number of seconds > 0')
    if lease and not lease > 2 * poll:
        # each poll renews the leases: a lease shorter than two polls would stop healthy stages
        _fail('settings.lease_timeout (bench_stage_lease_timeout)', lease,
              '0 (off) or more than twice settings.poll (bench_stage_poll, %g s): each poll renews the leases' % poll)
    _check_burstiness(stage, settings)
    wave = list(wave or [stage['id']])
    directory = stage_dir(stage, settings)
    datasets = settings.get('datasets') or [RANDOM]
    args = {
        'dir': directory,
        'keep': list(settings['keep']),
        'unit': stage['unit'],
        'backend': settings['backend'],
        'state_dir': settings['service_dir'],
        'unit_dir': settings['unit_dir'],
        'stop_timeout': int(settings['stop_timeout']),
        'port': stage['port'],
        'ready_timeout': float(settings['ready_timeout']),
        'journal_lines': int(settings['journal_lines']),
        'runs': stage_runs(stage, settings),
        # after the grid, on the same server: the open-loop rates and crossover concurrencies, then the capacity searches
        'load_runs': stage_load_runs(stage, settings),
        'searches': stage_searches(stage, settings),
        'status': {
            'stage': stage['id'],
            'sglang_build': stage.get('sglang_build'),
            'datasets': [dict((key, value) for key, value in dataset.items() if key not in NOT_RECORDED) for dataset in datasets],
            # every run measured this many times: the campaign skips the stage unless it plans more
            'repeats': int(stage.get('repeats') or 1),
            # the stages in flight beside this one (other GPUs of the host), the plan's wave, and what it re-runs alone
            'ran_beside': [other for other in wave if other != stage['id']],
            'wave': stage.get('wave'),
            'interference_of': stage.get('interference_of'),
        },
        'mode': settings['mode'],
        # control files outside the results: what the stage is doing now, the controller's lease and the stage's lock
        'progress_file': '%s/%s/%s.progress.json' % (settings['stages_dir'], settings['campaign'], stage['id']),
        'lease_file': '%s/%s/%s.lease' % (settings['stages_dir'], settings['campaign'], stage['id']),
        'lease_timeout': lease,
    }
    if load_work(stage.get('load')):
        # the load study it ran: the campaign counts the stage done only when its status records the plan's load
        args['status']['load'] = stage['load']
    return args


def stage_wave_line(stages, label=''):
    """'wave 2 of 5: tp1-dflash-n16 (GPU 2), tp1-ddtree-b32-k4 (GPU 3) at once' or 'stage 3 of 12: tp8-autoregressive alone'."""
    if not isinstance(stages, (list, tuple)) or not stages or not all(isinstance(stage, Mapping) for stage in stages):
        raise AnsibleFilterError('stage_wave_line: the input is %r; allowed: a non-empty list of stages of the plan' % (stages,))
    parts = ['%s (GPU %s)' % (stage['id'], ','.join(str(index) for index in stage.get('gpu_indices') or []) or '?') for stage in stages]
    head = '%s: ' % label if label else ''
    if len(stages) == 1:
        alone = stages[0].get('alone')
        return '%s%s%s' % (head, parts[0], ' alone: %s' % alone if alone else '')
    return '%s%d stages at once: %s' % (head, len(stages), ', '.join(parts))


def campaign_waves(stages, unavailable=None):
    """The stages still to run, in plan order, grouped into the waves they run in: a list of non-empty lists.

    Only stages that start a server: infeasible ones, and those whose draft checkpoint path is a key of `unavailable`
    (checkpoint_ship_failed: it could not be copied), are left out (the bench_stage role records them). Stages of the
    same plan `wave` run together; a stage without one (a plan made one stage at a time) is a wave of its own.
    """
    if not isinstance(stages, (list, tuple)) or not all(isinstance(stage, Mapping) and stage.get('id') for stage in stages):
        raise AnsibleFilterError('campaign_waves: the input is %r; allowed: a list of stages of specdec.bench.campaign_plan' % (stages,))
    unavailable = unavailable or {}
    waves, keys = [], []
    for stage in stages:
        checkpoint = stage.get('draft_checkpoint') or {}
        if not stage.get('feasible') or (checkpoint.get('path') and checkpoint['path'] in unavailable):
            continue
        key = stage.get('wave')
        if key is not None and keys and keys[-1] == key:
            waves[-1].append(stage)
        else:
            waves.append([stage])
            keys.append(key)
    return waves


def stage_lock_wait(lease_timeout, stop_timeout):
    """Seconds a stage of a killed run may still hold its lock (specdec.bench.stage_run's own wait for it)."""
    try:
        lease, stop = float(lease_timeout), float(stop_timeout)
    except (TypeError, ValueError):
        _fail('lease_timeout and stop_timeout', (lease_timeout, stop_timeout), 'numbers of seconds')
    if not (lease >= 0 and stop >= 0):
        _fail('lease_timeout and stop_timeout', (lease_timeout, stop_timeout), 'numbers of seconds >= 0')
    return int(lock_wait_s(lease, stop) + 0.999)


class FilterModule:
    def filters(self):
        return {'stage_run_args': stage_run_args, 'stage_wave_line': stage_wave_line, 'campaign_waves': campaign_waves,
                'stage_lock_wait': stage_lock_wait}
