"""The simulated trainer (tests/sim/trainer/sim_trainer.py), run as a process, read back by the monitor's parser."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ansible_collections.specdec.bench.plugins.module_utils._train_log import read_status

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
    trainer = subprocess.Popen([sys.executable, str(TRAINER), "--steps", "100000", "--pace", "0.01", "--load-seconds",
                                "0", "--run-dir", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + DEADLINE_S
    while b"Starting training" not in trainer.stdout.peek() and time.monotonic() < deadline:
        time.sleep(0.02)
    trainer.send_signal(signal.SIGTERM)
    out, _err = trainer.communicate(timeout=DEADLINE_S)
    assert trainer.returncode == 143 and b"Received SIGTERM" in out


def test_lines_to_say_verbatim_at_start_and_again(tmp_path):
    hostile = ["<script>alert(1)</script>", "\u00e9 \"quoted\""]
    result = run(tmp_path, "--steps", "10", "--say-every", "5", env={"SIM_TRAINER_SAY": json.dumps(hostile)})
    lines = result.stdout.decode().splitlines()
    assert lines[:2] == hostile and lines.count(hostile[0]) == 3


def test_bad_say_is_refused(tmp_path):
    result = run(tmp_path, env={"SIM_TRAINER_SAY": '{"not": "a list"}'})
    assert result.returncode == 2 and b"JSON list" in result.stderr
