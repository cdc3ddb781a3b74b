# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""GPU telemetry: the real H200 captures' table reproduced (counter vs power.draw vs power.draw.instant),
the old-driver fallbacks, and the Telemetry class through each backend: a fake pynvml module, the ctypes
binding over a fake library, and a fake nvidia-smi that replays the H200's samples as a real subprocess."""

from __future__ import annotations

import csv
import json
import os
import sys
import textwrap
import time
import types

import pytest

from ansible_collections.specdec.bench.plugins.module_utils import _nvml
from ansible_collections.specdec.bench.plugins.module_utils import _telemetry as tel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_nvml import FakeLib  # noqa: E402  pylint: disable=wrong-import-position
from testhelpers import wait_until  # noqa: E402  pylint: disable=wrong-import-position,import-error

HERE = os.path.dirname(os.path.abspath(__file__))
CAPTURE = os.path.join(HERE, '..', '..', '..', 'fixtures', 'nvidia-smi', 'h200-power')
UUID = 'GPU-ff5bd000-d5b2-bc39-142e-dcdc7a95938f'
UUID2 = 'GPU-6ca17b99-18b2-5ec4-b8fd-f2519772007e'
# capture.sh's --query-gpu list for samples-lms100.csv
CAPTURE_FIELDS = ('timestamp', 'index', 'uuid', 'power.draw', 'power.draw.average', 'power.draw.instant', 'power.limit',
                  'enforced.power.limit', 'clocks.sm', 'clocks.mem', 'utilization.gpu', 'utilization.memory',
                  'temperature.gpu', 'memory.used', 'pstate')
# README.md's table: phase -> (seconds, counter J, power.draw x time, power.draw.instant x time, NVML power x time)
README_TABLE = {
    'idle': (3.01, 365, 353, 366, 350),
    'matmul': (12.02, 8224, 7978, 8242, 7934),
    'idle2': (3.01, 407, 720, 432, 695),
    'half': (8.02, 1812, 1770, 1866, 1766),
}


def capture_lines():
    with open(os.path.join(CAPTURE, 'samples-lms100.csv'), encoding='utf-8') as handle:
        return handle.read().splitlines()


def capture_samples(power_field):
    return [tel.parse_sample_line(line, CAPTURE_FIELDS, power_field, utc=True) for line in capture_lines()]


def capture_nvml():
    with open(os.path.join(CAPTURE, 'nvml.json'), encoding='utf-8') as handle:
        return json.load(handle)


def near(value, expected, fraction):
    return abs(value - expected) <= fraction * abs(expected)


# --- the real captures


def test_parse_sample_line_reads_the_h200_capture():
    sample = tel.parse_sample_line(capture_lines()[0], CAPTURE_FIELDS, 'power.draw.instant', utc=True)
    assert sample == {'t': pytest.approx(1796284396.134), 'uuid': UUID, 'power_w': 79.80, 'sm_util': 0,
                      'mem_used_mib': 0, 'sm_clock': 465, 'mem_clock': 3201, 'temp_c': 38, 'reasons': None}
    assert len(capture_samples('power.draw.instant')) == 353


def test_every_field_telemetry_asks_for_is_offered_by_the_h200_driver():
    with open(os.path.join(CAPTURE, 'help-query-gpu.txt'), encoding='utf-8') as handle:
        offered = set()
        for line in handle:
            if line.startswith('"'):
                offered.update(name.strip('"') for name in line.strip().split(' or '))
    assert set(tel.SMI_FIELDS) <= offered
    assert set(tel.SMI_FALLBACK_FIELDS.values()) <= offered


@pytest.mark.parametrize('phase', sorted(README_TABLE))
def test_readme_table_is_reproduced_from_the_captures(phase):
    seconds, counter, draw, instant, nvml_power = README_TABLE[phase]
    record = dict((item['phase'], item) for item in capture_nvml()['phases'])[phase]
    t0, t1 = record['t0'], record['t1']
    assert near(t1 - t0, seconds, 0.01)
    assert near(tel.counter_energy_j(record['energy_mj_0'], record['energy_mj_1']), counter, 0.01)
    # the README's "x time" columns: the mean of the samples inside the phase times its length
    nvml_points = [(t, milliwatts / 1000.0) for t, milliwatts in capture_nvml()['nvml_power_samples'] if milliwatts is not None]
    for field, expected in (('power.draw', draw), ('power.draw.instant', instant)):
        points = tel.power_points(capture_samples(field))
        assert near(tel.mean_power(points, t0, t1) * (t1 - t0), expected, 0.01), field
    assert near(tel.mean_power(nvml_points, t0, t1) * (t1 - t0), nvml_power, 0.01)


def test_trapezoid_of_instant_samples_against_the_counter_and_the_pitfall_of_power_draw():
    """What Telemetry computes (trapezoid over the window) on the same captures: the instant samples stay
    within 5% of the counter in every phase; power.draw right after the load is off by more than 70%."""
    instant = tel.power_points(capture_samples('power.draw.instant'))
    average = tel.power_points(capture_samples('power.draw'))
    figures = {}
    for record in capture_nvml()['phases']:
        t0, t1 = record['t0'], record['t1']
        counter = tel.counter_energy_j(record['energy_mj_0'], record['energy_mj_1'])
        figures[record['phase']] = (counter, tel.integrate(instant, t0, t1), tel.integrate(average, t0, t1))
    for phase, (counter, by_instant, _by_average) in figures.items():
        assert near(by_instant, counter, 0.05), phase
        readme_instant = README_TABLE[phase][3]
        # within 1% of the README's mean x time, except right after the load, where the trapezoid is nearer the counter
        assert near(by_instant, readme_instant, 0.01 if phase != 'idle2' else 0.025), phase
    counter, by_instant, by_average = figures['idle2']
    assert by_average / counter - 1 > 0.70
    assert abs(by_instant - counter) < abs(README_TABLE['idle2'][3] - counter)


def test_gpu_summary_prefers_the_counter_and_falls_back_to_samples():
    samples = capture_samples('power.draw.instant')
    record = capture_nvml()['phases'][1]
    t0, t1 = record['t0'], record['t1']
    by_counter = tel.gpu_summary(UUID, samples, t0, t1, record['energy_mj_0'], record['energy_mj_1'])
    assert by_counter['method'] == 'counter' and by_counter['energy_j'] == pytest.approx(8223.763)
    assert near(by_counter['energy_samples_j'], 8224, 0.01)
    assert 115 <= by_counter['samples'] <= 121 and by_counter['sm_util_mean'] > 90 and by_counter['temp_c_max'] >= 50
    no_counter = tel.gpu_summary(UUID, samples, t0, t1, None, None)
    assert no_counter['method'] == 'samples' and no_counter['energy_j'] == by_counter['energy_samples_j']
    assert no_counter['avg_power_w'] == pytest.approx(no_counter['energy_j'] / (t1 - t0))


# --- pure helpers


def test_integrate_is_the_trapezoid_clipped_to_the_window():
    points = [(0.0, 100.0), (1.0, 300.0), (2.0, 300.0)]
    assert tel.integrate(points) == pytest.approx(200.0 + 300.0)
    assert tel.integrate(points, 0.5, 1.5) == pytest.approx(0.5 * (200 + 300) / 2 + 0.5 * 300)
    assert tel.integrate(points, -1.0, 3.0) == pytest.approx(100 + 500 + 300)  # the nearest sample is held outside
    assert tel.integrate([], 0, 1) is None
    assert tel.integrate(points, 1.0, 1.0) == 0.0


@pytest.mark.parametrize('start, stop, expected', [(1000, 251000, 250.0), (None, 5, None), (5000, 4000, None)])
def test_counter_energy(start, stop, expected):
    assert tel.counter_energy_j(start, stop) == expected


def test_merge_needs_every_gpu_on_the_counter():
    gpus = [{'method': 'counter', 'energy_j': 100.0, 'samples': 10, 'throttled': []},
            {'method': 'samples', 'energy_j': 50.0, 'samples': 8, 'throttled': ['sw_power_cap']}]
    merged = tel.merge(gpus, 2.0)
    assert merged == {'method': 'samples', 'energy_j': 150.0, 'duration_s': 2.0, 'avg_power_w': 75.0,
                      'samples': 8, 'throttled': ['sw_power_cap']}
    assert tel.merge(gpus[:1], 2.0)['method'] == 'counter'


def test_energy_figures():
    assert tel.energy_figures(500.0, 1000, 10.0) == {'output_tokens_per_j': 2.0, 'j_per_output_token': 0.5, 'avg_power_w': 50.0}
    assert tel.energy_figures(None, 1000, 10.0) == {'output_tokens_per_j': None, 'j_per_output_token': None, 'avg_power_w': None}
    assert tel.energy_figures(500.0, 0, 10.0)['j_per_output_token'] is None


@pytest.mark.parametrize('line, message', [
    ('2026/12/03 07:53:16.134, GPU-x, 79.8', 'has 3 fields, expected 9'),
    ('2026/12/03 07:53:16.134, GPU-x, lots, 0, 0, 465, 3201, 38, 0x1', 'power.draw.instant has value'),
    ('yesterday, GPU-x, 79.8, 0, 0, 465, 3201, 38, 0x1', 'timestamp'),
    ('2026/12/03 07:53:16.134, GPU-x, 79.8, 0, 0, 465, 3201, 38, busy', 'clocks_event_reasons.active'),
])
def test_parse_sample_line_names_the_bad_field(line, message):
    with pytest.raises(ValueError, match=message):
        tel.parse_sample_line(line, tel.SMI_FIELDS)


def test_parse_sample_line_skips_blank_and_warning_lines_and_reads_na():
    assert tel.parse_sample_line('', tel.SMI_FIELDS) is None
    assert tel.parse_sample_line('WARNING: infoROM is corrupted at gpu 0000:01:00.0', tel.SMI_FIELDS) is None
    sample = tel.parse_sample_line('2026/12/03 07:53:16.134, GPU-x, [N/A], 3, 10, 1980, 3201, 40, 0x0000000000000004',
                                   tel.SMI_FIELDS, utc=True)
    assert sample['power_w'] is None and sample['reasons'] == 4 and sample['sm_clock'] == 1980


def test_old_driver_fields_fall_back_to_their_older_names():
    fields = tel.smi_fallback(tel.SMI_FIELDS, 'power.draw.instant')
    assert 'power.draw' in fields and 'power.draw.instant' not in fields
    fields = tel.smi_fallback(fields, 'clocks_event_reasons.active')
    assert fields[-1] == 'clocks_throttle_reasons.active'
    assert tel.smi_fallback(fields, 'uuid') is None


def test_series_rows_are_relative_to_the_start_with_reason_names():
    samples = [{'t': 101.25, 'uuid': UUID, 'power_w': 650.5, 'sm_util': 100, 'mem_used_mib': 20480, 'sm_clock': 1980,
                'mem_clock': 3201, 'temp_c': 55, 'reasons': 0x4},
               {'t': 99.0, 'uuid': UUID, 'power_w': 80.0, 'sm_util': 0, 'mem_used_mib': 0, 'sm_clock': 345,
                'mem_clock': 3201, 'temp_c': 38, 'reasons': 0x1},
               {'t': 101.0, 'uuid': UUID, 'power_w': None, 'sm_util': None, 'mem_used_mib': None, 'sm_clock': None,
                'mem_clock': None, 'temp_c': None, 'reasons': 0}]
    assert tel.series_rows(samples, 100.0) == [
        ['1.000', UUID, '', '', '', '', '', '', 'none'],
        ['1.250', UUID, 650.5, 100, 20480, 1980, 3201, 55, 'sw_power_cap'],
    ]


def test_constructor_checks_its_arguments():
    with pytest.raises(ValueError, match='backend is .dcgm., expected one of auto, pynvml, ctypes, nvidia-smi'):
        tel.Telemetry([UUID], backend='dcgm')
    with pytest.raises(ValueError, match='interval_s is 5'):
        tel.Telemetry([UUID], interval_s=5)
    with pytest.raises(ValueError, match='uuids'):
        tel.Telemetry([])


# --- the Telemetry class through each backend


def run_window(telemetry, samples_per_gpu=4):
    """start(), wait until each GPU has samples_per_gpu samples after it, stop()."""
    telemetry.start()
    wait_until(lambda: all(sum(1 for s in telemetry._collect() if s['uuid'] == uuid and s['t'] >= telemetry.t_start)
                           >= samples_per_gpu for uuid in telemetry.uuids), 'samples')
    return telemetry.stop()


def fake_pynvml(energy=True, instant=True):
    """A pynvml stand-in: per GPU a counter that gains 250 J (GPU 1) or 100 J (GPU 2) per read, 412 W instant, 300 W average."""
    module = types.ModuleType('pynvml')

    class NVMLError(Exception):
        def __init__(self, value):
            self.value = value
            super().__init__('NVML error %d' % value)

    counters = {UUID: [0, 250000], UUID2: [0, 100000]}
    module.NVMLError = NVMLError
    module.shutdowns = []
    module.nvmlInit = lambda: None
    module.nvmlShutdown = lambda: module.shutdowns.append(True)

    def handle(uuid):
        uuid = uuid.decode() if isinstance(uuid, bytes) else uuid
        if uuid not in counters:
            raise NVMLError(6)
        return uuid

    def total_energy(uuid):
        if not energy:
            raise NVMLError(3)
        counters[uuid][0] += counters[uuid][1]
        return counters[uuid][0]

    def fields(uuid, ids):
        return [types.SimpleNamespace(fieldId=ids[0], nvmlReturn=0 if instant else 3, valueType=1,
                                      value=types.SimpleNamespace(uiVal=412000))]

    module.nvmlDeviceGetHandleByUUID = handle
    module.nvmlDeviceGetTotalEnergyConsumption = total_energy
    module.nvmlDeviceGetFieldValues = fields
    module.nvmlDeviceGetPowerUsage = lambda uuid: 300000
    module.nvmlDeviceGetUtilizationRates = lambda uuid: types.SimpleNamespace(gpu=99, memory=40)
    module.nvmlDeviceGetMemoryInfo = lambda uuid: types.SimpleNamespace(used=20 << 30, total=141 << 30, free=121 << 30)
    module.nvmlDeviceGetClockInfo = lambda uuid, clock: {1: 1980, 2: 3201}[clock]
    module.nvmlDeviceGetTemperature = lambda uuid, sensor: 52
    module.nvmlDeviceGetCurrentClocksEventReasons = lambda uuid: 0x4
    return module


def test_pynvml_backend_takes_energy_from_the_counter(monkeypatch, tmp_path):
    module = fake_pynvml()
    monkeypatch.setitem(sys.modules, 'pynvml', module)
    telemetry = tel.Telemetry([UUID, UUID2], interval_s=0.05)
    result = run_window(telemetry)
    assert result['backend'] == 'pynvml' and result['method'] == 'counter' and result['power_source'] == 'instant'
    assert result['energy_j'] == pytest.approx(350.0)
    assert [gpu['energy_j'] for gpu in result['per_gpu']] == [pytest.approx(250.0), pytest.approx(100.0)]
    assert result['avg_power_w'] == pytest.approx(350.0 / result['duration_s'])
    assert result['samples'] >= 4 and result['throttled'] == ['sw_power_cap'] and module.shutdowns
    gpu = result['per_gpu'][0]
    assert (gpu['mem_used_mib_max'], gpu['temp_c_max'], gpu['sm_util_mean']) == (20480, 52, 99)
    path = tmp_path / 'telemetry.csv'
    rows = telemetry.write_series(str(path))
    with open(path, encoding='utf-8') as handle:
        table = list(csv.reader(handle))
    assert table[0] == list(tel.SERIES_COLUMNS) and len(table) == rows + 1 >= 8
    assert table[1][2:] == ['412.0', '99', '20480', '1980', '3201', '52', 'sw_power_cap']
    assert {row[1] for row in table[1:]} == {UUID, UUID2}


def test_pynvml_without_the_counter_integrates_instant_samples(monkeypatch):
    monkeypatch.setitem(sys.modules, 'pynvml', fake_pynvml(energy=False))
    telemetry = tel.Telemetry([UUID, UUID2], interval_s=0.05, backend='pynvml')
    idle = telemetry.idle(0.2)
    result = run_window(telemetry)
    assert result['method'] == 'samples' and result['power_source'] == 'instant'
    assert result['avg_power_w'] == pytest.approx(824.0) and idle == pytest.approx(824.0)
    assert result['idle_power_w'] == idle


def test_pynvml_without_instant_power_says_it_samples_the_average(monkeypatch):
    monkeypatch.setitem(sys.modules, 'pynvml', fake_pynvml(energy=False, instant=False))
    result = run_window(tel.Telemetry([UUID], interval_s=0.05, backend='pynvml'))
    assert result['method'] == 'samples' and result['power_source'] == 'average'
    assert result['avg_power_w'] == pytest.approx(300.0)
    assert any('1-second average' in note for note in result['notes'])


def test_ctypes_backend_through_the_binding(monkeypatch):
    binding = _nvml.Nvml
    monkeypatch.setattr(_nvml, 'Nvml', lambda: binding(lib=FakeLib(energy=(1000000, 1412000))))
    result = run_window(tel.Telemetry([UUID], interval_s=0.05, backend='ctypes'))
    assert result['backend'] == 'ctypes' and result['method'] == 'counter'
    assert result['energy_j'] == pytest.approx(412.0)
    assert result['per_gpu'][0]['energy_samples_j'] == pytest.approx(412.345 * result['duration_s'])
    assert result['throttled'] == ['sw_power_cap']


def test_an_unknown_uuid_is_named():
    with pytest.raises(ValueError, match='GPU-0000.*NVML cannot open it'):
        tel.NvmlReader(_nvml.Nvml(lib=FakeLib()), ['GPU-0000'])


FAKE_SMI = '''\
    import os, sys, time
    COLUMNS = %r
    rows = [[cell.strip() for cell in line.split(',')] for line in open(os.environ['FAKE_SMI_SAMPLES']) if line.strip()]
    rows = rows[int(os.environ['FAKE_SMI_START']):]
    args = sys.argv[1:]
    fields = next(arg.split('=', 1)[1] for arg in args if arg.startswith('--query-gpu=')).split(',')
    for field in fields:
        if field in os.environ.get('FAKE_SMI_REJECT', '').split(','):
            print('Field "%%s" is not a valid field to query.' %% field)
            sys.exit(2)
    every = int(args[args.index('-lms') + 1]) / 1000.0 if '-lms' in args else None
    for row in rows:
        cells = dict(zip(COLUMNS, row))
        now = time.time()
        cells['timestamp'] = time.strftime('%%Y/%%m/%%d %%H:%%M:%%S', time.localtime(now)) + '.%%03d' %% int(now %% 1 * 1000)
        reasons = '0x0000000000000001' if cells['utilization.gpu'] == '0' else '0x0000000000000004'
        cells['clocks_event_reasons.active'] = cells['clocks_throttle_reasons.active'] = reasons
        print(', '.join(cells[field] for field in fields), flush=True)
        if every is None:
            break
        if os.environ.get('FAKE_SMI_DIE'):
            sys.stderr.write('Unable to determine the device handle for GPU0000:18:00.0: GPU is lost.\\n')
            sys.exit(15)
        time.sleep(every)
'''


@pytest.fixture
def fake_smi(tmp_path, monkeypatch):
    script = tmp_path / 'nvidia-smi'
    script.write_text('#!%s\n%s' % (sys.executable, textwrap.dedent(FAKE_SMI % (CAPTURE_FIELDS,))))
    script.chmod(0o755)
    monkeypatch.setenv('FAKE_SMI_SAMPLES', os.path.join(CAPTURE, 'samples-lms100.csv'))
    monkeypatch.setenv('FAKE_SMI_START', '130')  # inside the full-load phase: 650-760 W
    return str(script)


def replayed(field, count=80):
    column = CAPTURE_FIELDS.index(field)
    return [float(line.split(',')[column]) for line in capture_lines()[130:130 + count]]


def test_nvidia_smi_backend_integrates_instant_samples_from_a_real_subprocess(fake_smi, tmp_path):
    telemetry = tel.Telemetry([UUID], interval_s=0.1, nvidia_smi=fake_smi, backend='nvidia-smi')
    result = run_window(telemetry)
    assert result['backend'] == 'nvidia-smi' and result['method'] == 'samples' and result['power_source'] == 'instant'
    assert min(replayed('power.draw.instant')) <= result['avg_power_w'] <= max(replayed('power.draw.instant'))
    assert result['samples'] >= 4 and result['throttled'] == ['sw_power_cap']
    assert telemetry.reader.process.poll() is not None
    assert telemetry.write_series(str(tmp_path / 'series.csv')) == result['samples']


def test_nvidia_smi_of_an_old_driver_falls_back_to_power_draw(fake_smi, monkeypatch):
    monkeypatch.setenv('FAKE_SMI_REJECT', 'power.draw.instant,clocks_event_reasons.active')
    telemetry = tel.Telemetry([UUID], interval_s=0.1, nvidia_smi=fake_smi, backend='nvidia-smi')
    result = run_window(telemetry)
    assert telemetry.reader.fields[2] == 'power.draw' and telemetry.reader.fields[-1] == 'clocks_throttle_reasons.active'
    assert result['method'] == 'samples' and result['power_source'] == 'average'
    assert min(replayed('power.draw')) <= result['avg_power_w'] <= max(replayed('power.draw'))
    assert any('no power.draw.instant' in note for note in result['notes'])
    assert result['throttled'] == ['sw_power_cap']


def test_auto_falls_through_to_nvidia_smi(fake_smi, monkeypatch):
    monkeypatch.setitem(sys.modules, 'pynvml', None)

    def no_library():
        raise _nvml.NVMLError(_nvml.NVML_ERROR_LIBRARY_NOT_FOUND, _nvml.LIBRARY)
    monkeypatch.setattr(_nvml, 'Nvml', no_library)
    result = run_window(tel.Telemetry([UUID], nvidia_smi=fake_smi))
    assert result['backend'] == 'nvidia-smi'
    assert any(note.startswith('not used: pynvml') and 'ctypes: libnvidia-ml.so.1' in note for note in result['notes'])


def test_no_backend_at_all_is_an_error_naming_each(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, 'pynvml', None)
    with pytest.raises(ValueError, match='no telemetry backend works here: nvidia-smi: .*could not be run'):
        tel.Telemetry([UUID], nvidia_smi=str(tmp_path / 'absent'), backend='nvidia-smi').start()


def test_nvidia_smi_that_dies_is_reported_not_waited_for(fake_smi, monkeypatch):
    monkeypatch.setenv('FAKE_SMI_DIE', '1')
    telemetry = tel.Telemetry([UUID], interval_s=0.1, nvidia_smi=fake_smi, backend='nvidia-smi')
    telemetry.start()
    began = time.monotonic()
    result = telemetry.stop()
    assert time.monotonic() - began < 2.0
    assert result['method'] == 'samples' and result['energy_j'] is not None  # the one sample, held over the window
    assert any('ended by itself with rc 15' in note and 'GPU is lost' in note for note in result['notes'])


def test_stop_twice_gives_the_same_result_and_a_closed_telemetry_refuses_to_start(monkeypatch):
    monkeypatch.setitem(sys.modules, 'pynvml', fake_pynvml())
    telemetry = tel.Telemetry([UUID], interval_s=0.05, backend='pynvml')
    result = run_window(telemetry, 1)
    assert telemetry.stop() is result
    telemetry.close()
    with pytest.raises(ValueError, match='closed: make a new one'):
        telemetry.start()


def test_close_without_stop_ends_nvidia_smi(fake_smi):
    telemetry = tel.Telemetry([UUID], interval_s=0.1, nvidia_smi=fake_smi, backend='nvidia-smi')
    telemetry.start()
    telemetry.close()
    assert telemetry.reader.process.poll() is not None
    telemetry.close()


def test_no_samples_and_no_counter_is_said(monkeypatch):
    module = fake_pynvml(energy=False)
    module.nvmlDeviceGetFieldValues = lambda uuid, ids: [types.SimpleNamespace(fieldId=186, nvmlReturn=3, valueType=1, value=None)]

    def no_power(uuid):
        raise module.NVMLError(3)
    module.nvmlDeviceGetPowerUsage = no_power
    monkeypatch.setitem(sys.modules, 'pynvml', module)
    result = run_window(tel.Telemetry([UUID], interval_s=0.05, backend='pynvml'), 2)
    assert result['energy_j'] is None and result['avg_power_w'] is None
    assert any(note.startswith('no energy: no counter and no power samples on ' + UUID) for note in result['notes'])


def test_non_finite_readings_are_dropped_with_a_note(monkeypatch, tmp_path):
    """NaN power (every other read, a double field), an infinite temperature and a NaN energy counter are
    dropped where they are read and named in the notes; the figures come from the finite readings and hold no NaN."""
    module = fake_pynvml()
    reads = []

    def fields(uuid, ids):
        reads.append(uuid)
        value = float('nan') if len(reads) % 2 else 412000.0
        return [types.SimpleNamespace(fieldId=ids[0], nvmlReturn=0, valueType=0, value=types.SimpleNamespace(dVal=value))]
    module.nvmlDeviceGetFieldValues = fields
    module.nvmlDeviceGetTemperature = lambda uuid, sensor: float('inf')
    module.nvmlDeviceGetTotalEnergyConsumption = lambda uuid: float('nan')
    monkeypatch.setitem(sys.modules, 'pynvml', module)
    telemetry = tel.Telemetry([UUID], interval_s=0.05, backend='pynvml')
    result = run_window(telemetry, 4)
    assert result['method'] == 'samples' and result['avg_power_w'] == pytest.approx(412.0)
    assert result['per_gpu'][0]['temp_c_max'] is None
    json.dumps(result, allow_nan=False)  # what the result row's writer does
    note = next(note for note in result['notes'] if note.startswith('non-finite readings dropped'))
    assert 'energy_mj of %s x' % UUID in note and 'power_w of %s x' % UUID in note and 'temp_c of %s x' % UUID in note
    path = str(tmp_path / 'series.csv')
    telemetry.write_series(path)
    with open(path, encoding='utf-8') as handle:
        assert 'nan' not in handle.read().lower()


def test_drop_non_finite_on_a_nvidia_smi_line():
    fields = ('timestamp', 'uuid', 'power.draw.instant', 'utilization.gpu', 'temperature.gpu')
    sample = tel.parse_sample_line('2026/12/02 10:00:00.000, %s, nan, 99, inf' % UUID, fields, utc=True)
    dropped = {}
    assert tel.drop_non_finite(sample, dropped) is sample
    assert (sample['power_w'], sample['sm_util'], sample['temp_c']) == (None, 99, None)
    assert dropped == {(UUID, 'power_w'): 1, (UUID, 'temp_c'): 1}
    assert tel.dropped_note(dropped) == 'non-finite readings dropped (NaN or inf from the driver): power_w of %s x1, ' \
                                        'temp_c of %s x1' % (UUID, UUID)
    assert tel.dropped_note({}) is None
