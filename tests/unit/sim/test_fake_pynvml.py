"""The fake pynvml (tests/sim/pynvml/pynvml.py) answers the collection's GPU probe as the fake nvidia-smi does.

The probe prefers NVML when pynvml imports (gpu_facts backend auto), and the simulated hosts have the fake one on
/usr/bin/python3's path; so the same gpu_facts code runs here twice on one simulated host, with live processes
claiming GPUs: once with backend=nvml through the fake pynvml, once with backend=smi through the fake nvidia-smi
(run as a program, its CSV read by the collection's parsers). The facts must be the same, field by field, except:

    power_draw_w   NVML reports mW, nvidia-smi prints W with two decimals: on a real host they differ by up to
                   5 mW (and by what the draw did between the two reads); compared within 0.005 W.

Everything else, processes and their used memory included, is equal on a real host too (nvidia-smi reads NVML).
"""

import inspect
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.specdec.bench.plugins.module_utils import _gpu_probe, _nvidia_smi
from ansible_collections.specdec.bench.plugins.modules import gpu_facts

from simtools import DEADLINE_S, cmdline, load_module, wait_until

REPO = Path(__file__).resolve().parents[3]
SMI = REPO / "tests" / "sim" / "nvidia_smi" / "nvidia_smi.py"
PYNVML = REPO / "tests" / "sim" / "pynvml" / "pynvml.py"
LAYOUTS = REPO / "tests" / "sim" / "layouts"
MIB = 1024 * 1024
POWER_RESOLUTION_W = 0.005


nvml = load_module("sim_pynvml_probe", PYNVML)


def clean_env():
    """The caller's environment without anything that would make a process a GPU claimant."""
    return {k: v for k, v in os.environ.items() if not k.startswith("SIM_") and k != "CUDA_VISIBLE_DEVICES"}


class SimHost:
    """One simulated host in this process: its layout and claims directory in the environment (read by the fake
    pynvml), nvidia-smi resolved to the fake one and run as a program, pynvml resolved to the fake one."""

    def __init__(self, monkeypatch, tmp_path, layout):
        self.layout = layout
        self.layout_path = tmp_path / "layout.json"
        self.layout_path.write_text(json.dumps(layout))
        self.state = tmp_path / "state"
        self.started = []
        for key, value in (("SIM_GPU_LAYOUT", str(self.layout_path)), ("SIM_GPU_STATE_DIR", str(self.state))):
            monkeypatch.setenv(key, value)
        for key in ("SIM_PROC_ROOT", "SIM_GPU_MEMORY_MIB", "CUDA_VISIBLE_DEVICES"):
            monkeypatch.delenv(key, raising=False)

        def get_bin_path(_module, arg, required=False, opt_dirs=None):  # pylint: disable=unused-argument
            return "/usr/bin/nvidia-smi" if arg == "nvidia-smi" else None

        def run_command(module, args, **_kwargs):
            assert args[0] == "/usr/bin/nvidia-smi"
            env = dict(os.environ, **module.run_command_environ_update)
            done = subprocess.run([sys.executable, str(SMI)] + list(args[1:]), env=env, capture_output=True,
                                  text=True, timeout=DEADLINE_S, check=False)
            return done.returncode, done.stdout, done.stderr

        monkeypatch.setattr(AnsibleModule, "get_bin_path", get_bin_path)
        monkeypatch.setattr(AnsibleModule, "run_command", run_command)
        monkeypatch.setattr(_gpu_probe, "load_nvml", lambda: nvml)

    def env(self, **extra):
        env = clean_env()
        env.update(SIM_GPU_LAYOUT=str(self.layout_path), SIM_GPU_STATE_DIR=str(self.state))
        env.update(extra)
        return env

    def spawn(self, **extra_env):
        """A live `sleep` with this environment, once it runs sleep (before exec it still has our environ)."""
        proc = subprocess.Popen(["sleep", "60"], env=self.env(**extra_env), start_new_session=True)
        self.started.append(proc)
        wait_until(lambda: cmdline(proc.pid)[:1] == [b"sleep"], "pid %d to exec sleep" % proc.pid)
        return proc

    def write_claim(self, pid, data):
        claims = self.state / "claims"
        claims.mkdir(parents=True, exist_ok=True)
        (claims / ("%d.json" % pid)).write_text(json.dumps(data))

    def stop(self):
        for proc in self.started:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=DEADLINE_S)


@pytest.fixture
def sim_host(monkeypatch, tmp_path):
    hosts = []

    def make(layout):
        hosts.append(SimHost(monkeypatch, tmp_path, layout))
        return hosts[-1]

    yield make
    for host in hosts:
        host.stop()
    while nvml._refcount > 0:  # pylint: disable=protected-access
        nvml.nvmlShutdown()


def read_layout(name):
    return json.loads((LAYOUTS / (name + ".json")).read_text())


def both_backends(run_module):
    """(nvml result, smi result) of gpu_facts on the same host state."""
    through_nvml = run_module(gpu_facts, {"backend": "nvml"})
    through_smi = run_module(gpu_facts, {"backend": "smi"})
    assert (through_nvml["backend"], through_smi["backend"]) == ("nvml", "smi")
    assert through_nvml["warning_texts"] == [] and through_smi["warning_texts"] == []
    return through_nvml, through_smi


def assert_same_facts(through_nvml, through_smi):
    gpus_nvml = through_nvml["ansible_facts"]["nvidia_gpus"]
    gpus_smi = through_smi["ansible_facts"]["nvidia_gpus"]
    assert len(gpus_nvml) == len(gpus_smi)
    for by_nvml, by_smi in zip(gpus_nvml, gpus_smi):
        assert set(by_nvml) == set(by_smi)
        assert by_nvml["power_draw_w"] == pytest.approx(by_smi["power_draw_w"], abs=POWER_RESOLUTION_W)
        for key in sorted(set(by_nvml) - {"power_draw_w"}):
            assert (key, by_nvml[key]) == (key, by_smi[key]), "GPU %d" % by_smi["index"]
    assert through_nvml["ansible_facts"]["nvidia_driver"] == through_smi["ansible_facts"]["nvidia_driver"]
    return gpus_nvml


# --------------------------------------------------------------------------------------------
# the probe's facts through either backend
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["ct200", "a100box"])
def test_the_probe_sees_the_same_host_through_nvml_and_nvidia_smi(sim_host, run_module, name):
    layout = read_layout(name)
    host = sim_host(layout)
    # a server on GPUs 1 and 3 (environment claim) and a trainer on GPU 0 whose claim file also sets its utilization
    server = host.spawn(SIM_GPU_MEMORY_MIB="20480", CUDA_VISIBLE_DEVICES="1,3")
    trainer = host.spawn()
    host.write_claim(trainer.pid, {"memory_mib": 7000, "utilization_pct": 63, "gpus": [0]})

    gpus = assert_same_facts(*both_backends(run_module))

    assert [p["pid"] for p in gpus[0]["processes"]] == [trainer.pid]
    assert [(p["pid"], p["name"], p["used_memory_mib"]) for p in gpus[1]["processes"]] == [(server.pid, "sleep", 20480)]
    assert gpus[3]["processes"] == gpus[1]["processes"] and gpus[2]["processes"] == []
    assert (gpus[1]["memory_used_mib"], gpus[0]["memory_used_mib"], gpus[0]["utilization_gpu_pct"]) == (20480, 7000, 63)
    total, reserved = layout["gpu_defaults"]["memory.total"], layout["gpu_defaults"]["memory.reserved"]
    assert gpus[1]["memory_free_mib"] == total - reserved - 20480 and gpus[1]["unexplained_memory_mib"] == 0
    gpu = gpus[4]
    assert (gpu["pci_bus_id"], gpu["serial"], gpu["compute_capability"]) == (
        layout["gpus"][4]["pci.bus_id"], layout["gpus"][4]["serial"], layout["gpu_defaults"]["compute_cap"])
    assert gpu["power_limit_w"] == layout["gpu_defaults"]["power.limit"] and gpu["ecc_mode"] is True
    facts = run_module(gpu_facts)
    assert facts["backend"] == "nvml"  # backend auto prefers NVML when pynvml imports, as on the sim hosts
    driver = facts["ansible_facts"]["nvidia_driver"]
    assert driver == {"version": layout["driver_version"], "cuda_version": layout["cuda_version"]}


def test_what_the_layout_marks_missing_is_null_through_either_backend(sim_host, run_module):
    """Bracketed values and null raise NVMLError_NotSupported, which the probe turns into null as it does "[N/A]"."""
    layout = read_layout("a100box")
    layout["gpus"] = layout["gpus"][:2]
    layout["gpus"][1].update({"serial": "[N/A]", "mig.mode.current": "[N/A]", "pcie.link.gen.max": "[Not Supported]",
                              "vbios_version": None, "power.limit": "[N/A]", "persistence_mode": "Enabled",
                              "compute_mode": "Exclusive_Process", "pstate": "P8", "ecc.mode.current": "Disabled"})
    sim_host(layout)
    gpus = assert_same_facts(*both_backends(run_module))
    odd = gpus[1]
    assert (odd["serial"], odd["mig_mode"], odd["pcie_link_gen_max"], odd["vbios_version"], odd["power_limit_w"]) == \
        (None, None, None, None, None)
    assert (odd["persistence_mode"], odd["compute_mode"], odd["pstate"], odd["ecc_mode"]) == \
        (True, "Exclusive_Process", "P8", False)
    assert gpus[0]["persistence_mode"] is False and gpus[0]["mig_mode"] is False

    nvml.nvmlInit()
    handle = nvml.nvmlDeviceGetHandleByIndex(1)
    for call in (nvml.nvmlDeviceGetSerial, nvml.nvmlDeviceGetMigMode, nvml.nvmlDeviceGetMaxPcieLinkGeneration,
                 nvml.nvmlDeviceGetVbiosVersion, nvml.nvmlDeviceGetPowerManagementLimit):
        with pytest.raises(nvml.NVMLError_NotSupported):
            call(handle)


def test_the_old_gpu_flag_refuses_the_energy_counter_only(sim_host, run_module):
    layout = read_layout("ct200")
    layout["gpus"][7]["nvml_total_energy"] = False
    sim_host(layout)
    gpus = assert_same_facts(*both_backends(run_module))
    assert gpus[7]["uuid"] == layout["gpus"][7]["uuid"] and gpus[7]["pci_bus_id"] == layout["gpus"][7]["pci.bus_id"]

    nvml.nvmlInit()
    old, new = nvml.nvmlDeviceGetHandleByIndex(7), nvml.nvmlDeviceGetHandleByIndex(6)
    with pytest.raises(nvml.NVMLError_NotSupported):
        nvml.nvmlDeviceGetTotalEnergyConsumption(old)
    assert nvml.nvmlDeviceGetTotalEnergyConsumption(new) >= 0
    assert nvml.nvmlDeviceGetPowerUsage(old) == round(layout["gpus"][7]["power.draw"] * 1000)


# --------------------------------------------------------------------------------------------
# the calls one by one: nvidia-ml-py's names, types and errors
# --------------------------------------------------------------------------------------------

def test_every_nvml_call_of_the_probe_is_simulated():
    """nvml_snapshot reads NVML through value('name', ...) and nvml.name(...); a call the fake lacks would be a
    silent null (the probe catches AttributeError), so each one must exist."""
    source = inspect.getsource(_nvidia_smi.nvml_snapshot)
    names = set(re.findall(r"value\('(nvml\w+)'", source)) | set(re.findall(r"nvml\.(nvml\w+)", source))
    assert len(names) >= 25
    assert sorted(name for name in names if not hasattr(nvml, name)) == []


def test_types_and_units_follow_nvidia_ml_py(sim_host):
    layout = read_layout("ct200")
    host = sim_host(layout)
    server = host.spawn(SIM_GPU_MEMORY_MIB="1500", CUDA_VISIBLE_DEVICES=layout["gpus"][2]["uuid"])
    nvml.nvmlInit()
    handle = nvml.nvmlDeviceGetHandleByIndex(2)

    assert nvml.nvmlSystemGetCudaDriverVersion() == nvml.nvmlSystemGetCudaDriverVersion_v2() == 13000
    pci = nvml.nvmlDeviceGetPciInfo(handle)
    assert (pci.busId, pci.busIdLegacy, pci.domain, pci.bus, pci.device) == (
        b"00000000:49:00.0", b"0000:49:00.0", 0, 0x49, 0)
    assert pci.pciDeviceId == 0x2BB510DE
    assert nvml.nvmlDeviceGetCudaComputeCapability(handle) == (12, 0)
    assert nvml.nvmlDeviceGetEccMode(handle) == [nvml.NVML_FEATURE_ENABLED] * 2
    assert nvml.nvmlDeviceGetMigMode(handle) == [nvml.NVML_DEVICE_MIG_DISABLE] * 2
    assert nvml.nvmlDeviceGetPowerManagementLimit(handle) == 600000
    assert nvml.nvmlDeviceGetPerformanceState(handle) == nvml.NVML_PSTATE_0
    assert nvml.nvmlDeviceGetComputeMode(handle) == nvml.NVML_COMPUTEMODE_DEFAULT
    assert nvml.nvmlDeviceGetSerial(handle) == layout["gpus"][2]["serial"]

    memory = nvml.nvmlDeviceGetMemoryInfo(handle, version=nvml.nvmlMemory_v2)
    assert (memory.version, memory.total, memory.reserved, memory.used, memory.free) == (
        nvml.nvmlMemory_v2, 97887 * MIB, 530 * MIB, 1500 * MIB, (97887 - 530 - 1500) * MIB)
    v1 = nvml.nvmlDeviceGetMemoryInfo(handle)
    assert (v1.used, v1.free) == ((530 + 1500) * MIB, memory.free)
    with pytest.raises(nvml.NVMLError_ArgumentVersionMismatch):
        nvml.nvmlDeviceGetMemoryInfo(handle, version=1)

    procs = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
    assert [(p.pid, p.usedGpuMemory, p.gpuInstanceId, p.computeInstanceId) for p in procs] == [
        (server.pid, 1500 * MIB, 0xFFFFFFFF, 0xFFFFFFFF)]
    assert nvml.nvmlDeviceGetComputeRunningProcesses(nvml.nvmlDeviceGetHandleByIndex(3)) == []
    assert nvml.nvmlSystemGetProcessName(server.pid) == "sleep"

    host.stop()
    wait_until(lambda: nvml.nvmlDeviceGetComputeRunningProcesses(handle) == [], "the claim to end with its process")
    with pytest.raises(nvml.NVMLError_NotFound):
        nvml.nvmlSystemGetProcessName(server.pid)
    nvml.nvmlShutdown()
    with pytest.raises(nvml.NVMLError_Uninitialized):
        nvml.nvmlSystemGetCudaDriverVersion()
