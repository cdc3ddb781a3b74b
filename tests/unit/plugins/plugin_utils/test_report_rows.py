# SPDX-License-Identifier: GPL-3.0-or-later
"""report_rows: a stage's rows from what report_read read, and the speedup over the baseline."""
import pytest

from ansible_collections.specdec.bench.plugins.plugin_utils.report import compare as report_compare
from ansible_collections.specdec.bench.plugins.plugin_utils.report import rows as report_rows

STAGE = {'id': 'tp1-ddtree-b64-k4', 'method': 'ddtree', 'tp': 1, 'params': {'budget': 64, 'topk': 4}, 'concurrency': [1, 4]}


def entry(stage, results, status='ok'):
    """A read_host stage entry; results keyed by concurrency here, by run (dataset, temperature, c) there; a result
    is repeat 1, a list the repeats 1..n."""
    runs = {(key if isinstance(key, tuple) else ('random', 0.0, key)): dict(enumerate(result if isinstance(result, list) else [result], 1))
            for key, result in results.items()}
    return {'stage': stage, 'status': {'status': status, 'reason': None}, 'results': runs, 'server_info': None,
            'gpus': None, 'skipped': {'status': None, 'results': {}}}


def test_setting_label_names_methods_and_parameters_as_the_papers_do():
    assert report_rows.setting_label('ddtree', {'topk': 4, 'budget': 64}) == 'DDTree B=64 k=4'
    assert report_rows.setting_label('dflash', {'num_draft_tokens': 16}) == 'DFlash n=16'
    assert report_rows.setting_label('medusa', {'heads': 3}) == 'medusa heads=3'


def test_a_row_takes_the_result_numbers_as_floats_and_the_counts_as_integers():
    result = {'complete': True, 'output_throughput': 120, 'completed': 8, 'failed': 0, 'harness': 'builtin'}
    rows = report_rows.stage_rows('h', 'c', entry(STAGE, {1: result}))
    first, second = rows
    assert first['status'] == 'ok' and first['output_throughput'] == 120.0 and isinstance(first['output_throughput'], float)
    assert first['completed'] == 8 and isinstance(first['completed'], int) and first['harness'] == 'builtin'
    assert first['setting'] == 'DDTree B=64 k=4' and (first['budget'], first['topk']) == (64, 4)
    assert second['status'] == 'missing' and second['reason'] == 'no result file for this concurrency'


def test_speedup_needs_the_baseline_at_the_same_tp_and_concurrency():
    baseline = dict(STAGE, id='tp1-autoregressive', method='autoregressive', params={})
    rows = report_rows.stage_rows('h', 'c', entry(baseline, {1: {'complete': True, 'output_throughput': 50.0}}))
    results = {1: {'complete': True, 'output_throughput': 120.0}, 4: {'complete': True, 'output_throughput': 300.0}}
    rows += report_rows.stage_rows('h', 'c', entry(STAGE, results))
    report_compare.add_speedup(rows)
    speedups = {(row['stage'], row['concurrency']): (row['speedup'], row['baseline_stage']) for row in rows}
    assert speedups[('tp1-ddtree-b64-k4', 1)] == (2.4, 'tp1-autoregressive')
    assert speedups[('tp1-ddtree-b64-k4', 4)] == (None, None)  # the baseline's c=4 run has no result


def test_compare_rows_pairs_the_campaigns_and_names_what_only_one_has():
    before = [{'host': 'h', 'stage': 's', 'concurrency': 1, 'setting': 'AR', 'tp': 1, 'status': 'ok', 'output_throughput': 100.0}]
    after = [dict(before[0], output_throughput=110.0), dict(before[0], stage='t', status='failed', output_throughput=None)]
    rows = report_compare.compare_rows(after, before)
    assert [row['stage'] for row in rows] == ['s', 't']
    assert rows[0]['output_throughput_delta_pct'] == pytest.approx(10.0)
    assert rows[1]['status_before'] == 'absent' and rows[1]['output_throughput_delta_pct'] is None
