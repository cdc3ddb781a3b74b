"""The stages of molecule/stage on the simulated CT200: what bench_stage leaves in the results and on the host.

converge.yml runs two stages that must end ok, each with two demo prompt sets and random prompts at two temperatures
and two concurrencies; side_effect.yml one whose server fails at start, which must end failed with its evidence while
the play goes on, and one measured with repeats 2 then rerun with repeats 3, which must measure repeat 3 only.
"""
import csv
import hashlib
import io
import itertools
import json
import re

import pytest
import testinfra

RESULTS = "/root/bench_results"
GOOD = {"stage-test": ["tp1-autoregressive", "tp1-dflash-n16"]}
FAILED = ("stage-fault", "tp1-autoregressive")
CONCURRENCY = [1, 4]
NUM_PROMPTS = 8
# converge.yml's prompt sets: name -> (records, user turns sent, max new tokens); random's are its workload's
DATASETS = {"demo-gsm8k": (4, 4, 32), "demo-mt-bench": (2, 4, 24), "random": (NUM_PROMPTS, NUM_PROMPTS, 32)}
TEMPERATURES = [0, 1]
RUNS = list(itertools.product(DATASETS, TEMPERATURES, CONCURRENCY))
PROMPTS_DIR = "/var/lib/specdec/datasets"
HOLDER = "ddtree-qwen.service"
# results_dir_layout, as the results_dir role names the files
KEPT = ["server_info.json", "gpus.json", "unit.service", "journal.txt"]


@pytest.fixture(name="host", scope="module")
def podman_host(host):
    """The same container through `podman exec` directly, much faster than molecule's Ansible backend."""
    return testinfra.get_host(f"podman://{host.backend.get_hostname()}")


def stage_dir(campaign, stage):
    return f"{RESULTS}/{campaign}/{stage}"


def result_file(dataset, temperature, concurrency, repeat=1, kind="result", suffix="json"):
    """The results layout's file of one repeat (module_utils/_common.py:
    result-{dataset}-t{temperature}-c{concurrency}-r{repeat}.json, raw-...jsonl)."""
    return f"{kind}-{dataset}-t{temperature:g}-c{concurrency}-r{repeat}.{suffix}"


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
    assert [(row["dataset"], row["temperature"], row["concurrency"]) for row in status["headline"]] == RUNS
    assert all(row["output_throughput"] > 0 for row in status["headline"])
    assert all(row["output_tokens_per_j"] > 0 for row in status["headline"])


@pytest.mark.parametrize(("campaign", "stage"), GOOD_STAGES)
def test_the_status_lists_the_prompt_sets_without_controller_paths(host, campaign, stage):
    datasets = read_json(host, f"{stage_dir(campaign, stage)}/status.json")["datasets"]
    assert [entry["name"] for entry in datasets] == list(DATASETS)
    assert [entry["kind"] for entry in datasets] == ["file", "file", "random"]
    for entry in datasets:
        assert "prompts_path" not in entry and "notes" not in entry
        if entry["kind"] == "file":
            records, _turns, max_new_tokens = DATASETS[entry["name"]]
            assert (entry["count"], entry["max_new_tokens"]) == (records, max_new_tokens)
            assert len(entry["normalized_sha256"]) == len(entry["template_sha256"]) == 64


def test_the_prompts_files_are_on_the_host_named_by_their_sha256(host):
    datasets = read_json(host, f"{stage_dir('stage-test', 'tp1-dflash-n16')}/status.json")["datasets"]
    for entry in datasets[:2]:
        prompts = host.file(f"{PROMPTS_DIR}/{entry['prompts_sha256']}.jsonl")
        assert prompts.mode == 0o644
        data = prompts.content
        assert hashlib.sha256(data).hexdigest() == entry["prompts_sha256"]
        records = [json.loads(line) for line in data.decode().splitlines()]
        assert len(records) == entry["count"]
        assert all(len(r["segments"]) == len(r["turns"]) and r["segments"][0].startswith("<|im_start|>user\n")
                   for r in records)


@pytest.mark.parametrize(("campaign", "stage"), GOOD_STAGES)
@pytest.mark.parametrize(("dataset", "temperature", "concurrency"), RUNS)
def test_every_run_completed(host, campaign, stage, dataset, temperature, concurrency):
    result = read_json(host, f"{stage_dir(campaign, stage)}/{result_file(dataset, temperature, concurrency)}")
    records, turns, max_new_tokens = DATASETS[dataset]
    assert result["complete"] is True and result["failed"] == 0
    assert result["concurrency"] == concurrency and result["stage"] == stage
    assert result["dataset"] == dataset and result["temperature"] == temperature
    assert result["num_prompts"] == records and result["requests"] == turns
    # random prompts run to output_len; a prompt set stops at EOS (the workload's stop_at_eos), bounded by its limit
    assert result["ignore_eos"] is (dataset == "random")
    assert result["max_new_tokens"] in (max_new_tokens, None) and 0 < result["mean_output_len"] <= max_new_tokens


def stage_gpus(host, campaign, stage):
    """The stage's GPUs by UUID, as its unit pins them (CUDA_VISIBLE_DEVICES of the kept unit file)."""
    unit = host.file(f"{stage_dir(campaign, stage)}/unit.service").content_string
    return re.search(r"CUDA_VISIBLE_DEVICES=([^\s\"]+)", unit).group(1).split(",")


@pytest.mark.parametrize(("campaign", "stage"), GOOD_STAGES)
@pytest.mark.parametrize(("dataset", "temperature", "concurrency"), RUNS)
def test_every_run_has_its_energy_by_the_counter_and_its_telemetry(host, campaign, stage, dataset, temperature,
                                                                   concurrency):
    folder = stage_dir(campaign, stage)
    result = read_json(host, f"{folder}/{result_file(dataset, temperature, concurrency)}")
    # the simulated host's Python has the fake pynvml, whose GPUs have NVML's energy counter
    assert (result["energy_method"], result["energy_backend"], result["power_source"]) == ("counter", "pynvml", "instant")
    assert result["energy_note"] is None and result["gpu_throttled"] == []
    assert result["energy_j"] > 0 and result["idle_power_w"] > 0 and result["energy_samples"] >= 1
    assert abs(result["output_tokens_per_j"] * result["energy_j"] - result["total_output_tokens"]) < 1e-6 * result[
        "total_output_tokens"]
    assert result["telemetry_file"] == result_file(dataset, temperature, concurrency, kind="telemetry", suffix="csv")
    series = list(csv.reader(io.StringIO(host.file(f"{folder}/{result['telemetry_file']}").content_string)))
    assert series[0] == ["t_s", "uuid", "power_w", "sm_util", "mem_used_mib", "sm_clock", "mem_clock", "temp_c", "reasons"]
    gpus = stage_gpus(host, campaign, stage)
    assert len(gpus) == 1 and gpus[0].startswith("GPU-")
    # rows for exactly the stage's GPUs (GPU1), none for the holder's or the idle ones
    assert len(series) > 1 and {row[1] for row in series[1:]} == set(gpus)
    assert all(float(row[2]) > 0 for row in series[1:])


def test_dflash_accepts_more_than_one_token_per_step(host):
    status = read_json(host, f"{stage_dir('stage-test', 'tp1-dflash-n16')}/status.json")
    assert all(row["accept_length"] > 1 for row in status["headline"])
    # per-request acceptance follows the content and the temperature (the emulator, as published drafters do)
    tau = {(row["dataset"], row["temperature"], row["concurrency"]): row["accept_length"] for row in status["headline"]}
    assert all(tau[("demo-gsm8k", 0, c)] > tau[("demo-gsm8k", 1, c)] for c in CONCURRENCY)
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
    assert not host.file(f"{folder}/{result_file('random', 0, 1)}").exists


REPEATS = ("stage-repeats", "tp1-dflash-n16")
FLUSHED = "Cache flushed successfully!"


def repeat_files(repeat):
    return [result_file("random", 0, 1, repeat), result_file("random", 0, 1, repeat, "raw", "jsonl")]


def test_each_repeat_has_its_telemetry_and_a_reused_one_keeps_it(host):
    folder = stage_dir(*REPEATS)
    for repeat in (1, 2, 3):
        row = read_json(host, f"{folder}/{result_file('random', 0, 1, repeat)}")
        assert row["energy_method"] == "counter" and row["energy_j"] > 0
        assert host.file(f"{folder}/{row['telemetry_file']}").size > 0
    # the first run's telemetry stays in place beside its reused results, and its copy is in attempt-1/
    for repeat in (1, 2):
        name = result_file("random", 0, 1, repeat, "telemetry", "csv")
        assert host.file(f"{folder}/attempt-1/{name}").sha256sum == host.file(f"{folder}/{name}").sha256sum


def raw_records(host, path):
    return [json.loads(line) for line in host.file(path).content_string.splitlines()]


def test_a_rerun_with_more_repeats_measures_only_the_missing_one(host):
    folder = stage_dir(*REPEATS)
    status = read_json(host, f"{folder}/status.json")
    assert (status["status"], status["repeats"]) == ("ok", 3)
    assert [(row["concurrency"], row["repeats"]) for row in status["headline"]] == [(1, 3)]
    rows = [read_json(host, f"{folder}/{result_file('random', 0, 1, repeat)}") for repeat in (1, 2, 3)]
    assert [(row["repeat"], row["repeats"], row["complete"]) for row in rows] == [(1, 2, True), (2, 2, True), (3, 3, True)]
    # the headline is the mean of the three repeats
    mean = sum(row["output_throughput"] for row in rows) / 3
    assert abs(status["headline"][0]["output_throughput"] - mean) < 1e-6 * mean
    # repeats 1 and 2 were reused, untouched: the same bytes and times as after the first run
    before = read_json(host, "/root/stage-repeats-before.json")
    assert sorted(before) == sorted(f"{folder}/{name}" for repeat in (1, 2) for name in repeat_files(repeat))
    for path, noted in before.items():
        assert host.file(path).sha256sum == noted["checksum"], path
        mtime = float(host.run(f"python3 -c 'import os, sys; print(repr(os.stat(sys.argv[1]).st_mtime))' {path}").stdout)
        assert mtime == noted["mtime"], path
    # the first run's status moved to attempt-1/ with copies of its repeats, so the attempt stays a whole record
    assert read_json(host, f"{folder}/attempt-1/status.json")["repeats"] == 2
    for name in repeat_files(1) + repeat_files(2):
        assert host.file(f"{folder}/attempt-1/{name}").sha256sum == host.file(f"{folder}/{name}").sha256sum
    assert not host.file(f"{folder}/attempt-1/{result_file('random', 0, 1, 3)}").exists


def test_each_measuring_run_warms_up_once_and_flushes_before_each_repeat(host):
    folder = stage_dir(*REPEATS)
    # one warm-up pass per run of the stage, leading its first measured repeat: r1 (first run) and r3 (the fill-in)
    warmups = [sum(1 for record in raw_records(host, f"{folder}/{repeat_files(repeat)[1]}") if record["warmup"])
               for repeat in (1, 2, 3)]
    assert warmups == [1, 0, 1]
    for repeat in (1, 2, 3):
        records = raw_records(host, f"{folder}/{repeat_files(repeat)[1]}")
        assert sum(1 for record in records if not record["warmup"] and record["success"]) == NUM_PROMPTS
        # flushed after the warm-up, before the repeat: /server_info's acceptance counts this repeat's requests only
        row = read_json(host, f"{folder}/{result_file('random', 0, 1, repeat)}")
        assert row["accept_length_flag"] is False and row["accept_length_disagreement"] < 1e-6
    # the server flushed its cache once per repeat measured: two in the first run, one in the fill-in
    journal = host.run(f"journalctl --no-pager -o cat -u {unit_name(*REPEATS)}").stdout
    assert journal.count(FLUSHED) == 3
