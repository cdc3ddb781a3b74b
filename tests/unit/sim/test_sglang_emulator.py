"""The SGLang emulator (tests/sim/sglang_emulator/sglang), run as a real server on 127.0.0.1.

Its performance model is checked as pure functions; the server is started as
`python3 -m sglang.launch_server ...` in a subprocess, with a private claims directory and GPU
layout, and driven over HTTP the way SGLang's own benchmark client drives it.
"""

import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import replace
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
EMULATOR = REPO / "tests" / "sim" / "sglang_emulator"
sys.path.insert(0, str(EMULATOR))

from sglang import _sim_engine as sim_engine  # noqa: E402
from sglang import _sim_gpu as sim_gpu  # noqa: E402
from sglang import _sim_model as sim_model  # noqa: E402
from sglang import _sim_server as sim_server  # noqa: E402
from sglang.srt import server_args as sim_server_args  # noqa: E402

from ansible_collections.specdec.bench.plugins.plugin_utils import sglang_build  # noqa: E402
from simtools import load_module, wait_until  # noqa: E402  pylint: disable=wrong-import-position,import-error
from testhelpers import free_port, stop_process  # noqa: E402  pylint: disable=wrong-import-position,import-error

DEADLINE_S = 10.0
# The emulator's parser is made from these: the option lists of every build profile, as the sim image has them.
OPTIONS_DIR = Path(tempfile.mkdtemp(prefix="specdec-sim-options-"))
sglang_build.write_option_lists(str(OPTIONS_DIR))
# and the release's /metrics list beside them, as build.sh installs it
METRICS_JSON = REPO / "plugins" / "plugin_utils" / "sglang_builds" / "sglang-0.5.23.metrics.json"
shutil.copy(str(METRICS_JSON), str(OPTIONS_DIR / METRICS_JSON.name))
sim_server_args.OPTIONS_DIR = str(OPTIONS_DIR)  # the parser made in this process reads them too
# The simulated CT200's build: the release's options plus DDTree's (tests below pick others)
TEST_BUILD = "sglang-ddtree-pr29907"
GPU_TOTAL_MIB = 97887
LAYOUT = {
    "driver_version": "580.95.05",
    "cuda_version": "13.0",
    "gpu_defaults": {"name": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "memory.total": GPU_TOTAL_MIB,
                     "memory.reserved": 530},
    "gpus": [{"uuid": "GPU-%08d-0000-0000-0000-000000000000" % i} for i in range(4)],
}


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------

class Emulator:
    """One emulator process: its port, its output files and its claims directory."""

    def __init__(self, tmp_path, args=(), env=None, load_seconds="0.3"):
        self.port = free_port()
        self.state_dir = tmp_path / "state"
        layout = tmp_path / "layout.json"
        layout.write_text(json.dumps(LAYOUT))
        self.stdout_path = tmp_path / "stdout.txt"
        self.stderr_path = tmp_path / "stderr.txt"
        full_env = {k: v for k, v in os.environ.items() if not k.startswith(("SIM_", "SGLANG_"))}
        full_env.update({
            "PYTHONPATH": str(EMULATOR),
            "SIM_GPU_STATE_DIR": str(self.state_dir),
            "SIM_GPU_LAYOUT": str(layout),
            "SIM_SGLANG_LOAD_SECONDS": load_seconds,
            "SIM_SGLANG_TIME_SCALE": "0.02",
            "SIM_SGLANG_CHECK_MEMORY": "0",
            "SIM_SGLANG_OPTIONS_DIR": str(OPTIONS_DIR),
            "SIM_SGLANG_BUILD": TEST_BUILD,
            "CUDA_VISIBLE_DEVICES": "0",
        })
        full_env.update(env or {})
        cmd = [sys.executable, "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3.6-27B",
               "--host", "127.0.0.1", "--port", str(self.port)] + list(args)
        self.proc = subprocess.Popen(cmd, env=full_env, stdout=open(self.stdout_path, "w"),
                                     stderr=open(self.stderr_path, "w"), cwd=str(tmp_path))
        self.first_status = None

    @property
    def base(self):
        return "http://127.0.0.1:%d" % self.port

    @property
    def claim(self):
        return self.state_dir / "claims" / ("%d.json" % self.proc.pid)

    def stdout(self):
        return self.stdout_path.read_text()

    def stderr(self):
        return self.stderr_path.read_text()

    def status(self, path):
        try:
            with urllib.request.urlopen(self.base + path, timeout=5) as resp:
                return resp.status
        except urllib.error.HTTPError as exc:
            return exc.code
        except OSError:
            return None

    def wait_bound(self):
        """Until the port answers at all; records the first /health status seen."""
        def bound():
            self.first_status = self.status("/health")
            return self.first_status is not None or self.proc.poll() is not None
        wait_until(bound, "the emulator's port")

    def wait_ready(self):
        self.wait_bound()
        wait_until(lambda: self.status("/health") == 200 or self.proc.poll() is not None, "/health == 200")
        assert self.proc.poll() is None, self.stdout()

    def wait_exit(self, timeout=DEADLINE_S):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError("the emulator did not exit:\n" + self.stdout())

    def stop(self):
        stop_process(self.proc, DEADLINE_S)

    def get_json(self, path):
        with urllib.request.urlopen(self.base + path, timeout=DEADLINE_S) as resp:
            return json.loads(resp.read())

    def post(self, path, body=None):
        data = json.dumps(body).encode() if body is not None else b""
        req = urllib.request.Request(self.base + path, data=data, method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=DEADLINE_S) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def stream(self, path, body):
        """[parsed event or "[DONE]"] of an SSE response, read through HTTP/1.1 chunked framing."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=DEADLINE_S)
        try:
            conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
            resp = conn.getresponse()
            assert resp.status == 200
            assert resp.getheader("Content-Type").startswith("text/event-stream")
            events = []
            for line in resp:
                line = line.strip()
                if not line:
                    continue
                assert line.startswith(b"data: "), line
                payload = line[len(b"data: "):]
                events.append("[DONE]" if payload == b"[DONE]" else json.loads(payload))
            return events
        finally:
            conn.close()


@pytest.fixture(scope="module")
def dflash(tmp_path_factory):
    """A DFLASH server, as the collection starts one for SGLang 0.5.23."""
    emu = Emulator(tmp_path_factory.mktemp("dflash"), [
        "--tp-size", "1", "--mem-fraction-static", "0.88",
        "--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", "z-lab/Qwen3.6-27B-DFlash",
        "--speculative-num-draft-tokens", "16", "--speculative-dflash-block-size", "16", "--enable-metrics",
    ], env={"SIM_SGLANG_BUILD": "sglang-0.5.23"}, load_seconds="1.0")
    try:
        emu.wait_ready()
        yield emu
    finally:
        emu.stop()


@pytest.fixture
def emulator(tmp_path):
    started = []

    def start(args=(), env=None, load_seconds="0.3"):
        emu = Emulator(tmp_path, args, env, load_seconds)
        started.append(emu)
        return emu

    yield start
    for emu in started:
        emu.stop()


# --------------------------------------------------------------------------------------------
# the performance model (pure)
# --------------------------------------------------------------------------------------------

RTX = sim_model.hardware_for("NVIDIA RTX PRO 6000 Blackwell Server Edition")
BUDGETS = (8, 16, 32, 64, 128, 256, 512)


def ddtree(budget, topk=4, tp=1):
    return sim_model.Workload(method="DDTREE", ddtree_budget=budget, ddtree_topk=topk, tp=tp)


def test_autoregressive_accepts_one_token_per_step():
    wl = sim_model.Workload()
    assert sim_model.expected_tau(wl) == 1.0
    sampler = sim_model.AcceptanceSampler(wl, 1)
    assert {sampler.next() for _step in range(100)} == {1}


def test_dflash_tau_and_step_cost_are_in_the_published_range():
    ar, dflash = sim_model.Workload(), sim_model.Workload(method="DFLASH", num_draft_tokens=16)
    assert 3.0 <= sim_model.expected_tau(dflash) <= 4.0
    ratio = sim_model.decode_step_ms(RTX, dflash, 1) / sim_model.decode_step_ms(RTX, ar, 1)
    assert 1.2 <= ratio <= 1.4


@pytest.mark.parametrize("topk", [2, 4, 8])
def test_ddtree_tau_rises_monotonically_with_budget(topk):
    taus = [sim_model.expected_tau(ddtree(b, topk)) for b in BUDGETS]
    assert all(a < b for a, b in zip(taus, taus[1:])), taus
    assert taus[-1] > sim_model.expected_tau(sim_model.Workload(method="DFLASH"))


@pytest.mark.parametrize("tp", [1, 4, 8])
def test_ddtree_speedup_peaks_at_an_intermediate_budget(tp):
    speedups = [sim_model.speedup(RTX, ddtree(b, tp=tp), batch=1) for b in BUDGETS]
    best = BUDGETS[speedups.index(max(speedups))]
    assert 32 <= best <= 128, dict(zip(BUDGETS, speedups))
    assert speedups[-1] < max(speedups) and speedups[0] < max(speedups)


def test_speculative_gains_shrink_as_concurrency_grows():
    for wl in (sim_model.Workload(method="DFLASH"), ddtree(64)):
        gains = [sim_model.speedup(RTX, wl, batch=b) for b in (1, 4, 16, 64)]
        assert all(a > b for a, b in zip(gains, gains[1:])), gains
        assert gains[0] > 2.0


def test_tensor_parallelism_is_faster_but_sublinear():
    one = sim_model.output_throughput(RTX, sim_model.Workload(tp=1), 1)
    four = sim_model.output_throughput(RTX, sim_model.Workload(tp=4), 1)
    eight = sim_model.output_throughput(RTX, sim_model.Workload(tp=8), 1)
    assert one < four < eight
    assert four < 4 * one and eight < 8 * one


def test_batch_steps_cost_more_as_the_batch_grows():
    wl = sim_model.Workload()
    steps = [sim_model.decode_step_ms(RTX, wl, b, context_tokens=b * 1000) for b in (1, 8, 64, 256)]
    assert all(a < b for a, b in zip(steps, steps[1:])), steps


def test_acceptance_is_deterministic_per_seed_and_averages_to_tau():
    wl = ddtree(64)
    first = sim_model.AcceptanceSampler(wl, 42)
    second = sim_model.AcceptanceSampler(wl, 42)
    draws = [first.next() for _step in range(5000)]
    assert draws == [second.next() for _step in range(5000)]
    assert all(1 <= d <= wl.num_draft_tokens for d in draws)
    assert abs(sum(draws) / len(draws) - sim_model.expected_tau(wl)) < 0.1
    assert sim_model.request_seed("a prompt", 64) == sim_model.request_seed("a prompt", 64)


@pytest.mark.parametrize("name,expected", [
    ("/models/Qwen3.6-27B", 55e9),
    ("meta-llama/Llama-3.1-8B-Instruct", 16.3e9),
    ("Qwen/Qwen3-30B-A3B-FP8", 30.6e9),
    ("something-without-size", 55e9),
])
def test_model_size_is_guessed_from_the_name(name, expected):
    assert sim_model.guess_model_bytes(name) == pytest.approx(expected, rel=0.02)


# --------------------------------------------------------------------------------------------
# the layout and CUDA_VISIBLE_DEVICES
# --------------------------------------------------------------------------------------------

def test_layout_entries_inherit_gpu_defaults():
    gpus = sim_gpu.parse_layout(LAYOUT)
    assert [g.index for g in gpus] == [0, 1, 2, 3]
    assert {g.memory_total_mib for g in gpus} == {GPU_TOTAL_MIB}
    assert gpus[0].memory_reserved_mib == 530
    assert gpus[1].name.startswith("NVIDIA RTX PRO 6000")


@pytest.mark.parametrize("spec,expected", [
    (None, [0, 1, 2, 3]),
    ("2", [2]),
    ("1,3", [1, 3]),
    ("GPU-00000003,0", [3, 0]),
    ("0,9,1", [0]),
    ("", []),
])
def test_visible_devices_are_resolved_as_cuda_does(spec, expected):
    gpus = sim_gpu.visible_gpus(sim_gpu.parse_layout(LAYOUT), spec)
    assert [g.index for g in gpus] == expected


# --------------------------------------------------------------------------------------------
# start-up, claim and shutdown
# --------------------------------------------------------------------------------------------

def test_health_answers_503_while_loading_then_200(dflash):
    assert dflash.first_status == 503
    assert dflash.status("/health") == 200
    assert dflash.status("/health_generate") == 200


def test_startup_logs_look_like_sglang(dflash):
    out = dflash.stdout()
    for line in ("server_args=ServerArgs(", "Load weight begin", "Uvicorn running on http://127.0.0.1:%d" % dflash.port,
                 "The server is fired up and ready to roll!"):
        assert line in out


def _refused(tmp_path, args, build):
    """Run the emulator with args until it exits; (exit status, stderr)."""
    emu = Emulator(tmp_path, args, env={"SIM_SGLANG_BUILD": build})
    try:
        status = emu.proc.wait(timeout=DEADLINE_S)
    finally:
        emu.stop()
    return status, emu.stderr()


def test_a_flag_sglang_0523_does_not_know_exits_2_as_sglang_does(tmp_path):
    # the flag the collection used to write, renamed in 0.5.23 (--mamba-radix-cache-strategy)
    status, err = _refused(tmp_path, ["--mamba-scheduler-strategy", "extra_buffer"], "sglang-0.5.23")
    assert status == 2
    assert err.startswith("usage: sglang serve ")
    assert err.rstrip().endswith("sglang serve: error: unrecognized arguments: --mamba-scheduler-strategy extra_buffer")


def test_ddtree_flags_are_refused_by_the_release_and_accepted_by_the_ddtree_build(tmp_path):
    status, err = _refused(tmp_path, ["--speculative-ddtree-budget", "64"], "sglang-0.5.23")
    assert status == 2 and "unrecognized arguments: --speculative-ddtree-budget 64" in err
    parser = sim_server_args.make_parser(TEST_BUILD)
    assert parser.parse_args(["--model-path", "/m", "--speculative-ddtree-budget", "64"]).speculative_ddtree_budget == 64


def test_a_bad_choice_is_refused_with_the_choices(tmp_path):
    status, err = _refused(tmp_path, ["--mamba-radix-cache-strategy", "always"], "sglang-0.5.23")
    assert status == 2
    assert "argument --mamba-radix-cache-strategy: invalid choice: 'always'" in err


@pytest.mark.parametrize("argv, dest, value", [
    (["--hos", "0.0.0.0"], "host", "0.0.0.0"),                        # an abbreviation, as argparse allows
    (["--tensor-parallel-size", "8"], "tp_size", 8),                  # an alias of --tp-size
    (["--speculative-draft-model", "/d"], "speculative_draft_model_path", "/d"),
])
def test_abbreviations_and_aliases_parse_as_in_sglang(argv, dest, value):
    parsed = sim_server_args.make_parser("sglang-0.5.23").parse_args(["--model-path", "/m"] + argv)
    assert getattr(parsed, dest) == value


def test_claim_is_written_after_load(dflash):
    claim = json.loads(dflash.claim.read_text())
    assert claim["memory_mib"] == round(0.88 * GPU_TOTAL_MIB)
    assert claim["gpus"] == [LAYOUT["gpus"][0]["uuid"]]


# --------------------------------------------------------------------------------------------
# the GPUs' load, published for the simulated power (tests/sim/nvidia_smi/sim_gpu_power.py)
# --------------------------------------------------------------------------------------------

def test_step_load_rises_with_batch_and_with_the_draft_models_work():
    ar, dflash = sim_model.Workload(), sim_model.Workload(method="DFLASH", num_draft_tokens=16)
    loads = [sim_engine.step_load(ar, batch) for batch in (1, 8, 64, 256)]
    assert loads == sorted(loads) and loads[0] > 0.25 and loads[-1] <= 1.0
    assert sim_engine.step_load(dflash, 1) > sim_engine.step_load(ar, 1) + 0.1
    assert [sim_engine.step_load(ddtree(b), 1) for b in (8, 64, 512)] == sorted(
        sim_engine.step_load(ddtree(b), 1) for b in (8, 64, 512))
    assert sim_engine.step_load(ar, 4, prefill=True) > sim_engine.step_load(ar, 4)
    assert sim_engine.step_load(ar, 0) == 0.0


def test_the_emulator_publishes_its_load_while_serving_and_idles_between_requests(emulator):
    smi_dir = REPO / "tests" / "sim" / "nvidia_smi"
    sys.path.insert(0, str(smi_dir))
    import sim_gpu_power  # noqa: E402
    emu = emulator(env={"PYTHONPATH": "%s:%s" % (EMULATOR, smi_dir)})
    emu.wait_ready()
    path = Path(sim_gpu_power.state_path(str(emu.state_dir), LAYOUT["gpus"][0]["uuid"]))

    def load_now():
        return sim_gpu_power.load_at(sim_gpu_power.read_state(str(path)), time.time())

    wait_until(lambda: path.exists() and load_now() == 0, "the warm-up's load to end")
    writes_before = path.stat().st_mtime_ns
    results = []
    body = {"text": "power", "sampling_params": {"max_new_tokens": 4000, "ignore_eos": True}}
    workers = [threading.Thread(target=lambda: results.append(emu.post("/generate", body)[0])) for _worker in range(4)]
    for worker in workers:
        worker.start()
    busy = wait_until(load_now, "a load while the requests run")
    state = sim_gpu_power.read_state(str(path))
    assert 0.3 <= busy <= 1.0 and list(state["owners"]) == ["%d.0" % emu.proc.pid]
    for worker in workers:
        worker.join(DEADLINE_S)
    assert results == [200] * 4
    wait_until(lambda: load_now() == 0, "the load to end when the requests have")
    state = sim_gpu_power.read_state(str(path))
    assert path.stat().st_mtime_ns > writes_before
    # cheap: a write per load change at most every 50 ms, not one per step
    recent = [s for s in state["segments"] if s[1] > time.time() - sim_gpu_power.KEEP_S]
    span = max(s[1] for s in recent) - min(s[0] for s in recent)
    assert len(recent) <= span / 0.05 + 4


def test_sigterm_removes_the_claim_and_exits_0(emulator):
    emu = emulator(["--model-path", "Qwen/Qwen3-8B", "--mem-fraction-static", "0.5"],
                   env={"CUDA_VISIBLE_DEVICES": "1,2"})
    emu.wait_ready()
    assert json.loads(emu.claim.read_text())["memory_mib"] == round(0.5 * GPU_TOTAL_MIB)
    emu.proc.send_signal(signal.SIGTERM)
    assert emu.wait_exit() == 0
    assert not emu.claim.exists()
    assert "Finished server process" in emu.stdout()


def test_explicit_memory_override_is_claimed(emulator):
    emu = emulator(env={"SIM_GPU_MEMORY_MIB": "56077"})
    emu.wait_ready()
    assert json.loads(emu.claim.read_text())["memory_mib"] == 56077


def test_too_few_visible_gpus_fail_at_start(emulator):
    emu = emulator(["--tp-size", "2"], env={"CUDA_VISIBLE_DEVICES": "3"})
    assert emu.wait_exit() == 1
    assert "invalid device ordinal" in emu.stdout()


def test_missing_model_folder_fails_at_start(emulator, tmp_path):
    emu = emulator(["--model-path", str(tmp_path / "no-such-model")])
    assert emu.wait_exit() == 1
    assert "is not a local folder" in emu.stdout()


def test_weights_size_comes_from_the_checkpoint_index(emulator, tmp_path):
    """A 90 GB checkpoint does not fit one 96 GiB GPU at 0.88: SGLang fails to size its KV pool."""
    model = tmp_path / "big-model"
    model.mkdir()
    (model / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 90e9}}))
    emu = emulator(["--model-path", str(model)])
    assert emu.wait_exit() == 1
    assert "Not enough memory" in emu.stdout()


def test_gpu_held_by_another_process_fails_with_cuda_oom(emulator, tmp_path):
    """nvidia-smi (a stub here) says GPU 0 has 41 GiB free: 55 GB of weights do not fit."""
    stub = tmp_path / "bin"
    stub.mkdir()
    smi = stub / "nvidia-smi"
    smi.write_text("#!/bin/sh\ncase \"$1\" in --query-gpu*) echo '%s, 41280';; esac\n" % LAYOUT["gpus"][0]["uuid"])
    smi.chmod(0o755)
    emu = emulator(env={"SIM_SGLANG_CHECK_MEMORY": "1", "PATH": "%s:%s" % (stub, os.environ["PATH"])})
    assert emu.wait_exit() == 1
    assert "CUDA out of memory" in emu.stdout()
    assert not emu.claim.exists()


# --------------------------------------------------------------------------------------------
# faults
# --------------------------------------------------------------------------------------------

def test_fault_fail_start_exits_1_while_loading(emulator):
    emu = emulator(env={"SIM_SGLANG_FAULT": "fail_start"})
    assert emu.wait_exit() == 1
    assert "Load weight begin" in emu.stdout()
    assert "CUDA out of memory" in emu.stdout()
    assert "ready to roll" not in emu.stdout()


def test_fault_never_ready_keeps_health_at_503(emulator):
    emu = emulator(env={"SIM_SGLANG_FAULT": "never_ready"}, load_seconds="0.1")
    emu.wait_bound()
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        assert emu.status("/health") == 503
        assert emu.status("/v1/models") == 503
        time.sleep(0.1)
    assert emu.proc.poll() is None
    emu.proc.send_signal(signal.SIGTERM)
    assert emu.wait_exit() == 0


def test_fault_crash_drops_the_stream_and_exits(emulator):
    emu = emulator(env={"SIM_SGLANG_FAULT": "crash", "SIM_SGLANG_CRASH_AFTER": "1"})
    emu.wait_ready()
    status, _body = emu.post("/generate", {"text": "first", "sampling_params": {"max_new_tokens": 8}})
    assert status == 200
    conn = http.client.HTTPConnection("127.0.0.1", emu.port, timeout=DEADLINE_S)
    conn.request("POST", "/generate", json.dumps({"text": "second", "stream": True,
                                                  "sampling_params": {"max_new_tokens": 64}}))
    resp = conn.getresponse()
    assert resp.status == 200
    lines = []
    with pytest.raises((http.client.IncompleteRead, ConnectionError)):
        for line in resp:
            lines.append(line)
        raise ConnectionError("stream ended without the chunked terminator")
    assert not any(b"[DONE]" in line for line in lines)
    assert any(line.startswith(b"data: ") for line in lines), "the crash came before any chunk"
    assert emu.wait_exit() == 1
    assert "illegal memory access" in emu.stdout()


# --------------------------------------------------------------------------------------------
# endpoints
# --------------------------------------------------------------------------------------------

def test_model_info(dflash):
    for path in ("/model_info", "/get_model_info"):
        info = dflash.get_json(path)
        assert info["model_path"] == "Qwen/Qwen3.6-27B"
        assert info["tokenizer_path"] == "Qwen/Qwen3.6-27B"
        assert info["is_generation"] is True


def test_server_info(dflash):
    for path in ("/server_info", "/get_server_info"):
        info = dflash.get_json(path)
        assert info["tp_size"] == 1
        assert info["speculative_algorithm"] == "DFLASH"
        assert info["speculative_num_draft_tokens"] == 16
        assert info["mem_fraction_static"] == 0.88
        assert info["version"] == "0.5.23+sim"
        assert isinstance(info["internal_states"], list) and len(info["internal_states"]) == 1


def test_v1_models(dflash):
    models = dflash.get_json("/v1/models")
    assert models["object"] == "list"
    assert models["data"][0]["id"] == "Qwen/Qwen3.6-27B"
    assert models["data"][0]["owned_by"] == "sglang"


def test_generate_returns_text_ids_and_meta_info(dflash):
    status, raw = dflash.post("/generate", {"input_ids": list(range(100, 164)),
                                            "sampling_params": {"max_new_tokens": 48, "temperature": 0,
                                                                "ignore_eos": True}})
    assert status == 200
    out = json.loads(raw)
    meta = out["meta_info"]
    assert meta["finish_reason"] == {"type": "length", "length": 48}
    assert meta["prompt_tokens"] == 64
    assert meta["completion_tokens"] == 48 == len(out["output_ids"])
    assert meta["cached_tokens"] == 0
    assert meta["e2e_latency"] > 0
    assert meta["spec_verify_ct"] >= 1
    assert meta["spec_accept_length"] == pytest.approx(48 / meta["spec_verify_ct"])
    assert out["text"].strip()


def test_generate_is_deterministic_per_prompt(dflash):
    body = {"text": "The same prompt twice", "sampling_params": {"max_new_tokens": 32}}
    first, second = (json.loads(dflash.post("/generate", body)[1]) for _attempt in range(2))
    assert first["text"] == second["text"]
    assert first["meta_info"]["spec_verify_ct"] == second["meta_info"]["spec_verify_ct"]


def test_generate_accepts_a_batch(dflash):
    status, raw = dflash.post("/generate", {"text": ["one", "two words"], "sampling_params": {"max_new_tokens": 4}})
    assert status == 200
    outs = json.loads(raw)
    assert [o["meta_info"]["completion_tokens"] for o in outs] == [4, 4]


def test_generate_stream_is_cumulative_multi_token_and_ends_with_done(dflash):
    events = dflash.stream("/generate", {"text": "Tell me a story", "stream": True,
                                         "sampling_params": {"max_new_tokens": 64}})
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    counts = [c["meta_info"]["completion_tokens"] for c in chunks]
    assert counts == sorted(counts) and counts[-1] == 64
    assert max(b - a for a, b in zip(counts, counts[1:])) > 1, "no chunk carried several accepted tokens"
    for before, after in zip(chunks, chunks[1:]):
        assert after["text"].startswith(before["text"])
        assert after["output_ids"][:len(before["output_ids"])] == before["output_ids"]
    assert all(c["meta_info"]["finish_reason"] is None for c in chunks[:-1])
    final = chunks[-1]["meta_info"]
    assert final["finish_reason"]["type"] == "length"
    assert final["spec_verify_ct"] == len(chunks) - 1  # the first chunk comes from the prefill
    assert final["spec_accept_length"] > 1


def raw_stream(emu, path, body):
    """The `data:` payloads of an SSE response, as the bytes the server wrote."""
    conn = http.client.HTTPConnection("127.0.0.1", emu.port, timeout=DEADLINE_S)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        assert resp.status == 200
        return [line.strip()[len(b"data: "):] for line in resp if line.strip()]
    finally:
        conn.close()


STAMP = re.compile(rb', "sim_sent_at": ([0-9.]+)}}$')


def test_stream_chunks_carry_their_send_time_on_the_hosts_monotonic_clock(dflash):
    body = {"input_ids": list(range(200, 232)), "stream": True, "sampling_params": {"max_new_tokens": 64}}
    before = time.perf_counter()
    payloads = raw_stream(dflash, "/generate", body)
    after = time.perf_counter()
    assert payloads[-1] == b"[DONE]"
    stamps = []
    for payload in payloads[:-1]:
        match = STAMP.search(payload)
        assert match, payload[-80:]
        stamps.append(float(match.group(1)))
        chunk = json.loads(payload)
        assert chunk["meta_info"]["sim_sent_at"] == stamps[-1]
        # only the stamp is added: the rest is byte for byte what json.dumps makes of the output
        del chunk["meta_info"]["sim_sent_at"]
        assert STAMP.sub(b"}}", payload) == json.dumps(chunk).encode()
    # this process's time.perf_counter() is the same clock (CLOCK_MONOTONIC): every send falls inside the request
    assert before < stamps[0] and stamps == sorted(stamps) and stamps[-1] < after
    # the last chunk is the whole output, as the same request unstreamed gives it (which carries no stamp)
    status, raw = dflash.post("/generate", dict(body, stream=False))
    whole, last = json.loads(raw), json.loads(payloads[-2])
    assert status == 200 and "sim_sent_at" not in whole["meta_info"]
    # the repeat finds the first one's prompt in the prefix cache (all but the one token SGLang always computes)
    assert whole["meta_info"]["cached_tokens"] == whole["meta_info"]["prompt_tokens"] - 1
    for meta in (whole["meta_info"], last["meta_info"]):
        for key in ("id", "e2e_latency", "sim_sent_at", "cached_tokens"):
            meta.pop(key, None)
    assert last == whole


def test_zero_delay_streams_every_token_one_step_per_chunk(emulator):
    # with no modelled delay the scheduler runs far ahead of the writer: each chunk must still be its own step
    emu = emulator(env={"SIM_SGLANG_TIME_SCALE": "0"})
    emu.wait_ready()
    # ignore_eos: every one of the 300 tokens is a word (SGLang's default would stop at the prompt's EOS)
    body = {"input_ids": list(range(300, 316)), "stream": True,
            "sampling_params": {"max_new_tokens": 300, "ignore_eos": True}}
    chunks = [json.loads(p) for p in raw_stream(emu, "/generate", body)[:-1]]
    assert [c["meta_info"]["completion_tokens"] for c in chunks] == list(range(1, 301))
    assert all(len(c["output_ids"]) == len(c["text"].split()) == c["meta_info"]["completion_tokens"] for c in chunks)
    assert all(after["output_ids"][:-1] == before["output_ids"] for before, after in zip(chunks, chunks[1:]))
    whole = json.loads(emu.post("/generate", dict(body, stream=False))[1])
    assert chunks[-1]["output_ids"] == whole["output_ids"] and chunks[-1]["text"] == whole["text"]
    body = {"prompt": "zero delay", "max_tokens": 200, "stream": True, "ignore_eos": True}
    completion = [json.loads(p) for p in raw_stream(emu, "/v1/completions", body)[:-1]]
    assert [len(c["choices"][0]["text"].split()) for c in completion] == [1] * 200


def test_step_seconds_fixes_the_time_of_every_step(emulator):
    emu = emulator(env={"SIM_SGLANG_TIME_SCALE": "0", "SIM_SGLANG_STEP_SECONDS": "0.01"})
    emu.wait_ready()
    # The scheduler's clock catches up on steps that ran late unless it is 50 ms behind: past that, the health
    # checks' last step cannot lend this request time (a certainty, not a wait for something to happen).
    time.sleep(0.06)
    before = time.perf_counter()
    payloads = raw_stream(emu, "/generate", {"input_ids": [1, 2, 3], "stream": True,
                                             "sampling_params": {"max_new_tokens": 20}})
    stamps = [float(STAMP.search(p).group(1)) for p in payloads[:-1]]
    # the prefill step and 19 decode steps, none shorter than 10 ms (a sleep never ends early)
    assert len(stamps) == 20 and stamps[-1] - before >= 20 * 0.01


def test_accept_length_in_server_info_is_reset_by_flush_cache(dflash):
    status, body = dflash.post("/flush_cache")
    assert status == 200 and body.startswith(b"Cache flushed")
    assert "avg_spec_accept_length" not in dflash.get_json("/server_info")["internal_states"][0]
    for i in range(4):
        dflash.post("/generate", {"text": "prompt %d" % i, "sampling_params": {"max_new_tokens": 200}})
    accept = dflash.get_json("/server_info")["internal_states"][0]["avg_spec_accept_length"]
    assert 2.5 < accept < 4.5
    assert dflash.status("/flush_cache") == 200  # GET works too
    assert "avg_spec_accept_length" not in dflash.get_json("/server_info")["internal_states"][0]


def test_chat_completions(dflash):
    body = {"model": "Qwen/Qwen3.6-27B", "messages": [{"role": "user", "content": "Hello there"}],
            "max_completion_tokens": 16, "temperature": 0}
    status, raw = dflash.post("/v1/chat/completions", body)
    assert status == 200
    out = json.loads(raw)
    assert out["object"] == "chat.completion"
    assert out["choices"][0]["message"]["role"] == "assistant"
    assert out["choices"][0]["finish_reason"] == "length"
    assert out["usage"]["completion_tokens"] == 16
    assert out["usage"]["total_tokens"] == out["usage"]["prompt_tokens"] + 16

    events = dflash.stream("/v1/chat/completions", dict(body, stream=True, stream_options={"include_usage": True}))
    assert events[-1] == "[DONE]"
    assert all(e["object"] == "chat.completion.chunk" for e in events[:-1])
    content = "".join(e["choices"][0]["delta"].get("content") or "" for e in events[:-1] if e["choices"])
    assert content == out["choices"][0]["message"]["content"]
    assert events[-2]["usage"]["completion_tokens"] == 16


def test_completions(dflash):
    body = {"model": "Qwen/Qwen3.6-27B", "prompt": "Once upon a time", "max_tokens": 12}
    status, raw = dflash.post("/v1/completions", body)
    assert status == 200
    out = json.loads(raw)
    assert out["object"] == "text_completion"
    assert out["usage"]["completion_tokens"] == 12
    events = dflash.stream("/v1/completions", dict(body, stream=True))
    assert events[-1] == "[DONE]"
    assert "".join(e["choices"][0]["text"] for e in events[:-1]) == out["choices"][0]["text"]


def test_metrics(dflash):
    generate(dflash, list(range(100, 120)), max_new_tokens=4)  # a counter appears once it has counted something
    with urllib.request.urlopen(dflash.base + "/metrics", timeout=DEADLINE_S) as resp:
        text = resp.read().decode()
    for name in ("sglang:spec_accept_length", "sglang:num_running_reqs", "sglang:gen_throughput",
                 "sglang:prompt_tokens_total", "sglang:generation_tokens_total"):
        assert "\n" + name + "{" in "\n" + text
    assert "# TYPE sglang:generation_tokens_total counter" in text


def test_bad_requests_get_400(dflash):
    status, raw = dflash.post("/generate", {"sampling_params": {"max_new_tokens": 4}})
    assert status == 400 and "error" in json.loads(raw)
    status, raw = dflash.post("/generate", {"input_ids": [1] * 10, "sampling_params": {"max_new_tokens": 10 ** 7}})
    assert status == 400 and "context length" in json.loads(raw)["error"]["message"]
    assert dflash.status("/no_such_route") == 404


@pytest.mark.parametrize("params, message", [
    ({"top_p": 0.0}, "top_p must be in (0, 1]"),
    ({"top_p": 1.5}, "top_p must be in (0, 1]"),
    ({"top_k": 0}, "top_k must be -1 (disable) or at least 1"),
    ({"top_k": -2}, "top_k must be -1 (disable) or at least 1"),
    ({"temperature": -0.5}, "temperature must be a non-negative finite number"),
])
def test_sampling_params_are_verified_as_sglang_does(dflash, params, message):
    status, raw = dflash.post("/generate", {"input_ids": [1] * 10, "sampling_params": dict(max_new_tokens=4, **params)})
    assert status == 400 and message in json.loads(raw)["error"]["message"]
    ok = {"input_ids": [1] * 10, "sampling_params": {"max_new_tokens": 4, "top_p": 1.0, "top_k": -1, "temperature": 0}}
    assert dflash.post("/generate", ok)[0] == 200


def test_autoregressive_server_reports_no_accept_length(emulator):
    emu = emulator(["--decode-log-interval", "1"])
    emu.wait_ready()
    status, raw = emu.post("/generate", {"text": "hi", "sampling_params": {"max_new_tokens": 16}})
    meta = json.loads(raw)["meta_info"]
    assert "spec_verify_ct" not in meta and "spec_accept_length" not in meta
    info = emu.get_json("/server_info")
    assert info["speculative_algorithm"] is None
    assert "avg_spec_accept_length" not in info["internal_states"][0]


def test_ddtree_budget_and_topk_come_from_flags_and_environment(emulator):
    emu = emulator(["--speculative-algorithm", "DDTREE", "--speculative-draft-model-path", "z/dflash",
                    "--speculative-ddtree-budget", "128", "--page-size", "1"],
                   env={"SGLANG_DDTREE_MAX_TOPK": "8"})
    emu.wait_ready()
    info = emu.get_json("/server_info")
    assert info["speculative_ddtree_budget"] == 128
    assert info["speculative_ddtree_topk"] == 8


# --------------------------------------------------------------------------------------------
# content: per-request acceptance, EOS and SGLang 0.5.23's per-request fields
# --------------------------------------------------------------------------------------------

MATH = ["Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
        "How many clips did Natalia sell altogether in April and May?",
        "Solve for x: 3x + 7 = 22. Then calculate 2x - 5.",
        "Find the value of the sum of all integers n with 1 <= n <= 100 such that n = 3k + 1."]
CODE = ["def fib(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
        "Write a Python function that takes a list of integers and returns the largest. ```python\n",
        "class Stack:\n    def push(self, item):\n        pass\n    def pop(self):\n        return None\n"]
CHAT = ["Compose an engaging travel blog post about a recent trip to Hawaii, highlighting cultural experiences.",
        "What are some good ways to relax after a long week?",
        "Tell me a story about a dragon who learns to sing."]
TRANSLATION = ["Translate into French: The weather is lovely today and we are going to the beach.",
               "Translate the following sentence into German: I would like a cup of coffee, please.",
               "Translation task: render 'good morning, my friend' into Spanish."]
SUMMARY = ["Summarize the following article in three sentences: The city council met on Tuesday to discuss the budget."]


def test_content_category_reads_the_prompts_words():
    assert {sim_model.content_category(t) for t in MATH} == {"math"}
    assert {sim_model.content_category(t) for t in CODE} == {"code"}
    assert {sim_model.content_category(t) for t in CHAT} == {"chat"}
    assert {sim_model.content_category(t) for t in TRANSLATION} == {"translation"}
    assert sim_model.content_category(SUMMARY[0]) == "summarization"
    assert sim_model.content_category(None) == sim_model.content_category("") == "chat"
    assert sim_model.content_category("prompt 3") == "chat"  # one number is not math


def test_request_tau_follows_content_and_temperature_deterministically():
    wl = sim_model.Workload(method="DFLASH", num_draft_tokens=16)
    base = sim_model.expected_tau(wl)

    def tau(category, temperature=0.0, seed=7):
        return sim_model.request_tau(wl, category, temperature, seed)

    # with the spread fixed by the seed, the levels order the categories as the papers do
    assert tau("math") > tau("code") > tau("chat") > tau("summarization") > tau("translation") > 1.0
    assert tau("math") > 1.5 * tau("chat")
    for category in sim_model.CONTENT_LEVELS:
        assert tau(category, 1.0) < tau(category, 0.0)
        assert tau(category, 0.0) == tau(category, 0.0)
        assert 1.0 <= tau(category) <= 16.0
    # the per-prompt spread stays within +-10% of the drafted gain
    gains = [sim_model.request_tau(wl, "chat", 0.0, seed) - 1.0 for seed in range(200)]
    assert min(gains) >= 0.9 * (base - 1) - 1e-9 and max(gains) <= 1.1 * (base - 1) + 1e-9
    assert max(gains) - min(gains) > 0.1 * (base - 1)
    assert sim_model.request_tau(sim_model.Workload(), "math", 0.0, 7) == 1.0  # autoregressive
    assert sim_model.request_tau(replace_alpha(wl, 0.99), "math", 0.0, 7) == 16.0  # bounded by the block


def replace_alpha(wl, alpha):
    return sim_model.Workload(method=wl.method, num_draft_tokens=wl.num_draft_tokens, alpha=alpha)


def test_a_sampler_given_a_requests_tau_averages_to_it():
    wl = sim_model.Workload(method="DFLASH", num_draft_tokens=16)
    sampler = sim_model.AcceptanceSampler(wl, 3, tau=6.5)
    draws = [sampler.next() for _step in range(20000)]
    assert sum(draws) / len(draws) == pytest.approx(6.5, rel=0.03)


def test_eos_position_depends_on_the_prompt_alone():
    seeds = range(300)
    for category in sim_model.CONTENT_ANSWER_TOKENS:
        positions = [sim_model.eos_position(category, seed) for seed in seeds]
        assert positions == [sim_model.eos_position(category, seed) for seed in seeds]
        assert min(positions) >= sim_model.MIN_ANSWER_TOKENS and len(set(positions)) > 50
    mean = {c: sum(sim_model.eos_position(c, s) for s in seeds) / 300 for c in sim_model.CONTENT_ANSWER_TOKENS}
    assert mean["translation"] < mean["summarization"] < mean["math"] < mean["code"] < mean["chat"]


def content_seed(prompt):
    return sim_model.request_seed("content", prompt)


def generate(emu, prompt, **params):
    key = "input_ids" if isinstance(prompt, list) else "text"
    status, raw = emu.post("/generate", {key: prompt, "sampling_params": params})
    assert status == 200, raw
    return json.loads(raw)


def assert_spec_fields_consistent(meta, block=16):
    """The relations SGLang 0.5.23's tokenizer_manager.py:3138-3207 gives the per-request spec fields."""
    verify, correct = meta["spec_verify_ct"], meta["spec_num_correct_drafts"]
    assert isinstance(verify, int) and isinstance(correct, int) and verify >= 1
    assert meta["spec_num_proposed_drafts"] == verify * (block - 1)
    assert meta["spec_accept_rate"] == pytest.approx(correct / meta["spec_num_proposed_drafts"])
    assert meta["spec_accept_length"] == pytest.approx(meta["completion_tokens"] / verify)
    histogram = meta["spec_correct_drafts_histogram"]
    assert sum(histogram) == verify and sum(i * n for i, n in enumerate(histogram)) == correct
    # every verify step commits its bonus token plus its correct drafts; the prefill samples the first token
    assert meta["completion_tokens"] == 1 + verify + correct


def test_generate_meta_info_carries_sglangs_per_request_spec_fields(dflash):
    out = generate(dflash, MATH[0], max_new_tokens=200, temperature=0, ignore_eos=True)
    meta = out["meta_info"]
    assert meta["finish_reason"] == {"type": "length", "length": 200}
    assert_spec_fields_consistent(meta)
    keys = list(meta)
    assert keys[:8] == ["id", "finish_reason", "prompt_tokens", "weight_version", "num_retractions",
                        "reasoning_tokens", "completion_tokens", "cached_tokens"]
    assert keys[8:] == ["e2e_latency", "spec_accept_rate", "spec_accept_length", "spec_num_correct_drafts",
                        "spec_num_proposed_drafts", "spec_verify_ct", "spec_correct_drafts_histogram"]
    again = generate(dflash, MATH[0], max_new_tokens=200, temperature=0, ignore_eos=True)["meta_info"]
    for key in keys[1:7] + keys[9:]:
        assert again[key] == meta[key], key
    assert again["cached_tokens"] == again["prompt_tokens"] - 1  # the repeat's prompt is in the prefix cache


def test_generate_stops_at_an_eos_the_prompt_places_unless_ignore_eos(dflash):
    prompt = CHAT[1]
    eos_at = sim_model.eos_position("chat", content_seed(prompt))
    out = generate(dflash, prompt, max_new_tokens=eos_at + 50, temperature=0)
    meta = out["meta_info"]
    assert meta["finish_reason"] == {"type": "stop", "matched": 151645}  # Qwen's <|im_end|>: no model folder here
    assert meta["completion_tokens"] == eos_at == len(out["output_ids"])
    assert out["output_ids"][-1] == 151645 and 151645 not in out["output_ids"][:-1]
    assert len(out["text"].split()) == eos_at - 1  # the EOS is a special token: no text
    assert_spec_fields_consistent(meta)
    # max_new_tokens before the EOS: length, as before
    short = generate(dflash, prompt, max_new_tokens=eos_at - 1, temperature=0)["meta_info"]
    assert short["finish_reason"] == {"type": "length", "length": eos_at - 1}
    assert short["completion_tokens"] == eos_at - 1
    # ignore_eos: today's behaviour, to max_new_tokens
    ignored = generate(dflash, prompt, max_new_tokens=eos_at + 50, temperature=0, ignore_eos=True)
    assert ignored["meta_info"]["finish_reason"] == {"type": "length", "length": eos_at + 50}
    assert 151645 not in ignored["output_ids"]


def test_generate_streams_the_eos_finish_and_the_spec_fields_in_the_last_chunk_only(dflash):
    prompt = TRANSLATION[0]
    eos_at = sim_model.eos_position("translation", content_seed(prompt))
    events = dflash.stream("/generate", {"text": prompt, "stream": True,
                                         "sampling_params": {"max_new_tokens": 4096, "temperature": 0}})
    chunks = events[:-1]
    assert all("spec_verify_ct" not in c["meta_info"] for c in chunks[:-1])
    final = chunks[-1]["meta_info"]
    assert final["finish_reason"] == {"type": "stop", "matched": 151645}
    assert final["completion_tokens"] == eos_at and final["spec_verify_ct"] == len(chunks) - 1
    assert_spec_fields_consistent(final)


def mean_accept(emu, prompts, temperature=0):
    metas = [generate(emu, p, max_new_tokens=400, temperature=temperature, ignore_eos=True)["meta_info"]
             for p in prompts]
    return sum(m["completion_tokens"] for m in metas) / sum(m["spec_verify_ct"] for m in metas)


def test_math_and_code_accept_more_than_chat_and_translation(dflash):
    math_tau, code_tau = mean_accept(dflash, MATH), mean_accept(dflash, CODE)
    chat_tau, translation_tau = mean_accept(dflash, CHAT), mean_accept(dflash, TRANSLATION)
    assert min(math_tau, code_tau) > 1.3 * chat_tau
    assert chat_tau > translation_tau > 1.5


def test_temperature_above_zero_lowers_acceptance(dflash):
    for prompt in MATH + CHAT:
        greedy = generate(dflash, prompt, max_new_tokens=300, temperature=0, ignore_eos=True)["meta_info"]
        sampled = generate(dflash, prompt, max_new_tokens=300, temperature=1.0, ignore_eos=True)["meta_info"]
        # the same draws against a lower acceptance probability: never a longer run
        assert sampled["spec_verify_ct"] >= greedy["spec_verify_ct"]
    assert mean_accept(dflash, MATH, temperature=1.0) < 0.95 * mean_accept(dflash, MATH)
    # SGLang's SamplingParams default temperature is 1.0: a request that names none samples
    default = generate(dflash, MATH[0], max_new_tokens=300, ignore_eos=True)["meta_info"]
    sampled = generate(dflash, MATH[0], max_new_tokens=300, temperature=1.0, ignore_eos=True)["meta_info"]
    assert default["spec_verify_ct"] == sampled["spec_verify_ct"]


def test_token_id_prompts_read_as_chat_and_stop_at_eos_too(dflash):
    ids = list(range(500, 540))
    eos_at = sim_model.eos_position("chat", content_seed(ids))
    meta = generate(dflash, ids, max_new_tokens=eos_at + 10, temperature=0)["meta_info"]
    assert meta["finish_reason"]["type"] == "stop" and meta["completion_tokens"] == eos_at


def chat_body(content, **extra):
    body = {"model": "Qwen/Qwen3.6-27B", "messages": [{"role": "user", "content": content}], "temperature": 0}
    body.update(extra)
    return body


def test_chat_completions_render_the_template_with_chat_template_kwargs(dflash):
    thinking = json.loads(dflash.post("/v1/chat/completions", chat_body(MATH[1], max_tokens=4))[1])
    off = json.loads(dflash.post("/v1/chat/completions", chat_body(
        MATH[1], max_tokens=4, chat_template_kwargs={"enable_thinking": False}))[1])
    # the empty think block enable_thinking=False adds after the assistant header
    assert off["usage"]["prompt_tokens"] > thinking["usage"]["prompt_tokens"]
    status, raw = dflash.post("/v1/chat/completions", chat_body(MATH[1], chat_template_kwargs="no"))
    assert status == 400 and "chat_template_kwargs" in json.loads(raw)["error"]["message"]


def test_chat_completions_stop_at_eos_and_report_it_as_sglang(dflash):
    kwargs = {"enable_thinking": False}
    prompt = sim_server.render_chat([{"role": "user", "content": CODE[1]}], kwargs)
    eos_at = sim_model.eos_position(sim_model.content_category(prompt), content_seed(prompt))
    body = chat_body(CODE[1], max_tokens=eos_at + 20, chat_template_kwargs=kwargs)
    out = json.loads(dflash.post("/v1/chat/completions", body)[1])
    choice = out["choices"][0]
    assert choice["finish_reason"] == "stop" and choice["matched_stop"] == 151645
    assert out["usage"]["completion_tokens"] == eos_at
    assert out["usage"] == {"prompt_tokens": out["usage"]["prompt_tokens"], "total_tokens": out["usage"]["total_tokens"],
                            "completion_tokens": eos_at, "prompt_tokens_details": None, "reasoning_tokens": 0,
                            "completion_tokens_details": None}
    assert "sglext" not in out
    events = dflash.stream("/v1/chat/completions", dict(body, stream=True))
    finals = [e["choices"][0] for e in events[:-1] if e["choices"] and e["choices"][0]["finish_reason"]]
    assert finals == [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop", "matched_stop": 151645}]


def test_return_spec_tokens_details_adds_sglext_to_chat_and_completions(dflash):
    body = chat_body(MATH[0], max_tokens=64, ignore_eos=True, return_spec_tokens_details=True)
    out = json.loads(dflash.post("/v1/chat/completions", body)[1])
    details = out["sglext"]["spec_tokens_details"]
    assert list(details) == ["spec_accept_rate", "spec_accept_length", "spec_cap_length", "spec_block_accept_length",
                             "spec_num_correct_drafts", "spec_num_proposed_drafts", "spec_verify_ct",
                             "spec_correct_drafts_histogram", "spec_cap_lens_histogram"]
    assert details["spec_cap_length"] == 0.0 and details["spec_cap_lens_histogram"] == []
    assert_spec_fields_consistent(dict(details, completion_tokens=out["usage"]["completion_tokens"]))
    # streamed: one chunk with no choices carries it, after the finish and before the usage chunk
    events = dflash.stream("/v1/chat/completions", dict(body, stream=True, stream_options={"include_usage": True}))
    assert events[-1] == "[DONE]"
    sglext = [i for i, e in enumerate(events[:-1]) if "sglext" in e]
    assert len(sglext) == 1 and events[sglext[0]]["choices"] == [] and sglext[0] == len(events) - 3
    assert events[sglext[0]]["sglext"]["spec_tokens_details"] == details
    assert events[-2]["usage"]["completion_tokens"] == 64
    # completions, n=2: a list, one per choice
    status, raw = dflash.post("/v1/completions", {"model": "Qwen/Qwen3.6-27B", "prompt": CODE[0], "max_tokens": 32,
                                                  "n": 2, "ignore_eos": True, "return_spec_tokens_details": True})
    out = json.loads(raw)
    assert status == 200 and [len(c["text"].split()) for c in out["choices"]] == [32, 32]
    assert [d["spec_verify_ct"] >= 1 for d in out["sglext"]["spec_tokens_details"]] == [True, True]


def test_an_autoregressive_server_sends_no_spec_details(emulator):
    emu = emulator()
    emu.wait_ready()
    body = chat_body(MATH[0], max_tokens=8, return_spec_tokens_details=True)
    out = json.loads(emu.post("/v1/chat/completions", body)[1])
    assert "sglext" not in out
    meta = generate(emu, MATH[0], max_new_tokens=8)["meta_info"]
    assert not [key for key in meta if key.startswith("spec_")]


def test_the_eos_id_comes_from_the_model_folder(tmp_path):
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": [151645, 151643]}))
    assert sim_server.eos_token_id(str(tmp_path)) == 151645
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": 128009}))
    assert sim_server.eos_token_id(str(tmp_path)) == 128009
    assert sim_server.eos_token_id("/nonexistent/Qwen3-8B") == 151645
    assert sim_server.eos_token_id("meta-llama/Llama-3.1-8B") == 2


def test_the_emulators_chat_prompt_is_qwen3s_template_for_plain_turns():
    """render_chat against what transformers recorded with the real Qwen3 template (tests/fixtures/chat-templates)."""
    fixtures = REPO / "tests" / "fixtures" / "chat-templates"
    cases = {case["name"]: case for case in json.loads((fixtures / "cases.json").read_text(encoding="utf-8"))}
    expected = json.loads((fixtures / "qwen3" / "expected.json").read_text(encoding="utf-8"))
    for name in ("single-turn-thinking-default", "single-turn-thinking-off", "single-turn-thinking-on"):
        case = cases[name]
        assert sim_server.render_chat(case["messages"], case.get("chat_template_kwargs")) == expected[name], name
    system_and_user = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    assert sim_server.render_chat(system_and_user, {"enable_thinking": False}) == (
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n")


# --------------------------------------------------------------------------------------------
# the draft's quality: the simulated trainer's checkpoints carry specdec_sim.quality in config.json
# --------------------------------------------------------------------------------------------

TRAINER = REPO / "tests" / "sim" / "trainer" / "sim_trainer.py"
QUALITIES = (0.0, 0.1, 0.3, 0.5, 0.8, 1.0)


@pytest.mark.parametrize("workload", [sim_model.Workload(method="DFLASH", num_draft_tokens=16), ddtree(64)],
                         ids=["dflash", "ddtree"])
def test_a_drafts_quality_keeps_its_share_of_the_drafted_gain(workload):
    full = sim_model.expected_tau(workload)
    taus = [sim_model.expected_tau(replace(workload, draft_quality=q)) for q in QUALITIES]
    assert all(a < b for a, b in zip(taus, taus[1:])), taus
    assert taus[0] == 1.0 and taus[-1] == full
    assert taus[3] == pytest.approx(1.0 + 0.5 * (full - 1.0))


def test_measured_acceptance_follows_the_drafts_quality():
    """Drawn in process, as the engine draws them: a low-quality draft accepts clearly less, monotone in quality."""
    wl = sim_model.Workload(method="DFLASH", num_draft_tokens=16)
    measured = []
    for quality in (0.2, 0.5, 0.9):
        sampler = sim_model.AcceptanceSampler(replace(wl, draft_quality=quality), 11)
        draws = [sampler.next() for _step in range(5000)]
        measured.append(sum(draws) / len(draws))
    assert measured[0] < measured[1] < measured[2], measured
    assert measured[0] < 0.6 * measured[2]


def draft_folder(root, name, config):
    folder = root / name
    folder.mkdir()
    if config is not None:
        (folder / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))
    return str(folder)


def test_the_draft_quality_is_read_from_its_config(tmp_path):
    quality = sim_server.draft_quality
    assert quality(draft_folder(tmp_path, "trained", {"specdec_sim": {"step": 300, "quality": 0.8}})) == (0.8, 300)
    assert quality(draft_folder(tmp_path, "zero", {"specdec_sim": {"step": 0, "quality": 0}})) == (0.0, 0)
    # none to read: the demo drafts (no specdec_sim), a folder without config.json, a hub id
    assert quality(draft_folder(tmp_path, "demo", {"architectures": ["DFlashDraftModel"]})) == (None, None)
    assert quality(draft_folder(tmp_path, "empty", None)) == (None, None)
    assert quality("z-lab/Qwen3.6-27B-DFlash") == (None, None)
    assert quality(None) == (None, None)


@pytest.mark.parametrize("sim,message", [
    ({"quality": "high"}, 'specdec_sim.quality must be a number from 0 to 1, got "high"'),
    ({"quality": 1.5}, "specdec_sim.quality must be a number from 0 to 1, got 1.5"),
    ({"quality": -0.1}, "specdec_sim.quality must be a number from 0 to 1, got -0.1"),
    ({"quality": True}, "specdec_sim.quality must be a number from 0 to 1, got true"),
    ({"quality": None}, "specdec_sim.quality must be a number from 0 to 1, got null"),
    (0.5, "specdec_sim must be an object with a quality from 0 to 1, got 0.5"),
])
def test_a_bad_draft_quality_is_a_broken_config(tmp_path, sim, message):
    path = draft_folder(tmp_path, "broken", {"specdec_sim": sim})
    with pytest.raises(sim_server.StartupError) as failure:
        sim_server.draft_quality(path)
    assert message in failure.value.lines[-2] and path in failure.value.lines[-2]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A simulated training run's checkpoints every 100 steps, as the trainer saves them."""
    run_dir = tmp_path_factory.mktemp("train-run")
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("SIM_TRAINER_", "SPECDEC_"))}
    environ["SPECDEC_RUN_DIR"] = str(run_dir)
    result = subprocess.run([sys.executable, str(TRAINER), "--steps", "600", "--pace", "0", "--load-seconds", "0",
                             "--checkpoint-every", "100"], env=environ, capture_output=True, timeout=DEADLINE_S,
                            check=False)
    assert result.returncode == 0, result.stderr
    return run_dir / "checkpoints"


def dflash_with_draft(tmp_path, name, draft):
    folder = tmp_path / name
    folder.mkdir()
    return Emulator(folder, ["--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", draft,
                             "--speculative-num-draft-tokens", "16", "--speculative-dflash-block-size", "16"],
                    env={"SIM_SGLANG_BUILD": "sglang-0.5.23"})


def test_a_server_started_with_a_checkpoint_accepts_as_its_quality_says(tmp_path, trained):
    drafts = [("step-100", str(trained / "checkpoint-100")), ("step-300", str(trained / "checkpoint-300")),
              ("step-600", str(trained / "checkpoint-600")),
              ("demo", draft_folder(tmp_path, "demo-draft", {"architectures": ["DFlashDraftModel"]}))]
    taus, infos = [], []
    for name, draft in drafts:
        emu = dflash_with_draft(tmp_path, name, draft)
        try:
            emu.wait_ready()
            taus.append(mean_accept(emu, MATH + CHAT))
            infos.append(emu.get_json("/server_info"))
        finally:
            emu.stop()
        stdout = emu.stdout()
        if name != "demo":
            config = json.loads((Path(draft) / "config.json").read_text())
            assert infos[-1]["sim_draft_quality"] == config["specdec_sim"]["quality"]
            assert infos[-1]["sim_draft_step"] == config["specdec_sim"]["step"]
            assert "specdec_sim quality" in stdout
        else:
            assert infos[-1]["sim_draft_quality"] == 1.0 and infos[-1]["sim_draft_step"] is None
            assert "specdec_sim" not in stdout
    assert all(a < b for a, b in zip(taus, taus[1:])), taus
    assert taus[0] < 0.75 * taus[-1] and taus[0] > 1.0


def test_a_server_whose_draft_has_a_bad_quality_exits_1(tmp_path):
    draft = draft_folder(tmp_path, "broken-draft", {"specdec_sim": {"step": 100, "quality": 2}})
    emu = dflash_with_draft(tmp_path, "server", draft)
    try:
        assert emu.wait_exit() == 1
    finally:
        emu.stop()
    assert "ValueError: Invalid draft model config %s/config.json: specdec_sim.quality must be a number from 0 to 1, " \
        "got 2" % draft in emu.stdout()


@pytest.mark.parametrize("error, printed", [
    (ConnectionResetError(104, "Connection reset by peer"), False), (BrokenPipeError(32, "Broken pipe"), False),
    (ValueError("a bug in a route"), True)])
def test_a_client_that_went_away_is_no_traceback_in_the_log(capsys, error, printed):
    """As uvicorn: a client's reset or closed connection is not logged; socketserver's twenty-line traceback pushed the
    server's own lines out of a stage's journal excerpt. Any other error is printed as before."""
    server = sim_server._Server.__new__(sim_server._Server)  # pylint: disable=protected-access  # no socket needed
    try:
        raise error
    except Exception:  # pylint: disable=broad-exception-caught
        server.handle_error(None, ("127.0.0.1", 5))
    err = capsys.readouterr().err
    assert ("Traceback" in err) == printed, err


# --------------------------------------------------------------------------------------------
# the prefix cache
# --------------------------------------------------------------------------------------------

def test_the_radix_tree_matches_the_longest_cached_prefix_and_splits_where_sequences_part():
    cache = sim_engine.PrefixCache()
    cache.insert((1, 2, 3, 4, 5))
    cache.insert((1, 2, 9))
    assert cache.size == 6  # 1 2 shared, 3 4 5 and 9 apart
    assert cache.match((1, 2, 3, 7))[0] == 3
    assert cache.match((1, 2, 9, 9))[0] == 3
    assert cache.match((8, 1, 2))[0] == 0
    assert cache.match((1, 2, 3, 4, 5, 6))[0] == 5


def test_the_radix_tree_evicts_least_recently_used_unlocked_leaves():
    cache = sim_engine.PrefixCache()
    cache.insert(tuple(range(0, 10)))
    cache.insert(tuple(range(100, 110)))
    cache.insert(tuple(range(200, 210)))
    cache.match(tuple(range(0, 10)))  # used again: now the newest
    _matched, held = cache.match(tuple(range(100, 110)))
    sim_engine.PrefixCache.lock(held, 1)  # a running request holds it
    assert cache.evict(10) == 10
    assert cache.match(tuple(range(200, 210)))[0] == 0  # the least recently used unlocked one went
    assert cache.match(tuple(range(0, 10)))[0] == 10
    assert cache.evict(100) == 10  # the held one stays, whatever is asked
    assert cache.match(tuple(range(100, 110)))[0] == 10 and cache.size == 10


def test_the_text_tokenizer_is_prefix_stable_and_counts_as_approx_tokens():
    first = "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"
    second = first + " four<|im_end|>\n<|im_start|>user\nAnd 3+3?<|im_end|>\n<|im_start|>assistant\n"
    whole = len(first.encode()) // sim_engine.TOKEN_BYTES
    assert sim_engine.text_tokens(second)[:whole] == sim_engine.text_tokens(first)[:whole]
    for text in (first, second, "", "héllo wörld"):
        assert len(sim_engine.text_tokens(text)) == sim_server.approx_tokens(text)


class InProcessEngine:
    """One Engine run in this process with no modelled delay, recording the tokens each prefill computed."""

    def __init__(self, monkeypatch, capacity=1 << 20, prefix_cache=True, method=sim_model.AUTOREGRESSIVE):
        self.prefilled = []
        real = sim_model.prefill_ms

        def prefill_ms(hw, wl, tokens):
            self.prefilled.append(tokens)
            return real(hw, wl, tokens)

        monkeypatch.setattr(sim_model, "prefill_ms", prefill_ms)
        self.logged = []
        self.workload = sim_model.Workload(method=method)
        self.engine = sim_engine.Engine(RTX, self.workload, lambda message, warning=False: self.logged.append(message),
                                        time_scale=0.0, max_total_num_tokens=capacity, prefix_cache=prefix_cache)
        self.engine.start()
        self.count = 0

    def run(self, prompt, max_new_tokens=16, chat=False):
        """The finished request of a prompt (token ids, or text)."""
        import queue
        sink = queue.Queue()
        self.count += 1
        ids = prompt if isinstance(prompt, list) else None
        text = prompt if isinstance(prompt, str) else None
        count = len(ids) if ids is not None else sim_server.approx_tokens(text)
        req = sim_engine.GenRequest("r%d" % self.count, count, max_new_tokens, self.count, self.workload, sink,
                                    prompt_ids=ids, prompt_text=text, chat=chat)
        self.engine.submit(req)
        while not sink.get(timeout=DEADLINE_S)[3]:
            pass
        return req


def test_a_repeated_prefix_is_served_from_the_cache_and_prefill_computes_the_rest(monkeypatch):
    run = InProcessEngine(monkeypatch)
    system = list(range(5000, 5100))  # a shared system prompt of 100 tokens
    first = run.run(system + list(range(7000, 7020)))
    assert first.cached_tokens == 0 and first.meta_info(True, False)["cached_tokens"] == 0
    second = run.run(system + list(range(8000, 8030)))
    assert second.cached_tokens == 100
    assert second.meta_info(False, False)["cached_tokens"] == 100  # in every chunk, not only the last
    assert run.prefilled[-2:] == [120, 30]  # only the uncached tokens are computed
    assert any("#new-token: 30, #cached-token: 100," in line for line in run.logged)
    # the same prompt again: all but the one token SGLang always computes
    again = run.run(system + list(range(8000, 8030)))
    assert again.cached_tokens == 129 and run.prefilled[-1] == 1


def test_turn_two_hits_turn_ones_prompt_and_answer(monkeypatch):
    run = InProcessEngine(monkeypatch)
    turn1 = "<|im_start|>user\nName three prime numbers.<|im_end|>\n<|im_start|>assistant\n"
    first = run.run(turn1, max_new_tokens=40)
    answer = sim_engine.detokenize(first.output_ids)  # the native /generate text the harness sends back
    turn2 = turn1 + answer + "<|im_end|>\n<|im_start|>user\nAnd three more?<|im_end|>\n<|im_start|>assistant\n"
    second = run.run(turn2)
    # every token of turn 1's prompt and answer but the last (cut by the end of the answer's text)
    assert second.cached_tokens == sim_server.approx_tokens(turn1 + answer) - 1
    assert second.cached_tokens > sim_server.approx_tokens(turn1)
    # a chat client sees the message without its leading space, and sends that back
    chat_first = run.run(turn1.replace("three", "four"), max_new_tokens=40, chat=True)
    message = sim_engine.detokenize(chat_first.output_ids).lstrip()
    chat_turn2 = turn1.replace("three", "four") + message + "<|im_end|>\n<|im_start|>user\nMore?<|im_end|>\n"
    assert run.run(chat_turn2).cached_tokens == sim_server.approx_tokens(turn1.replace("three", "four") + message) - 1


def test_flush_cache_empties_the_cache(monkeypatch):
    run = InProcessEngine(monkeypatch)
    prompt = list(range(3000, 3064))
    run.run(prompt)
    assert run.run(prompt).cached_tokens == 63
    assert run.engine.flush_cache()
    assert run.engine.cache.size == 0
    assert run.run(prompt).cached_tokens == 0


def test_the_cache_stays_within_the_kv_capacity_evicting_the_least_recently_used(monkeypatch):
    run = InProcessEngine(monkeypatch, capacity=250)
    a, b, c = (list(range(base, base + 100)) for base in (10000, 20000, 30000))
    run.run(a, max_new_tokens=4)
    run.run(b, max_new_tokens=4)
    assert run.run(a, max_new_tokens=4).cached_tokens == 99  # a used again: b is now the least recently used
    run.run(c, max_new_tokens=4)
    assert run.engine.cache.size <= 250
    assert run.run(b, max_new_tokens=4).cached_tokens == 0  # evicted to make room for c
    assert run.run(c, max_new_tokens=4).cached_tokens == 99


def test_no_cache_means_no_hits(monkeypatch):
    run = InProcessEngine(monkeypatch, prefix_cache=False)
    prompt = list(range(3000, 3064))
    run.run(prompt)
    assert run.run(prompt).cached_tokens == 0 and run.prefilled[-1] == 64


def test_the_spec_prefix_cache_setting_comes_from_the_environment_then_the_hosts_file(monkeypatch, tmp_path):
    setting = tmp_path / "spec-prefix-cache"
    monkeypatch.setattr(sim_server, "SPEC_PREFIX_CACHE_FILE", str(setting))
    monkeypatch.delenv("SIM_SGLANG_SPEC_PREFIX_CACHE", raising=False)
    assert sim_server.spec_prefix_cache_mode() == "keep"  # no file
    setting.write_text("lose\n")
    assert sim_server.spec_prefix_cache_mode() == "lose"
    monkeypatch.setenv("SIM_SGLANG_SPEC_PREFIX_CACHE", "keep")
    assert sim_server.spec_prefix_cache_mode() == "keep"
    monkeypatch.setenv("SIM_SGLANG_SPEC_PREFIX_CACHE", "lost")
    with pytest.raises(ValueError, match="keep or lose"):
        sim_server.spec_prefix_cache_mode()


DFLASH_ARGS = ["--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", "z-lab/Qwen3.6-27B-DFlash",
               "--speculative-num-draft-tokens", "16"]


@pytest.mark.parametrize("args, hits", [(DFLASH_ARGS, False), ([], True)], ids=["dflash-loses", "autoregressive-keeps"])
def test_lose_takes_the_hits_of_a_speculative_server_only(emulator, args, hits):
    emu = emulator(args, env={"SIM_SGLANG_SPEC_PREFIX_CACHE": "lose", "SIM_SGLANG_BUILD": "sglang-0.5.23"})
    emu.wait_ready()
    prompt = list(range(4000, 4064))
    generate(emu, prompt, max_new_tokens=8, ignore_eos=True)
    again = generate(emu, prompt, max_new_tokens=8, ignore_eos=True)["meta_info"]
    assert again["cached_tokens"] == (63 if hits else 0)
    assert ("#cached-token: 63," in emu.stdout()) == hits


# --------------------------------------------------------------------------------------------
# /metrics
# --------------------------------------------------------------------------------------------

METRICS_FIXTURE = REPO / "tests" / "fixtures" / "sglang-0.5.23" / "metrics" / "metrics.txt"


def scrape(emu):
    with urllib.request.urlopen(emu.base + "/metrics", timeout=DEADLINE_S) as resp:
        assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return resp.read().decode()


def test_metrics_is_404_without_enable_metrics(emulator):
    emu = emulator(env={"SIM_SGLANG_BUILD": "sglang-0.5.23"})
    emu.wait_ready()
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(emu.base + "/metrics", timeout=DEADLINE_S)
    assert caught.value.code == 404 and json.loads(caught.value.read()) == {"detail": "Not Found"}


def sample_values(text):
    """{(sample name, sorted label items): value} of exposition text, read line by line (no parser needed)."""
    values = {}
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        found = re.match(r'([^{ ]+)\{(.*)\} (\S+)$', line)
        assert found, line
        labels = tuple(sorted(re.findall(r'(\w+)="([^"]*)"', found.group(2))))
        values[(found.group(1), labels)] = float(found.group(3))
    return values


def counter(values, name, **labels):
    return sum(v for (sample, items), v in values.items() if sample == name and set(labels.items()) <= set(items))


def test_metrics_counters_grow_by_the_requests_tokens(dflash):
    prompt = list(range(6000, 6100))
    generate(dflash, prompt, max_new_tokens=8, ignore_eos=True)  # so the next one hits the cache
    before = sample_values(scrape(dflash))
    out = generate(dflash, prompt + [6100, 6101], max_new_tokens=24, ignore_eos=True)
    after = sample_values(scrape(dflash))
    meta = out["meta_info"]
    assert meta["cached_tokens"] > 0

    def grew(name, **labels):
        return counter(after, name, **labels) - counter(before, name, **labels)

    assert grew("sglang:prompt_tokens_total", is_streaming="false") == meta["prompt_tokens"] == 102
    assert grew("sglang:generation_tokens_total", is_streaming="false") == meta["completion_tokens"] == 24
    assert grew("sglang:cached_tokens_total", cache_source="total") == meta["cached_tokens"]
    assert grew("sglang:num_requests_total", is_streaming="false") == 1
    assert grew("sglang:spec_verify_calls_total") == meta["spec_verify_ct"]
    assert grew("sglang:time_to_first_token_seconds_count", is_streaming="false") == 1
    assert grew("sglang:time_to_first_token_seconds_bucket", is_streaming="false", le="+Inf") == 1
    assert grew("sglang:queue_time_seconds_count") == 1
    labels = dict(next(items for (sample, items) in after if sample == "sglang:token_usage"))
    assert labels == {"model_name": "Qwen/Qwen3.6-27B", "engine_type": "unified", "tp_rank": "0", "pp_rank": "0",
                      "moe_ep_rank": "0"}


def families(text):
    """{family name: (type, {sample name: label names})} as prometheus_client's parser reads the text."""
    parser = pytest.importorskip("prometheus_client.parser", reason="prometheus_client is not in .venv yet")
    found = {}
    for family in parser.text_string_to_metric_families(text):
        samples = {}
        for sample in family.samples:
            samples.setdefault(sample.name, set()).update(sample.labels)
        found[family.name] = (family.type, samples)
    return found


def test_metrics_parse_as_sglangs_with_the_same_families_types_and_labels(dflash):
    real = families(METRICS_FIXTURE.read_text())
    generate(dflash, list(range(6500, 6540)), max_new_tokens=8, ignore_eos=True)
    generate(dflash, list(range(6500, 6540)), max_new_tokens=8, ignore_eos=True)  # a cache hit: cached_tokens_total
    emulated = families(scrape(dflash))
    assert set(emulated) == set(real)
    for name, (kind, samples) in real.items():
        assert emulated[name][0] == kind, name
        assert emulated[name][1] == samples, name


def test_the_metrics_list_matches_the_fixture_written_by_prometheus_client():
    """Without prometheus_client: the fixture has exactly the families, types and help texts of the list."""
    spec = json.loads(METRICS_JSON.read_text())
    text = METRICS_FIXTURE.read_text()
    for metric in spec["metrics"]:
        assert "# HELP %s %s\n" % (metric["name"], metric["help"]) in text
        assert "# TYPE %s %s\n" % (metric["name"], metric["type"]) in text
    assert spec["source"]["path"] in {m["source"].split("@")[0] for m in spec["metrics"]}


def test_the_emulators_exposition_is_byte_for_byte_prometheus_clients():
    """The fixture's values, written by the emulator's own writer, give the text real prometheus_client wrote."""
    fixture = load_module("sglang_metrics_fixture", METRICS_FIXTURE.parent / "make_fixture.py")
    labels = {"TokenizerMetricsCollector": fixture.TOKENIZER_LABELS,
              "SchedulerMetricsCollector": fixture.SCHEDULER_LABELS}
    samples = {"sglang:" + name: rows for name, rows in fixture.SAMPLES.items()}
    spec = json.loads(METRICS_JSON.read_text())
    assert sim_server.exposition(spec, labels, samples) == METRICS_FIXTURE.read_text()


def test_the_metrics_list_is_read_beside_the_option_lists_else_from_the_checkout(monkeypatch, tmp_path):
    monkeypatch.setenv("SIM_SGLANG_OPTIONS_DIR", str(tmp_path))
    assert sim_server.metrics_spec("sglang-ddtree-pr29907")["build"] == "sglang-0.5.23"  # the checkout's copy
    (tmp_path / "sglang-ddtree-pr29907.metrics.json").write_text(json.dumps({"build": "ddtree", "metrics": []}))
    assert sim_server.metrics_spec("sglang-ddtree-pr29907")["build"] == "ddtree"
