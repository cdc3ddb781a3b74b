# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The builtin harness's limits, against scripted servers on 127.0.0.1: deadlines that end requests a server keeps
alive, chunk framing refused when broken, token counts bounded by what was asked, lines bounded and read once.

Nothing here is timed: a deadline that must pass is either tiny or passed by moving the run's clock forward when the
server reaches the point the test is about (SkewedClock), and every wait has its own deadline.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import time
import zlib

import pytest

from ansible_collections.specdec.bench.plugins.module_utils._stage import builtin_harness as builtin, outputs
from ansible_collections.specdec.bench.plugins.module_utils._stage.sglang_http import MAX_LINE_BYTES, BrokenResponse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scripted_sglang as scripted  # noqa: E402  pylint: disable=wrong-import-position
from testhelpers import wait_until  # noqa: E402  pylint: disable=wrong-import-position,import-error

WAIT_S = scripted.DEADLINE_S


class SkewedClock:
    """time.perf_counter, moved forward by `jump` seconds when told: a deadline passes exactly when the test says."""

    def __init__(self):
        self.skew = 0.0

    def __call__(self):
        return time.perf_counter() + self.skew

    def jump(self, seconds):
        self.skew += seconds


@pytest.fixture
def server():
    servers = []

    def make(script):
        servers.append(scripted.ScriptedServer(script))
        return servers[-1]

    yield make
    for one in servers:
        one.close()


def body(output_len=4, input_len=3):
    return builtin.generate_body(list(range(1000, 1000 + input_len)), output_len)


def run(base_url, bodies, concurrency=1, **limits):
    load = builtin.LoadRun(base_url, bodies, [0.0] * len(bodies), concurrency, limits.pop('request_timeout', 10.0),
                           **limits).start()
    assert load.wait(WAIT_S), 'the run did not end'
    return sorted(load.records, key=lambda record: record['index'])


# ---- item 1: deadlines


def test_a_server_that_only_pings_is_ended_at_the_request_deadline(server):
    emu = server(scripted.ping)
    record, = run(emu.base_url, [body()], request_timeout=10.0, request_deadline=0.2)
    assert not record['success']
    assert record['error'] == 'DeadlineExceeded: the request passed its deadline of 0.2 s'
    assert isinstance(emu.outcome(0), OSError)  # the connection was ended, not left to the server


def test_a_silent_server_is_ended_at_the_request_deadline_not_the_silence_timeout(server):
    emu = server(lambda stream, _body, _n: (stream.write(scripted.CHUNKED_HEAD), stream.stopping.wait(WAIT_S)))
    record, = run(emu.base_url, [body()], request_timeout=WAIT_S * 10, request_deadline=0.2)
    assert record['error'] == 'DeadlineExceeded: the request passed its deadline of 0.2 s'


def test_the_run_deadline_ends_requests_in_flight_skips_the_rest_and_keeps_what_finished(server):
    clock = SkewedClock()

    def ping_then_pass_the_deadline(stream, body_, number):
        clock.jump(1000.0)  # the run's deadline passes while this request is in flight
        scripted.ping(stream, body_, number)

    emu = server(scripted.by_number(scripted.good, scripted.good, ping_then_pass_the_deadline))
    records = run(emu.base_url, [body()] * 5, run_deadline=100.0, request_deadline=500.0, clock=clock)
    assert [record['success'] for record in records] == [True, True, False, False, False]
    assert records[2]['error'] == 'DeadlineExceeded: the run passed its deadline of 100 s'
    assert records[2]['start_s'] is not None and records[2]['end_s'] is not None
    for record in records[3:]:  # never sent, recorded as such
        assert record['error'] == 'not sent: DeadlineExceeded: the run passed its deadline of 100 s'
        assert record['start_s'] is None and record['end_s'] is None and record['itl_s'] == []
    assert len(emu.bodies) == 3 and isinstance(emu.outcome(2), OSError)
    assert all(record['output_tokens'] == 4 for record in records[:2])


def test_a_request_due_after_the_run_deadline_is_not_waited_for(server):
    clock = SkewedClock()
    emu = server(scripted.good)
    load = builtin.LoadRun(emu.base_url, [body(), body()], [0.0, 3600.0], 1, 10.0, clock=clock, run_deadline=60.0).start()
    wait_until(lambda: load.records, 'the first request', timeout=WAIT_S)
    clock.jump(120.0)  # the second request's arrival is an hour away: the run's deadline comes first
    assert load.wait(WAIT_S)
    records = sorted(load.records, key=lambda record: record['index'])
    assert records[0]['success'] and records[1]['error'].startswith('not sent: DeadlineExceeded')
    assert len(emu.bodies) == 1 and load.duration is not None


# ---- item 2: chunk framing


@pytest.mark.parametrize('size_line', [b'-6', b'+6', b'0x6', b' 6', b'', b'zz', b'6 6', b'1' * 16, b'6;' + b'x' * 2000])
def test_a_malformed_chunk_size_is_a_broken_response(size_line):
    with pytest.raises(BrokenResponse):
        builtin.Dechunker().feed(size_line + b'\r\nabcdef\r\n0\r\n\r\n')


def test_chunk_data_longer_than_its_size_is_a_broken_response():
    with pytest.raises(BrokenResponse, match='longer than its size line says'):
        builtin.Dechunker().feed(b'2\r\nabcdef\r\n0\r\n\r\n')


def test_a_negative_chunk_size_in_a_reply_fails_the_request(server):
    emu = server(lambda stream, _body, _n: stream.write(scripted.CHUNKED_HEAD + b'-6\r\ndata: x\r\n0\r\n\r\n'))
    record, = run(emu.base_url, [body()])
    assert not record['success']
    assert record['error'] == "BrokenResponse: chunk size line b'-6' is not a hexadecimal size"


# ---- item 3: counts bounded by what was asked


@pytest.mark.parametrize('events, error', [
    ([scripted.event('a', 50000000)], 'completion_tokens 50000000, more than the 4 asked for'),  # read lean
    ([b'data: {"meta_info": {"completion_tokens": 50000000}, "text": 5}\n\n'],  # parsed in full
     'completion_tokens 50000000, more than the 4 asked for'),
    ([b'data: {"text": null, "meta_info": {"completion_tokens": 2.5}}\n\n'], 'completion_tokens 2.5, which is no count'),
    ([scripted.event('a', -3)], 'completion_tokens -3, which is no count'),
    ([scripted.event('a', 1), scripted.event('a b', 2, prompt_tokens=3000), b'data: [DONE]\n\n'],
     'prompt_tokens 3000, more than the 3 asked for'),
    ([scripted.event('a', 1), scripted.event('a b', 2, spec_verify_ct=9), b'data: [DONE]\n\n'],
     'spec_verify_ct 9, more than the 2 output tokens'),
])
def test_a_count_beyond_what_was_asked_fails_the_request(server, events, error):
    emu = server(lambda stream, _body, _n: stream.write(scripted.CHUNKED_HEAD + b''.join(map(scripted.chunk, events))
                                                        + b'0\r\n\r\n'))
    record, = run(emu.base_url, [body(output_len=4, input_len=3)])
    assert not record['success'] and record['error'] == 'BrokenResponse: the server claims ' + error
    assert len(record['itl_s']) <= 4 and (record['output_tokens'] or 0) <= 4


def test_counts_within_what_was_asked_pass(server):
    emu = server(scripted.good)
    record, = run(emu.base_url, [body(output_len=4, input_len=3)])
    assert record['success'] and (record['output_tokens'], record['prompt_tokens'], len(record['itl_s'])) == (4, 3, 3)


def test_check_meta_bounds_every_count():
    builtin.check_meta({'completion_tokens': 4, 'prompt_tokens': 3, 'spec_verify_ct': 2, 'spec_accept_length': 2.0}, 4, 3)
    with pytest.raises(BrokenResponse, match='spec_accept_length'):
        builtin.check_meta({'completion_tokens': 4, 'spec_accept_length': 1e9}, 4, 3)
    with pytest.raises(BrokenResponse, match='which is no count'):
        builtin.check_meta({'completion_tokens': True}, 4, 3)


GOOD_SPEC_META = {'completion_tokens': 4, 'prompt_tokens': 3, 'cached_tokens': 2, 'spec_verify_ct': 2, 'spec_accept_rate': 0.5,
                  'spec_num_correct_drafts': 2, 'spec_num_proposed_drafts': 4, 'spec_correct_drafts_histogram': [1, 0, 1]}


def test_check_meta_takes_sglangs_acceptance_and_cache_fields():
    builtin.check_meta(dict(GOOD_SPEC_META), 4, 3)
    builtin.check_meta({'completion_tokens': 4, 'spec_correct_drafts_histogram': []}, 4, 3)  # no verify step counted


@pytest.mark.parametrize('change, error', [
    ({'spec_num_correct_drafts': -1}, 'spec_num_correct_drafts -1, which is no count'),
    ({'spec_num_correct_drafts': 5}, 'spec_num_correct_drafts 5, more than the 4 drafts proposed'),
    ({'spec_num_proposed_drafts': 2.0}, 'spec_num_proposed_drafts 2.0, which is no count'),
    ({'spec_accept_rate': 1.5}, 'spec_accept_rate 1.5, which is no rate in [0, 1]'),
    ({'spec_accept_rate': 'high'}, "spec_accept_rate 'high', which is no rate"),
    ({'spec_correct_drafts_histogram': {'0': 1}}, 'spec_correct_drafts_histogram {'),
    ({'spec_correct_drafts_histogram': [1, -1, 2]}, 'spec_correct_drafts_histogram entry -1, which is no count'),
    ({'spec_correct_drafts_histogram': [1, 1, 1]}, 'spec_correct_drafts_histogram [1, 1, 1] of 3 verify steps, not its spec_verify_ct 2'),
    ({'cached_tokens': 4}, 'cached_tokens 4, more than the 3 prompt tokens'),
    ({'cached_tokens': True}, 'cached_tokens True, which is no count'),
])
def test_check_meta_names_the_field_a_server_breaks(change, error):
    with pytest.raises(BrokenResponse) as caught:
        builtin.check_meta(dict(GOOD_SPEC_META, **change), 4, 3)
    assert str(caught.value).startswith('the server claims ' + error)


def test_a_broken_histogram_fails_the_request(server):
    events = [scripted.event('a', 1), scripted.event('a b', 2, prompt_tokens=3, spec_verify_ct=1, spec_correct_drafts_histogram=[0, 2]),
              b'data: [DONE]\n\n']
    emu = server(lambda stream, _body, _n: stream.write(scripted.CHUNKED_HEAD + b''.join(map(scripted.chunk, events))
                                                        + b'0\r\n\r\n'))
    record, = run(emu.base_url, [body(output_len=4, input_len=3)])
    assert not record['success'] and 'spec_correct_drafts_histogram [0, 2] of 2 verify steps, not its spec_verify_ct 1' in record['error']


# ---- item 4: line length


def endless_line(head, framed):
    """40 MB with no newline (as one chunk when framed); what the server managed to send shows what the client read."""
    def script(stream, _body, _n):
        stream.write(head)
        if framed:
            stream.write(b'%x\r\n' % (40 << 20))
        piece = b'x' * (1 << 20)
        for _piece in range(40):
            stream.write(piece)
    return script


@pytest.mark.parametrize('framed', [True, False])
def test_a_40_mb_line_fails_the_request_after_reading_no_more_than_the_limit(server, framed):
    emu = server(endless_line(scripted.CHUNKED_HEAD if framed else scripted.PLAIN_HEAD, framed))
    record, = run(emu.base_url, [body()])
    assert not record['success']
    assert record['error'] == 'BrokenResponse: a stream line longer than %d bytes (no newline within the limit)' % MAX_LINE_BYTES
    # the client stopped reading at the limit and closed: the server could not write its 40 MB (the socket buffers
    # on both sides hold a few MB at most)
    assert isinstance(emu.outcome(0), OSError)


@pytest.mark.parametrize('framed', [True, False])
@pytest.mark.parametrize('extra, fits', [(0, True), (1, False)])
def test_a_line_is_bounded_however_the_reads_split_it(server, framed, extra, fits):
    limit = 1000

    def script(stream, _body, _n):
        stream.write(scripted.CHUNKED_HEAD if framed else scripted.PLAIN_HEAD)
        line = scripted.event('a', 1)
        line = line[:-2] + b' ' * (limit - len(line) + 2 + extra) + b'\n\n'  # limit (+ extra) bytes, then its newline
        line += b'data: [DONE]\n\n'
        for position in range(0, len(line), 7):  # in pieces of 7 bytes, each its own read
            piece = line[position:position + 7]
            stream.write(scripted.chunk(piece) if framed else piece)
        if framed:
            stream.write(b'0\r\n\r\n')

    emu = server(script)
    record, = run(emu.base_url, [body(output_len=1)], max_line=limit)
    if fits:
        assert record['success'] and record['output_tokens'] == 1, record['error']
    else:
        assert record['error'] == 'BrokenResponse: a stream line longer than 1000 bytes (no newline within the limit)'


# ---- outputs kept: the final chunk's output_ids and text, packed, bounded by what was asked

def _final_with(ids, text, tokens=None):
    tokens = len(ids) if tokens is None else tokens
    payload = json.dumps({'text': text, 'output_ids': ids, 'meta_info': {'completion_tokens': tokens, 'prompt_tokens': 3}})
    return [scripted.event('a', 1), b'data: %s\n\n' % payload.encode(), b'data: [DONE]\n\n']


def _script(events):
    return lambda stream, _body, _n: stream.write(scripted.CHUNKED_HEAD + b''.join(map(scripted.chunk, events)) + b'0\r\n\r\n')


def test_the_record_keeps_the_requests_output_ids_and_text_compressed(server):
    emu = server(_script(_final_with([1001, 1002, 7, 2], ' four tokens of text')))
    record, = run(emu.base_url, [body(output_len=4, input_len=3)])
    assert record['success'] and record['output']['tokens'] == 4
    assert outputs.unpack(record['output']) == ([1001, 1002, 7, 2], ' four tokens of text')
    assert record['output']['sha256'] == outputs.ids_sha256([1001, 1002, 7, 2])


@pytest.mark.parametrize('ids, text, error', [
    ([1, 2, 3, 4, 5], 'x', 'the server sent 5 output_ids, more than the 4 asked for'),
    ([1, -2], 'x', 'the server sent output_ids [1, -2], which is no list of token ids'),
    ([1, 'a'], 'x', "the server sent output_ids [1, 'a'], which is no list of token ids"),
    ([1, 2], 'x' * 1025, 'the server sent 1025 bytes of text, more than 256 bytes a token for 4 tokens'),
])
def test_an_output_beyond_what_was_asked_fails_the_request_and_is_not_kept(server, ids, text, error):
    emu = server(_script(_final_with(ids, text, tokens=2)))
    record, = run(emu.base_url, [body(output_len=4, input_len=3)])
    assert not record['success'] and record['error'] == 'BrokenResponse: ' + error and record['output'] is None


def test_unpack_refuses_a_bomb_a_bad_encoding_and_ids_that_do_not_match():
    packed = outputs.pack(list(range(1000, 1100)), 'text', 100)
    assert outputs.unpack(packed)[0] == list(range(1000, 1100))
    bomb = {'tokens': 0, 'sha256': '', 'z': base64.b64encode(zlib.compress(b'[' * (4 << 20))).decode()}
    with pytest.raises(ValueError, match='unpacks to more than 1048576 bytes'):
        outputs.unpack(bomb, max_bytes=1 << 20)
    with pytest.raises(ValueError, match='not base64 of zlib of JSON'):
        outputs.unpack({'tokens': 1, 'sha256': '', 'z': 'not base64!'})
    with pytest.raises(ValueError, match='do not match its tokens and sha256'):
        outputs.unpack(dict(packed, tokens=99))
    with pytest.raises(ValueError, match='allowed'):
        outputs.unpack(None)
