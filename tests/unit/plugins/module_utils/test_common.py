"""The shared contracts of module_utils/_common.py."""
import hashlib
import math
import os

import pytest

from ansible_collections.specdec.bench.plugins.module_utils import _common


@pytest.mark.parametrize('value', ['ct200', 'a-b.c_d', '0', 'x' * 64])
def test_ids_accepted(value):
    assert _common.is_id(value)


@pytest.mark.parametrize('value', ['', 'A', '-x', '.x', 'a/b', 'a b', 'a;b', 'x' * 65, None, 3, 'a\n'])
def test_ids_refused(value):
    assert not _common.is_id(value)


def test_results_file_fills_dataset_temperature_concurrency_and_repeat():
    assert _common.results_file('result', dataset='random', temperature=0, concurrency=4, repeat=2) == 'result-random-t0-c4-r2.json'
    assert _common.results_file('raw', dataset='gsm8k', temperature=0.7, concurrency=16, repeat=3) == 'raw-gsm8k-t0.7-c16-r3.jsonl'
    # repeat 1 unless given
    assert _common.results_file('result', dataset='mt-bench', temperature=1.0, concurrency=1) == 'result-mt-bench-t1-c1-r1.json'
    # a template renders floats as text: the same name
    assert _common.results_file('result', dataset='x', temperature='0.0', concurrency=2) == 'result-x-t0-c2-r1.json'
    assert _common.results_file('raw', dataset='x', temperature='*', concurrency='*', repeat='*') == 'raw-x-t*-c*-r*.jsonl'
    assert _common.results_file('status') == 'status.json'


def test_the_names_before_repeats_are_the_layouts_without_the_repeat():
    for key, name in _common.RESULTS_LAYOUT_BEFORE_REPEATS.items():
        assert _common.RESULTS_LAYOUT[key].replace('-r{repeat}', '') == name


@pytest.mark.parametrize('value, expected', [(0, '0'), (0.0, '0'), (0.7, '0.7'), (1, '1'), (1.0, '1'), (0.25, '0.25'),
                                             (1.5, '1.5'), (2, '2')])
def test_temperature_tag(value, expected):
    assert _common.temperature_tag(value) == expected


@pytest.mark.parametrize('value, expected', [(1, 1.0), ('2.5', 2.5), (None, None), (True, None), ('x', None),
                                             (math.nan, None), (math.inf, None), ('-inf', None), (10 ** 400, None)])
def test_finite(value, expected):
    assert _common.finite(value) == expected


def test_atomic_write_replaces_and_reports_unchanged(tmp_path):
    path = str(tmp_path / 'a.json')
    assert _common.atomic_write(path, 'one', unchanged_ok=True)
    assert _common.atomic_write(path, 'one', unchanged_ok=True) is False
    assert _common.atomic_write(path, b'two', mode=0o600, fsync=True)
    assert open(path).read() == 'two'
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert os.listdir(tmp_path) == ['a.json']


def test_atomic_write_failure_keeps_old_file(tmp_path, monkeypatch):
    path = str(tmp_path / 'a.json')
    _common.atomic_write(path, 'old')

    def boom(*args):
        raise OSError('disk full')
    monkeypatch.setattr(os, 'replace', boom)
    with pytest.raises(OSError):
        _common.atomic_write(path, 'new')
    assert open(path).read() == 'old'
    assert os.listdir(tmp_path) == ['a.json']


def test_file_sha256(tmp_path):
    data = os.urandom(3 * 1024 + 7)
    (tmp_path / 'f').write_bytes(data)
    assert _common.file_sha256(str(tmp_path / 'f'), chunk=1024) == hashlib.sha256(data).hexdigest()


def test_utc_stamp_has_milliseconds_and_sorts_as_time():
    assert _common.utc_stamp(1796373315.9624) == '2026-12-04T08:35:15.962Z'
    assert _common.utc_stamp(1796373315.9999) == '2026-12-04T08:35:15.999Z'  # never rounds into the next second
    assert _common.utc_stamp(1796373315) == '2026-12-04T08:35:15.000Z'
    stamps = [_common.utc_stamp(1796373315 + step / 7.0) for step in range(20)]
    assert stamps == sorted(stamps) and len(_common.utc_stamp()) == len(stamps[0])
