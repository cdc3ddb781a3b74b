# SPDX-License-Identifier: GPL-3.0-or-later
"""The report against collected files it cannot trust: each file checked against its schema, a bad one skipped and
named with its reason, the outputs written as a set, and text from a host escaped in report.md and report.tex."""
import json
import math
import re
import sys
from pathlib import Path

import pytest

from ansible_collections.specdec.bench.plugins.module_utils._common import results_file
from ansible_collections.specdec.bench.plugins.plugin_utils import report as report_utils
from ansible_collections.specdec.bench.plugins.plugin_utils.report import generate

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synthetic_results as synth  # noqa: E402  pylint: disable=wrong-import-position

OUTPUTS = ['report.md', 'report.tex', 'results-categories.csv', 'results-repeats.csv', 'results.csv', 'results.json']
# The result file of the run at c=4 of a campaign without datasets (random prompts, temperature 0), as the layout names it.
RESULT_C4 = results_file('result', dataset='random', temperature=0.0, concurrency=4)


def campaign(tmp_path, host='ct200'):
    """Two TPs, so that rows of both are sorted against each other."""
    root = tmp_path / 'results'
    synth.make_campaign(root, host, 'c', synth.ct200_matrix(tps=(1, 2), budgets=(16,)), concurrency=(1, 4))
    return root, root / host / 'c'


def edit_json(path, change):
    doc = json.loads(path.read_text())
    doc = change(doc)
    path.write_text(json.dumps(doc))


def set_stage(index, key, value):
    def change(plan):
        plan['stages'][index][key] = value
        return plan
    return change


@pytest.mark.parametrize(('relative', 'change', 'reason'), [
    ('tp1-autoregressive/status.json', lambda doc: [], 'is a list; allowed: an object'),
    ('campaign.json', lambda doc: dict(doc, stages=[1]), 'stages[0] is 1; allowed: an object'),
    ('campaign.json', set_stage(0, 'tp', '1'), "stages[0].tp is '1'; allowed: a positive integer"),
    ('campaign.json', set_stage(1, 'concurrency', [1, None]), 'stages[1].concurrency[1] is None; allowed: a positive integer'),
    ('campaign.json', set_stage(0, 'id', '../../etc'), "stages[0].id is '../../etc'; allowed: a stage id"),
    ('tp1-dflash-n16/gpus.json', lambda doc: dict(doc, nvidia_gpus=[dict(doc['nvidia_gpus'][0], memory_total_mib=math.nan)]),
     'nvidia_gpus[0].memory_total_mib is nan; allowed: a number of MiB'),
    ('tp1-dflash-n16/' + RESULT_C4, lambda doc: dict(doc, output_throughput='fast'),
     "output_throughput is 'fast'; allowed: a finite number"),
    ('tp1-dflash-n16/' + RESULT_C4, lambda doc: dict(doc, completed=math.inf), 'completed is inf; allowed: a count'),
    ('tp1-dflash-n16/server_info.json', lambda doc: dict(doc, version=['0.5']), 'version is a list; allowed: a string or null'),
    ('tp1-dflash-n16/status.json', lambda doc: dict(doc, status=None), 'status is None; allowed: a status name'),
])
def test_a_wrongly_typed_file_is_skipped_and_named_with_its_reason(tmp_path, relative, change, reason):
    root, folder = campaign(tmp_path)
    edit_json(folder / relative, change)
    out = tmp_path / 'out'
    made = generate(str(root), 'c', str(out), synth.LAYOUT, plots=False)
    skipped = made['skipped_files']
    assert [item['path'] for item in skipped] == ['ct200/c/' + relative]
    assert reason in skipped[0]['reason']
    assert made['report']['skipped_files'] == skipped
    md = (out / 'report.md').read_text()
    assert '## Files skipped' in md and '`ct200/c/%s`' % relative in md
    assert json.loads((out / 'results.json').read_text())['skipped_files'] == skipped
    assert sorted(made['changed']) == OUTPUTS
    assert any('ct200/c/%s' % relative in line for line in made['lines'])


def test_what_the_stages_write_is_not_skipped(tmp_path):
    root, _folder = campaign(tmp_path)
    assert generate(str(root), 'c', str(tmp_path / 'out'), synth.LAYOUT, plots=False)['skipped_files'] == []


def test_a_skipped_status_or_result_makes_its_rows_invalid_with_the_reason(tmp_path):
    root, folder = campaign(tmp_path)
    (folder / 'tp1-autoregressive' / 'status.json').write_text('[]')
    (folder / 'tp1-dflash-n16' / RESULT_C4).write_text('{"complete": tru')
    made = generate(str(root), 'c', str(tmp_path / 'out'), synth.LAYOUT, plots=False)
    rows = {(row['stage'], row['concurrency']): row for row in made['report']['rows']}
    assert rows[('tp1-autoregressive', 1)]['status'] == 'invalid'
    assert rows[('tp1-autoregressive', 1)]['reason'].startswith('status.json skipped: the document is a list')
    assert rows[('tp1-dflash-n16', 4)]['status'] == 'invalid'
    assert rows[('tp1-dflash-n16', 4)]['reason'].startswith(RESULT_C4 + ' skipped: not valid JSON')
    assert rows[('tp1-dflash-n16', 1)]['status'] == 'ok'
    assert [item['stage'] for item in made['report']['not_measured']] == ['tp1-autoregressive']


def test_a_skipped_campaign_json_leaves_the_stage_folders(tmp_path):
    root, folder = campaign(tmp_path)
    (folder / 'campaign.json').write_text('{"stages": {"tp1-autoregressive": {}}}')
    made = generate(str(root), 'c', str(tmp_path / 'out'), synth.LAYOUT, plots=False)
    assert made['skipped_files'][0]['reason'] == 'stages is a dict; allowed: a list of stages'
    assert sorted(set(row['stage'] for row in made['report']['rows'])) == [
        'tp1-autoregressive', 'tp1-ddtree-b16-k4', 'tp1-dflash-n16', 'tp2-autoregressive', 'tp2-ddtree-b16-k4', 'tp2-dflash-n16']


def test_a_file_that_is_not_json_is_skipped_not_fatal(tmp_path):
    root, folder = campaign(tmp_path)
    (folder / 'tp2-autoregressive' / 'server_info.json').write_text('{"version": ')
    (folder / 'tp2-autoregressive' / 'gpus.json').unlink()
    (folder / 'tp2-autoregressive' / 'gpus.json').mkdir()
    made = generate(str(root), 'c', str(tmp_path / 'out'), synth.LAYOUT, plots=False)
    assert [(item['path'], item['reason'].split(':')[0]) for item in made['skipped_files']] == [
        ('ct200/c/tp2-autoregressive/gpus.json', 'unreadable'),
        ('ct200/c/tp2-autoregressive/server_info.json', 'not valid JSON')]


def test_outputs_are_written_as_a_set_a_failure_leaves_the_previous_set(tmp_path, monkeypatch):
    root, folder = campaign(tmp_path)
    out = tmp_path / 'out'
    generate(str(root), 'c', str(out), synth.LAYOUT, plots=False)
    before = {name: (out / name).read_bytes() for name in OUTPUTS}
    edit_json(folder / 'tp1-dflash-n16' / RESULT_C4, lambda doc: dict(doc, output_throughput=doc['output_throughput'] * 2))

    def broken(_report):
        raise RuntimeError('rendering failed')
    monkeypatch.setattr(report_utils, 'render_latex', broken)
    with pytest.raises(RuntimeError):
        generate(str(root), 'c', str(out), synth.LAYOUT, plots=False)
    assert {name: (out / name).read_bytes() for name in OUTPUTS} == before
    monkeypatch.undo()
    real_replace, renamed, staged = report_utils.os.replace, [], []
    real_write = report_utils.atomic_write

    def failing_write(path, data, **options):
        if staged:  # the first file is staged, the second fails: still nothing of the new set is in place
            raise OSError(28, 'No space left on device')
        staged.append(path)
        return real_write(path, data, **options)
    monkeypatch.setattr(report_utils, 'atomic_write', failing_write)
    with pytest.raises(OSError):
        generate(str(root), 'c', str(out), synth.LAYOUT, plots=False)
    assert len(staged) == 1 and Path(staged[0]).parent != out
    assert {name: (out / name).read_bytes() for name in OUTPUTS} == before
    assert sorted(p.name for p in out.iterdir()) == OUTPUTS  # no temporary file left
    monkeypatch.undo()
    monkeypatch.setattr(report_utils.os, 'replace', lambda src, dst: renamed.append(dst) or real_replace(src, dst))
    made = generate(str(root), 'c', str(out), synth.LAYOUT, plots=False)
    # the throughput changed: every file but the (empty) per-category table
    assert sorted(made['changed']) == ['report.md', 'report.tex', 'results-repeats.csv', 'results.csv', 'results.json']
    # what was renamed into the report's folder: the changed files, each once (the staged writes rename inside staging)
    assert sorted(Path(path).name for path in renamed if Path(path).parent == out) == sorted(made['changed'])
    assert all(out in Path(path).parents for path in renamed)
    assert sorted(p.name for p in out.iterdir()) == OUTPUTS


SCRIPT = '<script>alert(1)</script> | a & b'


def test_text_from_a_host_is_escaped_in_report_md(tmp_path):
    root, folder = campaign(tmp_path)
    edit_json(folder / 'tp2-autoregressive' / 'status.json', lambda doc: dict(doc, status='failed', reason=SCRIPT))
    edit_json(folder / 'tp1-dflash-n16' / 'server_info.json', lambda doc: dict(doc, version='<b>0.5</b>'))
    edit_json(folder / 'tp1-autoregressive' / 'gpus.json',
              lambda doc: dict(doc, nvidia_gpus=[dict(gpu, name='GPU <img src=x>') for gpu in doc['nvidia_gpus']]))
    edit_json(folder / 'campaign.json', set_stage(1, 'method', 'dflash<i>|x'))
    out = tmp_path / 'out'
    generate(str(root), 'c', str(out), synth.LAYOUT, plots=False)
    md = (out / 'report.md').read_text()
    assert '<' not in md and '>' not in md.replace('->', '')
    assert '&lt;script&gt;alert(1)&lt;/script&gt; \\| a &amp; b' in md
    assert '&lt;b&gt;0.5&lt;/b&gt;' in md and 'GPU &lt;img src=x&gt;' in md
    assert 'dflash&lt;i&gt;\\|x n=16' in md
    lines = md.splitlines()
    row = next(line for line in lines if line.startswith('| dflash'))
    header = [line for line in lines[:lines.index(row)] if line.startswith('| setting |')][-1]
    assert len(re.findall(r'(?<!\\)\|', row)) == len(re.findall(r'(?<!\\)\|', header)) == 4
    tex = (out / 'report.tex').read_text()
    assert r'dflash\textless{}i\textgreater{}\textbar{}x n=16' in tex
    assert '<' not in tex and '>' not in tex and '|' not in tex


def test_a_stage_folder_name_from_a_host_is_escaped(tmp_path):
    root, folder = campaign(tmp_path)
    (folder / 'x`<b>|y').mkdir()
    out = tmp_path / 'out'
    generate(str(root), 'c', str(out), synth.LAYOUT, plots=False)
    md = (out / 'report.md').read_text()
    assert 'x\\`&lt;b&gt;\\|y' in md and '<b>' not in md
