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
"""

from __future__ import annotations

import random
import threading
import time

from ansible_collections.specdec.bench.plugins.module_utils._harness import RequestTiming, finite
from ansible_collections.specdec.bench.plugins.module_utils._sglang_http import stream_generate

# Prompt token ids are drawn from this range: above the special tokens of common vocabularies, below their size.
TOKEN_ID_LOW = 1000
TOKEN_ID_HIGH = 30000
ITL_DIGITS = 7  # raw records keep inter-token gaps to 0.1 us


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


class LoadRun:
    """Sends the bodies at their arrival times with at most `concurrency` in flight, one thread per slot.

    records fills as requests finish (list.append is atomic); start() returns at once, wait() joins.
    """

    def __init__(self, base_url, bodies, arrivals, concurrency, request_timeout, warmup=False, clock=time.perf_counter):
        self.base_url = base_url
        self.bodies = bodies
        self.arrivals = arrivals
        self.concurrency = max(1, min(concurrency, len(bodies) or 1))
        self.request_timeout = request_timeout
        self.warmup = warmup
        self.clock = clock
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
        try:
            for now, event in stream_generate(self.base_url, self.bodies[index], self.request_timeout, clock=self.clock):
                timing.feed(now, event)
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
        record['itl_s'] = [round(gap, ITL_DIGITS) for gap in record['itl_s']]
        return record
