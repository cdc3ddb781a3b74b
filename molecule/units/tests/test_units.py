"""The units and results folders of molecule/units/converge.yml, on the simulated CT200 with real systemd.

Rendering starts nothing and touches nothing else; one rendered unit, started for real, brings the SGLang emulator up
on the GPU it names by UUID.
"""
import csv
import io
import json
import os
import re
import shlex
import sys

import pytest
import testinfra

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "helpers"))
from simhost import wait_for  # noqa: E402  pylint: disable=wrong-import-position

CAMPAIGN = "units-test"
UNIT_DIR = "/etc/systemd/system"
RESULTS = f"/root/bench_results/{CAMPAIGN}"
# unit stage id -> GPU indices, as converge.yml plans them; the TP16 stages do not fit on 8 GPUs
RENDERED = {
    "tp1-autoregressive": [1],
    "tp1-ddtree-b64-k4": [1],
    "tp4-autoregressive": [1, 2, 3, 4],
    "tp4-ddtree-b64-k4": [1, 2, 3, 4],
}
INFEASIBLE = ["tp16-autoregressive", "tp16-ddtree-b64-k4"]
STARTED = "tp1-autoregressive"
HOLDER = "ddtree-qwen.service"
SECRET = "not-a-real-token"


@pytest.fixture(name="host", scope="module")
def podman_host(host):
    """The same container (molecule names it after the inventory host) through `podman exec` directly.

    Through molecule's Ansible backend every command is an Ansible task, about seven times slower.
    """
    return testinfra.get_host(f"podman://{host.backend.get_hostname()}")


def unit_name(stage):
    return f"specdec-{CAMPAIGN}-{stage}.service"


def unit_path(stage):
    return f"{UNIT_DIR}/{unit_name(stage)}"


def unit_props(host, unit, *props):
    out = host.check_output(f"systemctl show --property={','.join(props)} -- {unit}")
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def smi_rows(host, *args):
    out = host.check_output("nvidia-smi " + " ".join(args))
    return [[cell.strip() for cell in row] for row in csv.reader(io.StringIO(out)) if row]


def uuids(host):
    return {int(index): uuid for index, uuid in smi_rows(host, "--query-gpu=index,uuid", "--format=csv,noheader")}


def environment(text):
    return dict(re.findall(r'^Environment="([A-Za-z_][A-Za-z0-9_]*)=(.*)"$', text, re.M))


def exec_args(text):
    """ExecStart's words, unquoted (the template quotes each word in single quotes, one flag per line)."""
    start = text.index("ExecStart=")
    lines = []
    for line in text[start + len("ExecStart="):].splitlines():
        lines.append(line.rstrip("\\").strip())
        if not line.endswith("\\"):
            break
    return re.findall(r"'((?:[^'\\]|\\.)*)'", " ".join(lines))


def health(host, port):
    """The emulator's /health status code, 0 when nothing answers (no curl in the image: python3's urllib)."""
    script = (
        "import urllib.request, urllib.error\n"
        "try:\n"
        f"    print(urllib.request.urlopen('http://127.0.0.1:{port}/health', timeout=2).status)\n"
        "except urllib.error.HTTPError as exc:\n"
        "    print(exc.code)\n"
        "except OSError:\n"
        "    print(0)\n"
    )
    return int(host.check_output(f"python3 -c {shlex.quote(script)}"))


def test_only_feasible_stages_have_units(host):
    rendered = host.check_output(f"ls {UNIT_DIR}").split()
    assert sorted(name for name in rendered if name.startswith(f"specdec-{CAMPAIGN}-")) == sorted(map(unit_name, RENDERED))
    for stage in INFEASIBLE:
        assert not host.file(unit_path(stage)).exists


@pytest.mark.parametrize("stage", sorted(RENDERED))
def test_unit_pins_its_gpus_by_uuid(host, stage):
    unit = host.file(unit_path(stage))
    assert unit.is_file and unit.user == "root" and unit.mode == 0o644
    gpus = uuids(host)
    assert environment(unit.content_string)["CUDA_VISIBLE_DEVICES"] == ",".join(gpus[i] for i in RENDERED[stage])


@pytest.mark.parametrize("stage", sorted(RENDERED))
def test_unit_runs_the_launcher_on_loopback_and_never_restarts(host, stage):
    text = host.file(unit_path(stage)).content_string
    assert text.startswith("#\n# Ansible managed\n#\n")
    words = exec_args(text)
    assert words[:3] == ["/usr/bin/python3", "-m", "sglang.launch_server"]
    assert "--host=127.0.0.1" in words
    assert f"--tp-size={len(RENDERED[stage])}" in words
    if "ddtree" in stage:
        assert "--speculative-algorithm=DDTREE" in words
        assert environment(text)["SGLANG_DDTREE_MAX_TOPK"] == "4"
    for line in ("Restart=no", "KillMode=mixed", f"SyslogIdentifier=specdec-{CAMPAIGN}-{stage}",
                 f"EnvironmentFile=-/etc/specdec/{CAMPAIGN}.env", "NoNewPrivileges=true", "ProtectSystem=full"):
        assert line in text.splitlines()
    assert "[Install]" not in text.splitlines()
    assert SECRET not in text


@pytest.mark.parametrize("stage", sorted(RENDERED))
def test_systemd_analyze_verify_accepts_the_unit(host, stage):
    result = host.run(f"systemd-analyze verify {unit_path(stage)}")
    assert result.rc == 0, result.stderr
    assert unit_path(stage) not in result.stderr  # ignored keys are only warnings, with status 0


@pytest.mark.parametrize("stage", sorted(RENDERED))
def test_rendering_started_nothing(host, stage):
    props = unit_props(host, unit_name(stage), "LoadState", "ActiveState", "UnitFileState")
    assert props == {"LoadState": "loaded", "ActiveState": "inactive", "UnitFileState": "static"}


def test_the_campaign_secrets_are_private(host):
    secrets = host.file(f"/etc/specdec/{CAMPAIGN}.env")
    assert secrets.user == "root" and secrets.mode == 0o600
    assert f'SPECDEC_TEST_TOKEN="{SECRET}"' in secrets.content_string.splitlines()
    assert host.file("/etc/specdec").mode == 0o700


def test_the_holder_still_runs(host):
    assert host.service(HOLDER).is_running
    main_pid = unit_props(host, HOLDER, "MainPID")["MainPID"]
    apps = smi_rows(host, "--query-compute-apps=pid,gpu_uuid", "--format=csv,noheader")
    assert [main_pid, uuids(host)[0]] in apps


def test_results_folders_exist_for_every_stage(host):
    assert host.file(RESULTS).is_directory and host.file(RESULTS).mode == 0o750
    for stage in sorted(RENDERED) + INFEASIBLE:
        folder = host.file(f"{RESULTS}/{stage}")
        assert folder.is_directory and folder.user == "root" and folder.mode == 0o750, stage


def test_campaign_json_is_the_plan(host):
    plan = json.loads(host.file(f"{RESULTS}/campaign.json").content_string)
    assert plan["campaign"] == CAMPAIGN
    assert [stage["id"] for stage in plan["stages"] if stage["feasible"]] == list(RENDERED)
    assert sorted(stage["id"] for stage in plan["stages"] if not stage["feasible"]) == INFEASIBLE


def test_earlier_results_survive_a_second_apply(host):
    """converge.yml left result-random-t0-c1-r1.json after its first apply; idempotence and check applied both roles again."""
    earlier = host.file(f"{RESULTS}/tp1-autoregressive/result-random-t0-c1-r1.json")
    assert json.loads(earlier.content_string)["written_by"] == "molecule/units converge"
    # campaign.json was written before that result and never again
    assert host.file(f"{RESULTS}/campaign.json").mtime <= earlier.mtime


def test_a_rendered_unit_starts_the_server_on_its_gpu(host):
    unit = unit_name(STARTED)
    words = exec_args(host.file(unit_path(STARTED)).content_string)
    port = int(next(word.split("=", 1)[1] for word in words if word.startswith("--port=")))
    gpu1 = uuids(host)[1]
    host.check_output(f"systemctl start {unit}")
    try:
        wait_for(lambda: health(host, port) == 200, f"{unit} to answer /health on {port}")
        main_pid = unit_props(host, unit, "MainPID")["MainPID"]
        assert main_pid != "0"
        apps = smi_rows(host, "--query-compute-apps=pid,gpu_uuid", "--format=csv,noheader")
        assert [main_pid, gpu1] in apps
    finally:
        host.run(f"systemctl stop {unit}")
    props = unit_props(host, unit, "ActiveState", "Result")
    assert props == {"ActiveState": "inactive", "Result": "success"}
    assert health(host, port) == 0


def test_a_unit_systemd_rejects_stays_in_staging_and_never_reaches_systemd(host):
    refusal = json.loads(host.file("/root/units-rejected.json").content_string)
    assert refusal["task"] == "Verify the staged units with systemd-analyze"
    assert host.file("/var/lib/specdec/units/units-rejected/specdec-units-rejected-tp1-autoregressive.service").exists
    assert not host.file("/etc/systemd/system/specdec-units-rejected-tp1-autoregressive.service").exists


def test_a_carriage_return_in_a_value_is_refused_before_anything_is_written(host):
    refusal = json.loads(host.file("/root/units-crlf.json").content_string)
    assert refusal["task"] == "Check the extra environment"
    assert "no control characters" in refusal["msg"]
    assert not host.file("/var/lib/specdec/units/units-crlf").exists
    assert host.check_output("ls /etc/systemd/system | grep -c specdec-units-crlf || true") == "0"
    assert not host.file("/tmp/PWNED").exists
