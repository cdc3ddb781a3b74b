"""The loop from training to benchmark, on the simulated A100 box (training) and CT200 (benchmark).

converge.yml ran the training playbook (a run writing checkpoint-100, -200 and -300) and playbooks/evaluate.yml once.
The fixture then plays the rest of the story once and keeps what it saw; the tests check one step each:
  1. the first evaluation: the checkpoints copied (verified by sha256), measured with one AR baseline, reported;
  2. the run goes on (the simulated trainer resumes at step 300 and writes checkpoint-400 and -500); a second
     evaluation copies and measures only those two;
  3. the run writes checkpoint-600, and the controller's cached copy of its weights is corrupted; the third evaluation
     refuses the copy: its stage is recorded failed, nothing is installed, nothing on the CT200 changes;
  4. a fourth evaluation fetches the refused files again and measures checkpoint-600.
"""
import csv
import json
import os
import sys

import pytest
import testinfra

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "helpers"))
import simhost  # noqa: E402  pylint: disable=wrong-import-position

CT200 = testinfra.get_host("podman://evaluate-ct200")
BOX = testinfra.get_host("podman://evaluate-a100box")
CAMPAIGN = "eval-dflash"
RUN = "dflash-eval"
RUN_DIR = f"/root/train_runs/{RUN}"
SOURCE = f"{RUN_DIR}/checkpoints"
DEST = f"/var/lib/specdec/checkpoints/{RUN}"
RESULTS = f"/root/bench_results/{CAMPAIGN}"
EPHEMERAL = os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "")
REPORT = os.path.join(EPHEMERAL, "reports", CAMPAIGN)
CACHE = os.path.join(EPHEMERAL, "checkpoint-cache")
EVALUATE_YML = simhost.REPO / "playbooks" / "evaluate.yml"
AR = "tp1-autoregressive"


def dflash(step):
    return f"tp1-dflash-n16-s{step}"


def plan():
    return json.loads(CT200.file(f"{RESULTS}/campaign.json").content_string)


def status(stage):
    path = f"{RESULTS}/{stage}/status.json"
    return json.loads(CT200.file(path).content_string) if CT200.file(path).exists else None


def tree(host, path):
    """sha256 of every file under path on host (hidden files too), by relative path."""
    out = host.check_output(f"cd {path} && find . -type f -exec sha256sum {{}} + | sort -k2")
    return {line.split(None, 1)[1].strip()[2:]: line.split()[0] for line in out.splitlines()}


def train_on(start, steps):
    """The run goes on: the simulated trainer resumes at `start` and writes a checkpoint every 100 steps to `steps`."""
    BOX.check_output(f"SPECDEC_RUN_DIR={RUN_DIR} python3 /usr/lib/sim-trainer/sim_trainer.py --start-step {start} "
                     f"--steps {steps} --pace 0.01 --checkpoint-every 100 --format json --load-seconds 0")


# campaign.json only gains stages (kept_plan checks it); timing.json is the last run's wall clock, rewritten by each run
REWRITTEN = ("campaign.json", "timing.json")


def same_files(before, after):
    """Every file of `before` is in `after` unchanged, but the campaign's two files each run rewrites."""
    return {path: sha for path, sha in after.items() if path in before and path not in REWRITTEN} == \
        {path: sha for path, sha in before.items() if path not in REWRITTEN}


def kept_plan(before, after):
    """campaign.json after a later evaluation: the stages it listed, as they were, then the new ones."""
    return after["stages"][:len(before["stages"])] == before["stages"]


def evaluate():
    rc, out = simhost.playbook(EVALUATE_YML, "-e", "campaign_hosts=evaluate-ct200", timeout=900)
    assert rc == 0, out[-6000:]
    return out


@pytest.fixture(scope="module")
def story():
    seen = {"first": {stage: status(stage) for stage in (AR, dflash(100), dflash(200), dflash(300))}, "plans": [plan()],
            "first_results": tree(CT200, RESULTS), "first_dest": tree(CT200, DEST)}
    train_on(300, 500)
    seen["second_out"] = evaluate()
    seen["second_results"] = tree(CT200, RESULTS)
    seen["plans"].append(plan())
    seen["second_dest"] = tree(CT200, DEST)
    train_on(500, 600)
    weights = tree(BOX, f"{SOURCE}/checkpoint-600")["model.safetensors"]
    # the controller holds a copy of the new weights under their sha256 name, and that copy is corrupted
    os.makedirs(CACHE, exist_ok=True)
    data = bytearray(BOX.file(f"{SOURCE}/checkpoint-600/model.safetensors").content)
    data[len(data) // 2] ^= 0xFF
    with open(os.path.join(CACHE, weights), "wb") as handle:
        handle.write(bytes(data))
    seen["weights_sha256"] = weights
    seen["third_out"] = evaluate()
    seen["third_status"] = status(dflash(600))
    seen["third_dest"] = tree(CT200, DEST)
    seen["third_results"] = tree(CT200, RESULTS)
    seen["plans"].append(plan())
    seen["cache_after_refusal"] = os.path.exists(os.path.join(CACHE, weights))
    seen["fourth_out"] = evaluate()
    return seen


def test_first_evaluation_copied_every_checkpoint_verified():
    for step in (100, 200, 300):
        source = tree(BOX, f"{SOURCE}/checkpoint-{step}")
        copied = tree(CT200, f"{DEST}/checkpoint-{step}")
        manifest = json.loads(CT200.file(f"{DEST}/checkpoint-{step}/.specdec-checkpoint.json").content_string)
        assert {path: sha for path, sha in copied.items() if path != ".specdec-checkpoint.json"} == source
        assert {f["path"]: f["sha256"] for f in manifest["files"]} == source
        assert manifest["source_host"] == "evaluate-a100box" and manifest["step"] == step


def test_first_evaluation_measured_each_checkpoint_and_one_baseline(story):
    assert all(entry and entry["status"] == "ok" for entry in story["first"].values()), story["first"]
    stages = CT200.check_output(f"ls {RESULTS}").split()
    assert [stage for stage in stages if "autoregressive" in stage] == [AR]
    plan = json.loads(CT200.file(f"{RESULTS}/campaign.json").content_string)
    drafts = {stage["id"]: stage["draft_path"] for stage in plan["stages"]} if "stages" in plan else {}
    assert drafts.get(dflash(100)) == f"{DEST}/checkpoint-100"
    unit = CT200.file(f"{RESULTS}/{dflash(200)}/unit.service")
    assert unit.exists and f"--speculative-draft-model-path={DEST}/checkpoint-200" in unit.content_string


def rows():
    with open(os.path.join(REPORT, "results.csv"), encoding="utf-8") as handle:
        return [row for row in csv.DictReader(handle) if row["status"] == "ok"]


def test_report_plots_tau_against_step_and_names_the_best(story):
    by_step = {}
    for row in rows():
        if row["method"] == "dflash":
            by_step.setdefault(row["dataset"], {})[int(row["step"])] = float(row["accept_length"])
    assert set(by_step) == {"demo-gsm8k", "demo-mt-bench"}
    for dataset, taus in by_step.items():
        steps = sorted(taus)
        assert steps[:6] == [100, 200, 300, 400, 500, 600], (dataset, steps)
        # the simulated drafts improve with training: acceptance rises from the first checkpoint to the last
        assert taus[steps[0]] < taus[steps[-1]], (dataset, taus)
    plots = [name for name in os.listdir(REPORT) if name.startswith("checkpoints-")]
    assert plots, os.listdir(REPORT)
    summary = json.load(open(os.path.join(REPORT, "evaluation.json"), encoding="utf-8"))
    best = summary["best"]
    assert best["step"] in (100, 200, 300, 400, 500, 600) and best["name"] == f"checkpoint-{best['step']}"
    report = open(os.path.join(REPORT, "report.md"), encoding="utf-8").read()
    assert best["name"] in report and "Best checkpoint" in report


def test_the_training_host_has_the_summary_and_its_page_shows_it(story):
    local = json.load(open(os.path.join(REPORT, "evaluation.json"), encoding="utf-8"))
    remote = json.loads(BOX.file(f"{RUN_DIR}/evaluation.json").content_string)
    assert remote == local
    fetch = ("python3 -c \"import urllib.request; "
             "print(urllib.request.urlopen('http://127.0.0.1:8080/api/evaluation', timeout=5).read().decode())\"")
    answer = simhost.wait_for(lambda: json.loads(BOX.check_output(fetch) or "{}").get("summary"),
                              "the monitor to serve the evaluation", timeout=30)
    assert answer["best"]["name"] == local["best"]["name"]


def test_second_evaluation_copies_and_measures_only_the_new_checkpoints(story):
    out = story["second_out"]
    for step in (400, 500):
        assert status(dflash(step))["status"] == "ok"
        assert f"checkpoint-{step} (step {step}) from evaluate-a100box" in out
    for step in (100, 200, 300):
        assert f"checkpoint-{step} (step {step}) from" not in out
    assert "through the controller (the hosts are not both reached over SSH" in out
    # what the first evaluation left is untouched, results and copies alike
    assert same_files(story["first_results"], story["second_results"])
    first_plan, second_plan = story["plans"][:2]
    assert kept_plan(first_plan, second_plan)
    assert [stage["id"] for stage in second_plan["stages"][len(first_plan["stages"]):]] == [dflash(400), dflash(500)]
    assert {path: sha for path, sha in story["second_dest"].items() if path in story["first_dest"]} == story["first_dest"]


def test_corrupted_copy_is_refused_and_nothing_is_overwritten(story):
    entry = story["third_status"]
    assert entry["status"] == "failed"
    assert "corrupted" in entry["reason"] and story["weights_sha256"] in entry["reason"], entry["reason"]
    assert "checkpoint-600" not in story["third_dest"] and not any(
        path.startswith("checkpoint-600/") or path.startswith(".incoming-") for path in story["third_dest"])
    assert story["third_dest"] == story["second_dest"]
    assert same_files(story["second_results"], story["third_results"])
    assert kept_plan(story["plans"][1], story["plans"][2])
    # the refused copy is not trusted again
    assert not story["cache_after_refusal"]


def test_next_evaluation_fetches_the_refused_checkpoint_again(story):
    assert status(dflash(600))["status"] == "ok"
    assert tree(CT200, f"{DEST}/checkpoint-600")["model.safetensors"] == story["weights_sha256"]
    assert "checkpoint-600 (step 600) from evaluate-a100box" in story["fourth_out"]


def test_each_run_records_its_wall_clock_and_page_cache_warm_up(story):
    timing = json.loads(CT200.file(f"{RESULTS}/timing.json").content_string)
    assert timing["campaign_started"] < timing["campaign_finished"]
    # the simulated model folder is small: always read into the page cache, and the time it took recorded
    assert isinstance(timing["page_cache_warmup_s"], float) and timing["page_cache_warmup_s"] >= 0
    report = open(os.path.join(REPORT, "report.md"), encoding="utf-8").read()
    assert "Where the time went" in report
