# SPDX-License-Identifier: GPL-3.0-or-later
"""report_read: each collected file against the schema of its kind, and one host's campaign read in the results layout."""
import sys
from pathlib import Path

import pytest

from ansible_collections.specdec.bench.plugins.module_utils._common import ID_MAX_LEN
from ansible_collections.specdec.bench.plugins.plugin_utils.report import read as report_read
from ansible_collections.specdec.bench.plugins.plugin_utils.report import schema as report_schema

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synthetic_results as synth  # noqa: E402  pylint: disable=wrong-import-position


@pytest.mark.parametrize(('check', 'doc'), [
    ('check_status', {'stage': 's', 'status': 'ok', 'reason': None, 'headline': []}),
    ('check_result', {'complete': True, 'completed': 8, 'output_throughput': 10.5, 'harness': 'builtin'}),
    ('check_server_info', {'version': '0.5', 'internal_states': [{'x': float('nan')}]}),
    ('check_gpus', synth.gpus_doc()),
    ('check_gpus', {'nvidia_gpus': [], 'nvidia_driver': None}),
    ('check_plan', {'campaign': 'c', 'stages': []}),
])
def test_the_schemas_accept_what_the_stages_write(check, doc):
    assert getattr(report_schema, check)(doc) is None


@pytest.mark.parametrize('stage_id', ['TP1-autoregressive', 'tp1 ar', '.tp1', 'tp1-ar\n', '../x'])
def test_a_stage_id_is_a_specdec_id(stage_id):
    reason = report_schema.check_plan({'stages': [{'id': stage_id}]})
    assert reason.startswith('stages[0].id is %r; allowed: a stage id matching [a-z0-9][a-z0-9._-]*' % stage_id)


def test_a_stage_id_is_bounded_by_its_unit_name_not_by_the_id_length():
    long_id = 'tp1-ddtree-' + 'b' * ID_MAX_LEN
    assert report_schema.check_plan({'stages': [{'id': long_id}]}) is None


@pytest.mark.parametrize('value', [10 ** 400, '12.5', True, float('nan'), float('-inf')])
def test_a_result_number_is_a_finite_json_number(value):
    reason = report_schema.check_result({'complete': True, 'output_throughput': value})
    assert reason == 'output_throughput is %r; allowed: a finite number or null' % (value,)


def test_read_host_reads_the_common_results_layout_by_default(tmp_path):
    root = tmp_path / 'results'
    synth.make_campaign(root, 'ct200', 'c', [(1, 'autoregressive', {})], concurrency=(1, 4))
    default = report_read.read_host(str(root), 'ct200', 'c')
    assert default == report_read.read_host(str(root), 'ct200', 'c', synth.LAYOUT)
    assert sorted(default['stages'][0]['results']) == [('random', 0.0, 1), ('random', 0.0, 4)] and default['skipped_files'] == []
    assert default['stages'][0]['status']['status'] == 'ok'


def test_raw_records_are_read_only_for_a_categorized_set_and_a_bad_line_skips_the_file(tmp_path):
    root = tmp_path / 'results'
    synth.make_campaign(root, 'ct200', 'c', [(1, 'autoregressive', {})], concurrency=(1,), datasets=['gsm8k', 'spec-bench'],
                        repeats=2)
    read = report_read.read_host(str(root), 'ct200', 'c')
    entry = read['stages'][0]
    assert sorted(entry['results'][('spec-bench', 0.0, 1)]) == [1, 2]
    assert sorted(entry['raw']) == [('spec-bench', 0.0, 1)]  # gsm8k names one category: its raw records are not read
    assert [len(entry['raw'][('spec-bench', 0.0, 1)][r]) for r in (1, 2)] == [9, 9]  # the warm-up request and 8 prompts
    name = synth.REPEAT_LAYOUT['raw'].format(dataset='spec-bench', temperature='0', concurrency=1, repeat=2)
    path = root / 'ct200' / 'c' / 'tp1-autoregressive' / name
    path.write_text(path.read_text() + '{"warmup": false, "success": true, "output_tokens": -3}\n')
    read = report_read.read_host(str(root), 'ct200', 'c')
    assert sorted(read['stages'][0]['raw'][('spec-bench', 0.0, 1)]) == [1]
    assert read['skipped_files'] == [{'path': 'ct200/c/tp1-autoregressive/' + name,
                                      'reason': 'line 10: output_tokens is -3; allowed: a count (an integer, 0 or more) or null'}]
