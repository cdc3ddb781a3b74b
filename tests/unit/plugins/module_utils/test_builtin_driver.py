# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""_builtin_driver: the raw log, the progress row and how a run is waited for. The whole driver runs over real HTTP
in tests/unit/plugins/modules/test_bench_run.py."""

from __future__ import annotations

import json

from ansible_collections.specdec.bench.plugins.module_utils._stage import builtin_driver as _builtin_driver
from ansible_collections.specdec.bench.plugins.module_utils._stage.builtin_driver import RawLog, drive, progress_row
from ansible_collections.specdec.bench.plugins.module_utils._stage.harness import RESULT_KEYS

PARAMS = dict(concurrency=2, num_prompts=4, input_len=8, output_len=4, request_rate=None, seed=1, stage='tp1-x')


def record(index, success=True, warmup=False):
    return {'index': index, 'success': success, 'warmup': warmup, 'error': None if success else 'boom'}


def lines(path):
    with open(path, encoding='utf-8') as handle:
        text = handle.read()
    assert text == '' or text.endswith('\n')
    return [json.loads(line) for line in text.splitlines()]


def test_the_raw_log_appends_only_what_it_has_not_written(tmp_path):
    path = str(tmp_path / 'raw-random-t0-c2.jsonl')
    (tmp_path / 'raw-random-t0-c2.jsonl').write_text('an older run\n')
    raw = RawLog(path)
    assert lines(path) == []  # a new run starts it afresh
    raw.append([record(0)])
    raw.append([record(0), record(1, False)])
    raw.append([record(0), record(1, False)])
    raw.close()
    assert lines(path) == [record(0), record(1, False)]


def test_the_progress_row_counts_the_measured_requests_so_far():
    row = progress_row(PARAMS, [record(0, warmup=True), record(0), record(1, False), record(2)], '/r/raw-random-t0-c2.jsonl')
    assert set(row) == set(RESULT_KEYS)
    assert (row['harness'], row['completed'], row['failed'], row['complete']) == ('builtin', 2, 2, False)
    assert (row['raw_file'], row['stage'], row['errors'], row['mean_ttft_ms']) == ('/r/raw-random-t0-c2.jsonl', 'tp1-x', [], None)


class FakeRun:
    """A LoadRun whose requests finish one per wait(); `hang` keeps it from ever ending."""

    def __init__(self, count, hang=False):
        self.pending = [record(index) for index in range(count)]
        self.records = []
        self.hang = hang

    def wait(self, _timeout):
        if self.pending:
            self.records.append(self.pending.pop(0))
        return not self.pending and not self.hang


def test_drive_checkpoints_every_finished_request_then_returns_them_all(tmp_path, monkeypatch):
    monkeypatch.setattr(_builtin_driver, 'CHECKPOINT_SECONDS', 0.0)
    raw = RawLog(str(tmp_path / 'raw.jsonl'))
    checkpoints = []
    warmup = [record(0, warmup=True)]
    records = drive(FakeRun(3), raw, warmup, 60, lambda snapshot: checkpoints.append(len(snapshot)))
    raw.close()
    assert records == warmup + [record(0), record(1), record(2)]
    assert checkpoints == [2, 3]  # the last request is written once the run ended, with no checkpoint
    assert lines(str(tmp_path / 'raw.jsonl')) == records


def test_drive_gives_up_a_run_that_outlives_its_deadline_with_what_finished(tmp_path, monkeypatch):
    monkeypatch.setattr(_builtin_driver, 'CHECKPOINT_SECONDS', 0.0)
    monkeypatch.setattr(_builtin_driver, 'STOP_GRACE_S', 0.0)
    raw = RawLog(str(tmp_path / 'raw.jsonl'))
    run = FakeRun(2, hang=True)
    records = drive(run, raw, [], 0.05)
    raw.close()
    assert records == [record(0), record(1)] and lines(str(tmp_path / 'raw.jsonl')) == records
