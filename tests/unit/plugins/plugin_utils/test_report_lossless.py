# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The report's "Lossless and accurate": outputs against AR's at T=0 with AR's own floor, task accuracy with Wilson and
Newcombe intervals, the verdict marked beside every speedup, and the comparison of two campaigns' accuracy.

The campaigns are synthetic_results' (the layout bench_stage writes); each raw record then gets the output the
builtin harness keeps (outputs.pack), and status.json's datasets the references the campaign copies into the results."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import sys

import pytest

from ansible_collections.specdec.bench.plugins.module_utils._stage import outputs
from ansible_collections.specdec.bench.plugins.plugin_utils import answers
from ansible_collections.specdec.bench.plugins.plugin_utils.report import generate
from ansible_collections.specdec.bench.plugins.plugin_utils.report import lossless
from ansible_collections.specdec.bench.plugins.plugin_utils.report.lossless import ANSWERS_MARK, first_difference, percentile

sys.path.insert(0, os.path.dirname(__file__))
import synthetic_results as synth  # noqa: E402  pylint: disable=wrong-import-position,import-error
from report_helpers import compile_tex, TEX_DOCUMENT, TEX_DOCUMENT_OT1  # noqa: E402  pylint: disable=wrong-import-position,import-error

HOST, CAMPAIGN = 'ct200', 'lossless'
AR, DFLASH, DDTREE = 'tp1-autoregressive', 'tp1-dflash-n16', 'tp1-ddtree-b32-k4'
MATRIX = [(1, 'autoregressive', {}), (1, 'dflash', {'num_draft_tokens': 16}), (1, 'ddtree', {'budget': 32, 'topk': 4})]
PROMPTS = 8


def answer(index):
    return 17 + 3 * index


def reference_ids(index, length=40):
    return [1000 + 97 * index + position for position in range(length)]


def ar_output(index, concurrency):
    return reference_ids(index), 'Step by step. The final answer is \\boxed{%d}.' % answer(index)


def write_outputs(root, decide, campaign=CAMPAIGN, references=True):
    """Give every measured record of every stage the output decide(stage, concurrency, repeat, index) -> (ids, text);
    write the gsm8k references and name them in status.json's datasets."""
    folder = os.path.join(root, HOST, campaign)
    refs = ''.join(json.dumps({'id': str(i + 1), 'kind': 'gsm8k', 'answer': 'work\n#### %d' % answer(i)}, sort_keys=True) + '\n'
                   for i in range(PROMPTS)).encode()
    sha = hashlib.sha256(refs).hexdigest()
    if references:
        os.makedirs(os.path.join(folder, 'references'), exist_ok=True)
        with open(os.path.join(folder, 'references', sha + '.jsonl'), 'wb') as handle:
            handle.write(refs)
    for stage in os.listdir(folder):
        stage_dir = os.path.join(folder, stage)
        status_path = os.path.join(stage_dir, 'status.json')
        if not os.path.isfile(status_path):
            continue
        with open(status_path, encoding='utf-8') as handle:
            status = json.load(handle)
        for item in status.get('datasets') or []:
            item['references_sha256'] = sha
        with open(status_path, 'w', encoding='utf-8') as handle:
            json.dump(status, handle)
        for name in os.listdir(stage_dir):
            if not name.startswith('raw-'):
                continue
            fields = name[:-len('.jsonl')].split('-')
            concurrency = int([f for f in fields if f.startswith('c')][-1][1:])
            repeat = int([f for f in fields if f.startswith('r')][-1][1:])
            path = os.path.join(stage_dir, name)
            with open(path, encoding='utf-8') as handle:
                records = [json.loads(line) for line in handle if line.strip()]
            for record in records:
                if not record.get('warmup'):
                    ids, text = decide(stage, concurrency, repeat, int(record['id']) - 1)
                    record['output'] = outputs.pack(ids, text, len(ids))
            with open(path, 'w', encoding='utf-8') as handle:
                handle.write(''.join(json.dumps(record) + '\n' for record in records))
    return sha


def campaign(tmp_path, decide, **kwargs):
    root = str(tmp_path / 'results')
    synth.make_campaign(root, HOST, kwargs.pop('name', CAMPAIGN), MATRIX, concurrency=(1, 4), num_prompts=PROMPTS,
                        datasets=['gsm8k'], repeats=2, **kwargs)
    write_outputs(root, decide)
    return root


def read_csv(path):
    with open(path, newline='', encoding='utf-8') as handle:
        return list(csv.DictReader(handle))


def lossy_ddtree(stage, concurrency, _repeat, index):
    """AR and DFlash answer alike at every concurrency; DDTree's ids differ from position 5 on and its answer is wrong
    for all but two prompts."""
    ids, text = ar_output(index, concurrency)
    if stage == DDTREE:
        ids = ids[:5] + [token + 1 for token in ids[5:]]
        if index >= 2:
            text = text.replace('{%d}' % answer(index), '{%d}' % (answer(index) + 1))
    return ids, text


def test_first_difference_and_percentile():
    assert first_difference([1, 2, 3], [1, 2, 3]) is None
    assert first_difference([1, 2, 3], [1, 9, 3]) == 1
    assert first_difference([1, 2], [1, 2, 3]) == 2 and first_difference([], [4]) == 0
    assert percentile([5, 1, 3], 50) == 3 and percentile([0, 10], 10) == pytest.approx(1.0) and percentile([], 50) is None


def test_a_lossy_method_is_flagged_by_both_checks_and_marked_beside_its_speedup(tmp_path):
    root = campaign(tmp_path, lossy_ddtree)
    out = str(tmp_path / 'report')
    result = generate(root, CAMPAIGN, out, plots=False)
    equality = dict(((row['stage'], int(row['concurrency'])), row) for row in read_csv(os.path.join(out, 'results-equality.csv')))
    assert sorted(equality) == sorted((stage, c) for stage in (AR, DFLASH, DDTREE) for c in (1, 4))
    for c in (1, 4):
        floor, same, lossy = equality[(AR, c)], equality[(DFLASH, c)], equality[(DDTREE, c)]
        # AR against its own c=1 first repeat: at c=1 its second repeat, at c=4 both repeats
        assert int(floor['compared']) == PROMPTS * (1 if c == 1 else 2) and float(floor['identical_share']) == 1.0
        assert float(same['identical_share']) == 1.0 and same['flagged'] == 'false' and float(same['floor_share']) == 1.0
        assert int(lossy['compared']) == 2 * PROMPTS and float(lossy['identical_share']) == 0.0 and lossy['flagged'] == 'true'
        assert float(lossy['diverge_median']) == 5.0 and float(lossy['identical_32_share']) == 0.0
    accuracy = dict((row['stage'], row) for row in read_csv(os.path.join(out, 'results-accuracy.csv')))
    assert (accuracy[AR]['graded'], accuracy[AR]['correct'], accuracy[AR]['concurrency'], accuracy[AR]['repeat']) == ('8', '8', '1', '1')
    low, high = answers.wilson(8, 8)
    assert float(accuracy[AR]['accuracy_low']) == pytest.approx(low) and float(accuracy[AR]['accuracy_high']) == pytest.approx(high)
    assert float(accuracy[DDTREE]['accuracy']) == 0.25 and accuracy[DDTREE]['flagged'] == 'true'
    delta, d_low, d_high = answers.newcombe_difference(2, 8, 8, 8)
    assert float(accuracy[DDTREE]['delta']) == pytest.approx(-0.75) and delta == pytest.approx(-0.75)
    assert d_high < 0 and float(accuracy[DDTREE]['delta_high']) == pytest.approx(d_high)
    assert float(accuracy[DDTREE]['delta_low']) == pytest.approx(d_low)
    assert float(accuracy[DFLASH]['delta']) == 0.0 and accuracy[DFLASH]['flagged'] == 'false'
    text = open(os.path.join(out, 'report.md'), encoding='utf-8').read()
    assert '## Lossless and accurate' in text and '### Task accuracy' in text and '### Outputs identical to AR at T=0' in text
    table = text[text.index('### gsm8k'):]
    assert 'DDTree B=32 k=4 %s' % ANSWERS_MARK in table and 'DFlash n=16 %s' % ANSWERS_MARK not in text
    assert table.count('%s its outputs at T=0 differ from AR' % ANSWERS_MARK) >= 1
    rows = dict((row['stage'], row) for row in read_csv(os.path.join(out, 'results.csv')))
    assert rows[DDTREE]['setting'].endswith(ANSWERS_MARK) and not rows[DFLASH]['setting'].endswith(ANSWERS_MARK)
    verdicts = result['report']['lossless']['verdicts']
    assert [(item['stage'], len(item['notes'])) for item in verdicts] == [(DDTREE, 3)]  # c=1, c=4 and the accuracy
    assert ANSWERS_MARK in open(os.path.join(out, 'report.tex'), encoding='utf-8').read()
    for encoding, document in (('t1', TEX_DOCUMENT), ('ot1', TEX_DOCUMENT_OT1)):  # the mark and the tables compile
        (tmp_path / encoding).mkdir()
        compile_tex(tmp_path / 'report' / 'report.tex', tmp_path / encoding, document=document)


def test_a_difference_within_ars_own_floor_is_not_flagged(tmp_path):
    """AR at c=4 differs from AR at c=1 for prompts 0 and 1 (batch-dependent numerics): a method that differs there
    too is within the floor; one that differs on four prompts at c=1, where AR is identical to itself, is flagged."""
    def decide(stage, concurrency, _repeat, index):
        ids, text = ar_output(index, concurrency)
        if concurrency == 4 and index < 2 and stage in (AR, DFLASH):
            ids = ids[:20] + [7] * 20
        if stage == DDTREE and concurrency == 1 and index < 4:
            ids = ids[:33] + [8] * 7
        return ids, text
    root = campaign(tmp_path, decide)
    out = str(tmp_path / 'report')
    generate(root, CAMPAIGN, out, plots=False)
    equality = dict(((row['stage'], int(row['concurrency'])), row) for row in read_csv(os.path.join(out, 'results-equality.csv')))
    assert float(equality[(AR, 4)]['identical_share']) == 0.75
    assert float(equality[(DFLASH, 4)]['floor_share']) == 0.75 and equality[(DFLASH, 4)]['flagged'] == 'false'
    assert float(equality[(DFLASH, 4)]['diverge_median']) == 20.0 and float(equality[(DFLASH, 4)]['identical_32_share']) == 0.75
    assert equality[(DDTREE, 1)]['flagged'] == 'true' and float(equality[(DDTREE, 1)]['identical_share']) == 0.5
    assert float(equality[(DDTREE, 1)]['identical_32_share']) == 1.0 and float(equality[(DDTREE, 1)]['identical_128_share']) == 0.5
    assert equality[(DDTREE, 4)]['flagged'] == 'false'


def test_results_without_outputs_have_no_section_and_no_files(tmp_path):
    root = str(tmp_path / 'results')
    synth.make_campaign(root, HOST, CAMPAIGN, MATRIX, concurrency=(1,), num_prompts=4, datasets=['gsm8k'])
    out = str(tmp_path / 'report')
    result = generate(root, CAMPAIGN, out, plots=False)
    assert 'lossless' not in result['report'] and not os.path.exists(os.path.join(out, 'results-equality.csv'))
    assert 'Lossless and accurate' not in open(os.path.join(out, 'report.md'), encoding='utf-8').read()


def test_compare_shows_the_accuracy_change_between_campaigns(tmp_path):
    root = campaign(tmp_path, lambda stage, c, r, index: ar_output(index, c))
    synth.make_campaign(root, HOST, 'after', MATRIX, concurrency=(1, 4), num_prompts=PROMPTS, datasets=['gsm8k'], repeats=2)
    write_outputs(root, lossy_ddtree, campaign='after')
    out = str(tmp_path / 'report')
    generate(root, 'after', out, plots=False, compare_to=CAMPAIGN)
    rows = dict((row['stage'], row) for row in read_csv(os.path.join(out, 'compare-%s-accuracy.csv' % CAMPAIGN)))
    assert float(rows[DDTREE]['accuracy_before']) == 1.0 and float(rows[DDTREE]['accuracy_after']) == 0.25
    assert rows[DDTREE]['significant'] == 'true' and rows[AR]['significant'] == 'false'
    text = open(os.path.join(out, 'compare-%s.md' % CAMPAIGN), encoding='utf-8').read()
    assert 'Task accuracy (%) before → after' in text and '**-75.0 [' in text


def test_a_malformed_references_file_is_skipped_and_listed_and_nothing_is_graded(tmp_path):
    root = campaign(tmp_path, lossy_ddtree)
    folder = os.path.join(root, HOST, CAMPAIGN, 'references')
    name = os.listdir(folder)[0]
    with open(os.path.join(folder, name), 'a', encoding='utf-8') as handle:
        handle.write(json.dumps({'id': '9', 'kind': 'gsm9k', 'answer': '#### 1'}) + '\n')
    result = generate(root, CAMPAIGN, str(tmp_path / 'report'), plots=False)
    assert [item['path'] for item in result['skipped_files']] == ['%s/%s/references/%s' % (HOST, CAMPAIGN, name)]
    assert 'kind is' in result['skipped_files'][0]['reason'] and 'gsm8k, math500, humaneval, mbpp' in result['skipped_files'][0]['reason']
    assert result['report']['lossless']['accuracy'] == [] and result['report']['lossless']['equality']


def test_the_grade_cache_never_lends_one_sets_grade_to_another_with_the_same_ids():
    """Two gsm8k files of one report both have a record '1', with other answers: the same text is right for one only."""
    output = [{'id': '1', 'turn': 0, 'final': True, 'ids': [1], 'text': 'so \\boxed{5}.'}]
    first = {'1': {'id': '1', 'kind': 'gsm8k', 'answer': 'work\n#### 5'}}
    second = {'1': {'id': '1', 'kind': 'gsm8k', 'answer': 'work\n#### 6'}}
    cache = {}
    assert lossless.grade_outputs(output, first, cache=cache) == (1, 1, None)
    assert lossless.grade_outputs(output, second, cache=cache) == (1, 0, None)
