# SPDX-License-Identifier: GPL-3.0-or-later
"""The report's energy: a synthetic campaign whose results carry bench_run's energy keys (3 repeats; AR, DFlash and
DDTree), every energy statistic of results.json recomputed here from the result files with numpy and the closed forms
(Student t, Fieller), the tables' cells and the throttle flag, the plot and its cache; a campaign without energy
reports exactly as before."""
import csv
import json
import shutil
import sys
from pathlib import Path

import pytest

from ansible_collections.specdec.bench.plugins.plugin_utils.report import figures as report_figures
from ansible_collections.specdec.bench.plugins.plugin_utils.report import plots as report_plots
from ansible_collections.specdec.bench.plugins.plugin_utils.report import generate
from ansible_collections.specdec.bench.plugins.plugin_utils.report.schema import check_result

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synthetic_results as synth  # noqa: E402  pylint: disable=wrong-import-position
from test_report_repeats import fieller, student  # noqa: E402  pylint: disable=wrong-import-position
from report_helpers import compile_tex  # noqa: E402  pylint: disable=wrong-import-position

MATRIX = [(1, 'autoregressive', {}), (1, 'dflash', {'num_draft_tokens': 16}), (1, 'ddtree', {'budget': 64, 'topk': 4})]
CONCURRENCY = (1, 4)
REPEATS = 3
THROTTLED = {'tp1-dflash-n16': [(1, 2)]}  # DFlash's second repeat at c=1 saw sw_power_cap


@pytest.fixture(name='made', scope='module')
def made_fixture(tmp_path_factory):
    root = tmp_path_factory.mktemp('energy') / 'results'
    synth.make_campaign(root, 'ct200', 'en', MATRIX, concurrency=CONCURRENCY, num_prompts=9, datasets=['gsm8k'],
                        repeats=REPEATS, seed=7, energy=True, throttled=THROTTLED)
    out = root.parent / 'out'
    made = generate(str(root), 'en', str(out))
    return {'root': root, 'out': out, 'made': made, 'json': json.loads((out / 'results.json').read_text())}


def results_of(root, stage, concurrency):
    """The 3 repeats' result files of one run, as bench_run wrote them."""
    folder = root / 'ct200' / 'en' / stage
    return [json.loads((folder / synth.REPEAT_LAYOUT['result'].format(
        dataset='gsm8k', temperature='0', concurrency=concurrency, repeat=repeat)).read_text()) for repeat in range(1, REPEATS + 1)]


def row_of(rows, stage, concurrency):
    return next(row for row in rows if row['stage'] == stage and row['concurrency'] == concurrency)


def test_rows_carry_the_repeats_means_and_intervals_of_energy(made):
    rows = made['json']['rows']
    for stage in (synth.stage_id(tp, method, params) for tp, method, params in MATRIX):
        for c in CONCURRENCY:
            row, results = row_of(rows, stage, c), results_of(made['root'], stage, c)
            mean, sd, low, high, cv = student([result['output_tokens_per_j'] for result in results])
            assert row['output_tokens_per_j'] == pytest.approx(mean, rel=1e-12)
            assert row['output_tokens_per_j_sd'] == pytest.approx(sd, rel=1e-9)
            assert (row['output_tokens_per_j_ci_low'], row['output_tokens_per_j_ci_high']) == pytest.approx((low, high), rel=1e-9)
            assert row['output_tokens_per_j_cv'] == pytest.approx(cv, rel=1e-9)
            for key in ('energy_j', 'avg_power_w', 'idle_power_w', 'j_per_output_token'):
                assert row[key] == pytest.approx(sum(result[key] for result in results) / REPEATS, rel=1e-12), key
            assert (row['energy_method'], row['energy_backend'], row['power_source']) == ('counter', 'pynvml', 'instant')
            throttled = (c, 2) in THROTTLED.get(stage, [])
            assert row['gpu_throttled'] is throttled
            assert row['throttle_reasons'] == ('sw_power_cap' if throttled else None)


def test_energy_ratio_is_the_mean_j_per_token_over_ar_with_fiellers_interval(made):
    rows = made['json']['rows']
    ar = synth.stage_id(1, 'autoregressive', {})
    for tp, method, params in MATRIX[1:]:
        stage = synth.stage_id(tp, method, params)
        for c in CONCURRENCY:
            row = row_of(rows, stage, c)
            mine = [result['j_per_output_token'] for result in results_of(made['root'], stage, c)]
            base = [result['j_per_output_token'] for result in results_of(made['root'], ar, c)]
            ratio, low, high = fieller(mine, base)
            assert row['energy_ratio'] == pytest.approx(ratio, rel=1e-12)
            assert (row['energy_ratio_ci_low'], row['energy_ratio_ci_high']) == pytest.approx((low, high), rel=1e-9)
            assert row['energy_ratio'] < 1.0  # the synthetic drafters finish sooner than they draw more power
    assert row_of(rows, ar, 1)['energy_ratio'] == pytest.approx(1.0)


def test_the_csvs_name_the_energy_columns(made):
    with open(made['out'] / 'results.csv', newline='', encoding='utf-8') as handle:
        rows = list(csv.DictReader(handle))
    for column in ('energy_j', 'avg_power_w', 'idle_power_w', 'output_tokens_per_j', 'output_tokens_per_j_ci_low',
                   'j_per_output_token', 'energy_ratio', 'energy_ratio_ci_high', 'energy_method', 'gpu_throttled',
                   'throttle_reasons'):
        assert column in rows[0], column
    dflash = next(row for row in rows if row['stage'] == 'tp1-dflash-n16' and row['concurrency'] == '1')
    assert dflash['gpu_throttled'] == 'true' and dflash['energy_method'] == 'counter'
    with open(made['out'] / 'results-repeats.csv', newline='', encoding='utf-8') as handle:
        repeats = list(csv.DictReader(handle))
    flagged = [(row['stage'], row['concurrency'], row['repeat']) for row in repeats if row['gpu_throttled']]
    assert flagged == [('tp1-dflash-n16', '1', '2')]
    one = next(row for row in repeats if row['stage'] == 'tp1-dflash-n16' and row['concurrency'] == '4' and row['repeat'] == '3')
    result = results_of(made['root'], 'tp1-dflash-n16', 4)[2]
    assert float(one['energy_j']) == pytest.approx(result['energy_j']) and int(one['energy_samples']) == result['energy_samples']
    assert one['telemetry_file'] == 'telemetry-gsm8k-t0-c4-r3.csv' and one['energy_backend'] == 'pynvml'


def test_report_md_has_the_energy_section_and_the_ratio_beside_the_speedup(made):
    md = (made['out'] / 'report.md').read_text()
    rows = made['json']['rows']
    section = md[md.index('### Energy'):]
    assert "NVML's total-energy counter" in section and '(pynvml) for 6 run(s)' in section
    assert "never the server's average power" in section
    dflash = row_of(rows, 'tp1-dflash-n16', 1)
    cell = '%.2f ± %.2f · %.2f ± %.2f× · %.0f W ‡' % (
        dflash['output_tokens_per_j'], (dflash['output_tokens_per_j_ci_high'] - dflash['output_tokens_per_j_ci_low']) / 2,
        dflash['energy_ratio'], (dflash['energy_ratio_ci_high'] - dflash['energy_ratio_ci_low']) / 2, dflash['avg_power_w'])
    line = next(text for text in section.splitlines() if text.startswith('| DFlash n=16 |'))
    assert line.split(' | ')[1] == cell and '‡' not in line.split(' | ')[2]
    assert '‡ the GPUs were throttled during a repeat (clock event reasons: sw_power_cap)' in section
    assert '![tokens per joule](tokens_per_joule_vs_concurrency-ct200-gsm8k-t0.png)' in section
    papers = md[md.index('## Per dataset, in the papers\' layout'):md.index('### Energy')]
    head = next(text for text in papers.splitlines() if text.startswith('| dataset |'))
    assert 'DFlash (n=16) E/tok vs AR' in head and 'DDTree (B=64 k=4) E/tok vs AR' in head and 'AR E/tok' not in head
    gsm8k = next(text for text in papers.splitlines() if text.startswith('| gsm8k, T=0 |')).split(' | ')
    column = head.split(' | ').index('DFlash (n=16) E/tok vs AR')
    assert gsm8k[column] == '%.2f ± %.2f×‡' % (dflash['energy_ratio'], (dflash['energy_ratio_ci_high'] - dflash['energy_ratio_ci_low']) / 2)
    assert '‡ GPUs throttled during a repeat' in papers


def test_report_tex_has_the_energy_table_and_compiles(made, tmp_path):
    tex = (made['out'] / 'report.tex').read_text()
    assert r'\label{tab:en-ct200-gsm8k-t0-tp1-energy}' in tex and r'tok/J & E/tok' in tex and r'$^\ddagger$' in tex
    assert 'Overfull \\hbox' not in compile_tex(made['out'] / 'report.tex', tmp_path)


def test_the_papers_table_with_energy_fits_the_page_when_wide(tmp_path):
    """Three speculative methods and a swept DDTree, each with its E/tok column: still within the text width."""
    from test_report_tables import wide_report  # pylint: disable=import-outside-toplevel
    from ansible_collections.specdec.bench.plugins.plugin_utils.report import latex_sections  # pylint: disable=import-outside-toplevel
    report = wide_report()
    for row in report['rows']:
        if row['method'] != 'autoregressive':
            row.update(energy_ratio=0.512, energy_ratio_ci_low=0.488, energy_ratio_ci_high=0.537, gpu_throttled=row['method'] == 'dflash')
    tex = '\n'.join(latex_sections.paper_latex(report))
    assert tex.count('E/tok') >= 3 and r'\ddagger' in tex
    assert r'\label{tab:c-ct200-tp1-datasets-energy}' in tex  # too wide with them: a second table
    (tmp_path / 'tables.tex').write_text(tex + '\n')
    assert 'Overfull \\hbox' not in compile_tex(tmp_path / 'tables.tex', tmp_path)


def test_tokens_per_joule_plot_is_drawn_with_whiskers_and_cached(made, monkeypatch):
    name = 'tokens_per_joule_vs_concurrency-ct200-gsm8k-t0.png'
    assert name in made['made']['files'] and (made['out'] / name).read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    spec = next(spec for file_name, _key, spec in report_figures.plot_figures(made['made']['report']) if file_name == name)
    lines = dict((legend, points) for legend, points, _baseline in spec['panels'][0]['lines'])
    assert set(lines) == {'AR', 'DFlash n=16', 'DDTree B=64 k=4'}
    row = row_of(made['json']['rows'], 'tp1-ddtree-b64-k4', 4)
    assert lines['DDTree B=64 k=4'][1] == (4, row['output_tokens_per_j'], row['output_tokens_per_j_ci_low'],
                                           row['output_tokens_per_j_ci_high'])
    drawn = []
    monkeypatch.setattr(report_plots, '_draw', lambda spec: drawn.append(spec['title']))
    again = generate(str(made['root']), 'en', str(made['out']))
    assert drawn == [] and again['changed'] == [] and name in again['files']


def strip_energy(folder, keep_nulls):
    """Every result under folder without energy (keep_nulls: the keys there, null, as bench_run writes them with
    telemetry off)."""
    for path in folder.rglob('result-*.json'):
        doc = json.loads(path.read_text())
        for key in synth.energy_result(synth.random.Random(0), {'duration_s': 1.0, 'total_output_tokens': 1},
                                       'autoregressive', {}, 1, 1):
            doc.pop(key, None)
            if keep_nulls:
                doc[key] = None
        if keep_nulls:
            doc['energy_note'] = 'telemetry off'
        path.write_text(json.dumps(doc))


def test_results_without_energy_report_as_before(tmp_path, monkeypatch):
    plain = tmp_path / 'plain'
    synth.make_campaign(plain, 'ct200', 'en', MATRIX, concurrency=CONCURRENCY, num_prompts=9, datasets=['gsm8k'],
                        repeats=REPEATS, seed=7)
    nulls = tmp_path / 'nulls'
    shutil.copytree(plain, nulls)
    strip_energy(nulls, keep_nulls=True)
    drawn = []
    real = report_plots._draw  # pylint: disable=protected-access
    monkeypatch.setattr(report_plots, '_draw', lambda spec: drawn.append(spec['kind']) or real(spec))
    first = generate(str(plain), 'en', str(tmp_path / 'out-plain'))
    second = generate(str(nulls), 'en', str(tmp_path / 'out-nulls'))
    assert 'energy' not in drawn
    for name in ('report.md', 'report.tex', 'results.csv'):
        assert (tmp_path / 'out-plain' / name).read_bytes() == (tmp_path / 'out-nulls' / name).read_bytes(), name
    md = (tmp_path / 'out-plain' / 'report.md').read_text()
    assert 'Energy' not in md and 'E/tok' not in md and 'tok/J' not in (tmp_path / 'out-plain' / 'report.tex').read_text()
    assert not any('joule' in name for name in list(first['files']) + list(second['files']))
    assert all(row['output_tokens_per_j'] is None and row['energy_ratio'] is None and row['gpu_throttled'] is None
               for row in first['report']['rows'])


@pytest.mark.parametrize('key, value, allowed', [
    ('energy_j', -1.0, 'a finite number, 0 or more, or null'),
    ('output_tokens_per_j', float('nan'), 'a finite number, 0 or more, or null'),
    ('avg_power_w', '300', 'a finite number, 0 or more, or null'),
    ('energy_samples', 2.5, 'a count (an integer, 0 or more) or null'),
    ('energy_method', 1, 'a string or null'),
    ('gpu_throttled', 'sw_power_cap', 'a list of clock event reason names (strings), or null'),
    ('gpu_throttled', [1], 'a list of clock event reason names (strings), or null'),
])
def test_result_energy_keys_are_checked(key, value, allowed):
    reason = check_result({'complete': True, key: value})
    assert reason.startswith(key + ' is ') and reason.endswith('allowed: ' + allowed)
    assert check_result({'complete': True, key: None}) is None


def test_result_energy_keys_read_when_valid():
    doc = {'complete': True, 'energy_j': 0, 'avg_power_w': 512.5, 'idle_power_w': 70.0, 'output_tokens_per_j': 3.2,
           'j_per_output_token': 0.31, 'energy_method': 'samples', 'energy_backend': 'nvidia-smi', 'energy_samples': 41,
           'power_source': 'instant', 'gpu_throttled': [], 'telemetry_file': 'telemetry-random-t0-c1-r1.csv',
           'energy_note': None}
    assert check_result(doc) is None
