# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The training monitor: the run folder's evaluation file (playbooks/evaluate.yml copies it there), untrusted input.

It is read again only when its inode, size or mtime changed (one lstat per check), at most EVALUATION_BYTES of it,
never through a symlink; a missing file is "no evaluation yet", a bad one (too big, not UTF-8, not JSON, not an
object, a field of the wrong type) an error string the page shows, never a 500.
"""

from __future__ import annotations

import json
import os
import stat
import threading
import time


# The summary of the latest evaluation of the run's checkpoints, in the run folder, and the most of it that is read.
EVALUATION = 'evaluation.json'
EVALUATION_BYTES = 1024 * 1024
# Its top-level fields and the JSON types each may hold (absent or null: any of them may be).
EVALUATION_FIELDS = (('campaign', str, 'a string'), ('generated', str, 'a string (UTC ISO time)'), ('run', str, 'a string'),
                     ('best', dict, 'an object'), ('checkpoints', list, 'a list of objects'), ('report', str, 'a string'))


def _json_type(value):
    """The JSON name of a parsed value's type, for error messages."""
    for kind, name in ((dict, 'an object'), (list, 'a list'), (str, 'a string'), (bool, 'a boolean'),
                       (int, 'a number'), (float, 'a number')):
        if isinstance(value, kind):
            return name
    return 'null'


def parse_evaluation(data, name=EVALUATION):
    """(summary, error) of an evaluation file's bytes: the parsed object, or None and what is wrong with it.
    NaN and Infinity (Python's json writes them) become null: the page's JSON.parse would refuse the whole answer."""
    try:
        text = data.decode('utf-8')
    except UnicodeDecodeError as error:
        return None, '%s is not UTF-8 text: %s' % (name, error)
    try:
        summary = json.loads(text, parse_constant=lambda _constant: None)
    except ValueError as error:
        return None, '%s is not valid JSON: %s' % (name, error)
    except RecursionError:
        return None, '%s is not valid JSON: nested too deeply' % name
    if not isinstance(summary, dict):
        return None, '%s holds %s, expected an object with %s' % (
            name, _json_type(summary), ', '.join(field for field, _kind, _what in EVALUATION_FIELDS))
    for field, kind, what in EVALUATION_FIELDS:
        value = summary.get(field)
        if value is not None and not isinstance(value, kind):
            return None, '%s: %s is %s, expected %s or null' % (name, field, _json_type(value), what)
    for number, entry in enumerate(summary.get('checkpoints') or ()):
        if not isinstance(entry, dict):
            return None, '%s: checkpoints[%d] is %s, expected an object' % (name, number, _json_type(entry))
    return summary, None


class Evaluation:
    """The run folder's evaluation file, as /api/evaluation and the `evaluation` events give it.

    Read again only when its inode, size, mtime or type changed (one lstat per check, shared by all clients), at most
    `limit` bytes, never through a symlink. `version` grows with every change of the answer (the event streams compare
    it, not the answer)."""

    def __init__(self, run_dir, name=EVALUATION, limit=EVALUATION_BYTES):
        self.name = name
        self.path = os.path.join(run_dir, name)
        self.limit = limit
        self.version = 0
        self.reads = 0  # how often the file was read (not merely checked): the cache's measure
        self._lock = threading.Lock()
        self._key = False  # nothing checked yet (None: checked, no file)
        self._answer = None
        self._raw = None

    def read(self):
        """(answer, raw, version): {present, error, summary, mtime, bytes}, the file's bytes (None when there is no
        file or it is too big) and the answer's version, checked now and read again only if it changed."""
        with self._lock:
            try:
                info = os.lstat(self.path)
                key = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_mode)
            except FileNotFoundError:
                info, key = None, None
            except OSError as error:
                info, key = None, ('lstat', str(error))
            if key != self._key:
                answer, self._raw, stable = self._load(info, key)
                # a file that changed while it was read is read again at the next check
                self._key = key if stable else ('changing', time.monotonic())
                if answer != self._answer:
                    self._answer = answer
                    self.version += 1
            return dict(self._answer), self._raw, self.version

    def _load(self, info, key):
        """(answer, raw bytes or None, whether the file was the same before and after the read)."""
        answer = {'present': False, 'error': None, 'summary': None, 'mtime': None, 'bytes': None}
        if key is None:
            return answer, None, True
        if info is None:
            return dict(answer, error='%s cannot be read: %s' % (self.name, key[1])), None, True
        if not stat.S_ISREG(info.st_mode):
            what = 'a symlink' if stat.S_ISLNK(info.st_mode) else 'not a regular file'
            return dict(answer, error='%s is %s: not read' % (self.name, what)), None, True
        try:
            descriptor = os.open(self.path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_NONBLOCK', 0))
        except FileNotFoundError:
            return answer, None, False
        except OSError as error:
            return dict(answer, error='%s cannot be read: %s' % (self.name, error.strerror or error)), None, True
        with os.fdopen(descriptor, 'rb') as handle:
            before = os.fstat(handle.fileno())
            if not stat.S_ISREG(before.st_mode):
                return dict(answer, error='%s is not a regular file: not read' % self.name), None, False
            answer.update(present=True, mtime=before.st_mtime, bytes=before.st_size)
            if before.st_size > self.limit:
                return dict(answer, error='%s is %d bytes, more than the %d the monitor reads' % (
                    self.name, before.st_size, self.limit)), None, True
            self.reads += 1
            data = handle.read(self.limit + 1)
            after = os.fstat(handle.fileno())
        stable = (before.st_ino, before.st_size, before.st_mtime_ns, before.st_mode) == key and \
            (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns) and len(data) == before.st_size
        if len(data) > self.limit:
            return dict(answer, bytes=len(data), error='%s is more than the %d bytes the monitor reads' % (
                self.name, self.limit)), None, stable
        summary, error = parse_evaluation(data, self.name)
        return dict(answer, summary=summary, error=error), data, stable
