"""The conflicts role on the simulated CT200: ddtree-qwen.service holds GPU0 and is declared stoppable.

Each test runs the real playbooks (stop.yml, then playbooks/restore.yml) against molecule's inventory and leaves the
host as it found it: ddtree-qwen.service running on GPU0, no record.
"""
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest
import testinfra

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "helpers"))
from simhost import wait_for  # noqa: E402  pylint: disable=wrong-import-position

SCENARIO = pathlib.Path(__file__).resolve().parent.parent
REPO = SCENARIO.parent.parent
CAMPAIGN = "conflicts-test"
RECORD_DIR = "/var/lib/specdec/conflicts"
RECORD = f"{RECORD_DIR}/{CAMPAIGN}.json"
HOLDER = "ddtree-qwen.service"
HOLDER_MIB = 56077
INTRUDER = "specdec-test-holder"
# checks go straight through podman: each ansible-backed command costs a second or more
BOX = testinfra.get_host("podman://conflicts-ct200")


def playbook(path, *extra):
    """Run a playbook against molecule's inventory; returns (rc, output, changed count)."""
    cmd = [str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", os.environ["MOLECULE_INVENTORY_FILE"], str(path), *extra]
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    out = proc.stdout + proc.stderr
    recap = re.search(r"conflicts-ct200\s*:\s*ok=\d+\s+changed=(\d+)", out)
    return proc.returncode, out, int(recap.group(1)) if recap else None


def stop():
    return playbook(SCENARIO / "stop.yml")


def restore(*extra):
    return playbook(REPO / "playbooks" / "restore.yml", *extra)


def gpu_apps(host):
    """(gpu uuid, pid, MiB) of every compute process, from the (simulated) nvidia-smi."""
    out = host.check_output("nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory --format=csv,noheader,nounits")
    return [tuple(f.strip() for f in line.split(",")) for line in out.splitlines() if line.strip()]


def gpu_uuid(host, index):
    return host.check_output(f"nvidia-smi --query-gpu=uuid --format=csv,noheader -i {index}").strip()


def holder_pid(host):
    return int(host.check_output(f"systemctl show --property=MainPID --value {HOLDER}"))


def gpu0_held_by_holder(host):
    pid = holder_pid(host)
    uuid0 = gpu_uuid(host, 0)
    return pid > 0 and any(u == uuid0 and int(p) == pid and int(m) == HOLDER_MIB for u, p, m in gpu_apps(host))


def gpu0_free(host):
    uuid0 = gpu_uuid(host, 0)
    return not any(u == uuid0 for u, _pid, _mib in gpu_apps(host))


@pytest.fixture(name="box")
def as_found(host):
    """Every test starts and ends with the host as seeded: the holder running on GPU0, no record."""
    box = BOX
    assert box.service(HOLDER).is_running
    wait_for(lambda: gpu0_held_by_holder(box), f"{HOLDER} to hold GPU0")
    assert not box.file(RECORD).exists
    yield box
    box.run(f"systemctl stop {INTRUDER}.service")
    box.run(f"rm -f {RECORD_DIR}/*.json")
    box.run(f"systemctl start {HOLDER}")
    wait_for(lambda: gpu0_held_by_holder(box), f"{HOLDER} to hold GPU0 again")


def test_tp8_stops_the_declared_holder_and_restore_brings_it_back(box):
    # check mode reports the stop and changes nothing
    rc, out, changed = playbook(SCENARIO / "stop.yml", "--check")
    assert rc == 0 and changed, out
    assert box.service(HOLDER).is_running and gpu0_held_by_holder(box)
    assert not box.file(RECORD).exists

    rc, out, changed = stop()
    assert rc == 0 and changed, out
    assert not box.service(HOLDER).is_running
    # stopped, not disabled
    assert box.service(HOLDER).is_enabled
    assert gpu0_free(box)
    record = box.file(RECORD)
    assert record.exists and record.mode == 0o600 and record.user == "root"
    units = json.loads(record.content_string)["units"]
    assert list(units) == [HOLDER]
    assert units[HOLDER]["active_state"] == "active"
    assert units[HOLDER]["unit_file_state"] == "enabled"
    assert units[HOLDER]["main_pid"] > 0

    rc, out, changed = restore("-e", f"campaign={CAMPAIGN}")
    assert rc == 0 and changed, out
    assert box.service(HOLDER).is_running
    wait_for(lambda: gpu0_held_by_holder(box), f"{HOLDER} to hold GPU0 after the restore")
    assert not box.file(RECORD).exists

    # restoring twice is harmless: no record, nothing changes
    pid = holder_pid(box)
    rc, out, changed = restore("-e", f"campaign={CAMPAIGN}")
    assert rc == 0 and changed == 0, out
    assert holder_pid(box) == pid


def test_undeclared_holder_is_refused_before_anything_changes(box):
    box.check_output(
        f"systemd-run --unit {INTRUDER} --setenv=CUDA_VISIBLE_DEVICES=2 --setenv=SIM_GPU_MEMORY_MIB=1000 sleep 600"
    )
    uuid2 = gpu_uuid(box, 2)
    apps = wait_for(lambda: [a for a in gpu_apps(box) if a[0] == uuid2], "the intruder to hold GPU2")
    pid = int(box.check_output(f"systemctl show --property=MainPID --value {INTRUDER}.service"))
    assert [int(a[1]) for a in apps] == [pid]

    rc, out, _err = stop()
    assert rc != 0, out
    message = " ".join(out.split())
    assert re.search(rf"GPU2 {uuid2}: pid {pid} \([^)]*sleep\), unit {INTRUDER}\.service, 1000 MiB", message), out
    # nothing changed: the declared holder still runs, nothing was recorded
    assert box.service(HOLDER).is_running
    assert gpu0_held_by_holder(box)
    assert not box.file(RECORD).exists
    assert box.service(f"{INTRUDER}.service").is_running


def test_an_interrupted_run_is_repaired_by_the_restore_playbook(box):
    """An earlier run recorded a unit and died; the next stop keeps that record, then dies too; restore.yml repairs."""
    earlier = {"campaign": CAMPAIGN, "units": {"sglang-dflash-smoke.service": {
        "active_state": "inactive", "sub_state": "dead", "unit_file_state": "disabled", "main_pid": 0}}}
    box.check_output(f"mkdir -p {RECORD_DIR} && printf '%s' '{json.dumps(earlier)}' > {RECORD} && chmod 600 {RECORD}")
    rc, out, _err = stop()
    assert rc == 0, out
    units = json.loads(box.file(RECORD).content_string)["units"]
    assert units["sglang-dflash-smoke.service"] == earlier["units"]["sglang-dflash-smoke.service"]
    assert units[HOLDER]["active_state"] == "active"
    # the run is interrupted here: the record says ddtree-qwen was active, and it is stopped
    assert not box.service(HOLDER).is_running

    # check mode reports the repair and changes nothing
    rc, out, changed = restore("--check")
    assert rc == 0 and changed, out
    assert not box.service(HOLDER).is_running
    assert box.file(RECORD).exists

    # every record, as after a crash nobody knows the campaign
    rc, out, changed = restore()
    assert rc == 0 and changed, out
    assert box.service(HOLDER).is_running
    wait_for(lambda: gpu0_held_by_holder(box), f"{HOLDER} to hold GPU0 after the repair")
    # only what was running comes back
    assert not box.service("sglang-dflash-smoke.service").is_running
    assert not box.file(RECORD).exists
