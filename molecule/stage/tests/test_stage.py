"""The stages of molecule/stage on the simulated CT200: what bench_stage leaves in the results and on the host.

converge.yml runs two stages that must end ok; side_effect.yml one whose server fails at start, which must end failed
with its evidence while the play goes on.
"""
import json

import pytest
import testinfra

RESULTS = "/root/bench_results"
GOOD = {"stage-test": ["tp1-autoregressive", "tp1-dflash-n16"]}
FAILED = ("stage-fault", "tp1-autoregressive")
CONCURRENCY = [1, 4]
NUM_PROMPTS = 8
HOLDER = "ddtree-qwen.service"
# results_dir_layout, as the results_dir role names the files
KEPT = ["server_info.json", "gpus.json", "unit.service", "journal.txt"]


@pytest.fixture(name="host", scope="module")
def podman_host(host):
    """The same container through `podman exec` directly, much faster than molecule's Ansible backend."""
    return testinfra.get_host(f"podman://{host.backend.get_hostname()}")


def stage_dir(campaign, stage):
    return f"{RESULTS}/{campaign}/{stage}"


def read_json(host, path):
    return json.loads(host.file(path).content_string)


def unit_name(campaign, stage):
    return f"specdec-{campaign}-{stage}.service"


GOOD_STAGES = [(campaign, stage) for campaign, stages in GOOD.items() for stage in stages]


@pytest.mark.parametrize(("campaign", "stage"), GOOD_STAGES)
def test_good_stage_is_ok_with_its_headline(host, campaign, stage):
    status = read_json(host, f"{stage_dir(campaign, stage)}/status.json")
    assert status["stage"] == stage and status["status"] == "ok" and status["reason"] is None
    assert status["started"] <= status["finished"]
    assert [row["concurrency"] for row in status["headline"]] == CONCURRENCY
    assert all(row["output_throughput"] > 0 for row in status["headline"])


@pytest.mark.parametrize(("campaign", "stage"), GOOD_STAGES)
@pytest.mark.parametrize("concurrency", CONCURRENCY)
def test_every_concurrency_completed(host, campaign, stage, concurrency):
    result = read_json(host, f"{stage_dir(campaign, stage)}/result-c{concurrency}.json")
    assert result["complete"] is True
    assert result["completed"] == NUM_PROMPTS and result["failed"] == 0
    assert result["concurrency"] == concurrency and result["stage"] == stage


def test_dflash_accepts_more_than_one_token_per_step(host):
    status = read_json(host, f"{stage_dir('stage-test', 'tp1-dflash-n16')}/status.json")
    assert all(row["accept_length"] > 1 for row in status["headline"])
    autoregressive = read_json(host, f"{stage_dir('stage-test', 'tp1-autoregressive')}/status.json")
    assert all(row["accept_length"] is None for row in autoregressive["headline"])


@pytest.mark.parametrize(("campaign", "stage"), GOOD_STAGES)
def test_snapshots_are_kept(host, campaign, stage):
    folder = stage_dir(campaign, stage)
    for name in KEPT:
        assert host.file(f"{folder}/{name}").size > 0, name
    assert "tp_size" in read_json(host, f"{folder}/server_info.json")
    gpus = read_json(host, f"{folder}/gpus.json")["nvidia_gpus"]
    assert len(gpus) == 8
    unit = host.file(f"{folder}/unit.service").content_string
    assert unit == host.file(f"/etc/systemd/system/{unit_name(campaign, stage)}").content_string
    assert unit_name(campaign, stage) in host.file(f"{folder}/journal.txt").content_string


@pytest.mark.parametrize(("campaign", "stage"), GOOD_STAGES + [FAILED])
def test_units_are_stopped_afterwards(host, campaign, stage):
    assert host.run(f"systemctl is-active -- {unit_name(campaign, stage)}").stdout.strip() in ("inactive", "failed")


def test_the_holder_is_untouched(host):
    assert host.service(HOLDER).is_running


def test_failed_stage_has_its_reason_and_evidence(host):
    folder = stage_dir(*FAILED)
    status = read_json(host, f"{folder}/status.json")
    assert status["status"] == "failed"
    assert "failed" in status["reason"] and status["headline"] == []
    assert status["evidence"]["unit_state"]["state"] == "failed"
    assert any("CUDA out of memory" in line for line in status["evidence"]["journal"])
    assert "CUDA out of memory" in host.file(f"{folder}/journal.txt").content_string
    assert host.file(f"{folder}/unit.service").exists
    assert not host.file(f"{folder}/result-c1.json").exists
