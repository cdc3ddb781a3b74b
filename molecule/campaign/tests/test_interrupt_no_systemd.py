"""A campaign on the A100 box, whose PID 1 is not systemd, killed mid-stage with its controller, then resumed.

The fixture plays the story once with the real playbook against molecule's inventory:
  1. campaign `resume` starts on the A100 box (3 TP2 stages, each server under specdec's supervisor);
  2. once a stage is done and the next one's server runs, the playbook is killed (SIGKILL to its process group):
     the server it started outlives it, since it runs in a session of its own, until the stage's job (one
     specdec.bench.stage_run on the host) sees no poll for its lease and stops it;
  3. a rerun takes over the dead run's lock and runs only what was not finished.
"""
import functools
import json
import os
import signal
import sys

import pytest
import testinfra
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "helpers"))
import simhost  # noqa: E402  pylint: disable=wrong-import-position

CAMPAIGN = "resume"
STAGES = ["tp2-autoregressive", "tp2-dflash-n8", "tp2-dflash-n16"]
RESULTS = f"/root/bench_results/{CAMPAIGN}"
SERVICES = "/var/lib/specdec/services"
LOCK = "/var/lib/specdec/campaign.lock"
CAMPAIGN_YML = simhost.REPO / "playbooks" / "campaign.yml"
SPEC = {"campaign": CAMPAIGN, "model": "/data/models/Qwen3.6-27B", "draft": "/data/models/Qwen3.6-27B-DFlash",
        "tp": [{"size": 2, "gpus": [4, 5]}], "methods": {"autoregressive": {}, "dflash": {"num_draft_tokens": [8, 16]}},
        "workload": {"input_len": 32, "output_len": 64, "num_prompts": 48}, "concurrency": [1]}
BOX = testinfra.get_host("podman://campaign-a100box")

# what the campaign left on the host: its lock, a stage's recorded status, {path: sha256} of its result files
lock = functools.partial(simhost.read_json, BOX, LOCK)
status = functools.partial(simhost.stage_status, BOX, RESULTS)
files = functools.partial(simhost.file_sha256, BOX, RESULTS)


@pytest.fixture(name="story", scope="module")
def play_the_story(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("resume")
    spec = tmp / "resume.yml"
    spec.write_text(yaml.safe_dump({"campaign_hosts": "campaign-a100box", "campaign_spec": SPEC,
                                    # half the modelled GPU's speed: a stage measures for 8 s (DFlash) to 25 s (AR)
                                    "sglang_unit_env": {"SIM_SGLANG_LOAD_SECONDS": "0.5", "SIM_SGLANG_TIME_SCALE": "0.5"},
                                    # a stage stops itself 4 s after the last renewal of its controller (its polls, every
                                    # half second, and its lease keeper's, every second); 4 s passes the campaign's
                                    # check (a quarter of the lease plus three renewal round trips) on a busy machine
                                    "campaign_stage_lease_timeout": 4, "bench_stage_poll": 0.5}))
    seen = {}
    with open(tmp / "first.log", "w", encoding="utf-8") as log:
        first = simhost.start_playbook(CAMPAIGN_YML, "-e", f"@{spec}", log=log)
        try:
            def mid_stage():
                done = [stage for stage in STAGES if status(stage) == "ok"]
                running = simhost.supervised_running(BOX, f"specdec-{CAMPAIGN}-*")
                return done and running and (done, running)

            seen["done"], seen["running"] = simhost.wait_for(mid_stage, "a stage done and the next one running", timeout=300)
            os.killpg(first.pid, signal.SIGKILL)
        finally:
            if first.poll() is None:
                os.killpg(first.pid, signal.SIGKILL)
            first.wait(timeout=60)
    seen["first_pid"] = first.pid
    seen["killed"] = {"lock": lock(), "running": simhost.supervised_running(BOX, f"specdec-{CAMPAIGN}-*"),
                      "files": files()}
    server = seen["killed"]["running"][0] if seen["killed"]["running"] else None
    if server:
        run = json.loads(BOX.file(f"{SERVICES}/{server}/run.json").content_string)
        seen["server_pid_alive"] = BOX.run(f"kill -0 {run['pid']}").rc == 0
    seen["rerun"] = simhost.playbook(CAMPAIGN_YML, "-e", f"@{spec}")
    seen["after"] = {"status": {stage: status(stage) for stage in STAGES}, "files": files(), "lock": lock(),
                     "running": simhost.supervised_running(BOX, "specdec-*")}
    return seen


def test_the_server_outlives_the_killed_controller(story):
    killed = story["killed"]
    assert killed["lock"]["holder"]["pid"] == story["first_pid"]
    assert killed["running"] == story["running"] and len(killed["running"]) == 1
    assert story["server_pid_alive"] is True


def test_the_rerun_stops_the_left_server_and_runs_only_what_was_missing(story):
    rc, out = story["rerun"]
    assert rc == 0, out[-3000:]
    done = len(story["done"])
    assert f"{len(STAGES)} stages planned, {done} finished earlier, {len(STAGES) - done} to run" in out
    assert f"its ansible-playbook (pid {story['first_pid']}) on this controller is gone" in out
    assert story["after"]["status"] == dict.fromkeys(STAGES, "ok")
    assert story["after"]["running"] == [] and story["after"]["lock"] is None


def test_no_finished_result_was_lost_or_changed(story):
    before, after = story["killed"]["files"], story["after"]["files"]
    for stage in story["done"]:
        kept = {path: digest for path, digest in before.items() if path.startswith(stage + "/")}
        assert kept and all(after.get(path) == digest for path, digest in kept.items()), stage
