"""The simulated GPUs' board power: the model (tests/sim/nvidia_smi/sim_gpu_power.py), the fake nvidia-smi's
power fields and -lms loop (run as a real executable) and the fake pynvml (tests/sim/pynvml/pynvml.py).

Loads are published the way the emulator publishes them (sim_gpu_power.publish, here and from a child
process); the figures are compared with what the real H200 showed (../shared/fixtures/nvidia-smi/h200-power):
power.draw is a 1-second average that lags a load step, the energy counter is monotonic, and power.draw.instant
integrated over time gives the counter's energy.
"""

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from simtools import DEADLINE_S, load_module, wait_until

REPO = Path(__file__).resolve().parents[3]
SMI_DIR = REPO / "tests" / "sim" / "nvidia_smi"
SMI = SMI_DIR / "nvidia_smi.py"
PYNVML = REPO / "tests" / "sim" / "pynvml" / "pynvml.py"
LAYOUTS = REPO / "tests" / "sim" / "layouts"
sys.path.insert(0, str(SMI_DIR))

import sim_gpu_power as power  # noqa: E402

CT200 = json.loads((LAYOUTS / "ct200.json").read_text())
GPU0 = CT200["gpus"][0]["uuid"]
IDLE0 = CT200["gpus"][0]["power.draw"]
PEAK = CT200["gpu_defaults"]["power.limit"] * power.PEAK_SHARE


nvml = load_module("sim_pynvml", PYNVML)


@pytest.fixture
def host(tmp_path, monkeypatch):
    """A CT200-like host: its layout (GPU 7 marked without the energy counter) and a private state dir."""
    layout = json.loads(json.dumps(CT200))
    layout["gpus"][7]["nvml_total_energy"] = False
    path = tmp_path / "layout.json"
    path.write_text(json.dumps(layout))
    state = tmp_path / "state"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIM_") and k != "CUDA_VISIBLE_DEVICES"}
    env.update({"SIM_GPU_LAYOUT": str(path), "SIM_GPU_STATE_DIR": str(state)})
    for key in ("SIM_GPU_LAYOUT", "SIM_GPU_STATE_DIR"):
        monkeypatch.setenv(key, env[key])
    monkeypatch.delenv("SIM_PROC_ROOT", raising=False)
    nvml.nvmlInit()
    yield env
    while nvml._refcount > 0:
        nvml.nvmlShutdown()


def smi(env, *args):
    done = subprocess.run([sys.executable, str(SMI)] + list(args), env=env, capture_output=True, text=True,
                          timeout=DEADLINE_S, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def smi_power(env, index=0):
    """(power.draw, power.draw.average, power.draw.instant) of one GPU from the fake nvidia-smi."""
    out = smi(env, "--query-gpu=power.draw,power.draw.average,power.draw.instant", "--format=csv,noheader,nounits",
              "-i", str(index))
    return tuple(float(x) for x in out.strip().split(","))


def publish(env, load, lease_s=30.0, owner="test.0", keys=(GPU0,)):
    return power.publish(owner, list(keys), load, lease_s, env["SIM_GPU_STATE_DIR"])


def instant_w(handle):
    return nvml.nvmlDeviceGetFieldValues(handle, [nvml.NVML_FI_DEV_POWER_INSTANT])[0].value.uiVal / 1000.0


# --------------------------------------------------------------------------------------------
# the model (pure)
# --------------------------------------------------------------------------------------------

def test_the_load_before_a_write_never_changes_so_the_counter_is_monotonic():
    state, t, readings = power.empty_state(), 1000.0, []
    plan = [("a", 0.5, 2.0), ("b", 0.7, 0.5), ("a", 0.0, 0.0), ("b", 0.3, 3.0), ("c", 1.0, 0.2), ("b", 0.0, 0.0)]
    for owner, load, lease in plan * 3:
        before = power.load_seconds(state, t)
        state = power.set_owner(state, owner, load, t, lease)
        assert power.load_seconds(state, t) == pytest.approx(before, abs=1e-9)
        for step in range(10):
            readings.append(power.reading(state, 30.0, 580.0, 0.0, t + step * 0.07).energy_mj)
        t += 0.7
    assert readings == sorted(readings)
    assert all(0 <= power.load_at(state, x) <= 1 for x in (1000.0 + i * 0.1 for i in range(200)))


def test_a_lease_ends_the_load_of_an_owner_that_stopped_writing():
    state = power.set_owner(power.empty_state(), "dead.0", 0.8, 100.0, lease_s=2.0)
    assert power.load_at(state, 101.9) == pytest.approx(0.8)
    assert power.load_at(state, 102.1) == 0.0
    assert power.load_seconds(state, 200.0) == pytest.approx(1.6)


def test_loads_of_two_owners_add_up_to_at_most_one():
    state = power.set_owner(power.empty_state(), "a.0", 0.7, 0.0, 10.0)
    state = power.set_owner(state, "b.0", 0.6, 1.0, 10.0)
    assert power.load_at(state, 0.5) == pytest.approx(0.7)
    assert power.load_at(state, 5.0) == 1.0
    assert power.load_at(state, 10.5) == pytest.approx(0.6)


def test_old_segments_are_compacted_without_changing_the_integral():
    state = power.empty_state()
    for i in range(100):
        state = power.set_owner(state, "a.0", 0.1 + (i % 5) * 0.2, i * 0.5, 1.0)
    assert len(state["segments"]) <= power.KEEP_S / 0.5 + 2
    # each load lasts until the next write (0.5 s), the last one its whole lease (1 s)
    expected = sum(0.5 * (0.1 + (i % 5) * 0.2) for i in range(100)) + 0.5 * 0.9
    assert power.load_seconds(state, 60.0) == pytest.approx(expected)


# --------------------------------------------------------------------------------------------
# the fake nvidia-smi
# --------------------------------------------------------------------------------------------

def test_an_idle_gpu_draws_the_layouts_idle_figure(host):
    for index, gpu in enumerate(CT200["gpus"]):
        assert smi_power(host, index) == (gpu["power.draw"],) * 3


def test_power_rises_with_load_up_to_the_limit(host):
    publish(host, 0.5)
    _draw, _avg, half = smi_power(host)
    publish(host, 1.0)
    _draw, _avg, full = smi_power(host)
    assert half == pytest.approx(IDLE0 + 0.5 * (PEAK - IDLE0), abs=0.01)
    assert full == pytest.approx(PEAK, abs=0.01) and full <= CT200["gpu_defaults"]["power.limit"]
    assert smi_power(host, 1)[2] == CT200["gpus"][1]["power.draw"]  # a GPU nobody loads stays idle


def test_power_draw_is_a_one_second_average_that_lags_a_load_step(host):
    start = publish(host, 1.0)
    draw, average, instant = smi_power(host)
    late = time.time() - start   # the query ran between `start` and now: the mean covers that much load
    assert instant == pytest.approx(PEAK, abs=0.01)
    assert draw == average <= IDLE0 + (PEAK - IDLE0) * late + 0.01
    assert late > 0.8 or draw < instant - 100
    wait_until(lambda: smi_power(host)[0] >= PEAK - 0.01, "power.draw to catch up")
    stop = publish(host, 0.0)
    draw, _average, instant = smi_power(host)
    late = time.time() - stop
    assert instant == IDLE0 and draw >= PEAK - (PEAK - IDLE0) * late - 0.01
    assert late > 0.8 or draw > IDLE0 + 100   # right after a load power.draw still shows it


def test_lms_100_prints_a_line_every_100_ms_until_killed(host):
    proc = subprocess.Popen([sys.executable, str(SMI), "--query-gpu=timestamp,index,power.draw.instant",
                             "--format=csv", "-lms", "100", "-i", "0"], env=host, stdout=subprocess.PIPE, text=True)
    try:
        lines = [proc.stdout.readline() for _line in range(11)]
        assert proc.poll() is None
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=DEADLINE_S)
    assert lines[0] == "timestamp, index, power.draw.instant [W]\n"
    stamps = [datetime.strptime(line.split(",")[0], "%Y/%m/%d %H:%M:%S.%f") for line in lines[1:]]
    gaps = sorted((b - a).total_seconds() for a, b in zip(stamps, stamps[1:]))
    assert 0.08 <= gaps[len(gaps) // 2] <= 0.13, gaps
    assert all(line.endswith(" W\n") for line in lines[1:])
    assert proc.returncode == 0


@pytest.mark.parametrize("args", [["-lms", "0"], ["-l", "x"], ["-l", "1", "-lms", "100"]])
def test_bad_loop_arguments_are_refused(host, args):
    done = subprocess.run([sys.executable, str(SMI), "--query-gpu=index", "--format=csv"] + args, env=host,
                          capture_output=True, text=True, timeout=DEADLINE_S, check=False)
    assert done.returncode == 2 and "Invalid combination" in done.stdout


def test_instant_samples_every_100_ms_match_the_counter_and_power_draw_overestimates_after_load(host):
    """The H200 table, reproduced: right after a load, power.draw x time is far above the counter's energy,
    power.draw.instant x time within a few percent of it."""
    handle = nvml.nvmlDeviceGetHandleByUUID(GPU0)
    publish(host, 1.0)
    wait_until(lambda: nvml.nvmlDeviceGetPowerUsage(handle) >= (PEAK - 0.01) * 1000, "a full second of load")
    proc = subprocess.Popen([sys.executable, str(SMI), "--query-gpu=timestamp,power.draw,power.draw.instant",
                             "--format=csv,noheader,nounits", "-lms", "100", "-i", "0"], env=host,
                            stdout=subprocess.PIPE, text=True)
    try:
        proc.stdout.readline()
        e0, t0 = nvml.nvmlDeviceGetTotalEnergyConsumption(handle), time.time()
        publish(host, 0.0)
        rows = []
        while time.time() - t0 < 1.5:
            rows.append(proc.stdout.readline().split(","))
        e1, t1 = nvml.nvmlDeviceGetTotalEnergyConsumption(handle), time.time()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=DEADLINE_S)
    counter_j = (e1 - e0) / 1000.0
    draw_j = sum(float(r[1]) for r in rows) / len(rows) * (t1 - t0)
    instant_j = sum(float(r[2]) for r in rows) / len(rows) * (t1 - t0)
    assert counter_j == pytest.approx(IDLE0 * (t1 - t0), rel=0.05)
    assert draw_j > 2 * counter_j
    assert instant_j == pytest.approx(counter_j, rel=0.06)


# --------------------------------------------------------------------------------------------
# the fake pynvml
# --------------------------------------------------------------------------------------------

def test_the_counter_difference_is_the_integral_of_instant_power_within_1_percent(host):
    """Instant power, sampled as often as the fake answers and once right at each load change (it is constant in
    between), integrated over the window, against two reads of the counter."""
    handle = nvml.nvmlDeviceGetHandleByUUID(GPU0)
    e0, t0 = nvml.nvmlDeviceGetTotalEnergyConsumption(handle), time.time()
    points, counters = [(t0, instant_w(handle))], [e0]
    for load in (0.3, 1.0, 0.0, 0.6):
        changed = publish(host, load)
        points.append((changed, instant_w(handle)))
        while time.time() - changed < 0.4:
            points.append((time.time(), instant_w(handle)))
            counters.append(nvml.nvmlDeviceGetTotalEnergyConsumption(handle))
    e1, t1 = nvml.nvmlDeviceGetTotalEnergyConsumption(handle), time.time()
    points.sort()
    integral = sum(p * (b - a) for (a, p), (b, _q) in zip(points, points[1:] + [(t1, None)]))
    counter_j = (e1 - e0) / 1000.0
    assert counters + [e1] == sorted(counters + [e1])
    assert counter_j == pytest.approx(integral, rel=0.01)
    assert counter_j > IDLE0 * 1.6 * 2    # the load was drawn


def test_pynvml_matches_nvidia_smi(host):
    publish(host, 0.4)
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    assert nvml.nvmlDeviceGetUUID(handle) == GPU0
    assert nvml.nvmlDeviceGetName(handle) == CT200["gpu_defaults"]["name"]
    assert nvml.nvmlSystemGetDriverVersion() == CT200["driver_version"]
    assert nvml.nvmlDeviceGetCount() == 8
    draw, _avg, instant = smi_power(host)
    assert instant_w(handle) == pytest.approx(instant, abs=0.01)
    assert nvml.nvmlDeviceGetPowerUsage(handle) / 1000 >= draw - 0.01   # the average still rising
    memory = nvml.nvmlDeviceGetMemoryInfo(handle)
    # v1, as NVML's: used = total - free, the driver-reserved memory included
    assert memory.total == CT200["gpu_defaults"]["memory.total"] * 2 ** 20
    assert memory.used == CT200["gpu_defaults"]["memory.reserved"] * 2 ** 20
    memory = nvml.nvmlDeviceGetMemoryInfo(handle, version=nvml.nvmlMemory_v2)
    assert (memory.used, memory.reserved) == (0, CT200["gpu_defaults"]["memory.reserved"] * 2 ** 20)
    assert nvml.nvmlDeviceGetUtilizationRates(handle).gpu == 100  # a load of 0.4 (over a third): kernels all the time
    publish(host, 0.15)  # half of that third: 50%, by both tools (the fake NVML's figures are cached for 50 ms)
    assert smi(host, "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits", "-i", "0").strip() == "50"
    deadline = time.monotonic() + DEADLINE_S
    while nvml.nvmlDeviceGetUtilizationRates(handle).gpu != 50 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert nvml.nvmlDeviceGetUtilizationRates(handle).gpu == 50
    publish(host, 0.4)
    assert nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM) == CT200["gpu_defaults"]["clocks.current.sm"]
    assert nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM) == CT200["gpu_defaults"]["clocks.current.memory"]
    assert nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU) > CT200["gpus"][0]["temperature.gpu"]
    assert nvml.nvmlDeviceGetCurrentClocksEventReasons(handle) == nvml.nvmlClocksEventReasonNone
    idle = nvml.nvmlDeviceGetHandleByIndex(1)
    assert nvml.nvmlDeviceGetCurrentClocksEventReasons(idle) == nvml.nvmlClocksEventReasonGpuIdle


def test_pynvml_refuses_what_the_real_one_refuses(host):
    with pytest.raises(nvml.NVMLError_NotFound) as err:
        nvml.nvmlDeviceGetHandleByUUID("GPU-00000000-0000-0000-0000-000000000000")
    assert err.value.value == nvml.NVML_ERROR_NOT_FOUND and str(err.value) == "Not Found"
    assert isinstance(err.value, nvml.NVMLError)
    with pytest.raises(nvml.NVMLError_InvalidArgument):
        nvml.nvmlDeviceGetHandleByIndex(8)
    old = nvml.nvmlDeviceGetHandleByIndex(7)
    with pytest.raises(nvml.NVMLError_NotSupported):
        nvml.nvmlDeviceGetTotalEnergyConsumption(old)
    fields = nvml.nvmlDeviceGetFieldValues(old, [nvml.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION,
                                                 nvml.NVML_FI_DEV_POWER_INSTANT, 1])
    assert [f.nvmlReturn for f in fields] == [nvml.NVML_ERROR_NOT_SUPPORTED, nvml.NVML_SUCCESS,
                                              nvml.NVML_ERROR_NOT_SUPPORTED]
    assert fields[1].value.uiVal == round(CT200["gpus"][7]["power.draw"] * 1000)
    nvml.nvmlShutdown()
    with pytest.raises(nvml.NVMLError_Uninitialized):
        nvml.nvmlDeviceGetCount()
    assert nvml.NVMLError(nvml.NVML_ERROR_NOT_FOUND) == nvml.NVMLError_NotFound()


def test_pynvml_without_a_driver_cannot_init(host, monkeypatch, tmp_path):
    monkeypatch.setenv("SIM_GPU_LAYOUT", str(tmp_path / "none.json"))
    with pytest.raises(nvml.NVMLError_DriverNotLoaded):
        nvml.nvmlInit()


def test_a_dead_loaders_power_ends_with_its_lease_and_the_counter_keeps_counting(host):
    handle = nvml.nvmlDeviceGetHandleByUUID(GPU0)
    code = ("import sys, time; sys.path.insert(0, %r); import sim_gpu_power as p; "
            "p.publish('child.0', [%r], 1.0, 0.5, %r); time.sleep(60)"
            % (str(SMI_DIR), GPU0, host["SIM_GPU_STATE_DIR"]))
    child = subprocess.Popen([sys.executable, "-c", code], env=host)
    try:
        wait_until(lambda: instant_w(handle) > IDLE0 + 100, "the child's load")
        before = nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    finally:
        child.kill()
        child.wait()
    counters = [before]
    wait_until(lambda: counters.append(nvml.nvmlDeviceGetTotalEnergyConsumption(handle)) or
               instant_w(handle) == pytest.approx(IDLE0), "the dead child's lease to end")
    assert counters == sorted(counters) and counters[-1] > before


def test_the_simulated_trainer_loads_its_visible_gpus_while_it_trains(host, tmp_path):
    trainer = REPO / "tests" / "sim" / "trainer" / "sim_trainer.py"
    env = dict(host, PYTHONPATH=str(SMI_DIR), CUDA_VISIBLE_DEVICES="2,%s" % CT200["gpus"][3]["uuid"][:12],
               SPECDEC_RUN_DIR=str(tmp_path / "run"))
    handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(4)]
    proc = subprocess.Popen([sys.executable, str(trainer), "--steps", "30", "--pace", "0.05", "--load-seconds", "0",
                             "--format", "json"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: instant_w(handles[2]) > 400, "the trainer's load")
        assert instant_w(handles[3]) > 400
        assert instant_w(handles[0]) == CT200["gpus"][0]["power.draw"]
        assert proc.wait(timeout=DEADLINE_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert instant_w(handles[2]) == CT200["gpus"][2]["power.draw"]   # its last act: load 0
