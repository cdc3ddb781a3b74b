"""What the campaign's preflight (specdec.bench.sglang_preflight) costs on a simulated CT200, for 1 and for 15 stages.

    .venv/bin/python tests/perf/bench_preflight.py [--runs 7]

One simulated CT200 (a podman container with real systemd, driven through Ansible's podman connection), seeded as
molecule seeds it, its SGLang the emulator (sglang-ddtree-pr29907). One playbook run plans campaigns/ct200.yml
(15 stages) and then, --runs times, in this order against the same host:
  floor       `command: /usr/bin/python3 -c pass` (Ansible's floor: one module round trip that starts the interpreter)
  1 stage     sglang_preflight with the first stage
  15 stages   sglang_preflight with every stage of the plan
Task wall times come from the end of the previous task to the end of the task (task_clock callback); `parse` is the
module's own `seconds` (the interpreter importing SGLang's parser and parsing every argv). Medians; ratios against
the floor measured in the same run. The emulator's sglang imports in milliseconds; real SGLang's import takes
seconds (3.1 s measured for `from sglang.srt.server_args import ServerArgs` with SGLang 0.5.23 on this machine's
CPU), which a real host adds once per campaign, whatever the number of stages. The container is removed at the end.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

import yaml

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_probe  # noqa: E402  pylint: disable=wrong-import-position

REPO = bench_probe.REPO
NAME = bench_probe.PREFIX + "preflight"


def playbook(runs, out):
    spec = yaml.safe_load((REPO / "campaigns" / "ct200.yml").read_text())["campaign_spec"]
    tasks = [
        {"name": "probe", "specdec.bench.probe": {"units": ["ddtree-*"]}},
        {"name": "plan", "ansible.builtin.set_fact": {
            "stages": "{{ ansible_facts | specdec.bench.campaign_plan(spec, host={'build': 'sglang-ddtree-pr29907', "
                      "'sglang_python': '/usr/bin/python3', 'stoppable': ['ddtree-qwen.service']}) }}"}},
    ]
    for run in range(runs):
        tasks += [
            {"name": f"floor {run}", "ansible.builtin.command": "/usr/bin/python3 -c pass", "changed_when": False},
            {"name": f"one {run}", "specdec.bench.sglang_preflight": {"python": "/usr/bin/python3", "stages": "{{ stages[:1] }}"},
             "register": f"one_{run}"},
            {"name": f"all {run}", "specdec.bench.sglang_preflight": {"python": "/usr/bin/python3", "stages": "{{ stages }}"},
             "register": f"all_{run}"},
        ]
    seconds = "{{ {'one': [%s], 'all': [%s], 'stages': stages | length} | to_json }}" % (
        ", ".join(f"one_{r}.seconds" for r in range(runs)), ", ".join(f"all_{r}.seconds" for r in range(runs)))
    tasks.append({"name": "save", "ansible.builtin.copy": {"content": seconds, "dest": str(out)},
                  "delegate_to": "localhost"})
    return [{"hosts": "all", "gather_facts": False, "vars": {"spec": spec}, "tasks": tasks}]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    image = (REPO / ".cache/sim/image").read_text().strip()
    subprocess.run(["podman", "rm", "-f", NAME], check=False, capture_output=True)
    bench_probe.sh("podman", "run", "-d", "--name", NAME, "--hostname", "ct200", "--systemd=always", image, "/sbin/init")
    try:
        with tempfile.TemporaryDirectory(prefix="specdec-perf-") as tmp:
            tmp = pathlib.Path(tmp)
            inventory = tmp / "hosts"
            inventory.write_text(f"ct200 ansible_host={NAME} ansible_connection=containers.podman.podman "
                                 "ansible_python_interpreter=/usr/bin/python3\n")
            env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_HOME=str(REPO / ".cache/ansible-home"),
                       ANSIBLE_COLLECTIONS_PATH=str(REPO / ".cache/collections"), ANSIBLE_STDOUT_CALLBACK="ansible.builtin.null",
                       ANSIBLE_CALLBACK_PLUGINS=str(HERE / "callback_plugins"), ANSIBLE_CALLBACKS_ENABLED="task_clock")
            bench_probe.wait_for(lambda: subprocess.run(["podman", "exec", NAME, "systemctl", "is-system-running", "--wait"],
                                                        check=False, capture_output=True, text=True).stdout.strip()
                                 in ("running", "degraded"), "the container to boot")
            bench_probe.seed(str(inventory), env)
            book, out, clock_path = tmp / "preflight.yml", tmp / "seconds.json", tmp / "clock.jsonl"
            book.write_text(yaml.safe_dump(playbook(args.runs, out), sort_keys=False))
            bench_probe.timed([str(REPO / ".venv/bin/ansible-playbook"), "-i", str(inventory), str(book)],
                              dict(env, TASK_CLOCK_FILE=str(clock_path)))
            clock = [json.loads(line) for line in clock_path.read_text().splitlines()]
            seconds = json.loads(out.read_text())
    finally:
        subprocess.run(["podman", "rm", "-f", NAME], check=False, capture_output=True)
    walls = {}
    for previous, record in zip(clock, clock[1:]):
        kind = record["task"].split(" ")[0]
        walls.setdefault(kind, []).append(record["end"] - previous["end"])
    floor = statistics.median(walls["floor"])
    print(f"sglang_preflight on one simulated CT200, medians of {args.runs} runs (task wall: end of the previous task "
          f"to the end of this one)\n")
    print("| task | stages | task wall s | vs floor | parse s (module's own) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    print(f"| `command: python3 -c pass` (floor) | - | {floor:.3f} | 1.00x | - |")
    for kind, label, count in (("one", "preflight", 1), ("all", "preflight", seconds["stages"])):
        wall = statistics.median(walls[kind])
        print(f"| {label} | {count} | {wall:.3f} | {wall / floor:.2f}x | {statistics.median(seconds[kind]):.3f} |")


if __name__ == "__main__":
    main()
