"""What playbooks/campaign.yml left on both simulated hosts: the matrix (converge, then a rerun with nothing to do) and
the faulty servers (side_effect).

Every test reads the containers through `podman exec` (much faster than molecule's Ansible backend) and runs once.
"""
import hashlib
import itertools
import json
import os
import sys

import pytest
import testinfra

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "helpers"))
import simhost  # noqa: E402  pylint: disable=wrong-import-position

RESULTS = "/root/bench_results"
HOLDER = "ddtree-qwen.service"
CONCURRENCY = [1, 4]
NUM_PROMPTS = 8
# molecule.yml's prompt sets per host: name -> (records, user turns sent); one temperature (the default, 0)
CT200_DATASETS = {"demo-gsm8k": (2, 2), "demo-mt-bench": (2, 4), "random": (NUM_PROMPTS, NUM_PROMPTS)}
A100_DATASETS = {"demo-math500": (2, 2), "random": (NUM_PROMPTS, NUM_PROMPTS)}
CT200_RUNS = [(dataset, 0, c) for dataset, c in itertools.product(CT200_DATASETS, CONCURRENCY)]
A100_RUNS = [(dataset, 0, c) for dataset, c in itertools.product(A100_DATASETS, CONCURRENCY)]
PROMPTS_DIR = "/var/lib/specdec/datasets"
CT200_STAGES = [f"tp{tp}-{method}" for tp in (1, 4, 8)
                for method in ("autoregressive", "dflash-n16", "ddtree-b32-k4", "ddtree-b64-k4")]
A100_RUN = [f"tp{tp}-{method}" for tp in (2, 4) for method in ("autoregressive", "dflash-n16")]
A100_INFEASIBLE = ["tp1-autoregressive", "tp1-dflash-n16"]
# results_dir_layout, as the results_dir role names the files
KEPT = ["status.json", "server_info.json", "gpus.json", "unit.service", "journal.txt"]


@pytest.fixture(name="ct200", scope="module")
def ct200_host():
    return testinfra.get_host("podman://campaign-ct200")


@pytest.fixture(name="a100", scope="module")
def a100_host():
    return testinfra.get_host("podman://campaign-a100box")


def result_file(dataset, temperature, concurrency):
    """The results layout's result file of repeat 1 (module_utils/_common.py RESULTS_LAYOUT)."""
    return f"result-{dataset}-t{temperature:g}-c{concurrency}-r1.json"


def headline_runs(st):
    return [(row["dataset"], row["temperature"], row["concurrency"]) for row in st["headline"]]


def read_json(host, path):
    return json.loads(host.file(path).content_string)


def status(host, campaign, stage):
    return read_json(host, f"{RESULTS}/{campaign}/{stage}/status.json")


def gpu_zero_pids(host):
    out = host.check_output("nvidia-smi --query-compute-apps=gpu_uuid,pid --format=csv,noheader")
    uuid0 = host.check_output("nvidia-smi --query-gpu=uuid --format=csv,noheader -i 0").strip()
    return [int(line.split(",")[1]) for line in out.splitlines() if line.split(",")[0].strip() == uuid0]


def test_every_ct200_stage_ran_ok_for_each_prompt_set_and_concurrency(ct200):
    plan = read_json(ct200, f"{RESULTS}/matrix/campaign.json")
    assert sorted(stage["id"] for stage in plan["stages"]) == sorted(CT200_STAGES)
    for stage in CT200_STAGES:
        st = status(ct200, "matrix", stage)
        assert st["status"] == "ok", (stage, st)
        assert headline_runs(st) == CT200_RUNS
        assert [entry["name"] for entry in st["datasets"]] == list(CT200_DATASETS)
        assert st["timings"]["ready_s"] >= 0 and st["timings"]["harness_s"] > 0
        for dataset, temperature, concurrency in CT200_RUNS:
            result = read_json(ct200, f"{RESULTS}/matrix/{stage}/{result_file(dataset, temperature, concurrency)}")
            assert (result["complete"], result["failed"], result["dataset"]) == (True, 0, dataset), (stage, dataset)
            assert (result["num_prompts"], result["requests"]) == CT200_DATASETS[dataset], (stage, dataset)
        for name in KEPT:
            assert ct200.file(f"{RESULTS}/matrix/{stage}/{name}").size > 0, (stage, name)


def test_each_host_got_its_prompt_sets_templated_with_its_models_template(ct200, a100):
    """The campaign copied each set's prompts file once, named by its sha256; the A100 box's with thinking off."""
    for host, stage, names, thinking_off in ((ct200, "tp1-dflash-n16", ["demo-gsm8k", "demo-mt-bench"], False),
                                             (a100, "tp2-dflash-n16", ["demo-math500"], True)):
        datasets = status(host, "matrix", stage)["datasets"]
        real = [entry for entry in datasets if entry["kind"] != "random"]
        assert [entry["name"] for entry in real] == names
        assert sorted(host.check_output(f"ls {PROMPTS_DIR}").split()) == sorted(e["prompts_sha256"] + ".jsonl" for e in real)
        for entry in real:
            prompts = host.file(f"{PROMPTS_DIR}/{entry['prompts_sha256']}.jsonl")
            assert prompts.mode == 0o644 and hashlib.sha256(prompts.content).hexdigest() == entry["prompts_sha256"]
            assert entry["chat_template_kwargs"] == ({"enable_thinking": False} if thinking_off else {})
            first = json.loads(prompts.content.decode().splitlines()[0])
            assert first["segments"][0].endswith("<think>\n\n</think>\n\n" if thinking_off else "<|im_start|>assistant\n")
            assert "prompts_path" not in entry


def test_ct200_stages_ran_on_their_gpus(ct200):
    """The GPU snapshot taken while each server ran: TP1 holds GPU1 only, TP4 GPUs 1-4, TP8 all eight."""
    expected = {"tp1": {1}, "tp4": {1, 2, 3, 4}, "tp8": set(range(8))}
    for stage in CT200_STAGES:
        unit = f"specdec-matrix-{stage}.service"
        gpus = read_json(ct200, f"{RESULTS}/matrix/{stage}/gpus.json")["nvidia_gpus"]
        held = {gpu["index"] for gpu in gpus if any(p.get("unit") == unit for p in gpu["processes"])}
        assert held == expected[stage.split("-")[0]], stage


def test_speculative_stages_accept_more_than_one_token_and_ddtree_more_with_a_larger_budget(ct200):
    def tau(stage):
        return [row["accept_length"] for row in status(ct200, "matrix", stage)["headline"]]

    for tp in (1, 4, 8):
        assert tau(f"tp{tp}-autoregressive") == [None] * len(CT200_RUNS)
        assert all(value > 1 for value in tau(f"tp{tp}-dflash-n16"))
        # per run: acceptance differs by prompt set (content), so budgets are compared on the same set; a short set's
        # outputs (16 tokens) may end within the same verify steps for both budgets
        pairs = list(zip(CT200_RUNS, tau(f"tp{tp}-ddtree-b64-k4"), tau(f"tp{tp}-ddtree-b32-k4")))
        assert all(b64 >= b32 for _run, b64, b32 in pairs)
        assert all(b64 > b32 for run, b64, b32 in pairs if run[0] == "random")


def test_the_unit_kept_is_the_one_that_ran(ct200):
    unit = ct200.file(f"{RESULTS}/matrix/tp4-ddtree-b64-k4/unit.service").content_string
    assert "'--tp-size=4'" in unit and "'--speculative-ddtree-budget=64'" in unit
    assert unit == ct200.file("/etc/systemd/system/specdec-matrix-tp4-ddtree-b64-k4.service").content_string


def test_the_a100_box_has_no_systemd_and_its_stages_ran_under_the_supervisor(a100):
    """As the seed's A100 box: a Docker-style container whose PID 1 is not systemd."""
    assert a100.check_output("cat /proc/1/comm") != "systemd" and not a100.file("/run/systemd/system").exists
    for stage in A100_RUN:
        folder = f"/var/lib/specdec/services/specdec-matrix-{stage}.service"
        definition = read_json(a100, f"{folder}/service.json")
        assert "--host=127.0.0.1" in definition["argv"]
        ended = read_json(a100, f"{folder}/exit.json")
        assert ended["signal"] == 15 or ended["exit_code"] == 0, ended  # stopped by the stage
        assert read_json(a100, f"{RESULTS}/matrix/{stage}/service.json") == definition
        assert "The server is fired up and ready to roll!" in a100.file(f"{RESULTS}/matrix/{stage}/journal.txt").content_string


def test_a100_tp1_is_infeasible_and_tp2_tp4_ran(a100):
    for stage in A100_INFEASIBLE:
        st = status(a100, "matrix", stage)
        assert st["status"] == "infeasible" and "GiB" in st["reason"], st
        assert not a100.file(f"/var/lib/specdec/services/specdec-matrix-{stage}.service").exists
    for stage in A100_RUN:
        st = status(a100, "matrix", stage)
        assert st["status"] == "ok", (stage, st)
        assert headline_runs(st) == A100_RUNS


def test_both_hosts_left_as_they_were(ct200, a100):
    """ddtree-qwen.service, stopped for TP8, is back on GPU0; no stage server runs; no lock, no record."""
    assert ct200.service(HOLDER).is_running
    assert int(ct200.check_output(f"systemctl show -p MainPID --value {HOLDER}")) in gpu_zero_pids(ct200)
    assert ct200.check_output("systemctl list-units --plain --no-legend --state=active 'specdec-*'") == ""
    assert simhost.supervised_running(a100, "specdec-*") == []
    for host in (ct200, a100):
        assert not host.file("/var/lib/specdec/campaign.lock").exists
        assert host.check_output("ls -A /var/lib/specdec/conflicts 2>/dev/null || true") == ""


# the step of specdec.bench.stage_run each stage failed at (evidence.step, the module whose engine failed)
FAULTS = {
    "tp8-fail-start": "sglang_ready",
    "tp8-renamed-flag": "sglang_ready",
    "tp8-crash": "bench_run",
    "tp8-never-ready": "sglang_ready",
}


@pytest.mark.parametrize("stage", sorted(FAULTS))
def test_a_faulty_server_ends_failed_with_its_evidence(ct200, stage):
    st = status(ct200, "faults", stage)
    assert st["status"] == "failed" and st["reason"], st
    assert st["evidence"]["step"] == FAULTS[stage]
    assert set(st["evidence"]["unit_state"]) >= {"state", "exit_code", "signal", "backend"}
    journal = ct200.file(f"{RESULTS}/faults/{stage}/journal.txt").content_string
    assert f"specdec-faults-{stage}" in journal
    assert ct200.file(f"{RESULTS}/faults/{stage}/unit.service").size > 0


def test_a_server_that_fails_at_start_is_reported_dead_with_its_journal(ct200):
    st = status(ct200, "faults", "tp8-fail-start")
    assert st["evidence"]["unit_state"]["state"] in ("failed", "inactive")
    assert st["evidence"]["journal"], "the readiness check returns the unit's last journal lines"


def test_a_server_that_never_becomes_ready_times_out(ct200):
    assert "8" in status(ct200, "faults", "tp8-never-ready")["reason"]


def test_a_crash_mid_run_keeps_what_finished_marked_incomplete(ct200):
    result = read_json(ct200, f"{RESULTS}/faults/tp8-crash/{result_file('random', 0, 1)}")
    assert result["complete"] is False
    assert 0 < result["completed"] < NUM_PROMPTS and result["failed"] >= 1


def test_the_healthy_stage_after_the_faults_completed(ct200):
    st = status(ct200, "faults", "tp8-autoregressive")
    assert st["status"] == "ok" and st["headline"][0]["output_throughput"] > 0


def test_a_flag_sglang_refuses_fails_its_stage_with_the_servers_own_message(ct200):
    """With the preflight off, the server itself exits 2 with argparse's message, which the stage keeps."""
    st = status(ct200, "faults", "tp8-renamed-flag")
    evidence = "\n".join(st["evidence"]["journal"])
    assert "sglang serve: error: unrecognized arguments: --mamba-scheduler-strategy=extra_buffer" in evidence
    assert st["evidence"]["unit_state"]["state"] == "failed" and st["evidence"]["unit_state"]["exit_code"] == 2


def test_the_preflight_refuses_that_stage_before_anything_changes(ct200):
    refusal = read_json(ct200, "/root/preflight-refusal.json")
    assert refusal["task"] == "Parse every stage's command line with the host's own SGLang"
    assert ("stage tp8-renamed-flag: SGLang 0.5.23+sim (/usr/bin/python3) refuses --mamba-scheduler-strategy: "
            "unrecognized arguments") in refusal["msg"]
    assert "tp8-autoregressive" not in refusal["msg"]
    # nothing changed: the holder was not stopped, no folder, no unit, no lock, no conflicts record
    assert ct200.check_output(f"systemctl show -p ActiveEnterTimestampMonotonic --value {HOLDER}") == refusal["holder_started"]
    assert not ct200.file(f"{RESULTS}/refused").exists
    assert ct200.check_output("ls /etc/systemd/system /var/lib/specdec/units | grep -c specdec-refused- || true") == "0"
    assert not ct200.file("/var/lib/specdec/campaign.lock").exists


@pytest.mark.parametrize("stage, step", [("tp2-fail-start", "sglang_ready"), ("tp2-crash", "bench_run")])
def test_without_systemd_a_faulty_server_ends_failed_with_its_log(a100, stage, step):
    st = status(a100, "faults", stage)
    assert st["status"] == "failed" and st["evidence"]["step"] == step, st
    assert st["evidence"]["unit_state"]["backend"] == "supervisor"
    journal = a100.file(f"{RESULTS}/faults/{stage}/journal.txt").content_string
    assert f"specdec supervisor: starting specdec-faults-{stage}.service" in journal
    assert "specdec supervisor: specdec-faults-" in journal.splitlines()[-1]  # how it ended, as the supervisor saw it
    assert read_json(a100, f"{RESULTS}/faults/{stage}/service.json")["env"]["SIM_SGLANG_FAULT"] in ("fail_start", "crash")


def test_without_systemd_a_crash_mid_run_keeps_what_finished(a100):
    result = read_json(a100, f"{RESULTS}/faults/tp2-crash/{result_file('random', 0, 1)}")
    assert result["complete"] is False and 0 < result["completed"] < NUM_PROMPTS
    assert status(a100, "faults", "tp2-autoregressive")["status"] == "ok"
    assert simhost.supervised_running(a100, "specdec-faults-*") == []
