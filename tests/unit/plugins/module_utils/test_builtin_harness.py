# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The builtin harness's stream reader: chunks read without parsing them, HTTP/1.1 chunked framing undone a read at a
time, each chunk's arrival kept; over real HTTP from a server on 127.0.0.1 that writes canned streams."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.specdec.bench.plugins.module_utils._stage import builtin_harness as builtin
from ansible_collections.specdec.bench.plugins.module_utils._stage.harness import RequestTiming

STAMP = b'"sim_sent_at"'


def full_parse(payload, stamp_key='sim_sent_at'):
    """What lean_chunk stands for: the chunk parsed in full."""
    event = json.loads(payload)
    meta = event.get('meta_info') or {}
    return bool(event.get('text')), meta['completion_tokens'], meta.get(stamp_key)


@pytest.mark.parametrize('payload', [
    b'{"text": " the of", "output_ids": [1, 2], "meta_info": {"id": "a", "completion_tokens": 2, "sim_sent_at": 12.5}}',
    b'{"text":"","output_ids":[],"meta_info":{"id":"a","finish_reason":null,"completion_tokens":0}}',  # orjson's compact form
    b'{"text": null, "output_ids": [], "meta_info": {"completion_tokens": 3}}',
    b'{"text": "\\"completion_tokens\\": 99, \\"text\\": \\"\\"", "meta_info": {"completion_tokens": 1, "sim_sent_at": 7}}',
    b'{"index": 1, "text" :  "x", "meta_info": {"prompt_tokens": 4, "completion_tokens" : 17}}',
])
def test_lean_chunk_reads_what_a_full_parse_reads(payload):
    assert builtin.lean_chunk(payload, STAMP) == full_parse(payload)


@pytest.mark.parametrize('payload', [
    b'{"output_ids": [1], "meta_info": {"completion_tokens": 1}}',  # no text
    b'{"text": "a", "meta_info": {"prompt_tokens": 1}}',  # no token count
    b'{"text": 5, "meta_info": {"completion_tokens": 1}}',  # text not a string
    b'{"text": "a", "meta_info": {"completion_tokens": "1"}}',  # count not a number
    b'{"text": "a", "meta_info": {"completion_tokens": 1.5}}',
])
def test_lean_chunk_gives_up_on_other_shapes(payload):
    assert builtin.lean_chunk(payload) is None


def chunked(*pieces):
    """HTTP/1.1 chunked framing of the pieces, the last chunk included."""
    return b''.join(b'%x\r\n%s\r\n' % (len(piece), piece) for piece in pieces) + b'0\r\n\r\n'


def dechunk_reads(reads):
    """(body, the last chunk seen) of the reads, fed one by one as the reader gets them."""
    dechunker, got, ended = builtin.Dechunker(), [], False
    for data in reads:
        body, ended = dechunker.feed(data)
        got.append(body)
        if ended:
            break
    return b''.join(got), ended


def test_dechunk_gives_the_same_body_wherever_the_reads_split():
    body = [b'data: {"a": 1}\n\n', b'data: {"b"', b': 2}\n\n', b': a comment\n\ndata: [DONE]\n\n']
    raw = chunked(*body).replace(b'\r\n', b';x=1\r\n', 1)  # a chunk extension, which is ignored
    whole = (b''.join(body), True)
    for split in range(1, len(raw)):
        assert dechunk_reads([raw[:split], raw[split:]]) == whole, split
    assert dechunk_reads([raw[i:i + 1] for i in range(len(raw))]) == whole
    assert dechunk_reads([raw[:-5]]) == (b''.join(body), False)  # the last chunk not yet in


def event(text, tokens, **meta):
    meta['completion_tokens'] = tokens
    return json.dumps({'text': text, 'output_ids': list(range(tokens)), 'meta_info': meta}).encode()


FINAL = event(' a b c d e', 5, prompt_tokens=3, spec_verify_ct=2, spec_accept_length=2.5,
              finish_reason={'type': 'length', 'length': 5})
EVENTS = [event('', 0), event(' a', 1), event(' a b c', 3), event(' a b c', 3), FINAL]
# One stream, framed awkwardly: a line split over two HTTP chunks, two events in one, a comment, a chunk extension.
STREAM = [
    b'%x;ext=1\r\ndata: %s\n\n\r\n' % (len(EVENTS[0]) + 8, EVENTS[0]),
    b'%x\r\ndata: %s\r\n' % (len(EVENTS[1][:10]) + 6, EVENTS[1][:10]),
    b'%x\r\n%s\n\n\r\n' % (len(EVENTS[1][10:]) + 2, EVENTS[1][10:]),
    b'%x\r\ndata: %s\n\ndata:%s\n\n\r\n' % (len(EVENTS[2]) + len(EVENTS[3]) + 15, EVENTS[2], EVENTS[3]),
    b'%x\r\n: keep-alive\n\n\r\n' % len(b': keep-alive\n\n'),
    b'%x\r\ndata: %s\n\n\r\n' % (len(FINAL) + 8, FINAL),
    b'e\r\ndata: [DONE]\n\n\r\n',
    b'0\r\n\r\n',
]


class CannedServer:
    """A server on 127.0.0.1 that answers POST /generate with the bytes of one of `streams` (by the request's rid)."""

    streams = {
        'chunked': ('HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n', STREAM),
        'no-done': ('HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n',
                    STREAM[:3] + [b'0\r\n\r\n']),
        # HTTP/1.0 style: no framing, the end of the body is the end of the connection
        'plain': ('HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n',
                  [b'data: %s\n\n' % e for e in EVENTS] + [b'data: [DONE]\n\n']),
        'error': ('HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: 24\r\n\r\n',
                  [b'{"error": "overloaded"}\n']),
    }

    def __init__(self):
        streams = self.streams

        class Handler(BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def do_POST(self):  # noqa: N802 (BaseHTTPRequestHandler's name)
                body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
                head, pieces = streams[body['rid']]
                self.wfile.write(head.encode())
                for piece in pieces:
                    self.wfile.write(piece)
                    self.wfile.flush()
                self.close_connection = True

            def log_message(self, *_args):
                pass

        self.httpd = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.base_url = 'http://127.0.0.1:%d' % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope='module')
def canned():
    server = CannedServer()
    yield server
    server.close()


def run_one(base_url, rid, stamp_key=None):
    run = builtin.LoadRun(base_url, [{'rid': rid}], [0.0], 1, 10.0, stamp_key=stamp_key).start()
    assert run.wait(30)
    return run.records[0]


@pytest.mark.parametrize('rid', ['chunked', 'plain'])
def test_a_stream_times_as_its_fully_parsed_events_would(canned, rid):
    record = run_one(canned.base_url, rid)
    assert record['success'] and record['error'] is None
    times = record['chunk_s']
    assert len(times) == len(EVENTS) and times == sorted(times)
    assert record['start_s'] <= times[0] and times[-1] <= record['end_s']
    assert 'sent_s' not in record  # only with a stamp key
    expected = RequestTiming(record['start_s'])
    for now, payload in zip(times, EVENTS):
        expected.feed(now, json.loads(payload))
    expected = expected.record()
    assert record['ttft_s'] == pytest.approx(expected['ttft_s'], abs=1e-6)  # chunk times are kept to 0.1 us
    assert record['itl_s'] == pytest.approx(expected['itl_s'], abs=1e-6)
    for key in ('output_tokens', 'prompt_tokens', 'spec_verify_ct', 'spec_accept_length'):
        assert record[key] == expected[key], key
    assert (record['output_tokens'], record['prompt_tokens'], len(record['itl_s'])) == (5, 3, 4)


def test_a_stream_cut_before_done_fails_the_request(canned):
    record = run_one(canned.base_url, 'no-done')
    assert not record['success']
    assert record['error'] == 'ConnectionError: the stream ended before data: [DONE]'
    assert len(record['chunk_s']) == 2  # what came before the cut is kept


def test_an_error_answer_fails_the_request_with_its_body(canned):
    record = run_one(canned.base_url, 'error')
    assert not record['success'] and record['error'].startswith('HTTPStatusError: ')
    assert 'answered HTTP 500' in record['error'] and 'overloaded' in record['error']
