# SPDX-License-Identifier: GPL-3.0-or-later
"""The report of real workloads: one row per host, stage, dataset, temperature and concurrency; speedups and
comparisons matched on dataset and temperature; τ per request with the /server_info cross-check; old campaigns
(result-c<N>.json) still read, as random prompts at temperature 0."""
import csv
import json
import sys
from pathlib import Path

import pytest

from ansible_collections.specdec.bench.plugins.module_utils._common import RESULTS_LAYOUT, results_file
from ansible_collections.specdec.bench.plugins.plugin_utils.report import figures as report_figures
from ansible_collections.specdec.bench.plugins.plugin_utils.report import read as report_read
from ansible_collections.specdec.bench.plugins.plugin_utils.report import schema as report_schema
from ansible_collections.specdec.bench.plugins.plugin_utils.report import generate

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synthetic_results as synth  # noqa: E402  pylint: disable=wrong-import-position

MATRIX = synth.ct200_matrix(tps=(1,), budgets=(16, 64))
DATASETS = ['gsm8k', 'mt-bench']
TEMPERATURES = [0.0, 0.7]


@pytest.fixture(name='made', scope='module')
def made_fixture(tmp_path_factory):
    """ct200: AR, DFlash, DDTree B=16/64 on gsm8k and mt-bench at T=0 and 0.7; DFlash's /server_info τ 5% off."""
    root = tmp_path_factory.mktemp('datasets') / 'results'
    synth.make_campaign(root, 'ct200', 'real', MATRIX, concurrency=(1, 4), datasets=DATASETS, temperatures=TEMPERATURES,
                        server_bias={'tp1-dflash-n16': 1.05})
    synth.make_campaign(root, 'ct200', 'real-before', MATRIX, concurrency=(1, 4), datasets=['gsm8k'], seed=4)
    out = root.parent / 'reports'
    made = generate(str(root), 'real', str(out), compare_to='real-before')
    return {'root': root, 'out': out, 'made': made, 'rows': made['report']['rows']}


def csv_rows(path):
    with open(path, newline='', encoding='utf-8') as handle:
        return list(csv.DictReader(handle))


def by_run(rows):
    return {(row['stage'], row['dataset'], float(row['temperature']), int(row['concurrency'])): row for row in rows}


def test_one_row_per_stage_dataset_temperature_and_concurrency(made):
    rows = by_run(made['rows'])
    assert len(rows) == len(made['rows']) == len(MATRIX) * len(DATASETS) * len(TEMPERATURES) * 2
    assert all(row['status'] == 'ok' for row in made['rows'])
    assert set(by_run(csv_rows(made['out'] / 'results.csv'))) == set(rows)


def test_speedup_is_over_the_baseline_of_the_same_dataset_temperature_and_concurrency(made):
    rows = by_run(made['rows'])
    for (stage, dataset, temperature, concurrency), row in rows.items():
        base = rows[('tp1-autoregressive', dataset, temperature, concurrency)]
        assert row['speedup'] == pytest.approx(row['output_throughput'] / base['output_throughput'])
        assert row['baseline_stage'] == 'tp1-autoregressive'


def test_tau_is_per_request_from_the_raw_records_and_follows_the_content(made):
    rows = by_run(made['rows'])
    for (stage, dataset, temperature, concurrency), row in rows.items():
        raw = made['root'] / 'ct200' / 'real' / stage / results_file('raw', dataset=dataset, temperature=temperature,
                                                                     concurrency=concurrency)
        done = [r for r in map(json.loads, raw.read_text().splitlines()) if not r['warmup'] and r['success']]
        if stage == 'tp1-autoregressive':
            assert row['accept_length'] is None and row['accept_length_source'] is None
            continue
        steps = [r for r in done if r['spec_verify_ct']]
        assert row['accept_length'] == pytest.approx(sum(r['output_tokens'] for r in steps) / sum(r['spec_verify_ct'] for r in steps))
        assert row['accept_length_source'] == 'requests' and row['requests'] == len(done)
        assert row['accept_length_p10'] <= row['accept_length_median'] <= row['accept_length_p90']
    for stage in ('tp1-dflash-n16', 'tp1-ddtree-b64-k4'):
        # math accepts more than chat; sampling at T=0.7 accepts less than greedy
        assert rows[(stage, 'gsm8k', 0.0, 1)]['accept_length'] > rows[(stage, 'mt-bench', 0.0, 1)]['accept_length']
        assert rows[(stage, 'gsm8k', 0.0, 1)]['accept_length'] > rows[(stage, 'gsm8k', 0.7, 1)]['accept_length']


def test_a_server_info_tau_beyond_2_percent_is_flagged_where_it_is_shown(made):
    rows = by_run(made['rows'])
    flagged = sorted(key for key, row in rows.items() if row['accept_length_flag'])
    assert flagged and all(key[0] == 'tp1-dflash-n16' for key in flagged)
    assert len(flagged) == len(DATASETS) * len(TEMPERATURES) * 2
    assert all(rows[key]['accept_length_disagreement'] == pytest.approx(1 - 1 / 1.05, rel=1e-6) for key in flagged)
    md = (made['out'] / 'report.md').read_text()
    cells = [line for line in md.splitlines() if line.startswith('| DFlash n=16 |') and ' τ ' in line]  # tok/s · × · τ
    assert len(cells) == len(DATASETS) * len(TEMPERATURES) and all(line.count('⚠') == 2 for line in cells)
    assert not any('⚠' in line for line in md.splitlines() if line.startswith('| DDTree B=64 k=4 |'))
    assert 'τ cross-check: per request p10 / median / p90' in md
    assert 'Σ completion tokens / Σ verify steps' in md
    tex = (made['out'] / 'report.tex').read_text()
    assert r"$^\ddagger$" in tex and "differs by more than 2" in tex


def test_the_datasets_section_names_source_sha256_and_count(made):
    md = (made['out'] / 'report.md').read_text()
    section = md.split('## Datasets')[1].split('\n## ')[0]
    for name in DATASETS:
        entry = synth.prepared(name, 8, 32)
        line = next(line for line in section.splitlines() if line.startswith('| ct200 | %s |' % name))
        assert '| builtin | `%s` | `%s` | 8 | all | 32 | table |' % (entry['source'], entry['normalized_sha256']) in line
    datasets = json.loads((made['out'] / 'results.json').read_text())['datasets']
    assert [(item['host'], item['name'], item['sha256']) for item in datasets] == [
        ('ct200', name, synth.prepared(name, 8, 32)['normalized_sha256']) for name in DATASETS]
    row = next(row for row in csv_rows(made['out'] / 'results.csv') if row['dataset'] == 'gsm8k')
    assert row['dataset_sha256'] == synth.prepared('gsm8k', 8, 32)['normalized_sha256']
    assert (row['dataset_kind'], row['ignore_eos'], row['max_new_tokens'], row['top_k']) == ('builtin', 'false', '32', '-1')


def test_markdown_and_latex_have_one_table_per_dataset_temperature_and_tp(made):
    md = (made['out'] / 'report.md').read_text()
    for dataset in DATASETS:
        for temperature in ('0', '0.7'):
            heading = '### %s, T=%s: TP1 (1 GPU(s))' % (dataset, temperature)
            assert md.count(heading) == 1
            table = md.split(heading)[1].split('###')[0]
            assert table.splitlines()[2] == '| setting | c=1 | c=4 |'
    assert '## Best setting per host, dataset, temperature, TP and concurrency' in md
    assert '- Workload: datasets gsm8k, mt-bench; temperature 0, 0.7; top-p 1.0; top-k -1; stop at EOS' in md
    tex = (made['out'] / 'report.tex').read_text()
    # per dataset, temperature and TP; the papers' per-dataset tables (serving, decode); the why table per dataset, temperature and TP
    assert tex.count(r'\begin{table}') == 4 + 1 + 1 + 4
    assert r'\label{tab:real-ct200-mt-bench-t0-7-tp1}' in tex and 'dataset mt-bench at temperature 0.7' in tex
    assert tex.count('{') - tex.count(r'\{') == tex.count('}') - tex.count(r'\}')


def test_plots_are_per_dataset_and_temperature(made):
    kinds = ('speedup_vs_budget', 'accept_length_vs_budget', 'throughput_vs_concurrency')
    pngs = sorted(name for name in made['made']['files'] if name.endswith('.png') and name.split('-')[0] in kinds)
    assert pngs == sorted('%s-ct200-%s-t%s.png' % (kind, dataset, temperature)
                          for kind in ('speedup_vs_budget', 'accept_length_vs_budget', 'throughput_vs_concurrency')
                          for dataset in DATASETS for temperature in ('0', '0.7'))
    series = report_figures.plot_series(made['rows'], 'ct200', run=('mt-bench', 0.7))
    rows = by_run(made['rows'])
    assert series['budget'][1][(4, 1)] == [
        (budget, rows[('tp1-ddtree-b%d-k4' % budget, 'mt-bench', 0.7, 1)]['speedup'],
         rows[('tp1-ddtree-b%d-k4' % budget, 'mt-bench', 0.7, 1)]['accept_length']) for budget in (16, 64)]
    md = (made['out'] / 'report.md').read_text()
    assert '](speedup_vs_budget-ct200-gsm8k-t0.7.png)' in md.split('### gsm8k, T=0.7')[1].split('###')[0]


def test_comparison_matches_rows_on_dataset_and_temperature(made):
    rows = {(r['stage'], r['dataset'], float(r['temperature']), int(r['concurrency'])): r
            for r in csv_rows(made['out'] / 'compare-real-before.csv')}
    before = by_run(generate(str(made['root']), 'real-before', str(made['out'].parent / 'before'), plots=False)['report']['rows'])
    after = by_run(made['rows'])
    key = ('tp1-ddtree-b64-k4', 'gsm8k', 0.0, 4)
    assert float(rows[key]['output_throughput_before']) == pytest.approx(before[key]['output_throughput'])
    assert float(rows[key]['output_throughput_after']) == pytest.approx(after[key]['output_throughput'])
    only_after = rows[('tp1-ddtree-b64-k4', 'mt-bench', 0.0, 4)]
    assert only_after['status_before'] == 'absent' and only_after['output_throughput_before'] == ''
    md = (made['out'] / 'compare-real-before.md').read_text()
    assert '| host | TP | setting | dataset | T | c |' in md and '| ct200 | 1 | DDTree B=64 k=4 | gsm8k | 0 | 4 |' in md


def test_an_old_campaign_reads_as_random_at_temperature_0_and_compares_with_a_new_one(tmp_path):
    root = tmp_path / 'results'
    synth.make_campaign(root, 'ct200', 'old', MATRIX, concurrency=(1, 4), legacy=True)
    synth.make_campaign(root, 'ct200', 'new', MATRIX, concurrency=(1, 4), seed=2)
    assert (root / 'ct200' / 'old' / 'tp1-autoregressive' / 'result-c4.json').is_file()
    made = generate(str(root), 'new', str(tmp_path / 'out'), plots=False, compare_to='old')
    old = generate(str(root), 'old', str(tmp_path / 'old'), plots=False)['report']['rows']
    assert len(old) == len(MATRIX) * 2 and all(row['status'] == 'ok' for row in old)
    assert {(row['dataset'], row['temperature']) for row in old} == {('random', 0.0)}
    assert all(row['requests'] is None and row['dataset_kind'] is None for row in old)
    compared = csv_rows(tmp_path / 'out' / 'compare-old.csv')
    assert len(compared) == len(MATRIX) * 2
    assert all(row['status_before'] == row['status_after'] == 'ok' and row['output_throughput_delta_pct'] != '' for row in compared)
    md = (tmp_path / 'old' / 'report.md').read_text()
    assert '## Datasets' not in md and '### TP1 (1 GPU(s))' in md and 'as the server reports it' in md
    assert '- Workload: 64 input tokens, 32 output tokens, 8 prompts per concurrency' in md
    assert made['skipped_files'] == []


def test_a_planned_run_without_its_file_is_missing_with_its_dataset_and_temperature(tmp_path):
    root = tmp_path / 'results'
    synth.make_campaign(root, 'ct200', 'c', MATRIX[:2], concurrency=(1,), datasets=['gsm8k'], temperatures=[0, 1])
    (root / 'ct200' / 'c' / 'tp1-dflash-n16' / results_file('result', dataset='gsm8k', temperature=1.0, concurrency=1)).unlink()
    made = generate(str(root), 'c', str(tmp_path / 'out'), plots=False)
    row = by_run(made['report']['rows'])[('tp1-dflash-n16', 'gsm8k', 1.0, 1)]
    assert row['status'] == 'missing'
    assert row['reason'] == 'no result file for dataset gsm8k at temperature 1 and this concurrency'
    assert 'tp1-dflash-n16` gsm8k, T=1 c=1 missing' in (tmp_path / 'out' / 'report.md').read_text()


def test_result_files_are_found_by_the_layout_pattern_and_the_earlier_names_as_repeat_1():
    names = ['result-gsm8k-t0-c4.json', 'result-mt-bench-t0.7-c16.json', 'result-a-t1-t0-c1.json', 'result-c8.json',
             'result-random-t0-c8.json', 'result-x-tnan-c1.json', 'raw-gsm8k-t0-c4.jsonl', 'status.json']
    assert report_read.find_results(names, RESULTS_LAYOUT) == {
        ('gsm8k', 0.0, 4): {1: 'result-gsm8k-t0-c4.json'}, ('mt-bench', 0.7, 16): {1: 'result-mt-bench-t0.7-c16.json'},
        ('a-t1', 0.0, 1): {1: 'result-a-t1-t0-c1.json'}, ('random', 0.0, 8): {1: 'result-random-t0-c8.json'}}
    assert report_read.find_results(['result-c8.json'], RESULTS_LAYOUT) == {('random', 0.0, 8): {1: 'result-c8.json'}}


def test_repeats_are_found_by_their_number_beside_the_names_before_repeats():
    layout = dict(RESULTS_LAYOUT, result=synth.REPEAT_LAYOUT['result'], raw=synth.REPEAT_LAYOUT['raw'])
    names = ['result-gsm8k-t0-c4-r1.json', 'result-gsm8k-t0-c4-r3.json', 'result-gsm8k-t0-c4-r0.json',
             'result-gsm8k-t0-c1.json', 'result-gsm8k-t0-c1-r2.json', 'result-c8.json']
    assert report_read.find_runs(names, layout) == {
        ('gsm8k', 0.0, 4): {1: ('result-gsm8k-t0-c4-r1.json', 'raw-gsm8k-t0-c4-r1.jsonl'),
                            3: ('result-gsm8k-t0-c4-r3.json', 'raw-gsm8k-t0-c4-r3.jsonl')},
        ('gsm8k', 0.0, 1): {1: ('result-gsm8k-t0-c1.json', 'raw-gsm8k-t0-c1.jsonl'),
                            2: ('result-gsm8k-t0-c1-r2.json', 'raw-gsm8k-t0-c1-r2.jsonl')},
        ('random', 0.0, 8): {1: ('result-c8.json', 'raw-c8.jsonl')}}
    # the layout's repeat 1 wins over the same run's file from before repeats
    both = report_read.find_results(['result-gsm8k-t0-c1.json', 'result-gsm8k-t0-c1-r1.json'], layout)
    assert both == {('gsm8k', 0.0, 1): {1: 'result-gsm8k-t0-c1-r1.json'}}


@pytest.mark.parametrize(('check', 'doc', 'reason'), [
    ('check_status', {'status': 'ok', 'datasets': {}}, 'datasets is a dict; allowed: a list of datasets'),
    ('check_status', {'status': 'ok', 'datasets': [{'name': 'GSM'}]}, "datasets[0].name is 'GSM'; allowed: a dataset name"),
    ('check_status', {'status': 'ok', 'datasets': [{'name': 'g', 'count': -1}]}, 'datasets[0].count is -1; allowed: a count'),
    ('check_plan', {'stages': [{'id': 's', 'workload': {'temperature': [0, -1]}}]},
     'stages[0].workload.temperature[1] is -1; allowed: a number, 0 or more'),
    ('check_plan', {'stages': [{'id': 's', 'workload': {'datasets': [1]}}]}, 'stages[0].workload.datasets[0] is 1'),
    ('check_result', {'dataset': 1}, 'dataset is 1; allowed: a string or null'),
    ('check_result', {'accept_length_flag': 'yes'}, "accept_length_flag is 'yes'; allowed: true or false"),
    ('check_result', {'requests': 2.5}, 'requests is 2.5; allowed: a count'),
])
def test_the_new_keys_are_checked_against_their_schema(check, doc, reason):
    assert reason in getattr(report_schema, check)(doc)


def test_the_summary_lines_name_the_dataset_and_temperature(made):
    assert any(line.startswith('ct200 gsm8k T=0 TP1 c=1: best DDTree B=64 k=4 ') for line in made['made']['lines'])
    assert any(line.startswith('ct200 mt-bench T=0.7 TP1 c=4: best ') for line in made['made']['lines'])


def test_random_prompts_beside_a_real_set_keep_their_sizes_and_ignore_eos(tmp_path):
    root = tmp_path / 'results'
    synth.make_campaign(root, 'ct200', 'c', MATRIX[:2], concurrency=(1,), datasets=['random', 'gsm8k'])
    made = generate(str(root), 'c', str(tmp_path / 'out'), plots=False)
    rows = by_run(made['report']['rows'])
    random_row, real_row = rows[('tp1-dflash-n16', 'random', 0.0, 1)], rows[('tp1-dflash-n16', 'gsm8k', 0.0, 1)]
    assert (random_row['ignore_eos'], random_row['mean_output_len'], random_row['dataset_kind']) == (True, 32.0, 'random')
    assert real_row['ignore_eos'] is False and real_row['mean_output_len'] < 32
    md = (tmp_path / 'out' / 'report.md').read_text()
    assert '| ct200 | random | random | random prompts, 64 input / 32 output tokens | – | 8 | – | – | – |' in md
    assert '### random, T=0: TP1 (1 GPU(s))' in md and '### gsm8k, T=0: TP1 (1 GPU(s))' in md
