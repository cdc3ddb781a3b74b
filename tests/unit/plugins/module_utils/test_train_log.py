# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The training log parser: tqdm bars and JSON lines as trainers write them, fed in pieces, and hostile lines."""

from __future__ import annotations

import json

import pytest

from ansible_collections.specdec.bench.plugins.module_utils import _train_log as train_log

BAR = 'Epoch 0:  45%|\u2588\u2588\u2588\u2588\u258c     | 45/100 [00:12<00:15,  3.61it/s, loss=2.31, lr=3e-4]'


def test_tqdm_bar():
    parsed = train_log.parse_tqdm(BAR)
    assert parsed == {
        'format': 'tqdm', 'step': 45, 'total': 100, 'rate': 3.61, 'rate_unit': 'it', 'elapsed': 12, 'remaining': 15,
        'desc': 'Epoch 0', 'metrics': {'loss': 2.31, 'lr': 0.0003},
    }


@pytest.mark.parametrize(('line', 'expected'), [
    # slow steps: seconds per step, hours in the elapsed time, unknown remaining time
    (' 45%|####5     | 45/100 [1:02:12<?, 2.50s/it]', {'step': 45, 'rate': 0.4, 'elapsed': 3732, 'remaining': None}),
    # tqdm before the first rate, with no description
    ('  0%|          | 0/500 [00:00<?, ?it/s]', {'step': 0, 'total': 500, 'rate': None}),
    # unit_scale and a custom unit
    ('train: 12%|#2  | 1.2k/10k [00:40<04:53, 30.0step/s]', {'step': 1200, 'total': 10000, 'rate': 30.0, 'rate_unit': 'step'}),
])
def test_tqdm_variants(line, expected):
    parsed = train_log.parse_tqdm(line)
    assert {key: parsed[key] for key in expected} == expected


@pytest.mark.parametrize('line', [
    'plain text', '45%| | 45/100', '{"step": 3}', ' 45%|##| 45/0 [00:01<00:01, 1.00it/s]', '',
])
def test_not_a_bar(line):
    assert train_log.parse_tqdm(line) is None


def test_json_line():
    record = train_log.parse_json('{"step": 40, "total_steps": 200, "epoch": 1, "loss": 2.5, "lr": 0.0003, "time": 100.5}')
    assert record == {'format': 'json', 'step': 40, 'total': 200, 'time': 100.5, 'epoch': 1.0,
                      'metrics': {'loss': 2.5, 'lr': 0.0003}}


@pytest.mark.parametrize('line', [
    'not json', '[1, 2]', '{"step": }', '{"message": "hello"}', '"string"', '{"step": "many"}',
])
def test_not_metrics(line):
    assert train_log.parse_json(line) is None


def test_json_metrics_are_finite_numbers_only():
    record = train_log.parse_json(json.dumps({
        'global_step': 7, 'loss': 'NaN', 'acc': 'Infinity', 'ok': True, 'nested': {'a': 1}, 'list': [1],
        'text': '<b>', 'grad_norm': '1.5', 'x' * 100: 3,
    }))
    assert record['step'] == 7
    assert record['metrics'] == {'grad_norm': 1.5, 'x' * train_log.MAX_KEY_CHARS: 3.0}


def test_progress_from_json_lines_has_rate_and_eta():
    log = train_log.TrainLog()
    for step, when in ((10, 100.0), (20, 105.0), (30, 110.0)):
        log.feed('{"step": %d, "total_steps": 130, "loss": %s, "time": %s}\n' % (step, 3.0 - step / 100, when))
    status = log.status()
    progress = status['progress']
    assert progress['step'] == 30 and progress['total'] == 130 and progress['percent'] == 23.1
    assert progress['rate'] == pytest.approx(2.0) and progress['eta_seconds'] == pytest.approx(50.0)
    assert status['loss'] == pytest.approx(2.7)


def test_a_restart_resets_the_rate_window():
    log = train_log.TrainLog()
    log.feed('{"step": 50, "total_steps": 100, "time": 100}\n{"step": 60, "total_steps": 100, "time": 110}\n')
    log.feed('{"step": 1, "total_steps": 100, "time": 200}\n')
    assert log.status()['progress']['rate'] is None


def test_bar_rewritten_in_place_is_one_line_and_the_unfinished_bar_counts():
    log = train_log.TrainLog()
    log.feed('loading\n\r  10%|#  | 1/10 [00:01<00:09, 1.00it/s, loss=5]\r  20%|## | 2/10 [00:02<00:08, 1.00it/s, loss=4]')
    status = log.status()
    # the second bar has no line end yet: it is shown and counted, in place of the first
    assert status['lines'] == ['loading', '  20%|## | 2/10 [00:02<00:08, 1.00it/s, loss=4]']
    assert status['progress']['step'] == 2 and status['progress']['eta_seconds'] == 8 and status['loss'] == 4
    log.feed('\r\n{"step": 2, "total_steps": 10, "loss": 3.9}\n')
    assert log.status()['lines'][-2:] == ['  20%|## | 2/10 [00:02<00:08, 1.00it/s, loss=4]',
                                          '{"step": 2, "total_steps": 10, "loss": 3.9}']
    assert log.status()['loss'] == 3.9


def test_feeding_in_any_pieces_gives_the_same_status():
    text = ('start\n\r 50%|#####     | 5/10 [00:05<00:05, 1.00it/s, loss=2]\r\n'
            '{"step": 5, "total_steps": 10, "loss": 2.0, "time": 5}\ncaf\u00e9 \u2713 done\n').encode('utf-8')
    whole = train_log.read_status(text)
    for size in (1, 2, 3, 7):
        log = train_log.TrainLog()
        for start in range(0, len(text), size):
            log.feed(text[start:start + size])
        assert log.status() == whole
    assert whole['lines'][-1] == 'caf\u00e9 \u2713 done'


@pytest.mark.parametrize(('raw', 'shown'), [
    # markup stays text here; the page puts it in textContent
    ('<script>alert(1)</script>', '<script>alert(1)</script>'),
    # terminal colours and cursor movement, a bell, NUL and other control characters are dropped
    ('\x1b[31mred\x1b[0m \x1b[2K\x1b]0;title\x07ok\x07\x00\x08!', 'red ok!'),
    # invalid UTF-8 becomes the replacement character
    (b'bad \xff\xfe bytes', 'bad \ufffd\ufffd bytes'),
])
def test_hostile_lines_are_cleaned(raw, shown):
    log = train_log.TrainLog()
    log.feed(raw + (b'\n' if isinstance(raw, bytes) else '\n'))
    assert log.status()['lines'] == [shown]


def test_long_lines_are_cut():
    status = train_log.read_status('x' * 50000 + '\n')
    assert len(status['lines'][0]) == train_log.MAX_LINE_CHARS and status['lines'][0].endswith('\u2026')


def test_a_line_end_never_coming_does_not_grow_without_bound():
    log = train_log.TrainLog()
    for _chunk in range(100):
        log.feed('y' * 1000)
    assert len(log._pending) <= 4 * train_log.MAX_LINE_CHARS  # pylint: disable=protected-access
    assert all(len(line) <= train_log.MAX_LINE_CHARS for line in log.status()['lines'])


def test_a_bar_lookalike_cannot_inject_metrics_or_markup():
    line = '<img src=x onerror=alert(1)>: 50%|##| 5/10 [00:01<00:01, 5.00it/s, loss=<b>1</b>, acc=0.5]'
    parsed = train_log.parse_tqdm(line)
    assert parsed['metrics'] == {'acc': 0.5}
    status = train_log.read_status(line + '\n')
    assert status['metrics'] == {'acc': 0.5} and status['loss'] is None
    assert status['lines'] == [line]


def test_errors_are_noted():
    status = train_log.read_status('Traceback (most recent call last):\n  File "x"\ntorch.OutOfMemoryError: CUDA out of memory\n')
    assert status['last_error'] == 'torch.OutOfMemoryError: CUDA out of memory'


def test_tail_is_bounded():
    status = train_log.read_status(''.join('line %d\n' % number for number in range(1000)), tail=5)
    assert status['lines'] == ['line %d' % number for number in range(995, 1000)] and status['line_count'] == 1000


def test_json_lines_keep_the_bars_elapsed_time():
    status = train_log.read_status(' 10%|#  | 1/10 [00:07<01:03, 0.14it/s]\n{"step": 1, "total_steps": 10}\n'
                                   '{"step": 2, "total_steps": 10}\n')
    assert status['progress']['elapsed_seconds'] == 7 and status['progress']['source'] == 'json'
    assert status['progress']['rate'] == 0.14


def test_a_skipped_part_drops_the_cut_line_on_both_sides_and_shows_the_gap():
    log = train_log.TrainLog()
    log.feed(b'{"step": 1, "total_steps": 10}\nthe start of a cut li')
    log.skip(5 * 1024 * 1024)
    # the gap ends inside a line and inside a character (the last byte of an e-acute): neither part is shown
    for piece in (b'\xa9ne, still', b' the cut line\r\n{"step": 9, "total_steps": 10}\n', b'after\n'):
        log.feed(piece)
    status = log.status()
    assert status['lines'] == ['{"step": 1, "total_steps": 10}', '[... 5.0 MiB of the log not read ...]',
                               '{"step": 9, "total_steps": 10}', 'after']
    assert status['progress']['step'] == 9 and status['line_count'] == 3 and log.skipped_bytes == 5 * 1024 * 1024


def test_a_gap_that_ends_at_a_line_end_keeps_the_next_line():
    log = train_log.TrainLog()
    log.feed('Loading\n')
    log.skip(2048, cut=False)
    log.feed('{"step": 4, "total_steps": 10}\n')
    assert log.status()['lines'] == ['Loading', '[... 2.0 KiB of the log not read ...]', '{"step": 4, "total_steps": 10}']
