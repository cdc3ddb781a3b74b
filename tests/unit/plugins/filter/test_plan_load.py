# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""campaign_plan's load: workload.request_rate as a sweep, burstiness, max_concurrency, the SLOs, the capacity search
and the crossover's concurrencies, checked before any stage is made (each refusal naming the field and the allowed
values) and carried, normalized, as every stage's `load`; a scalar request rate plans as it did."""

from __future__ import annotations

import copy

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.specdec.bench.plugins.plugin_utils.plan import campaign_plan

DDTREE_BUILD = 'sglang-ddtree-pr29907'
WORKLOAD = {'input_len': 64, 'output_len': 32, 'num_prompts': 16, 'seed': 7}
DEFAULT_LOAD = {'request_rates': [], 'burstiness': 1.0, 'max_concurrency': 4, 'slo': None, 'search': None, 'crossover_concurrency': []}
# the contract's example (docs/plan.md, "Load, SLOs and the capacity search")
FULL = {
    'workload': dict(WORKLOAD, request_rate=[8, 2, float('inf'), 4], burstiness=0.5, max_concurrency=64),
    'slo': {'ttft_ms': {'p': 95, 'max': 2000}, 'tpot_ms': {'max': 60}},
    'search': {'concurrency': {'min': 1, 'max': 64, 'resolution': 1}, 'request_rate': {'min': 0.5, 'max': 64}, 'max_runs': 40,
               'max_seconds': 1800},
    'crossover': {'concurrency': [32, 2, 8, 16]},
}


def facts():
    """Four free 96 GB GPUs: every stage of the specs below is placed and fits."""
    return {'nvidia_gpus': [{'index': i, 'uuid': 'GPU-%d' % i, 'memory_total_mib': 97887, 'processes': []} for i in range(4)],
            'specdec_host': {'listening_ports': []}}


def spec(**given):
    """Two stages (autoregressive, DDTree at TP1) at concurrency 1 and 4; the load keys as given."""
    base = {'campaign': 'qwen36-load', 'model': {'path': '/models/Qwen3.6-27B', 'bytes': 55 * 10 ** 9},
            'draft': '/models/Qwen3.6-27B-DFlash', 'tp': [1],
            'methods': {'autoregressive': {}, 'ddtree': {'budget': [32], 'topk': [4]}},
            'workload': dict(WORKLOAD), 'concurrency': [1, 4]}
    base.update(given)
    return base


def plan(campaign_spec):
    return campaign_plan(facts(), campaign_spec, {'build': DDTREE_BUILD})


def refusal(campaign_spec):
    with pytest.raises(AnsibleFilterError) as error:
        plan(campaign_spec)
    message = str(error.value)
    assert message.startswith('campaign_plan: ')
    return message


# --- accepted -----------------------------------------------------------------------------------------------------

def test_the_full_example_is_normalized_on_every_stage():
    stages = plan(spec(**copy.deepcopy(FULL)))
    assert [stage['id'] for stage in stages] == ['tp1-autoregressive', 'tp1-ddtree-b32-k4']
    expected = {
        'request_rates': [2.0, 4.0, 8.0],
        'burstiness': 0.5,
        'max_concurrency': 64,
        'slo': {'ttft_ms': {'p': 95.0, 'max': 2000.0}, 'tpot_ms': {'p': 95.0, 'max': 60.0}},
        'search': {'concurrency': {'min': 1, 'max': 64, 'resolution': 1},
                   'request_rate': {'min': 0.5, 'max': 64.0, 'resolution': 0.1},
                   'max_runs': 40, 'max_seconds': 1800.0},
        'crossover_concurrency': [2, 8, 16, 32],
    }
    for stage in stages:
        assert stage['load'] == expected
        assert stage['workload']['request_rate'] == 'inf'  # a list: the grid runs closed-loop
        assert 'burstiness' not in stage['workload'] and 'max_concurrency' not in stage['workload']
    assert stages[0]['load'] is not stages[1]['load'] and stages[0]['load']['slo'] is not stages[1]['load']['slo']
    assert isinstance(stages[0]['load']['max_concurrency'], int)
    assert [type(value) for value in stages[0]['load']['request_rates']] == [float] * 3


def test_the_crossover_leaves_out_the_concurrencies_the_grid_measures_and_max_concurrency_defaults_to_the_largest():
    stage = plan(spec(concurrency=[1, 8, 2], crossover={'concurrency': [16, 2, 4, 8]}))[0]
    assert stage['load']['crossover_concurrency'] == [4, 16]
    assert stage['load']['max_concurrency'] == 8


def test_a_concurrency_search_takes_its_range_from_max_concurrency_when_left_out():
    load = plan(spec(workload=dict(WORKLOAD, max_concurrency=32), slo={'e2e_ms': {'max': 5000}},
                     search={'concurrency': {}}))[0]['load']
    assert load['search'] == {'concurrency': {'min': 1, 'max': 32, 'resolution': 1}, 'request_rate': None, 'max_runs': 40,
                              'max_seconds': 1800.0}
    assert load['slo'] == {'e2e_ms': {'p': 95.0, 'max': 5000.0}}


@pytest.mark.parametrize('rate', [4, 2.5, 'inf', float('inf')])
def test_a_scalar_request_rate_plans_as_before_with_the_default_load(rate):
    given = plan(spec(workload=dict(WORKLOAD, request_rate=rate)))
    left_out = plan(spec())
    for stage, today in zip(given, left_out):
        assert stage['load'] == DEFAULT_LOAD
        assert stage['workload']['request_rate'] == ('inf' if rate in ('inf', float('inf')) else rate)
        assert type(stage['workload']['request_rate']) is type(rate if rate != float('inf') else 'inf')
        # but for the rate itself, the stage is the one planned without a rate
        assert dict(stage, workload=dict(stage['workload'], request_rate=None)) == dict(
            today, workload=dict(today['workload'], request_rate=None))
    assert 'request_rate' not in left_out[0]['workload']


def test_a_list_of_only_inf_is_the_closed_loop_grid():
    stage = plan(spec(workload=dict(WORKLOAD, request_rate=['inf'])))[0]
    assert stage['workload']['request_rate'] == 'inf' and stage['load'] == DEFAULT_LOAD


def test_the_interference_stage_runs_no_load_family_and_no_search():
    given = copy.deepcopy(FULL)
    stages = plan(spec(parallel=True, tp=[{'size': 1, 'pool': [0, 1]}], **given))
    alone = stages[-1]
    assert alone['interference_of'] == stages[0]['id']
    assert alone['load']['request_rates'] == [] and alone['load']['search'] is None and alone['load']['crossover_concurrency'] == []
    assert alone['load']['slo'] == stages[0]['load']['slo']  # its grid run is still judged against the SLOs
    assert stages[0]['load']['request_rates'] == [2.0, 4.0, 8.0]


def test_the_spec_is_untouched():
    given = spec(**copy.deepcopy(FULL))
    before = copy.deepcopy(given)
    plan(given)
    assert given == before


# --- refused ------------------------------------------------------------------------------------------------------

SLO = {'ttft_ms': {'max': 2000}}


@pytest.mark.parametrize('given, fragments', [
    # workload.request_rate
    ({'workload': dict(WORKLOAD, request_rate=0)}, ['workload.request_rate is 0', '"inf"', 'a non-empty list']),
    ({'workload': dict(WORKLOAD, request_rate=[])}, ['workload.request_rate is an empty list', 'distinct positive numbers']),
    ({'workload': dict(WORKLOAD, request_rate=[2, 4, 2])},
     ['workload.request_rate[2] repeats 2, as workload.request_rate[0]', 'distinct positive numbers']),
    ({'workload': dict(WORKLOAD, request_rate=[2, 'inf', float('inf')])}, ['workload.request_rate[2] repeats inf', '"inf"']),
    ({'workload': dict(WORKLOAD, request_rate=[2, -1])}, ['workload.request_rate[1] is -1', 'distinct positive numbers']),
    ({'workload': dict(WORKLOAD, request_rate=[2, 0])}, ['workload.request_rate[1] is 0']),
    ({'workload': dict(WORKLOAD, request_rate=[2, 'fast'])}, ["workload.request_rate[1] is 'fast'"]),
    ({'workload': dict(WORKLOAD, request_rate=[2, True])}, ['workload.request_rate[1] is True']),
    ({'workload': dict(WORKLOAD, request_rate=[2, float('nan')])}, ['workload.request_rate[1] is nan', 'a finite number']),
    ({'workload': dict(WORKLOAD, request_rate=[2, float('-inf')])}, ['workload.request_rate[1] is -inf']),
    # workload.burstiness, workload.max_concurrency
    ({'workload': dict(WORKLOAD, burstiness=0)}, ['workload.burstiness is 0', 'a number > 0', 'Poisson']),
    ({'workload': dict(WORKLOAD, burstiness='high')}, ["workload.burstiness is 'high'"]),
    ({'workload': dict(WORKLOAD, max_concurrency=0)}, ['workload.max_concurrency is 0', 'a positive integer']),
    ({'workload': dict(WORKLOAD, max_concurrency=2.5)}, ['workload.max_concurrency is 2.5']),
    ({'workload': dict(WORKLOAD, burstyness=1)}, ['workload has unknown key(s) burstyness', 'burstiness, max_concurrency']),
    # slo
    ({'slo': {'ttft': {'max': 1}}}, ['slo has unknown key(s) ttft', 'ttft_ms, itl_ms, tpot_ms, e2e_ms']),
    ({'slo': {}}, ['slo is empty', 'at least one of ttft_ms, itl_ms, tpot_ms, e2e_ms']),
    ({'slo': [SLO]}, ['slo is [', 'not a mapping', 'ttft_ms, itl_ms, tpot_ms, e2e_ms']),
    ({'slo': {'itl_ms': {'max': 50}, 'tpot_ms': {'max': 60}}}, ['slo has both itl_ms and tpot_ms', 'one of itl_ms, tpot_ms']),
    ({'slo': {'ttft_ms': {'p': 0, 'max': 1}}}, ['slo.ttft_ms.p is 0', 'a percentile in (0, 100]']),
    ({'slo': {'ttft_ms': {'p': 100.5, 'max': 1}}}, ['slo.ttft_ms.p is 100.5', '(0, 100]']),
    ({'slo': {'ttft_ms': {'p': '95', 'max': 1}}}, ["slo.ttft_ms.p is '95'"]),
    ({'slo': {'ttft_ms': {'max': 0}}}, ['slo.ttft_ms.max is 0', 'a number of milliseconds > 0']),
    ({'slo': {'e2e_ms': {'max': -5}}}, ['slo.e2e_ms.max is -5', 'milliseconds > 0']),
    ({'slo': {'tpot_ms': {'p': 99}}}, ['slo.tpot_ms.max is missing', 'required']),
    ({'slo': {'ttft_ms': {'max': float('inf')}}}, ['slo.ttft_ms.max is inf', 'a finite number']),
    ({'slo': {'ttft_ms': {'max': 1, 'min': 0}}}, ['slo.ttft_ms has unknown key(s) min', 'p, max']),
    ({'slo': {'ttft_ms': 2000}}, ['slo.ttft_ms is 2000, not a mapping', 'p, max']),
    # search
    ({'search': {'concurrency': {'min': 1, 'max': 8}}}, ['search is given without slo', 'slo with at least one of']),
    ({'slo': SLO, 'search': {}}, ['search has neither concurrency nor request_rate', 'search.concurrency {min, max, resolution}']),
    ({'slo': SLO, 'search': {'max_runs': 10}}, ['search has neither concurrency nor request_rate']),
    ({'slo': SLO, 'search': {'concurrency': {'min': 1, 'max': 8}, 'budget': 3}},
     ['search has unknown key(s) budget', 'concurrency, request_rate, max_runs, max_seconds']),
    ({'slo': SLO, 'search': {'concurrency': {'min': 16, 'max': 8}}}, ['search.concurrency.min is 16, above search.concurrency.max 8',
                                                                      'a value <= search.concurrency.max']),
    ({'slo': SLO, 'search': {'concurrency': {'min': 0, 'max': 8}}}, ['search.concurrency.min is 0', 'a positive integer']),
    ({'slo': SLO, 'search': {'concurrency': {'min': 1, 'max': 8.5}}}, ['search.concurrency.max is 8.5', 'a positive integer']),
    ({'slo': SLO, 'search': {'concurrency': {'min': 1, 'max': 8, 'resolution': 0}}},
     ['search.concurrency.resolution is 0', 'an integer >= 1']),
    ({'slo': SLO, 'search': {'concurrency': {'min': 1, 'max': 8, 'resolution': 0.5}}}, ['search.concurrency.resolution is 0.5']),
    ({'slo': SLO, 'search': {'concurrency': {'lo': 1}}}, ['search.concurrency has unknown key(s) lo', 'min, max, resolution']),
    ({'slo': SLO, 'search': {'request_rate': {'min': 8, 'max': 2}}}, ['search.request_rate.min is 8, above search.request_rate.max 2']),
    ({'slo': SLO, 'search': {'request_rate': {'max': 2}}}, ['search.request_rate.min is missing', 'a positive number of requests per second (required)']),
    ({'slo': SLO, 'search': {'request_rate': {'min': 0, 'max': 2}}}, ['search.request_rate.min is 0']),
    ({'slo': SLO, 'search': {'request_rate': {'min': 1, 'max': 2, 'resolution': 0}}},
     ['search.request_rate.resolution is 0', 'a number > 0', '1 + resolution']),
    ({'slo': SLO, 'search': {'request_rate': {'min': 1, 'max': 2, 'resolution': -0.1}}}, ['search.request_rate.resolution is -0.1']),
    ({'slo': SLO, 'search': {'concurrency': {}, 'max_runs': 0}}, ['search.max_runs is 0', 'an integer >= 1']),
    ({'slo': SLO, 'search': {'concurrency': {}, 'max_runs': 2}, 'repeats': 3}, ['search.max_runs is 2', '>= repeats (3']),
    ({'slo': SLO, 'search': {'concurrency': {}, 'max_runs': 10.0}}, ['search.max_runs is 10.0']),
    ({'slo': SLO, 'search': {'concurrency': {}, 'max_seconds': 0}}, ['search.max_seconds is 0', 'a number of seconds > 0']),
    # crossover
    ({'crossover': {'concurrency': [2, 0]}}, ['crossover.concurrency[1] is 0', 'a positive integer']),
    ({'crossover': {'concurrency': [2, 2.5]}}, ['crossover.concurrency[1] is 2.5']),
    ({'crossover': {'concurrency': [2, 8, 2]}}, ['crossover.concurrency[2] repeats 2', 'distinct positive integers']),
    ({'crossover': {'concurrency': []}}, ['crossover.concurrency is []', 'a non-empty list']),
    ({'crossover': {'concurrency': 8}}, ['crossover.concurrency is 8', 'a non-empty list']),
    ({'crossover': {'concurrencies': [8]}}, ['crossover has unknown key(s) concurrencies', 'allowed: concurrency']),
    # the spec's keys
    ({'slos': SLO}, ['spec has unknown key(s) slos', 'slo, search, crossover']),
])
def test_a_bad_load_is_refused_naming_the_field_and_the_allowed_values(given, fragments):
    message = refusal(spec(**given))
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_the_load_is_refused_before_host_problems_are_looked_at():
    """A spec fault wins over a host fault: the same spec fails the same way on every host."""
    bad = spec(slo={'ttft_ms': {'max': 0}})
    bad['tp'] = [8]  # larger than the host
    with pytest.raises(AnsibleFilterError, match=r'slo\.ttft_ms\.max is 0'):
        plan(bad)
