"""What playbooks/campaign.yml costs beyond the servers and the harness, over SSH on 127.0.0.1, on one simulated CT200.

    .venv/bin/python tests/perf/bench_campaign.py [--runs 2] [--reruns 5]

A 12-stage campaign (TP1 on GPU1, TP4 on GPUs 1-4, TP8; autoregressive, DFlash, DDTree budgets 32 and 64;
concurrency 1 and 4; the emulator loads for --load seconds) runs --runs times (the later ones with force=true).
Per stage:
  wall      from the end of the previous stage's progress line to the end of its own (task_clock callback)
  load      the server's real load time: systemd's "Started" to the emulator's "ready to roll" (journal, us)
  harness   the harness's own wall time summed over the concurrencies (status.json timings.harness_s)
  overhead  wall - load - harness: what Ansible and the roles add per stage (target <= 1 s)
A stage is one specdec.bench.stage_run call on the host (started with async) and a long-polling wait
(specdec.bench.stage_wait), so the readiness wait runs on the host and has no controller-side lag of its own.
Then the finished campaign is run again --reruns times (nothing left to do) against playbooks/probe.yml measured the
same way (target: rerun <= probe + 0.2 s per stage). Medians; the first stage of each run has no previous progress
line and is left out of the per-stage figures. SSH as Ansible runs it by default (ControlPersist, pipelining).
The container is published on 127.0.0.1 only and removed at the end.
"""
import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_probe  # noqa: E402  pylint: disable=wrong-import-position

REPO = bench_probe.REPO
STAGE_DONE = "Report the wave's stages"
# a stage's remote round trips besides the waits' polls: the async start, and the lock's heartbeat when it runs
# (campaign_lock_stale_after > 0; skipped by default, then a local task)
START_TASK = "Start the stages of the wave"
HEARTBEAT_TASK = "Renew the lock's heartbeat"
READY_LINE = "The server is fired up and ready to roll!"
SPEC = {
    "campaign": "bench",
    "model": "/models/Qwen3.6-27B",
    "draft": "/models/Qwen3.6-27B-DFlash",
    "tp": [{"size": 1, "gpus": [1]}, {"size": 4, "gpus": [1, 2, 3, 4]}, {"size": 8}],
    "methods": {"autoregressive": {}, "dflash": {}, "ddtree": {"budget": [32, 64]}},
    "workload": {"input_len": 32, "output_len": 32, "num_prompts": 8},
    "concurrency": [1, 4],
}
# Ansible's floor, measured in the same run against the same host: a local task and one remote module round trip.
FLOOR_PLAYBOOK = """
- hosts: all
  gather_facts: false
  tasks:
""" + "".join(f"""
    - name: local {i}
      ansible.builtin.debug:
        msg: "{i}"
    - name: remote {i}
      ansible.builtin.command: "true"
      changed_when: false
""" for i in range(12))
SSH_OPTS = ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
            "-o", "ControlMaster=auto", "-o", "ControlPersist=60s", "-o", "BatchMode=yes"]


def journal(container, unit):
    """(realtime seconds, message) of a unit's journal, systemd's own lines included."""
    out = bench_probe.sh("podman", "exec", container, "journalctl", "-u", unit, "-o", "json", "--no-pager")
    lines = []
    for line in out.splitlines():
        entry = json.loads(line)
        message = entry.get("MESSAGE")
        if isinstance(message, str):
            lines.append((int(entry["__REALTIME_TIMESTAMP"]) / 1e6, message))
    return lines


def last_start(lines, unit):
    """The last start of the unit: systemd's "Started" line and the emulator's ready line after it."""
    started = [t for t, m in lines if m.startswith("Started ") and unit in m]
    if not started:
        raise SystemExit(f"no start of {unit} in its journal")
    ready = [t for t, m in lines if m.endswith(READY_LINE) and t >= started[-1]]
    if not ready:
        raise SystemExit(f"{unit} never logged that it was ready")
    return started[-1], ready[0]


def status(container, campaign, stage):
    return json.loads(bench_probe.sh("podman", "exec", container, "cat", f"/root/bench_results/{campaign}/{stage}/status.json"))


def per_stage(clock, container, plan):
    """One row per stage after the first: wall, load, harness, overhead, task results."""
    done = [r["end"] for r in clock if r["task"] == STAGE_DONE and r["status"] == "ok"]
    done_at = [i for i, r in enumerate(clock) if r["task"] == STAGE_DONE and r["status"] == "ok"]
    if len(done) != len(plan):
        raise SystemExit(f"expected {len(plan)} stages, saw {len(done)} progress lines")
    rows = []
    for index, stage in enumerate(plan):
        unit = f"specdec-{SPEC['campaign']}-{stage}.service"
        started, ready = last_start(journal(container, unit), unit)
        st = status(container, SPEC["campaign"], stage)
        if st["status"] != "ok":
            raise SystemExit(f"stage {stage} ended {st['status']}: {st.get('reason')}")
        row = {"stage": stage, "load": ready - started, "harness": float(st["timings"]["harness_s"])}
        if index:
            row["wall"] = done[index] - done[index - 1]
            row["overhead"] = row["wall"] - row["load"] - row["harness"]
            row["tasks"] = done_at[index] - done_at[index - 1]
            between = clock[done_at[index - 1] + 1:done_at[index] + 1]
            row["remote"] = sum(1 for r in between if r["status"] == "ok" and r["task"] in (START_TASK, HEARTBEAT_TASK))
        rows.append(row)
    return rows


def ssh_env(tmp):
    """(private key, environment) for ansible-playbook over SSH to the simulated hosts, with the task clock."""
    key = tmp / "id_ed25519"
    bench_probe.sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key))
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
               ANSIBLE_HOME=str(REPO / ".cache/ansible-home"),
               ANSIBLE_COLLECTIONS_PATH=str(REPO / ".cache/collections"),
               ANSIBLE_PRIVATE_KEY_FILE=str(key), ANSIBLE_HOST_KEY_CHECKING="False",
               ANSIBLE_SSH_ARGS=" ".join(SSH_OPTS), ANSIBLE_PYTHON_INTERPRETER="/usr/bin/python3",
               ANSIBLE_SSH_CONTROL_PATH_DIR=str(tmp / "cp"), ANSIBLE_TIMEOUT="60",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.null",
               ANSIBLE_CALLBACK_PLUGINS=str(HERE / "callback_plugins"), ANSIBLE_CALLBACKS_ENABLED="task_clock")
    return key, env


def run_clocked(cmd, env, clock_path):
    clock_path.unlink(missing_ok=True)
    elapsed = bench_probe.timed(cmd, dict(env, TASK_CLOCK_FILE=str(clock_path)))
    clock = [json.loads(line) for line in clock_path.read_text().splitlines()] if clock_path.exists() else []
    return elapsed, clock


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=2, help="full campaign runs (12 stages each)")
    parser.add_argument("--reruns", type=int, default=5, help="reruns with nothing left to do, and probe runs")
    parser.add_argument("--load", type=float, default=3.0, help="the emulator's load time, seconds")
    parser.add_argument("--port", type=int, default=42300)
    args = parser.parse_args()
    image = (REPO / ".cache/sim/image").read_text().strip()
    bin_dir = REPO / ".venv/bin"

    with tempfile.TemporaryDirectory(prefix="specdec-perf-") as tmp:
        tmp = pathlib.Path(tmp)
        key, env = ssh_env(tmp)
        extra = tmp / "campaign.yml"
        extra.write_text(json.dumps({
            "campaign_spec": SPEC, "specdec_stoppable_units": ["ddtree-qwen.service"],
            # the simulated CT200's SGLang is the DDTree build (tests/sim/hosts/ct200.yml), as inventories/sim says
            "specdec_sglang_build": "sglang-ddtree-pr29907",
            "sglang_unit_env": {"SIM_SGLANG_LOAD_SECONDS": str(args.load), "SIM_SGLANG_TIME_SCALE": "0.05"},
            "campaign_ready_timeout": 120}))
        hosts = []
        try:
            hosts, inventory = bench_probe.start_hosts(1, image, key.with_suffix(".pub").read_text(), args.port)
            container = hosts[0][0]
            inv = tmp / "inv" / "hosts"
            inv.parent.mkdir()
            inv.write_text(inventory + "\n")
            bench_probe.seed(str(inv), env)
            campaign = [str(bin_dir / "ansible-playbook"), "-i", str(inv), str(REPO / "playbooks/campaign.yml"),
                        "-e", f"@{extra}"]
            probe = [str(bin_dir / "ansible-playbook"), "-i", str(inv), str(REPO / "playbooks/probe.yml"),
                     "-e", f"probe_summary_dir={tmp}/summaries", "-e", "probe_print_summary=false"]
            plan = [f"tp{tp}-{m}" for tp in (1, 4, 8) for m in ("autoregressive", "dflash-n16", "ddtree-b32-k4", "ddtree-b64-k4")]

            floor_pb = tmp / "floor.yml"
            floor_pb.write_text(FLOOR_PLAYBOOK)
            floor_local, floor_remote = [], []
            for dummy in range(args.reruns):
                clock = run_clocked([str(bin_dir / "ansible-playbook"), "-i", str(inv), str(floor_pb)], env,
                                    tmp / "clock.jsonl")[1]
                ends = [r["end"] for r in clock]
                for i in range(1, len(clock)):
                    (floor_local if clock[i]["task"].startswith("local") else floor_remote).append(ends[i] - ends[i - 1])

            rows, walls = [], []
            for run in range(args.runs):
                cmd = campaign + (["-e", "force=true"] if run else [])
                elapsed, clock = run_clocked(cmd, env, tmp / "clock.jsonl")
                walls.append(elapsed)
                rows += per_stage(clock, container, plan)
                print(f"campaign run {run + 1}: {elapsed:.1f} s", file=sys.stderr)
            reruns, probes = [], []
            for dummy in range(args.reruns):
                reruns.append(run_clocked(campaign, env, tmp / "clock.jsonl")[0])
                probes.append(run_clocked(probe, env, tmp / "clock.jsonl")[0])
        finally:
            if hosts:
                bench_probe.sh("podman", "rm", "-f", "-t", "0", *[name for name, _port in hosts])

    def med(key):
        values = [row[key] for row in rows if key in row]
        return statistics.median(values), min(values), max(values), len(values)

    print(f"\n12-stage campaign on one simulated CT200 over SSH, {args.runs} run(s), emulator load {args.load} s")
    print(f"{'per stage':<28}{'median s':>10}{'min':>8}{'max':>8}{'n':>5}   target")
    for key, label, target in (("wall", "stage wall", ""), ("load", "server load", ""), ("harness", "harness", ""),
                               ("overhead", "overhead (wall-load-harness)", "<= 1.0")):
        median, low, high, count = med(key)
        print(f"{label:<28}{median:>10.3f}{low:>8.3f}{high:>8.3f}{count:>5}   {target}")
    local_s, remote_s = statistics.median(floor_local), statistics.median(floor_remote)
    overhead, tasks, remote = med("overhead")[0], med("tasks")[0], med("remote")[0]
    # the remote tasks (async start, heartbeat when it ran) plus one long poll that returns when the stage ends (the
    # others overlap the stage's own time); every other task result is a local one
    floor = (tasks - remote - 1) * local_s + (remote + 1) * remote_s
    print(f"\nAnsible's floor here: a local task {local_s:.3f} s, a remote module {remote_s:.3f} s (medians, same host);"
          f" a stage is {tasks:.0f} task results, {remote + 1:.0f} of them remote round trips outside the stage's own"
          f" time (async start{', heartbeat' if remote > 1 else ''}, the poll that sees it end): floor {floor:.2f} s;"
          f" measured overhead {overhead:.2f} s = {overhead / floor:.2f}x that floor")
    probe_s, rerun_s = statistics.median(probes), statistics.median(reruns)
    budget = probe_s + 0.2 * len(plan)
    print(f"\nwhole campaign, first run: {walls[0]:.1f} s")
    print(f"{'rerun with nothing to do':<28}{'median s':>10}")
    print(f"{'playbooks/probe.yml':<28}{probe_s:>10.2f}")
    print(f"{'campaign rerun':<28}{rerun_s:>10.2f}   = {rerun_s / probe_s:.2f}x probe; "
          f"target probe + 0.2 s x {len(plan)} = {budget:.2f} s ({'met' if rerun_s <= budget else 'missed'})")


if __name__ == "__main__":
    main()
