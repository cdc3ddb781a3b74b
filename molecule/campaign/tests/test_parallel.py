"""campaigns/ct200.yml on the simulated CT200 with its TP1 pool of 7 GPUs and `parallel: true` (stages of a wave side by side).

The spec's GPUs, methods and `parallel` come from the file as it is; only the workload is made small (one prompt set
of random prompts, concurrency 1, one repeat), so the 15 stages and the interference re-run take two minutes here.
What must hold: the 5 TP1 stages run side by side, each on its own GPU (the GPU snapshot each stage took while its
server ran), each unit pinned to the CPUs the plan gave it from its GPU's NUMA node; each TP4 stage, and each TP8
stage (it stops ddtree-qwen.service) ran alone; the first TP1 stage is measured again alone at the end.
"""
import datetime
import json
import os
import sys

import pytest
import testinfra
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "helpers"))
import simhost  # noqa: E402  pylint: disable=wrong-import-position

CAMPAIGN = "parallel"
RESULTS = f"/root/bench_results/{CAMPAIGN}"
BOX = testinfra.get_host("podman://campaign-ct200")
LAYOUT = simhost.REPO / "tests" / "sim" / "layouts" / "ct200.json"
# half the modelled GPU's speed: a TP1 stage measures for several seconds, so the wave's stages overlap for seconds
EMULATOR = {"SIM_SGLANG_LOAD_SECONDS": "0.5", "SIM_SGLANG_TIME_SCALE": "0.5"}


def read_json(path):
    return json.loads(BOX.file(path).content_string)


def cpus(text):
    """A cpulist ("0-2,5") as a set."""
    found = set()
    for part in (text or "").split(","):
        if part.strip():
            low, _sep, high = part.partition("-")
            found.update(range(int(low), int(high or low) + 1))
    return found


def when(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))  # status.json: UTC with milliseconds


@pytest.fixture(name="ran", scope="module")
def run_the_campaign(tmp_path_factory):
    with open(simhost.REPO / "campaigns" / "ct200.yml", encoding="utf-8") as handle:
        spec = yaml.safe_load(handle)["campaign_spec"]
    spec.update(campaign=CAMPAIGN, workload={"input_len": 32, "output_len": 48, "num_prompts": 6}, concurrency=[1], repeats=1)
    extra = tmp_path_factory.mktemp("parallel") / "parallel.yml"
    extra.write_text(yaml.safe_dump({"campaign_hosts": "campaign-ct200", "campaign_spec": spec, "sglang_unit_env": EMULATOR},
                                    sort_keys=False))  # the methods in the file's order
    rc, out = simhost.playbook(simhost.REPO / "playbooks" / "campaign.yml", "-e", f"@{extra}", timeout=900)
    assert rc == 0, out[-4000:]
    plan = {stage["id"]: stage for stage in read_json(f"{RESULTS}/campaign.json")["stages"]}
    statuses = {stage: read_json(f"{RESULTS}/{stage}/status.json") for stage in plan}
    return {"spec": spec, "out": out, "plan": plan, "status": statuses}


def tp1(ran):
    return [stage for stage in ran["plan"] if stage.startswith("tp1-") and not ran["plan"][stage]["interference_of"]]


def test_every_stage_ran_and_the_spec_is_the_file_s(ran):
    assert ran["spec"]["parallel"] is True and ran["spec"]["tp"][0]["pool"] == [1, 2, 3, 4, 5, 6, 7]
    assert len(ran["plan"]) == 16 and {st["status"] for st in ran["status"].values()} == {"ok"}


def test_the_tp1_stages_ran_side_by_side_each_on_its_own_gpu(ran):
    stages = tp1(ran)
    assert len(stages) == 5 and len({ran["plan"][stage]["wave"] for stage in stages}) == 1
    held_by = {}
    others_seen = 0
    for stage in stages:
        unit = ran["plan"][stage]["unit"]
        gpus = read_json(f"{RESULTS}/{stage}/gpus.json")["nvidia_gpus"]
        held = {gpu["index"] for gpu in gpus if any(p.get("unit") == unit for p in gpu["processes"])}
        assert held == set(ran["plan"][stage]["gpu_indices"]) and len(held) == 1, stage
        held_by[stage] = held.pop()
        # the snapshot was taken while this stage's server ran: other stages of the wave held their GPUs at that moment
        others_seen = max(others_seen, sum(1 for gpu in gpus for p in gpu["processes"]
                                           if p.get("unit") in {ran["plan"][o]["unit"] for o in stages if o != stage}))
        assert sorted(ran["status"][stage]["ran_beside"]) == sorted(o for o in stages if o != stage)
    assert sorted(held_by.values()) == [1, 2, 3, 4, 5]
    assert others_seen >= 1, "no TP1 stage saw another one running: they ran one after another"
    spans = {stage: (when(ran["status"][stage]["started"]), when(ran["status"][stage]["finished"])) for stage in stages}
    for stage, (start, end) in spans.items():  # each one's time overlaps another one's
        assert any(s <= end and start <= e for other, (s, e) in spans.items() if other != stage), (stage, spans)
    assert "5 stages at once: tp1-autoregressive (GPU 1), tp1-dflash-n16 (GPU 2)" in ran["out"]


def test_each_server_is_pinned_to_the_cpus_of_its_gpu_s_numa_node(ran):
    with open(LAYOUT, encoding="utf-8") as handle:
        layout = json.load(handle)["gpus"]
    online = cpus(BOX.check_output("cat /sys/devices/system/cpu/online"))
    given = {}
    for stage in tp1(ran):
        planned = ran["plan"][stage]
        local = cpus(layout[planned["gpu_indices"][0]]["cpu_affinity"]) & online
        unit = BOX.file(f"{RESULTS}/{stage}/unit.service").content_string
        if not local:
            # its GPU's node has no CPU online here: not pinned, and the plan says why
            assert planned["cpu_affinity"] is None and "not online" in planned["pin_note"]
            assert "CPUAffinity=" not in unit
            continue
        assert cpus(planned["cpu_affinity"]) <= local, stage
        assert f"CPUAffinity={planned['cpu_affinity']}" in unit and f"NUMAMask={planned['numa_nodes']}" in unit
        given[stage] = cpus(planned["cpu_affinity"])
    assert given, "no TP1 stage's GPU is local to an online CPU"
    shared = [stage for stage in given if "shares CPUs" in (ran["plan"][stage]["pin_note"] or "")]
    if not shared:  # enough CPUs: each stage has its own
        assert sum(len(s) for s in given.values()) == len(set().union(*given.values()))


def test_tp4_and_tp8_stages_ran_alone(ran):
    intervals = {stage: (when(st["started"]), when(st["finished"])) for stage, st in ran["status"].items()}
    for stage, planned in ran["plan"].items():
        if stage.startswith(("tp4-", "tp8-")):
            assert ran["status"][stage]["ran_beside"] == [] and planned["wave_stages"] == [stage], stage
            start, end = intervals[stage]
            # one-second timestamps: another stage may end in the second this one starts, never later
            assert all(e <= start or s >= end for other, (s, e) in intervals.items() if other != stage), stage
    assert all(ran["plan"][stage]["alone"] == "stops ddtree-qwen.service" for stage in ran["plan"] if stage.startswith("tp8-"))


def test_the_first_tp1_stage_is_measured_again_alone(ran):
    alone = [stage for stage, planned in ran["plan"].items() if planned["interference_of"]]
    assert alone == ["tp1-autoregressive-alone"]
    planned, st = ran["plan"][alone[0]], ran["status"][alone[0]]
    assert planned["interference_of"] == "tp1-autoregressive" and planned["gpu_indices"] == [1]
    assert st["ran_beside"] == [] and st["interference_of"] == "tp1-autoregressive"
    assert [row["concurrency"] for row in st["headline"]] == [1]
    assert max(when(s["finished"]) for name, s in ran["status"].items() if name != alone[0]) <= when(st["started"])
