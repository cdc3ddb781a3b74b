"""What playbooks/train.yml and the smoke run leave on the simulated A100 box: the runs, their units and the monitor.

test_view_in_browser.py runs after this file (and makes the long run fail), so the long run is still running here.
"""
import json
import shlex

import pytest
import testinfra

RUNS = "/root/train_runs"
RUN = "dflash-sim"
SMOKE = "smoke-sim"
UNIT = f"specdec-train-{RUN}.service"
SMOKE_UNIT = f"specdec-train-{SMOKE}.service"
MONITOR = "specdec-train-monitor.service"
SECRET = "hf_simulated_token_never_in_the_unit"


@pytest.fixture(name="host", scope="module")
def podman_host(host):
    """The same container through `podman exec` directly, much faster than molecule's Ansible backend."""
    return testinfra.get_host(f"podman://{host.backend.get_hostname()}")


@pytest.fixture(name="uuids", scope="module")
def gpu_uuids(host):
    out = host.check_output("nvidia-smi --query-gpu=index,uuid --format=csv,noheader")
    return [line.split(", ")[1] for line in out.splitlines()]


def read_json(host, path):
    return json.loads(host.file(path).content_string)


def unit_env(host, unit):
    """The unit's environment as systemd parsed it."""
    out = host.check_output(f"systemctl show --property=Environment --value -- {unit}")
    # systemd prints NAME=value pairs separated by spaces, quoting values that hold spaces.
    return dict(pair.split("=", 1) for pair in shlex.split(out))


def http_get(host, path, method="GET"):
    """(status, body) of a request to the monitor from inside the box, where it listens."""
    script = (
        "import http.client,sys;c=http.client.HTTPConnection('127.0.0.1',8080,timeout=10);"
        f"c.request('{method}',sys.argv[1]);r=c.getresponse();print(r.status);sys.stdout.write(r.read().decode())"
    )
    out = host.check_output(f"python3 -c \"{script}\" '{path}'")
    status, _sep, body = out.partition("\n")
    return int(status), body


def test_run_is_running(host):
    assert host.service(UNIT).is_running
    # never enabled: it has no [Install], so a reboot does not start it again
    assert host.check_output(f"systemctl is-enabled -- {UNIT}") == "static"


def test_run_folder_holds_manifest_launcher_and_log(host, uuids):
    manifest = read_json(host, f"{RUNS}/{RUN}/run.json")
    assert manifest["name"] == RUN and manifest["mode"] == "full" and manifest["unit"] == UNIT
    # the 55 GB target needs TP2 on 40 GB GPUs: GPUs 0,1; the trainer gets train_run_train_gpu_count=2 more
    assert manifest["gpus"]["serve"] == uuids[0:2] and manifest["gpus"]["train"] == uuids[2:4]
    assert len(manifest["settings_hash"]) == 64
    launcher = host.file(f"{RUNS}/{RUN}/run.sh")
    assert launcher.mode == 0o750 and "tee -a" in launcher.content_string
    assert "Starting training" in host.file(f"{RUNS}/{RUN}/train.log").content_string


def test_unit_pins_gpus_by_uuid(host, uuids):
    env = unit_env(host, UNIT)
    assert env["CUDA_VISIBLE_DEVICES"] == ",".join(uuids[0:4])
    assert env["SPECDEC_SERVE_GPUS"] == ",".join(uuids[0:2]) and env["SPECDEC_SERVE_TP"] == "2"
    assert env["SPECDEC_TRAIN_GPUS"] == ",".join(uuids[2:4]) and env["SPECDEC_TRAIN_NPROC"] == "2"
    assert env["SPECDEC_RUN_MODE"] == "full" and env["HOME"] == "/var/lib/specdec"
    host.run_test(f"systemd-analyze verify /etc/systemd/system/{UNIT}")


def test_the_run_holds_its_gpus(host):
    used = host.check_output("nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits").split()
    # the run's four GPUs; the smoke run has finished and freed GPU 4
    assert used == ["30000"] * 4 + ["0", "0"]


def test_secrets_stay_out_of_the_unit_and_the_journal(host):
    secrets = host.file(f"/etc/specdec/train-{RUN}.env")
    assert secrets.mode == 0o600 and secrets.user == "root"
    assert f'HF_TOKEN="{SECRET}"' in secrets.content_string
    assert SECRET not in host.file(f"/etc/systemd/system/{UNIT}").content_string
    assert SECRET not in host.file(f"{RUNS}/{RUN}/run.json").content_string
    assert SECRET not in host.check_output(f"journalctl --no-pager -u {UNIT}")


def test_the_log_goes_to_the_journal_and_the_file(host):
    journal = host.check_output(f"journalctl --no-pager -o cat -u {UNIT}")
    log = host.file(f"{RUNS}/{RUN}/train.log").content_string
    for text in ("=== run dflash-sim (full) started", "Starting training: 1 epoch(s), 4000 steps", '"total_steps": 4000'):
        assert text in journal and text in log


def test_smoke_run_finished(host, uuids):
    status = host.check_output(f"systemctl show --property=ActiveState,Result,ExecMainStatus -- {SMOKE_UNIT}")
    assert sorted(status.split()) == ["ActiveState=inactive", "ExecMainStatus=0", "Result=success"]
    log = host.file(f"{RUNS}/{SMOKE}/train.log").content_string
    assert "Training complete: 20 steps" in log and "=== run smoke-sim exited with status 0" in log
    assert read_json(host, f"{RUNS}/{SMOKE}/checkpoints/final/config.json")["steps"] == 20
    manifest = read_json(host, f"{RUNS}/{SMOKE}/run.json")
    assert manifest["mode"] == "smoke" and manifest["gpus"] == {
        "serve": [], "serve_indices": [], "train": [uuids[4]], "train_indices": [4]}
    assert unit_env(host, SMOKE_UNIT)["SPECDEC_RUN_MODE"] == "smoke"


def test_monitor_listens_on_loopback_only(host):
    monitor = host.service(MONITOR)
    assert monitor.is_running and monitor.is_enabled
    assert host.socket("tcp://127.0.0.1:8080").is_listening
    assert not host.socket("tcp://0.0.0.0:8080").is_listening
    host.run_test(f"systemd-analyze verify /etc/systemd/system/{MONITOR}")


def test_monitor_status_is_the_run(host):
    status, body = http_get(host, "/api/status")
    data = json.loads(body)
    assert status == 200
    assert data["run"] == RUN and data["unit"] == UNIT and data["state"] == "running"
    assert data["progress"]["total"] == 4000 and 0 < data["progress"]["step"] < 4000
    assert data["loss"] > 0 and data["lines"]


@pytest.mark.parametrize("path", [
    "/files/../../../etc/shadow",
    "/files/..%2f..%2f..%2fetc%2fshadow",
    "/files/%2e%2e/%2e%2e/etc/shadow",
    "/files//etc/shadow",
    "/files/.",
    "/../../etc/shadow",
])
def test_monitor_serves_nothing_outside_the_run(host, path):
    status, body = http_get(host, path)
    assert status == 404 and "root:" not in body


def test_monitor_serves_the_runs_own_files(host):
    status, body = http_get(host, "/files/run.json")
    assert status == 200 and json.loads(body)["name"] == RUN
    status, body = http_get(host, "/files/")
    assert status == 200 and set(json.loads(body)["files"]) == {"run.json", "run.sh", "train.log"}


def test_monitor_is_read_only(host):
    for method in ("POST", "PUT", "DELETE"):
        assert http_get(host, "/api/status", method)[0] == 405
