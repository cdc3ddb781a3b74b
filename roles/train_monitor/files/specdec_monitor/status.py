# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The training monitor: the run's status (Monitor), shared by all requests.

Progress is read from the log by the collection's _train_log (installed beside the program): one refresh at a time
reads at most READ_LIMIT_BYTES of what the log gained; the curves come from an index of the whole log's metric
points, read on by at most INDEX_READ_BYTES per request. The run's state comes from systemd (`systemctl show`), or,
where PID 1 is not systemd, from the run's folder of specdec's supervisor, read by the collection's _supervisor
(installed beside the program too); unit_state and service_state give the same states either way.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import threading
import time

import _supervisor  # pylint: disable=import-error
from _train_log import MetricIndex, TrainLog  # pylint: disable=import-error

from .evaluation import EVALUATION, Evaluation
from .gpus import GPU_HISTORY, unit_environment, visible_devices


UNIT_PROPERTIES = ('LoadState', 'ActiveState', 'SubState', 'Result', 'ExecMainStatus', 'ExecMainCode',
                   'ExecMainStartTimestamp', 'ExecMainExitTimestamp')
# The most one refresh reads of the log: a log (at start) or a burst bigger than this is read from its last part.
READ_LIMIT_BYTES = 1024 * 1024
CHUNK_BYTES = 256 * 1024
# The most one history request or event reads of the log into the index, and the most points one answer carries.
INDEX_READ_BYTES = 1024 * 1024
HISTORY_POINTS = 100000


# What /files/ serves of the run folder besides the log (--log): the files the page and its links read, nothing else.
SERVED_FILES = (EVALUATION, GPU_HISTORY)


def unit_state(props):
    """The run's state from `systemctl show` properties: running, succeeded, failed, stopped, stopping, not started
    or unknown (no such unit)."""
    load, active = props.get('LoadState'), props.get('ActiveState')
    if load in (None, '', 'not-found'):
        return 'unknown'
    if active in ('active', 'activating', 'reloading'):
        return 'running'
    if active == 'deactivating':
        return 'stopping'
    if active == 'failed':
        return 'failed'
    if not props.get('ExecMainStartTimestamp'):
        return 'not started'
    if props.get('Result', 'success') != 'success':
        return 'failed'
    if props.get('ExecMainStatus', '0') == '0':
        return 'succeeded'
    # Killed by SIGTERM (systemctl stop) counts as success for systemd: the run was stopped, not finished.
    return 'stopped'


def service_state(service):
    """(state, unit details) of the run from specdec's supervisor (a status of _supervisor.status()), in the words of
    unit_state() and `systemctl show`: the page shows the same on both backends."""
    state, code, number = service.get('state'), service.get('exit_code'), service.get('signal')
    detail = {
        'load_state': 'not-found' if state in (None, 'not-found') else 'loaded',
        'active_state': None, 'sub_state': None, 'result': None,
        'exit_status': code if code is not None else number,
        'started': service.get('started'), 'exited': service.get('finished'), 'error': service.get('error'),
    }
    if state == 'running':
        detail.update(active_state='active', sub_state='running')
        return 'running', detail
    if state == 'inactive':
        detail.update(active_state='inactive', sub_state='dead')
        return 'not started', detail
    if state == 'exited':
        detail.update(active_state='inactive', sub_state='dead', result='success')
        return 'succeeded', detail
    if state == 'failed':
        if number == signal.SIGTERM and not service.get('error'):
            # as systemd counts it: stopped (the supervisor's stop), not finished
            detail.update(active_state='inactive', sub_state='dead', result='success')
            return 'stopped', detail
        result = 'exit-code' if code is not None else 'signal' if number is not None else 'lost'
        detail.update(active_state='failed', sub_state='failed', result=result)
        return 'failed', detail
    return 'unknown', detail


def parse_show(text):
    props = {}
    for line in text.splitlines():
        key, sep, value = line.partition('=')
        if sep:
            props[key] = value
    return props


class Monitor:
    """The run's status, read incrementally from its log and from systemd or the supervisor, shared by all requests.

    One refresh at a time reads the unit and the log (under `_refreshing`, which no request waits for once there is
    a status); every request gets the status of the latest refresh.
    """

    def __init__(self, run_dir, unit, name, log_name='train.log', tail=40, systemctl='systemctl', unit_ttl=1.0,
                 backend='systemd', state_dir=_supervisor.DEFAULT_STATE_DIR):
        self.run_dir = os.path.realpath(run_dir)
        self.unit = unit
        self.backend = backend
        self.service_dir = os.path.join(state_dir, unit)
        self.name = name
        self.log_name = log_name
        self.tail = tail
        self.systemctl = systemctl
        self.unit_ttl = unit_ttl
        self._refreshing = threading.Lock()
        self._status = None
        self._log = TrainLog()
        self._offset = 0
        self._inode = None
        self._log_bytes = 0
        self._log_mtime = None
        self._read_bytes = 0
        self._unit_props = {}
        self._service = None
        self._unit_read = 0.0
        self._indexing = threading.Lock()
        self._index = MetricIndex()
        self._index_offset = 0
        self._index_inode = None
        self._index_bytes = 0
        self._index_generation = 0
        self.gpu_watch = None
        self.evaluation = Evaluation(self.run_dir)

    def run_devices(self):
        """The run's GPUs: CUDA_VISIBLE_DEVICES of its supervisor definition or its unit's Environment=."""
        if self.backend == 'supervisor':
            definition = _supervisor.read_json(os.path.join(self.service_dir, _supervisor.DEFINITION)) or {}
            return visible_devices((definition.get('env') or {}).get('CUDA_VISIBLE_DEVICES'))
        try:
            result = subprocess.run([self.systemctl, 'show', '--property=Environment', '--value', '--', self.unit],
                                    capture_output=True, text=True, timeout=10, check=False, env=dict(os.environ, LC_ALL='C'))
        except (OSError, subprocess.SubprocessError):
            return []
        return visible_devices(unit_environment(result.stdout.strip()).get('CUDA_VISIBLE_DEVICES'))

    def _index_log(self, budget=INDEX_READ_BYTES):
        """Read at most `budget` more bytes of the log into the metric index (a new or truncated log: a new index)."""
        path = os.path.join(self.run_dir, self.log_name)
        try:
            handle = open(path, 'rb')  # pylint: disable=consider-using-with
        except OSError:
            return
        with handle:
            info = os.fstat(handle.fileno())
            if info.st_ino != self._index_inode or info.st_size < self._index_offset:
                self._index, self._index_inode, self._index_offset = MetricIndex(), info.st_ino, 0
                self._index_generation += 1
            self._index_bytes = info.st_size
            end = min(info.st_size, self._index_offset + budget)
            handle.seek(self._index_offset)
            while self._index_offset < end:
                chunk = handle.read(min(CHUNK_BYTES, end - self._index_offset))
                if not chunk:
                    break
                self._index.feed(chunk)
                self._index_offset += len(chunk)

    def history_id(self):
        """Names this log's index: a cursor of another one (a new or truncated log) starts over."""
        return '%s.%d' % (self._index_inode, self._index_generation)

    def history(self, since=0, of=None, limit=HISTORY_POINTS, wait=True):
        """The metric points after the first `since` of the log's index (read on by this request), or None while
        another request reads it and `wait` is false. A cursor `of` another index (history_id) starts at 0."""
        if not self._indexing.acquire(blocking=wait):  # pylint: disable=consider-using-with
            return None
        try:
            self._index_log()
            if of is not None and of != self.history_id():
                since = 0
            answer = self._index.points(since, limit)
            answer.update({
                'id': self.history_id(),
                'names': list(self._index.names),
                'total': len(self._index),
                'log_bytes': self._index_bytes,
                'indexed_bytes': self._index_offset,
                # caught up: every point of the log read so far is in this answer
                'complete': self._index_offset >= self._index_bytes and answer['next'] == len(self._index),
                'full': self._index.full,
            })
            return answer
        finally:
            self._indexing.release()

    def _read_log(self):
        """Read what the log gained since the last read, at most READ_LIMIT_BYTES of it (its end)."""
        self._read_bytes = 0
        path = os.path.join(self.run_dir, self.log_name)
        try:
            handle = open(path, 'rb')  # pylint: disable=consider-using-with
        except OSError:
            return
        with handle:
            info = os.fstat(handle.fileno())
            if info.st_ino != self._inode or info.st_size < self._offset:
                # A new or truncated log: start again.
                self._log, self._inode, self._offset = TrainLog(), info.st_ino, 0
            self._log_bytes, self._log_mtime = info.st_size, info.st_mtime
            end = info.st_size  # what it gains while this read runs is for the next one
            if end - self._offset > READ_LIMIT_BYTES:
                start = end - READ_LIMIT_BYTES
                handle.seek(start - 1)
                self._log.skip(start - self._offset, cut=handle.read(1) not in (b'\n', b'\r'))
                self._offset = start
            handle.seek(self._offset)
            while self._offset < end:
                chunk = handle.read(min(CHUNK_BYTES, end - self._offset))
                if not chunk:
                    break
                self._log.feed(chunk)
                self._offset += len(chunk)
                self._read_bytes += len(chunk)

    def _read_unit(self):
        now = time.monotonic()
        if (self._unit_props or self._service) and now - self._unit_read < self.unit_ttl:
            return
        if self.backend == 'supervisor':
            self._service = _supervisor.status(self.service_dir)
            self._unit_read = now
            return
        try:
            result = subprocess.run(
                [self.systemctl, 'show', '--property=' + ','.join(UNIT_PROPERTIES), '--', self.unit],
                capture_output=True, text=True, timeout=10, check=False, env=dict(os.environ, LC_ALL='C'))
            self._unit_props = parse_show(result.stdout) if result.returncode == 0 else {}
        except (OSError, subprocess.SubprocessError):
            self._unit_props = {}
        self._unit_read = now

    def status(self):
        """The latest status: refreshed by this request, or, while another refreshes it, the one before."""
        # Only the very first requests wait (for the first status); the refresh they wait for is bounded too.
        if self._refreshing.acquire(blocking=self._status is None):  # pylint: disable=consider-using-with
            try:
                self._status = self._refresh()
            finally:
                self._refreshing.release()
        return dict(self._status, now=time.time())

    def _refresh(self):
        # The unit first: once it shows the run ended, the log read after it holds the run's last line.
        self._read_unit()
        self._read_log()
        status = self._log.status(tail=self.tail)
        state, detail = self._state()
        status.update({
            'run': self.name,
            'unit': self.unit,
            'backend': self.backend,
            'state': state,
            'unit_state': detail,
            'log_file': self.log_name,
            'log_bytes': self._log_bytes,
            'log_updated': self._log_mtime,
            # bytes of the log this status cost, and those left unread (bursts bigger than READ_LIMIT_BYTES)
            'log_read_bytes': self._read_bytes,
            'log_skipped_bytes': self._log.skipped_bytes,
        })
        if self.gpu_watch is not None:
            status['gpu'] = self.gpu_watch.snapshot()
        return status

    def _state(self):
        """(state, unit details) from the last read of systemd or the supervisor."""
        if self.backend == 'supervisor':
            return service_state(self._service or {})
        props = dict(self._unit_props)
        return unit_state(props), {
            'load_state': props.get('LoadState') or None,
            'active_state': props.get('ActiveState') or None,
            'sub_state': props.get('SubState') or None,
            'result': props.get('Result') or None,
            'exit_status': int(props['ExecMainStatus']) if props.get('ExecMainStatus', '').isdigit() else None,
            'started': props.get('ExecMainStartTimestamp') or None,
            'exited': props.get('ExecMainExitTimestamp') or None,
            'error': None,
        }

    def served(self):
        """The names /files/ may serve: the log and SERVED_FILES (an allow-list; never a script, a secret, run.json)."""
        return tuple(name for name in (self.log_name,) + SERVED_FILES if name and '/' not in name and not name.startswith('.'))

    def files(self):
        """The served files that are in the run folder, name -> size (each a top-level regular file, not a symlink,
        not executable)."""
        entries = {}
        for name in self.served():
            try:
                info = os.lstat(os.path.join(self.run_dir, name))
            except (OSError, ValueError):
                continue
            if stat.S_ISREG(info.st_mode) and not info.st_mode & 0o111:
                entries[name] = info.st_size
        return dict(sorted(entries.items()))

    def open_file(self, name):
        """An open binary file of the run folder, or None: one served file (files()), by exact name."""
        if not name or name.startswith('.') or any(char in name for char in '/\\\x00') or name not in self.served():
            return None
        try:
            descriptor = os.open(os.path.join(self.run_dir, name), os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0))
        except OSError:
            return None
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_mode & 0o111:
            os.close(descriptor)
            return None
        return os.fdopen(descriptor, 'rb')
