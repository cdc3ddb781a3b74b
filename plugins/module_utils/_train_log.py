# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Progress of a training run, read from its log. Private to the specdec.bench collection.

Two line formats are understood, as trainers write them:

- tqdm bars: ``Epoch 0:  45%|####5     | 45/100 [00:12<00:15,  3.61it/s, loss=2.31]`` (rewritten in place with
  carriage returns, so every ``\\r`` ends a line too);
- JSON lines: ``{"step": 45, "total_steps": 100, "loss": 2.31, "time": 1764680000.0}``.

Everything else is a plain log line. Lines are untrusted text: they are decoded leniently, stripped of terminal
escapes and control characters and cut to a bounded length, and metrics are only ever finite numbers.
Standard library only: the monitoring service on the training host imports this file as it is.
"""

from __future__ import annotations

import array
import codecs
import collections
import functools
import json
import math
import re

MAX_LINE_CHARS = 1000
TAIL_LINES = 200
RATE_WINDOW = 20
# Keys a JSON line may give its step, total and time under, in order of preference.
STEP_KEYS = ('step', 'global_step', 'iteration', 'iter')
TOTAL_KEYS = ('total_steps', 'max_steps', 'num_steps', 'total')
TIME_KEYS = ('time', 'timestamp', 'ts')
LOSS_KEYS = ('loss', 'train_loss', 'train/loss', 'loss_total')
MAX_METRICS = 16
MAX_KEY_CHARS = 40
# The most points a MetricIndex keeps (about 18 bytes each): a longer history stops growing, and says so.
MAX_POINTS = 4000000

_ANSI_RE = re.compile(r'\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]')
_CONTROL_RE = re.compile(r'[\x00-\x08\x0b-\x1f\x7f]')
_TQDM_RE = re.compile(
    r'^(?P<desc>.*?)(?::\s*)?\s*(?P<pct>\d{1,3})%\|(?P<bar>[^|]*)\|\s*'
    r'(?P<n>\d+(?:\.\d+)?[kMGT]?)/(?P<total>\d+(?:\.\d+)?[kMGT]?)\s*'
    r'\[(?P<elapsed>[\d:]+)<(?P<remaining>[\d:]+|\?),\s*'
    r'(?P<rate>\d+(?:\.\d+)?[kMGT]?|\?)\s*(?P<unit>[A-Za-z_]+/s|s/[A-Za-z_]+)'
    r'(?:,\s*(?P<postfix>[^\]]*))?\]\s*$'
)
_POSTFIX_RE = re.compile(r'([A-Za-z_][\w./-]*)=\s*([^,]+)')
_SCALE = {'': 1, 'k': 1e3, 'M': 1e6, 'G': 1e9, 'T': 1e12}
_ERROR_RE = re.compile(r'(Error|Exception|Traceback \(most recent call last\)|CUDA error|Killed)')


def clean_line(text):
    """One log line as safe plain text: no terminal escapes or control characters, at most MAX_LINE_CHARS."""
    # Cut first, with room for escapes to drop out, so a huge line costs no more than a long one.
    if isinstance(text, bytes):
        text = text[:16 * MAX_LINE_CHARS].decode('utf-8', errors='replace')
    text = text[:4 * MAX_LINE_CHARS]
    if not text.isprintable():
        text = _CONTROL_RE.sub('', _ANSI_RE.sub('', text))
    text = text.rstrip()
    if len(text) > MAX_LINE_CHARS:
        text = text[:MAX_LINE_CHARS - 1] + '\u2026'
    return text


def _number(value):
    """A finite float from a number or numeric string, else None (no NaN, infinity, bool or nested value)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str) and len(value) <= 40:
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _scaled(text):
    """tqdm's unit_scale numbers: 1.2k -> 1200."""
    suffix = text[-1] if text and text[-1] in _SCALE else ''
    return float(text[:len(text) - len(suffix)]) * _SCALE[suffix]


def parse_duration(text):
    """tqdm's [H:]MM:SS as seconds; None for '?'."""
    if not text or text == '?':
        return None
    seconds = 0
    for part in text.split(':'):
        seconds = seconds * 60 + int(part)
    return seconds


@functools.lru_cache(maxsize=1024)
def _metric_key(key):
    key = clean_line(str(key))
    return key[:MAX_KEY_CHARS] if key else None


def _metrics(pairs):
    metrics = {}
    for key, value in pairs:
        name = _metric_key(key)
        number = _number(value)
        if name and number is not None and len(metrics) < MAX_METRICS:
            metrics[name] = number
    return metrics


def parse_tqdm(line):
    """A tqdm bar as {'step', 'total', 'rate', 'elapsed', 'remaining', 'desc', 'metrics'}, or None."""
    match = _TQDM_RE.match(line) if '%|' in line else None
    if not match:
        return None
    step, total = _scaled(match.group('n')), _scaled(match.group('total'))
    if total <= 0 or step < 0:
        return None
    rate = None
    if match.group('rate') != '?':
        value = _scaled(match.group('rate'))
        rate = value if match.group('unit').endswith('/s') else (1.0 / value if value > 0 else None)
    postfix = match.group('postfix') or ''
    return {
        'format': 'tqdm',
        'step': int(step) if step.is_integer() else step,
        'total': int(total) if total.is_integer() else total,
        'rate': rate,
        'rate_unit': match.group('unit').split('/')[0] if match.group('unit').endswith('/s') else match.group('unit')[2:],
        'elapsed': parse_duration(match.group('elapsed')),
        'remaining': parse_duration(match.group('remaining')),
        'desc': clean_line(match.group('desc').strip().rstrip(':'))[:80],
        'metrics': _metrics(_POSTFIX_RE.findall(postfix)),
    }


def _first(record, keys):
    for key in keys:
        if key in record:
            number = _number(record[key])
            if number is not None:
                return number
    return None


def parse_json(line):
    """A JSON metrics line as {'step', 'total', 'time', 'epoch', 'metrics'}, or None when it is not one."""
    text = line.strip()
    if not (text.startswith('{') and text.endswith('}')):
        return None
    try:
        record = json.loads(text)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    step = _first(record, STEP_KEYS)
    total = _first(record, TOTAL_KEYS)
    skip = set(STEP_KEYS + TOTAL_KEYS + TIME_KEYS + ('epoch',))
    metrics = _metrics((key, value) for key, value in record.items() if key not in skip)
    if step is None and not metrics:
        return None
    return {
        'format': 'json',
        'step': int(step) if step is not None and step.is_integer() else step,
        'total': int(total) if total is not None and total.is_integer() and total > 0 else None,
        'time': _first(record, TIME_KEYS),
        'epoch': _first(record, ('epoch',)),
        'metrics': metrics,
    }


def _size_text(size):
    if size < 1024:
        return '%d bytes' % size
    if size < 1024 * 1024:
        return '%.1f KiB' % (size / 1024.0)
    return '%.1f MiB' % (size / 1048576.0)


def split_lines(text):
    """Lines ended by \\n, \\r\\n or a lone \\r (how tqdm rewrites its bar), and the unfinished rest."""
    parts = re.split(r'\r\n|\r|\n', text)
    return parts[:-1], parts[-1]


def _loss(metrics):
    for key in LOSS_KEYS:
        if key in metrics:
            return metrics[key]
    return None


class TrainLog:
    """The state of a run read from its log, fed incrementally (bytes or text) as the log grows."""

    def __init__(self, tail_lines=TAIL_LINES):
        self.lines = collections.deque(maxlen=tail_lines)
        self.line_count = 0
        self._pending = ''
        self._decoder = codecs.getincrementaldecoder('utf-8')(errors='replace')
        self._last_bar = False
        self.progress = None
        self.metrics = {}
        self.loss = None
        self.last_error = None
        self.epoch = None
        self.skipped_bytes = 0
        self._history = collections.deque(maxlen=RATE_WINDOW)
        self._cut = False

    def skip(self, size, cut=True):
        """Leave out the next `size` bytes of the log (a part too big to read), and show the gap in the tail. The
        line the gap cuts (unless `cut` is false: the gap ends at a line end) is dropped on both sides."""
        self._pending = ''
        self._decoder.reset()
        self._cut = cut
        self._last_bar = False
        self.skipped_bytes += size
        self.lines.append('[... %s of the log not read ...]' % _size_text(size))

    def feed(self, data):
        """Add the next chunk of the log."""
        if self._cut:
            # After a gap: drop the rest of the cut line, before decoding, so no half character is read.
            newline, carriage = (b'\n', b'\r') if isinstance(data, bytes) else ('\n', '\r')
            ends = [index for index in (data.find(newline), data.find(carriage)) if index >= 0]
            if not ends:
                return
            data, self._cut = data[min(ends) + 1:], False
        if isinstance(data, bytes):
            # An incremental decoder keeps a UTF-8 sequence cut between two chunks for the next one.
            data = self._decoder.decode(data)
        lines, self._pending = split_lines(self._pending + data)
        for line in lines:
            self._add(line)
        if len(self._pending) > 4 * MAX_LINE_CHARS:
            self._add(self._pending)
            self._pending = ''

    def _add(self, raw):
        line = clean_line(raw)
        if not line:
            return
        self.line_count += 1
        parsed = parse_tqdm(line)
        is_bar = parsed is not None
        if parsed is None:
            parsed = parse_json(line)
        if parsed is not None:
            self._update(parsed)
        elif _ERROR_RE.search(line):
            self.last_error = line
        # A bar rewritten in place is one line on screen, not one per update.
        if is_bar and self._last_bar and self.lines:
            self.lines[-1] = line
        else:
            self.lines.append(line)
        self._last_bar = is_bar

    def _update(self, parsed):
        if parsed['metrics']:
            self.metrics.update(parsed['metrics'])
            loss = _loss(parsed['metrics'])
            if loss is not None:
                self.loss = loss
        if parsed['format'] == 'json' and parsed['epoch'] is not None:
            self.epoch = parsed['epoch']
        if parsed['step'] is None:
            return
        previous = self.progress or {}
        total = parsed['total'] or previous.get('total')
        progress = {
            'step': parsed['step'],
            'total': total,
            'source': parsed['format'],
            'rate': None,
            'rate_unit': 'step',
            'eta_seconds': None,
            'elapsed_seconds': None,
            'desc': previous.get('desc'),
        }
        if parsed['format'] == 'tqdm':
            progress.update(rate=parsed['rate'], rate_unit=parsed['rate_unit'], eta_seconds=parsed['remaining'],
                            elapsed_seconds=parsed['elapsed'], desc=parsed['desc'] or None)
        else:
            if parsed['time'] is not None:
                if self._history and (parsed['step'] < self._history[-1][1] or parsed['time'] < self._history[-1][0]):
                    self._history.clear()  # a restart or a new phase
                self._history.append((parsed['time'], parsed['step']))
            rate = self._rate()
            # The same run keeps the bar's elapsed time, and its last rate when JSON lines carry no time.
            if previous.get('total') == total and (previous.get('step') or 0) <= parsed['step']:
                progress['elapsed_seconds'] = previous.get('elapsed_seconds')
                if rate is None:
                    rate = previous.get('rate')
            progress['rate'] = rate
            if rate and total is not None and total >= parsed['step']:
                progress['eta_seconds'] = (total - parsed['step']) / rate
        self.progress = progress

    def _rate(self):
        if len(self._history) < 2:
            return None
        (first_time, first_step), (last_time, last_step) = self._history[0], self._history[-1]
        if last_time <= first_time or last_step <= first_step:
            return None
        return (last_step - first_step) / (last_time - first_time)

    def status(self, tail=40):
        """What a monitor shows: progress (with percent), latest metrics and loss, the last lines, the last error."""
        lines = list(self.lines)
        pending = clean_line(self._pending)
        progress = dict(self.progress) if self.progress else None
        metrics = dict(self.metrics)
        loss = self.loss
        # The bar being drawn right now has no line end yet: show it, without committing it.
        if pending:
            drawing = parse_tqdm(pending)
            if drawing is not None:
                progress = {'step': drawing['step'], 'total': drawing['total'], 'source': 'tqdm', 'rate': drawing['rate'],
                            'rate_unit': drawing['rate_unit'], 'eta_seconds': drawing['remaining'],
                            'elapsed_seconds': drawing['elapsed'], 'desc': drawing['desc'] or None}
                metrics.update(drawing['metrics'])
                loss = _loss(drawing['metrics']) if _loss(drawing['metrics']) is not None else loss
                if self._last_bar and lines:
                    lines[-1] = pending
                else:
                    lines.append(pending)
            else:
                lines.append(pending)
        if progress is not None:
            total, step = progress.get('total'), progress.get('step')
            progress['percent'] = round(min(100.0, 100.0 * step / total), 1) if total and step is not None else None
        return {
            'progress': progress,
            'epoch': self.epoch,
            'loss': loss,
            'metrics': metrics,
            'last_error': self.last_error,
            'lines': lines[-tail:] if tail else [],
            'line_count': self.line_count,
        }


class MetricIndex:
    """Every numeric metric of a log against its step: points appended as the log is fed, in log order.

    Point number n (a cursor: points(since=n) is what came after the first n) is a (metric, step, value). A metric
    line without a step (a JSON line with metrics only) counts at the last step seen. The same lines as TrainLog
    reads (tqdm bars, JSON lines), cleaned the same way; at most MAX_METRICS names and MAX_POINTS points.
    """

    def __init__(self, max_points=MAX_POINTS):
        self.names = []
        self._ids = {}
        self._metric = array.array('H')
        self._steps = array.array('d')
        self._values = array.array('d')
        self._pending = ''
        self._decoder = codecs.getincrementaldecoder('utf-8')(errors='replace')
        self.step = None
        self.max_points = max_points
        self.full = False

    def __len__(self):
        return len(self._steps)

    def feed(self, data):
        """Add the next chunk of the log (bytes or text)."""
        if isinstance(data, bytes):
            data = self._decoder.decode(data)
        lines, self._pending = split_lines(self._pending + data)
        for line in lines:
            self._add(line)
        if len(self._pending) > 4 * MAX_LINE_CHARS:
            self._add(self._pending)
            self._pending = ''

    def _add(self, raw):
        if '%|' not in raw and '{' not in raw:
            return  # neither a bar nor a JSON line: the common plain line costs no parsing
        line = clean_line(raw)
        parsed = parse_tqdm(line) or parse_json(line)
        if parsed is None:
            return
        if parsed['step'] is not None:
            self.step = parsed['step']
        if self.step is None:
            return
        for name, value in parsed['metrics'].items():
            if len(self._steps) >= self.max_points:
                self.full = True
                return
            index = self._ids.get(name)
            if index is None:
                if len(self.names) >= MAX_METRICS:
                    continue
                index = self._ids[name] = len(self.names)
                self.names.append(name)
            self._metric.append(index)
            self._steps.append(self.step)
            self._values.append(value)

    def points(self, since=0, limit=None):
        """{'from', 'next', 'series': {name: [[step, value], ...]}}: the points after the first `since`, at most
        `limit` of them; `next` is the cursor to ask with next time."""
        total = len(self._steps)
        since = max(0, min(int(since), total))
        end = total if limit is None else min(total, since + max(0, int(limit)))
        series = {}
        names, metric, steps, values = self.names, self._metric, self._steps, self._values
        for position in range(since, end):
            series.setdefault(names[metric[position]], []).append([steps[position], values[position]])
        return {'from': since, 'next': end, 'series': series}


def read_status(text, tail=40):
    """The status of a whole log given at once (tests, one-shot readers)."""
    log = TrainLog()
    log.feed(text)
    return log.status(tail=tail)
