"""The simulated trainer (tests/sim/trainer/sim_trainer.py), run as a process, read back by the monitor's parser."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ansible_collections.specdec.bench.plugins.module_utils._train_log import read_status
from simtools import wait_until

REPO = Path(__file__).resolve().parents[3]
TRAINER = REPO / "tests" / "sim" / "trainer" / "sim_trainer.py"
DEADLINE_S = 20.0


def run(tmp_path, *args, env=None):
    environ = {key: value for key, value in os.environ.items() if not key.startswith(("SIM_TRAINER_", "SPECDEC_"))}
    environ.update({"SPECDEC_RUN_DIR": str(tmp_path)}, **(env or {}))
    return subprocess.run([sys.executable, str(TRAINER), "--load-seconds", "0", "--pace", "0", *args],
                          capture_output=True, env=environ, timeout=DEADLINE_S, check=False)


def test_a_full_run_logs_progress_and_saves_a_checkpoint(tmp_path):
    result = run(tmp_path, "--steps", "12", "--log-every", "4", "--epochs", "2")
    assert result.returncode == 0
    status = read_status(result.stderr + result.stdout)
    assert status["progress"]["step"] == 24 and status["progress"]["total"] == 24
    assert 2.0 < status["loss"] < 4.0 and status["epoch"] == 1
    checkpoint = json.loads((tmp_path / "checkpoints" / "final" / "config.json").read_text())
    assert checkpoint["steps"] == 24
    assert b"Training complete: 24 steps" in result.stdout


def test_both_streams_through_one_pipe_parse_line_by_line(tmp_path):
    # as run.sh sends them: stderr into stdout, into one file; the JSON lines never share a line with the bar
    result = subprocess.run(f"{sys.executable} {TRAINER} --steps 10 --pace 0 --load-seconds 0 2>&1",
                            shell=True, capture_output=True, timeout=DEADLINE_S, check=False,
                            env=dict(os.environ, SPECDEC_RUN_DIR=str(tmp_path)))
    lines = read_status(result.stdout, tail=100)["lines"]
    json_lines = [line for line in lines if line.startswith("{")]
    assert len(json_lines) == 2 and all(json.loads(line)["total_steps"] == 10 for line in json_lines)
    assert all(line.endswith("]") for line in lines if "it/s" in line)


def test_loss_falls(tmp_path):
    result = run(tmp_path, "--steps", "100", "--log-every", "10", "--format", "json")
    losses = [json.loads(line)["loss"] for line in result.stdout.decode().splitlines() if line.startswith("{")]
    assert len(losses) == 10 and losses[0] > losses[-1] + 3


def test_smoke_mode_is_short(tmp_path):
    result = run(tmp_path, "--steps", "1000", "--smoke-steps", "7", env={"SPECDEC_RUN_MODE": "smoke"})
    assert result.returncode == 0 and read_status(result.stderr + result.stdout)["progress"]["total"] == 7


def test_fail_at_a_step(tmp_path):
    result = run(tmp_path, "--steps", "50", "--fail-at", "9")
    assert result.returncode == 1
    status = read_status(result.stderr)
    assert status["progress"]["step"] == 8 and "CUDA out of memory at step 9" in status["last_error"]
    assert not (tmp_path / "checkpoints").exists()


def test_fail_when_told(tmp_path):
    fail_file = tmp_path / "fail"
    trainer = subprocess.Popen([sys.executable, str(TRAINER), "--steps", "100000", "--pace", "0.01", "--load-seconds",
                                "0", "--fail-file", str(fail_file)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(0.2)
    assert trainer.poll() is None
    fail_file.touch()
    _out, err = trainer.communicate(timeout=DEADLINE_S)
    assert trainer.returncode == 1 and b"torch.OutOfMemoryError" in err


def test_sigterm_stops_it(tmp_path):
    # its stdout in a file, read again and again (a pipe's peek() shows only what one read brought: the first line)
    log = tmp_path / "stdout.txt"
    with open(log, "wb") as handle:
        trainer = subprocess.Popen([sys.executable, str(TRAINER), "--steps", "100000", "--pace", "0.01",
                                    "--load-seconds", "0", "--run-dir", str(tmp_path)], stdout=handle,
                                   stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: b"Starting training" in log.read_bytes(), "the trainer to start training", DEADLINE_S)
        trainer.send_signal(signal.SIGTERM)
        assert trainer.wait(timeout=DEADLINE_S) == 143
    finally:
        if trainer.poll() is None:
            trainer.kill()
            trainer.wait()
    assert b"Received SIGTERM" in log.read_bytes()


def test_lines_to_say_verbatim_at_start_and_again(tmp_path):
    hostile = ["<script>alert(1)</script>", "\u00e9 \"quoted\""]
    result = run(tmp_path, "--steps", "10", "--say-every", "5", env={"SIM_TRAINER_SAY": json.dumps(hostile)})
    lines = result.stdout.decode().splitlines()
    assert lines[:2] == hostile and lines.count(hostile[0]) == 3


def test_bad_say_is_refused(tmp_path):
    result = run(tmp_path, env={"SIM_TRAINER_SAY": '{"not": "a list"}'})
    assert result.returncode == 2 and b"JSON list" in result.stderr


# --------------------------------------------------------------------------------------------
# draft checkpoints every N steps (--checkpoint-every)
# --------------------------------------------------------------------------------------------

def read_safetensors(path):
    """{name: (dtype, shape, data)} of a safetensors file, checked as a loader reads it: the 8-byte little-endian
    header length, a JSON header (padded with spaces at most), tensors whose offsets cover the data exactly."""
    raw = path.read_bytes()
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + size].decode("ascii"))
    data = raw[8 + size:]
    header.pop("__metadata__", None)
    tensors, end = {}, 0
    for name, info in header.items():
        start, stop = info["data_offsets"]
        assert start == end and stop <= len(data), info
        count = 1
        for dim in info["shape"]:
            count *= dim
        assert info["dtype"] == "BF16" and stop - start == 2 * count, info
        tensors[name] = (info["dtype"], info["shape"], data[start:stop])
        end = stop
    assert end == len(data)
    return tensors


def checkpoint_config(run_dir, step):
    return json.loads((run_dir / "checkpoints" / ("checkpoint-%d" % step) / "config.json").read_text())


def test_checkpoints_every_n_steps_appear_whole_with_a_rising_quality(tmp_path):
    """A lister polling the folder while the trainer runs only ever sees complete checkpoints."""
    environ = {key: value for key, value in os.environ.items() if not key.startswith(("SIM_TRAINER_", "SPECDEC_"))}
    environ["SPECDEC_RUN_DIR"] = str(tmp_path)
    trainer = subprocess.Popen([sys.executable, str(TRAINER), "--steps", "25", "--pace", "0.01", "--load-seconds", "0",
                                "--checkpoint-every", "10"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environ)
    folder = tmp_path / "checkpoints"
    seen_running = set()
    deadline = time.monotonic() + DEADLINE_S
    while trainer.poll() is None:
        assert time.monotonic() < deadline, "the trainer did not finish"
        names = [name for name in (os.listdir(folder) if folder.is_dir() else []) if not name.startswith(".")]
        for name in names:
            if name == "final":
                continue
            files = {entry.name: entry.stat().st_size for entry in (folder / name).iterdir()}
            assert set(files) == {"config.json", "model.safetensors"}, (name, files)
            assert files["model.safetensors"] == 262144 and files["config.json"] > 0, (name, files)
            seen_running.add(name)
        time.sleep(0.001)
    out, err = trainer.communicate(timeout=DEADLINE_S)
    assert trainer.returncode == 0, err
    assert "checkpoint-10" in seen_running  # the watch above saw one while the trainer still ran
    assert sorted(os.listdir(folder)) == ["checkpoint-10", "checkpoint-20", "final"]  # no .tmp left, none at 25
    first, second = checkpoint_config(tmp_path, 10), checkpoint_config(tmp_path, 20)
    assert first["architectures"] == ["DFlashDraftModel"] and first["block_size"] == 16
    assert first["specdec_sim"]["step"] == 10 and second["specdec_sim"]["step"] == 20
    assert 0.1 <= first["specdec_sim"]["quality"] < second["specdec_sim"]["quality"] <= 1.0
    for step in (10, 20):
        tensors = read_safetensors(folder / ("checkpoint-%d" % step) / "model.safetensors")
        assert list(tensors) == ["dflash.weight"]
        assert b"Saved checkpoint to %s" % str(folder / ("checkpoint-%d" % step)).encode() in out
    final = json.loads((folder / "final" / "config.json").read_text())
    assert final["steps"] == 25 and final["specdec_sim"]["step"] == 25
    assert final["specdec_sim"]["quality"] > second["specdec_sim"]["quality"]
    # the monitor's parser still reads the run: the bar never shares a line with the checkpoint lines
    status = read_status(err + out)
    assert status["progress"]["step"] == 25
    assert all(line.endswith("]") for line in read_status(err + out, tail=100)["lines"] if "it/s" in line)


def test_checkpoint_weights_are_reproducible_per_seed_and_step(tmp_path):
    runs = {}
    for name, seed in (("a", "0"), ("b", "0"), ("c", "1")):
        run_dir = tmp_path / name
        run_dir.mkdir()
        assert run(run_dir, "--steps", "4", "--checkpoint-every", "2", "--seed", seed).returncode == 0
        runs[name] = {step: (run_dir / "checkpoints" / ("checkpoint-%d" % step) / "model.safetensors").read_bytes()
                      for step in (2, 4)}
    assert runs["a"] == runs["b"]
    assert runs["a"][2] != runs["a"][4] and runs["a"][2] != runs["c"][2]


def test_checkpoint_options_come_from_the_environment_too(tmp_path):
    result = run(tmp_path, "--steps", "9", env={"SIM_TRAINER_CHECKPOINT_EVERY": "3", "SIM_TRAINER_CHECKPOINT_BYTES": "1001",
                                                "SIM_TRAINER_QUALITY_FLOOR": "0.2", "SIM_TRAINER_QUALITY_MAX": "0.5"})
    assert result.returncode == 0, result.stderr
    names = sorted(os.listdir(tmp_path / "checkpoints"))
    assert names == ["checkpoint-3", "checkpoint-6", "checkpoint-9", "final"]
    weights = tmp_path / "checkpoints" / "checkpoint-9" / "model.safetensors"
    assert weights.stat().st_size == 1001 and list(read_safetensors(weights)) == ["dflash.weight"]
    qualities = [checkpoint_config(tmp_path, step)["specdec_sim"]["quality"] for step in (3, 6, 9)]
    assert 0.2 < qualities[0] < qualities[1] < qualities[2] < 0.5


def test_without_checkpoint_every_only_the_final_checkpoint_is_saved(tmp_path):
    assert run(tmp_path, "--steps", "30").returncode == 0
    assert os.listdir(tmp_path / "checkpoints") == ["final"]


def test_quality_rises_over_the_first_checkpoints_then_flattens(tmp_path):
    """With the defaults and a checkpoint every 100 steps: clear gains over the first few, then little."""
    result = run(tmp_path, "--steps", "1000", "--checkpoint-every", "100", "--format", "json")
    assert result.returncode == 0, result.stderr
    qualities = [checkpoint_config(tmp_path, step)["specdec_sim"]["quality"] for step in range(100, 1001, 100)]
    gains = [b - a for a, b in zip(qualities, qualities[1:])]
    assert all(gain > 0 for gain in gains), qualities
    assert all(a > b for a, b in zip(gains, gains[1:])), qualities  # each gain smaller than the one before
    assert qualities[0] < 0.6 and gains[0] > 0.15 and gains[3] > 0.03
    assert qualities[-1] > 0.98 and gains[-1] < 0.01


@pytest.mark.parametrize("args,message", [
    (["--checkpoint-every", "-1"], b"--checkpoint-every must be 0"),
    (["--checkpoint-bytes", "64"], b"--checkpoint-bytes must be at least 128, got 64"),
    (["--quality-floor", "0.8", "--quality-max", "0.5"], b"0 <= floor <= max <= 1"),
    (["--quality-max", "1.5"], b"0 <= floor <= max <= 1"),
    (["--quality-scale", "0"], b"--quality-scale must be a positive number of steps"),
])
def test_bad_checkpoint_options_are_refused(tmp_path, args, message):
    result = run(tmp_path, *args)
    assert result.returncode == 2 and message in result.stderr, result.stderr


def test_a_resumed_run_writes_only_the_checkpoints_after_its_start(tmp_path):
    """--start-step: as a trainer resumed from its checkpoint, the run goes on from there, with the same weights."""
    fresh, resumed = tmp_path / "fresh", tmp_path / "resumed"
    fresh.mkdir()
    resumed.mkdir()
    assert run(fresh, "--steps", "6", "--checkpoint-every", "2").returncode == 0
    result = run(resumed, "--steps", "6", "--checkpoint-every", "2", "--start-step", "2")
    assert result.returncode == 0
    assert sorted(path.name for path in (resumed / "checkpoints").iterdir()) == ["checkpoint-4", "checkpoint-6", "final"]
    for name in ("checkpoint-4", "checkpoint-6"):
        assert (resumed / "checkpoints" / name / "model.safetensors").read_bytes() == \
            (fresh / "checkpoints" / name / "model.safetensors").read_bytes()
    refused = run(tmp_path, "--steps", "6", "--start-step", "6")
    assert refused.returncode == 2 and b"--start-step must be from 0" in refused.stderr
