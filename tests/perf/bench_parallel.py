"""Wall time of one campaign run one stage at a time against side by side (`parallel: true`), and what running side by
side cost (the interference re-run), on one simulated CT200 over SSH on 127.0.0.1.

    .venv/bin/python tests/perf/bench_parallel.py [--load 4] [--prompts 6] [--output-len 96]

The campaign is campaigns/ct200.yml's GPUs and methods as they are (TP1 on a pool of GPUs 1-7, TP4 on GPUs 1-4, TP8;
autoregressive, DFlash n16, DDTree budgets 32/64/128: 15 stages) with a small random workload (--prompts prompts of
--output-len tokens, concurrency 1, 3 repeats each after one warm-up). The emulator loads for --load seconds, set so
that a load is about a third of a stage, as a 27B model's minute-long load is on a real host against a few minutes of
measuring. It runs twice in the same session against the same container: `sequential` (the spec without `parallel`)
and `parallel` (the spec as the file has it: the 5 TP1 stages side by side on GPUs 1-5, then each TP4 and TP8 stage
alone, then tp1-autoregressive again alone, the interference re-run).

Printed:
  (b) wall time of each campaign run (ansible-playbook start to end) and per part, from the first wave's announcement:
      the TP1 stages, the TP4/TP8 stages, the interference re-run (the task clock's wave lines); ratio sequential /
      parallel.
  (c) tp1-autoregressive at concurrency 1, measured beside the 4 other TP1 stages (parallel run), alone at the end of
      that run, and alone in the sequential run: output throughput and median ITL, mean of the 3 repeats each, and the
      differences in %. This machine's few cores are shared by 5 emulators and 5 harnesses; a real host gives each
      server its own GPU and its own CPU share, so this is an upper bound of the interference the simulation can show.
The container is published on 127.0.0.1 only and removed at the end.
"""
import argparse
import copy
import json
import pathlib
import statistics
import sys
import tempfile

import yaml

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_campaign  # noqa: E402  pylint: disable=wrong-import-position
import bench_probe  # noqa: E402  pylint: disable=wrong-import-position

REPO = bench_probe.REPO
WAVE_DONE = bench_campaign.STAGE_DONE
WAVE_START = "Announce the wave"
STAGE = "tp1-autoregressive"


def spec_of(campaign, args, parallel):
    with open(REPO / "campaigns" / "ct200.yml", encoding="utf-8") as handle:
        spec = copy.deepcopy(yaml.safe_load(handle)["campaign_spec"])
    spec.update(campaign=campaign, concurrency=[1], repeats=3,
                workload={"input_len": 64, "output_len": args.output_len, "num_prompts": args.prompts})
    if not parallel:
        spec.pop("parallel", None)
    return spec


def result(container, campaign, stage, repeat):
    path = f"/root/bench_results/{campaign}/{stage}/result-random-t0-c1-r{repeat}.json"
    return json.loads(bench_probe.sh("podman", "exec", container, "cat", path))


def measured(container, campaign, stage):
    """(output throughput, median ITL ms): means over the 3 repeats of the stage's run at concurrency 1."""
    rows = [result(container, campaign, stage, repeat) for repeat in (1, 2, 3)]
    return (statistics.mean(row["output_throughput"] for row in rows), statistics.mean(row["median_itl_ms"] for row in rows))


def parts(clock):
    """Seconds from the first wave's announcement to the end of each wave's progress lines, in order."""
    first = min(record["end"] for record in clock if record["task"] == WAVE_START)
    return [record["end"] - first for record in clock if record["task"] == WAVE_DONE and record["status"] == "ok"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--load", type=float, default=4.0, help="the emulator's load time, seconds")
    parser.add_argument("--prompts", type=int, default=6)
    parser.add_argument("--output-len", type=int, default=96)
    parser.add_argument("--port", type=int, default=42400)
    args = parser.parse_args()
    image = (REPO / ".cache/sim/image").read_text().strip()
    bin_dir = REPO / ".venv/bin"
    walls, waves = {}, {}
    with tempfile.TemporaryDirectory(prefix="specdec-perf-") as tmp:
        tmp = pathlib.Path(tmp)
        key, env = bench_campaign.ssh_env(tmp)
        hosts = []
        try:
            hosts, inventory = bench_probe.start_hosts(1, image, key.with_suffix(".pub").read_text(), args.port)
            container = hosts[0][0]
            inv = tmp / "inv" / "hosts"
            inv.parent.mkdir()
            inv.write_text(inventory + "\n")
            bench_probe.seed(str(inv), env)
            for campaign, parallel in (("sequential", False), ("parallel", True)):
                extra = tmp / f"{campaign}.json"
                extra.write_text(json.dumps({
                    "campaign_spec": spec_of(campaign, args, parallel), "specdec_stoppable_units": ["ddtree-qwen.service"],
                    "specdec_sglang_build": "sglang-ddtree-pr29907", "campaign_ready_timeout": 120,
                    "sglang_unit_env": {"SIM_SGLANG_LOAD_SECONDS": str(args.load), "SIM_SGLANG_TIME_SCALE": "0.05"}}))
                clock_path = tmp / "clock.jsonl"
                clock_path.unlink(missing_ok=True)
                walls[campaign], clock = bench_campaign.run_clocked(
                    [str(bin_dir / "ansible-playbook"), "-i", str(inv), str(REPO / "playbooks/campaign.yml"), "-e", f"@{extra}"],
                    env, clock_path)
                waves[campaign] = parts(clock)
                for stage in json.loads(bench_probe.sh("podman", "exec", container, "cat",
                                                       f"/root/bench_results/{campaign}/campaign.json"))["stages"]:
                    st = bench_campaign.status(container, campaign, stage["id"])
                    if st["status"] != "ok":
                        raise SystemExit(f"{campaign}: stage {stage['id']} ended {st['status']}: {st.get('reason')}")
                print(f"{campaign}: {walls[campaign]:.1f} s, {len(waves[campaign])} waves", file=sys.stderr)
            beside = measured(container, "parallel", STAGE)
            alone = measured(container, "parallel", STAGE + "-alone")
            sequential = measured(container, "sequential", STAGE)
        finally:
            if hosts:
                bench_probe.sh("podman", "rm", "-f", "-t", "0", *[name for name, _port in hosts])

    seq, par = waves["sequential"], waves["parallel"]
    # sequential: 15 waves of one (5 TP1, 5 TP4, 5 TP8); parallel: 1 wave of 5 TP1, 5 TP4, 5 TP8, 1 interference re-run
    rows = [
        ("TP1 stages (5)", seq[4], par[0]),
        ("TP4 and TP8 stages (10)", seq[14] - seq[4], par[10] - par[0]),
        ("interference re-run (1)", 0.0, par[11] - par[10]),
        ("all stages", seq[14], par[11]),
        ("whole run (ansible-playbook)", walls["sequential"], walls["parallel"]),
    ]
    print(f"\n(b) campaigns/ct200.yml on one simulated CT200, emulator load {args.load} s, one run each, same container")
    print(f"{'part':<30}{'sequential s':>14}{'parallel s':>12}{'ratio':>8}")
    for name, first, second in rows:
        ratio = f"{first / second:.2f}x" if first and second else "-"
        print(f"{name:<30}{first:>14.1f}{second:>12.1f}{ratio:>8}")
    print(f"\n(c) {STAGE} at concurrency 1, random prompts, mean of 3 repeats each")
    print(f"{'measured':<44}{'tok/s':>10}{'median ITL ms':>15}")
    for name, (tps, itl) in (("beside 4 other TP1 stages (parallel run)", beside),
                             ("alone, at the end of the parallel run", alone),
                             ("alone, in the sequential run", sequential)):
        print(f"{name:<44}{tps:>10.1f}{itl:>15.2f}")
    print(f"beside vs alone (the report's interference figure): throughput {100 * (beside[0] - alone[0]) / alone[0]:+.1f}%,"
          f" median ITL {100 * (beside[1] - alone[1]) / alone[1]:+.1f}%")
    print(f"alone at the end vs the sequential run (same stage, both alone): throughput"
          f" {100 * (alone[0] - sequential[0]) / sequential[0]:+.1f}%, median ITL {100 * (alone[1] - sequential[1]) / sequential[1]:+.1f}%")


if __name__ == "__main__":
    main()
