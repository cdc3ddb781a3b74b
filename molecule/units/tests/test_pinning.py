"""CPU and NUMA pinning of the units of molecule/units/converge.yml, on the simulated CT200 with real systemd.

The container has two CPUs online (0-1) and one NUMA node (0), while the layout puts GPU0-3 on node 0 (CPUs
0-47,96-143) and GPU4-7 on node 1: the plan keeps what is online here, so GPU1's stages are pinned to CPUs 0-1 and
node 0, and the TP4 stage on GPUs 1-4 too (GPU4's node is not online). A started unit's main process runs with that
CPU list and binds its memory to node 0.
"""
import json
import os
import re
import sys

import pytest
import testinfra

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "helpers"))
from simhost import wait_for  # noqa: E402  pylint: disable=wrong-import-position

CAMPAIGN = "units-test"
UNIT_DIR = "/etc/systemd/system"
PINNED = ["tp1-autoregressive", "tp1-ddtree-b64-k4", "tp4-autoregressive", "tp4-ddtree-b64-k4"]
STARTED = "tp1-autoregressive"


@pytest.fixture(name="host", scope="module")
def podman_host(host):
    """The same container through `podman exec` directly (as test_units.py)."""
    return testinfra.get_host(f"podman://{host.backend.get_hostname()}")


def unit_name(stage):
    return f"specdec-{CAMPAIGN}-{stage}.service"


def unit_props(host, unit, *props):
    out = host.check_output(f"systemctl show --property={','.join(props)} -- {unit}")
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def main_pid(host, unit):
    """The unit's main pid, None while it has none (systemd says 0)."""
    pid = int(unit_props(host, unit, "MainPID")["MainPID"] or 0)
    return pid or None


def online(host, what):
    return host.file(f"/sys/devices/system/{what}/online").content_string.strip()


def status_field(host, pid, name):
    return re.search(rf"^{name}:\s*(\S+)", host.file(f"/proc/{pid}/status").content_string, re.M).group(1)


def test_the_host_facts_and_the_plan_agree_on_what_is_online(host):
    plan = json.loads(host.file(f"/root/bench_results/{CAMPAIGN}/campaign.json").content_string)
    stages = {stage["id"]: stage for stage in plan["stages"]}
    assert online(host, "cpu") == "0-1"
    for stage in PINNED:
        assert (stages[stage]["cpu_affinity"], stages[stage]["numa_nodes"], stages[stage]["pin_note"]) == ("0-1", "0", None), stage
    assert stages["tp16-autoregressive"]["cpu_affinity"] is None and stages["tp16-autoregressive"]["pin_note"]


@pytest.mark.parametrize("stage", PINNED)
def test_the_unit_has_the_pinning_lines(host, stage):
    lines = host.file(f"{UNIT_DIR}/{unit_name(stage)}").content_string.splitlines()
    assert "CPUAffinity=0-1" in lines and "NUMAPolicy=bind" in lines and "NUMAMask=0" in lines
    props = unit_props(host, unit_name(stage), "CPUAffinity", "NUMAPolicy", "NUMAMask")
    assert props == {"CPUAffinity": "0-1", "NUMAPolicy": "bind", "NUMAMask": "0"}  # systemd read them


def test_a_started_unit_runs_on_its_cpus_with_its_memory_bound(host):
    unit = unit_name(STARTED)
    host.check_output(f"systemctl start {unit}")
    try:
        pid = wait_for(lambda: main_pid(host, unit), f"{unit} to have a main process")
        assert unit_props(host, unit, "ActiveState")["ActiveState"] == "active"
        assert status_field(host, pid, "Cpus_allowed_list") == "0-1"
        # the memory policy of every mapping: NUMAPolicy=bind with NUMAMask=0 (an unpinned process reads "default")
        policies = set(line.split()[1] for line in host.file(f"/proc/{pid}/numa_maps").content_string.splitlines())
        assert policies == {"bind:0"}
    finally:
        host.run(f"systemctl stop {unit}")
    assert unit_props(host, unit, "ActiveState", "Result") == {"ActiveState": "inactive", "Result": "success"}


def test_an_unpinned_process_reads_default(host):
    """The check above can fail: a process systemd starts without NUMAPolicy= has the default policy."""
    out = host.check_output("systemd-run --wait --pipe --quiet -- /bin/sh -c 'cut -d\" \" -f2 /proc/self/numa_maps | sort -u'")
    assert out.split() == ["default"]
