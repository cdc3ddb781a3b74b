# SPDX-License-Identifier: GPL-3.0-or-later
"""The report of a checkpoint sweep: a synthetic one (AR once, DFlash n=16 at the checkpoints of steps 100..500 whose
acceptance rises then flattens; gsm8k and mt-bench; 3 repeats; two temperatures and concurrencies) on disk, as the
plan lays it out (params.step, draft_checkpoint), and what the report makes of it: the step and checkpoint columns,
the Checkpoints section with the best checkpoint (recomputed here from the result files, not with the report's code),
evaluation.json, the figures, report.tex; and that a campaign without steps gets none of it."""
import csv
import json
import re
import sys
from pathlib import Path
from unittest import mock

import pytest
from ansible.playbook.task import Task

from ansible_collections.specdec.bench.plugins.action import report as report_action
from ansible_collections.specdec.bench.plugins.plugin_utils.report import checkpoints as report_checkpoints
from ansible_collections.specdec.bench.plugins.plugin_utils.report import figures as report_figures
from ansible_collections.specdec.bench.plugins.plugin_utils.report import generate
from ansible_collections.specdec.bench.plugins.plugin_utils.report.schema import check_plan

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synthetic_results as synth  # noqa: E402  pylint: disable=wrong-import-position
from testhelpers import latex_structure  # noqa: E402  pylint: disable=wrong-import-position,import-error
from report_helpers import compile_tex  # noqa: E402  pylint: disable=wrong-import-position

STEPS = (100, 200, 300, 400, 500)
# How much of the drafter's full acceptance (tau - 1) each checkpoint reaches: rising, then flat.
QUALITY = {100: 0.3, 200: 0.6, 300: 0.85, 400: 1.0, 500: 1.0}
DATASETS = ['gsm8k', 'mt-bench']
CONCURRENCY = (1, 4)
TEMPERATURES = (0.7, 0.0)
REPEATS = 3
PROMPTS = 9
RUN = 'dflash-demo'
MATRIX = [(1, 'autoregressive', {})] + [(1, 'dflash', {'num_draft_tokens': 16, 'step': step}) for step in STEPS]
ORIGINAL_TAU = synth.tau_and_cost


def checkpoint_tau_and_cost(method, params):
    """synth's model with a checkpoint's quality: its acceptance above 1 scaled by QUALITY[step]."""
    params = dict(params)
    step = params.pop('step', None)
    tau, cost = ORIGINAL_TAU(method, params)
    if step is not None and tau is not None:
        tau = 1.0 + (tau - 1.0) * QUALITY[step]
    return tau, cost


def checkpoint_of(step):
    """The plan's draft_checkpoint of a stage of the sweep (the sweep's contract)."""
    name = 'checkpoint-%d' % step
    return {'name': name, 'step': step, 'run': RUN, 'source_host': 'trainbox',
            'source_path': '/root/train_runs/%s/checkpoints/%s' % (RUN, name), 'path': '/root/checkpoints/%s/%s' % (RUN, name),
            'bytes': 263168, 'present': True}


def make_sweep(root, campaign, seed=5, faults=None):
    """The sweep's collected results: synth's campaign with the step in the stage ids (-s<step>) and params, and
    campaign.json's stages given their draft_checkpoint and draft_path as the plan writes them (server_info.json's
    draft too)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(synth.SHORT, 'step', 's')
        patch.setattr(synth, 'tau_and_cost', checkpoint_tau_and_cost)
        synth.make_campaign(root, 'ct200', campaign, MATRIX, concurrency=CONCURRENCY, num_prompts=PROMPTS, datasets=DATASETS,
                            temperatures=TEMPERATURES, repeats=REPEATS, seed=seed, faults=faults)
    path = Path(root) / 'ct200' / campaign / synth.LAYOUT['campaign']
    plan = json.loads(path.read_text())
    for stage in plan['stages']:
        stage['draft_checkpoint'] = None
        if 'step' in stage['params']:
            stage['draft_checkpoint'] = checkpoint_of(stage['params']['step'])
            stage['draft_path'] = stage['draft_checkpoint']['path']
            info_path = path.parent / stage['id'] / synth.LAYOUT['server_info']  # the server was started with it
            if info_path.is_file():
                synth.write_json(info_path, dict(json.loads(info_path.read_text()), speculative_draft_model_path=stage['draft_path']))
    assert check_plan(plan) is None
    synth.write_json(path, plan)


@pytest.fixture(name='sweep', scope='module')
def sweep_fixture(tmp_path_factory):
    root = tmp_path_factory.mktemp('checkpoints') / 'results'
    make_sweep(root, 'sweep')
    out = root.parent / 'out'
    made = generate(str(root), 'sweep', str(out))
    return {'root': root, 'out': out, 'made': made, 'json': json.loads((out / 'results.json').read_text()),
            'evaluation': json.loads((out / 'evaluation.json').read_text())}


def result_files(root, campaign, stage, dataset, temperature, concurrency):
    folder = Path(root) / 'ct200' / campaign / stage
    names = [synth.REPEAT_LAYOUT['result'].format(dataset=dataset, temperature=synth.temperature_tag(temperature),
                                                  concurrency=concurrency, repeat=repeat) for repeat in range(1, REPEATS + 1)]
    return [json.loads((folder / name).read_text()) for name in names]


def mean(values):
    return sum(values) / len(values)


def expected(root, campaign='sweep'):
    """{step: (overall speedup, {dataset: (speedup, tau)})} at temperature 0 and concurrency 1, from the result files:
    a dataset's speedup is the mean throughput over AR's, the overall the prompt-weighted mean over the datasets."""
    out = {}
    for step in STEPS:
        per_set = {}
        for dataset in DATASETS:
            mine = result_files(root, campaign, 'tp1-dflash-n16-s%d' % step, dataset, 0.0, 1)
            base = result_files(root, campaign, 'tp1-autoregressive', dataset, 0.0, 1)
            per_set[dataset] = (mean([r['output_throughput'] for r in mine]) / mean([r['output_throughput'] for r in base]),
                                mean([r['accept_length'] for r in mine]))
        out[step] = (sum(PROMPTS * per_set[d][0] for d in DATASETS) / (PROMPTS * len(DATASETS)), per_set)
    return out


def csv_rows(path):
    with open(path, newline='', encoding='utf-8') as handle:
        return list(csv.DictReader(handle))


def test_rows_carry_the_step_and_the_checkpoint(sweep):
    rows = csv_rows(sweep['out'] / 'results.csv')
    assert len(rows) == (1 + len(STEPS)) * len(DATASETS) * len(TEMPERATURES) * len(CONCURRENCY)
    for row in rows:
        if row['method'] == 'autoregressive':
            assert (row['step'], row['checkpoint']) == ('', '')
        else:
            step = int(re.match(r'^tp1-dflash-n16-s([0-9]+)$', row['stage']).group(1))
            assert (row['step'], row['checkpoint']) == (str(step), 'checkpoint-%d' % step)
            assert row['draft'] == '/root/checkpoints/%s/checkpoint-%d' % (RUN, step)
    # results.json rows the same, the steps in numeric order (s100 before s1000 would sort wrong as text)
    steps = [row['step'] for row in sweep['json']['rows'] if row['method'] == 'dflash' and row['dataset'] == 'gsm8k'
             and row['temperature'] == 0.0 and row['concurrency'] == 1]
    assert steps == list(STEPS)


def test_the_data_rises_then_flattens(sweep):
    """The fixture's premise: tau of the checkpoints rises with the step and is flat at the last two."""
    taus = [expected(sweep['root'])[step][1]['gsm8k'][1] for step in STEPS]
    assert taus[0] < taus[1] < taus[2] < taus[3]
    assert abs(taus[4] - taus[3]) < 0.05 * taus[3]


def test_the_best_checkpoint_is_the_one_the_data_makes_best(sweep):
    data = expected(sweep['root'])
    best = max(STEPS, key=lambda step: data[step][0])
    assert best in (400, 500)  # the flat end of the curve wins; which of the two is the repeats' noise
    md = (sweep['out'] / 'report.md').read_text()
    assert '## Checkpoints' in md and '### ct200 TP1: checkpoints (T=0, c=1)' in md
    sentence = re.search(r"^Best checkpoint of DFlash n=16: (\S+) \(step ([0-9]+)\), overall speedup ([0-9.]+)× "
                         r"\[([0-9.]+), ([0-9.]+)\], τ ([0-9.]+), weighted by prompts as the overall row of the papers' table\.$",
                         md, re.M)
    assert sentence, md
    assert sentence.group(1, 2) == ('checkpoint-%d' % best, str(best))
    assert float(sentence.group(3)) == pytest.approx(data[best][0], abs=0.006)
    low, high = float(sentence.group(4)), float(sentence.group(5))
    assert low < data[best][0] < high
    assert '**checkpoint-%d**' % best in md  # the best row of the table in bold
    assert sweep['made']['lines'][-1].startswith('ct200 TP1 DFlash n=16: best checkpoint checkpoint-%d (step %d)' % (best, best))


def test_the_table_has_a_row_per_step_with_each_dataset(sweep):
    md = (sweep['out'] / 'report.md').read_text().splitlines()
    head = md.index('| setting | step | checkpoint | gsm8k speedup | gsm8k τ | mt-bench speedup | mt-bench τ | overall speedup | overall τ |')
    body = md[head + 2:head + 2 + len(STEPS)]
    for line, step in zip(body, STEPS):
        cells = [cell.strip() for cell in line.strip('|').split('|')]
        assert cells[0] == 'DFlash n=16' and cells[1] == str(step) and cells[2].strip('*') == 'checkpoint-%d' % step
        assert all(' ± ' in cell for cell in cells[3:]), line  # every value with its interval (3 repeats)
    assert md[head + 2 + len(STEPS)] == ''


def test_evaluation_json(sweep):
    doc, data = sweep['evaluation'], expected(sweep['root'])
    best = max(STEPS, key=lambda step: data[step][0])
    assert doc['campaign'] == 'sweep' and doc['run'] == RUN and doc['report'] == 'report.md'
    assert re.match(r'^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$', doc['generated'])
    assert [(c['step'], c['name'], c['host'], c['tp'], c['method'], c['setting']) for c in doc['checkpoints']] == [
        (step, 'checkpoint-%d' % step, 'ct200', 1, 'dflash', 'DFlash n=16') for step in STEPS]
    rows = dict(((r['stage'], r['dataset']), r) for r in sweep['json']['rows'] if r['temperature'] == 0.0 and r['concurrency'] == 1)
    for item in doc['checkpoints']:
        assert sorted(item['datasets']) == sorted(DATASETS)
        for dataset, values in item['datasets'].items():
            row = rows[('tp1-dflash-n16-s%d' % item['step'], dataset)]
            assert values['speedup'] == pytest.approx(data[item['step']][1][dataset][0], rel=1e-9)
            assert values['tau'] == pytest.approx(data[item['step']][1][dataset][1], rel=1e-9)
            assert (values['tau_ci_low'], values['tau_ci_high']) == (row['accept_length_ci_low'], row['accept_length_ci_high'])
            assert (values['speedup_ci_low'], values['speedup_ci_high']) == (row['speedup_ci_low'], row['speedup_ci_high'])
            assert values['tau_ci_low'] < values['tau'] < values['tau_ci_high']
            assert (values['concurrency'], values['temperature']) == (1, 0.0)
        assert item['overall_speedup'] == pytest.approx(data[item['step']][0], rel=1e-9)
        ends = [mean([item['datasets'][d][end] for d in DATASETS]) for end in ('speedup_ci_low', 'speedup_ci_high')]
        assert [item['overall_speedup_ci_low'], item['overall_speedup_ci_high']] == pytest.approx(ends, rel=1e-12)
    assert doc['best'] == {
        'host': 'ct200', 'tp': 1, 'method': 'dflash', 'setting': 'DFlash n=16', 'step': best, 'name': 'checkpoint-%d' % best,
        'speedup': pytest.approx(data[best][0], rel=1e-9), 'speedup_ci_low': doc['checkpoints'][STEPS.index(best)]['overall_speedup_ci_low'],
        'speedup_ci_high': doc['checkpoints'][STEPS.index(best)]['overall_speedup_ci_high'],
        'tau': pytest.approx(mean([data[best][1][d][1] for d in DATASETS]), rel=1e-9), 'dataset': 'overall'}
    assert sweep['made']['evaluation'] == str(sweep['out'] / 'evaluation.json')
    assert sweep['made']['files']['evaluation.json'] == str(sweep['out'] / 'evaluation.json')


def test_the_overall_is_the_papers_overall_row_function(sweep):
    """The overall speedup is tables.weighted_mean (the papers' overall row), not a second implementation."""
    with mock.patch.object(report_checkpoints, 'weighted_mean', return_value=7.0) as weighted:
        again = report_checkpoints.checkpoint_report(sweep['made']['report'], [])
    assert weighted.called and again['best']['checkpoint']['overall']['speedup'] == 7.0


def test_a_rerun_changes_nothing_and_keeps_the_generated_time(sweep, tmp_path):
    out = tmp_path / 'out'
    generate(str(sweep['root']), 'sweep', str(out), plots=False)
    doc = json.loads((out / 'evaluation.json').read_text())
    doc['generated'] = '2026-01-01T00:00:00Z'
    (out / 'evaluation.json').write_text(json.dumps(doc, indent=2) + '\n')
    again = generate(str(sweep['root']), 'sweep', str(out), plots=False)
    assert again['changed'] == [] and json.loads((out / 'evaluation.json').read_text())['generated'] == '2026-01-01T00:00:00Z'


def test_the_figures_per_dataset_exist_and_change_with_the_data(tmp_path):
    root = tmp_path / 'results'
    make_sweep(root, 'plots', seed=9)
    out = tmp_path / 'out'
    made = generate(str(root), 'plots', str(out))
    if made['plots_skipped']:
        pytest.skip(made['plots_skipped'])
    names = ['checkpoints-ct200-tp1-%s.png' % dataset for dataset in DATASETS]
    before = {}
    for name in names:
        assert (out / name).read_bytes()[:8] == b'\x89PNG\r\n\x1a\n' and name in made['files']
        before[name] = (out / name).read_bytes()
        assert '](%s)' % name in (out / 'report.md').read_text()
    spec = next(spec for name, _key, spec in report_figures.figure_specs(made['report']) if name == names[0])
    assert [panel['metric'] for panel in spec['panels']] == ['accept_length', 'speedup']
    points = spec['panels'][0]['lines'][0][1]
    assert spec['panels'][0]['lines'][0][0] == 'DFlash n=16' and [point[0] for point in points] == list(STEPS)
    assert all(low < value < high for _step, value, low, high in points)  # whiskers: the 95% intervals
    # one repeat of checkpoint-300 on gsm8k accepts more: its figure is drawn again, mt-bench's is kept as it was
    path = root / 'ct200' / 'plots' / 'tp1-dflash-n16-s300' / synth.REPEAT_LAYOUT['result'].format(
        dataset='gsm8k', temperature='0', concurrency=1, repeat=2)
    result = json.loads(path.read_text())
    result['accept_length'] *= 1.2
    synth.write_json(path, result)
    again = generate(str(root), 'plots', str(out))
    assert names[0] in again['changed'] and names[1] not in again['changed']
    assert (out / names[0]).read_bytes() != before[names[0]] and (out / names[1]).read_bytes() == before[names[1]]


def test_latex_has_the_checkpoint_table_and_compiles(sweep, tmp_path):
    tex = (sweep['out'] / 'report.tex').read_text()
    latex_structure(tex, booktabs=False)
    assert r'\label{tab:sweep-ct200-tp1-checkpoints}' in tex and r'\textbf{checkpoint-' in tex
    assert 'Best checkpoint of DFlash n=16: checkpoint-' in tex
    compile_tex(sweep['out'] / 'report.tex', tmp_path, timeout=120)


def test_the_papers_table_names_the_step_it_chose(sweep):
    md = (sweep['out'] / 'report.md').read_text()
    assert '| DFlash (n=16) step |' in md


def test_a_campaign_without_steps_gets_none_of_it(tmp_path):
    root = tmp_path / 'results'
    synth.make_campaign(root, 'ct200', 'plain', [(1, 'autoregressive', {}), (1, 'dflash', {'num_draft_tokens': 16})],
                        datasets=DATASETS, repeats=2)
    out = tmp_path / 'out'
    out.mkdir()
    (out / 'evaluation.json').write_text('{"campaign": "plain"}\n')  # from an earlier report of a sweep
    made = generate(str(root), 'plain', str(out), plots=False)
    assert not (out / 'evaluation.json').exists() and 'evaluation.json' in made['changed'] and made['evaluation'] is None
    assert 'evaluation.json' not in made['files'] and 'checkpoints' not in json.loads((out / 'results.json').read_text())
    assert 'Checkpoint' not in (out / 'report.md').read_text() and 'checkpoints' not in (out / 'report.tex').read_text()
    assert all(row['step'] == '' and row['checkpoint'] == '' for row in csv_rows(out / 'results.csv'))
    assert generate(str(root), 'plain', str(out), plots=False)['changed'] == []


@pytest.mark.parametrize(('checkpoint', 'message'), [
    ('checkpoint-100', r'stages\[1\]\.draft_checkpoint is .checkpoint-100.; allowed: an object'),
    ({'name': 5}, r'stages\[1\]\.draft_checkpoint\.name is 5; allowed: a string or null'),
    ({'name': 'c', 'step': -1}, r'stages\[1\]\.draft_checkpoint\.step is -1; allowed: a count'),
    ({'name': 'c', 'present': 'yes'}, r"stages\[1\]\.draft_checkpoint\.present is 'yes'; allowed: true or false"),
])
def test_a_bad_draft_checkpoint_is_named(checkpoint, message):
    stages = [{'id': 'tp1-autoregressive', 'draft_checkpoint': None},
              {'id': 'tp1-dflash-n16-s100', 'params': {'step': 100}, 'draft_checkpoint': checkpoint}]
    assert re.match(message, check_plan({'stages': stages}))
    assert check_plan({'stages': [dict(stages[1], draft_checkpoint=dict(checkpoint_of(100), extra={'kept': True}))]}) is None


def test_the_action_returns_the_evaluation_and_the_best_checkpoint(sweep, tmp_path):
    task = Task()
    task.args = {'campaign': 'sweep', 'results_dir': str(sweep['root']), 'output_dir': str(tmp_path / 'out'), 'plots': False}
    action = report_action.ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=None, shared_loader_obj=None)
    result = action.run(task_vars={'inventory_hostname': 'localhost'})
    assert result['evaluation'] == str(tmp_path / 'out' / 'evaluation.json') == result['files']['evaluation.json']
    assert 'evaluation.json' in result['written']
    assert result['best_checkpoint'] == sweep['evaluation']['best']


def test_without_the_baseline_no_checkpoint_is_best_and_tau_is_still_shown(tmp_path):
    root = tmp_path / 'results'
    make_sweep(root, 'nobase', faults={'tp1-autoregressive': ('failed', 'out of memory'),
                                       'tp1-dflash-n16-s300': ('failed', 'the server did not start')})
    made = generate(str(root), 'nobase', str(tmp_path / 'out'), plots=False)
    doc = json.loads((tmp_path / 'out' / 'evaluation.json').read_text())
    assert doc['best'] is None and doc['run'] == RUN and [item['step'] for item in doc['checkpoints']] == list(STEPS)
    assert all(item['overall_speedup'] is None and item['overall_tau'] is not None for item in doc['checkpoints'] if item['step'] != 300)
    assert doc['checkpoints'][2]['datasets'] == {} and doc['checkpoints'][2]['overall_tau'] is None  # the failed one
    md = (tmp_path / 'out' / 'report.md').read_text()
    assert 'Best checkpoint of DFlash n=16: none (no overall speedup: the baseline or a dataset was not measured).' in md
    assert re.search(r'^\| DFlash n=16 \| 300 \| checkpoint-300 \| – \| – \| – \| – \| – \| – \|$', md, re.M)
    assert not any('best checkpoint' in line for line in made['lines'])
