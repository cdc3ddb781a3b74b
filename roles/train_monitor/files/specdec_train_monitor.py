# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The live monitoring page of one training run: a read-only web service (Python 3.9+ standard library only).

    python3 specdec_train_monitor.py --run-dir /root/train_runs/NAME --unit specdec-train-NAME.service \
        [--backend supervisor --state-dir /var/lib/specdec/services]

GET /                 the page: run name and state, progress bar, rate, ETA, loss and metrics, last log lines,
                      updated live from /api/events (server-sent events), polling /api/status when that fails
GET /api/status       the same as JSON
GET /api/events       a server-sent event with the status whenever it changes, and `history` events with the metric
                      points the page has not seen (?since=CURSOR, or the Last-Event-ID the browser sends back)
GET /api/history      ?since=CURSOR: the metric points after the first CURSOR of the log's index, as JSON
GET /files/           the run folder's files the page uses (the log, the evaluation, the GPU samples) as JSON;
                      GET /files/NAME one of them as text. Nothing else of the run folder is served (SERVED_FILES)
GET /api/evaluation   the latest evaluation of the run's checkpoints, <run-dir>/evaluation.json (playbooks/evaluate.yml
                      copies it there): {present, error, summary (the parsed JSON, or null), mtime, bytes}; the stream of
                      /api/events carries it as an `evaluation` event whenever it changes
GET /evaluation.json  that file as it is (application/json), the page's link to it
Anything else is 404; any other method (TRACE, PROPFIND, CONNECT, ... included) 405 with `Allow: GET, HEAD` and
the same security headers. Only the run folder's files the page needs are served, by name (an allow-list: the
log, evaluation.json, monitor-gpus.jsonl), each a top-level regular file that is not executable (no path traversal, no
symlinks out): the service runs as root to read a root-only run folder, and any local user can reach its port, so
run.sh, the trainer's scripts, a secrets or env file and anything else there stay unread. Requests whose Host is not
a loopback name (DNS rebinding) are refused, and the page's
Content-Security-Policy allows only its own script and style: log text reaches the page as text, never as markup.
Progress is read from the log by _train_log.py (the collection's module_utils/_train_log.py, installed beside this
file). The run's state comes from systemd (`systemctl show`), or, where PID 1 is not systemd, from the run's folder of
specdec's supervisor (<state-dir>/<unit>/: run.json, exit.json), read by _supervisor.py (the collection's
module_utils/_supervisor.py, installed beside this file too); the page shows the same states either way.

The work per request is bounded: one request at a time refreshes the status (the unit, then at most READ_LIMIT_BYTES
of what the log gained, from where the last refresh stopped; a bigger burst is skipped to its last part, the tail
showing the gap); a request that comes meanwhile answers at once with the last status instead of waiting for it.

The curves come from an index of the whole log's metric points (_train_log.MetricIndex), kept once for all clients
and appended as the log grows: each /api/history or event reads at most INDEX_READ_BYTES more of the log, and the
page asks again until it has caught up. The GPUs of the run (CUDA_VISIBLE_DEVICES of its unit or supervisor
definition, or --gpu) are sampled every second by _telemetry.py's readers (NVML, else nvidia-smi); the samples are
appended to GPU_HISTORY in the run folder (bounded to GPU_HISTORY_BYTES), so a restarted monitor shows them again.

The evaluation file is untrusted input: it is read again only when its inode, size or mtime changed (one lstat per
check), at most EVALUATION_BYTES of it, never through a symlink; a missing file is "no evaluation yet", a bad one
(too big, not UTF-8, not JSON, not an object, a field of the wrong type) an error string the page shows, never a 500.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import types
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

import _supervisor  # pylint: disable=import-error
from _train_log import MetricIndex, TrainLog  # pylint: disable=import-error

HERE = os.path.dirname(os.path.abspath(__file__))
STATIC = {
    '/': ('index.html', 'text/html; charset=utf-8'),
    '/static/monitor.js': ('monitor.js', 'text/javascript; charset=utf-8'),
    '/static/monitor.css': ('monitor.css', 'text/css; charset=utf-8'),
}
SECURITY_HEADERS = {
    'Content-Security-Policy': "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                               "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'X-Frame-Options': 'DENY',
    'Cache-Control': 'no-store',
}
LOOPBACK_NAMES = ('localhost', '127.0.0.1', '[::1]', '::1')
UNIT_PROPERTIES = ('LoadState', 'ActiveState', 'SubState', 'Result', 'ExecMainStatus', 'ExecMainCode',
                   'ExecMainStartTimestamp', 'ExecMainExitTimestamp')
# The most one refresh reads of the log: a log (at start) or a burst bigger than this is read from its last part.
READ_LIMIT_BYTES = 1024 * 1024
CHUNK_BYTES = 256 * 1024
# The most one history request or event reads of the log into the index, and the most points one answer carries.
INDEX_READ_BYTES = 1024 * 1024
HISTORY_POINTS = 100000
# The GPU samples the monitor keeps in the run folder (JSON lines; halved to its newer part when it grows past the
# bound), the seconds between samples, and the samples per GPU the page's sparklines show.
GPU_HISTORY = 'monitor-gpus.jsonl'
GPU_HISTORY_BYTES = 8 * 1024 * 1024
GPU_INTERVAL_S = 1.0
GPU_SPARK_SAMPLES = 120
COLLECTION_UTILS = 'ansible_collections.specdec.bench.plugins.module_utils'
# The summary of the latest evaluation of the run's checkpoints, in the run folder, and the most of it that is read.
EVALUATION = 'evaluation.json'
EVALUATION_BYTES = 1024 * 1024
# Its top-level fields and the JSON types each may hold (absent or null: any of them may be).
EVALUATION_FIELDS = (('campaign', str, 'a string'), ('generated', str, 'a string (UTC ISO time)'), ('run', str, 'a string'),
                     ('best', dict, 'an object'), ('checkpoints', list, 'a list of objects'), ('report', str, 'a string'))
# What /files/ serves of the run folder besides the log (--log): the files the page and its links read, nothing else.
SERVED_FILES = (EVALUATION, GPU_HISTORY)


def import_telemetry():
    """_telemetry.py (installed beside this file), whose imports name the collection's package: that package is
    made of the files beside this one where the collection is not installed (the host's bare Python)."""
    try:
        import _nvidia_smi  # pylint: disable=import-error,import-outside-toplevel
        import _nvml  # pylint: disable=import-error,import-outside-toplevel
        parts = COLLECTION_UTILS.split('.')
        for depth in range(1, len(parts) + 1):
            sys.modules.setdefault('.'.join(parts[:depth]), types.ModuleType('.'.join(parts[:depth])))
        package = sys.modules[COLLECTION_UTILS]
        for module in (_nvidia_smi, _nvml):
            if not hasattr(package, module.__name__):
                setattr(package, module.__name__, module)
                sys.modules.setdefault(COLLECTION_UTILS + '.' + module.__name__, module)
        import _telemetry  # pylint: disable=import-error,import-outside-toplevel
    except ImportError as error:
        return None, 'GPU telemetry cannot be loaded: %s' % error
    return _telemetry, None


def visible_devices(text):
    """CUDA_VISIBLE_DEVICES' entries (indices or UUIDs), in order; [] for none or unset."""
    return [entry.strip() for entry in (text or '').split(',') if entry.strip()]


def unit_environment(text):
    """The Environment= of `systemctl show` (KEY=value words, quoted where they hold spaces) as a dict."""
    import shlex  # pylint: disable=import-outside-toplevel
    environment = {}
    try:
        words = shlex.split(text or '')
    except ValueError:
        words = (text or '').split()
    for word in words:
        key, sep, value = word.partition('=')
        if sep:
            environment[key] = value
    return environment


def gpu_record(sample, index, now=None):
    """One sample of _telemetry's readers, as the history file and the page keep it."""
    def rounded(value, digits=1):
        return round(float(value), digits) if isinstance(value, (int, float)) else None
    return {'t': round(sample.get('t') or now or time.time(), 3), 'gpu': index, 'util': rounded(sample.get('sm_util'), 0),
            'mem': rounded(sample.get('mem_used_mib'), 0), 'power': rounded(sample.get('power_w')),
            'temp': rounded(sample.get('temp_c'), 0)}


def idle_seconds(records, now):
    """How long the GPU has been at 0% utilization up to `now`, from its records (oldest first); 0 when busy."""
    since = None
    for record in reversed(records):
        if record.get('util') != 0:
            break
        since = record['t']
    return max(0.0, now - since) if since is not None else 0.0


class GpuWatch:
    """The run's GPUs, sampled every GPU_INTERVAL_S in a thread by _telemetry's readers; their recent samples, and
    GPU_HISTORY in the run folder, appended (bounded) and read back at start."""

    def __init__(self, run_dir, devices, idle_threshold_s=60.0, interval_s=GPU_INTERVAL_S, nvidia_smi='nvidia-smi',
                 history=GPU_HISTORY, history_bytes=GPU_HISTORY_BYTES, backend='auto'):
        self.run_dir = run_dir
        self.devices = devices  # a list, or a callable giving it (the run's unit is read once sampling starts)
        self.idle_threshold_s = idle_threshold_s
        self.interval_s = interval_s
        self.nvidia_smi = nvidia_smi
        self.history_path = os.path.join(run_dir, history)
        self.history_bytes = history_bytes
        self.requested = backend
        self.backend = None
        self.error = None
        self.gpus = []  # [{'index', 'uuid', 'name', 'mem_total'}]
        self.recent = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None

    def start(self):
        self._load_history()
        self._thread = threading.Thread(target=self._run, name='gpu-watch', daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _load_history(self):
        """The newest samples of the history file (a restarted monitor shows what it sampled before)."""
        try:
            with open(self.history_path, 'rb') as handle:
                size = os.fstat(handle.fileno()).st_size
                handle.seek(max(0, size - 64 * 1024))
                lines = handle.read().splitlines()[1 if size > 64 * 1024 else 0:]
        except OSError:
            return
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and isinstance(record.get('t'), (int, float)):
                self.recent.setdefault(str(record.get('gpu')), collections.deque(maxlen=GPU_SPARK_SAMPLES)).append(record)

    def _open(self, telemetry, uuids):
        """A reader of _telemetry for these UUIDs: NVML (pynvml, else ctypes), else nvidia-smi."""
        tried = []
        order = ('pynvml', 'ctypes', 'nvidia-smi') if self.requested == 'auto' else (self.requested,)
        for backend in order:
            try:
                if backend == 'nvidia-smi':
                    reader = telemetry.SmiReader(self.nvidia_smi, uuids, self.interval_s)
                else:
                    _name, nvml = telemetry.load_nvml(backend)
                    reader = telemetry.NvmlReader(nvml, uuids)
            # NVMLError's subclasses (not importable beforehand), OSError, ValueError: the next backend
            except Exception as error:  # pylint: disable=broad-except
                tried.append('%s: %s' % (backend, error))
                continue
            self.backend = backend
            return reader
        raise ValueError('no GPU telemetry backend works here: ' + '; '.join(tried))

    def _inventory(self, telemetry, wanted):
        """[{'index', 'uuid', 'name', 'mem_total'}] of the GPUs `wanted` names (indices or UUIDs), by nvidia-smi."""
        command = [self.nvidia_smi, '--query-gpu=index,uuid,name,memory.total', '--format=csv,noheader,nounits']
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=20, check=False)
        except (OSError, subprocess.SubprocessError) as error:
            raise ValueError('%s could not be run: %s' % (self.nvidia_smi, error)) from None
        if done.returncode != 0:
            raise ValueError('%s --query-gpu failed (rc %d): %s' % (self.nvidia_smi, done.returncode, done.stderr.strip()[:200]))
        found = []
        for line in done.stdout.splitlines():
            fields = [field.strip() for field in line.split(',')]
            if len(fields) == 4:
                try:
                    total = float(fields[3])
                except ValueError:
                    total = None
                found.append({'index': fields[0], 'uuid': fields[1], 'name': fields[2], 'mem_total': total})
        if not wanted:
            return found
        chosen = []
        for entry in wanted:
            match = [gpu for gpu in found if entry in (gpu['index'], gpu['uuid'])]
            if not match:
                raise ValueError('GPU %s of the run is not among the GPUs nvidia-smi lists (%s)'
                                 % (entry, ', '.join(gpu['index'] for gpu in found)))
            chosen.append(match[0])
        return chosen

    def _run(self):
        telemetry, error = import_telemetry()
        reader = None
        try:
            if telemetry is None:
                raise ValueError(error)
            wanted = self.devices() if callable(self.devices) else list(self.devices)
            gpus = self._inventory(telemetry, wanted)
            if not gpus:
                raise ValueError('no GPU: the run names none and nvidia-smi lists none')
            with self._lock:
                self.gpus = gpus
            reader = self._open(telemetry, [gpu['uuid'] for gpu in gpus])
            index_of = dict((gpu['uuid'], gpu['index']) for gpu in gpus)
            while not self._stop.is_set():
                records = [gpu_record(sample, index_of.get(sample.get('uuid'))) for sample in reader.read()]
                self._add(records)
                self._stop.wait(self.interval_s)
        except ValueError as failure:
            with self._lock:
                self.error = str(failure)
        finally:
            if reader is not None:
                reader.close()

    def _add(self, records):
        if not records:
            return
        with self._lock:
            for record in records:
                self.recent.setdefault(str(record['gpu']), collections.deque(maxlen=GPU_SPARK_SAMPLES)).append(record)
        data = ''.join(json.dumps(record, sort_keys=True) + '\n' for record in records).encode('ascii')
        try:
            with open(self.history_path, 'ab') as handle:
                handle.write(data)
                size = handle.tell()
            if size > self.history_bytes:
                self._halve()
        except OSError as failure:
            with self._lock:
                self.error = 'GPU history not kept: %s' % failure

    def _halve(self):
        """Keep the newer half of the history file (written aside, then renamed over it)."""
        with open(self.history_path, 'rb') as handle:
            handle.seek(-(self.history_bytes // 2), os.SEEK_END)
            handle.readline()
            kept = handle.read()
        part = self.history_path + '.part'
        with open(part, 'wb') as handle:
            handle.write(kept)
        os.replace(part, self.history_path)

    def snapshot(self, now=None):
        """What the page shows: per GPU its latest sample, memory total, idle seconds (idle: past the threshold)
        and the recent utilization and power for its sparkline."""
        now = time.time() if now is None else now
        with self._lock:
            gpus = list(self.gpus) or [{'index': key, 'uuid': None, 'name': None, 'mem_total': None}
                                       for key in sorted(self.recent)]
            shown = []
            for gpu in gpus:
                records = list(self.recent.get(str(gpu['index']), ()))
                latest = records[-1] if records else {}
                idle = idle_seconds(records, now) if records else 0.0
                shown.append(dict(gpu, util=latest.get('util'), mem=latest.get('mem'), power=latest.get('power'),
                                  temp=latest.get('temp'), t=latest.get('t'), idle_seconds=round(idle, 1),
                                  idle=idle >= self.idle_threshold_s,
                                  spark={'t': [r['t'] for r in records], 'util': [r.get('util') for r in records],
                                         'power': [r.get('power') for r in records]}))
            return {'gpus': shown, 'backend': self.backend, 'error': self.error, 'idle_threshold_s': self.idle_threshold_s}


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


def make_handler(monitor, interval=0.5, keepalive=15.0, stream_seconds=600.0, allowed_hosts=()):
    hosts = set(LOOPBACK_NAMES) | set(allowed_hosts)

    class Handler(BaseHTTPRequestHandler):
        server_version = 'specdec-train-monitor'
        sys_version = ''
        protocol_version = 'HTTP/1.1'

        def version_string(self):
            return self.server_version

        def log_message(self, format, *args):  # pylint: disable=redefined-builtin
            sys.stderr.write('%s %s\n' % (self.address_string(), format % args))

        def _host_allowed(self):
            host = (self.headers.get('Host') or '').strip().lower()
            name = host.rsplit(':', 1)[0] if not host.endswith(']') else host
            return name in hosts

        def _send(self, code, body, content_type, extra=None):
            self.send_response(code)
            for key, value in dict(SECURITY_HEADERS, **(extra or {})).items():
                self.send_header(key, value)
            self.send_header('Content-Type', content_type)
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            if self.command != 'HEAD':
                self.wfile.write(body)

        def _json(self, value, code=200):
            self._send(code, json.dumps(value, sort_keys=True).encode('ascii'), 'application/json')

        def _error(self, code, message, extra=None):
            self._send(code, (message + '\n').encode('utf-8'), 'text/plain; charset=utf-8', extra)

        def send_error(self, code, message=None, explain=None):  # pylint: disable=unused-argument
            """http.server's own errors (bad request line, headers too long, ...) as plain text with the security
            headers, not its HTML page."""
            self.log_error('code %d, message %s', code, message)
            self.close_connection = True
            if self.request_version == 'HTTP/0.9':
                # a request line too broken to name its version still gets a status line and the headers
                self.request_version = 'HTTP/1.0'
            try:
                phrase = HTTPStatus(code).phrase
            except ValueError:
                phrase = 'error'
            self._error(code, message or phrase, {'Connection': 'close'})

        def __getattr__(self, name):
            # http.server calls do_<METHOD>, and answers a method it finds none for with 501: every method but GET and
            # HEAD gets the same 405 instead, whatever its name.
            if name.startswith('do_'):
                return self._refuse
            raise AttributeError(name)

        def do_GET(self):  # pylint: disable=invalid-name
            if not self._host_allowed():
                self._error(HTTPStatus.FORBIDDEN, 'forbidden: unexpected Host header')
                return
            parts = urlsplit(self.path)
            path = parts.path
            if path in STATIC:
                name, content_type = STATIC[path]
                with open(os.path.join(HERE, name), 'rb') as handle:
                    self._send(200, handle.read(), content_type)
            elif path == '/api/status':
                self._json(monitor.status())
            elif path == '/api/events':
                self._events(*self._cursor(parts.query, self.headers.get('Last-Event-ID')))
            elif path == '/api/history':
                since, of = self._cursor(parts.query)
                self._json(monitor.history(since, of))
            elif path == '/api/evaluation':
                self._json(monitor.evaluation.read()[0])
            elif path == '/' + monitor.evaluation.name:
                self._evaluation_file()
            elif path == '/files/':
                self._json({'run': monitor.name, 'files': monitor.files()})
            elif path.startswith('/files/'):
                self._file(unquote(path[len('/files/'):]))
            else:
                self._error(HTTPStatus.NOT_FOUND, 'not found')

        do_HEAD = do_GET

        @staticmethod
        def _cursor(query, last_event_id=None):
            """(points the page has seen, the index they came from or None): ?since=N&id=ID, or the Last-Event-ID
            (ID:N) that the browser sends back when it reconnects."""
            if last_event_id:
                name, _sep, number = last_event_id.rpartition(':')
                if number.isdigit() and name:
                    return int(number), name
            fields = parse_qs(query)
            since = (fields.get('since') or ['0'])[0]
            return (int(since) if since.isdigit() and len(since) < 16 else 0), (fields.get('id') or [None])[0]

        def _refuse(self):
            # A body the request may carry is not read: close rather than parse it as the next request.
            self.close_connection = True
            self._error(HTTPStatus.METHOD_NOT_ALLOWED, 'read-only: only GET and HEAD',
                        {'Allow': 'GET, HEAD', 'Connection': 'close'})

        def _evaluation_file(self):
            """The evaluation file as it is (what the monitor read of it, at most its limit), for the page's link."""
            answer, raw, _version = monitor.evaluation.read()
            if raw is None:
                self._error(HTTPStatus.NOT_FOUND, answer['error'] or 'no evaluation yet (playbooks/evaluate.yml writes one)')
                return
            self._send(200, raw, 'application/json', {'Content-Disposition': 'inline'})

        def _file(self, name):
            handle = monitor.open_file(name)
            if handle is None:
                self._error(HTTPStatus.NOT_FOUND, 'not found')
                return
            with handle:
                size = os.fstat(handle.fileno()).st_size
                self.send_response(200)
                for key, value in SECURITY_HEADERS.items():
                    self.send_header(key, value)
                self.send_header('Content-Type', 'text/plain; charset=utf-8')
                self.send_header('Content-Disposition', 'inline')
                self.send_header('Content-Length', str(size))
                self.end_headers()
                remaining = size
                while remaining > 0 and self.command != 'HEAD':
                    chunk = handle.read(min(CHUNK_BYTES, remaining))
                    if not chunk:
                        break
                    self.wfile.write(chunk)
                    remaining -= len(chunk)

        def _events(self, cursor=0, last_id=None):
            self.send_response(200)
            for key, value in SECURITY_HEADERS.items():
                self.send_header(key, value)
            self.send_header('Content-Type', 'text/event-stream; charset=utf-8')
            self.send_header('Connection', 'close')
            self.end_headers()
            self.close_connection = True
            if self.command == 'HEAD':
                return
            last, last_write, started, sent_id, evaluation_sent = None, 0.0, time.monotonic(), None, None
            try:
                self.wfile.write(b'retry: 2000\n\n')
                while time.monotonic() - started < stream_seconds:
                    status = monitor.status()
                    status.pop('now')
                    payload = json.dumps(status, sort_keys=True)
                    now = time.monotonic()
                    if payload != last:
                        self.wfile.write(('data: %s\n\n' % payload).encode('ascii'))
                        last, last_write = payload, now
                    elif now - last_write > keepalive:
                        self.wfile.write(b': keep-alive\n\n')
                        last_write = now
                    # the evaluation file, checked (one lstat) each time and sent when it changed
                    evaluation, _raw, version = monitor.evaluation.read()
                    if version != evaluation_sent:
                        evaluation_sent = version
                        self.wfile.write(('event: evaluation\ndata: %s\n\n' % json.dumps(evaluation, sort_keys=True)).encode('ascii'))
                        last_write = now
                    # the points of the curves not sent yet, as long as there are some (the whole history first)
                    while True:
                        history = monitor.history(cursor, last_id, wait=False)
                        if history is None or (history['next'] == cursor and history['id'] == sent_id):
                            break
                        last_id = sent_id = history['id']
                        cursor = history['next']
                        self.wfile.write(('id: %s:%d\nevent: history\ndata: %s\n\n' % (
                            history['id'], cursor, json.dumps(history, sort_keys=True))).encode('ascii'))
                        last_write = now
                        if history['complete']:
                            break
                    self.wfile.flush()
                    time.sleep(interval)
            except (BrokenPipeError, ConnectionResetError):
                pass

    return Handler


class MonitorServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, handler):
        if ':' in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, handler)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description='Read-only live monitoring page of one training run.')
    parser.add_argument('--run-dir', required=True, help='the run folder (holds the log)')
    parser.add_argument('--unit', required=True, help="the run's service (its unit name on both backends)")
    parser.add_argument('--backend', choices=('systemd', 'supervisor'), default='systemd',
                        help="where the run's state is read: systemctl show, or the supervisor's folder of the run")
    parser.add_argument('--state-dir', default=_supervisor.DEFAULT_STATE_DIR,
                        help="the supervisor's folder of services (--backend supervisor)")
    parser.add_argument('--name', help='the run name shown (default: the run folder name)')
    parser.add_argument('--log', default='train.log', help='the log file, in the run folder')
    parser.add_argument('--bind', default='127.0.0.1', help='address to listen on')
    parser.add_argument('--port', type=int, default=8080)
    parser.add_argument('--tail', type=int, default=40, help='log lines shown')
    parser.add_argument('--interval', type=float, default=0.5, help='seconds between checks for a live page')
    parser.add_argument('--allowed-host', action='append', default=[], help='a Host name accepted besides loopback')
    parser.add_argument('--systemctl', default='systemctl')
    parser.add_argument('--gpu', action='append', default=[],
                        help="a GPU of the run (index or UUID), repeated; default: CUDA_VISIBLE_DEVICES of the run's unit")
    parser.add_argument('--idle-gpu-seconds', type=float, default=60.0,
                        help='seconds at 0%% utilization after which a GPU of the run is shown idle')
    parser.add_argument('--gpu-telemetry', choices=('auto', 'pynvml', 'ctypes', 'nvidia-smi', 'off'), default='auto',
                        help="how the GPUs are sampled (_telemetry's backends), or off")
    parser.add_argument('--nvidia-smi', default='nvidia-smi')
    args = parser.parse_args(argv)
    if args.idle_gpu_seconds <= 0:
        parser.error('--idle-gpu-seconds is %r, expected a number of seconds above 0' % args.idle_gpu_seconds)
    return args


def main(argv=None):
    args = parse_args(argv)
    monitor = Monitor(args.run_dir, args.unit, args.name or os.path.basename(os.path.realpath(args.run_dir)),
                      log_name=args.log, tail=args.tail, systemctl=args.systemctl, backend=args.backend,
                      state_dir=args.state_dir)
    if args.gpu_telemetry != 'off':
        monitor.gpu_watch = GpuWatch(monitor.run_dir, args.gpu or monitor.run_devices, args.idle_gpu_seconds,
                                     nvidia_smi=args.nvidia_smi, backend=args.gpu_telemetry).start()
    server = MonitorServer((args.bind, args.port), make_handler(
        monitor, interval=args.interval, allowed_hosts=[host.lower() for host in args.allowed_host]))
    sys.stderr.write('serving run %s (%s, %s) on http://%s:%d/\n' % (monitor.name, args.unit, args.backend, args.bind,
                                                                     server.server_address[1]))
    sys.stderr.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == '__main__':
    sys.exit(main())
