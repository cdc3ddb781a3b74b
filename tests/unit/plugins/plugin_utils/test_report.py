# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, from collected results laid out as bench_stage writes them (synthetic_results.py)."""
import csv
import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy
import pytest

from ansible_collections.specdec.bench.plugins.module_utils._common import results_file
from ansible_collections.specdec.bench.plugins.plugin_utils.report import figures as report_figures
from ansible_collections.specdec.bench.plugins.plugin_utils.report import ReportError, generate

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synthetic_results as synth  # noqa: E402  pylint: disable=wrong-import-position
from testhelpers import latex_structure  # noqa: E402  pylint: disable=wrong-import-position,import-error

PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'
FAULTS = {
    'tp4-autoregressive': ('failed', 'server failed to start: CUDA out of memory'),
    'tp1-ddtree-b256-k4': ('infeasible', 'KV headroom 1.2 GiB below min_kv_headroom_gib 4'),
    'tp4-ddtree-b128-k4': ('never',),
    'tp1-ddtree-b16-k4': ('incomplete', 4),
}


@pytest.fixture(name='campaign', scope='module')
def campaign_fixture(tmp_path_factory):
    """ct200: AR, DFlash and a DDTree sweep at TP1 and TP4, with faults; a100box: nothing feasible; a before-campaign."""
    root = tmp_path_factory.mktemp('collected') / 'results'
    synth.make_campaign(root, 'ct200', 'qwen', synth.ct200_matrix(), concurrency=(1, 4, 16), faults=FAULTS)
    synth.make_campaign(root, 'ct200', 'qwen-before', synth.ct200_matrix(tps=(1,), budgets=(16, 32, 64)), concurrency=(1, 4, 16), seed=7)
    a100 = synth.gpus_doc(6, 'NVIDIA A100-PCIE-40GB', 40960, '580.95.05', '13.2')
    matrix = [(1, 'autoregressive', {}), (1, 'ddtree', {'budget': 32, 'topk': 4})]
    synth.make_campaign(root, 'a100box', 'qwen', matrix, gpus=a100, faults={
        'tp1-autoregressive': ('infeasible', 'the smallest TP that fits is 2'),
        'tp1-ddtree-b32-k4': ('infeasible', 'the smallest TP that fits is 2')})
    out = root.parent / 'reports' / 'qwen'
    made = generate(str(root), 'qwen', str(out), synth.LAYOUT, compare_to='qwen-before')
    return {'root': root, 'out': out, 'made': made}


def csv_rows(path):
    with open(path, newline='', encoding='utf-8') as handle:
        return list(csv.DictReader(handle))


def rows_by_key(campaign):
    return {(r['host'], r['stage'], int(r['concurrency'])): r for r in csv_rows(campaign['out'] / 'results.csv')}


def number(text):
    return None if text == '' else float(text)


def recompute(raw_path):
    """The run's numbers from its raw per-request records, by numpy, independently of the harness code."""
    records = [json.loads(line) for line in raw_path.read_text().splitlines()]
    measured = [r for r in records if not r['warmup']]
    done = [r for r in measured if r['success']]
    ttft = numpy.array([r['ttft_s'] for r in done]) * 1000
    itl = numpy.array([gap for r in done for gap in r['itl_s']]) * 1000
    verify = [r['spec_verify_ct'] for r in done if r['spec_verify_ct']]
    return {
        'output_throughput': sum(r['output_tokens'] for r in done) / max(r['end_s'] for r in measured),
        'median_ttft_ms': numpy.percentile(ttft, 50), 'p99_ttft_ms': numpy.percentile(ttft, 99),
        'median_itl_ms': numpy.percentile(itl, 50), 'p99_itl_ms': numpy.percentile(itl, 99),
        'accept_length': sum(r['output_tokens'] for r in done) / sum(verify) if verify else None,
        'completed': len(done),
    }


def test_every_measured_number_is_recomputed_from_the_raw_records(campaign):
    rows = rows_by_key(campaign)
    checked = 0
    for (host, stage, concurrency), row in rows.items():
        if row['status'] != 'ok':
            continue
        raw = results_file('raw', dataset='random', temperature=0.0, concurrency=concurrency)
        expected = recompute(campaign['root'] / host / 'qwen' / stage / raw)
        for key, value in expected.items():
            if value is None:
                assert row[key] == '', (stage, key)
            else:
                assert number(row[key]) == pytest.approx(value, rel=1e-9), (stage, concurrency, key)
        checked += 1
    assert checked == 2 * 3 * 7 - 3 - 3 - 3 - 1  # TP1+TP4 x 3 concurrencies, less failed, infeasible, never-run, incomplete


def test_speedup_is_over_the_autoregressive_stage_at_the_same_tp_and_concurrency(campaign):
    rows = rows_by_key(campaign)
    for (host, stage, concurrency), row in rows.items():
        if host != 'ct200' or not stage.startswith('tp1-') or row['status'] != 'ok':
            continue
        base = rows[('ct200', 'tp1-autoregressive', concurrency)]
        assert number(row['speedup']) == pytest.approx(number(row['output_throughput']) / number(base['output_throughput']))
        assert row['baseline_stage'] == 'tp1-autoregressive'
    # the modelled DDTree: tau rises with the budget while the speedup peaks in between, as the paper reports
    speedups = [number(rows[('ct200', 'tp1-ddtree-b%d-k4' % b, 1)]['speedup']) for b in (16, 32, 64, 128)]
    taus = [number(rows[('ct200', 'tp1-ddtree-b%d-k4' % b, 1)]['accept_length']) for b in (16, 32, 64, 128)]
    assert taus == sorted(taus) and max(speedups) not in (speedups[0], speedups[-1])


def test_missing_baseline_leaves_speedup_empty_never_guessed(campaign):
    rows = rows_by_key(campaign)
    tp4 = [row for (host, stage, _c), row in rows.items() if host == 'ct200' and stage.startswith('tp4-')]
    assert any(row['status'] == 'ok' for row in tp4)
    assert all(row['speedup'] == '' and row['baseline_stage'] == '' for row in tp4)
    data = json.loads((campaign['out'] / 'results.json').read_text())
    assert all(row['speedup'] is None for row in data['rows'] if row['host'] == 'ct200' and row['tp'] == 4)
    md = (campaign['out'] / 'report.md').read_text()
    assert 'No autoregressive baseline measured at c=1, 4, 16 (`tp4-autoregressive` failed: server failed to start' in md


def test_an_incomplete_run_has_no_numbers_that_count(campaign):
    rows = rows_by_key(campaign)
    row = rows[('ct200', 'tp1-ddtree-b16-k4', 4)]
    assert row['status'] == 'incomplete' and row['speedup'] == '' and row['completed'] == '7'
    assert 'incomplete run: 7 of 8 prompts completed' in row['reason']
    assert rows[('ct200', 'tp1-ddtree-b16-k4', 1)]['status'] == 'ok'


def test_failed_infeasible_and_never_run_stages_are_listed_with_their_reason(campaign):
    rows = rows_by_key(campaign)
    assert rows[('ct200', 'tp4-autoregressive', 16)]['status'] == 'failed'
    assert rows[('ct200', 'tp1-ddtree-b256-k4', 1)]['status'] == 'infeasible'
    assert rows[('ct200', 'tp4-ddtree-b128-k4', 1)]['status'] == 'not run'
    md = (campaign['out'] / 'report.md').read_text()
    assert '| `tp4-autoregressive` | AR | 4 | failed | server failed to start: CUDA out of memory |' in md
    assert '| `tp1-ddtree-b256-k4` | DDTree B=256 k=4 | 1 | infeasible | KV headroom 1.2 GiB below min_kv_headroom_gib 4 |' in md
    assert '| `tp4-ddtree-b128-k4` | DDTree B=128 k=4 | 4 | not run | no status.json: the stage never ran |' in md
    not_measured = campaign['made']['report']['not_measured']
    assert {(item['host'], item['stage'], item['status']) for item in not_measured} >= {
        ('ct200', 'tp4-autoregressive', 'failed'), ('a100box', 'tp1-autoregressive', 'infeasible')}


def test_a_host_with_nothing_feasible_is_reported_not_crashed_on(campaign):
    rows = rows_by_key(campaign)
    a100 = [row for (host, _s, _c), row in rows.items() if host == 'a100box']
    assert len(a100) == 4 and all(row['status'] == 'infeasible' and row['reason'] == 'the smallest TP that fits is 2' for row in a100)
    md = (campaign['out'] / 'report.md').read_text()
    section = md.split('## Host `a100box`')[1].split('## Host')[0]
    assert 'No stage of this campaign was measured on this host' in section
    assert '1× NVIDIA A100' not in section  # no stage recorded GPUs there: none are invented
    assert not list(campaign['out'].glob('*a100box*.png'))


def test_a_listed_host_with_nothing_collected_says_so(tmp_path, campaign):
    made = generate(str(campaign['root']), 'qwen', str(tmp_path), synth.LAYOUT, hosts=['ct200', 'ghost'], plots=False)
    md = (tmp_path / 'report.md').read_text()
    assert 'Nothing was collected for this campaign from this host.' in md.split('## Host `ghost`')[1]
    assert made['plots_skipped'] == 'plots=false' and not list(tmp_path.glob('*.png'))


def test_markdown_has_environment_tables_and_the_best_setting_in_bold(campaign):
    md = (campaign['out'] / 'report.md').read_text()
    ct200 = md.split('## Host `ct200`')[1].split('## Host')[0]
    assert '- GPUs: 8× NVIDIA RTX PRO 6000 Blackwell Server Edition (97887 MiB)' in ct200
    assert '- NVIDIA driver 580.95.05, CUDA 13.0, SGLang 0.5.23' in ct200
    tp1 = ct200.split('### TP1')[1].split('###')[0]
    assert tp1.splitlines()[2] == '| setting | c=1 | c=4 | c=16 |'
    best_row = [line for line in tp1.splitlines() if line.startswith('| DDTree B=64 k=4 |')][0]
    assert best_row.count('**') == 6  # best at every concurrency
    rows = rows_by_key(campaign)
    best = rows[('ct200', 'tp1-ddtree-b64-k4', 1)]
    assert '**%.1f · %.2f× · τ %.2f**' % (number(best['output_throughput']), number(best['speedup']), number(best['accept_length'])) in best_row


def test_csv_has_the_columns_a_paper_needs(campaign):
    rows = csv_rows(campaign['out'] / 'results.csv')
    for column in ('host', 'campaign', 'stage', 'method', 'tp', 'budget', 'topk', 'concurrency', 'status', 'output_throughput',
                   'speedup', 'accept_length', 'median_ttft_ms', 'p99_ttft_ms', 'median_itl_ms', 'p99_itl_ms', 'gpu_name',
                   'driver', 'model'):
        assert column in rows[0]
    assert [row['host'] for row in rows] == sorted(row['host'] for row in rows)
    first = next(row for row in rows if row['host'] == 'ct200')
    assert (first['stage'], first['concurrency']) == ('tp1-autoregressive', '1')
    assert first['gpu_name'] == synth.GPU_NAME and first['gpu_count'] == '1' and first['model'] == '/models/Qwen3.6-27B'


def test_latex_is_booktabs_tables_with_consistent_columns(campaign):
    tex = (campaign['out'] / 'report.tex').read_text()
    latex_structure(tex)
    # ct200 TP1 and TP4 (nothing measured on a100box); the papers' decode speedup at c=1; the why table of each TP
    assert tex.count(r'\begin{table}') == 2 + 1 + 2
    assert r'DDTree B=64 k=4 & \textbf{' in tex and r'\label{tab:qwen-ct200-tp1}' in tex


def test_latex_of_datasets_and_temperatures_keeps_the_structure(tmp_path):
    root = tmp_path / 'results'
    synth.make_campaign(root, 'ct200', 'real', synth.ct200_matrix(tps=(1,), budgets=(16,)), concurrency=(1, 4),
                        datasets=['gsm8k', 'mt-bench'], temperatures=[0, 1], server_bias={'tp1-dflash-n16': 0.9})
    generate(str(root), 'real', str(tmp_path / 'out'), plots=False)
    tex = (tmp_path / 'out' / 'report.tex').read_text()
    latex_structure(tex)
    assert tex.count(r'\begin{table}') == 4 + 1 + 1 + 4 and r'\label{tab:real-ct200-gsm8k-t1-tp1}' in tex  # + the decode speedup's, the why tables


TEX_ENGINES = ('pdflatex', 'lualatex', 'tectonic')


def test_latex_compiles_when_a_tex_engine_is_present(campaign, tmp_path):
    """report.tex compiles with booktabs alone and fits an article's text width, with 3 and with 4 concurrencies."""
    engine = next((name for name in TEX_ENGINES if shutil.which(name)), None)
    if engine is None:
        pytest.skip('no TeX engine on PATH (%s): compiling report.tex is skipped; its structure is checked above' % ', '.join(TEX_ENGINES))
    wide = tmp_path / 'wide'
    synth.make_campaign(wide / 'results', 'ct200', 'wide', synth.ct200_matrix(tps=(8,), budgets=(128, 256)), concurrency=(1, 4, 16, 64))
    generate(str(wide / 'results'), 'wide', str(wide / 'out'), synth.LAYOUT, plots=False)
    real = tmp_path / 'real'  # per dataset and temperature, longer captions and a flagged tau's dagger
    synth.make_campaign(real / 'results', 'ct200', 'real', synth.ct200_matrix(tps=(1,), budgets=(64,)), concurrency=(1, 4, 16, 64),
                        datasets=['gsm8k', 'mt-bench'], temperatures=[0, 0.7], server_bias={'tp1-dflash-n16': 0.9})
    generate(str(real / 'results'), 'real', str(real / 'out'), plots=False)
    repeated = tmp_path / 'repeated'  # 3 repeats: intervals in every cell, and the markers (every row noisy here)
    synth.make_campaign(repeated / 'results', 'ct200', 'rep', synth.ct200_matrix(tps=(8,), budgets=(128, 256)),
                        concurrency=(1, 4, 16, 64), datasets=['spec-bench'], repeats=3, server_bias={'tp8-dflash-n16': 0.9})
    generate(str(repeated / 'results'), 'rep', str(repeated / 'out'), plots=False, noisy_cv=0.0001)
    assert r'{\tiny$\pm$' in (repeated / 'out' / 'report.tex').read_text()
    for name, source in (('three', campaign['out'] / 'report.tex'), ('four', wide / 'out' / 'report.tex'),
                         ('datasets', real / 'out' / 'report.tex'), ('repeats', repeated / 'out' / 'report.tex')):
        folder = tmp_path / name
        folder.mkdir()
        shutil.copy(source, folder / 'report.tex')
        (folder / 'doc.tex').write_text('\\documentclass{article}\n\\usepackage{booktabs}\n\\usepackage[T1]{fontenc}\n'
                                        '\\begin{document}\n\\input{report.tex}\n\\end{document}\n')
        command = [engine, 'doc.tex'] if engine == 'tectonic' else [engine, '-interaction=nonstopmode', '-halt-on-error', 'doc.tex']
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert (folder / 'doc.pdf').stat().st_size > 1000
        if engine != 'tectonic':
            assert 'Overfull \\hbox' not in (folder / 'doc.log').read_text(errors='replace'), name


def png_size(data):
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b'IHDR'
    return struct.unpack('>II', data[16:24])


@pytest.mark.parametrize('name', ['speedup_vs_budget-ct200.png', 'accept_length_vs_budget-ct200.png', 'throughput_vs_concurrency-ct200.png'])
def test_plots_are_non_empty_pngs_of_sane_size(campaign, name):
    data = (campaign['out'] / name).read_bytes()
    width, height = png_size(data)
    assert 600 <= width <= 3000 and 250 <= height <= 2000
    assert len(data) > 10000  # lines, labels and legends, not a blank canvas
    assert '](%s)' % name in (campaign['out'] / 'report.md').read_text()


def test_plot_series_are_the_rows(campaign):
    rows = campaign['made']['report']['rows']
    series = report_figures.plot_series(rows, 'ct200')
    assert series['tps'] == [1, 4]
    tp1 = series['budget'][1][(4, 1)]
    assert [point[0] for point in tp1] == [16, 32, 64, 128]  # 256 was infeasible
    by_stage = {(r['stage'], r['concurrency']): r for r in rows}
    assert tp1[2][1] == by_stage[('tp1-ddtree-b64-k4', 1)]['speedup']
    assert ('DFlash n=16', 1) in series['reference'][1]
    assert [c for c, _v in series['throughput'][1]['AR']] == [1, 4, 16]


def test_a_second_run_on_the_same_results_changes_nothing(campaign):
    again = generate(str(campaign['root']), 'qwen', str(campaign['out']), synth.LAYOUT, compare_to='qwen-before')
    assert again['changed'] == []
    assert sorted(again['files']) == sorted(campaign['made']['files'])


def test_comparison_shows_both_campaigns_with_deltas(campaign):
    rows = {(r['host'], r['stage'], int(r['concurrency'])): r for r in csv_rows(campaign['out'] / 'compare-qwen-before.csv')}
    after, before = rows_by_key(campaign), {}
    for row in json.loads(json.dumps(generate(str(campaign['root']), 'qwen-before', str(campaign['out'].parent / 'before'),
                                              synth.LAYOUT, plots=False)['report']['rows'])):
        before[(row['host'], row['stage'], row['concurrency'])] = row
    key = ('ct200', 'tp1-ddtree-b64-k4', 4)
    row = rows[key]
    old, new = before[key]['output_throughput'], number(after[key]['output_throughput'])
    assert number(row['output_throughput_before']) == pytest.approx(old)
    assert number(row['output_throughput_delta_pct']) == pytest.approx((new - old) / old * 100)
    assert number(row['speedup_delta']) == pytest.approx(number(after[key]['speedup']) - before[key]['speedup'])
    only_after = rows[('ct200', 'tp1-ddtree-b128-k4', 1)]
    assert only_after['status_before'] == 'absent' and only_after['output_throughput_delta_pct'] == ''
    md = (campaign['out'] / 'compare-qwen-before.md').read_text()
    assert md.startswith('# Campaign `qwen` against `qwen-before`')
    assert '| ct200 | 1 | DDTree B=64 k=4 | 4 | %.1f → %.1f | %+.1f%% |' % (old, new, (new - old) / old * 100) in md


def test_without_matplotlib_everything_but_the_plots_is_written(campaign, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, 'matplotlib', None)
    made = generate(str(campaign['root']), 'qwen', str(tmp_path), synth.LAYOUT)
    assert 'matplotlib is not importable' in made['plots_skipped']
    assert sorted(p.name for p in tmp_path.iterdir()) == ['report.md', 'report.tex', 'results-categories.csv', 'results-repeats.csv', 'results-why.csv',
                                                          'results.csv', 'results.json']


@pytest.mark.parametrize(('kwargs', 'message'), [
    ({'campaign': 'Bad Id'}, "campaign is 'Bad Id'; allowed: a campaign id matching"),
    ({'compare_to': '../x'}, "compare_to is '../x'; allowed"),
    ({'campaign': 'nosuch'}, 'holds no host with campaign nosuch'),
    ({'layout': {'campaign': 'campaign.json'}}, 'layout.status is None; allowed: a file name'),
])
def test_bad_input_names_the_field(campaign, tmp_path, kwargs, message):
    args = {'results_root': str(campaign['root']), 'campaign': 'qwen', 'output_dir': str(tmp_path / 'out'), 'layout': synth.LAYOUT}
    args.update(kwargs)
    with pytest.raises(ReportError, match=None) as error:
        generate(**args)
    assert message in str(error.value)
    assert not (tmp_path / 'out').exists()


def test_missing_results_dir_is_an_error(tmp_path):
    with pytest.raises(ReportError, match='is not a folder'):
        generate(str(tmp_path / 'none'), 'qwen', str(tmp_path / 'out'), synth.LAYOUT)


def test_broken_json_names_the_file(tmp_path):
    root = tmp_path / 'results'
    synth.make_campaign(root, 'h', 'c', [(1, 'autoregressive', {})], concurrency=(1,))
    name = results_file('result', dataset='random', temperature=0.0, concurrency=1)
    (root / 'h' / 'c' / 'tp1-autoregressive' / name).write_text('{"complete": tru')
    made = generate(str(root), 'c', str(tmp_path / 'out'), synth.LAYOUT, plots=False)
    assert [item['path'] for item in made['skipped_files']] == ['h/c/tp1-autoregressive/' + name]
    assert made['skipped_files'][0]['reason'].startswith('not valid JSON')
    assert made['report']['rows'][0]['status'] == 'invalid'


def test_without_a_layout_the_report_reads_the_common_results_layout(campaign, tmp_path):
    made = generate(str(campaign['root']), 'qwen', str(tmp_path), plots=False)
    assert (tmp_path / 'results.csv').read_bytes() == (campaign['out'] / 'results.csv').read_bytes()
    assert made['skipped_files'] == []


@pytest.mark.parametrize('campaign_id', ['q' * 65, 'qwen\n', 'Qwen'])
def test_a_campaign_id_is_a_specdec_id(campaign, tmp_path, campaign_id):
    with pytest.raises(ReportError, match='allowed: a campaign id matching .*, at most 64 characters'):
        generate(str(campaign['root']), campaign_id, str(tmp_path / 'out'))
    assert not (tmp_path / 'out').exists()
