"""The emulator's performance model: pure functions, no I/O, no clock.

A decode step of the target model is memory-bound at small batch (it reads every weight once) and
compute-bound at large token counts; ``forward_ms`` is a smooth roofline of the two, plus the
tensor-parallel all-reduce and a fixed launch overhead. Speculative decoding verifies several
tokens per request in one target forward and pays for a draft forward, so it wins while the
verified tokens ride under the memory roof, and loses that edge as the batch (or the tree budget)
pushes the step into the compute roof. Acceptance is the usual geometric model: each drafted token
is accepted with probability ``alpha`` given its predecessors were, so a linear block of ``L``
tokens gives ``tau = (1 - alpha**L) / (1 - alpha)``; DDTree's tree adds a saturating gain in its
node budget. A draft checkpoint that is not fully trained (the simulated trainer's ``specdec_sim.quality``
below 1) keeps that share of the drafted gain ``tau - 1``: tau follows the quality's curve over training
steps, 1.0 (no gain) at quality 0.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
from dataclasses import dataclass, replace
from typing import Optional

AUTOREGRESSIVE = "NONE"
LINEAR_METHODS = ("DFLASH", "EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DSPARK", "UNO")

# Per-GPU HBM bandwidth (GB/s) and dense BF16 TFLOP/s, by a substring of the nvidia-smi name.
GPU_SPECS = (
    ("H200", 4800.0, 990.0),
    ("H100", 3350.0, 990.0),
    ("B200", 8000.0, 2250.0),
    ("A100-SXM4-80GB", 2039.0, 312.0),
    ("A100 80GB", 1935.0, 312.0),
    ("A100", 1555.0, 312.0),
    ("RTX PRO 6000", 1792.0, 500.0),
    ("L40S", 864.0, 362.0),
    ("A10", 600.0, 125.0),
)
DEFAULT_GPU_SPEC = (1800.0, 400.0)
# Efficiencies measured on the GPU itself, by the same substring; the others keep Hardware's defaults (0.8, 0.5).
# H200: tests/fixtures/h200-verify-cost (one Qwen3-32B-shaped layer's seven GEMMs, torch 2.11, CUDA events): a
# one-token step reads the 975 MB of a layer's weights in a median 0.335 ms (2.91 TB/s, 0.61 of 4.8 TB/s), and 8192
# tokens take 11.48 ms (8.0 TFLOP at 696 TFLOP/s, 0.70 of 990); the verify-cost factor follows from the two.
GPU_EFFICIENCY = {
    "H200": {"mem_efficiency": 0.61, "compute_efficiency": 0.70},
}


@dataclass(frozen=True)
class Hardware:
    """What one GPU of the stage and the links between them can do."""

    hbm_gbps: float = DEFAULT_GPU_SPEC[0]
    peak_tflops: float = DEFAULT_GPU_SPEC[1]
    mem_efficiency: float = 0.8
    compute_efficiency: float = 0.5
    comm_ms_per_doubling: float = 1.5  # fixed all-reduce latency per step, per log2(tp)
    comm_ms_per_token: float = 0.004  # all-reduce volume term, per token in the step
    launch_overhead_ms: float = 1.0  # sampling, scheduling, kernel launch with CUDA graphs
    no_cuda_graph_overhead_ms: float = 6.0


@dataclass(frozen=True)
class Workload:
    """What is being served and how: the model, the method and its knobs."""

    model_bytes: float = 55e9
    draft_bytes: float = 4e9
    tp: int = 1
    method: str = AUTOREGRESSIVE
    num_draft_tokens: int = 16  # DFLASH block size / EAGLE draft tokens
    ddtree_budget: int = 64
    ddtree_topk: int = 4
    alpha: float = 0.72  # per-token draft acceptance probability
    draft_quality: float = 1.0  # how trained the draft is (0..1): the share of the drafted gain it keeps
    kv_bytes_per_token: float = 64 * 1024
    cuda_graph: bool = True
    spec_overhead_frac: float = 0.2  # draft extend + bookkeeping, as a fraction of the weights read
    tree_ms_per_node: float = 0.01
    tree_gain_max: float = 2.4  # tau a wide, unbounded tree adds over the linear draft
    tree_budget_scale: float = 12.0  # budget b0 = scale * topk at which the gain is 63% there


def hardware_for(gpu_name: Optional[str], **overrides) -> Hardware:
    """Hardware figures for a GPU named as nvidia-smi names it (unknown names get a middle one)."""
    hbm, tflops = DEFAULT_GPU_SPEC
    for key, key_hbm, key_tflops in GPU_SPECS:
        if gpu_name and key.lower() in gpu_name.lower():
            hbm, tflops = key_hbm, key_tflops
            break
    values = {"hbm_gbps": hbm, "peak_tflops": tflops}
    for key, efficiency in GPU_EFFICIENCY.items():
        if gpu_name and key.lower() in gpu_name.lower():
            values.update(efficiency)
            break
    values.update({k: v for k, v in overrides.items() if v is not None})
    return Hardware(**values)


def guess_model_bytes(model_path: str, default: float = 55e9) -> float:
    """Weights size from a name like ``Qwen3.6-27B`` or ``Llama-3.1-8B-FP8`` (BF16 unless named)."""
    name = model_path.rstrip("/").rsplit("/", 1)[-1]
    # "30B-A3B" (MoE: 3B active) holds all 30B in memory, so the largest count wins.
    found = re.findall(r"(?<![\w.])(\d+(?:\.\d+)?)[bB](?![a-zA-Z])", name.replace("_", "-"))
    if not found:
        return default
    params = max(float(f) for f in found) * 1e9
    lowered = name.lower()
    if any(tag in lowered for tag in ("awq", "gptq", "int4", "w4a16", "nvfp4", "mxfp4")):
        bytes_per_param = 0.5
    elif any(tag in lowered for tag in ("fp8", "int8", "w8a8")):
        bytes_per_param = 1.0
    else:
        bytes_per_param = 2.0
    return params * 1.02 * bytes_per_param  # embeddings and norms on top of the nominal count


def normalize_method(algorithm: Optional[str], dflash_enable_ddtree: bool = False) -> str:
    """The method the emulator models: NONE, DDTREE, or a linear speculative one."""
    name = (algorithm or "").strip().upper()
    if name in ("", "NONE", "NULL"):
        return AUTOREGRESSIVE
    if name == "DFLASH" and dflash_enable_ddtree:
        return "DDTREE"
    return name


def smooth_max(a: float, b: float, sharpness: float = 3.0) -> float:
    """A roofline with a rounded knee: ~max(a, b), a bit above it where they are close."""
    return (a ** sharpness + b ** sharpness) ** (1.0 / sharpness)


def comm_ms(hw: Hardware, tp: int, tokens: float) -> float:
    """Per-step tensor-parallel all-reduce time: latency per doubling plus volume."""
    if tp <= 1:
        return 0.0
    return hw.comm_ms_per_doubling * math.log2(tp) + hw.comm_ms_per_token * tokens * (tp - 1) / tp


def forward_ms(hw: Hardware, weight_bytes: float, tokens: float, tp: int, extra_read_bytes: float = 0.0) -> float:
    """One forward of a model over ``tokens`` tokens, sharded over ``tp`` GPUs (no comm)."""
    read_ms = (weight_bytes + extra_read_bytes) / tp / (hw.hbm_gbps * 1e9 * hw.mem_efficiency) * 1e3
    # 2 FLOPs per parameter per token, 2 bytes per BF16 parameter: FLOPs ~= weight bytes * tokens.
    compute_ms = weight_bytes * tokens / tp / (hw.peak_tflops * 1e12 * hw.compute_efficiency) * 1e3
    return smooth_max(read_ms, compute_ms)


def linear_tau(alpha: float, block: int) -> float:
    """Expected tokens per verify step of a linear draft of ``block`` positions (bonus included)."""
    block = max(1, int(block))
    if alpha >= 1.0:
        return float(block)
    return (1.0 - alpha ** block) / (1.0 - alpha)


def tree_gain(wl: Workload, budget: float, topk: int) -> float:
    """What DDTree's tree adds to tau over the linear draft: 0 for a chain, saturating in budget."""
    width = max(1, int(topk))
    gain_max = wl.tree_gain_max * (1.0 - math.exp(-(width - 1) / 2.0))
    b0 = wl.tree_budget_scale * width
    return gain_max * (1.0 - math.exp(-max(0.0, budget) / b0))


def expected_tau(wl: Workload) -> float:
    """Mean tokens a request gains per verify step (1.0 for autoregressive decoding); a draft of quality q keeps
    the share q of the gain over 1 that a fully trained one gives."""
    if wl.method == AUTOREGRESSIVE:
        return 1.0
    if wl.method == "DDTREE":
        budget = max(1, int(wl.ddtree_budget))
        chain = min(budget + 1, wl.num_draft_tokens)
        full = min(float(wl.num_draft_tokens), linear_tau(wl.alpha, chain) + tree_gain(wl, budget, wl.ddtree_topk))
    else:
        full = linear_tau(wl.alpha, wl.num_draft_tokens)
    quality = min(1.0, max(0.0, wl.draft_quality))
    return 1.0 + quality * (full - 1.0)


def verify_tokens_per_request(wl: Workload) -> int:
    """Tokens the target model verifies per request in one step."""
    if wl.method == AUTOREGRESSIVE:
        return 1
    if wl.method == "DDTREE":
        return max(1, int(wl.ddtree_budget)) + 1  # the tree's nodes plus its root
    return max(1, int(wl.num_draft_tokens))


def target_step_ms(hw: Hardware, wl: Workload, batch: int, tokens_per_request: int, context_tokens: float = 0.0) -> float:
    """Wall time of the target model's forward over ``batch`` requests x ``tokens_per_request`` tokens (1: a decode
    step; k: verifying k drafted tokens), reading the requests' KV cache (``context_tokens`` tokens), with the
    all-reduce and the launch overhead: no draft. Its ratio to ``tokens_per_request=1`` at the same batch is the
    verify-cost factor (tests/fixtures/h200-verify-cost measures it on an H200)."""
    batch = max(1, int(batch))
    tokens = batch * max(1, int(tokens_per_request))
    kv_read = context_tokens * wl.kv_bytes_per_token
    step = forward_ms(hw, wl.model_bytes, tokens, wl.tp, extra_read_bytes=kv_read) + comm_ms(hw, wl.tp, tokens)
    return step + hw.launch_overhead_ms + (0.0 if wl.cuda_graph else hw.no_cuda_graph_overhead_ms)


def decode_step_ms(hw: Hardware, wl: Workload, batch: int, context_tokens: float = 0.0) -> float:
    """Wall time of one decode (or verify) step for ``batch`` running requests: the target's forward over the
    verified tokens (``target_step_ms``) plus, for a speculative method, the draft's forward and its bookkeeping.

    ``context_tokens`` is the sum of the running requests' lengths: their KV cache is read too.
    """
    batch = max(1, int(batch))
    tokens = batch * verify_tokens_per_request(wl)
    step = target_step_ms(hw, wl, batch, verify_tokens_per_request(wl), context_tokens)
    if wl.method != AUTOREGRESSIVE:
        draft_tokens = batch * max(1, int(wl.num_draft_tokens))
        step += forward_ms(hw, wl.draft_bytes, draft_tokens, wl.tp) + comm_ms(hw, wl.tp, draft_tokens)
        step += wl.spec_overhead_frac * forward_ms(hw, wl.model_bytes, 1, wl.tp)
        if wl.method == "DDTREE":
            step += wl.tree_ms_per_node * tokens
    return step


def prefill_ms(hw: Hardware, wl: Workload, prompt_tokens: int) -> float:
    """Wall time of one prefill batch over ``prompt_tokens`` new tokens (the draft prefills too)."""
    tokens = max(1, int(prompt_tokens))
    step = forward_ms(hw, wl.model_bytes, tokens, wl.tp) + comm_ms(hw, wl.tp, tokens) + hw.launch_overhead_ms
    if wl.method != AUTOREGRESSIVE:
        step += forward_ms(hw, wl.draft_bytes, tokens, wl.tp)
    return step


def output_throughput(hw: Hardware, wl: Workload, batch: int, context_tokens: float = 0.0) -> float:
    """Steady-state decode tokens per second across ``batch`` requests."""
    return batch * expected_tau(wl) / decode_step_ms(hw, wl, batch, context_tokens) * 1e3


def speedup(hw: Hardware, wl: Workload, batch: int = 1, context_tokens: float = 0.0) -> float:
    """Throughput of the workload's method over autoregressive decoding on the same TP and batch."""
    baseline = replace(wl, method=AUTOREGRESSIVE)
    return output_throughput(hw, wl, batch, context_tokens) / output_throughput(hw, baseline, batch, context_tokens)


def alpha_for_tau(tau: float, max_accept: int) -> float:
    """Per-token acceptance probability whose truncated geometric mean over ``max_accept`` is tau."""
    tau = min(max(tau, 1.0), float(max_accept))
    if tau >= max_accept:
        return 1.0
    lo, hi = 0.0, 1.0
    for _bisection in range(60):
        mid = (lo + hi) / 2
        if linear_tau(mid, max_accept) < tau:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def request_seed(*parts) -> int:
    """A stable seed from a request's content (Python's hash() is salted per process)."""
    digest = hashlib.sha256(repr(parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


class AcceptanceSampler:
    """Draws a request's accepted tokens per verify step, deterministically from its seed.

    Each step accepts 1 + the run of consecutive successes (probability ``alpha``) among the
    ``max_accept - 1`` drafted positions, so the long-run mean is ``expected_tau``.
    """

    def __init__(self, wl: Workload, seed: int, tau: Optional[float] = None):
        """``tau``: this request's own mean (``request_tau``); the workload's ``expected_tau`` when None."""
        self.rng = random.Random(seed)
        self.max_accept = 1 if wl.method == AUTOREGRESSIVE else max(1, int(wl.num_draft_tokens))
        target = expected_tau(wl) if tau is None else tau
        self.alpha = alpha_for_tau(target, self.max_accept) if self.max_accept > 1 else 0.0

    def next(self) -> int:
        accepted = 1
        while accepted < self.max_accept and self.rng.random() < self.alpha:
            accepted += 1
        return accepted


def token_ids(seed: int, count: int, vocab_size: int = 32000):
    """Deterministic output token ids for a request."""
    rng = random.Random(seed ^ 0x5EED)
    return [rng.randrange(1000, vocab_size) for _token in range(count)]


# ---------------------------------------------------------------------------------------------
# What a request's content does to acceptance and to its length

# The drafted gain (tau - 1) of each kind of prompt relative to open chat, for the same drafter at temperature 0.
# Rounded from published per-dataset tau of block-diffusion drafters, taking MT-Bench as chat = 1.0:
# - DFlash (arXiv 2602.06036; z-lab/Qwen3-4B-DFlash-b16 in SGLang, T=0, thinking off, as re-measured in a public
#   training log): gsm8k 6.27, math500 8.24, humaneval 6.72, mbpp 5.61, mt-bench 3.43 -> math 2.2-3.0, code 1.9-2.4;
# - DDTree (arXiv 2604.12989, Qwen3-8B, T=0): gsm8k ~9.3-9.5, humaneval ~9.7-10.7, mt-bench ~6.1 -> math ~1.6,
#   code ~1.7-1.9.
# Neither paper measures translation or summarization; Spec-Bench (Xia et al., 2024) ranks both below MT-Bench
# for every drafter it runs, translation lowest: those two levels follow that order.
CONTENT_LEVELS = {
    "math": 2.0,
    "code": 1.9,
    "chat": 1.0,
    "summarization": 0.8,
    "translation": 0.65,
}
# Typical answer lengths (tokens, thinking off) behind the deterministic EOS position: short for translation and
# summaries, a few hundred for math and code, longest for open chat. Rough figures, not measured ones.
CONTENT_ANSWER_TOKENS = {"math": 260, "code": 320, "chat": 420, "summarization": 160, "translation": 110}
# Temperature lowers acceptance: DDTree and DFlash both report T=1 tau roughly a fifth below T=0.
TEMPERATURE_GAIN_DROP = 0.25
MIN_ANSWER_TOKENS = 8

_TRANSLATION_MARKS = ("translate", "translation", "into english", "into french", "into german", "into chinese",
                      "into spanish", "into japanese")
_SUMMARY_MARKS = ("summarize", "summarise", "summary", "tl;dr", "tldr", "key points")
_CODE_MARKS = ("```", "def ", "return ", "return(", "function", "class ", "import ", "#include", "=>", "python",
               "javascript", "write a program", "implement", "code")
_MATH_MARKS = ("solve", "calculate", "compute", "equation", "how many", "how much", "sum of", "integer",
               "probability", "prove", "find the value", "percent", "remainder", "\\frac", "math")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def content_category(text: Optional[str]) -> str:
    """The kind of prompt its words say it is: translation, summarization, code, math, or chat (the rest).

    The server only sees text: an instruction to translate or summarize wins, then whichever of code or math has
    more marks (``=`` counts towards math, each number half), and a prompt with less than 1.5 marks is chat."""
    if not text:
        return "chat"
    lowered = text.lower()
    if any(mark in lowered for mark in _TRANSLATION_MARKS):
        return "translation"
    if any(mark in lowered for mark in _SUMMARY_MARKS):
        return "summarization"
    code = sum(lowered.count(mark) for mark in _CODE_MARKS)
    math_score = (sum(lowered.count(mark) for mark in _MATH_MARKS) + lowered.count("=")
                  + min(len(_NUMBER.findall(lowered)), 8) / 2.0)
    if max(code, math_score) < 1.5:
        return "chat"
    return "code" if code >= math_score else "math"


def temperature_factor(temperature: Optional[float]) -> float:
    """How much of the drafted gain survives sampling at ``temperature`` (1 at greedy decoding)."""
    return 1.0 / (1.0 + TEMPERATURE_GAIN_DROP * max(0.0, float(temperature or 0.0)))


def request_tau(wl: Workload, category: str, temperature: Optional[float], content_seed: int) -> float:
    """Mean tokens per verify step of one request: the draft's tau, its gain scaled by the content's level, the
    temperature and a +-10% per-prompt spread (deterministic in ``content_seed``), within [1, block]."""
    base = expected_tau(wl)
    if base <= 1.0:
        return 1.0
    spread = 0.9 + 0.2 * random.Random(content_seed ^ 0x7A0).random()
    gain = (base - 1.0) * CONTENT_LEVELS.get(category, 1.0) * temperature_factor(temperature) * spread
    return min(float(max(1, int(wl.num_draft_tokens))), 1.0 + gain)


def eos_position(category: str, content_seed: int) -> int:
    """After how many output tokens the model emits EOS (that token included), from the prompt alone: a
    log-normal spread around the content's typical answer length."""
    median = CONTENT_ANSWER_TOKENS.get(category, CONTENT_ANSWER_TOKENS["chat"])
    draw = random.Random(content_seed ^ 0xE05).lognormvariate(0.0, 0.5)
    return max(MIN_ANSWER_TOKENS, int(round(median * draw)))
