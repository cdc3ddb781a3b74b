# SPDX-License-Identifier: GPL-3.0-or-later
"""report_plots: a figure is drawn again only when its input or its file changed (the plot cache)."""
import json
import sys
from pathlib import Path

from ansible_collections.specdec.bench.plugins.module_utils._common import results_file
from ansible_collections.specdec.bench.plugins.plugin_utils import report_plots
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
    assert len(pngs) == 6 and set(pngs) <= set(first['changed'])
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
    assert len(drawn) == 3  # the acceptance length plot of a100box did not change: not drawn


def test_a_broken_plot_cache_only_means_drawing_again(tmp_path):
    assert report_plots.read_plot_cache(str(tmp_path)) == {}
    (tmp_path / report_plots.PLOT_CACHE).write_text('{"a.png": 1}')
    assert report_plots.read_plot_cache(str(tmp_path)) == {}
    cache = {'a.png': {'input': 'x', 'sha256': 'y'}}
    (tmp_path / report_plots.PLOT_CACHE).write_bytes(report_plots.render_plot_cache(cache))
    assert report_plots.read_plot_cache(str(tmp_path)) == cache
