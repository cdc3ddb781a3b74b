"""The fake nvidia-smi (tests/sim/nvidia_smi/nvidia-smi), run as a real executable.

Formats are checked against the real tool's captured output in
tests/fixtures/nvidia-smi/h200-1gpu/ (the h200-1gpu layout replicates that host); GPU memory
claims are checked with real processes.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simtools import DEADLINE_S, cmdline, wait_until

REPO = Path(__file__).resolve().parents[3]
SMI = REPO / "tests" / "sim" / "nvidia_smi" / "nvidia_smi.py"
LAYOUTS = REPO / "tests" / "sim" / "layouts"
FIXTURES = REPO / "tests" / "fixtures" / "nvidia-smi" / "h200-1gpu"

# The 28 fields of query_gpu_csv.txt / query_gpu_nh.txt, as requested on the real host.
FIXTURE_FIELDS = (
    "index,uuid,name,pci.bus_id,driver_version,memory.total,memory.used,memory.free,"
    "utilization.gpu,utilization.memory,temperature.gpu,power.draw,power.limit,pstate,"
    "compute_cap,persistence_mode,mig.mode.current,ecc.mode.current,pcie.link.gen.current,"
    "pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,clocks.sm,clocks.max.sm,"
    "serial,vbios_version,display_mode,compute_mode"
)
APPS_FIELDS = "pid,process_name,gpu_uuid,gpu_bus_id,used_memory"


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------

def clean_env():
    """The caller's environment without anything that would make a process a GPU claimant."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith("SIM_") and k != "CUDA_VISIBLE_DEVICES"}


def fixture_text(name):
    return (FIXTURES / name).read_text()


def help_field_names(name):
    """[(canonical, [aliases])] from a captured --help-query-* text."""
    out = []
    for line in fixture_text(name).splitlines():
        if re.fullmatch(r'"[^"]+"( or "[^"]+")*', line):
            names = re.findall(r'"([^"]+)"', line)
            out.append((names[0], names[1:]))
    return out


def wait_for_exec(pid, argv0):
    """Until pid runs argv0 (after fork and before exec it still has the parent's environ)."""
    wait_until(lambda: cmdline(pid)[:1] == [argv0.encode()], "pid %d to exec %s" % (pid, argv0))


class Smi:
    """Runs the fake nvidia-smi with one layout and a private claims directory."""

    def __init__(self, layout, state_dir):
        self.layout = layout
        self.state_dir = state_dir

    def env(self, **extra):
        env = clean_env()
        env["SIM_GPU_LAYOUT"] = str(LAYOUTS / (self.layout + ".json"))
        env["SIM_GPU_STATE_DIR"] = str(self.state_dir)
        env.update(extra)
        return env

    def run(self, *args, **extra_env):
        return subprocess.run([sys.executable, str(SMI)] + list(args), env=self.env(**extra_env), check=False,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=DEADLINE_S)

    def out(self, *args):
        result = self.run(*args)
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    def rows(self, *args):
        return [line.split(", ") for line in self.out(*args).splitlines()]

    def memory_used(self):
        return [int(r[0]) for r in self.rows("--query-gpu=memory.used",
                                             "--format=csv,noheader,nounits")]

    def apps(self):
        return self.rows("--query-compute-apps=" + APPS_FIELDS, "--format=csv,noheader,nounits")

    def uuids(self):
        return [r[0] for r in self.rows("--query-gpu=uuid", "--format=csv,noheader")]

    def write_claim(self, pid, data):
        claims = Path(self.state_dir) / "claims"
        claims.mkdir(parents=True, exist_ok=True)
        path = claims / ("%d.json" % pid)
        path.write_text(json.dumps(data))
        return path


@pytest.fixture
def smi_factory(tmp_path):
    def make(layout):
        return Smi(layout, tmp_path / "state")
    return make


@pytest.fixture
def h200(smi_factory):
    return smi_factory("h200-1gpu")


@pytest.fixture
def ct200(smi_factory):
    return smi_factory("ct200")


@pytest.fixture
def a100(smi_factory):
    return smi_factory("a100box")


@pytest.fixture
def spawn():
    """Start real processes in their own session; kill and reap them all at the end."""
    started = []

    def start(argv, env, **kwargs):
        proc = subprocess.Popen(argv, env=env, start_new_session=True, **kwargs)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        stop(proc)


def stop(proc):
    """Kill a process group started by `spawn` and reap its leader."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(timeout=DEADLINE_S)
    if proc.stdout:
        proc.stdout.close()


# --------------------------------------------------------------------------------------------
# the real tool's formats (h200-1gpu replicates the captured host)
# --------------------------------------------------------------------------------------------

def test_list_gpus_matches_real_output(h200):
    assert h200.out("-L") == fixture_text("smi_L.txt")
    assert h200.out("--list-gpus") == fixture_text("smi_L.txt")


def test_query_gpu_csv_matches_real_output(h200):
    assert h200.out("--query-gpu=" + FIXTURE_FIELDS, "--format=csv") == \
        fixture_text("query_gpu_csv.txt")


def test_query_gpu_noheader_nounits_matches_real_output(h200):
    got = h200.out("--query-gpu=" + FIXTURE_FIELDS, "--format=csv,noheader,nounits")
    want = fixture_text("query_gpu_nh.txt")
    got_values, want_values = got.rstrip("\n").split(", "), want.rstrip("\n").split(", ")
    power = FIXTURE_FIELDS.split(",").index("power.draw")
    # power.draw moved between the two real captures (129.16 / 129.14); the rest is static.
    assert abs(float(got_values.pop(power)) - float(want_values.pop(power))) < 0.1
    assert got_values == want_values
    assert got.endswith("\n") and got.count("\n") == 1


def test_bad_field_fails_the_whole_query_like_the_real_tool(h200):
    result = h200.run("--query-gpu=index,no.such.field", "--format=csv")
    assert result.returncode == 2
    assert result.stdout == fixture_text("query_gpu_badfield.txt")


def test_topo_matrix_matches_real_output(h200):
    assert h200.out("topo", "-m") == fixture_text("topo.txt")


def test_nvlink_status_is_empty_without_nvlink(h200):
    assert h200.out("nvlink", "-s") == fixture_text("nvlink.txt") == ""


def test_compute_apps_idle(h200):
    assert h200.out("--query-compute-apps=" + APPS_FIELDS, "--format=csv,noheader,nounits") == \
        fixture_text("apps_idle.txt") == ""
    assert h200.out("--query-compute-apps=pid,name,used_memory", "--format=csv") == \
        "pid, process_name, used_gpu_memory [MiB]\n"


def test_summary_table_matches_real_output_but_the_clock(h200):
    got, want = h200.out().split("\n", 1), fixture_text("smi.txt").split("\n", 1)
    assert got[1] == want[1]
    assert re.fullmatch(r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4} {7}", got[0]), got[0]


def test_version(h200):
    assert h200.out("--version") == (
        "NVIDIA-SMI version  : 580.159.04\n"
        "NVML version        : 580.159\n"
        "DRIVER version      : 580.159.04\n"
        "CUDA Version        : 13.0\n"
    )


def test_every_query_gpu_field_and_alias_of_the_real_help_is_accepted(h200):
    fields = help_field_names("help_query_gpu.txt")
    assert len(fields) > 200
    canonical = [name for name, _aliases in fields]
    aliases = [(alias, name) for name, names in fields for alias in names]
    for requested, expected in ((canonical, canonical),
                                ([alias for alias, _name in aliases], [name for _alias, name in aliases])):
        lines = h200.out("--query-gpu=" + ",".join(requested), "--format=csv").splitlines()
        assert len(lines) == 2
        header = [re.sub(r" \[[^]]+\]$", "", h) for h in lines[0].split(", ")]
        assert header == expected
        assert len(lines[1].split(", ")) == len(requested)


def test_every_query_apps_field_and_alias_of_the_real_help_is_accepted(h200):
    fields = help_field_names("help_query_apps.txt")
    names = [n for name, aliases in fields for n in [name] + aliases]
    header = h200.out("--query-compute-apps=" + ",".join(names), "--format=csv").splitlines()
    assert len(header) == 1
    expected = [name for name, aliases in fields for _spelling in [name] + aliases]
    assert [re.sub(r" \[[^]]+\]$", "", h) for h in header[0].split(", ")] == expected


def test_units_and_bracketed_values(h200):
    header, row = h200.out("--query-gpu=memory.reserved,fan.speed,clocks.gr,"
                           "power.draw.instant,retired_pages.sbe,module.power.limit",
                           "--format=csv").splitlines()
    assert header == ("memory.reserved [MiB], fan.speed [%], clocks.current.graphics [MHz], "
                      "power.draw.instant [W], retired_pages.single_bit_ecc.count, "
                      "module.power.limit [W]")
    assert row == "615 MiB, [N/A], 1980 MHz, 129.16 W, [N/A], [N/A]"


def test_space_separated_option_values(h200):
    assert h200.out("--query-gpu", "index,name", "--format", "csv,noheader") == \
        "0, NVIDIA H200\n"


@pytest.mark.parametrize("args", [
    ["--query-gpu=index"],                          # no --format
    ["--query-gpu=index", "--format=json"],
    ["--format=csv"],                               # no query
    ["--no-such-option"],
])
def test_bad_command_lines_exit_2(h200, args):
    result = h200.run(*args)
    assert result.returncode == 2
    assert result.stdout


def test_missing_layout_looks_like_no_driver(h200, tmp_path):
    result = h200.run("-L", SIM_GPU_LAYOUT=str(tmp_path / "absent.json"))
    assert result.returncode == 9
    assert result.stdout == (
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running.\n\n")


# --------------------------------------------------------------------------------------------
# the other simulated hosts
# --------------------------------------------------------------------------------------------

def test_ct200_layout(ct200):
    rows = ct200.rows("--query-gpu=index,name,memory.total,compute_cap,power.limit,"
                      "pcie.link.gen.max,pcie.link.width.max,driver_version",
                      "--format=csv,noheader,nounits")
    assert [r[0] for r in rows] == [str(i) for i in range(8)]
    for row in rows:
        assert row[1:] == ["NVIDIA RTX PRO 6000 Blackwell Server Edition", "97887", "12.0",
                           "600.00", "5", "16", "580.95.05"]
    uuids = ct200.uuids()
    assert len(set(uuids)) == 8
    assert all(re.fullmatch(r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", u)
               for u in uuids)
    assert len(set(ct200.out("--query-gpu=pci.bus_id", "--format=csv").splitlines())) == 9
    topo = ct200.out("topo", "-m")
    matrix = [line.split("\t") for line in topo.splitlines()[1:9]]
    assert [row[0] for row in matrix] == ["GPU%d" % i for i in range(8)]
    assert {cell for row in matrix for cell in row[1:9]} == {" X ", "PIX", "NODE", "SYS"}
    assert [row[10] for row in matrix] == ["0"] * 4 + ["1"] * 4
    assert "NV" not in "".join("".join(row) for row in matrix)
    assert ct200.out("nvlink", "-s") == ""
    table = ct200.out()
    assert table.count("NVIDIA RTX PRO 6000 Blac...    On  |") == 8
    assert all(len(line) == 91 for line in table.splitlines()[1:] if line)


def test_a100box_layout(a100):
    rows = a100.rows("--query-gpu=name,memory.total,compute_cap,power.limit,pcie.link.gen.max",
                     "--format=csv,noheader,nounits")
    assert rows == [["NVIDIA A100-PCIE-40GB", "40960", "8.0", "250.00", "4"]] * 6
    assert "CUDA Version        : 13.2\n" in a100.out("--version")
    topo = a100.out("topo", "-m")
    assert topo.splitlines()[0] == ("\t\x1b[4mGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tCPU Affinity\t"
                                    "NUMA Affinity\tGPU NUMA ID\x1b[0m")
    assert not re.search(r"\bNV\d+", topo)
    assert a100.out("nvlink", "-s") == ""


def test_id_filter_by_index_uuid_and_bus_id(ct200):
    uuids = ct200.uuids()
    bus = ct200.rows("--query-gpu=pci.bus_id", "--format=csv,noheader")[5][0]
    got = ct200.rows("--query-gpu=index", "--format=csv,noheader",
                     "-i", "%s,2,%s" % (uuids[6], bus.replace("00000000:", "0000:")))
    assert got == [["2"], ["5"], ["6"]]
    assert ct200.rows("--query-gpu=index", "--format=csv,noheader", "--id=7") == [["7"]]
    assert ct200.out("-L", "-i", "1") == "GPU 1: NVIDIA RTX PRO 6000 Blackwell Server Edition " \
        "(UUID: %s)\n" % uuids[1]
    result = ct200.run("--query-gpu=index", "--format=csv", "-i", "8")
    assert result.returncode == 6


# --------------------------------------------------------------------------------------------
# GPU memory follows the processes that really run
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("by", ["uuid", "index"])
def test_env_claim_follows_a_real_process(ct200, spawn, by):
    uuids = ct200.uuids()
    bus_ids = [r[0] for r in ct200.rows("--query-gpu=pci.bus_id", "--format=csv,noheader")]
    before = ct200.memory_used()
    visible = uuids[3] if by == "uuid" else "3"
    proc = spawn(["sleep", "60"], ct200.env(CUDA_VISIBLE_DEVICES=visible,
                                            SIM_GPU_MEMORY_MIB="56077"))
    wait_for_exec(proc.pid, "sleep")

    assert ct200.apps() == [[str(proc.pid), "sleep", uuids[3], bus_ids[3], "56077"]]
    after = ct200.memory_used()
    assert after[3] == before[3] + 56077
    assert after[:3] + after[4:] == before[:3] + before[4:]
    free = ct200.rows("--query-gpu=memory.free", "--format=csv,noheader,nounits", "-i", "3")
    assert int(free[0][0]) == 97887 - 530 - after[3]
    assert "%16d      C   sleep" % proc.pid in ct200.out()
    assert ct200.out("--query-compute-apps=pid", "--format=csv,noheader", "-i", "2") == ""

    stop(proc)
    assert ct200.apps() == []
    assert ct200.memory_used() == before


def test_two_visible_gpus_are_both_claimed(ct200, spawn):
    uuids = ct200.uuids()
    before = ct200.memory_used()
    proc = spawn(["sleep", "60"], ct200.env(CUDA_VISIBLE_DEVICES="%s,%s" % (uuids[5], uuids[1]),
                                            SIM_GPU_MEMORY_MIB="1000"))
    wait_for_exec(proc.pid, "sleep")
    apps = ct200.apps()
    assert [(row[0], row[2], row[4]) for row in apps] == [
        (str(proc.pid), uuids[1], "1000"), (str(proc.pid), uuids[5], "1000")]
    after = ct200.memory_used()
    assert [a - b for a, b in zip(after, before)] == [0, 1000, 0, 0, 0, 1000, 0, 0]


def test_visible_devices_stop_at_the_first_invalid_entry(ct200, spawn):
    proc = spawn(["sleep", "60"], ct200.env(CUDA_VISIBLE_DEVICES="4,GPU-nope,5",
                                            SIM_GPU_MEMORY_MIB="10"))
    wait_for_exec(proc.pid, "sleep")
    assert [row[2] for row in ct200.apps()] == [ct200.uuids()[4]]


def test_child_with_inherited_claim_is_not_counted_twice(ct200, spawn):
    before = ct200.memory_used()
    code = ("import subprocess, sys\n"
            "child = subprocess.Popen(['sleep', '60'])\n"
            "print(child.pid, flush=True)\n"
            "child.wait()\n")
    parent = spawn([sys.executable, "-c", code],
                   ct200.env(CUDA_VISIBLE_DEVICES="0", SIM_GPU_MEMORY_MIB="4242"),
                   stdout=subprocess.PIPE, text=True)
    child_pid = int(parent.stdout.readline())
    wait_for_exec(child_pid, "sleep")
    assert [row[0] for row in ct200.apps()] == [str(parent.pid)]
    assert ct200.memory_used()[0] == before[0] + 4242

    stop(parent)
    assert ct200.apps() == []
    assert ct200.memory_used() == before


def test_claim_file_follows_a_real_process(ct200, spawn):
    uuids = ct200.uuids()
    before = ct200.memory_used()
    proc = spawn(["sleep", "60"], ct200.env(CUDA_VISIBLE_DEVICES="2"))
    wait_for_exec(proc.pid, "sleep")
    assert ct200.apps() == []                      # no claim yet

    ct200.write_claim(proc.pid, {"memory_mib": 1234, "utilization_pct": 37})
    assert [(row[0], row[2], row[4]) for row in ct200.apps()] == [(str(proc.pid), uuids[2], "1234")]
    assert ct200.memory_used()[2] == before[2] + 1234
    util = ct200.rows("--query-gpu=utilization.gpu", "--format=csv,noheader,nounits")
    assert [int(u[0]) for u in util] == [0, 0, 37, 0, 0, 0, 0, 0]

    stop(proc)                                     # the file stays; the pid is gone
    assert ct200.apps() == []
    assert ct200.memory_used() == before


def test_claim_file_wins_over_environment(ct200, spawn):
    proc = spawn(["sleep", "60"], ct200.env(CUDA_VISIBLE_DEVICES="1", SIM_GPU_MEMORY_MIB="1000"))
    wait_for_exec(proc.pid, "sleep")
    assert [row[4] for row in ct200.apps()] == ["1000"]
    ct200.write_claim(proc.pid, {"memory_mib": 2000})
    assert [row[4] for row in ct200.apps()] == ["2000"]


def test_claim_file_older_than_its_process_is_ignored(ct200, spawn):
    proc = spawn(["sleep", "60"], ct200.env(CUDA_VISIBLE_DEVICES="1"))
    wait_for_exec(proc.pid, "sleep")
    path = ct200.write_claim(proc.pid, {"memory_mib": 999})
    assert len(ct200.apps()) == 1
    stale = time.time() - 3600                     # written by an earlier owner of this pid
    os.utime(path, (stale, stale))
    assert ct200.apps() == []


def test_claim_file_of_a_dead_process_is_ignored(ct200, spawn):
    proc = spawn(["true"], ct200.env(CUDA_VISIBLE_DEVICES="1"))
    stop(proc)
    ct200.write_claim(proc.pid, {"memory_mib": 999})
    assert ct200.apps() == []


def test_nvlink_layout(tmp_path):
    layout = json.loads((LAYOUTS / "h200-1gpu.json").read_text())
    second = dict(layout["gpus"][0], uuid="GPU-00000000-1111-2222-3333-444444444444",
                  **{"pci.bus_id": "00000000:00:07.0"})
    layout["gpus"].append(second)
    for gpu in layout["gpus"]:
        gpu.update(nvlink_links=2, nvlink_speed="26.562 GB/s")
    layout["topology"] = [["X", "NV18"], ["NV18", "X"]]
    path = tmp_path / "nvl.json"
    path.write_text(json.dumps(layout))
    smi = Smi("unused", tmp_path / "state")
    env = {"SIM_GPU_LAYOUT": str(path)}
    topo = smi.run("topo", "-m", **env).stdout
    assert topo.splitlines()[1] == "GPU0\t X \tNV18\t0-15\t0\t\tN/A"
    assert smi.run("nvlink", "-s", "-i", "1", **env).stdout == (
        "GPU 1: NVIDIA H200 (UUID: GPU-00000000-1111-2222-3333-444444444444)\n"
        "\t Link 0: 26.562 GB/s\n"
        "\t Link 1: 26.562 GB/s\n")
