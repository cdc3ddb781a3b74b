"""Wall time of playbooks/probe.yml over SSH on 127.0.0.1, against what it replaces, on simulated CT200 hosts.

    .venv/bin/python tests/perf/bench_probe.py [--runs 5] [--hosts 1,4,16]

Per host, in the same run and against the same container:
  raw      the seed's SSH one-liner (systemctl is-active x3, nvidia-smi, ls, cat)
  facts    a playbook with setup + service_facts + `command: nvidia-smi` (the usual way)
  floor    a playbook with one `command` task (Ansible's floor: connection, one module)
  probe    playbooks/probe.yml (every GPU, unit, disk, host and toolchain fact, summary saved)
then the probe across 1, 4 and 16 hosts. Every run opens its own SSH connections (no ControlPersist), as
a first contact with a host does. Medians of --runs runs; ratios against `floor` measured in the same run.
Containers are published on 127.0.0.1 only, and removed at the end.
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
PREFIX = "specdec-perf-"
SEED_ONE_LINER = (
    "systemctl is-active sglang-dflash-smoke.service 2>/dev/null || echo 'dflash-smoke: inactive'; "
    "systemctl is-active sglang-ddtree-tree.service 2>/dev/null || echo 'ddtree-tree: inactive'; "
    "systemctl is-active ddtree-qwen.service 2>/dev/null || echo 'ddtree-qwen: inactive'; "
    "nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv,noheader; echo '---'; "
    "ls -la /root/bench_results/ 2>/dev/null || echo 'no bench_results dir'; echo '---'; "
    "cat /etc/systemd/system/sglang-autoregressive.service 2>/dev/null || echo 'no autoregressive service'"
)
FACTS_PLAYBOOK = """
- hosts: all
  gather_facts: true
  tasks:
    - ansible.builtin.service_facts:
    - ansible.builtin.command: nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv,noheader
      changed_when: false
"""
FLOOR_PLAYBOOK = """
- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.command: "true"
      changed_when: false
"""
SSH_OPTS = ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
            "-o", "ControlMaster=no", "-o", "ControlPath=none", "-o", "BatchMode=yes"]


def sh(*cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def wait_for(check, what, timeout=120.0, interval=0.2):
    """Poll check() every interval seconds until it is true; exit naming what after timeout seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(interval)


def start_hosts(count, image, key_pub, first_port):
    """Start `count` simulated CT200s with sshd published on 127.0.0.1; returns [(name, port)]."""
    hosts = []
    for i in range(count):
        name, port = f"{PREFIX}{i}", first_port + i
        sh("podman", "run", "-d", "--name", name, "--hostname", f"ct200-{i}", "--systemd=always",
           "-p", f"127.0.0.1:{port}:22", image, "/sbin/init")
        hosts.append((name, port))
    for name, _port in hosts:
        wait_for(lambda n=name: subprocess.run(["podman", "exec", n, "systemctl", "is-system-running", "--wait"],
                                               check=False, capture_output=True,
                                               text=True).stdout.strip() in ("running", "degraded"),
                 f"{name} to boot")
        sh("podman", "exec", "-i", name, "sh", "-c",
           "install -d -m 700 /root/.ssh && cat > /root/.ssh/authorized_keys", input=key_pub)
    inventory = "\n".join(f"ct200-{i} ansible_host=127.0.0.1 ansible_port={port} ansible_user=root"
                          for i, (_name, port) in enumerate(hosts))
    return hosts, inventory


def seed(inventory_path, env):
    """The CT200 state (GPU layout, ddtree-qwen.service holding GPU0) through the same seed as molecule."""
    inv = pathlib.Path(inventory_path)
    hosts = [line.split()[0] for line in inv.read_text().splitlines() if line.strip()]
    for h in hosts:
        (inv.parent / "host_vars").mkdir(exist_ok=True)
        (inv.parent / "host_vars" / f"{h}.yml").write_text("sim_profile: ct200\n")
    result = subprocess.run([str(REPO / ".venv/bin/ansible-playbook"), "-i", inventory_path, str(REPO / "tests/sim/seed.yml")],
                            check=False, capture_output=True, text=True,
                            env=dict(env, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default"))
    if result.returncode != 0:
        raise SystemExit(f"seeding failed:\n{result.stdout[-4000:]}\n{result.stderr[-2000:]}")


def timed(cmd, env):
    start = time.perf_counter()
    result = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--hosts", default="1,4,16")
    parser.add_argument("--port", type=int, default=42200)
    args = parser.parse_args()
    counts = [int(c) for c in args.hosts.split(",")]
    image = (REPO / ".cache/sim/image").read_text().strip()
    bin_dir = REPO / ".venv/bin"

    with tempfile.TemporaryDirectory(prefix="specdec-perf-") as tmp:
        tmp = pathlib.Path(tmp)
        key = tmp / "id_ed25519"
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key))
        env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
                   ANSIBLE_COLLECTIONS_PATH=str(REPO / ".cache/collections"),
                   ANSIBLE_PRIVATE_KEY_FILE=str(key), ANSIBLE_HOST_KEY_CHECKING="False",
                   ANSIBLE_SSH_ARGS=" ".join(SSH_OPTS), ANSIBLE_PYTHON_INTERPRETER="/usr/bin/python3",
                   ANSIBLE_FORKS="16", ANSIBLE_TIMEOUT="60", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.null")
        (tmp / "facts.yml").write_text(FACTS_PLAYBOOK)
        (tmp / "floor.yml").write_text(FLOOR_PLAYBOOK)
        probe_cmd = [str(bin_dir / "ansible-playbook"), str(REPO / "playbooks/probe.yml"),
                     "-e", f"probe_summary_dir={tmp}/summaries", "-e", "probe_print_summary=false"]
        try:
            hosts, inventory = start_hosts(max(counts), image, (key.with_suffix(".pub")).read_text(), args.port)
            all_inv = tmp / "all" / "hosts"
            all_inv.parent.mkdir()
            all_inv.write_text(inventory + "\n")
            seed(str(all_inv), env)

            one = tmp / "one" / "hosts"
            one.parent.mkdir()
            one.write_text(inventory.splitlines()[0] + "\n")
            port = hosts[0][1]
            variants = {
                "raw": ["ssh", *SSH_OPTS, "-i", str(key), "-p", str(port), "root@127.0.0.1", SEED_ONE_LINER],
                "facts": [str(bin_dir / "ansible-playbook"), "-i", str(one), str(tmp / "facts.yml")],
                "floor": [str(bin_dir / "ansible-playbook"), "-i", str(one), str(tmp / "floor.yml")],
                "probe": probe_cmd + ["-i", str(one)],
            }
            times = {name: [] for name in variants}
            for _run in range(args.runs):  # interleaved, so drift hits every variant alike
                for name, cmd in variants.items():
                    times[name].append(timed(cmd, env))
            med = {name: statistics.median(t) for name, t in times.items()}

            print(f"\nOne simulated CT200 over SSH on 127.0.0.1, median of {args.runs} runs (seconds)\n")
            print("| variant | what | median s | vs floor | vs facts |")
            print("| --- | --- | ---: | ---: | ---: |")
            what = {"raw": "seed's SSH one-liner", "facts": "setup + service_facts + command: nvidia-smi",
                    "floor": "one command task", "probe": "playbooks/probe.yml (all facts, summary saved)"}
            for name in variants:
                print(f"| {name} | {what[name]} | {med[name]:.2f} | {med[name] / med['floor']:.2f}x | "
                      f"{med[name] / med['facts']:.2f}x |")

            print(f"\nplaybooks/probe.yml across hosts (forks 16), median of {args.runs} runs\n")
            print("| hosts | median s | per host s | vs 1 host |")
            print("| ---: | ---: | ---: | ---: |")
            base = None
            for count in counts:
                inv = tmp / f"n{count}" / "hosts"
                inv.parent.mkdir(exist_ok=True)
                inv.write_text("\n".join(inventory.splitlines()[:count]) + "\n")
                t = statistics.median(timed(probe_cmd + ["-i", str(inv)], env) for _run in range(args.runs))
                base = base or t
                print(f"| {count} | {t:.2f} | {t / count:.2f} | {t / base:.2f}x |")
        finally:
            # Cleanup: best effort, and never masking the error that got us here.
            names = subprocess.run(["podman", "ps", "-a", "--format", "{{.Names}}"],
                                   check=False, capture_output=True, text=True).stdout
            doomed = [n for n in names.split() if n.startswith(PREFIX)]
            if doomed:
                subprocess.run(["podman", "rm", "-f", "-t", "0", *doomed], check=False, capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
