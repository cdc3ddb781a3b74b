"""Helpers of the molecule tests that drive the simulated hosts from pytest: deadlines, playbooks, GPU readings.

Molecule's verifier imports this by path (see molecule/campaign/tests); standard library and testinfra only.
"""
import json
import os
import pathlib
import re
import subprocess
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
PLAYBOOK = REPO / ".venv" / "bin" / "ansible-playbook"


def wait_for(check, what, timeout=60.0, interval=0.2):
    """Poll check() until it returns a truthy value (returned) or the deadline passes (AssertionError)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def ansible_env():
    """The Makefile's Ansible environment, so a test runs the checkout's collection whoever started molecule."""
    # results as one JSON line each: the yaml format folds long messages, which tests look for
    return dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", ANSIBLE_CALLBACK_RESULT_FORMAT="json",
                ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
                ANSIBLE_HOME=str(REPO / ".cache" / "ansible-home"),
                ANSIBLE_COLLECTIONS_PATH=str(REPO / ".cache" / "collections"))


def playbook_cmd(path, *extra):
    return [str(PLAYBOOK), "-i", os.environ["MOLECULE_INVENTORY_FILE"], str(path), *extra]


def playbook(path, *extra, timeout=600):
    """Run a playbook against molecule's inventory; returns (rc, output)."""
    proc = subprocess.run(playbook_cmd(path, *extra), cwd=REPO, env=ansible_env(), capture_output=True, text=True,
                          timeout=timeout, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def start_playbook(path, *extra, log):
    """Start a playbook in its own process group (so a test can kill it and all its workers); output to log."""
    return subprocess.Popen(playbook_cmd(path, *extra), cwd=REPO, env=ansible_env(), stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)


def recap(output, host):
    """The PLAY RECAP counters of host, e.g. {'ok': 12, 'changed': 3, 'failed': 0, ...}."""
    match = re.search(rf"^{re.escape(host)}\s*:\s*(.*)$", output, re.MULTILINE)
    return {key: int(value) for key, value in re.findall(r"(\w+)=(\d+)", match.group(1))} if match else {}


def gpu_uuid(host, index):
    return host.check_output(f"nvidia-smi --query-gpu=uuid --format=csv,noheader -i {index}").strip()


def gpu_pids(host, index):
    """The pids the (simulated) nvidia-smi shows on GPU index."""
    uuid = gpu_uuid(host, index)
    out = host.check_output("nvidia-smi --query-compute-apps=gpu_uuid,pid --format=csv,noheader")
    return [int(line.split(",")[1]) for line in out.splitlines() if line.split(",")[0].strip() == uuid]


def main_pid(host, unit):
    return int(host.check_output(f"systemctl show --property=MainPID --value {unit}"))


def active_units(host, pattern):
    out = host.check_output(f"systemctl list-units --plain --no-legend --state=active,activating '{pattern}'")
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def read_json(host, path):
    """The JSON document of a file on the host, None when there is no such file."""
    return json.loads(host.file(path).content_string) if host.file(path).exists else None


def stage_status(host, results, stage):
    """The status ("ok", "failed", ...) a stage of the campaign folder results recorded, None before it recorded one."""
    return (read_json(host, f"{results}/{stage}/status.json") or {}).get("status")


def file_sha256(host, folder):
    """{path relative to folder: sha256} of every file below folder on the host."""
    out = host.check_output(f"cd {folder} && find . -type f -exec sha256sum {{}} +")
    return {line.split(None, 1)[1].strip()[2:]: line.split()[0] for line in out.splitlines()}


def supervised_running(host, pattern, state_dir="/var/lib/specdec/services"):
    """The services of specdec's supervisor (hosts without systemd) that run: started (run.json), not ended (exit.json)."""
    out = host.check_output(f"for d in {state_dir}/{pattern}; do [ -f \"$d/run.json\" ] && [ ! -f \"$d/exit.json\" ] "
                            "&& basename \"$d\"; done; true")
    return [line for line in out.splitlines() if line.strip()]
