"""The a100box runs without systemd, as the real A100 box (a Docker container whose PID 1 is its entrypoint) does.

The probe must say so (init.service_backend: supervisor), warn instead of listing units, and name a GPU holder by the
service of specdec's supervisor that runs it; the ct200 keeps systemd.
"""
import base64
import importlib.util
import json
import os
import pathlib
import sys

import subprocess

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "helpers"))
from simhost import ansible_env, gpu_pids, wait_for  # noqa: E402  pylint: disable=wrong-import-position

REPO = pathlib.Path(__file__).resolve().parents[3]
SERVICE = "specdec-sim-probe-tp2.service"
FOLDER = f"/var/lib/specdec/services/{SERVICE}"
SUPERVISOR = "/tmp/specdec-supervisor.py"


def supervisor_module():
    """plugins/module_utils/_supervisor.py (standard library only), loaded by path: its SUPERVISOR_SCRIPT is what runs."""
    spec = importlib.util.spec_from_file_location("specdec_supervisor", REPO / "plugins" / "module_utils" / "_supervisor.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def name_of(host):
    return host.ansible.get_variables()["inventory_hostname"]


def only(host, wanted):
    if name_of(host) != wanted:
        pytest.skip(f"checks {wanted} only")


def summary(host):
    path = pathlib.Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "probe" / f"{name_of(host)}.json"
    return json.loads(path.read_text())


def probe(host, *args):
    """specdec.bench.probe run on the host as the role runs it (no summary_dir: nothing saved)."""
    return host.ansible("specdec.bench.probe", " ".join(args), check=False)


def put(host, path, data):
    host.check_output(f"mkdir -p {os.path.dirname(path)} && echo {base64.b64encode(data.encode()).decode()} | base64 -d > {path}")


def test_a100box_pid1_is_not_systemd(host):
    only(host, "a100box")
    assert host.file("/proc/1/comm").content_string.strip() == "sim-init"
    assert not host.file("/run/systemd/system").exists
    result = host.run("systemctl is-system-running")
    assert result.rc != 0
    assert "not been booted with systemd" in host.run("systemctl list-units").stderr


def test_ct200_pid1_is_systemd(host):
    only(host, "ct200")
    assert host.file("/proc/1/comm").content_string.strip() == "systemd"
    assert host.file("/run/systemd/system").is_directory


def test_the_probe_found_each_hosts_service_backend(host):
    expected = {"ct200": {"pid1": "systemd", "service_backend": "systemd"},
                "a100box": {"pid1": "sim-init", "service_backend": "supervisor"}}[name_of(host)]
    assert summary(host)["init"] == expected


def test_a100box_units_are_a_warning_not_a_failure(host):
    only(host, "a100box")
    assert summary(host)["units"] == {}
    result = probe(host, "gather=units,host", "units=sglang-*,ddtree-qwen")
    assert not result.get("failed"), result
    assert result["ansible_facts"]["systemd_units"] == {}
    assert result["ansible_facts"]["specdec_host"]["init"] == {"pid1": "sim-init", "systemd": False, "service_backend": "supervisor"}
    # testinfra drops warnings from the result: the ad-hoc run prints them
    adhoc = subprocess.run([str(REPO / ".venv" / "bin" / "ansible"), name_of(host), "-i", os.environ["MOLECULE_INVENTORY_FILE"],
                            "-m", "specdec.bench.probe", "-a", "gather=units units=sglang-*"],
                           cwd=REPO, env=ansible_env(), capture_output=True, text=True, timeout=120, check=False)
    assert adhoc.returncode == 0, adhoc.stdout + adhoc.stderr
    assert "systemd is not running on this host" in adhoc.stdout + adhoc.stderr


def test_a100box_gpu_holder_is_named_by_its_supervised_service(host):
    """An SGLang server (the emulator) on GPUs 2 and 3 under specdec's supervisor: the probe names its service."""
    only(host, "a100box")
    definition = {"name": SERVICE, "cwd": "/",
                  "argv": ["python3", "-m", "sglang.launch_server", "--model-path", "/data/models/Qwen3.6-27B",
                           "--tp-size", "2", "--host", "127.0.0.1", "--port", "30100"],
                  "env": {"CUDA_VISIBLE_DEVICES": "2,3", "SIM_SGLANG_LOAD_SECONDS": "0.5"}}
    put(host, f"{FOLDER}/service.json", json.dumps(definition))
    put(host, SUPERVISOR, supervisor_module().SUPERVISOR_SCRIPT)
    host.check_output(f"rm -f {FOLDER}/run.json {FOLDER}/exit.json")
    # detached as specdec.bench.service starts it: a session of its own, no stdio; sim-init reaps it
    host.check_output(f"setsid python3 {SUPERVISOR} {FOLDER} </dev/null >/dev/null 2>&1 &")
    try:
        run = json.loads(wait_for(lambda: host.file(f"{FOLDER}/run.json").exists and host.file(f"{FOLDER}/run.json").content_string,
                                  "the supervisor's run.json"))
        assert wait_for(lambda: gpu_pids(host, 2), "the server on GPU2") == [run["pid"]]
        facts = probe(host, "gather=gpu", "topology=false")["ansible_facts"]
        held = {gpu["index"]: gpu["processes"] for gpu in facts["nvidia_gpus"] if gpu["processes"]}
        assert sorted(held) == [2, 3]
        for processes in held.values():
            assert [(p["pid"], p["unit"], p["unit_backend"]) for p in processes] == [(run["pid"], SERVICE, "supervisor")]
    finally:  # as the supervisor backend stops it: SIGTERM to the process group
        if host.file(f"{FOLDER}/run.json").exists:
            pgid = json.loads(host.file(f"{FOLDER}/run.json").content_string)["pgid"]
            host.run(f"python3 -c 'import os, signal; os.killpg({pgid}, signal.SIGTERM)'")
    ended = json.loads(wait_for(lambda: host.file(f"{FOLDER}/exit.json").exists and host.file(f"{FOLDER}/exit.json").content_string,
                                "the supervisor's exit.json"))
    assert ended["error"] is None and (ended["exit_code"], ended["signal"]) in ((0, None), (None, 15))  # shut down, or killed
    wait_for(lambda: not gpu_pids(host, 2), "GPU2 to be free again")
    facts = probe(host, "gather=gpu", "topology=false")["ansible_facts"]
    assert all(gpu["processes"] == [] for gpu in facts["nvidia_gpus"])
