# SPDX-License-Identifier: GPL-3.0-or-later
"""report_plots: a figure is drawn again only when its input or its file changed (the plot cache)."""
import json
import sys
from pathlib import Path

from ansible_collections.specdec.bench.plugins.module_utils._common import results_file
from ansible_collections.specdec.bench.plugins.plugin_utils.report import figures as report_figures
from ansible_collections.specdec.bench.plugins.plugin_utils.report import plots as report_plots
from ansible_collections.specdec.bench.plugins.plugin_utils.report import generate

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synthetic_results as synth  # noqa: E402  pylint: disable=wrong-import-position


def test_figures_are_drawn_again_only_when_their_input_or_file_changed(tmp_path, monkeypatch):
    root = tmp_path / 'results'
    synth.make_campaign(root, 'ct200', 'c', synth.ct200_matrix(tps=(1,), budgets=(16, 64)), concurrency=(1, 4))
    synth.make_campaign(root, 'a100box', 'c', synth.ct200_matrix(tps=(2,), budgets=(16, 64)), concurrency=(1, 4), seed=5)
    out = tmp_path / 'out'
    first = generate(str(root), 'c', str(out), synth.LAYOUT)
    pngs = sorted(name for name in first['files'] if name.endswith('.png'))
    assert len(pngs) == 8 and set(pngs) <= set(first['changed'])  # per host 3 figures of its run, the why figure of its sweep
    drawn = []
    real_draw = report_plots._draw  # pylint: disable=protected-access
    monkeypatch.setattr(report_plots, '_draw', lambda spec: drawn.append(spec['title']) or real_draw(spec))
    again = generate(str(root), 'c', str(out), synth.LAYOUT)
    assert drawn == [] and again['changed'] == [] and sorted(n for n in again['files'] if n.endswith('.png')) == pngs
    (out / 'throughput_vs_concurrency-ct200.png').unlink()
    result = root / 'a100box' / 'c' / 'tp2-ddtree-b64-k4' / results_file('result', dataset='random', temperature=0.0, concurrency=4)
    row = json.loads(result.read_text())
    row['output_throughput'] *= 2
    result.write_text(json.dumps(row))
    third = generate(str(root), 'c', str(out), synth.LAYOUT)
    assert sorted(name for name in third['changed'] if name.endswith('.png')) == [
        'speedup_vs_budget-a100box.png', 'throughput_vs_concurrency-a100box.png', 'throughput_vs_concurrency-ct200.png']
    assert len(drawn) == 3  # the acceptance length plot of a100box (and its why figure, at c=1) did not change: not drawn


def test_a_broken_plot_cache_only_means_drawing_again(tmp_path):
    assert report_plots.read_plot_cache(str(tmp_path)) == {}
    (tmp_path / report_plots.PLOT_CACHE).write_text('{"a.png": 1}')
    assert report_plots.read_plot_cache(str(tmp_path)) == {}
    cache = {'a.png': {'input': 'x', 'sha256': 'y'}}
    (tmp_path / report_plots.PLOT_CACHE).write_bytes(report_plots.render_plot_cache(cache))
    assert report_plots.read_plot_cache(str(tmp_path)) == cache


def test_papers_figures_are_drawn_per_host_and_tp_and_only_when_their_input_changed(tmp_path, monkeypatch):
    from test_report_tables import make_report  # pylint: disable=import-outside-toplevel
    report = make_report()
    papers = report_figures.paper_figures(report)
    assert [(name, key) for name, key, _spec in papers] == [
        ('per_dataset-ct200-tp1.png', ('ct200', 'TP1', None, 'per_dataset')),
        ('speedup_vs_budget_per_dataset-ct200-tp1.png', ('ct200', 'TP1', None, 'speedup_vs_budget_per_dataset'))]
    bars = papers[0][2]['panels'][0]['bars']
    assert [label for label, _values, _choices in bars] == ['DFlash', 'DDTree']
    assert bars[1][1][0] == (2.31, 2.26, 2.36) and bars[1][2] == ['B=64', 'B=128']  # the table's choice, its interval
    lines = papers[1][2]['lines']
    assert [legend for legend, _points in lines] == ['gsm8k, T=0 (c=1, top-k 4)', 'spec-bench_v1 <b>|&$%#, T=0 (c=1, top-k 4)']
    assert lines[0][1] == [(32, 2.10, 2.02, 2.18), (64, 2.31, 2.26, 2.36), (128, 2.20, 2.12, 2.28)]
    files = {}

    def write(name, data):
        files[name] = data
        (tmp_path / name).write_bytes(data)
    made, cache = report_plots.write_plots(report, str(tmp_path), write, keep=lambda name: None)
    assert made[('ct200', 'TP1', None, 'per_dataset')] == 'per_dataset-ct200-tp1.png'
    for name in ('per_dataset-ct200-tp1.png', 'speedup_vs_budget_per_dataset-ct200-tp1.png'):
        assert files[name][:8] == b'\x89PNG\r\n\x1a\n' and len(files[name]) > 10000
    drawn = []
    real_draw = report_plots._draw  # pylint: disable=protected-access
    monkeypatch.setattr(report_plots, '_draw', lambda spec: drawn.append(spec['kind']) or real_draw(spec))
    _made, cache = report_plots.write_plots(report, str(tmp_path), write, keep=lambda name: None, cache=cache)
    assert drawn == []
    row = next(row for row in report['rows'] if row['stage'] == 'tp1-ddtree-b32-k4' and row['concurrency'] == 1
               and row['dataset'] == 'gsm8k')
    row['speedup_ci_high'] = 2.25  # the interval of a budget that is not the best: only the budget figure changes
    report_plots.write_plots(report, str(tmp_path), write, keep=lambda name: None, cache=cache)
    assert drawn == ['budget_per_dataset']


def test_papers_figures_without_repeats_have_no_whiskers():
    from test_report_tables import make_report  # pylint: disable=import-outside-toplevel
    report = make_report()
    for row in report['rows']:
        row.update(speedup_ci_low=None, speedup_ci_high=None, accept_length_ci_low=None, accept_length_ci_high=None)
    per_dataset, budget = [spec for _name, _key, spec in report_figures.paper_figures(report)]
    assert report_plots._whiskers(list(per_dataset['panels'][0]['bars'][1][1])) is None  # pylint: disable=protected-access
    assert report_plots._whiskers([(s, lo, hi) for _b, s, lo, hi in budget['lines'][0][1]]) is None  # pylint: disable=protected-access
    assert report_plots._draw(per_dataset)[:4] == b'\x89PNG'  # pylint: disable=protected-access
