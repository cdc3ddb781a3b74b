# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""bench_run's energy per measured repeat: the builtin harness over real HTTP against the SGLang emulator,
whose load drives the simulated GPU's power (tests/sim/nvidia_smi/sim_gpu_power.py), measured through the fake
pynvml (the counter) and the fake nvidia-smi (instant samples); telemetry off, no GPUs and a broken backend leave
the run as it was, with null energy keys and a note."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import stat
import sys

import pytest

from ansible_collections.specdec.bench.plugins.module_utils._stage import harness_run as _harness_run, sglang_client as _sglang_client
from ansible_collections.specdec.bench.plugins.module_utils._stage.harness import ENERGY_KEYS, RESULT_KEYS
from ansible_collections.specdec.bench.plugins.module_utils._telemetry import SERIES_COLUMNS
from ansible_collections.specdec.bench.plugins.modules import bench_run

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import DFLASH_ARGS, EMULATOR, LAYOUT, REPO  # noqa: E402  pylint: disable=wrong-import-position
from test_bench_run import builtin_args  # noqa: E402  pylint: disable=wrong-import-position

SMI_DIR = os.path.join(REPO, 'tests', 'sim', 'nvidia_smi')
PYNVML = os.path.join(REPO, 'tests', 'sim', 'pynvml', 'pynvml.py')
with open(LAYOUT, encoding='utf-8') as _handle:
    GPUS = [gpu['uuid'] for gpu in json.load(_handle)['gpus']]
GPU1 = GPUS[1]  # the emulator's CUDA_VISIBLE_DEVICES=1


@pytest.fixture
def powered(emulator, tmp_path, monkeypatch):
    """A DFLASH emulator on simulated GPU 1 that publishes its load, and this process set to read the same GPUs: the
    layout and state dir in the environment, the fake pynvml importable as pynvml, the fake nvidia-smi on PATH."""
    state = str(tmp_path / 'gpu-state')
    emu = emulator(DFLASH_ARGS, env={'PYTHONPATH': EMULATOR + os.pathsep + SMI_DIR, 'SIM_GPU_STATE_DIR': state})
    emu.wait_ready()
    monkeypatch.setenv('SIM_GPU_LAYOUT', LAYOUT)
    monkeypatch.setenv('SIM_GPU_STATE_DIR', state)
    for name in ('SIM_PROC_ROOT', 'CUDA_VISIBLE_DEVICES'):
        monkeypatch.delenv(name, raising=False)
    spec = importlib.util.spec_from_file_location('pynvml', PYNVML)
    fake = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, 'pynvml', fake)
    spec.loader.exec_module(fake)
    tools = tmp_path / 'bin'
    tools.mkdir()
    wrapper = tools / 'nvidia-smi'
    wrapper.write_text('#!/bin/sh\nexec %s %s "$@"\n' % (sys.executable, os.path.join(SMI_DIR, 'nvidia_smi.py')))
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv('PATH', str(tools) + os.pathsep + os.environ.get('PATH', ''))
    return emu


def args(emu, tmp_path, **extra):
    values = dict(num_prompts=16, output_len=64, gpus=[GPU1], telemetry_interval=0.05)
    values.update(extra)
    return builtin_args(emu, tmp_path, 4, **values)


def read_result(tmp_path, repeat=1):
    with open(str(tmp_path / 'stage' / ('result-random-t0-c4-r%d.json' % repeat)), encoding='utf-8') as handle:
        return json.load(handle)


def read_series(tmp_path, repeat=1):
    with open(str(tmp_path / 'stage' / ('telemetry-random-t0-c4-r%d.csv' % repeat)), encoding='utf-8', newline='') as handle:
        return list(csv.reader(handle))


def assert_energy(row, method, backend):
    assert set(ENERGY_KEYS) <= set(RESULT_KEYS) and set(row) == set(RESULT_KEYS)
    assert (row['energy_method'], row['energy_backend'], row['power_source']) == (method, backend, 'instant')
    assert row['energy_j'] > 0 and row['idle_power_w'] > 0 and row['total_output_tokens'] == 16 * 64
    assert row['output_tokens_per_j'] == pytest.approx(row['total_output_tokens'] / row['energy_j'], rel=1e-12)
    assert row['j_per_output_token'] == pytest.approx(row['energy_j'] / row['total_output_tokens'], rel=1e-12)
    assert row['energy_samples'] >= 1 and row['gpu_throttled'] == []
    assert row['telemetry_file'] == 'telemetry-random-t0-c4-r%d.csv' % row['repeat']


def assert_series(tmp_path, repeat=1):
    rows = read_series(tmp_path, repeat)
    assert tuple(rows[0]) == SERIES_COLUMNS and len(rows) > 1
    assert set(row[1] for row in rows[1:]) == {GPU1}  # the stage's GPUs only
    assert all(float(row[2]) > 0 for row in rows[1:])
    times = [float(row[0]) for row in rows[1:]]
    assert times == sorted(times) and times[0] >= 0
    return rows


def test_counter_by_pynvml_per_measured_repeat(run_module, powered, tmp_path):
    result = run_module(bench_run, args(powered, tmp_path, repeats=2))
    assert result['exit_code'] == 0, result
    for repeat in (1, 2):
        row = read_result(tmp_path, repeat)
        assert_energy(row, 'counter', 'pynvml')
        assert row['energy_note'] is None, row['energy_note']
        # the emulator's load drew more than the idle GPU: the run's mean power is above the idle figure
        assert row['avg_power_w'] > row['idle_power_w']
        assert_series(tmp_path, repeat)
        assert result['results'][repeat - 1]['energy_j'] == row['energy_j']
    summary = result['result']
    assert summary['energy_method'] == 'counter' and summary['telemetry_file'] is None
    assert summary['energy_j'] == pytest.approx((read_result(tmp_path, 1)['energy_j'] + read_result(tmp_path, 2)['energy_j']) / 2)


def test_nvidia_smi_backend_integrates_instant_samples(run_module, powered, tmp_path):
    result = run_module(bench_run, args(powered, tmp_path, telemetry='nvidia-smi'))
    assert result['exit_code'] == 0, result
    row = read_result(tmp_path)
    assert_energy(row, 'samples', 'nvidia-smi')
    assert row['avg_power_w'] > row['idle_power_w']
    assert_series(tmp_path)


@pytest.mark.parametrize('extra, note', [
    (dict(telemetry='off'), 'telemetry off'),
    (dict(gpus=[]), 'no GPUs given (gpus): no telemetry'),
])
def test_no_telemetry_leaves_nulls_and_says_why(run_module, powered, tmp_path, extra, note):
    result = run_module(bench_run, args(powered, tmp_path, **extra))
    assert result['exit_code'] == 0, result
    row = read_result(tmp_path)
    assert row['complete'] is True and row['energy_note'] == note
    assert all(row[key] is None for key in ENERGY_KEYS if key != 'energy_note')
    assert not any(name.startswith('telemetry-') for name in os.listdir(str(tmp_path / 'stage')))


def test_a_broken_backend_never_fails_the_run(run_module, powered, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, 'pynvml', None)  # import pynvml raises ImportError
    result = run_module(bench_run, args(powered, tmp_path, telemetry='pynvml'))
    assert result['exit_code'] == 0, result
    row = read_result(tmp_path)
    assert row['complete'] is True and row['completed'] == 16
    assert all(row[key] is None for key in ENERGY_KEYS if key != 'energy_note')
    assert row['energy_note'].startswith('telemetry failed: ValueError: no telemetry backend works here: pynvml')


def test_an_unknown_gpu_never_fails_the_run(run_module, powered, tmp_path):
    result = run_module(bench_run, args(powered, tmp_path, gpus=['GPU-00000000-0000-0000-0000-000000000000']))
    assert result['exit_code'] == 0, result
    row = read_result(tmp_path)
    assert row['complete'] is True and row['energy_j'] is None and 'GPU-00000000' in row['energy_note']


def test_telemetry_interval_is_checked(run_module, tmp_path):
    result = run_module(bench_run, dict(concurrency=1, num_prompts=1, input_len=1, output_len=1,
                                        output_dir=str(tmp_path / 'stage'), telemetry_interval=0.01))
    assert result['exit_code'] == 1 and result['msg'] == 'telemetry_interval must be 0.05 to 1 seconds, got 0.01'


class FakeMeter:
    def __init__(self):
        self.span = None

    def window(self, t0, t1):
        self.span = (t0, t1)


@pytest.mark.parametrize('text, written, ended, span', [
    ('{"completed": 8, "duration": 2.5}\n', 100.0, 100.2, (97.5, 100.0)),
    ('{"completed": 8, "duration": 2.5}\n', 100.3, 100.2, None),  # written after the client ended: not its run
    ('{"completed": 8}\n', 100.0, 100.2, None),
    ('', 100.0, 100.2, None),
])
def test_the_sglang_clients_measured_window(text, written, ended, span):
    meter = FakeMeter()
    _sglang_client.client_window(meter, text, written, ended)
    assert meter.span == span


def test_telemetry_path_is_the_layouts():
    assert _harness_run.telemetry_path('/r/s/result-gsm8k-t0.7-c4-r2.json') == '/r/s/telemetry-gsm8k-t0.7-c4-r2.csv'
    assert os.path.basename(_harness_run.telemetry_path('/r/result-random-t0-c1-r1.json')) == \
        _harness_run.results_file('telemetry', dataset='random', temperature=0, concurrency=1, repeat=1)


def test_bench_stage_passes_the_stage_gpus_and_its_telemetry_options():
    from test_bench_stage_bench_run import STAGE, bench_run_args  # pylint: disable=import-outside-toplevel
    stage = dict(STAGE, gpus=[GPU1])
    assert bench_run_args(stage)['gpus'] == [GPU1]
    assert bench_run_args(dict(STAGE, gpus=None))['gpus'] == []
    assert bench_run_args(stage)['telemetry'] == 'auto'
    assert bench_run_args(stage, bench_stage_telemetry='off')['telemetry'] == 'off'
    assert bench_run_args(stage)['telemetry_interval'] == 0.1


def test_sglang_harness_energy_over_the_clients_measured_run(run_module, powered, tmp_path, monkeypatch):
    """SGLang's client (test_bench_run's fake, its captured line) runs while the GPU is sampled: the figures are
    narrowed to its measured run, inside the sampled span, by the samples."""
    from test_bench_run import FakeClient, sglang_args  # pylint: disable=import-outside-toplevel
    from testhelpers import wait_until  # pylint: disable=import-outside-toplevel,import-error
    from ansible.module_utils.basic import AnsibleModule  # pylint: disable=import-outside-toplevel
    meters = []
    begin = _harness_run.EnergyMeter.begin

    def recording_begin(self):
        begin(self)
        meters.append(self)

    monkeypatch.setattr(_harness_run.EnergyMeter, 'begin', recording_begin)
    FakeClient(monkeypatch)
    client = AnsibleModule.run_command

    def sampled_client(module, command, **kwargs):
        if command[1] != '-c':  # the client's run: the GPU has been sampled a few times meanwhile
            telemetry = meters[-1].telemetry
            wait_until(lambda: sum(1 for sample in list(telemetry.samples) if sample['t'] > telemetry.t_start) >= 3,
                       'three telemetry samples after start()')
        return client(module, command, **kwargs)

    monkeypatch.setattr(AnsibleModule, 'run_command', sampled_client)
    result = run_module(bench_run, sglang_args(tmp_path, gpus=[GPU1], telemetry_interval=0.05))
    assert result['exit_code'] == 0, result
    row = read_result(tmp_path)
    assert (row['energy_method'], row['energy_backend']) == ('samples', 'pynvml')
    assert row['energy_j'] > 0 and row['energy_samples'] >= 1
    assert row['output_tokens_per_j'] == pytest.approx(row['total_output_tokens'] / row['energy_j'])
    assert 'measured run' in row['energy_note']
    rows = read_series(tmp_path)
    assert tuple(rows[0]) == SERIES_COLUMNS and {r[1] for r in rows[1:]} == {GPU1}


def test_a_nan_from_the_driver_never_discards_the_run(run_module, powered, tmp_path, monkeypatch):
    """A GPU with no energy counter whose instant power reads NaN (a double field NVML fills with NaN) made
    the row's energy NaN, which strict JSON refused: the measured run's row was never written. The NaN readings are
    dropped, the note says so, and the row is written."""
    fake = sys.modules['pynvml']
    fields = fake.nvmlDeviceGetFieldValues

    def no_counter(handle):
        raise fake.NVMLError(fake.NVML_ERROR_NOT_SUPPORTED)

    def nan_power(handle, ids):
        values = fields(handle, ids)
        for value in values:
            if value.fieldId == fake.NVML_FI_DEV_POWER_INSTANT:
                value.nvmlReturn, value.valueType, value.value.dVal = 0, fake.NVML_VALUE_TYPE_DOUBLE, float('nan')
        return values

    monkeypatch.setattr(fake, 'nvmlDeviceGetTotalEnergyConsumption', no_counter)
    monkeypatch.setattr(fake, 'nvmlDeviceGetFieldValues', nan_power)
    result = run_module(bench_run, args(powered, tmp_path, telemetry='pynvml'))
    assert result['exit_code'] == 0, result
    row = read_result(tmp_path)
    assert row['complete'] is True and row['completed'] == 16
    assert row['energy_j'] is None and row['avg_power_w'] is None and row['idle_power_w'] is None
    assert row['output_tokens_per_j'] is None and row['energy_backend'] == 'pynvml'
    assert 'non-finite' in row['energy_note'] and 'power_w' in row['energy_note'] and GPU1 in row['energy_note']
    assert all(cell != 'nan' for line in read_series(tmp_path)[1:] for cell in line)
