# SPDX-License-Identifier: GPL-3.0-or-later
"""The report of repeated runs: a synthetic campaign with 3 repeats of every run (AR, DFlash and DDTree; gsm8k and
Spec-Bench with its categories), and every statistic of results.json and the CSVs recomputed here from the raw
per-request records, with numpy and the closed forms (Student t, Fieller, Welch), not with report_stats."""
import csv
import json
import math
import sys
from pathlib import Path

import numpy
import pytest
from scipy import stats

from ansible_collections.specdec.bench.plugins.plugin_utils.report import ReportError, generate

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synthetic_results as synth  # noqa: E402  pylint: disable=wrong-import-position

MATRIX = [(1, 'autoregressive', {}), (1, 'dflash', {'num_draft_tokens': 16}), (1, 'ddtree', {'budget': 64, 'topk': 4})]
DATASETS = ['gsm8k', 'spec-bench']
CONCURRENCY = (1, 4)
REPEATS = 3
METRICS = ('output_throughput', 'median_ttft_ms', 'median_itl_ms', 'accept_length')


@pytest.fixture(name='made', scope='module')
def made_fixture(tmp_path_factory):
    root = tmp_path_factory.mktemp('repeats') / 'results'
    synth.make_campaign(root, 'ct200', 'rep', MATRIX, concurrency=CONCURRENCY, num_prompts=9, datasets=DATASETS,
                        repeats=REPEATS, seed=3)
    synth.make_campaign(root, 'ct200', 'rep-before', MATRIX, concurrency=CONCURRENCY, num_prompts=9, datasets=DATASETS,
                        repeats=REPEATS, seed=11)
    out = root.parent / 'out'
    made = generate(str(root), 'rep', str(out), compare_to='rep-before', plots=False)
    return {'root': root, 'out': out, 'made': made, 'json': json.loads((out / 'results.json').read_text())}


def csv_rows(path):
    with open(path, newline='', encoding='utf-8') as handle:
        return list(csv.DictReader(handle))


def number(text):
    return None if text == '' else float(text)


def raw_records(root, campaign, stage, dataset, concurrency, repeat):
    name = synth.REPEAT_LAYOUT['raw'].format(dataset=dataset, temperature='0', concurrency=concurrency, repeat=repeat)
    lines = (root / 'ct200' / campaign / stage / name).read_text().splitlines()
    return [record for record in (json.loads(line) for line in lines) if not record['warmup']]


def per_repeat(records):
    """One repeat's measures from its raw records, independently of the harness and the report."""
    done = [r for r in records if r['success']]
    verify = sum(r['spec_verify_ct'] or 0 for r in done)
    return {
        'output_throughput': sum(r['output_tokens'] for r in done) / max(r['end_s'] for r in records),
        'median_ttft_ms': numpy.percentile(numpy.array([r['ttft_s'] for r in done]) * 1000, 50),
        'median_itl_ms': numpy.percentile(numpy.array([g for r in done for g in r['itl_s']]) * 1000, 50),
        'accept_length': sum(r['output_tokens'] for r in done if r['spec_verify_ct']) / verify if verify else None,
    }


def student(values):
    """(mean, sd, ci_low, ci_high, cv) by numpy and the t quantile."""
    values = numpy.array(values, dtype=float)
    mean, sd = values.mean(), values.std(ddof=1)
    half = stats.t.ppf(0.975, len(values) - 1) * sd / math.sqrt(len(values))
    return mean, sd, mean - half, mean + half, sd / mean


def fieller(num, den):
    """Fieller's 95% interval of mean(num) / mean(den), the closed form, t with Welch-Satterthwaite df at the ratio."""
    num, den = numpy.array(num), numpy.array(den)
    x, y = num.mean(), den.mean()
    vx, vy = num.var(ddof=1) / len(num), den.var(ddof=1) / len(den)
    r = x / y
    df = (vx + r * r * vy) ** 2 / (vx ** 2 / (len(num) - 1) + (r * r * vy) ** 2 / (len(den) - 1))
    t = stats.t.ppf(0.975, df)
    a, b, c = y * y - t * t * vy, x * y, x * x - t * t * vx
    root = math.sqrt(b * b - a * c)
    return r, (b - root) / a, (b + root) / a


def measured(made, campaign='rep'):
    """{(stage, dataset, concurrency): [per_repeat(...) of each repeat]}."""
    out = {}
    for _tp, method, params in MATRIX:
        stage = synth.stage_id(1, method, params)
        for dataset in DATASETS:
            for concurrency in CONCURRENCY:
                out[(stage, dataset, concurrency)] = [per_repeat(raw_records(made['root'], campaign, stage, dataset, concurrency, r))
                                                      for r in range(1, REPEATS + 1)]
    return out


def test_every_row_statistic_is_recomputed_from_the_raw_records(made):
    expected = measured(made)
    rows = {(r['stage'], r['dataset'], int(r['concurrency'])): r for r in csv_rows(made['out'] / 'results.csv')}
    assert len(rows) == len(expected) == 3 * 2 * 2
    checked = 0
    for key, repeats in expected.items():
        row, doc = rows[key], next(r for r in made['json']['rows'] if (r['stage'], r['dataset'], r['concurrency']) == key)
        assert row['status'] == 'ok' and int(row['repeats']) == REPEATS and doc['repeats'] == REPEATS
        for metric in METRICS:
            values = [repeat[metric] for repeat in repeats]
            if values[0] is None:  # AR: no acceptance length
                assert row[metric] == '' and doc[metric + '_sd'] is None
                continue
            mean, sd, low, high, cv = student(values)
            for suffix, value in (('', mean), ('_sd', sd), ('_ci_low', low), ('_ci_high', high), ('_cv', cv)):
                assert number(row[metric + suffix]) == pytest.approx(value, rel=1e-9), (key, metric + suffix)
                assert doc[metric + suffix] == pytest.approx(value, rel=1e-9), (key, metric + suffix)
            checked += 1
        cvs = [student([r[m] for r in repeats])[4] for m in ('output_throughput', 'accept_length') if repeats[0][m] is not None]
        assert doc['noisy'] is any(cv > 0.05 for cv in cvs)
    assert checked == 3 * 4 + 2 * 4 * 4  # AR's 3 measures at its 4 runs, the two drafters' 4 measures at their 4 runs each


def test_every_speedup_and_its_fieller_interval_is_recomputed(made):
    expected = measured(made)
    rows = {(r['stage'], r['dataset'], r['concurrency']): r for r in made['json']['rows']}
    significant = 0
    for (stage, dataset, concurrency), repeats in expected.items():
        row = rows[(stage, dataset, concurrency)]
        if stage == 'tp1-autoregressive':  # the baseline over itself: 1.0x by definition, no interval and no test
            assert row['speedup'] == 1.0 and row['baseline_stage'] == stage
            assert [row[key] for key in ('speedup_ci_low', 'speedup_ci_high', 'speedup_ci_method', 'speedup_significant')] == [None] * 4
            continue
        baseline = [r['output_throughput'] for r in expected[('tp1-autoregressive', dataset, concurrency)]]
        ratio, low, high = fieller([r['output_throughput'] for r in repeats], baseline)
        assert row['speedup'] == pytest.approx(ratio, rel=1e-12) and row['baseline_stage'] == 'tp1-autoregressive'
        assert (row['speedup_ci_low'], row['speedup_ci_high']) == (pytest.approx(low, rel=1e-9), pytest.approx(high, rel=1e-9))
        assert row['speedup_ci_method'] == 'fieller' and row['speedup_significant'] is (not low <= 1.0 <= high)
        significant += row['speedup_significant']
    assert significant == 8  # every drafter run is clearly faster; AR over itself (1.0x) never is


def test_each_repeat_is_a_row_of_results_repeats_csv(made):
    expected = measured(made)
    rows = csv_rows(made['out'] / 'results-repeats.csv')
    assert len(rows) == len(expected) * REPEATS
    for row in rows:
        repeat = expected[(row['stage'], row['dataset'], int(row['concurrency']))][int(row['repeat']) - 1]
        assert row['status'] == 'ok'
        for metric in METRICS:
            assert number(row[metric]) == (None if repeat[metric] is None else pytest.approx(repeat[metric], rel=1e-9))


def category_measures(records):
    out = {}
    for category in sorted(set(r['category'] for r in records)):
        mine = [r for r in records if r['category'] == category and r['success']]
        out[category] = (sum(r['output_tokens'] for r in mine if r['spec_verify_ct']) / sum(r['spec_verify_ct'] or 0 for r in mine)
                         if any(r['spec_verify_ct'] for r in mine) else None,
                         sum(r['output_tokens'] for r in mine) / sum(r['latency_s'] for r in mine), len(mine))
    return out


def test_spec_bench_categories_are_recomputed_from_the_raw_records(made):
    rows = {(r['stage'], r['concurrency'], r['category']): r for r in made['json']['categories']}
    assert set(r['dataset'] for r in made['json']['categories']) == {'spec-bench'}  # gsm8k has one category: none
    assert len(rows) == 3 * 2 * 3 and len(csv_rows(made['out'] / 'results-categories.csv')) == len(rows)

    def samples(stage, concurrency):
        return [category_measures(raw_records(made['root'], 'rep', stage, 'spec-bench', concurrency, r)) for r in range(1, REPEATS + 1)]
    for concurrency in CONCURRENCY:
        baseline = samples('tp1-autoregressive', concurrency)
        for _tp, method, params in MATRIX:
            stage = synth.stage_id(1, method, params)
            repeats = samples(stage, concurrency)
            for category in ('coding', 'math', 'writing'):
                row = rows[(stage, concurrency, category)]
                assert row['repeats'] == REPEATS and row['requests'] == sum(r[category][2] for r in repeats) == 9
                mean, sd, low, high, _cv = student([r[category][1] for r in repeats])
                assert (row['decode_throughput'], row['decode_throughput_sd']) == (pytest.approx(mean), pytest.approx(sd))
                assert (row['decode_throughput_ci_low'], row['decode_throughput_ci_high']) == (pytest.approx(low), pytest.approx(high))
                if method == 'autoregressive':
                    assert row['accept_length'] is None and row['speedup'] is None
                    continue
                assert row['accept_length'] == pytest.approx(student([r[category][0] for r in repeats])[0])
                ratio, low, high = fieller([r[category][1] for r in repeats], [r[category][1] for r in baseline])
                assert (row['speedup'], row['speedup_ci_low'], row['speedup_ci_high']) == (
                    pytest.approx(ratio), pytest.approx(low), pytest.approx(high))
                assert row['speedup_significant'] is (not low <= 1.0 <= high)
    # the synthetic categories accept differently: math > coding > writing, as CATEGORY_TAU sets them
    tau = {category: rows[('tp1-ddtree-b64-k4', 1, category)]['accept_length'] for category in ('writing', 'math', 'coding')}
    assert tau['math'] > tau['coding'] > tau['writing']


def test_compare_tests_the_throughput_with_welch_and_the_speedups_by_their_intervals(made):
    after, before = measured(made), measured(made, 'rep-before')
    rows = {(r['stage'], r['dataset'], int(r['concurrency'])): r for r in csv_rows(made['out'] / 'compare-rep-before.csv')}
    report_rows = {(r['stage'], r['dataset'], r['concurrency']): r for r in made['json']['rows']}
    for key, row in rows.items():
        a = numpy.array([r['output_throughput'] for r in after[key]])
        b = numpy.array([r['output_throughput'] for r in before[key]])
        va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
        t = (a.mean() - b.mean()) / math.sqrt(va + vb)
        df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
        p = 2 * stats.t.sf(abs(t), df)
        assert number(row['output_throughput_p']) == pytest.approx(p, rel=1e-6)
        assert row['output_throughput_significant'] == ('true' if p < 0.05 else 'false')
        assert number(row['output_throughput_ci_low_after']) == pytest.approx(report_rows[key]['output_throughput_ci_low'])
        assert (row['repeats_before'], row['repeats_after']) == ('3', '3')
        if key[0] == 'tp1-autoregressive':  # the baseline's speedup is 1.0x on both sides, by definition: no test
            assert row['speedup_change_significant'] == ''
            continue
        _r, low_a, high_a = fieller(a, [r['output_throughput'] for r in after[('tp1-autoregressive',) + key[1:]]])
        _r, low_b, high_b = fieller(b, [r['output_throughput'] for r in before[('tp1-autoregressive',) + key[1:]]])
        assert row['speedup_change_significant'] == ('true' if high_a < low_b or high_b < low_a else 'false')


def test_one_repeat_has_no_spread_and_no_interval(tmp_path):
    root = tmp_path / 'results'
    synth.make_campaign(root, 'h', 'one', MATRIX[:2], concurrency=(1,), datasets=['gsm8k'])
    made = generate(str(root), 'one', str(tmp_path / 'out'), plots=False)
    row = [r for r in made['report']['rows'] if r['method'] == 'dflash'][0]
    assert row['repeats'] == 1 and row['speedup'] is not None
    assert all(row[key] is None for key in ('output_throughput_sd', 'output_throughput_ci_low', 'output_throughput_cv',
                                            'speedup_ci_low', 'speedup_ci_method', 'speedup_significant', 'noisy'))
    assert [r['repeat'] for r in made['report']['repeats']] == [1, 1]


def test_noisy_follows_the_threshold_and_a_bad_threshold_names_the_field(made, tmp_path):
    strict = generate(str(made['root']), 'rep', str(tmp_path / 'strict'), plots=False, noisy_cv=1e-6)
    assert all(row['noisy'] is True for row in strict['report']['rows'])
    assert strict['report']['noisy_cv'] == 1e-6
    for value in (0, 1.5, 'x', True):
        with pytest.raises(ReportError, match='noisy_cv is .*; allowed: a coefficient of variation'):
            generate(str(made['root']), 'rep', str(tmp_path / 'bad'), plots=False, noisy_cv=value)


def test_a_repeat_that_did_not_complete_is_left_out_of_the_row(made, tmp_path):
    import shutil  # pylint: disable=import-outside-toplevel
    root = tmp_path / 'results'
    shutil.copytree(made['root'] / 'ct200' / 'rep', root / 'ct200' / 'rep')
    name = synth.REPEAT_LAYOUT['result'].format(dataset='gsm8k', temperature='0', concurrency=1, repeat=2)
    path = root / 'ct200' / 'rep' / 'tp1-ddtree-b64-k4' / name
    path.write_text(json.dumps(dict(json.loads(path.read_text()), complete=False)))
    got = generate(str(root), 'rep', str(tmp_path / 'out'), plots=False)['report']
    row = next(r for r in got['rows'] if (r['stage'], r['dataset'], r['concurrency']) == ('tp1-ddtree-b64-k4', 'gsm8k', 1))
    values = [r['output_throughput'] for r in measured(made)[('tp1-ddtree-b64-k4', 'gsm8k', 1)]]
    assert row['repeats'] == 2 and row['output_throughput'] == pytest.approx((values[0] + values[2]) / 2)
    statuses = [r['status'] for r in got['repeats'] if (r['stage'], r['dataset'], r['concurrency']) == ('tp1-ddtree-b64-k4', 'gsm8k', 1)]
    assert statuses == ['ok', 'incomplete', 'ok']


def test_report_md_shows_mean_and_half_interval_and_the_markers_with_their_legend(made, tmp_path):
    md = (made['out'] / 'report.md').read_text()
    row = next(r for r in made['json']['rows'] if (r['stage'], r['dataset'], r['concurrency']) == ('tp1-ddtree-b64-k4', 'gsm8k', 1))
    half = (row['speedup_ci_high'] - row['speedup_ci_low']) / 2
    assert '%.2f ± %.2f×' % (row['speedup'], half) in md and 'Repeated runs: a cell is the mean' in md
    assert '† not significant' not in md  # every speedup here is significant and no row noisy
    noisy = generate(str(made['root']), 'rep', str(tmp_path / 'noisy'), plots=False, noisy_cv=1e-6)
    md = (tmp_path / 'noisy' / 'report.md').read_text()
    assert '\\* noisy (CV > 0.0001%)' in md and '\\* · ' in md
    tex = (tmp_path / 'noisy' / 'report.tex').read_text()
    assert r'{\tiny$\pm$' in tex and r'$^*$: noisy (CV $>$ 0.0001\%)' in tex
    assert noisy['report']['rows'][0]['speedup_significant'] is None  # AR against itself: 1.0x by definition, no test
    assert all('†' not in line for line in md.splitlines() if line.startswith('| AR |'))  # the baseline is never marked


def test_the_comparison_markdown_names_both_tests_and_marks_each_delta(made):
    md = (made['out'] / 'compare-rep-before.md').read_text()
    assert "Welch's t-test" in md and 'Fieller intervals' in md
    rows = csv_rows(made['out'] / 'compare-rep-before.csv')
    for row in rows:
        p = number(row['output_throughput_p'])
        delta = '%+.1f%%' % number(row['output_throughput_delta_pct'])
        shown = '**%s** (p=%.3g)' % (delta, p) if p < 0.05 else '%s (n.s., p=%.3g)' % (delta, p)
        assert '| %s |' % shown in md, shown
