"""The filters and the test that hand module_utils/_common.py's contracts to roles."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.specdec.bench.plugins.filter.contracts import id_pattern, results_layout
from ansible_collections.specdec.bench.plugins.module_utils._common import ID_PATTERN, RESULTS_LAYOUT
from ansible_collections.specdec.bench.plugins.test.id import id_test


def test_whole_layout_is_a_copy():
    layout = results_layout(None)
    assert layout == RESULTS_LAYOUT
    layout['status'] = 'x'
    assert RESULTS_LAYOUT['status'] == 'status.json'


def test_one_key_and_fields():
    assert results_layout('status') == 'status.json'
    assert results_layout('result', dataset='random', temperature=0, concurrency=8) == 'result-random-t0-c8-r1.json'
    assert results_layout('raw', dataset='gsm8k', temperature=0.7, concurrency=2, repeat=3) == 'raw-gsm8k-t0.7-c2-r3.jsonl'


def test_missing_field_is_named():
    with pytest.raises(AnsibleFilterError, match='dataset'):
        results_layout('result', concurrency=8)
    assert results_layout(['gpus', 'unit']) == {'gpus': 'gpus.json', 'unit': 'unit.service'}


@pytest.mark.parametrize('keys', ['nope', ['status', 'nope'], 3])
def test_unknown_keys_are_named(keys):
    with pytest.raises(AnsibleFilterError, match='results_layout'):
        results_layout(keys)


def test_id_test_and_pattern():
    assert id_test('tp1-dflash-n16') and not id_test('TP1') and not id_test('a' * 65) and id_test('a' * 65, 70)
    assert id_pattern('') == ID_PATTERN
