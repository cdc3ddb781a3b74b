"""The simulated hosts are in the state of the field reports, and their nvidia-smi behaves like the real one.

Run by `molecule verify` (testinfra, one `host` per inventory host; real systemd in the ct200, none in the a100box).
"""
import csv
import io
import os
import pathlib
import re
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "helpers"))
from simhost import wait_for  # noqa: E402  pylint: disable=wrong-import-position

FIXTURES = pathlib.Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "nvidia-smi" / "h200-1gpu"
PRE_EXISTING_STOPPED = ["sglang-dflash-smoke.service", "sglang-ddtree-tree.service"]
HOLDER = "ddtree-qwen.service"
HOLDER_MIB = 56077


def name_of(host):
    return host.ansible.get_variables()["inventory_hostname"]


def only(host, wanted):
    if name_of(host) != wanted:
        pytest.skip(f"checks {wanted} only")


def smi_rows(host, *args):
    out = host.check_output("nvidia-smi " + " ".join(args))
    return [[cell.strip() for cell in row] for row in csv.reader(io.StringIO(out)) if row]


def gpu_memory_used(host):
    return {int(i): int(used) for i, used in smi_rows(host, "--query-gpu=index,memory.used", "--format=csv,noheader,nounits")}


def compute_apps(host):
    return smi_rows(host, "--query-compute-apps=pid,gpu_uuid,used_memory", "--format=csv,noheader,nounits")


def unit_props(host, unit, *props):
    out = host.check_output(f"systemctl show --property={','.join(props)} -- {unit}")
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def uuid_of(host, index):
    return smi_rows(host, f"--query-gpu=uuid --id={index}", "--format=csv,noheader")[0][0]


# --- CT200 --------------------------------------------------------------------------------------

def test_ct200_holder_runs_and_holds_gpu0_with_its_real_pid(host):
    only(host, "ct200")
    assert host.service(HOLDER).is_running
    assert host.service(HOLDER).is_enabled
    main_pid = unit_props(host, HOLDER, "MainPID")["MainPID"]
    gpu0 = uuid_of(host, 0)
    apps = wait_for(lambda: compute_apps(host), "the holder to show up in nvidia-smi")
    assert apps == [[main_pid, gpu0, str(HOLDER_MIB)]]
    used = gpu_memory_used(host)
    assert used[0] >= HOLDER_MIB
    assert all(used[i] < 1024 for i in range(1, 8)), used


@pytest.mark.parametrize("unit", PRE_EXISTING_STOPPED)
def test_ct200_stopped_units_are_installed_but_inactive(host, unit):
    only(host, "ct200")
    props = unit_props(host, unit, "LoadState", "ActiveState", "UnitFileState")
    assert props == {"LoadState": "loaded", "ActiveState": "inactive", "UnitFileState": "disabled"}


def test_ct200_has_no_results_yet(host):
    only(host, "ct200")
    assert not host.file("/root/bench_results").exists


def test_ct200_reports_eight_blackwell_gpus(host):
    only(host, "ct200")
    rows = smi_rows(host, "--query-gpu=index,name,memory.total,compute_cap", "--format=csv,noheader,nounits")
    assert rows == [[str(i), "NVIDIA RTX PRO 6000 Blackwell Server Edition", "97887", "12.0"] for i in range(8)]
    listing = host.check_output("nvidia-smi -L").splitlines()
    assert len(listing) == 8
    assert all(re.fullmatch(r"GPU \d: NVIDIA RTX PRO 6000 Blackwell Server Edition \(UUID: GPU-[0-9a-f-]{36}\)", line) for line in listing)


def _shape(field, value):
    """What must agree between two GPUs' answers for one field: the format, not the value."""
    if value.startswith("["):
        return value
    if field in ("uuid", "pci.bus_id", "vbios_version"):
        return re.sub(r"[0-9A-Fa-f]", "h", value)
    if field == "name":
        return "NVIDIA <name>"
    if field in ("persistence_mode", "mig.mode.current", "ecc.mode.current"):
        return "Enabled|Disabled" if value in ("Enabled", "Disabled") else value
    return re.sub(r"\d+", "9", value)


def test_ct200_query_gpu_matches_the_real_tool_field_for_field(host):
    """Same 28 fields as the real H200 capture: same header, and every value in the same format."""
    only(host, "ct200")
    real_header, real_values = (FIXTURES / "query_gpu_csv.txt").read_text().splitlines()[:2]
    fields = re.sub(r" \[[^]]*\]", "", real_header).split(", ")
    fields = ["clocks.sm" if f == "clocks.current.sm" else f for f in fields]
    out = host.check_output(f"nvidia-smi --query-gpu={','.join(fields)} --format=csv").splitlines()
    assert out[0] == real_header
    assert len(out) == 9
    real = real_values.split(", ")
    for line in out[1:]:
        values = line.split(", ")
        assert [_shape(f, v) for f, v in zip(fields, values)] == [_shape(f, v) for f, v in zip(fields, real)]


def test_ct200_bad_field_fails_like_the_real_tool(host):
    only(host, "ct200")
    result = host.run("nvidia-smi --query-gpu=index,no.such.field --format=csv")
    assert result.rc == 2
    # testinfra's ansible backend trims trailing newlines; the unit tests compare them byte for byte.
    assert (result.stdout + result.stderr).rstrip() == (FIXTURES / "query_gpu_badfield.txt").read_text().rstrip()


def test_ct200_stopping_the_holder_frees_gpu0(host):
    """Memory follows what really runs: stop the unit, GPU0 is free; start it, it is held again."""
    only(host, "ct200")
    baseline = gpu_memory_used(host)
    try:
        host.check_output(f"systemctl stop {HOLDER}")
        wait_for(lambda: not compute_apps(host), "GPU0's compute process to disappear")
        freed = gpu_memory_used(host)
        assert freed[0] <= baseline[0] - HOLDER_MIB
        assert {i: v for i, v in freed.items() if i} == {i: v for i, v in baseline.items() if i}
    finally:
        host.check_output(f"systemctl start {HOLDER}")
    wait_for(lambda: gpu_memory_used(host)[0] == baseline[0], "GPU0 to be held again")
    assert compute_apps(host)[0][0] == unit_props(host, HOLDER, "MainPID")["MainPID"]


# --- the A100 box -------------------------------------------------------------------------------

def test_a100box_reports_six_a100s_without_nvlink(host):
    only(host, "a100box")
    rows = smi_rows(host, "--query-gpu=index,name,memory.total,compute_cap", "--format=csv,noheader,nounits")
    assert rows == [[str(i), "NVIDIA A100-PCIE-40GB", "40960", "8.0"] for i in range(6)]
    topo = host.check_output("nvidia-smi topo -m")
    assert "GPU5" in topo
    assert not re.search(r"\bNV\d+\b", topo.split("Legend:")[0])
    assert host.check_output("nvidia-smi nvlink -s") == ""


def test_a100box_looks_like_a_docker_container(host):
    only(host, "a100box")
    assert host.file("/.dockerenv").exists
    assert host.check_output("hostname") == "82b7fc58d2f0"
    assert compute_apps(host) == []
