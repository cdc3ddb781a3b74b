"""What playbooks/train.yml and the smoke run leave on the simulated A100 box: the runs, their services and the monitor.

The box has no systemd (PID 1 is sim-init, as the real box's Docker entrypoint), so the runs and the monitor run under
specdec's supervisor: their state is read from its folders (/var/lib/specdec/services/<unit>/: service.json the
definition, run.json the start, exit.json the end, log the output), as specdec.bench.service reads it.
test_view_in_browser.py runs after this file (and makes the long run fail), so the long run is still running here.
"""
import json
import os

import pytest
import testinfra

RUNS = "/root/train_runs"
SERVICES = "/var/lib/specdec/services"
RUN = "dflash-sim"
SMOKE = "smoke-sim"
UNIT = f"specdec-train-{RUN}.service"
SMOKE_UNIT = f"specdec-train-{SMOKE}.service"
MONITOR = "specdec-train-monitor.service"
SECRET = "hf_simulated_token_never_in_the_definition"
MODULE_UTILS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "plugins", "module_utils")


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


def proc_stat(host, pid):
    """(ppid, process group, session, start ticks) of a live process, from /proc/<pid>/stat."""
    fields = host.file(f"/proc/{pid}/stat").content_string.rsplit(")", 1)[1].split()
    return int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19])


def running(host, unit):
    """The supervisor's run.json of a service whose program still runs (no recorded exit, the same process)."""
    folder = f"{SERVICES}/{unit}"
    run = read_json(host, f"{folder}/run.json")
    assert not host.file(f"{folder}/exit.json").exists, host.file(f"{folder}/exit.json").content_string
    assert host.file(f"/proc/{run['pid']}").exists and proc_stat(host, run["pid"])[3] == run["start_ticks"]
    return run


def environ(host, pid):
    """The environment a process really has (not what a file says it should)."""
    out = host.check_output(f"tr '\\0' '\\n' < /proc/{pid}/environ")
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def http_get(host, path, method="GET"):
    """(status, body) of a request to the monitor from inside the box, where it listens."""
    script = (
        "import http.client,sys;c=http.client.HTTPConnection('127.0.0.1',8080,timeout=10);"
        f"c.request('{method}',sys.argv[1]);r=c.getresponse();print(r.status);sys.stdout.write(r.read().decode())"
    )
    out = host.check_output(f"python3 -c \"{script}\" '{path}'")
    status, _sep, body = out.partition("\n")
    return int(status), body


def test_the_box_has_no_systemd(host):
    assert host.file("/proc/1/comm").content_string.strip() != "systemd"
    assert not host.file("/run/systemd/system").exists
    # nothing was rendered for systemd: the run is a definition of the supervisor
    assert not host.file(f"/etc/systemd/system/{UNIT}").exists and not host.file(f"/etc/systemd/system/{MONITOR}").exists


def test_run_is_running(host):
    run = running(host, UNIT)
    definition = read_json(host, f"{SERVICES}/{UNIT}/service.json")
    assert definition["name"] == UNIT and definition["argv"] == ["/bin/bash", f"{RUNS}/{RUN}/run.sh"]
    assert definition["cwd"] == f"{RUNS}/{RUN}" and definition["env_files"] == [f"-/etc/specdec/train-{RUN}.env"]
    assert run["argv"] == definition["argv"]


def test_run_outlives_the_connection_that_started_it(host):
    run = running(host, UNIT)
    ppid, group, session, _ticks = proc_stat(host, run["pid"])
    # the program leads a process group of its own, in the session its supervisor leads: no connection's hangup
    # reaches it, and stopping it is one signal to its group
    assert group == run["pid"] and session == run["supervisor_pid"] and ppid == run["supervisor_pid"]
    sup_ppid, _group, sup_session, _ticks = proc_stat(host, run["supervisor_pid"])
    assert sup_session == run["supervisor_pid"]
    # what started the supervisor (the Ansible task of converge) is gone: PID 1 adopted it
    assert sup_ppid == 1
    # a connection to the box now is in another session
    here = int(host.check_output("cut -d' ' -f6 /proc/self/stat"))
    assert here != session
    # started by converge, several playbooks ago (idempotence, check, side effects), and never started again
    manifest = read_json(host, f"{RUNS}/{RUN}/run.json")
    assert run["started"] >= manifest["created"]
    assert host.file(f"{SERVICES}/{UNIT}/log").content_string.count("-- specdec supervisor: starting") == 1


def test_run_folder_holds_manifest_launcher_and_log(host, uuids):
    manifest = read_json(host, f"{RUNS}/{RUN}/run.json")
    assert manifest["name"] == RUN and manifest["mode"] == "full" and manifest["unit"] == UNIT
    assert manifest["backend"] == "supervisor"
    # the 55 GB target needs TP2 on 40 GB GPUs: GPUs 0,1; the trainer gets train_run_train_gpu_count=2 more
    assert manifest["gpus"]["serve"] == uuids[0:2] and manifest["gpus"]["train"] == uuids[2:4]
    assert len(manifest["settings_hash"]) == 64
    launcher = host.file(f"{RUNS}/{RUN}/run.sh")
    assert launcher.mode == 0o750 and "tee -a" in launcher.content_string
    assert "Starting training" in host.file(f"{RUNS}/{RUN}/train.log").content_string


def test_run_pins_gpus_by_uuid(host, uuids):
    defined = read_json(host, f"{SERVICES}/{UNIT}/service.json")["env"]
    real = environ(host, running(host, UNIT)["pid"])
    for env in (defined, real):
        assert env["CUDA_VISIBLE_DEVICES"] == ",".join(uuids[0:4])
        assert env["SPECDEC_SERVE_GPUS"] == ",".join(uuids[0:2]) and env["SPECDEC_SERVE_TP"] == "2"
        assert env["SPECDEC_TRAIN_GPUS"] == ",".join(uuids[2:4]) and env["SPECDEC_TRAIN_NPROC"] == "2"
        assert env["SPECDEC_RUN_MODE"] == "full" and env["HOME"] == "/var/lib/specdec"
    # the secret reaches the program, from its 0600 file, exactly
    assert real["HF_TOKEN"] == SECRET and "HF_TOKEN" not in defined


def test_the_run_holds_its_gpus(host):
    used = host.check_output("nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits").split()
    # the run's four GPUs; the smoke run has finished and freed GPU 4
    assert used == ["30000"] * 4 + ["0", "0"]


def test_secrets_stay_out_of_the_definition_and_the_output(host):
    secrets = host.file(f"/etc/specdec/train-{RUN}.env")
    assert secrets.mode == 0o600 and secrets.user == "root"
    # NAME="value", as EnvironmentFile= and the supervisor read it (the program gets it exactly: test_run_pins_gpus_by_uuid)
    assert f'HF_TOKEN="{SECRET}"\n' in secrets.content_string
    for path in (f"{SERVICES}/{UNIT}/service.json", f"{SERVICES}/{UNIT}/log", f"{RUNS}/{RUN}/run.json"):
        assert SECRET not in host.file(path).content_string, path


def test_the_log_goes_to_the_services_output_and_the_file(host):
    output = host.file(f"{SERVICES}/{UNIT}/log").content_string
    log = host.file(f"{RUNS}/{RUN}/train.log").content_string
    for text in ("=== run dflash-sim (full) started", "Starting training: 1 epoch(s), 4000 steps", '"total_steps": 4000'):
        assert text in output and text in log


def test_smoke_run_finished(host, uuids):
    ended = read_json(host, f"{SERVICES}/{SMOKE_UNIT}/exit.json")
    assert ended["exit_code"] == 0 and ended["signal"] is None and ended["error"] is None
    log = host.file(f"{RUNS}/{SMOKE}/train.log").content_string
    assert "Training complete: 20 steps" in log and "=== run smoke-sim exited with status 0" in log
    assert "smoke-sim.service exited with status 0" in host.file(f"{SERVICES}/{SMOKE_UNIT}/log").content_string
    assert read_json(host, f"{RUNS}/{SMOKE}/checkpoints/final/config.json")["steps"] == 20
    manifest = read_json(host, f"{RUNS}/{SMOKE}/run.json")
    assert manifest["mode"] == "smoke" and manifest["gpus"] == {
        "serve": [], "serve_indices": [], "train": [uuids[4]], "train_indices": [4]}
    assert read_json(host, f"{SERVICES}/{SMOKE_UNIT}/service.json")["env"]["SPECDEC_RUN_MODE"] == "smoke"


def test_monitor_listens_on_loopback_only(host):
    run = running(host, MONITOR)
    argv = read_json(host, f"{SERVICES}/{MONITOR}/service.json")["argv"]
    assert argv[argv.index("--backend") + 1] == "supervisor" and argv[argv.index("--unit") + 1] == UNIT
    assert proc_stat(host, run["supervisor_pid"])[0] == 1
    assert host.socket("tcp://127.0.0.1:8080").is_listening
    assert not host.socket("tcp://0.0.0.0:8080").is_listening
    # the supervisor's reader is installed beside the service, and nothing is written there
    assert host.file("/opt/specdec/train-monitor/_supervisor.py").exists
    assert not host.file("/opt/specdec/train-monitor/__pycache__").exists


def test_monitor_imports_the_collections_parser_and_reader_as_they_are(host):
    """specdec.bench.train_monitor_install wrote them from its payload: the collection's files, byte for byte."""
    for name in ("_train_log.py", "_supervisor.py", "_telemetry.py", "_nvml.py", "_nvidia_smi.py"):
        installed = host.file(f"/opt/specdec/train-monitor/{name}")
        assert installed.user == "root" and installed.mode == 0o644
        with open(os.path.join(MODULE_UTILS, name), encoding="utf-8") as handle:
            assert installed.content_string == handle.read(), name


def test_monitor_status_is_the_run(host):
    status, body = http_get(host, "/api/status")
    data = json.loads(body)
    assert status == 200
    assert data["run"] == RUN and data["unit"] == UNIT and data["backend"] == "supervisor"
    assert data["state"] == "running" and data["unit_state"]["active_state"] == "active"
    assert data["unit_state"]["started"] == running(host, UNIT)["started"]
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
    status, body = http_get(host, "/files/train.log")
    assert status == 200 and body
    status, body = http_get(host, "/files/")
    # the log and the GPU samples the monitor keeps there; only what the page reads (an allow-list)
    assert status == 200 and set(json.loads(body)["files"]) == {"train.log", "monitor-gpus.jsonl"}


@pytest.mark.parametrize("name", ["run.sh", "run.json", "train_dflash.sh"])
def test_monitor_serves_no_script_and_no_manifest(host, name):
    # the service reads the root-only run folder as root; any local user reaches its port
    status, _body = http_get(host, "/files/" + name)
    assert status == 404


def test_monitor_is_read_only(host):
    for method in ("POST", "PUT", "DELETE"):
        assert http_get(host, "/api/status", method)[0] == 405
