# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The builtin harness's load generator: seeded prompts, a request schedule and streaming worker threads.

Private to the specdec.bench collection; standard library only, so it runs on any benchmark host. The statistics
are made from its records by _harness.from_builtin.

Scheduling: each prompt has an arrival time (all at 0 for an infinite rate, else a seeded Poisson process). A
request is meant to start at its arrival or when a concurrency slot frees up, whichever is later; the record
keeps that intended start beside the actual one, so the client's own lag shows in the results.

Reading: the stream is read from the socket a read at a time (every chunk that read completed shares its arrival
time, taken before anything is parsed), and each chunk only for its text and token count (lean_chunk), so the
cost of a chunk does not grow with the cumulative text and ids SGLang re-sends in every chunk. Besides the
timings, a record keeps each chunk's arrival (chunk_s, seconds from the run's start, on the run's clock), so
the client's delivery delay can be checked against a server's own send times (tests/perf/bench_harness.py).
"""

from __future__ import annotations

import http.client
import itertools
import json
import random
import re
import threading
import time
import urllib.parse

from ansible_collections.specdec.bench.plugins.module_utils._harness import RequestTiming, finite
from ansible_collections.specdec.bench.plugins.module_utils._sglang_http import HTTPStatusError, join

# Prompt token ids are drawn from this range: above the special tokens of common vocabularies, below their size.
TOKEN_ID_LOW = 1000
TOKEN_ID_HIGH = 30000
ITL_DIGITS = 7  # raw records keep inter-token gaps and chunk times to 0.1 us
READ_SIZE = 1 << 16  # bytes asked of the socket per read
# A JSON value right after a key: what stream chunks are read for without parsing the whole chunk.
_AFTER_KEY = re.compile(rb'\s*:\s*(?:(-?[0-9][0-9.eE+-]*)|(""|null)|("))')


def make_prompts(seed, count, input_len):
    """count lists of input_len token ids, the same for the same seed."""
    rng = random.Random(seed)
    return [[rng.randrange(TOKEN_ID_LOW, TOKEN_ID_HIGH) for _token in range(input_len)] for _prompt in range(count)]


def arrival_times(seed, count, request_rate):
    """Seconds from the start at which each request arrives: all 0 when the rate is infinite or unset, else a
    Poisson process of that rate (exponential gaps, seeded), the first at 0 as in SGLang's client."""
    rate = finite(request_rate)
    if rate is None or rate <= 0:
        return [0.0] * count
    rng = random.Random('arrivals-%s' % seed)
    times, now = [], 0.0
    for _request in range(count):
        times.append(now)
        now += rng.expovariate(rate)
    return times


def generate_body(prompt, output_len):
    """A native /generate request for exactly output_len tokens, greedy, streamed."""
    return {
        'input_ids': prompt,
        'sampling_params': {'max_new_tokens': output_len, 'temperature': 0, 'ignore_eos': True},
        'stream': True,
    }


def _dechunk(raw):
    """(the payload of the complete HTTP/1.1 chunks at the start of raw, what is left of raw, the last chunk seen)."""
    pieces = []
    pos = 0
    while True:
        eol = raw.find(b'\r\n', pos)
        if eol < 0:
            break
        size = int(raw[pos:eol].split(b';', 1)[0], 16)
        if size == 0:
            return b''.join(pieces), b'', True
        end = eol + 2 + size
        if end + 2 > len(raw):
            break
        pieces.append(raw[eol + 2:end])
        pos = end + 2
    return b''.join(pieces), raw[pos:], False


def stream_reads(base_url, body, timeout, clock=time.perf_counter):
    """POST a streamed native /generate; yields (time of the read, [the SSE `data:` payloads it completed]) per read
    from the socket, the last payload b'[DONE]'.

    The time is taken as soon as the read returns, before anything is parsed, so every chunk of one read shares it
    and a chunk's time is when the client got it from the kernel. The HTTP/1.1 chunked framing is undone here,
    a read at a time, not a call per chunk. Nothing goes through a proxy. Raises HTTPStatusError for an answer
    other than 200 and ConnectionError when the stream ends before `data: [DONE]` (the server died).
    """
    parts = urllib.parse.urlsplit(base_url)
    if parts.scheme == 'https':
        connection = http.client.HTTPSConnection(parts.hostname, parts.port or 443, timeout=timeout)
    else:
        connection = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=timeout)
    try:
        connection.request('POST', parts.path.rstrip('/') + '/generate', json.dumps(body),
                           {'Content-Type': 'application/json', 'Accept': 'text/event-stream'})
        response = connection.getresponse()
        if response.status != 200:
            raise HTTPStatusError(join(base_url, '/generate'), response.status, response.read().decode('utf-8', 'replace'))
        chunked = response.chunked
        # chunked: the raw bytes after the headers, with one system call at most per read; else the body itself
        read = response.fp.read1 if chunked else response.read1
        raw = text = b''
        ended = False
        while not ended:
            data = read(READ_SIZE)
            now = clock()
            if not data:
                break
            if chunked:
                data, raw, ended = _dechunk(raw + data if raw else data)
            lines = (text + data if text else data).split(b'\n')
            text = lines.pop()
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


class LoadRun:
    """Sends the bodies at their arrival times with at most `concurrency` in flight, one thread per slot.

    records fills as requests finish (list.append is atomic); start() returns at once, wait() joins. With a
    stamp_key, each record also keeps sent_s: every chunk's meta_info[stamp_key] (a server's send time on the
    same clock, as the SGLang emulator's sim_sent_at) less the run's start, None where a chunk has none.
    """

    def __init__(self, base_url, bodies, arrivals, concurrency, request_timeout, warmup=False, clock=time.perf_counter,
                 stamp_key=None):
        self.base_url = base_url
        self.bodies = bodies
        self.arrivals = arrivals
        self.concurrency = max(1, min(concurrency, len(bodies) or 1))
        self.request_timeout = request_timeout
        self.warmup = warmup
        self.clock = clock
        self.stamp_key = stamp_key
        self.records = []
        self.started_at = None
        self.finished_at = None
        self._next = 0
        self._lock = threading.Lock()
        self._threads = []

    def start(self):
        """Start the slot threads, then the clock: thread start-up is not counted as client lag."""
        go = threading.Event()
        self._threads = [threading.Thread(target=self._worker, args=(go,), name='bench-slot-%d' % slot)
                         for slot in range(self.concurrency)]
        for thread in self._threads:
            thread.daemon = True  # a module that is killed must not hang on its workers
            thread.start()
        self.started_at = self.clock()
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
            self.finished_at = max([self.started_at] + [r['end_s'] + self.started_at for r in self.records])
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

    def _worker(self, go):
        go.wait()
        slot_free = self.started_at
        while True:
            index = self._take()
            if index is None:
                return
            intended = max(self.started_at + self.arrivals[index], slot_free)
            delay = intended - self.clock()
            if delay > 0:
                time.sleep(delay)
            record = self._send(index, intended)
            slot_free = record['end_s'] + self.started_at
            self.records.append(record)

    def _send(self, index, intended):
        start = self.clock()
        timing = RequestTiming(start)
        error = None
        chunks, stamps = [], []
        try:
            self._read(index, timing, chunks, stamps)
        except Exception as exc:  # pylint: disable=broad-exception-caught  # any failure is this request's, recorded
            error = '%s: %s' % (type(exc).__name__, exc)
        end = self.clock()
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
        return record

    def _read(self, index, timing, chunks, stamps):
        """Stream one request into its timing, each chunk's arrival into chunks (and its stamp into stamps), both in
        seconds from the run's start, rounded.

        The hot path: chunks are read by lean_chunk, not parsed; the last one before [DONE] is parsed in full for
        its meta_info (token, prompt and acceptance counts), as RequestTiming.feed would have kept it.
        """
        stamp_key = self.stamp_key
        quoted = ('"%s"' % stamp_key).encode('utf-8') if stamp_key else None
        feed, add_chunk, add_stamp = timing.feed, chunks.append, stamps.append
        t0 = self.started_at
        reads = stream_reads(self.base_url, self.bodies[index], self.request_timeout, clock=self.clock)
        last = None
        try:
            for now, payloads in reads:
                for payload in payloads:
                    if payload == b'[DONE]':
                        if last is not None:
                            timing.meta = json.loads(last).get('meta_info') or {}
                        feed(now, '[DONE]')
                        return
                    last = payload
                    lean = lean_chunk(payload, quoted)
                    if lean is None:
                        event = json.loads(payload)
                        feed(now, event)
                        stamp = (event.get('meta_info') or {}).get(stamp_key) if stamp_key else None
                    else:
                        feed(now, {'text': lean[0], 'meta_info': {'completion_tokens': lean[1]}})
                        stamp = lean[2]
                    add_chunk(round(now - t0, ITL_DIGITS))
                    if stamp_key:
                        add_stamp(None if stamp is None else round(stamp - t0, ITL_DIGITS))
        finally:
            reads.close()
