# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""GPU energy and telemetry around one harness run, on the host, for the GPUs of one stage (by UUID).

Private to the specdec.bench collection. Standard library only: it runs on the host's bare Python.

Energy comes from NVML's total-energy counter (mJ since driver load, Volta and newer) read at start()
and stop() when every GPU of the stage has it ("counter"); else from power samples integrated over time
by the trapezoid rule ("samples"), from the instant power reading. `power.draw` (and NVML's
nvmlDeviceGetPowerUsage) is a 1-second average on Ampere and newer: integrated right after a change
of load it was off by +77% on an H200, so it is used only where a driver offers nothing else, and the
result says so (power_source 'average').

Backends, in the order 'auto' tries them: 'pynvml' (nvidia-ml-py, NVIDIA's binding, where importable),
'ctypes' (_nvml, a small binding to libnvidia-ml.so.1), 'nvidia-smi' (`--query-gpu ... -lms`, a
subprocess; no counter). Alongside power, each sample has SM utilization, memory used, SM and memory
clocks, temperature and the clock event (throttle) reasons.

A reading that is not a finite number (a driver's NaN or inf) is dropped where it is read, counted, and named in the
figures' notes: telemetry never fails a run, and strict JSON (the result row) cannot hold it.
"""

from __future__ import annotations

import calendar
import csv
import math
import subprocess
import tempfile
import threading
import time

try:
    from ansible_collections.specdec.bench.plugins.module_utils import _nvidia_smi as smi
    from ansible_collections.specdec.bench.plugins.module_utils import _nvml
except ImportError:  # a plain module beside the training monitor's program, its two siblings beside it (no collection)
    import _nvidia_smi as smi  # pylint: disable=import-error
    import _nvml  # pylint: disable=import-error

BACKENDS = ('auto', 'pynvml', 'ctypes', 'nvidia-smi')
MIN_INTERVAL_S = 0.05
MAX_INTERVAL_S = 1.0

# What the nvidia-smi backend asks for, and what an older driver is asked instead when it rejects a field.
SMI_FIELDS = ('timestamp', 'uuid', 'power.draw.instant', 'utilization.gpu', 'memory.used', 'clocks.sm',
              'clocks.mem', 'temperature.gpu', 'clocks_event_reasons.active')
SMI_FALLBACK_FIELDS = {
    'power.draw.instant': 'power.draw',  # before R530-ish: no .instant; a 1-second average on Ampere and newer
    'clocks_event_reasons.active': 'clocks_throttle_reasons.active',  # the name before R535
}
# nvidia-smi field -> sample key (the aliases nvidia-smi accepts for the same value map to the same key)
SMI_SAMPLE_KEYS = {
    'uuid': 'uuid',
    'utilization.gpu': 'sm_util',
    'memory.used': 'mem_used_mib',
    'clocks.sm': 'sm_clock',
    'clocks.current.sm': 'sm_clock',
    'clocks.mem': 'mem_clock',
    'clocks.current.memory': 'mem_clock',
    'temperature.gpu': 'temp_c',
    'clocks_event_reasons.active': 'reasons',
    'clocks_throttle_reasons.active': 'reasons',
}
POWER_FIELDS = {'power.draw.instant': 'instant', 'power.draw': 'average', 'power.draw.average': 'average'}
SAMPLE_KEYS = ('t', 'uuid', 'power_w', 'sm_util', 'mem_used_mib', 'sm_clock', 'mem_clock', 'temp_c', 'reasons')
# The sample keys that hold a number read from the driver: a non-finite one (NaN, inf) is dropped (drop_non_finite).
NUMBER_KEYS = ('power_w', 'sm_util', 'mem_used_mib', 'sm_clock', 'mem_clock', 'temp_c')
SERIES_COLUMNS = ('t_s', 'uuid', 'power_w', 'sm_util', 'mem_used_mib', 'sm_clock', 'mem_clock', 'temp_c', 'reasons')
# Reasons that mean the clocks were held back by power or heat, for `throttled`: every active one but gpu_idle.
NOT_THROTTLE = ('gpu_idle',)
# nvidia-smi prints local time; a parsed clock further than this from ours means another zone: its offset is removed.
CLOCK_SKEW_S = 60.0


# ---------------------------------------------------------------------------------------------------------
# Pure helpers


def parse_smi_timestamp(text, utc=False):
    """nvidia-smi's "YYYY/MM/DD HH:MM:SS.mmm" as seconds since the epoch (local time unless utc)."""
    text = text.strip()
    whole, _dot, fraction = text.partition('.')
    try:
        parts = time.strptime(whole, '%Y/%m/%d %H:%M:%S')
        fraction = float('0.' + fraction) if fraction else 0.0
    except ValueError:
        raise ValueError('timestamp %r is not YYYY/MM/DD HH:MM:SS.mmm' % text) from None
    seconds = calendar.timegm(parts) if utc else time.mktime(parts)
    return seconds + fraction


def parse_reasons(value):
    """A clocks_event_reasons.active cell (0x0000000000000001) as an int; None for no value."""
    value = smi.clean_value(value)
    if value is None:
        return None
    try:
        return int(value, 16)
    except ValueError:
        raise ValueError('clock event reasons %r is not a hex bitmask' % value) from None


def parse_sample_line(line, fields, power_field='power.draw.instant', utc=False):
    """One `--query-gpu=<fields> --format=csv,noheader,nounits` line as a sample dict (SAMPLE_KEYS).

    `fields` are the queried fields in order; `power_field` names the one taken as power_w. Fields with
    no sample key (index, power.limit, ...) are skipped; sample keys no field gives are None. Returns None
    for a blank line or a nvidia-smi warning; raises ValueError naming the field on a malformed one.
    """
    if not line.strip() or line.lstrip().startswith(smi.SMI_WARNING_PREFIXES):
        return None
    cells = line.split(',')
    if len(cells) != len(fields):
        raise ValueError('sample has %d fields, expected %d (%s): %r' % (len(cells), len(fields), ','.join(fields), line))
    sample = dict((key, None) for key in SAMPLE_KEYS)
    for field, cell in zip(fields, cells):
        try:
            if field == 'timestamp':
                sample['t'] = parse_smi_timestamp(cell, utc=utc)
            elif field == power_field:
                sample['power_w'] = smi.convert(smi.clean_value(cell), 'float')
            elif SMI_SAMPLE_KEYS.get(field) == 'reasons':
                sample['reasons'] = parse_reasons(cell)
            elif SMI_SAMPLE_KEYS.get(field) == 'uuid':
                sample['uuid'] = smi.clean_value(cell)
            elif field in SMI_SAMPLE_KEYS:
                number = smi.convert(smi.clean_value(cell), 'float')
                sample[SMI_SAMPLE_KEYS[field]] = int(number) if number is not None and number.is_integer() else number
        except ValueError as error:
            raise ValueError('field %s has value %r: %s' % (field, cell.strip(), error)) from None
    if sample['t'] is None or sample['uuid'] is None:
        raise ValueError('sample has no timestamp or uuid (fields: %s): %r' % (','.join(fields), line))
    return sample


def drop_non_finite(sample, dropped):
    """The sample with each non-finite reading (NaN, inf) of NUMBER_KEYS set to None, counted in dropped
    ({(uuid, key): count})."""
    for key in NUMBER_KEYS:
        value = sample.get(key)
        if isinstance(value, float) and not math.isfinite(value):
            sample[key] = None
            dropped[(sample.get('uuid'), key)] = dropped.get((sample.get('uuid'), key), 0) + 1
    return sample


def finite_counters(counters, dropped):
    """{uuid: mJ} of NVML's energy counter reads with a non-finite one as None (no counter), counted in dropped."""
    for uuid, value in counters.items():
        if isinstance(value, float) and not math.isfinite(value):
            counters[uuid] = None
            dropped[(uuid, 'energy_mj')] = dropped.get((uuid, 'energy_mj'), 0) + 1
    return counters


def dropped_note(dropped):
    """The note naming the readings drop_non_finite and finite_counters dropped, or None when there were none."""
    if not dropped:
        return None
    return 'non-finite readings dropped (NaN or inf from the driver): ' + ', '.join(
        '%s of %s x%d' % (key, uuid, count) for (uuid, key), count in sorted(dropped.items()))


def smi_command(nvidia_smi, fields, uuids, interval_s):
    """The nvidia-smi command line that prints one sample line per GPU every interval_s."""
    return [nvidia_smi, '--query-gpu=' + ','.join(fields), '--format=csv,noheader,nounits',
            '-lms', str(int(round(interval_s * 1000))), '-i', ','.join(uuids)]


def smi_fallback(fields, rejected):
    """The field list with a rejected field replaced by its older name (SMI_FALLBACK_FIELDS), or None."""
    if rejected not in fields or rejected not in SMI_FALLBACK_FIELDS:
        return None
    return tuple(SMI_FALLBACK_FIELDS[rejected] if field == rejected else field for field in fields)


def _value_at(points, t):
    """Power at time t by linear interpolation of sorted (t, watts) points; the nearest value outside them."""
    if t <= points[0][0]:
        return points[0][1]
    if t >= points[-1][0]:
        return points[-1][1]
    low, high = 0, len(points) - 1
    while high - low > 1:
        middle = (low + high) // 2
        if points[middle][0] <= t:
            low = middle
        else:
            high = middle
    (t_a, p_a), (t_b, p_b) = points[low], points[high]
    if t_b == t_a:
        return p_b
    return p_a + (p_b - p_a) * (t - t_a) / (t_b - t_a)


def power_points(samples, uuid=None):
    """(t, power_w) of the samples (of one GPU when uuid is given) that have a power value, sorted by time."""
    return sorted((sample['t'], sample['power_w']) for sample in samples
                  if sample['power_w'] is not None and (uuid is None or sample['uuid'] == uuid))


def integrate(points, t0=None, t1=None):
    """Joules from (t, watts) points by the trapezoid rule, over [t0, t1] (default: the points' span).

    The window's edges take the power interpolated between the samples either side of them, or the
    nearest sample's where there is none on one side. None when there are no points.
    """
    points = sorted(points)
    if not points:
        return None
    t0 = points[0][0] if t0 is None else t0
    t1 = points[-1][0] if t1 is None else t1
    if t1 <= t0:
        return 0.0
    inside = [(t0, _value_at(points, t0))]
    inside.extend(point for point in points if t0 < point[0] < t1)
    inside.append((t1, _value_at(points, t1)))
    return sum((t_b - t_a) * (p_a + p_b) / 2.0 for (t_a, p_a), (t_b, p_b) in zip(inside, inside[1:]))


def mean_power(points, t0=None, t1=None):
    """The plain mean of the power samples inside [t0, t1] (watts), or None when there are none."""
    values = [watts for t, watts in points if (t0 is None or t >= t0) and (t1 is None or t <= t1)]
    return sum(values) / len(values) if values else None


def counter_energy_j(start_mj, stop_mj):
    """Joules between two reads of NVML's total-energy counter (mJ); None when either is missing or it went back."""
    if start_mj is None or stop_mj is None or stop_mj < start_mj:
        return None
    return (stop_mj - start_mj) / 1000.0


def _reason_set(samples):
    names = set()
    for sample in samples:
        names.update(_nvml.reason_names(sample['reasons']) or ())
    return names


def _values(samples, key):
    return [sample[key] for sample in samples if sample[key] is not None]


def gpu_summary(uuid, samples, t0, t1, start_mj=None, stop_mj=None):
    """One GPU's figures over [t0, t1]: energy by counter when both reads exist, else by its samples."""
    mine = [sample for sample in samples if sample['uuid'] == uuid]
    window = [sample for sample in mine if t0 <= sample['t'] <= t1]
    by_counter = counter_energy_j(start_mj, stop_mj)
    by_samples = integrate(power_points(mine), t0, t1)
    energy = by_counter if by_counter is not None else by_samples
    duration = t1 - t0
    util, temp, used = _values(window, 'sm_util'), _values(window, 'temp_c'), _values(window, 'mem_used_mib')
    return {
        'uuid': uuid,
        'method': 'counter' if by_counter is not None else 'samples',
        'energy_j': energy,
        'energy_samples_j': by_samples,
        'avg_power_w': energy / duration if energy is not None and duration > 0 else None,
        'samples': len(window),
        'sm_util_mean': sum(util) / len(util) if util else None,
        'mem_used_mib_max': max(used) if used else None,
        'temp_c_max': max(temp) if temp else None,
        'throttled': sorted(_reason_set(window) - set(NOT_THROTTLE)),
    }


def merge(per_gpu, duration_s):
    """Stage figures from per-GPU summaries: energies add; the method is 'counter' only when every GPU's is."""
    energies = [gpu['energy_j'] for gpu in per_gpu]
    energy = None if not energies or any(value is None for value in energies) else sum(energies)
    throttled = set()
    for gpu in per_gpu:
        throttled.update(gpu['throttled'])
    return {
        'method': 'counter' if per_gpu and all(gpu['method'] == 'counter' for gpu in per_gpu) else 'samples',
        'energy_j': energy,
        'duration_s': duration_s,
        'avg_power_w': energy / duration_s if energy is not None and duration_s > 0 else None,
        'samples': min(gpu['samples'] for gpu in per_gpu) if per_gpu else 0,
        'throttled': sorted(throttled),
    }


def energy_figures(energy_j, output_tokens, duration_s):
    """output_tokens_per_j, j_per_output_token and avg_power_w; each None where it cannot be computed."""
    usable = energy_j is not None and energy_j > 0
    return {
        'output_tokens_per_j': output_tokens / energy_j if usable and output_tokens is not None else None,
        'j_per_output_token': energy_j / output_tokens if usable and output_tokens else None,
        'avg_power_w': energy_j / duration_s if energy_j is not None and duration_s else None,
    }


def series_rows(samples, t0, t1=None):
    """Samples in [t0, t1] as rows of SERIES_COLUMNS: time from t0, reasons as names joined by '+'."""
    rows = []
    for sample in sorted(samples, key=lambda item: (item['t'], item['uuid'])):
        if sample['t'] < t0 or (t1 is not None and sample['t'] > t1):
            continue
        names = _nvml.reason_names(sample['reasons'])
        rows.append(['%.3f' % (sample['t'] - t0), sample['uuid']] +
                    ['' if sample[key] is None else sample[key] for key in SAMPLE_KEYS[2:-1]] +
                    ['' if names is None else ('+'.join(names) or 'none')])
    return rows


# ---------------------------------------------------------------------------------------------------------
# Backends: each has read() -> [samples], energy_mj() -> {uuid: mJ or None}, close(), and `notes`


def load_nvml(backend):
    """(name, module-like NVML object, initialised) for 'pynvml' or 'ctypes'; raises ImportError or NVMLError."""
    if backend == 'pynvml':
        import pynvml  # pylint: disable=import-error,import-outside-toplevel
        nvml = pynvml
    else:
        nvml = _nvml.Nvml()
    nvml.nvmlInit()
    return backend, nvml


def _shutdown(nvml):
    try:
        nvml.nvmlShutdown()
    except nvml.NVMLError:
        pass


class NvmlReader:
    """Reads the stage's GPUs through a pynvml-like object (the pynvml module or _nvml.Nvml)."""

    def __init__(self, nvml, uuids):
        self.nvml = nvml
        self.uuids = list(uuids)
        self.notes = []
        self.dropped = {}
        self.handles = {}
        for uuid in self.uuids:
            try:
                self.handles[uuid] = nvml.nvmlDeviceGetHandleByUUID(uuid.encode('ascii'))
            except nvml.NVMLError as error:
                raise ValueError('GPU %s: NVML cannot open it (%s)' % (uuid, error)) from None
        self.instant = dict((uuid, self._instant_power(handle) is not None) for uuid, handle in self.handles.items())
        if not all(self.instant.values()):
            self.notes.append('NVML has no instant power field on %s: power samples are nvmlDeviceGetPowerUsage, '
                              'a 1-second average on Ampere and newer' % ','.join(u for u, ok in self.instant.items() if not ok))
        self.power_source = 'instant' if all(self.instant.values()) else 'average'

    def _get(self, name, *args):
        function = getattr(self.nvml, name, None)
        if function is None:
            return None
        try:
            return function(*args)
        except self.nvml.NVMLError:
            return None

    def _instant_power(self, handle):
        values = self._get('nvmlDeviceGetFieldValues', handle, [_nvml.NVML_FI_DEV_POWER_INSTANT])
        if not values:
            return None
        try:
            milliwatts = _nvml.field_value(values[0])
        except ValueError:
            return None
        return milliwatts / 1000.0 if milliwatts is not None else None

    def energy_mj(self):
        return finite_counters(dict((uuid, self._get('nvmlDeviceGetTotalEnergyConsumption', handle))
                                    for uuid, handle in self.handles.items()), self.dropped)

    def read(self):
        samples = []
        for uuid, handle in self.handles.items():
            now = time.time()
            if self.instant[uuid]:
                power = self._instant_power(handle)
            else:
                milliwatts = self._get('nvmlDeviceGetPowerUsage', handle)
                power = milliwatts / 1000.0 if milliwatts is not None else None
            utilization = self._get('nvmlDeviceGetUtilizationRates', handle)
            memory = self._get('nvmlDeviceGetMemoryInfo', handle)
            reasons = self._get('nvmlDeviceGetCurrentClocksEventReasons', handle)
            if reasons is None:
                reasons = self._get('nvmlDeviceGetCurrentClocksThrottleReasons', handle)
            samples.append(drop_non_finite({
                't': now,
                'uuid': uuid,
                'power_w': power,
                'sm_util': utilization.gpu if utilization is not None else None,
                'mem_used_mib': smi._mib(memory.used) if memory is not None else None,  # pylint: disable=protected-access
                'sm_clock': self._get('nvmlDeviceGetClockInfo', handle, _nvml.NVML_CLOCK_SM),
                'mem_clock': self._get('nvmlDeviceGetClockInfo', handle, _nvml.NVML_CLOCK_MEM),
                'temp_c': self._get('nvmlDeviceGetTemperature', handle, _nvml.NVML_TEMPERATURE_GPU),
                'reasons': reasons,
            }, self.dropped))
        return samples

    def close(self):
        _shutdown(self.nvml)


class SmiReader:
    """`nvidia-smi --query-gpu=... -lms` as a subprocess; a thread parses its lines as they come."""

    def __init__(self, nvidia_smi, uuids, interval_s, probe_timeout_s=10.0):
        self.uuids = list(uuids)
        self.notes = []
        self.dropped = {}
        self.fields = self._probe(nvidia_smi, probe_timeout_s)
        self.power_field = next(field for field in self.fields if field in POWER_FIELDS)
        self.power_source = POWER_FIELDS[self.power_field]
        if self.power_source != 'instant':
            self.notes.append('nvidia-smi offers no power.draw.instant here: samples are power.draw, '
                              'a 1-second average on Ampere (except GA100) and newer')
        self.lines_bad = 0
        self._samples = []
        self._lock = threading.Lock()
        self._offset = None
        self._stderr = tempfile.TemporaryFile(mode='w+')  # a file, not a pipe: nothing can fill up and block
        self.process = subprocess.Popen(smi_command(nvidia_smi, self.fields, self.uuids, interval_s),
                                        stdout=subprocess.PIPE, stderr=self._stderr, text=True, bufsize=1)
        self._thread = threading.Thread(target=self._pump, name='telemetry-nvidia-smi', daemon=True)
        self._thread.start()

    def _probe(self, nvidia_smi, timeout_s):
        """The field list this driver accepts: one plain query, older names substituted for rejected fields."""
        fields = SMI_FIELDS
        for _attempt in range(len(SMI_FALLBACK_FIELDS) + 1):
            command = [nvidia_smi, '--query-gpu=' + ','.join(fields), '--format=csv,noheader,nounits', '-i', ','.join(self.uuids)]
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
            except (OSError, subprocess.TimeoutExpired) as error:
                raise ValueError('%s could not be run: %s' % (nvidia_smi, error)) from None
            rejected = smi.bad_field(done.stdout + done.stderr)
            if rejected is None:
                if done.returncode != 0:
                    raise ValueError('%s --query-gpu failed (rc %d): %s' % (nvidia_smi, done.returncode, (done.stdout + done.stderr).strip()[:300]))
                return fields
            fields = smi_fallback(fields, rejected)
            if fields is None:
                raise ValueError('nvidia-smi rejects the field %s, which telemetry needs' % rejected)
        raise ValueError('nvidia-smi kept rejecting telemetry fields')

    def _pump(self):
        for line in self.process.stdout:
            arrived = time.time()
            try:
                sample = parse_sample_line(line, self.fields, self.power_field)
            except ValueError:
                self.lines_bad += 1
                continue
            if sample is None:
                continue
            drop_non_finite(sample, self.dropped)
            if self._offset is None:
                # nvidia-smi prints local time; a child with another TZ than ours shows as a whole-hours skew
                skew = arrived - sample['t']
                self._offset = skew if abs(skew) > CLOCK_SKEW_S else 0.0
            sample['t'] += self._offset
            with self._lock:
                self._samples.append(sample)

    def read(self):
        with self._lock:
            samples, self._samples = self._samples, []
        return samples

    def pending(self):
        """True while the parsing thread may still hand over lines."""
        return self._thread.is_alive()

    def energy_mj(self):
        return dict((uuid, None) for uuid in self.uuids)

    def close(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._thread.join(timeout=5)
        if self.lines_bad:
            self.notes.append('%d nvidia-smi lines could not be read' % self.lines_bad)
        if self.process.returncode not in (0, -15):  # -15: our terminate()
            self._stderr.seek(0)
            self.notes.append('nvidia-smi ended by itself with rc %s: %s' % (self.process.returncode, self._stderr.read().strip()[:300]))
        self._stderr.close()


# ---------------------------------------------------------------------------------------------------------


class Telemetry:
    """Energy and telemetry of one stage's GPUs around a run.

        telemetry = Telemetry(uuids)          # backend='auto': pynvml, else ctypes, else nvidia-smi
        telemetry.idle(3.0)                   # optional: mean power of these GPUs just before the run
        telemetry.start()
        ...                                   # the harness run
        result = telemetry.stop()             # dict: see stop()
        telemetry.write_series(path)          # CSV: SERIES_COLUMNS

    Sampling runs in a background thread (NVML) or a subprocess (nvidia-smi) from the first idle() or
    start() until stop(), every interval_s.
    """

    def __init__(self, uuids, interval_s=0.1, nvidia_smi='nvidia-smi', backend='auto'):
        if isinstance(uuids, str):
            uuids = [uuids]
        self.uuids = [uuid for uuid in uuids if uuid]
        if not self.uuids:
            raise ValueError('uuids: at least one GPU UUID is needed')
        if backend not in BACKENDS:
            raise ValueError('backend is %r, expected one of %s' % (backend, ', '.join(BACKENDS)))
        if not MIN_INTERVAL_S <= interval_s <= MAX_INTERVAL_S:
            raise ValueError('interval_s is %r, expected %s to %s' % (interval_s, MIN_INTERVAL_S, MAX_INTERVAL_S))
        self.interval_s = interval_s
        self.nvidia_smi = nvidia_smi
        self.requested = backend
        self.backend = None
        self.reader = None
        self.notes = []
        self.samples = []
        self.idle_power_w = None
        self.t_start = self.t_stop = None
        self.counters_start = self.counters_stop = None
        self.result = None
        self._stop_event = threading.Event()
        self._thread = None
        self._lock = threading.Lock()
        self._closed = False

    # --- backend

    def _open(self):
        if self._closed:
            raise ValueError('this Telemetry is closed: make a new one for the next run')
        if self.reader is not None:
            return
        tried = []
        order = ('pynvml', 'ctypes', 'nvidia-smi') if self.requested == 'auto' else (self.requested,)
        for backend in order:
            try:
                if backend == 'nvidia-smi':
                    self.reader = SmiReader(self.nvidia_smi, self.uuids, self.interval_s)
                else:
                    _name, nvml = load_nvml(backend)
                    try:
                        self.reader = NvmlReader(nvml, self.uuids)
                    except ValueError:
                        _shutdown(nvml)
                        raise
            except (ImportError, OSError, ValueError, AttributeError) as error:
                tried.append('%s: %s' % (backend, error))
                continue
            except Exception as error:  # pynvml's NVMLError subclasses are not importable here beforehand
                if type(error).__name__.startswith('NVMLError'):
                    tried.append('%s: %s' % (backend, error))
                    continue
                raise
            self.backend = backend
            if tried:
                self.notes.append('not used: ' + '; '.join(tried))
            break
        if self.reader is None:
            raise ValueError('no telemetry backend works here: ' + '; '.join(tried))
        if isinstance(self.reader, NvmlReader):
            self._thread = threading.Thread(target=self._loop, name='telemetry-nvml', daemon=True)
            self._thread.start()

    def _loop(self):
        while not self._stop_event.is_set():
            samples = self.reader.read()
            with self._lock:
                self.samples.extend(samples)
            self._stop_event.wait(self.interval_s)

    def _collect(self):
        """Samples so far (the nvidia-smi reader hands over what its thread parsed)."""
        if isinstance(self.reader, SmiReader):
            fresh = self.reader.read()
            with self._lock:
                self.samples.extend(fresh)
        with self._lock:
            return list(self.samples)

    def _wait_for_sample(self, after, timeout_s):
        """Wait until every GPU has a sample later than `after` (nvidia-smi takes a while to start)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            seen = set(sample['uuid'] for sample in self._collect() if sample['t'] >= after)
            if seen >= set(self.uuids):
                return True
            if isinstance(self.reader, SmiReader) and self.reader.process.poll() is not None and not self.reader.pending():
                return False  # nvidia-smi ended: nothing more will come
            time.sleep(self.interval_s / 2)
        return False

    # --- the interface

    def idle(self, seconds):
        """Mean power (W, all GPUs together) over the next `seconds`, before the run; by counter where every GPU has it."""
        self._open()
        t0 = time.time()
        counters0 = self.reader.energy_mj()
        self._stop_event.wait(seconds)
        t1 = time.time()
        counters1 = self.reader.energy_mj()
        if isinstance(self.reader, SmiReader):
            self._wait_for_sample(t1, 5 * self.interval_s + 2.0)
        samples = self._collect()
        per_gpu = [gpu_summary(uuid, samples, t0, t1, counters0[uuid], counters1[uuid]) for uuid in self.uuids]
        self.idle_power_w = merge(per_gpu, t1 - t0)['avg_power_w']
        return self.idle_power_w

    def start(self):
        """Mark the run's start: the counters are read and sampling runs (started here if idle() did not)."""
        self._open()
        if isinstance(self.reader, SmiReader) and not self._collect():
            # nvidia-smi needs a few hundred ms to print its first line; wait so the run's first edge has a sample
            self._wait_for_sample(0.0, 10.0)
        self.counters_start = self.reader.energy_mj()
        self.t_start = time.time()

    def stop(self):
        """Mark the run's end and return its figures.

        Keys: method ('counter' | 'samples'), backend ('pynvml' | 'ctypes' | 'nvidia-smi'), power_source
        ('instant' | 'average': what the samples carry), energy_j, duration_s, avg_power_w, samples (per GPU,
        the fewest), idle_power_w, per_gpu [{uuid, method, energy_j, energy_samples_j, avg_power_w, samples,
        sm_util_mean, mem_used_mib_max, temp_c_max, throttled}], throttled (active reasons but gpu_idle seen
        on any GPU), notes.
        """
        if self.t_start is None:
            raise ValueError('stop() before start()')
        if self.result is not None:
            return self.result
        self.t_stop = time.time()
        self.counters_stop = self.reader.energy_mj()
        if isinstance(self.reader, SmiReader):
            self._wait_for_sample(self.t_stop, 5 * self.interval_s + 2.0)
        self.close()
        samples = self._collect()
        duration = self.t_stop - self.t_start
        per_gpu = [gpu_summary(uuid, samples, self.t_start, self.t_stop, self.counters_start[uuid], self.counters_stop[uuid])
                   for uuid in self.uuids]
        result = merge(per_gpu, duration)
        notes = self.notes + self.reader.notes + [note for note in (dropped_note(self.reader.dropped),) if note]
        if result['energy_j'] is None:
            notes.append('no energy: no counter and no power samples on %s' % ','.join(
                gpu['uuid'] for gpu in per_gpu if gpu['energy_j'] is None))
        result.update({
            'backend': self.backend,
            'power_source': self.reader.power_source,
            'idle_power_w': self.idle_power_w,
            'per_gpu': per_gpu,
            'notes': notes,
        })
        self.result = result
        return result

    def close(self):
        """Stop sampling without figures (for a run that failed); stop() calls it. Safe to call twice."""
        self._stop_event.set()
        if self._thread is not None:
            self._thread.join(timeout=5 + self.interval_s)
        if self.reader is not None and not self._closed:
            self._closed = True
            self.reader.close()

    def write_series(self, path):
        """Write the run's samples as CSV (SERIES_COLUMNS; t_s from start()); returns the row count."""
        if self.t_start is None:
            raise ValueError('write_series() before start()')
        rows = series_rows(self._collect(), self.t_start, self.t_stop)
        with open(path, 'w', newline='', encoding='utf-8') as handle:
            writer = csv.writer(handle)
            writer.writerow(SERIES_COLUMNS)
            writer.writerows(rows)
        return len(rows)
