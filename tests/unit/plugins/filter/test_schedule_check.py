# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The schedule check: schedule_check_spec turns a spec and its report's schedule into the spec of a campaign that
measures every band's setting at the band edges (and the plan accepts it), and the report's check_schedule judges that
campaign's rows: a band's setting must not lose to its neighbour's at an edge they share."""

from __future__ import annotations

import copy

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.specdec.bench.plugins.filter.schedule import band_edges, schedule_check_spec
from ansible_collections.specdec.bench.plugins.plugin_utils.plan import campaign_plan
from ansible_collections.specdec.bench.plugins.plugin_utils.report.schedule_check import check_schedule, compare, edge_line

SPEC = {
    'campaign': 'qwen36-load', 'model': {'path': '/models/Qwen3.6-27B', 'bytes': 55 * 10 ** 9},
    'draft': '/models/Qwen3.6-27B-DFlash', 'tp': [{'size': 1, 'pool': [0, 1, 2, 3]}, {'size': 4}], 'parallel': True,
    'methods': {'autoregressive': {}, 'dflash': {'num_draft_tokens': [16]}, 'ddtree': {'budget': [32, 128], 'topk': [4]}},
    'workload': {'input_len': 64, 'output_len': 32, 'num_prompts': 16, 'seed': 7, 'request_rate': [4, 'inf'],
                 'max_concurrency': 32},
    'concurrency': [1, 4, 16], 'repeats': 2,
    'slo': {'tpot_ms': {'p': 95, 'max': 50}},
    'search': {'concurrency': {'min': 1, 'max': 32}},
    'crossover': {'concurrency': [2, 8]},
}


def band(lo, hi, stage, method, **params):
    return {'from': lo, 'to': hi, 'stage': stage, 'setting': stage, 'method': method, 'params': params, 'sglang_args': []}


SCHEDULE = [
    {'host': 'ct200', 'tp': 1, 'dataset': 'random', 'temperature': 0.0, 'bands': [
        band(1, 4, 'tp1-ddtree-b128-k4', 'ddtree', budget=128, topk=4),
        band(8, 12, 'tp1-ddtree-b32-k4', 'ddtree', budget=32, topk=4),
        band(16, 32, 'tp1-autoregressive', 'autoregressive')]},
    {'host': 'ct200', 'tp': 1, 'dataset': 'all', 'temperature': None, 'bands': [band(1, 32, 'tp1-dflash-n16', 'dflash', num_draft_tokens=16)]},
    {'host': 'a100box', 'tp': 4, 'dataset': 'random', 'temperature': 0.0, 'bands': [band(1, 4, 'tp4-autoregressive', 'autoregressive')]},
]


def facts():
    return {'nvidia_gpus': [{'index': i, 'uuid': 'GPU-%d' % i, 'memory_total_mib': 97887, 'processes': []} for i in range(4)],
            'specdec_host': {'listening_ports': []}}


def test_the_check_spec_measures_the_bands_settings_at_their_edges_and_nothing_else():
    check = schedule_check_spec(copy.deepcopy(SPEC), SCHEDULE, 'ct200')
    assert check['campaign'] == 'qwen36-load-check'
    assert check['concurrency'] == [1, 4, 8, 12, 16, 32]
    # the 'all' entry (DFlash) is not checked; the two DDTree budgets are one method entry
    assert check['methods'] == {'ddtree': {'budget': [32, 128], 'topk': [4]}, 'autoregressive': {}}
    assert check['tp'] == [{'size': 1, 'pool': [0, 1, 2, 3]}]
    assert not set(check) & {'slo', 'search', 'crossover'}
    assert check['workload']['request_rate'] == 'inf' and check['repeats'] == 2 and check['model'] == SPEC['model']
    stages = campaign_plan(facts(), check, {'build': 'sglang-ddtree-pr29907'})
    assert sorted(stage['id'] for stage in stages if stage['feasible'] and not stage['id'].endswith('-alone')) == [
        'tp1-autoregressive', 'tp1-ddtree-b128-k4', 'tp1-ddtree-b32-k4']
    assert all(stage['concurrency'] == [1, 4, 8, 12, 16, 32] for stage in stages if not stage['id'].endswith('-alone'))


def test_the_input_spec_is_left_as_it_was():
    given = copy.deepcopy(SPEC)
    schedule_check_spec(given, SCHEDULE, 'ct200', campaign='my-check')
    assert given == SPEC


@pytest.mark.parametrize('args, field', [
    (({'model': 'x'}, SCHEDULE, 'ct200'), 'the input'),
    ((SPEC, {'not': 'a list'}, 'ct200'), 'schedule'),
    ((SPEC, SCHEDULE, 'nohost'), "no band of host 'nohost'"),
    ((SPEC, [{'host': 'ct200', 'tp': 1, 'dataset': 'd', 'bands': [{'from': 1, 'to': 2}]}], 'ct200'), 'bands[0].method'),
    ((dict(SPEC, tp=[8]), SCHEDULE, 'ct200'), "the spec's tp"),
    ((SPEC, SCHEDULE, 'ct200', 'x' * 65), 'campaign'),
])
def test_a_bad_input_is_refused_naming_the_field(args, field):
    with pytest.raises(AnsibleFilterError) as error:
        schedule_check_spec(*args)
    assert field in str(error.value) and 'allowed:' in str(error.value)


def test_band_edges():
    assert band_edges(SCHEDULE[0]['bands']) == [1, 4, 8, 12, 16, 32]
    assert band_edges([band(2, 2, 's', 'autoregressive')]) == [2]


def row(stage, concurrency, throughput, sd=0.0, repeats=3, **extra):
    base = {'host': 'ct200', 'tp': 1, 'dataset': 'random', 'temperature': 0.0, 'concurrency': concurrency, 'stage': stage,
            'status': 'ok', 'output_throughput': throughput, 'output_throughput_sd': sd, 'repeats': repeats,
            'interference_of': None}
    base.update(extra)
    return base


def rows_for(throughputs, sd=1.0):
    """Check rows: {(stage, c): throughput} at sd."""
    return [row(stage, c, value, sd) for (stage, c), value in throughputs.items()]


GOOD = {('tp1-ddtree-b128-k4', 4): 300.0, ('tp1-ddtree-b32-k4', 4): 250.0,
        ('tp1-ddtree-b32-k4', 8): 500.0, ('tp1-ddtree-b128-k4', 8): 400.0,
        ('tp1-ddtree-b32-k4', 12): 600.0, ('tp1-autoregressive', 12): 550.0,
        ('tp1-autoregressive', 16): 800.0, ('tp1-ddtree-b32-k4', 16): 600.0}


def test_a_schedule_that_holds_at_every_edge_passes():
    check = check_schedule(SCHEDULE, rows_for(GOOD))
    assert check['passed'] and check['entries'] == 2 and check['checked'] == 4
    verdicts = [(e['concurrency'], e['stage'], e['other_stage'], e['verdict']) for e in check['edges']]
    assert verdicts == [(4, 'tp1-ddtree-b128-k4', 'tp1-ddtree-b32-k4', 'holds'), (8, 'tp1-ddtree-b32-k4', 'tp1-ddtree-b128-k4', 'holds'),
                        (12, 'tp1-ddtree-b32-k4', 'tp1-autoregressive', 'holds'), (16, 'tp1-autoregressive', 'tp1-ddtree-b32-k4', 'holds')]
    assert check['edges'][0]['ratio'] == pytest.approx(1.2)
    assert check['edges'][0]['low'] < 1.2 < check['edges'][0]['high']


def test_a_setting_that_loses_at_its_own_edge_fails_the_check_and_is_named():
    bad = dict(GOOD)
    bad[('tp1-autoregressive', 16)] = 500.0  # AR's band starts at 16, where DDTree B=32 is clearly faster
    check = check_schedule(SCHEDULE, rows_for(bad))
    assert not check['passed'] and check['reversed'] == 1
    edge = [e for e in check['edges'] if e['verdict'] == 'reversed'][0]
    assert (edge['concurrency'], edge['stage']) == (16, 'tp1-autoregressive')
    assert 'c=16: tp1-autoregressive over tp1-ddtree-b32-k4 0.83×' in edge_line(edge) and edge_line(edge).endswith('reversed')


def test_a_difference_within_the_noise_is_a_tie_not_a_reversal():
    noisy = dict(GOOD)
    noisy[('tp1-autoregressive', 16)] = 590.0  # 0.98x with sd 40 over 3 repeats: the interval holds 1.0
    check = check_schedule(SCHEDULE, rows_for(noisy, sd=40.0))
    assert check['passed']
    assert [e['verdict'] for e in check['edges'] if e['concurrency'] == 16] == ['tie']


def test_an_edge_the_check_did_not_measure_is_missing_and_fails():
    partial = dict(GOOD)
    del partial[('tp1-ddtree-b128-k4', 8)]
    check = check_schedule(SCHEDULE, rows_for(partial))
    assert not check['passed'] and check['missing'] == 1


def test_failed_rows_and_interference_reruns_are_not_evidence():
    rows = rows_for(GOOD) + [row('tp1-autoregressive', 16, 10.0, status='failed'),
                             row('tp1-autoregressive', 16, 10.0, interference_of='tp1-autoregressive')]
    assert check_schedule(SCHEDULE, rows)['passed']


def test_one_repeat_decides_by_the_point_estimate():
    assert compare(row('a', 1, 110.0, None, 1), row('b', 1, 100.0, None, 1))[3] == 'holds'
    assert compare(row('a', 1, 90.0, None, 1), row('b', 1, 100.0, None, 1))[3] == 'reversed'
    assert compare(None, row('b', 1, 100.0))[3] == 'missing'
