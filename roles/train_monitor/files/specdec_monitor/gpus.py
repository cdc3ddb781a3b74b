# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The training monitor: the run's GPUs, sampled every second by the collection's _telemetry readers (NVML, else
nvidia-smi); their recent samples for the page, appended (bounded) to GPU_HISTORY in the run folder so a restarted
monitor shows them again.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import threading
import time


# The GPU samples the monitor keeps in the run folder (JSON lines; halved to its newer part when it grows past the
# bound), the seconds between samples, and the samples per GPU the page's sparklines show.
GPU_HISTORY = 'monitor-gpus.jsonl'
GPU_HISTORY_BYTES = 8 * 1024 * 1024
GPU_INTERVAL_S = 1.0
GPU_SPARK_SAMPLES = 120


def import_telemetry():
    """(_telemetry, None), or (None, why not): the collection's GPU readers, installed beside the program with the two
    modules they import (_nvml, _nvidia_smi); _telemetry imports them from the collection's package where that is
    importable, else as the plain modules beside it."""
    try:
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
