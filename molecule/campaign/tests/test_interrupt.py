"""A campaign on the simulated CT200 while another tries to start, killed mid-stage, restored, then finished.

The fixture plays the whole story once, with the real playbooks against molecule's inventory, and keeps what it saw
at each step; the tests check one step each:
  1. campaign `interrupt` starts (3 TP8 stages, so ddtree-qwen.service is stopped);
  2. while it holds the host's lock, campaign `other` is refused and changes nothing;
  3. once a stage is done and the next one's server runs, `interrupt` is killed (SIGKILL to its process group); the
     stage in flight (one specdec.bench.stage_run job on the host) sees no poll for its lease and stops itself:
     its server stopped, recorded failed;
  4. playbooks/restore.yml brings ddtree-qwen.service back on GPU0;
  5. a rerun takes over the dead run's lock and runs only the stages that were not finished.
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

CAMPAIGN = "interrupt"
STAGES = ["tp8-autoregressive", "tp8-dflash-n16", "tp8-ddtree-b64-k4"]
RESULTS = f"/root/bench_results/{CAMPAIGN}"
LOCK = "/var/lib/specdec/campaign.lock"
RECORD = f"/var/lib/specdec/conflicts/{CAMPAIGN}.json"
HOLDER = "ddtree-qwen.service"
CAMPAIGN_YML = simhost.REPO / "playbooks" / "campaign.yml"
RESTORE_YML = simhost.REPO / "playbooks" / "restore.yml"
# the modelled GPU's own speed: a stage measures for 8 s (DDTree) to 30 s (AR), far longer than a lease
EMULATOR = {"SIM_SGLANG_LOAD_SECONDS": "0.5", "SIM_SGLANG_TIME_SCALE": "1.0"}
# a stage stops itself 4 s after the last renewal of its controller (its polls, every half second at most, and its lease
# keeper's, every second); 4 s passes the campaign's check (a quarter of the lease plus three round trips) when busy
LEASE = {"campaign_stage_lease_timeout": 4, "bench_stage_poll": 0.5}
LEASE_REASON = "(the campaign was interrupted): stopped"
SPECS = {
    CAMPAIGN: {"campaign": CAMPAIGN, "model": "/models/Qwen3.6-27B", "draft": "/models/Qwen3.6-27B-DFlash",
               "tp": [8], "methods": {"autoregressive": {}, "dflash": {}, "ddtree": {"budget": [64]}},
               "workload": {"input_len": 32, "output_len": 64, "num_prompts": 48}, "concurrency": [1]},
    "other": {"campaign": "other", "model": "/models/Qwen3.6-27B", "tp": [{"size": 1, "gpus": [5]}],
              "methods": {"autoregressive": {}}, "workload": {"input_len": 32, "output_len": 32, "num_prompts": 4},
              "concurrency": [1]},
}
BOX = testinfra.get_host("podman://campaign-ct200")

# what the campaign left on the host: its lock, a stage's recorded status, {path: sha256} of its result files
lock = functools.partial(simhost.read_json, BOX, LOCK)
status = functools.partial(simhost.stage_status, BOX, RESULTS)
files = functools.partial(simhost.file_sha256, BOX, RESULTS)


def holder_on_gpu0():
    pid = simhost.main_pid(BOX, HOLDER)
    return pid > 0 and pid in simhost.gpu_pids(BOX, 0)


@pytest.fixture(name="story", scope="module")
def play_the_story(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("interrupt")
    extra = {}
    for name, spec in SPECS.items():
        path = tmp / f"{name}.yml"
        path.write_text(yaml.safe_dump(dict({"campaign_hosts": "campaign-ct200", "campaign_spec": spec,
                                             "sglang_unit_env": EMULATOR}, **LEASE)))
        extra[name] = f"@{path}"
    seen = {}
    with open(tmp / "first.log", "w", encoding="utf-8") as log:
        first = simhost.start_playbook(CAMPAIGN_YML, "-e", extra[CAMPAIGN], log=log)
        try:
            seen["lock"] = simhost.wait_for(lambda: (lock() or {}).get("campaign") == CAMPAIGN and lock(),
                                            "campaign interrupt to take the lock", timeout=180)
            seen["other"] = simhost.playbook(CAMPAIGN_YML, "-e", extra["other"])
            seen["other_left"] = {"results": BOX.file("/root/bench_results/other").exists,
                                  "units": simhost.active_units(BOX, "specdec-other-*"), "lock": lock()}

            def mid_stage():
                done = [stage for stage in STAGES if status(stage) == "ok"]
                running = simhost.active_units(BOX, f"specdec-{CAMPAIGN}-*")
                return done and running and (done, running)

            seen["done"], seen["running"] = simhost.wait_for(mid_stage, "a stage done and the next one running", timeout=300)
            os.killpg(first.pid, signal.SIGKILL)
        finally:
            if first.poll() is None:
                os.killpg(first.pid, signal.SIGKILL)
            first.wait(timeout=60)
    seen["killed"] = {"lock": lock(), "holder_active": BOX.service(HOLDER).is_running, "record": BOX.file(RECORD).exists,
                      "running": simhost.active_units(BOX, f"specdec-{CAMPAIGN}-*")}
    killed = [unit[len(f"specdec-{CAMPAIGN}-"):-len(".service")] for unit in seen["killed"]["running"]]
    seen["stopped_itself"] = simhost.wait_for(
        lambda: all(status(stage) == "failed" for stage in killed) and not simhost.active_units(BOX, f"specdec-{CAMPAIGN}-*"),
        "the stage in flight to stop itself at the end of its lease", timeout=60)
    seen["killed"]["reasons"] = {stage: json.loads(BOX.file(f"{RESULTS}/{stage}/status.json").content_string)["reason"]
                                 for stage in killed}
    seen["killed"]["files"] = files()
    seen["first_pid"] = first.pid
    seen["restore"] = simhost.playbook(RESTORE_YML, "-e", f"campaign={CAMPAIGN}", "-l", "campaign-ct200")
    seen["restored"] = {"holder_on_gpu0": simhost.wait_for(holder_on_gpu0, f"{HOLDER} on GPU0", timeout=60),
                        "running": simhost.active_units(BOX, f"specdec-{CAMPAIGN}-*"), "record": BOX.file(RECORD).exists}
    seen["rerun"] = simhost.playbook(CAMPAIGN_YML, "-e", extra[CAMPAIGN])
    seen["after"] = {"status": {stage: status(stage) for stage in STAGES}, "files": files(), "lock": lock(),
                     "holder_on_gpu0": simhost.wait_for(holder_on_gpu0, f"{HOLDER} on GPU0", timeout=60),
                     "running": simhost.active_units(BOX, "specdec-*"), "record": BOX.file(RECORD).exists}
    return seen


def test_a_second_campaign_is_refused_and_told_who_holds_the_host(story):
    rc, out = story["other"]
    assert rc != 0
    assert f"is locked by campaign {CAMPAIGN}" in out
    assert f"ansible-playbook pid {story['lock']['holder']['pid']}" in out


def test_the_refused_campaign_changed_nothing(story):
    left = story["other_left"]
    assert left["results"] is False and left["units"] == []
    assert left["lock"]["campaign"] == CAMPAIGN and left["lock"]["holder"] == story["lock"]["holder"]


def test_the_killed_campaign_left_its_lock_its_server_and_its_record(story):
    killed = story["killed"]
    assert killed["lock"]["holder"]["pid"] == story["first_pid"]
    assert killed["running"] == story["running"]
    assert killed["holder_active"] is False and killed["record"] is True


def test_the_stage_in_flight_stopped_itself_when_its_controller_was_gone(story):
    reasons = story["killed"]["reasons"]
    assert reasons and all(reason.endswith(LEASE_REASON) for reason in reasons.values()), reasons


def test_restore_brings_the_holder_back(story):
    rc, out = story["restore"]
    assert rc == 0, out[-3000:]
    assert story["restored"]["holder_on_gpu0"]
    assert story["restored"]["running"] == [] and story["restored"]["record"] is False


def test_the_rerun_takes_over_the_dead_runs_lock_and_runs_only_what_was_missing(story):
    rc, out = story["rerun"]
    assert rc == 0, out[-3000:]
    done = len(story["done"])
    assert f"{len(STAGES)} stages planned, {done} finished earlier, {len(STAGES) - done} to run" in out
    assert f"its ansible-playbook (pid {story['first_pid']}) on this controller is gone" in out
    assert all(f"{stage}: skipped" not in out for stage in STAGES)
    assert story["after"]["status"] == dict.fromkeys(STAGES, "ok")


def test_no_result_file_was_lost_or_changed(story):
    """Finished stages' files are untouched; the killed stage's partial files moved to attempt-1/ unchanged."""
    before, after = story["killed"]["files"], story["after"]["files"]
    killed = [unit[len(f"specdec-{CAMPAIGN}-"):-len(".service")] for unit in story["running"]]
    assert before, "the killed campaign left files"
    for path, digest in before.items():
        if "/" not in path:  # campaign.json, written once
            assert after.get(path) == digest, path
            continue
        stage, name = path.split("/", 1)
        moved = f"{stage}/attempt-1/{name}"
        if stage in killed:
            assert after.get(moved) == digest, path
        else:
            assert after.get(path) == digest, path


def test_the_host_is_as_found_after_the_rerun(story):
    after = story["after"]
    assert after["lock"] is None and after["record"] is False
    assert after["holder_on_gpu0"] and after["running"] == []
