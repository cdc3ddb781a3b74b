"""The emulated server: arguments, start-up, GPU claim, and SGLang's HTTP API.

Deliberate difference from SGLang: the HTTP port is bound at once and every route answers 503
while the model "loads" (SGLang binds only after loading, so a client sees "connection refused"
there instead). Either way a client waits for ``/health_generate`` to answer 200.

Requests follow SGLang 0.5.23's defaults (sglang/srt/sampling/sampling_params.py: temperature 1.0 at line 157,
ignore_eos False at 173; entrypoints/openai/protocol.py: CompletionRequest temperature 1.0 at 386, ignore_eos at
407, ChatCompletionRequest's default temperature 1.0 at 1063, ignore_eos at 1012, chat_template_kwargs
Optional[Dict] at 1020, return_spec_tokens_details at 393 and 961). Acceptance and where the model emits EOS
follow the prompt's content (``SimServer.plan``). Until this version the emulator ran every request to
max_new_tokens and ignored temperature: wrong against SGLang, whose default stops at EOS.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import queue
import signal
import socket
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import List, NamedTuple, Optional
from urllib.parse import parse_qs, urlsplit

from . import __version__
from . import _sim_gpu as gpu
from . import _sim_model as model
from ._sim_engine import Engine, GenRequest, answer_tokens, detokenize
from .srt import server_args

SPEC_NEEDS_DRAFT = ("DFLASH", "DDTREE", "EAGLE", "EAGLE3", "STANDALONE", "DSPARK")
# Whether a speculative server keeps its prefix-cache hits (see SimServer.spec_prefix_cache): SIM_SGLANG_SPEC_PREFIX_CACHE,
# else the first line of this file (the simulated host's setting, as /etc/sim-sglang/build), else "keep".
SPEC_PREFIX_CACHE_FILE = "/etc/sim-sglang/spec-prefix-cache"
SPEC_PREFIX_CACHE_MODES = ("keep", "lose")
# The answers file (test-only, see Answers): SIM_SGLANG_ANSWERS (a path, or "none"), else this file where it exists.
ANSWERS_FILE = "/etc/sim-sglang/answers.json"
# The lossy fault (SIM_SGLANG_FAULT=lossy): the output position from which a speculative server's tokens differ.
DEFAULT_LOSSY_AFTER = 16
DEFAULT_MAX_NEW_TOKENS = 128
HEALTH_CHECK_TIMEOUT = float(os.environ.get("SGLANG_HEALTH_CHECK_TIMEOUT", "20"))


class StartupError(Exception):
    """A start-up failure: logged as SGLang would, then the process exits 1."""

    def __init__(self, lines: List[str]):
        super().__init__(lines[-1])
        self.lines = lines


# ---------------------------------------------------------------------------------------------
# Arguments


def build_parser() -> argparse.ArgumentParser:
    """SGLang's own server parser for the host's build (sglang.srt.server_args): strict, as SGLang is."""
    return server_args.make_parser()


# What the emulator reads that a build may not have as an option (DDTree's flags exist in DDTree builds only).
_OPTIONAL_KEYS = ("speculative_ddtree_budget", "speculative_ddtree_topk", "speculative_dflash_enable_ddtree")


def _env_float(name: str, default: Optional[float]) -> Optional[float]:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        return float(value)
    except ValueError:
        return default


def _read_json(path: str) -> Optional[dict]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


def spec_prefix_cache_mode() -> str:
    """keep | lose: SIM_SGLANG_SPEC_PREFIX_CACHE, else SPEC_PREFIX_CACHE_FILE's first line, else keep. Anything else is
    refused at start (ValueError), as a typo must not silently keep the hits."""
    value = os.environ.get("SIM_SGLANG_SPEC_PREFIX_CACHE", "").strip().lower()
    origin = "SIM_SGLANG_SPEC_PREFIX_CACHE"
    if not value:
        origin = SPEC_PREFIX_CACHE_FILE
        try:
            with open(SPEC_PREFIX_CACHE_FILE, encoding="utf-8") as handle:
                value = handle.readline().strip().lower()
        except OSError:
            value = ""
    value = value or "keep"
    if value not in SPEC_PREFIX_CACHE_MODES:
        raise ValueError("%s is %r; it must be keep or lose" % (origin, value))
    return value


class Answers:
    """The answers file: what the emulated model answers to the prompts it knows. TEST-ONLY figures, no model's.

    {"note": str, "accuracy": {"default": p, "<method>": p, ...}, "answers": [{"needle": str, "right": str,
    "wrong": str}, ...]} (tests/sim/answers/make_answers.py writes the demo prompts' one). A text prompt that contains
    a needle (the longest that matches) gets an output that begins with that entry's right text with probability
    accuracy[method] (method: ``method_key``; "default" for a method not named, 1.0 without one), else with its wrong
    text. The draw is ``answer_uniform``: from the needle alone at temperature 0, so methods of the same accuracy
    answer the same tokens (lossless); from the needle and the request's seed when sampling."""

    def __init__(self, data, origin: str = "answers"):
        """Checks ``data`` (the file's JSON); ValueError naming ``origin`` and the field."""
        if not isinstance(data, dict) or not isinstance(data.get("answers"), list):
            raise ValueError('%s: expected {"note", "accuracy", "answers": [...]}' % origin)
        accuracy = data.get("accuracy", {})
        if not isinstance(accuracy, dict):
            raise ValueError("%s: accuracy must be an object of method: probability" % origin)
        for method, value in accuracy.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
                raise ValueError("%s: accuracy.%s is %r; it must be a number from 0 to 1" % (origin, method, value))
        self.accuracy = {str(method).lower(): float(value) for method, value in accuracy.items()}
        entries = []
        for i, entry in enumerate(data["answers"]):
            fields = [entry.get(key) if isinstance(entry, dict) else None for key in ("needle", "right", "wrong")]
            if not all(isinstance(value, str) for value in fields) or not fields[0]:
                raise ValueError("%s: answers[%d] must have a non-empty needle and a right and a wrong text" % (origin, i))
            try:
                "".join(fields).encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError("%s: answers[%d] holds a lone surrogate, which is not UTF-8" % (origin, i))
            entries.append((fields[0], answer_tokens(fields[1]), answer_tokens(fields[2])))
        # the longest needle first: a prompt that holds two takes the longer (the more specific) one
        self.entries = sorted(entries, key=lambda entry: -len(entry[0]))

    def find(self, text: Optional[str]):
        """(needle, right ids, wrong ids) of the longest needle in ``text``, or None."""
        if not text:
            return None
        for entry in self.entries:
            if entry[0] in text:
                return entry
        return None

    def accuracy_of(self, method: str) -> float:
        """The probability of the right answer for a method (method_key): its own, else "default", else 1.0."""
        return self.accuracy.get(method_key(method), self.accuracy.get("default", 1.0))


def method_key(method: str) -> str:
    """The method's name in the answers file: "autoregressive" for none, else the emulator's method lower-cased
    (dflash, ddtree, eagle3, ...)."""
    return "autoregressive" if method == model.AUTOREGRESSIVE else method.lower()


def answer_uniform(needle: str, seed: Optional[int] = None) -> float:
    """A uniform draw in [0, 1) from the needle alone (seed None: greedy decoding) or from the needle and a seed."""
    parts = ("answer", needle) if seed is None else ("answer", needle, seed)
    return model.request_seed(*parts) / float(1 << 64)


def load_answers() -> Optional[Answers]:
    """The answers file: SIM_SGLANG_ANSWERS (a path; "none": no answers), else ANSWERS_FILE where it exists, else None.
    A file named that cannot be read, or one that is not as Answers documents, is refused (ValueError): a broken file
    must not silently answer nothing."""
    value = os.environ.get("SIM_SGLANG_ANSWERS", "").strip()
    if value.lower() == "none":
        return None
    path = value or ANSWERS_FILE
    if not value and not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        raise ValueError("answers file %s: %s" % (path, exc))
    return Answers(data, path)


def lossy_after_setting() -> int:
    """SIM_SGLANG_LOSSY_AFTER (default DEFAULT_LOSSY_AFTER): a whole number from 0 on, else ValueError."""
    value = os.environ.get("SIM_SGLANG_LOSSY_AFTER", "").strip()
    if not value:
        return DEFAULT_LOSSY_AFTER
    if not value.isdigit():
        raise ValueError("SIM_SGLANG_LOSSY_AFTER is %r; it must be a whole number from 0" % value)
    return int(value)


class Plan(NamedTuple):
    """What a request's content makes of it (SimServer.plan): its mean accepted tokens per verify step (None: the
    workload's), the output length at which it emits EOS (None: never), the answers file's entry its prompt holds
    (None: none) and its temperature."""

    tau: Optional[float] = None
    eos_at: Optional[int] = None
    answer: Optional[tuple] = None
    temperature: float = 1.0


# Where the collection keeps the metrics lists, when the emulator runs from a checkout (tests outside the sim image,
# whose option folders hold only the option lists).
CHECKOUT_BUILDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "plugins",
                               "plugin_utils", "sglang_builds")


def metrics_spec(build: str) -> Optional[dict]:
    """The build's /metrics list (<build>.metrics.json beside its option list, else the release's, sglang-0.5.23; in a
    checkout, the collection's own copy when the option folder has none): what
    plugins/plugin_utils/sglang_builds/sglang-<version>.metrics.json took from SGLang's metrics collector."""
    folders = (os.environ.get("SIM_SGLANG_OPTIONS_DIR", server_args.OPTIONS_DIR), CHECKOUT_BUILDS)
    for folder in folders:
        for name in (build, "sglang-" + __version__.split("+", maxsplit=1)[0]):
            spec = _read_json(os.path.join(folder, name + ".metrics.json"))
            if spec and isinstance(spec.get("metrics"), list):
                return spec
    return None


def go_float(value) -> str:
    """A sample value as prometheus_client writes it (utils.floatToGoString): Python's repr of the float, with Go's
    earlier switch to an exponent for large numbers."""
    value = float(value)
    if value == math.inf:
        return "+Inf"
    if value == -math.inf:
        return "-Inf"
    if math.isnan(value):
        return "NaN"
    text = repr(value)
    dot = text.find(".")
    if value > 0 and dot > 6:
        mantissa = ("%s.%s%s" % (text[0], text[1:dot], text[dot + 1:])).rstrip("0.")
        return "%se+0%d" % (mantissa, dot - 1)
    return text


def exposition(spec: dict, labels: dict, samples: dict) -> str:
    """Prometheus text format 0.0.4 as SGLang's /metrics writes it (prometheus_client's MultiProcessCollector, then
    generate_latest): counters, then histograms, then gauges, each family with # HELP and # TYPE, label names in
    sorted order, histograms as _sum, _bucket (le ascending, +Inf last) and _count, no _created series. ``labels``:
    collector name -> its label values; ``samples``: metric name -> [(extra labels, value)] (a histogram's value:
    its observations). A family with no sample is left out, as prometheus_client leaves out a labelled metric never
    set."""
    def escape(value) -> str:
        return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')

    def label_text(values: dict) -> str:
        return ",".join('%s="%s"' % (key, escape(values[key])) for key in sorted(values))

    lines = []
    for kind in ("counter", "histogram", "gauge"):
        for metric in spec["metrics"]:
            name = metric["name"]
            rows = samples.get(name)
            if metric.get("type") != kind or not rows:
                continue
            lines.append("# HELP %s %s" % (name, metric["help"].replace("\\", "\\\\").replace("\n", "\\n")))
            lines.append("# TYPE %s %s" % (name, kind))
            base = labels.get(metric.get("collector"), {})
            for extra, value in rows:
                values = dict(base, **extra)
                if kind != "histogram":
                    lines.append("%s{%s} %s" % (name, label_text(values), go_float(value)))
                    continue
                lines.append("%s_sum{%s} %s" % (name, label_text(values), go_float(sum(value))))
                bounds = [float(b) for b in metric.get("buckets") or []] + [math.inf]
                for bound in bounds:
                    count = sum(1 for v in value if v <= bound)
                    bucket_labels = label_text(dict(values, le=go_float(bound)))
                    lines.append("%s_bucket{%s} %s" % (name, bucket_labels, go_float(count)))
                lines.append("%s_count{%s} %s" % (name, label_text(values), go_float(len(value))))
    return "\n".join(lines) + "\n"


def weights_bytes(path: Optional[str]) -> Optional[float]:
    """Weights size from the checkpoint's safetensors index, as a real loader would see it."""
    if not path:
        return None
    index = _read_json(os.path.join(path, "model.safetensors.index.json")) or {}
    total = (index.get("metadata") or {}).get("total_size")
    try:
        return float(total) if total else None
    except (TypeError, ValueError):
        return None


def draft_quality(path: Optional[str]):
    """(quality, step) of a draft checkpoint from its config.json's ``specdec_sim`` (what the simulated trainer
    writes), or (None, None) when there is none: a hub id, a folder without a readable config.json, or a config
    without ``specdec_sim`` (the demo drafts) - a fully trained draft. A ``specdec_sim`` that is not an object, or a
    quality that is not a number from 0 to 1, is a broken config: StartupError, as a real loader fails on one."""
    config_path = os.path.join(os.path.expanduser(path), "config.json") if path else None
    config = _read_json(config_path) if config_path and os.path.isfile(config_path) else None
    if not config or "specdec_sim" not in config:
        return None, None
    sim = config["specdec_sim"]
    quality = sim.get("quality", 1.0) if isinstance(sim, dict) else None
    problem = None
    if not isinstance(sim, dict):
        problem = "specdec_sim must be an object with a quality from 0 to 1, got %s" % json.dumps(sim)
    elif isinstance(quality, bool) or not isinstance(quality, (int, float)) or not 0.0 <= quality <= 1.0:
        problem = "specdec_sim.quality must be a number from 0 to 1, got %s" % json.dumps(quality)
    if problem:
        raise StartupError(_traceback(
            "ValueError: Invalid draft model config %s: %s" % (config_path, problem), "get_config",
            note="--speculative-draft-model-path %s: fix or remove specdec_sim in its config.json." % path))
    step = sim.get("step")
    return float(quality), (step if isinstance(step, int) and not isinstance(step, bool) else None)


def resolve(ns: argparse.Namespace) -> dict:
    """The server arguments with SGLang's defaults resolved (what /server_info reports)."""
    args = dict(vars(ns))
    for key in _OPTIONAL_KEYS:
        args.setdefault(key, None)
    args["tokenizer_path"] = args["tokenizer_path"] or args["model_path"]
    args["served_model_name"] = args["served_model_name"] or args["model_path"]
    if args["mem_fraction_static"] is None:
        args["mem_fraction_static"] = 0.88
    if args["chunked_prefill_size"] is None:
        args["chunked_prefill_size"] = 8192
    if args["random_seed"] is None:
        args["random_seed"] = 0
    algo = args["speculative_algorithm"]
    if algo is not None and algo.strip().upper() in ("", "NONE", "NULL"):
        algo = None
    args["speculative_algorithm"] = algo.upper() if algo else None
    method = model.normalize_method(algo, args["speculative_dflash_enable_ddtree"])
    if method in ("DFLASH", "DDTREE"):
        block = args["speculative_dflash_block_size"] or args["speculative_num_draft_tokens"] or 16
        args["speculative_num_draft_tokens"] = block
        args["speculative_dflash_block_size"] = block
        args["speculative_num_steps"] = args["speculative_num_steps"] or block - 1
        args["speculative_eagle_topk"] = args["speculative_eagle_topk"] or 1
    elif method in ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE"):
        args["speculative_num_steps"] = args["speculative_num_steps"] or 3
        args["speculative_eagle_topk"] = args["speculative_eagle_topk"] or 1
        args["speculative_num_draft_tokens"] = (
            args["speculative_num_draft_tokens"] or args["speculative_num_steps"] + 1)
    elif method != model.AUTOREGRESSIVE:
        args["speculative_num_draft_tokens"] = args["speculative_num_draft_tokens"] or 8
    if method == "DDTREE":
        args["speculative_ddtree_budget"] = args["speculative_ddtree_budget"] or 64
        env_topk = os.environ.get("SGLANG_DDTREE_MAX_TOPK", "").strip()
        args["speculative_ddtree_topk"] = args["speculative_ddtree_topk"] or (int(env_topk) if env_topk.isdigit() else 4)
    if args["page_size"] is None:
        args["page_size"] = 1
    args["device"] = "cuda"
    return args


# ---------------------------------------------------------------------------------------------
# Logging: SGLang's "[date time TP0] message" lines and uvicorn's "INFO:     ..." lines, on stdout


class Log:
    def __init__(self, level: str = "info"):
        self.lock = threading.Lock()
        self.quiet = level.lower() in ("warning", "error", "critical")

    def _write(self, line: str) -> None:
        with self.lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    def __call__(self, message: str, rank: Optional[str] = None, warning: bool = False) -> None:
        if self.quiet and not warning:
            return
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        prefix = "[%s %s]" % (stamp, rank) if rank else "[%s]" % stamp
        for i, line in enumerate(message.splitlines() or [""]):
            self._write("%s %s" % (prefix, line) if i == 0 else line)

    def error(self, message: str, rank: Optional[str] = None) -> None:
        self(message, rank, warning=True)

    def uvicorn(self, message: str, level: str = "INFO") -> None:
        if self.quiet and level == "INFO":
            return
        self._write("%s %s" % ((level + ":").ljust(9), message))


# ---------------------------------------------------------------------------------------------
# The server's state


class SimServer:
    def __init__(self, args: dict, log: Log):
        self.args = args
        self.log = log
        self.state = "loading"  # loading -> ready -> shutting_down
        self.startup_time = time.time()
        self.engines: List[Engine] = []
        self.rr = itertools.count()
        self.gen_count = 0
        self.gen_lock = threading.Lock()
        self.fault = os.environ.get("SIM_SGLANG_FAULT", "").strip().lower()
        self.crash_after = int(_env_float("SIM_SGLANG_CRASH_AFTER", 3) or 0)
        self.time_scale = _env_float("SIM_SGLANG_TIME_SCALE", 1.0) or 0.0
        self.step_seconds = _env_float("SIM_SGLANG_STEP_SECONDS", None)
        self.stop = threading.Event()
        self.claimed = False
        self.claim_mib = 0
        self.claim_gpus: Optional[List[str]] = None
        self.busy_lock = threading.Lock()
        self.busy_ranks = set()
        self.method = model.normalize_method(args["speculative_algorithm"], args["speculative_dflash_enable_ddtree"])
        self.spec = self.method != model.AUTOREGRESSIVE
        self.context_len = args["context_length"] or 131072
        self.max_total_num_tokens = 0
        self.workload: Optional[model.Workload] = None
        self.draft_quality = 1.0  # the draft checkpoint's specdec_sim.quality (1.0: none, a fully trained draft)
        self.draft_step: Optional[int] = None
        self.hardware: Optional[model.Hardware] = None
        self.weight_version = "default"
        self.eos_id = eos_token_id(args["model_path"])
        self.spec_prefix_cache = "keep"  # read at load (spec_prefix_cache_mode)
        self.answers: Optional[Answers] = None  # read at load (load_answers)
        self.lossy_after: Optional[int] = None  # the lossy fault's position, on a speculative server only
        self.metrics = metrics_spec(server_args.build_name()) if args.get("enable_metrics") else None

    # ---- what a request's content makes of it ------------------------------------------------

    def plan(self, content, temperature, ignore_eos: bool) -> Plan:
        """The Plan of a request: its acceptance and where it stops follow its content, deterministically, and so
        does the answer it begins with (the answers file's entry whose needle the text holds).

        ``content`` is the prompt as the server sees it (text, or token ids: those read as chat, having no words);
        ``temperature`` as SGLang's sampling params take it (default 1.0); ``ignore_eos`` as SGLang's (default
        False): with it the request runs to max_new_tokens, as before."""
        text = content if isinstance(content, str) else None
        category = model.content_category(text)
        content_seed = model.request_seed("content", content)
        tau = model.request_tau(self.workload, category, temperature, content_seed) if self.spec else None
        eos_at = None if ignore_eos else model.eos_position(category, content_seed)
        answer = self.answers.find(text) if self.answers is not None else None
        return Plan(tau, eos_at, answer, temperature)

    def output_plan(self, plan: Plan, seed: int):
        """(answer ids, eos_at, lossy_after) of one request of a plan with its seed: the right or the wrong answer
        (Answers), the EOS no earlier than just after the answer (the model stops once it has answered, not
        within), and the lossy fault's position for a speculative server at temperature 0 (else None)."""
        answer_ids, eos_at = None, plan.eos_at
        if plan.answer is not None:
            needle, right, wrong = plan.answer
            draw = answer_uniform(needle, None if plan.temperature <= 0 else seed)
            answer_ids = right if draw < self.answers.accuracy_of(self.method) else wrong
            if eos_at is not None:
                eos_at = max(eos_at, len(answer_ids) + 1)
        lossy = self.lossy_after if plan.temperature <= 0 else None
        return answer_ids, eos_at, lossy

    # ---- start-up ---------------------------------------------------------------------------

    def server_args_repr(self) -> str:
        return "ServerArgs(%s)" % ", ".join("%s=%r" % (k, v) for k, v in self.args.items())

    def wait(self, seconds: float) -> None:
        """Sleep through a loading phase; a stop request (SIGTERM) cuts it short."""
        if self.stop.wait(max(0.0, seconds)):
            raise SystemExit(0)

    def load(self) -> None:
        """Everything SGLang does between start and ready, with its log lines and failures."""
        args, log = self.args, self.log
        load_seconds = max(0.0, _env_float("SIM_SGLANG_LOAD_SECONDS", 2.0) or 0.0)
        tp, dp = max(1, args["tp_size"]), max(1, args["dp_size"])
        layout = gpu.load_layout()
        visible = gpu.visible_gpus(layout, os.environ.get("CUDA_VISIBLE_DEVICES"))
        needed = tp * dp * max(1, args["pp_size"])
        self._check_model_paths()
        self._read_draft_quality()
        try:
            self.spec_prefix_cache = spec_prefix_cache_mode()
            self.answers = load_answers()
            lossy_after = lossy_after_setting() if self.fault == "lossy" else None
        except ValueError as exc:
            raise StartupError(["ValueError: [sglang emulator] %s" % exc])
        if self.answers is not None:
            log("[sglang emulator] answers file (test-only): %d answers, accuracy of %s %.4g"
                % (len(self.answers.entries), method_key(self.method), self.answers.accuracy_of(self.method)), "TP0")
        if lossy_after is not None and self.spec:
            self.lossy_after = lossy_after
            log("[sglang emulator] fault lossy: at temperature 0 every output token from position %d on differs "
                "from the target model's" % lossy_after, "TP0")
        elif lossy_after is not None:
            log("[sglang emulator] fault lossy ignored: an autoregressive server decodes the target model's own "
                "tokens", "TP0")
        if args.get("enable_metrics") and self.metrics is None:
            raise StartupError(["FileNotFoundError: [sglang emulator] no <build>.metrics.json in %s for --enable-metrics"
                                % os.environ.get("SIM_SGLANG_OPTIONS_DIR", server_args.OPTIONS_DIR)])
        self.wait(load_seconds * 0.05)
        if visible is not None and len(visible) < needed + args["base_gpu_id"]:
            raise StartupError(_traceback(
                "torch.AcceleratorError: CUDA error: invalid device ordinal",
                "init_torch_distributed",
                note="tp_size=%d x dp_size=%d needs %d GPUs but CUDA_VISIBLE_DEVICES=%r exposes %d."
                % (tp, dp, needed, os.environ.get("CUDA_VISIBLE_DEVICES"), len(visible))))
        gpus = (visible or [])[args["base_gpu_id"]:args["base_gpu_id"] + needed]
        total_mib = min((g.memory_total_mib for g in gpus), default=gpu.DEFAULT_MEMORY_TOTAL_MIB)
        gpu_name = gpus[0].name if gpus else None

        for rank in range(tp):
            log("Init torch distributed begin.", "TP%d" % rank)
        self.wait(load_seconds * 0.05)
        log("Init torch distributed ends. mem usage=0.50 GB", "TP0")

        model_bytes = (_env_float("SIM_SGLANG_MODEL_BYTES", None) or weights_bytes(args["model_path"])
                       or model.guess_model_bytes(args["model_path"]))
        draft_bytes = 0.0
        if self.spec:
            draft_bytes = (_env_float("SIM_SGLANG_DRAFT_BYTES", None)
                           or weights_bytes(args["speculative_draft_model_path"])
                           or max(1e9, 0.08 * model_bytes))
        weights_mib = (model_bytes + draft_bytes) / tp / 2 ** 20
        reported = gpu.free_mib_excluding(os.getpid()) if (
            layout is not None and os.environ.get("SIM_SGLANG_CHECK_MEMORY", "1") != "0") else None
        frees = [reported.get(g.uuid, g.memory_total_mib - g.memory_reserved_mib) if reported
                 else g.memory_total_mib - g.memory_reserved_mib for g in gpus]
        free_mib = min(frees, default=total_mib)
        if len(frees) > 1 and free_mib < max(frees) * 0.9:
            raise StartupError(_traceback(
                "ValueError: The memory capacity is unbalanced. Some GPUs may be occupied by other processes. "
                "min_per_gpu_memory=%.3f, local_gpu_memory=%.3f, local_gpu_memory * 0.9=%.3f"
                % (free_mib / 1024, max(frees) / 1024, max(frees) * 0.9 / 1024), "init_torch_distributed"))
        self.claim_gpus = [g.uuid or str(g.index) for g in gpus] or None
        avail_gb = free_mib / 1024
        log("Load weight begin. avail mem=%.2f GB" % avail_gb, "TP0")

        if self.fault == "never_ready":
            while True:
                self.wait(3600)
        if self.fault == "fail_start":
            self.wait(load_seconds * 0.3)
            raise StartupError(_oom_traceback(total_mib, free_mib, min(weights_mib * 0.4, free_mib)))
        if weights_mib + 512 > free_mib:
            self.wait(load_seconds * 0.3)
            raise StartupError(_oom_traceback(total_mib, free_mib, max(0.0, free_mib - 120.0)))
        self.wait(load_seconds * 0.5)
        log("Load weight end. type=%s, dtype=torch.bfloat16, avail mem=%.2f GB, mem usage=%.2f GB."
            % (_architecture(args["model_path"]), avail_gb - weights_mib / 1024, weights_mib / 1024), "TP0")

        frac = args["mem_fraction_static"]
        # SGLang sizes the KV pool after the target's weights, before the draft model loads.
        rest_mib = free_mib - model_bytes / tp / 2 ** 20 - total_mib * (1 - frac)
        if rest_mib <= 0:
            raise StartupError(_traceback(
                "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
                "Current value: mem_fraction_static=%s" % frac, "init_memory_pool",
                note="%.0f MiB of %d MiB free, %.0f MiB of weights per GPU." % (free_mib, total_mib, weights_mib)))
        kv_bytes_per_token = _env_float("SIM_SGLANG_KV_BYTES_PER_TOKEN", 64 * 1024)
        self.max_total_num_tokens = args["max_total_tokens"] or int(rest_mib * 2 ** 20 / (kv_bytes_per_token / tp))
        log("KV Cache is allocated. #tokens: %d, K size: %.2f GB, V size: %.2f GB"
            % (self.max_total_num_tokens, rest_mib / 2048, rest_mib / 2048), "TP0")
        log("Memory pool end. avail mem=%.2f GB" % ((free_mib - weights_mib - rest_mib) / 1024), "TP0")

        self.claim_mib = int(_env_float("SIM_GPU_MEMORY_MIB", None) or round(frac * total_mib))
        gpu.write_claim(self.claim_mib, self.claim_gpus, utilization_pct=0)
        self.claimed = True
        spare_gb = max(0.0, (free_mib - self.claim_mib) / 1024)

        self.hardware = model.hardware_for(
            gpu_name,
            hbm_gbps=_env_float("SIM_SGLANG_HBM_GBPS", None),
            peak_tflops=_env_float("SIM_SGLANG_TFLOPS", None),
            comm_ms_per_doubling=_env_float("SIM_SGLANG_COMM_MS", None),
        )
        self.workload = model.Workload(
            model_bytes=model_bytes,
            draft_bytes=draft_bytes or 4e9,
            tp=tp,
            method=self.method,
            num_draft_tokens=args["speculative_num_draft_tokens"] or 1,
            ddtree_budget=args["speculative_ddtree_budget"] or 64,
            ddtree_topk=args["speculative_ddtree_topk"] or 4,
            alpha=_env_float("SIM_SGLANG_ACCEPT_ALPHA", 0.72),
            draft_quality=self.draft_quality,
            kv_bytes_per_token=kv_bytes_per_token,
            cuda_graph=not args["disable_cuda_graph"],
        )
        if not args["disable_cuda_graph"]:
            log("Capture cuda graph begin. This can take up to several minutes. avail mem=%.2f GB"
                % spare_gb, "TP0")
            self.wait(load_seconds * 0.3)
            log("Capture cuda graph end. Time elapsed: %.2f s. mem usage=0.80 GB. avail mem=%.2f GB."
                % (load_seconds * 0.3, max(0.0, spare_gb - 0.8)), "TP0")
        else:
            self.wait(load_seconds * 0.3)
        if self.method == "DDTREE" and args["page_size"] != 1:
            log("DDTree tree verification expects --page-size 1 (got %d)." % args["page_size"], "TP0", warning=True)

        max_running = args["max_running_requests"] or min(
            max(int(self.max_total_num_tokens / self.context_len * 512), 2048), 4096)
        log("max_total_num_tokens=%d, chunked_prefill_size=%d, max_prefill_tokens=%d, max_running_requests=%d, "
            "context_len=%d, available_gpu_mem=%.2f GB"
            % (self.max_total_num_tokens, args["chunked_prefill_size"], args["max_prefill_tokens"], max_running,
               self.context_len, spare_gb), "TP0")
        self.args["max_running_requests"] = max_running
        lose = self.spec and self.spec_prefix_cache == "lose"
        if lose:
            log("[sglang emulator] speculative decoding loses the prefix cache's hits on this host (spec-prefix-cache "
                "lose, as reported for hybrid Mamba/attention targets): every prefill computes the whole prompt", "TP0")
        for rank in range(dp):
            engine = Engine(self.hardware, self.workload, self._engine_log(rank, dp), self.time_scale,
                            max_running_requests=max_running,
                            chunked_prefill_size=args["chunked_prefill_size"],
                            decode_log_interval=args["decode_log_interval"],
                            max_total_num_tokens=self.max_total_num_tokens, dp_rank=rank,
                            on_crash=self.crash, on_busy=self.set_busy, step_seconds=self.step_seconds,
                            prefix_cache=not (lose or args.get("disable_radix_cache")))
            engine.start()
            self.engines.append(engine)

    def _engine_log(self, rank: int, dp: int):
        label = "DP%d TP0" % rank if dp > 1 else "TP0"

        def log(message: str, warning: bool = False) -> None:
            self.log(message, label, warning=warning)

        return log

    def _check_model_paths(self) -> None:
        args = self.args
        for flag, path in (("--model-path", args["model_path"]),
                           ("--speculative-draft-model-path", args["speculative_draft_model_path"])):
            # An absolute or relative path must exist; a hub id (org/name) is taken as downloadable.
            if path and (path.startswith(("/", "./", "../", "~"))) and not os.path.isdir(os.path.expanduser(path)):
                raise StartupError(_traceback(
                    "OSError: %s is not a local folder and is not a valid model identifier listed on "
                    "'https://huggingface.co/models'" % path, "get_config",
                    note="%s %s does not exist." % (flag, path)))
        if self.spec and self.method in SPEC_NEEDS_DRAFT and not args["speculative_draft_model_path"]:
            raise StartupError(_traceback(
                "ValueError: speculative_draft_model_path is required for speculative_algorithm=%s"
                % args["speculative_algorithm"], "resolve_speculative"))
        config = _read_json(os.path.join(args["model_path"], "config.json")) or {}
        derived = config.get("max_position_embeddings") or (config.get("text_config") or {}).get("max_position_embeddings")
        if derived and args["context_length"] and args["context_length"] > derived and \
                os.environ.get("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "") not in ("1", "true", "True"):
            raise StartupError(_traceback(
                "ValueError: User-specified context_length (%d) is greater than the derived context_length (%d). "
                "This may lead to incorrect model outputs or CUDA errors. To allow overriding this maximum, "
                "set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"
                % (args["context_length"], derived), "get_context_length"))
        if not args["context_length"] and derived:
            self.context_len = int(derived)

    def _read_draft_quality(self) -> None:
        """The draft's quality from its config.json (the simulated trainer's checkpoints carry one): its acceptance."""
        if not self.spec or not self.args["speculative_draft_model_path"]:
            return
        quality, step = draft_quality(self.args["speculative_draft_model_path"])
        if quality is None:
            return
        self.draft_quality, self.draft_step = quality, step
        self.log("[sglang emulator] draft %s: specdec_sim quality %.4g%s, its acceptance follows it"
                 % (self.args["speculative_draft_model_path"], quality,
                    "" if step is None else " (training step %d)" % step), "TP0")

    def warmup(self) -> None:
        """SGLang's own warm-up request, then "ready"."""
        self.log.uvicorn("Started server process [%d]" % os.getpid())
        self.log.uvicorn("Waiting for application startup.")
        self.log.uvicorn("Application startup complete.")
        self.log.uvicorn("Uvicorn running on http://%s:%d (Press CTRL+C to quit)" % (
            _url_host(self.args["host"]), self.args["port"]))
        for engine in self.engines:
            if not self.run_probe(engine, max_new_tokens=8):
                raise StartupError(["Initialization failed. warmup error: timed out"])
        self.log.uvicorn('127.0.0.1:%d - "POST /generate HTTP/1.1" 200 OK' % (40000 + os.getpid() % 20000))
        self.state = "ready"
        self.log("The server is fired up and ready to roll!")

    def run_probe(self, engine: Engine, max_new_tokens: int = 1) -> bool:
        sink: "queue.Queue" = queue.Queue()
        req = GenRequest("HEALTH_CHECK_%s" % uuid.uuid4().hex, 1, max_new_tokens, 0, self.workload, sink,
                         internal=True)
        engine.submit(req)
        deadline = time.monotonic() + HEALTH_CHECK_TIMEOUT
        while True:
            try:
                if sink.get(timeout=max(0.01, deadline - time.monotonic()))[3]:
                    return True
            except queue.Empty:
                engine.abort(req)
                return False

    # ---- faults and shutdown ----------------------------------------------------------------

    def crash(self) -> None:
        self.log.error(
            "Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "%s/srt/managers/scheduler.py", line 3121, in run_scheduler_process\n'
            "    scheduler.event_loop_overlap()\n"
            '  File "%s/srt/managers/scheduler.py", line 1217, in event_loop_overlap\n'
            "    batch_result = self.run_batch(batch)\n"
            "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
            "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
            "below might be incorrect." % (_pkg_dir(), _pkg_dir()), "TP0")
        self.log.error("Received sigquit from a child process. It usually means the child failed.")
        os._exit(1)

    def set_busy(self, dp_rank: int, busy: bool) -> None:
        """Show the GPUs busy in nvidia-smi while any rank computes (rewrites the claim)."""
        with self.busy_lock:
            if busy:
                self.busy_ranks.add(dp_rank)
            else:
                self.busy_ranks.discard(dp_rank)
            if self.claimed and self.state != "shutting_down":
                gpu.write_claim(self.claim_mib, self.claim_gpus, utilization_pct=97 if self.busy_ranks else 0)

    def note_generate(self) -> bool:
        """Count a client generate request; True when it is the one the crash fault kills."""
        with self.gen_lock:
            self.gen_count += 1
            return self.fault == "crash" and self.gen_count == self.crash_after + 1

    def pick_engine(self) -> Engine:
        if self.args["load_balance_method"] == "shortest_queue":
            return min(self.engines, key=lambda e: e.load())
        return self.engines[next(self.rr) % len(self.engines)]

    def shutdown_cleanup(self) -> None:
        with self.busy_lock:
            if self.claimed:
                gpu.remove_claim()
                self.claimed = False

    # ---- what the endpoints report ----------------------------------------------------------

    def internal_states(self) -> List[dict]:
        states = []
        for engine in self.engines:
            state = dict(self.args)
            state.update({
                "world_size": self.args["tp_size"],
                "startup_time": self.startup_time,
                "effective_max_running_requests_per_dp": engine.max_running_requests,
                "last_gen_throughput": engine.stats.last_gen_throughput,
                "memory_usage": {
                    "weight": round((self.workload.model_bytes + (self.workload.draft_bytes if self.spec else 0))
                                    / self.args["tp_size"] / 2 ** 30, 2),
                    "kv_cache": round(self.max_total_num_tokens * self.workload.kv_bytes_per_token
                                      / self.args["tp_size"] / 2 ** 30, 2),
                    "token_capacity": self.max_total_num_tokens,
                },
            })
            accept = engine.avg_spec_accept_length()
            if accept is not None:
                state["avg_spec_accept_length"] = accept
            states.append(state)
        return states

    def server_info(self) -> dict:
        info = dict(self.args)
        info.update({
            "launch_command": " ".join(["python3", "-m", "sglang.launch_server"] + sys.argv[1:]),
            "max_total_num_tokens": self.max_total_num_tokens,
            "max_req_input_len": self.context_len - 1,
            "status": "ready",
            "startup_time": self.startup_time,
            "internal_states": self.internal_states(),
            "version": __version__,
            "frontend": "python",
        })
        if self.spec:
            # not SGLang's: the share of a fully trained draft's gain this one keeps (its config's specdec_sim)
            info["sim_draft_quality"] = self.draft_quality
            info["sim_draft_step"] = self.draft_step
        return info

    def model_info(self) -> dict:
        return {
            "model_path": self.args["model_path"],
            "served_model_name": self.args["served_model_name"],
            "tokenizer_path": self.args["tokenizer_path"],
            "is_generation": True,
            "preferred_sampling_params": None,
            "weight_version": self.weight_version,
            "load_format": self.args["load_format"],
            "reasoning_parser": None,
            "tool_call_parser": None,
            "disaggregation_mode": "null",
            "has_image_understanding": False,
            "has_audio_understanding": False,
            "model_type": None,
            "architectures": [_architecture(self.args["model_path"])],
        }

    def metrics_text(self) -> str:
        """/metrics with --enable-metrics: the families of the build's metrics list, from the engines' counters (summed
        over DP ranks, as one series per family), in prometheus_client's exposition format."""
        engine_type = "unified"  # DisaggregationMode.to_engine_type outside PD disaggregation
        tokenizer = {"model_name": self.args["served_model_name"], "engine_type": engine_type}
        scheduler = dict(tokenizer, tp_rank=0, pp_rank=0, moe_ep_rank=0)
        labels = {"TokenizerMetricsCollector": tokenizer, "SchedulerMetricsCollector": scheduler}
        ranks = []
        for engine in self.engines:
            with engine.cond:
                stats = engine.stats
                ranks.append({
                    "running": len(engine.running), "queued": len(engine.waiting),
                    "used": sum(r.prompt_tokens + r.completion_tokens for r in engine.running),
                    "prompt": dict(stats.prompt_tokens_total), "generation": dict(stats.generation_tokens_total),
                    "requests": dict(stats.num_requests_total), "cached": stats.cached_tokens_total,
                    "verify": stats.spec_verify_calls_total, "hit_rate": stats.last_cache_hit_rate,
                    "ttft": {k: list(v) for k, v in stats.time_to_first_token.items()},
                    "e2e": {k: list(v) for k, v in stats.e2e_request_latency.items()},
                    "queue": list(stats.queue_time), "throughput": stats.last_gen_throughput,
                    "accept_length": stats.last_accept_length,
                })

        def by_streaming(key: str):
            merged = {}
            for rank in ranks:
                for streaming, value in rank[key].items():
                    if isinstance(value, list):
                        merged.setdefault(streaming, []).extend(value)
                    else:
                        merged[streaming] = merged.get(streaming, 0) + value
            return [({"is_streaming": streaming}, merged[streaming]) for streaming in sorted(merged)]

        def total(key: str):
            return sum(rank[key] for rank in ranks)

        accepts = [rank["accept_length"] for rank in ranks if rank["accept_length"]]
        accept_length = sum(accepts) / len(accepts) if accepts else 0.0
        draft = self.args["speculative_num_draft_tokens"] or 0
        used = total("used")
        samples = {
            "sglang:prompt_tokens_total": by_streaming("prompt"),
            "sglang:generation_tokens_total": by_streaming("generation"),
            "sglang:num_requests_total": by_streaming("requests"),
            # SGLang counts cached tokens only once a request had some, with no details: cache_source "total"
            "sglang:cached_tokens_total": [({"cache_source": "total"}, total("cached"))] if total("cached") else [],
            "sglang:spec_verify_calls_total": [({}, total("verify"))] if total("verify") else [],
            "sglang:time_to_first_token_seconds": by_streaming("ttft"),
            "sglang:e2e_request_latency_seconds": by_streaming("e2e"),
            "sglang:queue_time_seconds": [({}, [v for rank in ranks for v in rank["queue"]])] if any(
                rank["queue"] for rank in ranks) else [],
            "sglang:num_running_reqs": [({}, total("running"))],
            "sglang:num_queue_reqs": [({}, total("queued"))],
            "sglang:num_used_tokens": [({}, used)],
            "sglang:token_usage": [({}, used / max(1, self.max_total_num_tokens * len(ranks)))],
            "sglang:cache_hit_rate": [({}, sum(rank["hit_rate"] for rank in ranks) / max(1, len(ranks)))],
            "sglang:gen_throughput": [({}, total("throughput"))],
            "sglang:spec_accept_length": [({}, accept_length)],
            # accepted drafts / proposed drafts: (tau - 1) / (draft tokens - 1)
            "sglang:spec_accept_rate": [({}, max(0.0, accept_length - 1) / (draft - 1) if accept_length and draft > 1
                                         else 0.0)],
            "sglang:spec_num_draft_tokens": [({}, draft if self.spec else 0)],
        }
        return exposition(self.metrics, labels, samples)


# ---------------------------------------------------------------------------------------------
# Error texts shaped like the real ones


def _pkg_dir() -> str:
    return "/usr/local/lib/python3.11/dist-packages/sglang"


def _traceback(final: str, where: str, note: Optional[str] = None) -> List[str]:
    lines = [
        "Scheduler hit an exception: Traceback (most recent call last):",
        '  File "%s/srt/managers/scheduler.py", line 3105, in run_scheduler_process' % _pkg_dir(),
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)",
        '  File "%s/srt/model_executor/model_runner.py", line 412, in %s' % (_pkg_dir(), where),
        final,
    ]
    if note:
        lines.append("[sglang emulator] " + note)
    return lines


def _oom_traceback(total_mib: float, free_mib: float, allocated_mib: float) -> List[str]:
    """CUDA OOM while loading weights: this process filled what was free, then asked for more."""
    left = max(0.0, free_mib - allocated_mib)
    return _traceback(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "%.2f GiB of which %.2f MiB is free. Including non-PyTorch memory, this process has %.2f GiB memory in use. "
        "Of the allocated memory %.2f GiB is allocated by PyTorch, and 0.00 MiB is reserved by PyTorch but "
        "unallocated." % (total_mib / 1024, left, allocated_mib / 1024, allocated_mib / 1024),
        "load_model")


def _architecture(model_path: str) -> str:
    config = _read_json(os.path.join(model_path, "config.json")) or {}
    archs = config.get("architectures")
    if isinstance(archs, list) and archs:
        return str(archs[0])
    return "Qwen3NextForCausalLM" if "qwen3" in model_path.lower() else "LlamaForCausalLM"


def _url_host(host: str) -> str:
    return "[%s]" % host if ":" in host else host


def eos_token_id(model_path: Optional[str]) -> int:
    """The target's EOS id as its folder gives it (generation_config.json, then config.json; the first of a list),
    else Qwen's <|im_end|> (151645) for a Qwen name and 2 otherwise."""
    for name in ("generation_config.json", "config.json"):
        value = (_read_json(os.path.join(model_path or "", name)) or {}).get("eos_token_id")
        if isinstance(value, list) and value:
            value = value[0]
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 151645 if "qwen" in (model_path or "").lower() else 2


def _number(value, default: float, name: str) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRequest("%s must be a number." % name)
    return float(value)


def _verify_sampling(temperature: float, top_p: float, top_k) -> None:
    """SamplingParams.verify's checks and messages (sglang/srt/sampling/sampling_params.py, 0.5.23, lines 252-266;
    top_k -1 is normalized to the whole vocabulary first, line 249)."""
    if not math.isfinite(temperature) or temperature < 0.0:
        raise BadRequest("temperature must be a non-negative finite number, got %s." % temperature)
    if not 0.0 < top_p <= 1.0:
        raise BadRequest("top_p must be in (0, 1], got %s." % top_p)
    if isinstance(top_k, bool) or not isinstance(top_k, int):
        raise BadRequest("top_k must be an integer.")
    if top_k != -1 and top_k < 1:
        raise BadRequest("top_k must be -1 (disable) or at least 1, got %s." % top_k)


def _flag(value, name: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise BadRequest("%s must be a boolean." % name)
    return value


def render_chat(messages, chat_template_kwargs: Optional[dict]) -> str:
    """The prompt Qwen3's chat template makes of plain text messages with add_generation_prompt=True: ChatML turns,
    the assistant's header, and an empty think block when chat_template_kwargs has enable_thinking=False. (The
    emulator has no jinja2; the collection renders the model's own template in plugin_utils/chat_template.py.)"""
    parts = []
    for message in messages:
        content = message.get("content") or ""
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        parts.append("<|im_start|>%s\n%s<|im_end|>\n" % (message.get("role") or "user", content))
    parts.append("<|im_start|>assistant\n")
    if (chat_template_kwargs or {}).get("enable_thinking") is False:
        parts.append("<think>\n\n</think>\n\n")
    return "".join(parts)


def approx_tokens(text: str) -> int:
    """Prompt tokens for text: about four bytes per token, as BPE tokenizers give for English."""
    return max(1, int(math.ceil(len(text.encode("utf-8")) / 4.0)))


# ---------------------------------------------------------------------------------------------
# HTTP


class BadRequest(Exception):
    pass


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "uvicorn"
    # TCP_NODELAY, as uvicorn's (asyncio's) sockets have: without it Nagle's algorithm holds a streamed chunk
    # back until the client's delayed ACK (up to 40 ms on Linux), and chunks arrive in bunches.
    disable_nagle_algorithm = True
    sim: SimServer = None  # set by serve()

    # -- plumbing --------------------------------------------------------------------------

    def log_message(self, format, *args):  # noqa: A002 (BaseHTTPRequestHandler's signature)
        pass

    def log_request(self, code="-", size="-"):
        try:
            phrase = self.responses.get(int(code), ("",))[0]
        except (TypeError, ValueError):
            phrase = ""
        self.sim.log.uvicorn('%s:%d - "%s %s %s" %s %s' % (
            self.client_address[0], self.client_address[1], self.command, self.path,
            self.request_version, code, phrase))

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _json_body(self):
        raw = self._body()
        if not raw:
            return {}
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise BadRequest("Invalid JSON body: %s" % exc)

    def _send(self, code: int, body: bytes, content_type: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, code: int, obj) -> None:
        self._send(code, json.dumps(obj).encode("utf-8"), "application/json")

    def _text(self, code: int, text: str, content_type: str = "text/plain; charset=utf-8") -> None:
        self._send(code, text.encode("utf-8"), content_type)

    def _empty(self, code: int) -> None:
        self._send(code, b"", "text/plain; charset=utf-8")

    def _error(self, message: str, code: int = 400) -> None:
        self._json(code, {"error": {"message": message}})

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _event(self, obj) -> None:
        self._chunk(b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode("utf-8")) + b"\n\n")

    def _end_stream(self) -> None:
        self._chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    # -- dispatch --------------------------------------------------------------------------

    def do_GET(self):
        self._dispatch()

    def do_POST(self):
        self._dispatch()

    def do_PUT(self):
        self._dispatch()

    def do_HEAD(self):
        self._dispatch()

    ROUTES = {
        "/health": ("health", ("GET", "HEAD")),
        "/health_generate": ("health", ("GET", "HEAD")),
        "/ready": ("ready", ("GET",)),
        "/model_info": ("model_info", ("GET",)),
        "/get_model_info": ("model_info", ("GET",)),
        "/server_info": ("server_info", ("GET",)),
        "/get_server_info": ("server_info", ("GET",)),
        "/flush_cache": ("flush_cache", ("GET", "POST")),
        "/v1/models": ("models", ("GET",)),
        "/generate": ("generate", ("POST", "PUT")),
        "/v1/completions": ("completions", ("POST",)),
        "/v1/chat/completions": ("chat", ("POST",)),
        "/metrics": ("metrics", ("GET",)),
        "/version": ("version", ("GET",)),
        "/get_load": ("get_load", ("GET",)),
    }

    def _dispatch(self):
        parts = urlsplit(self.path)
        self.query = parse_qs(parts.query)
        route = self.ROUTES.get(parts.path.rstrip("/") or "/")
        if route is None and parts.path.startswith("/v1/models/"):
            route = ("model_card", ("GET",))
        if route is not None and route[0] == "metrics" and self.sim.metrics is None:
            route = None  # SGLang mounts /metrics only with --enable-metrics (add_prometheus_middleware)
        if route is None:
            self._json(404, {"detail": "Not Found"})
            return
        name, methods = route
        if self.command not in methods:
            self._json(405, {"detail": "Method Not Allowed"})
            return
        sim = self.sim
        if sim.state != "ready" and name not in ("version",):
            self._body()
            self._empty(503)
            return
        try:
            getattr(self, "route_" + name)()
        except BadRequest as exc:
            self._error(str(exc))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    # -- routes ----------------------------------------------------------------------------

    def route_health(self):
        engine = self.sim.pick_engine()
        self._empty(200 if self.sim.run_probe(engine) else 503)

    def route_ready(self):
        self._empty(200)

    def route_version(self):
        self._json(200, {"version": __version__})

    def route_model_info(self):
        if self.path.startswith("/get_model_info"):
            self.sim.log("Endpoint '/get_model_info' is deprecated and will be removed in a future version. "
                         "Please use '/model_info' instead.", warning=True)
        self._json(200, self.sim.model_info())

    def route_server_info(self):
        if self.path.startswith("/get_server_info"):
            self.sim.log("Endpoint '/get_server_info' is deprecated and will be removed in a future version. "
                         "Please use '/server_info' instead.", warning=True)
        self._json(200, self.sim.server_info())

    def route_get_load(self):
        self._json(200, [{"dp_rank": e.dp_rank, "num_reqs": e.load(), "num_waiting_reqs": e.counts()[1]}
                         for e in self.sim.engines])

    def route_flush_cache(self):
        self._body()
        try:
            timeout = float((self.query.get("timeout") or ["0"])[0])
        except ValueError:
            timeout = 0.0
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            if all(e.load() == 0 for e in self.sim.engines) or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        flushed = [e.flush_cache() for e in self.sim.engines]  # every engine, even after one refuses
        ok = all(flushed)
        if ok:
            self._text(200, "Cache flushed.\nPlease check backend logs for more details. (When there are running "
                            "or waiting requests, the operation will not be performed.)\n")
        else:
            self._text(400, "Flush cache failed.\n")

    def route_models(self):
        name = self.sim.args["served_model_name"]
        self._json(200, {"object": "list", "data": [self._card(name)]})

    def route_model_card(self):
        name = self.path.split("/v1/models/", 1)[1]
        if name != self.sim.args["served_model_name"]:
            self._json(404, {"error": {"message": "The model '%s' does not exist" % name,
                                       "type": "invalid_request_error", "param": "model",
                                       "code": "model_not_found"}})
            return
        self._json(200, self._card(name))

    def _card(self, name: str) -> dict:
        return {"id": name, "object": "model", "created": int(self.sim.startup_time), "owned_by": "sglang",
                "root": name, "parent": None, "max_model_len": self.sim.context_len}

    def route_metrics(self):
        self._text(200, self.sim.metrics_text(), "text/plain; version=0.0.4; charset=utf-8")

    # -- generation ------------------------------------------------------------------------

    def _submit(self, prompt_tokens: List[int], max_tokens: List[int], seeds: List[int], rids: List[str],
                stream: bool, plans=None, prompts=None, chat: bool = False):
        """Queue one request per prompt, each with its Plan; returns (requests, sink). ``prompts``: each
        request's prompt for the prefix cache (text, or a list of token ids; None: not cached); ``chat``: the answers
        are chat messages (shown without their leading space)."""
        sim = self.sim
        for n, m in zip(prompt_tokens, max_tokens):
            if m is not None and n + m > sim.context_len:
                raise BadRequest(
                    "Requested token count exceeds the model's maximum context length of %d tokens. You requested "
                    "a total of %d tokens: %d tokens from the input messages and %d tokens for the completion. "
                    "Please reduce the number of tokens in the input messages or the completion to fit within "
                    "the limit." % (sim.context_len, n + m, n, m))
            if n >= sim.context_len:
                raise BadRequest("The input (%d tokens) is longer than the model's context length (%d tokens)."
                                 % (n, sim.context_len))
        sink: "queue.Queue" = queue.Queue()
        reqs = []
        plans = plans or [Plan()] * len(prompt_tokens)
        prompts = prompts or [None] * len(prompt_tokens)
        for i, (n, m, seed, rid, plan, prompt) in enumerate(
                zip(prompt_tokens, max_tokens, seeds, rids, plans, prompts)):
            trigger = sim.note_generate()
            ids = prompt if isinstance(prompt, list) and all(isinstance(t, int) for t in prompt) else None
            answer_ids, eos_at, lossy_after = sim.output_plan(plan, seed)
            req = GenRequest(rid, n, DEFAULT_MAX_NEW_TOKENS if m is None else m, seed, sim.workload, sink,
                             index=i, stream=stream, crash_trigger=trigger, tau=plan.tau, eos_at=eos_at,
                             eos_id=sim.eos_id, prompt_ids=ids, prompt_text=prompt if isinstance(prompt, str) else None,
                             chat=chat, answer_ids=answer_ids, lossy_after=lossy_after)
            reqs.append(req)
        for req in reqs:
            sim.pick_engine().submit(req)
        return reqs, sink

    def _updates(self, reqs, sink):
        """Yield (request, token count, finished) as the engine makes progress, until all are finished.

        The count is the request's output length after that engine step: a chunk made from it carries
        exactly that step's tokens, however far the engine has got since (with no modelled delay it
        runs ahead of the writer). The caller has written out each update by the time it asks for the
        next one; the request is then marked delivered up to that count."""
        pending = {r.index for r in reqs}
        while pending:
            index, count, _verify, finished = sink.get()
            if finished:
                pending.discard(index)
            yield reqs[index], count, finished
            reqs[index].mark_delivered(count)

    def _abort(self, reqs) -> None:
        for req in reqs:
            for engine in self.sim.engines:
                if engine.dp_rank == req.dp_rank:
                    engine.abort(req)

    def _native_output(self, req: GenRequest, final: bool, batch: bool, count: Optional[int] = None) -> dict:
        """SGLang's native output: cumulative text and ids (up to `count` tokens when given), then meta_info."""
        ids = req.output_ids[:count] if count is not None else list(req.output_ids)
        out = {"text": detokenize(ids), "output_ids": ids}
        if batch:
            out["index"] = req.index
        out["meta_info"] = req.meta_info(final, self.sim.spec, self.sim.weight_version, len(ids))
        return out

    def _native_chunk(self, req: GenRequest, final: bool, batch: bool, count: int) -> bytes:
        """json.dumps(self._native_output(req, final, batch, count)) made from the request's incremental JSON of
        its text and ids: a stream re-sends both whole every step, which would make the cost of a chunk grow
        with the output. The text's JSON is escaped a step at a time (json_text), as answers carry any character."""
        text, ids = req.text_and_ids_json(count)
        meta = json.dumps(req.meta_info(final, self.sim.spec, self.sim.weight_version, count))
        index = ', "index": %d' % req.index if batch else ""
        return ('{"text": "%s", "output_ids": [%s]%s, "meta_info": %s}' % (text, ids, index, meta)).encode("utf-8")

    def _stamped_event(self, data: bytes) -> None:
        """Stream a native output's JSON with meta_info.sim_sent_at: time.perf_counter() (CLOCK_MONOTONIC, which
        every process on the host shares) just before the chunk is written, spliced in as meta_info's last key
        (meta_info is the output's last key), so making the JSON is not counted as delivery time."""
        self._chunk(b"data: %s, \"sim_sent_at\": %.7f}}\n\n" % (data[:-2], time.perf_counter()))

    def route_generate(self):
        body = self._json_body()
        if not isinstance(body, dict):
            raise BadRequest("The request body must be a JSON object.")
        text, input_ids = body.get("text"), body.get("input_ids")
        if text is None and input_ids is None:
            raise BadRequest("Either text, input_ids or input_embeds should be provided.")
        if text is not None:
            batch = isinstance(text, list)
            prompts = text if batch else [text]
            if not all(isinstance(t, str) for t in prompts):
                raise BadRequest("text must be a string or a list of strings.")
            counts = [approx_tokens(t) for t in prompts]
        else:
            if not isinstance(input_ids, list) or not input_ids:
                raise BadRequest("input_ids must be a non-empty list.")
            batch = isinstance(input_ids[0], list)
            prompts = input_ids if batch else [input_ids]
            counts = [len(ids) for ids in prompts]
        params = body.get("sampling_params") or {}
        params_list = params if isinstance(params, list) else [params] * len(prompts)
        max_tokens, plans, seeds = [], [], []
        for prompt, p in zip(prompts, params_list):
            p = p or {}
            value = p.get("max_new_tokens", DEFAULT_MAX_NEW_TOKENS)
            max_tokens.append(DEFAULT_MAX_NEW_TOKENS if value is None else int(value))
            # SamplingParams' defaults (sglang/srt/sampling/sampling_params.py): temperature 1.0, ignore_eos False
            temperature = _number(p.get("temperature"), 1.0, "temperature")
            _verify_sampling(temperature, _number(p.get("top_p"), 1.0, "top_p"), p.get("top_k", -1))
            plans.append(self.sim.plan(prompt, temperature, _flag(p.get("ignore_eos"), "ignore_eos")))
            # greedy decoding ignores the seed; sampling follows sampling_seed when one is given
            sampling_seed = p.get("sampling_seed") if temperature > 0 else None
            seeds.append(model.request_seed(prompt, max_tokens[-1]) if sampling_seed is None
                         else model.request_seed(prompt, max_tokens[-1], sampling_seed))
        rid = body.get("rid")
        rids = rid if isinstance(rid, list) else [rid] * len(prompts)
        rids = [r or uuid.uuid4().hex for r in rids]
        stream = bool(body.get("stream"))
        reqs, sink = self._submit(counts, max_tokens, seeds, rids, stream, plans, prompts)
        if not stream:
            for _update in self._updates(reqs, sink):  # run to completion
                pass
            outs = [self._native_output(r, True, False) for r in reqs]
            self._json(200, outs if batch else outs[0])
            return
        self._start_stream()
        try:
            for req, count, finished in self._updates(reqs, sink):
                self._stamped_event(self._native_chunk(req, finished, batch, count))
            self._end_stream()
        except (BrokenPipeError, ConnectionResetError):
            self._abort(reqs)
            self.close_connection = True

    @staticmethod
    def _usage(reqs) -> dict:
        prompt = sum(r.prompt_tokens for r in reqs)
        completion = sum(r.completion_tokens for r in reqs)
        # UsageInfo (entrypoints/openai/protocol.py:221) as usage_processor.py:121 fills it with no reasoning tokens
        return {"prompt_tokens": prompt, "total_tokens": prompt + completion, "completion_tokens": completion,
                "prompt_tokens_details": None, "reasoning_tokens": 0, "completion_tokens_details": None}

    def _openai_common(self, body: dict, prompt_tokens: int, seed_source, default_max: int, content=None,
                       cached=None, chat: bool = False):
        """Queue the n choices of an OpenAI request; ``content`` is the prompt text the server generates from,
        ``cached`` the prompt as the prefix cache keys it (text or token ids; None: not cached), ``chat`` whether the
        answer is a chat message."""
        max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
        max_tokens = default_max if max_tokens is None else int(max_tokens)
        n = int(body.get("n") or 1)
        seeds = [model.request_seed(seed_source, max_tokens, i) for i in range(n)]
        # The request models' defaults (sglang/srt/entrypoints/openai/protocol.py): temperature 1.0, ignore_eos False
        plan = self.sim.plan(seed_source if content is None else content,
                             _number(body.get("temperature"), 1.0, "temperature"),
                             _flag(body.get("ignore_eos"), "ignore_eos"))
        rid = uuid.uuid4().hex
        reqs, sink = self._submit([prompt_tokens] * n, [max_tokens] * n, seeds,
                                  ["%s-%d" % (rid, i) if n > 1 else rid for i in range(n)], bool(body.get("stream")),
                                  [plan] * n, [cached] * n, chat)
        return rid, reqs, sink

    def _spec_details(self, reqs, body: dict) -> Optional[dict]:
        """The response's sglext when the request asks for return_spec_tokens_details on a speculative server:
        {"spec_tokens_details": one SpecTokensDetails (a list when n > 1)}, as serving_chat.py:2704-2729 and
        serving_completions.py:445-473 build it from each choice's meta_info (utils.py:310-338: every field,
        0 / [] where meta_info lacks it)."""
        if not body.get("return_spec_tokens_details") or not self.sim.spec:
            return None
        details = []
        for req in reqs:
            meta = req.meta_info(True, True, self.sim.weight_version)
            if "spec_verify_ct" not in meta:
                continue
            details.append({
                "spec_accept_rate": meta["spec_accept_rate"], "spec_accept_length": meta["spec_accept_length"],
                "spec_cap_length": 0.0, "spec_block_accept_length": 0.0,
                "spec_num_correct_drafts": meta["spec_num_correct_drafts"],
                "spec_num_proposed_drafts": meta["spec_num_proposed_drafts"],
                "spec_verify_ct": meta["spec_verify_ct"],
                "spec_correct_drafts_histogram": meta.get("spec_correct_drafts_histogram", []),
                "spec_cap_lens_histogram": []})
        if not details:
            return None
        return {"spec_tokens_details": details if len(reqs) > 1 else details[0]}

    @staticmethod
    def _choice_finish(req: GenRequest):
        """(finish_reason, matched_stop) of an OpenAI choice, from SGLang's finish reason."""
        reason = req.finish_reason()
        return reason["type"], reason.get("matched")

    def _completion_choice(self, req: GenRequest) -> dict:
        reason, matched = self._choice_finish(req)
        return {"index": req.index, "text": detokenize(req.output_ids), "logprobs": None, "finish_reason": reason,
                "matched_stop": matched}

    def _chat_choice(self, req: GenRequest) -> dict:
        reason, matched = self._choice_finish(req)
        return {"index": req.index,
                "message": {"role": "assistant", "content": detokenize(req.output_ids).lstrip(),
                            "reasoning_content": None, "tool_calls": None},
                "logprobs": None, "finish_reason": reason, "matched_stop": matched}

    def route_completions(self):
        body = self._json_body()
        prompt = body.get("prompt")
        if prompt is None:
            raise BadRequest("prompt is required.")
        if isinstance(prompt, list) and prompt and isinstance(prompt[0], int):
            count = len(prompt)
        elif isinstance(prompt, list):
            count = sum(approx_tokens(p) if isinstance(p, str) else len(p) for p in prompt)
        else:
            count = approx_tokens(str(prompt))
        text = prompt if isinstance(prompt, str) else (
            "".join(p for p in prompt if isinstance(p, str)) if isinstance(prompt, list) else str(prompt))
        cached = prompt if isinstance(prompt, str) or (
            isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt)) else None
        rid, reqs, sink = self._openai_common(body, count, prompt, 16, text or None, cached)
        model_name = body.get("model") or self.sim.args["served_model_name"]
        created = int(time.time())
        if not body.get("stream"):
            for _update in self._updates(reqs, sink):  # run to completion
                pass
            out = {
                "id": rid, "object": "text_completion", "created": created, "model": model_name,
                "choices": [self._completion_choice(r) for r in reqs],
                "usage": self._usage(reqs), "metadata": {"weight_version": self.sim.weight_version}}
            sglext = self._spec_details(reqs, body)
            if sglext:
                out["sglext"] = sglext
            self._json(200, out)
            return
        sent = {r.index: 0 for r in reqs}
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        self._start_stream()
        try:
            for req, count, finished in self._updates(reqs, sink):
                delta = req.output_ids[sent[req.index]:count]
                sent[req.index] += len(delta)
                reason, matched = self._choice_finish(req) if finished else (None, None)
                self._event({"id": rid, "object": "text_completion", "created": created, "model": model_name,
                             "choices": [{"index": req.index, "text": detokenize(delta), "logprobs": None,
                                          "finish_reason": reason, "matched_stop": matched}],
                             "usage": None})
            sglext = self._spec_details(reqs, body)
            if sglext:
                self._event({"id": rid, "object": "text_completion", "created": created, "model": model_name,
                             "choices": [], "usage": None, "sglext": sglext})
            if include_usage:
                self._event({"id": rid, "object": "text_completion", "created": created, "model": model_name,
                             "choices": [], "usage": self._usage(reqs)})
            self._end_stream()
        except (BrokenPipeError, ConnectionResetError):
            self._abort(reqs)
            self.close_connection = True

    def route_chat(self):
        body = self._json_body()
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest("messages must be a non-empty list.")
        if not all(isinstance(m, dict) for m in messages):
            raise BadRequest("messages must be a list of objects.")
        kwargs = body.get("chat_template_kwargs")
        if kwargs is not None and not isinstance(kwargs, dict):
            raise BadRequest("chat_template_kwargs must be an object.")  # Optional[Dict] in ChatCompletionRequest
        prompt = render_chat(messages, kwargs)
        rid, reqs, sink = self._openai_common(body, approx_tokens(prompt), prompt, 8192, prompt, prompt, chat=True)
        model_name = body.get("model") or self.sim.args["served_model_name"]
        created = int(time.time())
        if not body.get("stream"):
            for _update in self._updates(reqs, sink):  # run to completion
                pass
            out = {
                "id": rid, "object": "chat.completion", "created": created, "model": model_name,
                "choices": [self._chat_choice(r) for r in reqs],
                "usage": self._usage(reqs), "metadata": {"weight_version": self.sim.weight_version}}
            sglext = self._spec_details(reqs, body)
            if sglext:
                out["sglext"] = sglext
            self._json(200, out)
            return
        sent = {r.index: 0 for r in reqs}
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        self._start_stream()
        try:
            for req in reqs:
                self._event({"id": rid, "object": "chat.completion.chunk", "created": created, "model": model_name,
                             "choices": [{"index": req.index, "delta": {"role": "assistant", "content": ""},
                                          "logprobs": None, "finish_reason": None, "matched_stop": None}],
                             "usage": None})
            for req, count, finished in self._updates(reqs, sink):
                start = sent[req.index]
                delta = req.output_ids[start:count]
                sent[req.index] += len(delta)
                piece = detokenize(delta)
                if start == 0:
                    piece = piece.lstrip()
                if piece:  # a delta of only the EOS (no text) sends no content chunk
                    self._event({"id": rid, "object": "chat.completion.chunk", "created": created,
                                 "model": model_name,
                                 "choices": [{"index": req.index, "delta": {"content": piece}, "logprobs": None,
                                              "finish_reason": None, "matched_stop": None}], "usage": None})
                if finished:
                    reason, matched = self._choice_finish(req)
                    self._event({"id": rid, "object": "chat.completion.chunk", "created": created,
                                 "model": model_name,
                                 "choices": [{"index": req.index, "delta": {}, "logprobs": None,
                                              "finish_reason": reason, "matched_stop": matched}], "usage": None})
            sglext = self._spec_details(reqs, body)
            if sglext:  # after every choice has finished, before the usage chunk (serving_chat.py:2756)
                self._event({"id": rid, "object": "chat.completion.chunk", "created": created, "model": model_name,
                             "choices": [], "usage": None, "sglext": sglext})
            if include_usage:
                self._event({"id": rid, "object": "chat.completion.chunk", "created": created, "model": model_name,
                             "choices": [], "usage": self._usage(reqs)})
            self._end_stream()
        except (BrokenPipeError, ConnectionResetError):
            self._abort(reqs)
            self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def handle_error(self, request, client_address):
        """A client that closed or reset its connection (a keep-alive connection reset while idle, a probe that gave up
        while the server loaded): uvicorn logs nothing of it, so neither does the emulator; socketserver printed a
        traceback of twenty lines, which pushed the server's own lines out of a stage's journal excerpt. Anything else
        is printed as socketserver does."""
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)):
            return
        super().handle_error(request, client_address)


class _Server6(_Server):
    address_family = socket.AF_INET6


# ---------------------------------------------------------------------------------------------
# Entry point


def main(argv: Optional[List[str]] = None) -> int:
    # an unknown or malformed flag: argparse's usage line and error on stderr, exit status 2, as SGLang
    ns = build_parser().parse_args(argv)
    args = resolve(ns)
    log = Log(args["log_level"])
    sim = SimServer(args, log)
    log("server_args=%s" % sim.server_args_repr())

    def on_signal(signum, _frame):
        sim.stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    handler = type("BoundHandler", (Handler,), {"sim": sim})
    try:
        server_cls = _Server6 if ":" in args["host"] else _Server
        httpd = server_cls((args["host"], args["port"]), handler)
    except OSError as exc:
        log.uvicorn("[Errno %s] error while attempting to bind on address (%r, %d): %s"
                    % (exc.errno, args["host"], args["port"], (exc.strerror or "").lower()), "ERROR")
        return 1
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.2}, name="http", daemon=True).start()

    try:
        sim.load()
        sim.warmup()
        while not sim.stop.wait(0.5):
            pass
    except StartupError as exc:
        log.error("\n".join(exc.lines), "TP0")
        log.error("Received sigquit from a child process. It usually means the child failed.")
        sim.shutdown_cleanup()
        sys.stdout.flush()
        os._exit(1)
    except SystemExit:
        pass
    sim.state = "shutting_down"
    log.uvicorn("Shutting down")
    sim.shutdown_cleanup()
    log.uvicorn("Waiting for application shutdown.")
    log.uvicorn("Application shutdown complete.")
    log.uvicorn("Finished server process [%d]" % os.getpid())
    sys.stdout.flush()
    os._exit(0)
