# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The report of a campaign run side by side. A synthetic campaign whose TP1 stages ran as one wave
(each on its own GPU, status.json's ran_beside naming the others), a TP4 stage alone, and the plan's interference stage
tp1-autoregressive-alone (interference_of) that re-ran AR alone at the end: the rows marked § with one footnote per
table, the interference stage kept out of the tables and speedups (a speedup with it equals the one without), the
Interference section's numbers recomputed here from the result files, an original missing or failed, results from
before the keys reporting exactly as before (report.md and report.tex against the output of the code before this
change, golden/), report.tex compiling, and the schema of the new keys."""
import json
import shutil
import sys
from pathlib import Path

import pytest

from ansible_collections.specdec.bench.plugins.plugin_utils.report import generate
from ansible_collections.specdec.bench.plugins.plugin_utils.report.schema import check_plan, check_status

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synthetic_results as synth  # noqa: E402  pylint: disable=wrong-import-position
import test_report_time as timing  # noqa: E402  pylint: disable=wrong-import-position
from report_helpers import compile_tex, csv_rows  # noqa: E402  pylint: disable=wrong-import-position
from test_report_checkpoints import mean  # noqa: E402  pylint: disable=wrong-import-position

AR, DFLASH, DDTREE = timing.AR, timing.DFLASH, timing.DDTREE
TP4 = 'tp4-autoregressive'
ALONE = AR + '-alone'
WAVE = (AR, DFLASH, DDTREE)
MATRIX = timing.MATRIX + [(4, 'autoregressive', {})]
DATASETS = ['gsm8k', 'mt-bench']
GOLDEN = Path(__file__).resolve().parent / 'golden'
FOOTNOTE = '§ measured while 2 other stages ran on other GPUs of the host; see Interference'


def make_sequential(root, campaign='plain'):
    """The campaign of golden/sequential-report.*: run one stage at a time, collected before the waves' keys."""
    synth.make_campaign(root, 'ct200', campaign, MATRIX, concurrency=(1, 4), num_prompts=6, repeats=2, seed=11, datasets=DATASETS,
                        faults={DDTREE: ('failed', 'the server died while loading')})
    timing.write_timings(root, campaign, timing.STAGES)


def edit_json(path, change):
    doc = json.loads(path.read_text())
    change(doc)
    synth.write_json(path, doc)


def make_parallel(root, campaign, faults=None, alone_fault=None, with_alone=True):
    """MATRIX with its TP1 stages as wave 1, each on its own GPU (1, 2, 3), TP4 as wave 2 alone, and (with_alone) AR
    re-run alone as wave 3 at concurrency 1 with 3 repeats (measured separately, another seed, then moved in)."""
    synth.make_campaign(root, 'ct200', campaign, MATRIX, concurrency=(1, 4), num_prompts=6, repeats=2, seed=11, datasets=DATASETS,
                        faults=faults)
    folder = Path(root) / 'ct200' / campaign
    waves = {AR: 1, DFLASH: 1, DDTREE: 1, TP4: 2}
    if with_alone:
        synth.make_campaign(root, 'ct200', 'alone-source', [(1, 'autoregressive', {})], concurrency=(1,), num_prompts=6, repeats=3,
                            seed=23, datasets=DATASETS, faults={AR: alone_fault} if alone_fault else None)
        source = Path(root) / 'ct200' / 'alone-source'
        shutil.move(str(source / AR), str(folder / ALONE))
        plan = json.loads((source / synth.LAYOUT['campaign']).read_text())['stages'][0]
        shutil.rmtree(source)
        for result in folder.joinpath(ALONE).glob('result-*.json'):
            edit_json(result, lambda doc: doc.update(stage=ALONE))
        waves[ALONE] = 3

    def place(doc):
        stages = doc['stages'] + ([dict(plan, id=ALONE, port=31099, unit='specdec-%s-%s.service' % (campaign, ALONE))] if with_alone else [])
        for stage in stages:
            if stage['id'] in WAVE + (ALONE,):
                index = 1 if stage['id'] == ALONE else 1 + WAVE.index(stage['id'])
                stage.update(gpu_indices=[index], gpus=['GPU-%08d' % index])
            stage.update(wave=waves[stage['id']], wave_stages=[sid for sid, wave in waves.items() if wave == waves[stage['id']]],
                         interference_of=AR if stage['id'] == ALONE else None,
                         alone='measures interference: re-runs %s alone' % AR if stage['id'] == ALONE else None)
        doc['stages'] = stages
        assert check_plan(doc) is None
    edit_json(folder / synth.LAYOUT['campaign'], place)
    for sid, wave in waves.items():
        path = folder / sid / synth.LAYOUT['status']
        if path.is_file():
            beside = [other for other in WAVE if other != sid] if sid in WAVE else []
            edit_json(path, lambda doc, sid=sid, wave=wave, beside=beside: doc.update(
                ran_beside=beside, wave=wave, interference_of=AR if sid == ALONE else None))
            assert check_status(json.loads(path.read_text())) is None
    return folder


def report(root, campaign, out=None):
    out = out or Path(root).parent / ('out-%s' % campaign)
    made = generate(str(root), campaign, str(out), plots=False)
    return {'out': out, 'made': made, 'md': (out / 'report.md').read_text(), 'tex': (out / 'report.tex').read_text(),
            'json': json.loads((out / 'results.json').read_text()), 'csv': csv_rows(out / 'results.csv')}


@pytest.fixture(name='par', scope='module')
def par_fixture(tmp_path_factory):
    root = tmp_path_factory.mktemp('interference') / 'results'
    folder = make_parallel(root, 'par')
    return dict(report(root, 'par'), root=root, folder=folder)


def section(md, heading):
    """The lines of report.md from heading to the next heading of its level or above."""
    lines = md.splitlines()
    start = lines.index(heading)
    level = heading.split(' ')[0]
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith('#') and len(lines[i].split(' ')[0]) <= len(level)),
               len(lines))
    return lines[start:end]


def test_rows_carry_how_many_stages_ran_beside_them(par):
    rows = dict(((row['stage'], row['dataset'], int(row['concurrency'])), row) for row in par['csv'])
    for sid in WAVE:
        row = rows[(sid, 'gsm8k', 1)]
        assert (row['beside'], row['wave'], row['interference_of']) == ('2', '1', '')
        assert row['ran_beside'].split(',') == [other for other in WAVE if other != sid]
    assert (rows[(TP4, 'gsm8k', 4)]['beside'], rows[(TP4, 'gsm8k', 4)]['ran_beside'], rows[(TP4, 'gsm8k', 4)]['wave']) == ('0', '', '2')
    json_rows = dict(((row['stage'], row['dataset'], row['concurrency']), row) for row in par['json']['rows'])
    assert json_rows[(AR, 'mt-bench', 4)]['beside'] == 2 and json_rows[(TP4, 'mt-bench', 1)]['beside'] == 0


def test_the_tables_mark_the_settings_run_beside_others_with_one_footnote(par):
    for dataset in DATASETS:
        tp1 = section(par['md'], '### %s, T=0: TP1 (1 GPU(s))' % dataset)
        settings = [line.split(' | ')[0] for line in tp1 if line.startswith('| ') and ' · τ ' in line]
        assert settings == ['| AR §', '| DFlash n=16 §', '| DDTree B=64 k=4 §']
        assert tp1.count(FOOTNOTE) == 1
        tp4 = section(par['md'], '### %s, T=0: TP4 (4 GPU(s))' % dataset)
        assert not any('§' in line for line in tp4)
    best = section(par['md'], '## Best setting per host, dataset, temperature, TP and concurrency')
    marked = [line for line in best if line.startswith('| ct200') and '§' in line]
    assert len(marked) == 4 and all('| TP' not in line and line.split(' | ')[3] == '1' for line in marked)
    assert best.count(FOOTNOTE) == 1
    papers = section(par['md'], '### ct200 TP1: speedup and τ per dataset (c=1)')
    for dataset in DATASETS:  # AR, DFlash and DDTree's speedups are marked, the overall (a mean of them) is not
        assert next(line for line in papers if line.startswith('| %s, T=0 |' % dataset)).count('× §') == 3
    assert '§' not in next(line for line in papers if line.startswith('| **overall**'))
    assert papers.count(FOOTNOTE) == 1
    tex = par['tex']
    assert tex.count(r'$^{\S}$') == 6 and r'$^\S$ measured while 2 other stages ran on other GPUs of the host; see Interference.}' in tex
    assert tex.count(r'AR\textsuperscript{\S} &') == 2 and tex.count(r'DFlash n=16\textsuperscript{\S} &') == 2
    assert tex.count(r'\textsuperscript{\S}: measured while 2 other stages ran on other GPUs of the host; see Interference') == 2


def test_the_interference_stage_is_no_result_row(par):
    md = par['md']
    interference = '\n'.join(section(md, '### Interference'))
    assert '`%s` | ok |' % ALONE in '\n'.join(section(md, '### Where the time went'))  # its time was spent all the same
    assert ALONE not in md.replace(interference, '').replace('\n'.join(section(md, '### Where the time went')), '')
    assert all(best['stage'] != ALONE for best in par['json']['best'])
    assert all(item['stage'] != ALONE for item in par['json']['not_measured'])
    controls = [row for row in par['csv'] if row['stage'] == ALONE]
    assert len(controls) == len(DATASETS) and all(row['interference_of'] == AR and row['concurrency'] == '1' for row in controls)
    assert all(row['speedup'] == '' and row['baseline_stage'] == '' for row in controls)
    assert [row['stage'] for row in par['json']['rows'][-len(DATASETS):]] == [ALONE] * len(DATASETS)
    assert len(par['json']['rows']) == len(par['csv']) and 'control_rows' not in par['json']
    assert par['made']['report']['rows'][-1]['stage'] != ALONE
    assert ALONE not in {item['stage'] for item in par['json']['repeats'] if item['stage'] != ALONE} | {'x'}


def test_speedups_with_the_interference_stage_equal_those_without(par, tmp_path):
    root = tmp_path / 'results'
    make_parallel(root, 'par', with_alone=False)
    without = report(root, 'par')
    assert not (root / 'ct200' / 'par' / ALONE).exists()
    keys = ('speedup', 'speedup_ci_low', 'speedup_ci_high', 'speedup_significant', 'baseline_stage', 'output_throughput')
    compared = 0
    mine = dict(((row['stage'], row['dataset'], row['concurrency']), row) for row in par['csv'])
    for row in without['csv']:
        assert tuple(mine[(row['stage'], row['dataset'], row['concurrency'])][key] for key in keys) == tuple(row[key] for key in keys)
        compared += row['speedup'] != '' and row['method'] != 'autoregressive'
    assert compared == len(DATASETS) * 2 * 2  # DFlash and DDTree at 2 concurrencies per dataset: all have their AR
    assert par['json']['best'] == without['json']['best']
    # the same report but for the Interference section, the footnotes' pointer to it and the time the re-run took
    md = par['md'].replace('\n'.join(section(par['md'], '### Interference')) + '\n', '').replace('; see Interference', '')
    time = '### Where the time went'
    assert md.replace('\n'.join(section(md, time)), '') == without['md'].replace('\n'.join(section(without['md'], time)), '')


def results(folder, stage, dataset, repeats):
    names = [synth.REPEAT_LAYOUT['result'].format(dataset=dataset, temperature=synth.temperature_tag(0.0), concurrency=1, repeat=r)
             for r in range(1, repeats + 1)]
    return [json.loads((folder / stage / name).read_text()) for name in names]


def test_the_interference_numbers_from_the_result_files(par):
    items = par['json']['interference']
    assert [(item['host'], item['stage'], item['original'], item['status']) for item in items] == [('ct200', ALONE, AR, 'ok')]
    item = items[0]
    assert (item['wave'], item['original_wave'], item['original_beside'], item['original_ran_beside']) == (3, 1, 2, [DFLASH, DDTREE])
    assert item['itl_metric'] == 'median_itl_ms'
    lines = section(par['md'], '### Interference')
    sentence = ('`tp1-autoregressive` measured beside 2 other stages (wave 1) vs re-run alone at the end (`tp1-autoregressive-alone`, '
                'wave 3), concurrency 1: output throughput and median ITL per dataset and temperature, each side the mean over the '
                'measured repeats of its run.')
    assert sentence.replace('`', '') in lines
    assert [row['dataset'] for row in item['rows']] == DATASETS
    for row in item['rows']:
        beside, alone = results(par['folder'], AR, row['dataset'], 2), results(par['folder'], ALONE, row['dataset'], 3)
        expected = {}
        for metric in ('output_throughput', 'median_itl_ms'):
            b, a = mean([r[metric] for r in beside]), mean([r[metric] for r in alone])
            expected[metric] = (b, a, (b - a) / a * 100.0)
            assert (row[metric + '_beside'], row[metric + '_alone'], row[metric + '_diff_pct']) == pytest.approx(expected[metric], rel=1e-12)
        assert (row['temperature'], row['concurrency'], row['beside_repeats'], row['alone_repeats'], row['note']) == (0.0, 1, 2, 3, None)
        line = '| %s | 0 | 1 | %.1f (2) | %.1f (3) | %+.1f%% | %.2f | %.2f | %+.1f%% |' % (
            row['dataset'], expected['output_throughput'][0], expected['output_throughput'][1], expected['output_throughput'][2],
            expected['median_itl_ms'][0], expected['median_itl_ms'][1], expected['median_itl_ms'][2])
        assert line in lines, line


@pytest.mark.parametrize(('case', 'faults', 'alone_fault', 'drop', 'line'), [
    ('missing', None, None, True, 'tp1-autoregressive-alone re-runs tp1-autoregressive alone, but tp1-autoregressive is not in '
                                  'the results of this host: nothing to compare.'),
    ('failed', {AR: ('failed', 'CUDA out of memory')}, None, False,
     'tp1-autoregressive-alone re-runs tp1-autoregressive alone, but tp1-autoregressive was not measured (failed: CUDA out of '
     'memory): no interference figure.'),
    ('alone-failed', None, ('failed', 'the port was taken'), False,
     'tp1-autoregressive-alone (re-running tp1-autoregressive alone) was not measured (failed: the port was taken): no '
     'interference figure.'),
])
def test_without_both_measured_a_line_says_so_and_no_numbers(tmp_path, case, faults, alone_fault, drop, line):
    root = tmp_path / 'results'
    folder = make_parallel(root, case, faults=faults, alone_fault=alone_fault)
    if drop:
        shutil.rmtree(folder / AR)
        edit_json(folder / synth.LAYOUT['campaign'], lambda doc: doc.update(stages=[s for s in doc['stages'] if s['id'] != AR]))
    made = report(root, case)
    lines = section(made['md'], '### Interference')
    assert line in lines
    assert not any(entry.startswith('| dataset | T | c |') for entry in lines)
    assert made['json']['interference'][0]['rows'] == []
    assert line.replace('%', r'\%') in made['tex'] and '-interference-' not in made['tex']
    assert all(item['stage'] != ALONE for item in made['json']['not_measured'])


def test_results_from_before_the_keys_report_as_before(tmp_path):
    """golden/sequential-report.* are the report.md and report.tex of make_sequential's campaign made by the code before
    the waves' report changes; the same campaign with the new keys at their sequential values (own waves, ran_beside [],
    no interference stage) reports the same."""
    root = tmp_path / 'results'
    make_sequential(root)
    made = report(root, 'plain')
    assert made['md'] == (GOLDEN / 'sequential-report.md').read_text()
    assert made['tex'] == (GOLDEN / 'sequential-report.tex').read_text()
    assert made['json']['interference'] == [] and all(row['beside'] == 0 and row['interference_of'] is None for row in made['json']['rows'])
    folder = root / 'ct200' / 'plain'
    edit_json(folder / synth.LAYOUT['campaign'], lambda doc: [stage.update(
        wave=i + 1, wave_stages=[stage['id']], interference_of=None, alone=None) for i, stage in enumerate(doc['stages'])])
    for i, (_tp, method, params) in enumerate(MATRIX):
        path = folder / synth.stage_id(_tp, method, params) / synth.LAYOUT['status']
        edit_json(path, lambda doc, i=i: doc.update(ran_beside=[], wave=i + 1, interference_of=None))
    again = report(root, 'plain', tmp_path / 'again')
    assert again['md'] == made['md'] and again['tex'] == made['tex']
    assert [row['wave'] for row in again['json']['rows'] if row['concurrency'] == 1 and row['dataset'] == 'gsm8k'] == [1, 2, 3, 4]


def test_report_tex_has_the_interference_table_and_compiles(par, tmp_path):
    tex = par['tex']
    assert r'\label{tab:par-ct200-interference-tp1-autoregressive-alone}' in tex
    assert 'measured beside 2 other stages (wave 1) vs re-run alone at the end' in tex
    log = compile_tex(par['out'] / 'report.tex', tmp_path)
    assert 'Overfull \\hbox' not in log


@pytest.mark.parametrize(('doc', 'reason'), [
    ({'status': 'ok', 'ran_beside': 'tp1-dflash-n16'}, "ran_beside is 'tp1-dflash-n16'; allowed: a list of stage ids"),
    ({'status': 'ok', 'ran_beside': ['Bad Id']}, "ran_beside[0] is 'Bad Id'; allowed: a stage id matching [a-z0-9][a-z0-9._-]*"),
    ({'status': 'ok', 'wave': 0}, 'wave is 0; allowed: a wave number (an integer, 1 or more) or null'),
    ({'status': 'ok', 'interference_of': 3}, 'interference_of is 3; allowed: the id of the stage it re-runs alone (matching '
                                             '[a-z0-9][a-z0-9._-]*) or null'),
])
def test_check_status_names_the_new_field_and_what_is_allowed(doc, reason):
    assert check_status(doc) == reason


def test_check_plan_names_the_stage_and_field():
    stage = {'id': AR, 'wave': 1, 'wave_stages': [AR, 5]}
    assert check_plan({'stages': [stage]}) == 'stages[0].wave_stages[1] is 5; allowed: a stage id matching [a-z0-9][a-z0-9._-]*'
    assert check_plan({'stages': [dict(stage, wave_stages=[AR], wave=True)]}) == (
        'stages[0].wave is True; allowed: a wave number (an integer, 1 or more) or null')


def test_the_time_breakdown_splits_the_seconds_stages_shared_and_adds_up_to_the_wall(par):
    breakdown = par['json']['hosts'][0]['time_breakdown']
    notes = ' | '.join(breakdown['notes'])
    note = [line for line in breakdown['notes'] if 'stage(s) ran side by side with others (' in line]
    assert len(note) == 1 and all(stage in note[0] for stage in WAVE), notes
    # the parts (waiting included) add up to the wall time, and no part is negative
    known = [row['seconds'] for row in breakdown['rows'] if row['seconds'] is not None]
    assert sum(known) == pytest.approx(breakdown['wall_s'], abs=0.01) and all(value >= 0 for value in known)
    assert sum(item['share'] for item in breakdown['stages']) <= 100.0 + 0.01
