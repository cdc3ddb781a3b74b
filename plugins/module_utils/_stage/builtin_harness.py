# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The builtin harness's load generator: seeded or dataset prompts, a request schedule and streaming worker threads.

Private to the specdec.bench collection; standard library only, so it runs on any benchmark host. The statistics
are made from its records by harness.from_builtin.

Prompts: seeded random token ids (make_prompts), or the conversations of a host prompts file (read_prompts, written
by the workload_prepare action): {"id", "category", "segments": [str, ...], "turns"}. A conversation's turn i is one
/generate request whose text is segments[0] + answer_0 + ... + answer_{i-1} + segments[i], answer_j being the text
the server generated for turn j; its turns run one after another in one concurrency slot.

Scheduling: each prompt has an arrival time (all at 0 for an infinite rate, else a seeded Poisson process, or
seeded gamma gaps with a burstiness other than 1). A request is meant to start at its arrival or when a concurrency
slot frees up, whichever is later; the record keeps that intended start beside the actual one, so the client's own
lag shows in the results.

Reading: the stream is read from the socket a read at a time (every chunk that read completed shares its arrival
time, taken before anything is parsed), and each chunk only for its text and token count (lean_chunk), so the
cost of a chunk does not grow with the cumulative text and ids SGLang re-sends in every chunk. Besides the
timings, a record keeps each chunk's arrival (chunk_s, seconds from the run's start, on the run's clock), so
the client's delivery delay can be checked against a server's own send times (tests/perf/bench_harness.py).

Limits: nothing a server sends can hold a run past its deadlines (a watchdog thread ends requests past them, see
LoadRun), nor make the client loop or grow without bound: chunk framing is parsed strictly, a line is bounded
(MAX_LINE_BYTES) and kept as pieces until its newline, and token counts are bounded by what the request asked.
"""

from __future__ import annotations

import http.client
import itertools
import json
import random
import re
import socket
import threading
import time
import urllib.parse

from ansible_collections.specdec.bench.plugins.module_utils._common import finite
from .harness import RequestTiming
from . import outputs
from .sglang_http import (
    MAX_LINE_BYTES,
    BrokenResponse,
    HTTPStatusError,
    join,
    line_too_long,
)

# Prompt token ids are drawn from this range: above the special tokens of common vocabularies, below their size.
TOKEN_ID_LOW = 1000
TOKEN_ID_HIGH = 30000
ITL_DIGITS = 7  # raw records keep inter-token gaps and chunk times to 0.1 us
READ_SIZE = 1 << 16  # bytes asked of the socket per read
WATCHDOG_SECONDS = 0.1  # how often the watchdog looks for requests past their deadline (their lateness at most)
MAX_CHUNK_HEAD = 1024  # bytes of a chunk size line, extensions included
_HEX_DIGITS = b'0123456789abcdefABCDEF'
_CHUNK_SIZE = re.compile(rb'([0-9A-Fa-f]{1,15})[ \t]*(?:;[^\r\n]*)?\Z')
# A JSON value right after a key: what stream chunks are read for without parsing the whole chunk.
_AFTER_KEY = re.compile(rb'\s*:\s*(?:(-?[0-9][0-9.eE+-]*)|(""|null)|("))')


def make_prompts(seed, count, input_len):
    """count lists of input_len token ids, the same for the same seed."""
    rng = random.Random(seed)
    return [[rng.randrange(TOKEN_ID_LOW, TOKEN_ID_HIGH) for _token in range(input_len)] for _prompt in range(count)]


def arrival_times(seed, count, request_rate, burstiness=1.0):
    """Seconds from the start at which each request arrives: all 0 when the rate is infinite or unset, else a
    Poisson process of that rate (exponential gaps, seeded), the first at 0 as in SGLang's client. With burstiness
    other than 1.0 the gaps are gamma distributed, shape = burstiness, scale = 1 / (rate * burstiness), so the mean
    gap stays 1 / rate and their coefficient of variation is 1 / sqrt(burstiness) (vLLM benchmark_serving's
    get_request and its --burstiness: below 1 burstier, above 1 steadier); the same seeded generator."""
    rate = finite(request_rate)
    if rate is None or rate <= 0:
        return [0.0] * count
    rng = random.Random('arrivals-%s' % seed)
    shape = float(burstiness)
    times, now = [], 0.0
    for _request in range(count):
        times.append(now)
        if shape == 1.0:
            now += rng.expovariate(rate)  # exactly the Poisson schedule of every run before burstiness
        else:
            now += rng.gammavariate(shape, 1.0 / (rate * shape))
    return times


def arrivals_text(times):
    """A run's arrival schedule as its arrivals file holds it: a JSON list of seconds from the run's start, rounded to
    6 digits (byte-identical for the same seed, count, rate and burstiness)."""
    return json.dumps([round(float(value), 6) for value in times])


def sampling_params(max_new_tokens, temperature=0.0, top_p=1.0, top_k=-1, ignore_eos=True):
    """SGLang's sampling_params of every request of a run."""
    return {'max_new_tokens': max_new_tokens, 'temperature': temperature, 'top_p': top_p, 'top_k': top_k,
            'ignore_eos': ignore_eos}


def generate_body(prompt, output_len, sampling=None):
    """A native /generate request of prompt token ids, streamed; by default greedy, for exactly output_len tokens."""
    return {
        'input_ids': prompt,
        'sampling_params': sampling or sampling_params(output_len),
        'stream': True,
    }


def text_body(text, sampling):
    """A native /generate request of a templated prompt text, streamed."""
    return {'text': text, 'sampling_params': sampling, 'stream': True}


class Conversation:
    """One record of a prompts file: its turns' segments, sent turn after turn with the same sampling params."""

    __slots__ = ('id', 'category', 'segments', 'sampling')

    def __init__(self, record_id, category, segments, sampling):
        self.id = record_id
        self.category = category
        self.segments = segments
        self.sampling = sampling

    def turn_text(self, turn, answers):
        """The text of turn `turn` given the answers of the turns before it."""
        parts = [self.segments[0]]
        for index in range(1, turn + 1):
            parts.append(answers[index - 1])
            parts.append(self.segments[index])
        return ''.join(parts)


def read_prompts(path):
    """The records of a host prompts file, each checked: [{id, category, segments, turns}]. Raises ValueError
    naming the line of the first that is not one."""
    records = []
    with open(path, encoding='utf-8') as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise ValueError('%s line %d is not JSON: %s' % (path, number, exc))
            segments = record.get('segments') if isinstance(record, dict) else None
            if (not isinstance(segments, list) or not segments or not all(isinstance(x, str) for x in segments)
                    or not isinstance(record.get('id'), str)):
                raise ValueError('%s line %d is not a prompt record {"id": str, "category": str, "segments": [str, ...]}'
                                 % (path, number))
            records.append(record)
    if not records:
        raise ValueError('%s holds no prompt' % path)
    return records


def chunk_size(line):
    """The size of an HTTP/1.1 chunk from its size line (extensions ignored); BrokenResponse unless it is a plain
    hexadecimal number (int() would take -6, +6 or 0x6)."""
    if 0 < len(line) < 16 and not line.strip(_HEX_DIGITS):  # the common case, hexadecimal digits alone
        return int(line, 16)
    found = _CHUNK_SIZE.match(line)
    if found is None:
        raise BrokenResponse('chunk size line %r is not a hexadecimal size' % line[:40])
    return int(found.group(1), 16)


class Dechunker:
    """HTTP/1.1 chunked framing undone a read at a time: feed(data) gives (the payload bytes in data, the last chunk
    seen).

    What a read leaves unfinished is kept as state (the bytes still due of a chunk, or the start of a size line, at
    most MAX_CHUNK_HEAD bytes), so every byte is looked at once however the reads split the chunks, and a chunk
    larger than a read costs no more than its length. Bad framing raises BrokenResponse.
    """

    __slots__ = ('_left', '_crlf', '_head', 'ended')

    def __init__(self):
        self._left = 0  # payload bytes of the current chunk not yet read
        self._crlf = False  # the CRLF that ends a chunk's payload is still due
        self._head = b''  # the start of a size line (or of that CRLF) that the read cut
        self.ended = False

    def feed(self, data):
        if self._head:
            data = self._head + data
            self._head = b''
        pieces = []
        pos, end = 0, len(data)
        while pos < end and not self.ended:
            if self._left:
                stop = min(end, pos + self._left)
                pieces.append(data[pos:stop])
                self._left -= stop - pos
                pos = stop
                self._crlf = not self._left
            elif self._crlf:
                if end - pos < 2:
                    self._head = data[pos:]
                    break
                if data[pos:pos + 2] != b'\r\n':
                    raise BrokenResponse('a chunk longer than its size line says')
                pos += 2
                self._crlf = False
            else:
                eol = data.find(b'\r\n', pos, pos + MAX_CHUNK_HEAD)
                if eol < 0:
                    if end - pos >= MAX_CHUNK_HEAD:
                        raise BrokenResponse('a chunk size line longer than %d bytes' % MAX_CHUNK_HEAD)
                    self._head = data[pos:]
                    break
                size = chunk_size(data[pos:eol])
                pos = eol + 2
                stop = pos + size
                if size and stop + 2 <= end:  # the whole chunk is in this read: taken at once
                    if data[stop:stop + 2] != b'\r\n':
                        raise BrokenResponse('a chunk longer than its size line says')
                    pieces.append(data[pos:stop])
                    pos = stop + 2
                else:
                    self._left = size
                    self.ended = not size
        return b''.join(pieces), self.ended


def stream_reads(base_url, body, timeout, clock=time.perf_counter, max_line=MAX_LINE_BYTES, connect_within=None,
                 on_socket=None):
    """POST a streamed native /generate; yields (time of the read, [the SSE `data:` payloads it completed]) per read
    from the socket, the last payload b'[DONE]'.

    The time is taken as soon as the read returns, before anything is parsed, so every chunk of one read shares it
    and a chunk's time is when the client got it from the kernel. The HTTP/1.1 chunked framing is undone here,
    a read at a time, not a call per chunk; a line that no read ends yet is kept as its pieces, joined once when
    its newline comes, so reading costs time linear in the bytes. Nothing goes through a proxy.

    timeout bounds each silent wait for bytes; connect_within (seconds), when given, bounds the connection's set-up
    too, and on_socket(socket) gets the connected socket (a watchdog's way to end the request from outside).
    Raises HTTPStatusError for an answer other than 200, BrokenResponse for bad chunk framing or a line longer
    than max_line bytes, and ConnectionError when the stream ends before `data: [DONE]` (the server died).
    """
    parts = urllib.parse.urlsplit(base_url)
    setup = timeout if connect_within is None else max(0.001, min(timeout, connect_within))
    if parts.scheme == 'https':
        connection = http.client.HTTPSConnection(parts.hostname, parts.port or 443, timeout=setup)
    else:
        connection = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=setup)
    try:
        connection.connect()
        if setup != timeout:
            connection.sock.settimeout(timeout)
        if on_socket is not None:
            on_socket(connection.sock)
        connection.request('POST', parts.path.rstrip('/') + '/generate', json.dumps(body),
                           {'Content-Type': 'application/json', 'Accept': 'text/event-stream'})
        response = connection.getresponse()
        if response.status != 200:
            raise HTTPStatusError(join(base_url, '/generate'), response.status, response.read().decode('utf-8', 'replace'))
        chunked = response.chunked
        dechunk = Dechunker().feed
        # chunked: the raw bytes after the headers, with one system call at most per read; else the body itself
        read = response.fp.read1 if chunked else response.read1
        pending, pending_len = [], 0  # the start of a line that no read has ended yet
        ended = False
        while not ended:
            data = read(READ_SIZE)
            now = clock()
            if not data:
                break
            if chunked:
                data, ended = dechunk(data)
            if b'\n' not in data:
                if data:
                    pending.append(data)
                    pending_len += len(data)
                    if pending_len > max_line:
                        raise BrokenResponse(line_too_long(max_line))
                continue
            if pending:
                pending.append(data)
                data = b''.join(pending)
            lines = data.split(b'\n')
            tail = lines.pop()
            if len(data) > max_line and max(map(len, lines)) > max_line:
                raise BrokenResponse(line_too_long(max_line))
            pending, pending_len = ([tail], len(tail)) if tail else ([], 0)
            payloads = [line[5:].strip() for line in lines if line[:5] == b'data:']
            if payloads:
                yield now, payloads
        raise ConnectionError('the stream ended before data: [DONE]')
    finally:
        connection.close()


def _key_at(payload, key, last):
    """The match of _AFTER_KEY after the quoted key (bytes) in a JSON text, or None. A quoted key cannot occur
    inside a JSON string, where every quote is escaped."""
    at = payload.rfind(key) if last else payload.find(key)
    return None if at < 0 else _AFTER_KEY.match(payload, at + len(key))


def lean_chunk(payload, stamp_key=None):
    """(carries text, meta_info.completion_tokens, meta_info[stamp_key] or None) of a native /generate chunk, read
    without parsing the chunk: its cumulative text and ids grow with the output, so parsing them all is what
    would make the harness's cost per chunk grow with the output length. None when the chunk has not the shape
    SGLang gives it (`text` a string or null, `completion_tokens` a number): then it is parsed in full."""
    text = _key_at(payload, b'"text"', False)
    tokens = _key_at(payload, b'"completion_tokens"', True)
    if text is None or text.group(1) is not None or tokens is None or tokens.group(1) is None:
        return None
    try:
        count = int(tokens.group(1))
    except ValueError:
        return None
    stamp = None
    if stamp_key:
        found = _key_at(payload, stamp_key, True)
        stamp = float(found.group(1)) if found is not None and found.group(1) is not None else None
    return text.group(3) is not None, count, stamp


def check_count(name, value, most=None, what='asked for'):
    """A count of a server's meta_info: None, or an integer from 0 to most (when given); else BrokenResponse."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BrokenResponse('the server claims %s %r, which is no count' % (name, value))
    if most is not None and value > most:
        raise BrokenResponse('the server claims %s %d, more than the %d %s' % (name, value, most, what))


def check_meta(meta, asked_tokens, prompt_len):
    """A request's final meta_info against what was asked: no more output tokens than max_new_tokens, no more
    prompt tokens than were sent, no more verify steps than output tokens, an acceptance length within them; the
    draft counts counts, no more correct drafts than proposed, an acceptance rate in [0, 1], the histogram of correct
    drafts a list of counts adding up to the verify steps, no more cached tokens than prompt tokens. Raises
    BrokenResponse naming the field."""
    tokens = meta.get('completion_tokens')
    check_count('completion_tokens', tokens, asked_tokens)
    prompt = meta.get('prompt_tokens')
    check_count('prompt_tokens', prompt, prompt_len)
    steps = meta.get('spec_verify_ct')
    check_count('spec_verify_ct', steps, tokens, 'output tokens')
    proposed = meta.get('spec_num_proposed_drafts')
    check_count('spec_num_proposed_drafts', proposed)
    check_count('spec_num_correct_drafts', meta.get('spec_num_correct_drafts'), proposed, 'drafts proposed')
    check_count('cached_tokens', meta.get('cached_tokens'), prompt, 'prompt tokens')
    rate = meta.get('spec_accept_rate')
    if rate is not None and (finite(rate) is None or not 0 <= rate <= 1):
        raise BrokenResponse('the server claims spec_accept_rate %r, which is no rate in [0, 1]' % (rate,))
    hist = meta.get('spec_correct_drafts_histogram')
    if hist is not None:
        if not isinstance(hist, list):
            raise BrokenResponse('the server claims spec_correct_drafts_histogram %r, which is no list of counts' % (hist,))
        for steps_of in hist:
            check_count('spec_correct_drafts_histogram entry', steps_of)
        if steps is not None and sum(hist) != steps:
            raise BrokenResponse('the server claims spec_correct_drafts_histogram %r of %d verify steps, not its spec_verify_ct %d'
                                 % (hist[:20], sum(hist), steps))
    accept = meta.get('spec_accept_length')
    if accept is not None:
        value = finite(accept)
        if value is None or value < 0 or (tokens is not None and value > tokens):
            raise BrokenResponse('the server claims spec_accept_length %r, beyond its %s output tokens' % (accept, tokens))


class _Watch:
    """A request in flight, for the watchdog: when it must end, its socket once connected, why it was ended."""

    __slots__ = ('deadline', 'sock', 'reason')

    def __init__(self, deadline):
        self.deadline = deadline
        self.sock = None
        self.reason = None


def _shutdown(sock):
    """End a connection from another thread: a read blocked on it returns at once."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed by its request's thread


class LoadRun:
    """Sends the bodies at their arrival times with at most `concurrency` in flight, one thread per slot. A body
    may be a Conversation: its turns are sent one after another in its slot, each turn's text built from the
    answers before it; a turn that fails ends its conversation (its later turns are not sent).

    records fills as requests finish (list.append is atomic); start() returns at once, wait() joins. With a
    stamp_key, each record also keeps sent_s: every chunk's meta_info[stamp_key] (a server's send time on the
    same clock, as the SGLang emulator's sim_sent_at) less the run's start, None where a chunk has none.

    Limits: request_timeout bounds each silent wait for bytes; request_deadline (seconds from a request's start)
    and run_deadline (seconds from the run's start) bound the whole of it. A watchdog thread ends a request past
    either deadline by shutting its connection down (so a server that trickles keep-alive comments cannot hold it),
    and records it as failed with the reason; once the run's deadline passed, the requests not yet sent are recorded
    as failed, not sent. A count of a chunk's meta_info beyond what the body asked (max_new_tokens, the prompt's
    length) fails the request, as does a line longer than max_line bytes.
    """

    def __init__(self, base_url, bodies, arrivals, concurrency, request_timeout, warmup=False, clock=time.perf_counter,
                 stamp_key=None, request_deadline=None, run_deadline=None, max_line=MAX_LINE_BYTES):
        self.base_url = base_url
        self.bodies = bodies
        self.arrivals = arrivals
        self.concurrency = max(1, min(concurrency, len(bodies) or 1))
        self.request_timeout = request_timeout
        self.request_deadline = request_deadline
        self.run_deadline = run_deadline
        self.max_line = max_line
        self.warmup = warmup
        self.clock = clock
        self.stamp_key = stamp_key
        self.records = []
        self.started_at = None
        self.finished_at = None
        self._next = 0
        self._lock = threading.Lock()
        self._threads = []
        self._active = 0
        self._done = threading.Event()
        self._run_end = None
        self._closed = None  # why no request starts any more (the run's deadline passed)
        self._closing_event = threading.Event()  # set with _closed: wakes the slots waiting for an arrival
        self._watches = {}  # index: _Watch of each request in flight

    def start(self):
        """Start the slot threads, then the clock: thread start-up is not counted as client lag."""
        go = threading.Event()
        self._threads = [threading.Thread(target=self._worker, args=(go,), name='bench-slot-%d' % slot)
                         for slot in range(self.concurrency)]
        self._active = len(self._threads)
        for thread in self._threads:
            thread.daemon = True  # a module that is killed must not hang on its workers
            thread.start()
        self.started_at = self.clock()
        if self.run_deadline is not None:
            self._run_end = self.started_at + self.run_deadline
        if self.run_deadline is not None or self.request_deadline is not None:
            watchdog = threading.Thread(target=self._watchdog, name='bench-watchdog')
            watchdog.daemon = True
            watchdog.start()
        go.set()
        return self

    def wait(self, timeout=None):
        """True once every request finished (within timeout seconds when given)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in self._threads:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                return False
        if self.finished_at is None:
            self.finished_at = max([self.started_at] + [r['end_s'] + self.started_at for r in self.records
                                                        if r['end_s'] is not None])
        return True

    @property
    def duration(self):
        """From the start to the end of the last request (None until finished)."""
        return None if self.finished_at is None else self.finished_at - self.started_at

    def _take(self):
        with self._lock:
            index = self._next
            if index >= len(self.bodies):
                return None
            self._next += 1
            return index

    def _closing(self, now):
        """Why no request may start at `now`, or None; the first to see the run's deadline passed notes it."""
        if self._closed is None and self._run_end is not None and now >= self._run_end:
            self._closed = 'DeadlineExceeded: the run passed its deadline of %g s' % self.run_deadline
            self._closing_event.set()
        return self._closed

    def _watchdog(self):
        while not self._done.wait(WATCHDOG_SECONDS):
            now = self.clock()
            closed = self._closing(now)
            with self._lock:
                for watch in self._watches.values():
                    if watch.reason is not None or (closed is None and now < watch.deadline):
                        continue
                    watch.reason = closed or 'DeadlineExceeded: the request passed its deadline of %g s' % self.request_deadline
                    if watch.sock is not None:
                        _shutdown(watch.sock)

    def _attach(self, watch, sock):
        with self._lock:
            watch.sock = sock
            if watch.reason is not None:
                _shutdown(sock)

    def _worker(self, go):
        go.wait()
        try:
            slot_free = self.started_at
            while True:
                index = self._take()
                if index is None:
                    return
                intended = max(self.started_at + self.arrivals[index], slot_free)
                delay = intended - self.clock()
                if delay > 0:
                    self._closing_event.wait(delay)  # the arrival, or the run's deadline if that comes first
                if self._closing(self.clock()):
                    self.records.append(self._unsent(index, intended))
                    continue
                if isinstance(self.bodies[index], Conversation):
                    slot_free = self._converse(index, intended)
                    continue
                record, _answer = self._send(index, intended)
                record.update(id=str(index), turn=0)
                slot_free = record['end_s'] + self.started_at
                self.records.append(record)
        finally:
            with self._lock:
                self._active -= 1
                if not self._active:
                    self._done.set()

    def _converse(self, index, intended):
        """Send a conversation's turns in order; returns when its slot is free again (on the run's clock)."""
        conversation = self.bodies[index]
        answers = []
        last = len(conversation.segments) - 1
        end = intended
        for turn in range(last + 1):
            body = text_body(conversation.turn_text(turn, answers), conversation.sampling)
            record, answer = self._send(index, intended, body)
            record.update(id=conversation.id, category=conversation.category, turn=turn, final=turn == last)
            self.records.append(record)
            end = record['end_s'] + self.started_at
            if not record['success'] or turn == last or self._closing(self.clock()):
                break
            answers.append(answer or '')
            intended = self.clock()  # the next turn is meant to start once this one's answer is in
        return end

    def _unsent(self, index, intended):
        record = {
            'index': index,
            'warmup': self.warmup,
            'success': False,
            'error': 'not sent: %s' % self._closed,
            'scheduled_s': self.arrivals[index],
            'intended_start_s': intended - self.started_at,
            'start_s': None,
            'end_s': None,
        }
        record.update(RequestTiming(None).record())
        body = self.bodies[index]
        if isinstance(body, Conversation):
            record.update(id=body.id, category=body.category, turn=0, final=len(body.segments) == 1)
        record['chunk_s'] = []
        if self.stamp_key:
            record['sent_s'] = []
        record['output'] = None
        return record

    def _send(self, index, intended, body=None):
        """One request (bodies[index], or `body` for a conversation's turn): (its record, the text it generated)."""
        start = self.clock()
        answer = None
        timing = RequestTiming(start)
        error = None
        chunks, stamps, output = [], [], [None]
        deadline = None if self.request_deadline is None else start + self.request_deadline
        if self._run_end is not None:
            deadline = self._run_end if deadline is None else min(deadline, self._run_end)
        watch = None
        if deadline is not None:
            watch = _Watch(deadline)
            with self._lock:
                self._watches[index] = watch
        try:
            answer = self._read(self.bodies[index] if body is None else body, timing, chunks, stamps, watch, output)
        except Exception as exc:  # pylint: disable=broad-exception-caught  # any failure is this request's, recorded
            error = '%s: %s' % (type(exc).__name__, exc)
        finally:
            if watch is not None:
                with self._lock:
                    del self._watches[index]
        end = self.clock()
        if error is not None and watch is not None and watch.reason is not None:
            error = watch.reason  # what the read then raised is only the consequence
        if error is None and timing.ttft is None:
            error = 'the stream carried no token'
        t0 = self.started_at
        record = {
            'index': index,
            'warmup': self.warmup,
            'success': error is None,
            'error': error,
            'scheduled_s': self.arrivals[index],
            'intended_start_s': intended - t0,
            'start_s': start - t0,
            'end_s': end - t0,
        }
        record.update(timing.record())
        # Work here holds up every other slot's next read (a wave of requests that started together ends together),
        # so it is kept short: chunk times are rounded as they come, the gaps with map (half a list comprehension's cost).
        record['itl_s'] = list(map(round, record['itl_s'], itertools.repeat(ITL_DIGITS, len(record['itl_s']))))
        record['chunk_s'] = chunks
        if self.stamp_key:
            record['sent_s'] = stamps
        record['output'] = output[0] if error is None else None
        return record, answer

    def _read(self, body, timing, chunks, stamps, watch, output):
        """Stream one request into its timing, each chunk's arrival into chunks (and its stamp into stamps), both in
        seconds from the run's start, rounded.

        The hot path: chunks are read by lean_chunk, not parsed; the last one before [DONE] is parsed in full for
        its meta_info (token, prompt and acceptance counts), as RequestTiming.feed would have kept it, and its text
        (SGLang's native stream re-sends the whole text so far), which is returned: the answer of the turn; with its
        output_ids, both are packed into output[0] (outputs.pack: compressed, bounded by max_new_tokens). Every
        chunk's token count is checked against max_new_tokens before it is used: a count beyond it would make as
        many inter-token gaps.
        """
        stamp_key = self.stamp_key
        quoted = ('"%s"' % stamp_key).encode('utf-8') if stamp_key else None
        feed, add_chunk, add_stamp = timing.feed, chunks.append, stamps.append
        t0 = self.started_at
        asked = (body.get('sampling_params') or {}).get('max_new_tokens')
        prompt_len = len(body['input_ids']) if isinstance(body.get('input_ids'), list) else None
        most = asked if isinstance(asked, int) else float('inf')
        reads = stream_reads(self.base_url, body, self.request_timeout, clock=self.clock, max_line=self.max_line,
                             connect_within=None if watch is None else watch.deadline - self.clock(),
                             on_socket=None if watch is None else lambda sock: self._attach(watch, sock))
        last = None
        try:
            for now, payloads in reads:
                for payload in payloads:
                    if payload == b'[DONE]':
                        answer = None
                        if last is not None:
                            event = json.loads(last)
                            meta = event.get('meta_info') or {}
                            check_meta(meta, asked, prompt_len)
                            timing.meta = meta
                            answer = event.get('text')
                            if 'output_ids' in event:
                                output[0] = outputs.pack(event['output_ids'], answer, asked if isinstance(asked, int) else None)
                        feed(now, '[DONE]')
                        return answer if isinstance(answer, str) else None
                    last = payload
                    lean = lean_chunk(payload, quoted)
                    if lean is None:
                        event = json.loads(payload)
                        meta = event.get('meta_info') or {}
                        check_count('completion_tokens', meta.get('completion_tokens'), asked)
                        feed(now, event)
                        stamp = meta.get(stamp_key) if stamp_key else None
                    else:
                        if lean[1] > most or lean[1] < 0:
                            check_count('completion_tokens', lean[1], asked)
                        feed(now, {'text': lean[0], 'meta_info': {'completion_tokens': lean[1]}})
                        stamp = lean[2]
                    add_chunk(round(now - t0, ITL_DIGITS))
                    if stamp_key:
                        add_stamp(None if stamp is None else round(stamp - t0, ITL_DIGITS))
        finally:
            reads.close()
