"""A continuous-batching scheduler that spends modelled time instead of GPU time.

One ``Engine`` per data-parallel rank, each a thread. Like SGLang's scheduler it runs a prefill
batch whenever requests wait, else one decode (verify) step for every running request; a step's
duration comes from ``_sim_model`` for the batch it actually holds, so concurrency, TP and the
speculative method shape latency and throughput the way they do on a GPU.

Each engine keeps SGLang's radix prefix cache (``PrefixCache``, mem_cache/radix_cache.py at the default page size 1):
a finished request's prompt and output tokens are inserted, a new request's prefill computes only what the cache
does not hold, LRU leaves are evicted to keep the cache and the running requests within max_total_num_tokens, and
/flush_cache empties it.
"""

from __future__ import annotations

import collections
import heapq
import json
import math
import os
import threading
import time
import traceback
from typing import Callable, List, Optional

from . import _sim_gpu
from . import _sim_model as model

# How long the crash fault waits for the HTTP side to have written what a streamed request was given
# before the process dies (a client that stopped reading must not hold the crash off for ever).
CRASH_DELIVERY_TIMEOUT_S = 10.0

WORDS = (
    "the of and to in is that for it as was with be by on not he this are or his from at which "
    "but have an they you were her she there one all we their been has when who will more no if "
    "out so said what up its about into than them can only other new some could time these two "
    "may then do first any my now such like our over man me even most made after also did many "
    "before must through back years where much your way well down should because each just those "
    "people how too little state good very make world still own see men work long get here "
    "between both life being under never day same another know while last might us great old "
    "year off come since against go came right used take three"
).split()


# Output ids outside [WORD_ID_MIN, WORD_ID_END) and the answer range below are special tokens (EOS): no text, as
# SGLang's detokenizer skips special tokens by default (sampling_params.skip_special_tokens=True).
WORD_ID_MIN, WORD_ID_END = 1000, 32000

# Answer tokens (the answers file's texts, see _sim_server.Answers): ids reserved in [ANSWER_ID_MIN, ANSWER_ID_END),
# far above any vocabulary and EOS id and below 2**31 (the harness's bound on a token id). Like the prompt tokenizer
# (text_tokens) a token carries up to TOKEN_BYTES bytes of UTF-8, but never a cut character, so every token is text
# of its own and the text of a prefix of the ids is a prefix of the text: up to 4 ASCII characters (1..127) packed
# 7 bits each, the first in the high bits, an unused place 0 (ANSWER_ASCII_SPAN ids); any other character alone, its
# code point above them (1-4 UTF-8 bytes).
ANSWER_ID_MIN = 1 << 30
ANSWER_ASCII_SPAN = 1 << 28
ANSWER_ID_END = ANSWER_ID_MIN + ANSWER_ASCII_SPAN + 0x110000


def answer_tokens(text: str) -> List[int]:
    """The answer-token ids of a text (see ANSWER_ID_MIN): runs of up to 4 ASCII characters, other characters alone."""
    ids: List[int] = []
    run = ""
    for char in text:
        if 0 < ord(char) < 128:
            run += char
            if len(run) == 4:
                ids.append(_ascii_token(run))
                run = ""
            continue
        if run:
            ids.append(_ascii_token(run))
            run = ""
        ids.append(ANSWER_ID_MIN + ANSWER_ASCII_SPAN + ord(char))
    if run:
        ids.append(_ascii_token(run))
    return ids


def _ascii_token(run: str) -> int:
    value = 0
    for place in range(4):
        value = (value << 7) | (ord(run[place]) if place < len(run) else 0)
    return ANSWER_ID_MIN + value


def answer_text(token: int) -> str:
    """The text of one answer-token id (answer_tokens' inverse, token by token)."""
    value = token - ANSWER_ID_MIN
    if value >= ANSWER_ASCII_SPAN:
        return chr(value - ANSWER_ASCII_SPAN)
    return "".join(chr(code) for code in ((value >> shift) & 0x7F for shift in (21, 14, 7, 0)) if code)


def detokenize(ids) -> str:
    """Text for output token ids: a word id is one word with its leading space, an answer id its text (answer_text),
    any other id (EOS) nothing; each id's text is its own, so text grows with the ids (prefix-stable)."""
    parts = []
    for token in ids:
        if WORD_ID_MIN <= token < WORD_ID_END:
            parts.append(" " + WORDS[token % len(WORDS)])
        elif ANSWER_ID_MIN <= token < ANSWER_ID_END:
            parts.append(answer_text(token))
    return "".join(parts)


def json_text(text: str) -> str:
    """A text as it stands between the quotes of its JSON string (json.dumps, non-ASCII kept as UTF-8 as SGLang's
    orjson writes it); escaping is per character, so the escaped text of a concatenation is the concatenation."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


def lossy_ids(planned: List[int], after: int, seed: int, keep: Optional[int] = None) -> List[int]:
    """The ids a lossy speculative server emits instead of the target's ``planned`` ones: every id at position
    ``after`` (0-based) and later becomes a filler word whose text differs from the planned id's, all but the id
    ``keep`` (the EOS: the length, and so the timing, stay the target's). Deterministic in ``seed``."""
    out = list(planned[:max(0, after)])
    fillers = model.token_ids(seed ^ 0x1055, max(0, len(planned) - len(out)), WORD_ID_END)
    for token, filler in zip(planned[len(out):], fillers):
        if keep is not None and token == keep:
            out.append(token)
            continue
        shown = detokenize([token])
        while detokenize([filler]) == shown:
            filler = WORD_ID_MIN + (filler - WORD_ID_MIN + 1) % (WORD_ID_END - WORD_ID_MIN)
        out.append(filler)
    return out


# The emulator's tokenizer for text prompts: a token is 4 bytes of the UTF-8 text (about what BPE gives for English,
# and the count approx_tokens reports). It is prefix-stable: the tokens of a text's whole 4-byte chunks are the same
# whatever follows, so turn 2 of a conversation (turn 1's prompt + its answer + the next user turn) starts with
# turn 1's tokens but for the chunk cut at the end of turn 1's text.
TOKEN_BYTES = 4


def text_tokens(text: str) -> tuple:
    """The prompt tokens of a text: its UTF-8 bytes in chunks of TOKEN_BYTES (one empty token for no text)."""
    data = text.encode("utf-8")
    return tuple(data[i:i + TOKEN_BYTES] for i in range(0, len(data), TOKEN_BYTES)) or (b"",)


class _RadixNode:
    __slots__ = ("key", "children", "parent", "last_access", "lock_ref")

    def __init__(self, key: tuple, parent: Optional["_RadixNode"]):
        self.key = key
        self.children = {}
        self.parent = parent
        self.last_access = 0
        self.lock_ref = 0


class PrefixCache:
    """SGLang's radix tree of cached token sequences (mem_cache/radix_cache.py, page size 1), token count only.

    ``match`` gives the longest cached prefix of a sequence (splitting the node it ends in, as SGLang does);
    ``insert`` adds a sequence; a running request locks the path of its match (lock_ref) so eviction spares it;
    ``evict`` drops least recently used unlocked leaves. Tokens are any hashable values (ids or text chunks)."""

    def __init__(self):
        self.root = _RadixNode((), None)
        self.root.lock_ref = 1
        self.size = 0  # tokens held
        self._tick = 0

    def _touch(self) -> int:
        self._tick += 1
        return self._tick

    @staticmethod
    def _common(key: tuple, seq, start: int) -> int:
        n = min(len(key), len(seq) - start)
        i = 0
        while i < n and key[i] == seq[start + i]:
            i += 1
        return i

    def _split(self, node: _RadixNode, at: int) -> _RadixNode:
        """Cut node's key at `at`: a new parent holds key[:at], node keeps the rest; returns the new parent."""
        head = _RadixNode(node.key[:at], node.parent)
        head.last_access = node.last_access
        head.lock_ref = node.lock_ref
        head.children = {node.key[at]: node}
        node.parent.children[node.key[0]] = head
        node.key = node.key[at:]
        node.parent = head
        return head

    def match(self, seq):
        """(matched token count, the node the match ends at) of seq's longest cached prefix."""
        node, pos, now = self.root, 0, self._touch()
        while pos < len(seq):
            child = node.children.get(seq[pos])
            if child is None:
                break
            common = self._common(child.key, seq, pos)
            child.last_access = now
            if common < len(child.key):
                node = self._split(child, common)
                pos += common
                break
            node, pos = child, pos + common
        return pos, node

    def insert(self, seq) -> None:
        node, pos, now = self.root, 0, self._touch()
        while pos < len(seq):
            child = node.children.get(seq[pos])
            if child is None:
                leaf = _RadixNode(tuple(seq[pos:]), node)
                leaf.last_access = now
                node.children[seq[pos]] = leaf
                self.size += len(leaf.key)
                return
            common = self._common(child.key, seq, pos)
            child.last_access = now
            if common < len(child.key):
                child = self._split(child, common)
            node, pos = child, pos + common

    @staticmethod
    def lock(node: _RadixNode, delta: int) -> None:
        while node is not None:
            node.lock_ref += delta
            node = node.parent

    def evict(self, tokens: int) -> int:
        """Drop least recently used unlocked leaves until `tokens` are freed (or none is left); the tokens freed."""
        if tokens <= 0:
            return 0
        heap, stack = [], list(self.root.children.values())
        while stack:
            node = stack.pop()
            if node.children:
                stack.extend(node.children.values())
            elif node.lock_ref == 0:
                heap.append((node.last_access, id(node), node))
        heapq.heapify(heap)
        freed = 0
        while heap and freed < tokens:
            _access, _ident, node = heapq.heappop(heap)
            parent = node.parent
            del parent.children[node.key[0]]
            freed += len(node.key)
            self.size -= len(node.key)
            if parent is not self.root and not parent.children and parent.lock_ref == 0:
                heapq.heappush(heap, (parent.last_access, id(parent), parent))
        return freed

    def clear(self) -> None:
        self.root.children = {}
        self.size = 0


class GenRequest:
    """One sequence being generated; the engine appends to it, an HTTP thread reads it.

    ``tau``: the request's own mean accepted tokens per verify step (the workload's when None); ``eos_at``: the
    output length at which the model emits ``eos_id`` and stops (None: never, as with ignore_eos).
    The prompt's tokens, for the prefix cache: ``prompt_ids`` (token ids given), else ``prompt_text`` (text, in
    text_tokens); ``chat``: the client is shown the answer with its leading space stripped (a chat message), so that
    is the answer text a next turn sends back. Neither: the request is not cached.
    ``answer_ids``: answer tokens the output begins with (answer_tokens of the answers file's text; the filler words
    follow); ``lossy_after``: the lossy fault, every output id from that position on replaced (lossy_ids). Neither
    changes how many tokens a step gives, only which."""

    def __init__(self, rid: str, prompt_tokens: int, max_new_tokens: int, seed: int,
                 workload: model.Workload, sink, index: int = 0, stream: bool = False,
                 crash_trigger: bool = False, internal: bool = False, tau: Optional[float] = None,
                 eos_at: Optional[int] = None, eos_id: int = 2, prompt_ids=None,
                 prompt_text: Optional[str] = None, chat: bool = False, answer_ids=None,
                 lossy_after: Optional[int] = None):
        self.rid = rid
        self.prompt_tokens = prompt_tokens
        self.prompt_ids = None if prompt_ids is None else tuple(prompt_ids)
        self.prompt_text = prompt_text
        self.chat = chat
        self.cached_tokens = 0  # prompt tokens the prefill found in the prefix cache
        self.prefix_node = None  # the cache node its match ends at, locked while it runs
        self.max_new_tokens = max(0, int(max_new_tokens))
        self.sampler = model.AcceptanceSampler(workload, seed, tau)
        self.planned_ids = model.token_ids(seed, self.max_new_tokens)
        self.eos_id = eos_id
        self.stops_at_eos = eos_at is not None and 0 < eos_at <= self.max_new_tokens
        self.limit = eos_at if self.stops_at_eos else self.max_new_tokens
        if answer_ids:
            shown = list(answer_ids)[:self.max_new_tokens]
            self.planned_ids[:len(shown)] = shown
        if self.stops_at_eos:
            self.planned_ids[eos_at - 1] = eos_id
        if lossy_after is not None:
            self.planned_ids = lossy_ids(self.planned_ids, lossy_after, seed, eos_id if self.stops_at_eos else None)
        self.num_draft_tokens = max(1, int(workload.num_draft_tokens))
        self.output_ids: List[int] = []
        self.verify_ct = 0
        # Per verify step, the drafted tokens it committed beyond the bonus one (SGLang's num_correct_drafts).
        self.num_correct_drafts = 0
        self.correct_drafts_histogram: List[int] = []
        self.sink = sink
        self.index = index
        self.stream = stream
        self.crash_trigger = crash_trigger
        self.internal = internal
        self.aborted = False
        self.finished = False
        self.created = time.time()
        self.started = time.perf_counter()
        self.prefill_started: Optional[float] = None  # when the scheduler took it off the queue
        self.first_token_at: Optional[float] = None
        self.finished_at: Optional[float] = None
        self.dp_rank = 0
        self._delivered = 0  # tokens the HTTP side has written to the client (streaming)
        self._delivery = threading.Condition()
        # The JSON of the text and ids streamed so far, grown a step at a time (streaming re-sends them whole).
        self._shown = 0
        self._shown_text = ""
        self._shown_ids = ""

    @property
    def completion_tokens(self) -> int:
        return len(self.output_ids)

    def prompt_sequence(self) -> Optional[tuple]:
        """The prompt's tokens as the prefix cache keys them (None: not cached)."""
        if self.prompt_ids is not None:
            return self.prompt_ids
        if self.prompt_text is not None:
            return text_tokens(self.prompt_text)
        return None

    def cached_sequence(self) -> Optional[tuple]:
        """What SGLang inserts into the radix tree once the request finishes (cache_finished_req): the prompt and the
        output, less the last output token, whose KV was never computed. For a text prompt the output is its text
        as the client got it, tokenized with the prompt (the ids of a text are the ids its detokenized text gives
        back, as a BPE round trip does)."""
        if self.prompt_ids is not None:
            seq = self.prompt_ids + tuple(self.output_ids)
        elif self.prompt_text is not None:
            answer = detokenize(self.output_ids)
            seq = text_tokens(self.prompt_text + (answer.lstrip() if self.chat else answer))
        else:
            return None
        return seq[:-1] if self.output_ids else seq

    def emit(self, count: int) -> None:
        take = min(count, self.limit - len(self.output_ids))
        self.output_ids.extend(self.planned_ids[len(self.output_ids):len(self.output_ids) + take])
        if self.first_token_at is None and self.output_ids:
            self.first_token_at = time.perf_counter()
        if len(self.output_ids) >= self.limit:
            self.finished = True
            self.finished_at = time.perf_counter()
        self.sink.put((self.index, len(self.output_ids), self.verify_ct, self.finished))

    def text_and_ids_json(self, count: int):
        """(the text between the quotes of its JSON string, the ids between the brackets of their JSON list) of the
        first ``count`` output tokens, as json.dumps writes them. Made incrementally: a stream asks for growing
        counts, so each step costs its own tokens only, not the whole output again."""
        if count < self._shown:
            ids = self.output_ids[:count]
            return json_text(detokenize(ids)), ", ".join(map(str, ids))
        new = self.output_ids[self._shown:count]
        if new:
            self._shown_text += json_text(detokenize(new))
            more = ", ".join(map(str, new))
            self._shown_ids = self._shown_ids + ", " + more if self._shown_ids else more
            self._shown = count
        return self._shown_text, self._shown_ids

    def mark_delivered(self, count: int) -> None:
        """The HTTP side has written the first ``count`` output tokens to the client."""
        with self._delivery:
            self._delivered = max(self._delivered, count)
            self._delivery.notify_all()

    def wait_delivered(self, timeout: float) -> bool:
        """Until every token emitted so far has been written to the client (False at the deadline,
        or at once when the request was aborted)."""
        deadline = time.monotonic() + timeout
        with self._delivery:
            while self._delivered < len(self.output_ids):
                remaining = deadline - time.monotonic()
                if self.aborted or remaining <= 0:
                    return False
                self._delivery.wait(min(remaining, 0.1))
        return True

    def verified(self, committed: int) -> None:
        """One verify step committed ``committed`` tokens (the bonus token and the drafts it accepted)."""
        self.verify_ct += 1
        correct = max(0, committed - 1)
        self.num_correct_drafts += correct
        if len(self.correct_drafts_histogram) <= correct:
            self.correct_drafts_histogram.extend([0] * (correct + 1 - len(self.correct_drafts_histogram)))
        self.correct_drafts_histogram[correct] += 1

    def finish_reason(self) -> dict:
        """SGLang's finish reason: FINISH_MATCHED_TOKEN.to_json() {type: stop, matched: <token id>} and
        FINISH_LENGTH.to_json() {type: length, length: max_new_tokens} (managers/schedule_batch.py:284-329)."""
        if self.stops_at_eos and len(self.output_ids) >= self.limit:
            return {"type": "stop", "matched": self.eos_id}
        return {"type": "length", "length": self.max_new_tokens}

    def meta_info(self, final: bool, spec: bool, weight_version: str = "default",
                  completion_tokens: Optional[int] = None) -> dict:
        """SGLang 0.5.23's meta_info, after `completion_tokens` output tokens (default: all generated so far).

        As sglang/srt/managers/tokenizer_manager.py builds it: the keys id .. num_retractions at line 2507,
        reasoning_tokens, completion_tokens and cached_tokens at 2555-2557, e2e_latency on the final output only
        (2753), then for a speculative server on the final output only (2755, _calculate_spec_decoding_metrics at
        3138-3207): spec_accept_rate = num_correct_drafts / num_proposed_drafts (no bonus token), spec_accept_length
        = completion_tokens / spec_verify_ct (bonus included), spec_num_correct_drafts, spec_num_proposed_drafts =
        spec_verify_ct * (speculative_num_draft_tokens - 1), spec_verify_ct (verify steps of this request, counted
        in scheduler_components/batch_result_processor.py:832; the prefill's first token is no verify step) and
        spec_correct_drafts_histogram (steps per number of correct drafts, schedule_batch.py:1566). Those are added
        only when num_proposed_drafts > 0. Here a step's correct drafts are the tokens it committed less the bonus
        one, so a step cut short by EOS or max_new_tokens counts what it kept."""
        meta = {
            "id": self.rid,
            "finish_reason": self.finish_reason() if final else None,
            "prompt_tokens": self.prompt_tokens,
            "weight_version": weight_version,
            "num_retractions": 0,
            "reasoning_tokens": 0,
            "completion_tokens": self.completion_tokens if completion_tokens is None else completion_tokens,
            "cached_tokens": self.cached_tokens,
        }
        if final:
            meta["e2e_latency"] = (self.finished_at or time.perf_counter()) - self.started
            proposed = self.verify_ct * (self.num_draft_tokens - 1)
            if spec and self.verify_ct > 0 and proposed > 0:
                meta["spec_accept_rate"] = self.num_correct_drafts / proposed
                meta["spec_accept_length"] = self.completion_tokens / self.verify_ct
                meta["spec_num_correct_drafts"] = self.num_correct_drafts
                meta["spec_num_proposed_drafts"] = proposed
                meta["spec_verify_ct"] = self.verify_ct
                if self.correct_drafts_histogram:
                    meta["spec_correct_drafts_histogram"] = list(self.correct_drafts_histogram)
        return meta


# The GPU's load (0..1 of the way from idle to peak board power) for a step: decode streams the weights
# (memory-bound: a floor), more tokens per step fill the SMs, and a speculative method's draft model adds work.
PREFILL_LOAD = 0.9
DECODE_FLOOR = 0.3
DECODE_COMPUTE = 0.55
COMPUTE_TOKENS = 64.0   # tokens per step at which the compute share is 63% of its span
DRAFT_LOAD = 0.1


def step_load(wl: model.Workload, batch: int, prefill: bool = False) -> float:
    """The load a step puts on each of its GPUs: prefill near peak; decode from a memory-bound floor rising with
    the tokens the step verifies (batch x draft tokens, or the DDTree budget) plus the drafter's work."""
    if batch <= 0:
        return 0.0
    if prefill:
        return PREFILL_LOAD
    if wl.method == model.AUTOREGRESSIVE:
        per_seq, draft = 1, 0.0
    elif wl.method == "DDTREE":
        per_seq, draft = max(1, int(wl.ddtree_budget)), DRAFT_LOAD
    else:
        per_seq, draft = max(1, int(wl.num_draft_tokens)), DRAFT_LOAD
    compute = DECODE_COMPUTE * (1.0 - math.exp(-batch * per_seq / COMPUTE_TOKENS))
    return min(1.0, DECODE_FLOOR + compute + draft)


class EngineStats:
    """Counters an engine keeps for /server_info and /metrics (guarded by the engine's lock).

    The request counters are keyed by is_streaming ("true" / "false") and, as SGLang's tokenizer counts them
    (TokenizerMetricsCollector.observe_one_finished_request), grow when a request finishes; the histograms keep
    their observations (seconds)."""

    def __init__(self):
        self.prompt_tokens_total = collections.Counter()
        self.generation_tokens_total = collections.Counter()
        self.num_requests_total = collections.Counter()
        self.cached_tokens_total = 0
        self.spec_verify_calls_total = 0
        self.time_to_first_token = collections.defaultdict(list)
        self.e2e_request_latency = collections.defaultdict(list)
        self.queue_time: List[float] = []
        # the last prefill batch's hit share (SGLang's cache_hit_rate gauge: hit / (new + hit) of a prefill batch)
        self.last_cache_hit_rate = 0.0
        self.forward_ct_decode = 0
        # One decode-log window (SGLang's --decode-log-interval): the log line and the gauges.
        self.window_generated = 0
        self.window_started = time.perf_counter()
        self.window_accept_tokens = 0
        self.window_forward_ct = 0
        # Lifetime totals behind /server_info's avg_spec_accept_length, reset by /flush_cache.
        # SGLang folds a window into them only when the window closes (every 40 decode steps by
        # default), so a short run there may report no average; here they count every step.
        self.spec_total_accept_tokens = 0
        self.spec_total_forward_ct = 0
        self.last_gen_throughput = 0.0
        self.last_accept_length = 0.0


class Engine:
    """The scheduler of one DP rank."""

    def __init__(self, hw: model.Hardware, wl: model.Workload, log: Callable[[str], None],
                 time_scale: float = 1.0, max_running_requests: int = 256,
                 chunked_prefill_size: int = 8192, decode_log_interval: int = 40,
                 max_total_num_tokens: int = 1 << 20, dp_rank: int = 0,
                 on_crash: Optional[Callable[[], None]] = None,
                 on_busy: Optional[Callable[[int, bool], None]] = None,
                 step_seconds: Optional[float] = None, prefix_cache: bool = True):
        self.hw = hw
        self.wl = wl
        self.log = log
        self.time_scale = max(0.0, time_scale)
        # When set, every step takes this long whatever the model says (a fixed offered chunk rate).
        self.step_seconds = None if step_seconds is None else max(0.0, step_seconds)
        self.max_running_requests = max(1, max_running_requests)
        self.chunked_prefill_size = max(1, chunked_prefill_size)
        self.decode_log_interval = max(1, decode_log_interval)
        self.max_total_num_tokens = max(1, max_total_num_tokens)
        self.dp_rank = dp_rank
        self.on_crash = on_crash
        self.on_busy = on_busy
        self.spec = wl.method != model.AUTOREGRESSIVE
        # None: no prefix cache (--disable-radix-cache, or hits lost under speculation: SimServer decides)
        self.cache: Optional[PrefixCache] = PrefixCache() if prefix_cache else None
        self.cond = threading.Condition()
        self.waiting: "collections.deque[GenRequest]" = collections.deque()
        self.running: List[GenRequest] = []
        self.stats = EngineStats()
        self._clock: Optional[float] = None
        # Publishes the GPUs' load for the simulated power (None: not on a simulated GPU host).
        self.power = _sim_gpu.power_publisher(dp_rank, max(1, int(getattr(wl, "tp", 1) or 1)))
        self._thread = threading.Thread(target=self._run, name="scheduler-dp%d" % dp_rank, daemon=True)

    def start(self) -> None:
        self._thread.start()

    # ------------------------------------------------------------------ API for the HTTP side

    def submit(self, req: GenRequest) -> None:
        req.dp_rank = self.dp_rank
        with self.cond:
            self.waiting.append(req)
            self.cond.notify()

    def abort(self, req: GenRequest) -> None:
        with self.cond:
            req.aborted = True

    def load(self) -> int:
        with self.cond:
            return len(self.waiting) + len(self.running)

    def counts(self):
        with self.cond:
            return len(self.running), len(self.waiting)

    def flush_cache(self) -> bool:
        """Empty the prefix cache and reset the cumulative acceptance statistics; refused while requests are in
        flight (SGLang's Scheduler.flush_cache resets the tree)."""
        with self.cond:
            if self.waiting or self.running:
                self.log("Cache not flushed because there are pending requests. #queue-req: %d, "
                         "#running-req: %d" % (len(self.waiting), len(self.running)), warning=True)
                return False
            stats = self.stats
            stats.forward_ct_decode = stats.window_generated = 0
            stats.window_accept_tokens = stats.window_forward_ct = 0
            stats.spec_total_accept_tokens = stats.spec_total_forward_ct = 0
            if self.cache is not None:
                self.cache.clear()
            self.log("Cache flushed successfully!")
            return True

    def avg_spec_accept_length(self) -> Optional[float]:
        with self.cond:
            if not self.spec or self.stats.spec_total_forward_ct <= 0:
                return None
            return self.stats.spec_total_accept_tokens / self.stats.spec_total_forward_ct

    # ------------------------------------------------------------------ the scheduler loop

    def _spend(self, ms: float) -> None:
        """Let ``ms`` of modelled GPU time pass (scaled, or the fixed step time), without drifting over many steps."""
        seconds = ms / 1000.0 * self.time_scale if self.step_seconds is None else self.step_seconds
        if seconds <= 0:
            return
        now = time.perf_counter()
        if self._clock is None or self._clock < now - 0.05:
            self._clock = now
        self._clock += seconds
        delay = self._clock - time.perf_counter()
        if delay > 0:
            time.sleep(delay)

    def _publish_load(self, load: float, ms: float) -> None:
        """The GPUs' load for the step about to run (the publisher writes only on a change or a renewal)."""
        if self.power is not None:
            seconds = ms / 1000.0 * self.time_scale if self.step_seconds is None else self.step_seconds
            self.power.set(load, busy_for_s=seconds)

    def _run(self) -> None:
        try:
            self._loop()
        except Exception:  # a scheduler that dies takes the server down, as in SGLang
            self.log("Scheduler hit an exception: " + traceback.format_exc(), warning=True)
            os._exit(1)

    def _loop(self) -> None:
        while True:
            with self.cond:
                idle = not self.waiting and not self.running
            if idle:
                self.close_partial_window()
                if self.power is not None:
                    self.power.set(0.0)
                if self.on_busy is not None:
                    self.on_busy(self.dp_rank, False)
            with self.cond:
                while not self.waiting and not self.running:
                    self._clock = None
                    self.cond.wait()
            if idle:
                self.stats.window_started = time.perf_counter()  # idle time is not generation time
                if self.on_busy is not None:
                    self.on_busy(self.dp_rank, True)
            with self.cond:
                self._drop_aborted()
                batch = self._take_prefill_batch()
                running = list(self.running)
                queued = len(self.waiting)
            if batch:
                self._prefill(batch, len(running), queued)
            elif running:
                self._decode(running, queued)

    def _drop_aborted(self) -> None:
        self.waiting = collections.deque(r for r in self.waiting if not r.aborted)
        for req in self.running:
            if req.aborted:
                self._release(req)
        self.running = [r for r in self.running if not r.aborted and not r.finished]

    def _match(self, req: GenRequest) -> None:
        """The request's cached prefix: the longest the cache holds, at most prompt - 1 tokens (SGLang computes at
        least one: Req.init_next_round_input keeps the last prompt token out of the match)."""
        seq = req.prompt_sequence() if self.cache is not None and not req.internal else None
        if not seq:
            req.cached_tokens, req.prefix_node = 0, None
            return
        matched, node = self.cache.match(seq[:max(0, min(len(seq), req.prompt_tokens) - 1)])
        req.cached_tokens, req.prefix_node = matched, node

    def _release(self, req: GenRequest) -> None:
        if req.prefix_node is not None:
            PrefixCache.lock(req.prefix_node, -1)
            req.prefix_node = None

    def _in_use(self) -> int:
        """KV slots the running requests hold beyond what they share with the cache."""
        return sum(r.prompt_tokens - r.cached_tokens + r.completion_tokens for r in self.running
                   if not r.finished and not r.aborted)

    def _fit(self, more: int = 0) -> None:
        """Evict least recently used cache leaves until the cache, the running requests and `more` new tokens fit
        in max_total_num_tokens."""
        if self.cache is not None:
            self.cache.evict(self.cache.size + self._in_use() + more - self.max_total_num_tokens)

    def _take_prefill_batch(self) -> List[GenRequest]:
        batch: List[GenRequest] = []
        tokens = 0
        while self.waiting and len(self.running) + len(batch) < self.max_running_requests:
            nxt = self.waiting[0]
            self._match(nxt)
            extend = nxt.prompt_tokens - nxt.cached_tokens
            if batch and tokens + extend > self.chunked_prefill_size:
                break
            batch.append(self.waiting.popleft())
            if nxt.prefix_node is not None:
                PrefixCache.lock(nxt.prefix_node, 1)
            nxt.prefill_started = time.perf_counter()
            if not nxt.internal:
                self.stats.queue_time.append(nxt.prefill_started - nxt.started)
            tokens += extend
        if batch:
            self._fit(tokens)
        return batch

    def _prefill(self, batch: List[GenRequest], num_running: int, queued: int) -> None:
        new_tokens = sum(r.prompt_tokens - r.cached_tokens for r in batch)
        cached_tokens = sum(r.cached_tokens for r in batch)
        if not all(r.internal for r in batch):
            self.log("Prefill batch, #new-seq: %d, #new-token: %d, #cached-token: %d, token usage: %.2f, "
                     "#running-req: %d, #queue-req: %d"
                     % (len(batch), new_tokens, cached_tokens, self._token_usage(), num_running, queued))
            self.stats.last_cache_hit_rate = cached_tokens / max(1, new_tokens + cached_tokens)
        # only the tokens the cache does not hold are computed
        ms = model.prefill_ms(self.hw, self.wl, new_tokens)
        self._publish_load(step_load(self.wl, len(batch), prefill=True), ms)
        self._spend(ms)
        if any(r.crash_trigger and r.max_new_tokens <= 1 for r in batch):
            self._crash()  # nothing left to stream: die before the only token
        with self.cond:
            for req in batch:
                if req.aborted:
                    self._release(req)
                    continue
                if req.max_new_tokens > 0:
                    req.emit(1)  # the prefill samples the first token
                    self._count_generated(req, 1)
                else:
                    req.finished = True
                    req.finished_at = time.perf_counter()
                    req.sink.put((req.index, 0, 0, True))
                if req.finished:
                    self._finish(req)
                else:
                    self.running.append(req)

    def _decode(self, running: List[GenRequest], queued: int) -> None:
        context = sum(r.prompt_tokens + r.completion_tokens for r in running)
        ms = model.decode_step_ms(self.hw, self.wl, len(running), context)
        self._publish_load(step_load(self.wl, len(running)), ms)
        self._spend(ms)
        if any(r.crash_trigger for r in running):
            self._crash(running)
        accepted_total = 0
        with self.cond:
            for req in running:
                if req.aborted or req.finished:
                    continue
                gained = min(req.sampler.next(), req.limit - req.completion_tokens)
                req.verified(gained)  # before emit: the HTTP side reads the counts once the sink has the step
                req.emit(gained)
                accepted_total += gained
                self._count_generated(req, gained)
                if req.finished:
                    self._finish(req)
            self.running = [r for r in self.running if not r.finished and not r.aborted]
            stats = self.stats
            stats.forward_ct_decode += 1
            if self.spec:
                stats.window_accept_tokens += accepted_total
                stats.window_forward_ct += len(running)
                stats.spec_total_accept_tokens += accepted_total
                stats.spec_total_forward_ct += len(running)
            if stats.forward_ct_decode % self.decode_log_interval == 0:
                self._close_window(len(running), context, queued)

    def close_partial_window(self) -> None:
        """Update the gauges from a window cut short by idleness (SGLang would keep stale ones)."""
        with self.cond:
            if self.stats.window_generated or self.stats.window_forward_ct:
                self._close_window(0, 0, 0, log=False)

    def _count_generated(self, req: GenRequest, count: int) -> None:
        self.stats.window_generated += count

    def _finish(self, req: GenRequest) -> None:
        """A request is done: its tokens go into the prefix cache (SGLang's cache_finished_req), and the tokenizer's
        counters and histograms count it."""
        if self.cache is not None and not req.internal:
            seq = req.cached_sequence()
            if seq:
                self.cache.insert(seq)
        self._release(req)
        if self.cache is not None:
            self._fit()
        if req.internal:
            return
        stats, streaming = self.stats, "true" if req.stream else "false"
        stats.prompt_tokens_total[streaming] += req.prompt_tokens
        stats.generation_tokens_total[streaming] += req.completion_tokens
        stats.num_requests_total[streaming] += 1
        stats.cached_tokens_total += req.cached_tokens
        stats.spec_verify_calls_total += req.verify_ct
        end = req.finished_at or time.perf_counter()
        stats.time_to_first_token[streaming].append((req.first_token_at or end) - req.started)
        stats.e2e_request_latency[streaming].append(end - req.started)

    def _close_window(self, num_running: int, context: int, queued: int, log: bool = True) -> None:
        stats = self.stats
        now = time.perf_counter()
        stats.last_gen_throughput = stats.window_generated / max(now - stats.window_started, 1e-9)
        stats.window_generated = 0
        stats.window_started = now
        msg = "Decode batch, #running-req: %d, #token: %d, token usage: %.2f, " % (
            num_running, context, self._token_usage(context))
        if self.spec and stats.window_forward_ct > 0:
            accept_len = stats.window_accept_tokens / stats.window_forward_ct
            draft_per_round = max(1, self.wl.num_draft_tokens - 1)
            accept_rate = (stats.window_accept_tokens - stats.window_forward_ct) / (
                stats.window_forward_ct * draft_per_round)
            stats.last_accept_length = accept_len
            stats.window_accept_tokens = stats.window_forward_ct = 0
            msg += "accept len: %.2f, accept rate: %.2f, " % (accept_len, accept_rate)
        msg += "cuda graph: %s, gen throughput (token/s): %.2f, #queue-req: %d" % (
            self.wl.cuda_graph, stats.last_gen_throughput, queued)
        if log:
            self.log(msg)

    def _token_usage(self, context: Optional[int] = None) -> float:
        if context is None:
            context = sum(r.prompt_tokens + r.completion_tokens for r in self.running)
        return context / self.max_total_num_tokens

    def _crash(self, running: Optional[List[GenRequest]] = None) -> None:
        # The crash fault kills a stream mid-way: the client must have been sent what the request
        # generated before the step that dies, however late the HTTP thread gets scheduled.
        for req in running or ():
            if req.crash_trigger and req.stream:
                req.wait_delivered(CRASH_DELIVERY_TIMEOUT_S)
        if self.on_crash is not None:
            self.on_crash()
