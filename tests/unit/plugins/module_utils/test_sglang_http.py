# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""_sglang_http against a real HTTP server on 127.0.0.1 (http.server in a thread): status codes, JSON, empty and
garbled bodies, large and cut-off answers, timeouts, refused connections, and no proxy in between."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.specdec.bench.plugins.module_utils._stage.sglang_http import (
    CONNECTION_ERRORS,
    MAX_LINE_BYTES,
    HTTPStatusError,
    get_status,
    join,
    line_too_long,
    post,
    request_json,
)

DEAD_PROXY = 'http://127.0.0.1:9'
BIG = 8 << 20  # a body larger than any stream line may be: JSON answers are read whole


class Answers(BaseHTTPRequestHandler):
    """Each path is one kind of answer; every request is noted as (method, path, body)."""

    protocol_version = 'HTTP/1.1'

    def log_message(self, *_args):  # pylint: disable=arguments-differ
        pass

    def _send(self, status, body, content_type='application/json', length=None):
        self.send_response(status)
        self.send_header('Content-Type', content_type)
        self.send_header('Content-Length', str(len(body) if length is None else length))
        try:
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up first (the timeout tests)

    def _answer(self):
        length = int(self.headers.get('Content-Length') or 0)
        self.server.requests.append((self.command, self.path, self.rfile.read(length)))
        path = self.path
        if path == '/server_info':
            self._send(200, json.dumps({'internal_states': [{'avg_spec_accept_length': 3.5}]}).encode())
        elif path == '/empty':
            self._send(200, b'')
        elif path == '/text':
            self._send(200, b'Success.', 'text/plain')
        elif path == '/garbled':
            self._send(200, b'\xff\xfe{"a": \x80', 'application/octet-stream')
        elif path == '/big':
            padding = 'x' * BIG
            self._send(200, json.dumps({'padding': padding}).encode())
        elif path == '/cut':  # promises more than it sends, then hangs up
            self._send(200, b'{"a": 1', length=1000)
            self.close_connection = True
        elif path == '/missing':
            self._send(404, b'{"detail": "Not Found"}')
        elif path == '/overloaded':
            self._send(503, ('busy ' * 200).encode(), 'text/plain')
        elif path == '/slow':  # headers only after the client gave up
            self.server.release.wait(10)
            self._send(200, b'{}')
        elif path == '/flush_cache':
            self._send(200, b'Cache flushed.\n', 'text/plain')
        elif path == '/flush_busy':
            self._send(400, b'Cache not flushed: requests are running.\n', 'text/plain')
        else:
            self._send(500, b'Internal Server Error', 'text/plain')

    do_GET = _answer
    do_POST = _answer


@pytest.fixture
def server(monkeypatch):
    """The server's base URL; HTTP_PROXY points nowhere, so a request that used it would fail."""
    for name in ('HTTP_PROXY', 'http_proxy', 'HTTPS_PROXY', 'https_proxy'):
        monkeypatch.setenv(name, DEAD_PROXY)
    for name in ('NO_PROXY', 'no_proxy'):
        monkeypatch.delenv(name, raising=False)
    httpd = ThreadingHTTPServer(('127.0.0.1', 0), Answers)
    httpd.daemon_threads = True
    httpd.requests = []
    httpd.release = threading.Event()
    thread = threading.Thread(target=httpd.serve_forever, kwargs={'poll_interval': 0.05})
    thread.daemon = True
    thread.start()
    httpd.base_url = 'http://127.0.0.1:%d' % httpd.server_address[1]
    yield httpd
    httpd.release.set()
    httpd.shutdown()
    httpd.server_close()
    thread.join(10)


@pytest.fixture
def refused_url():
    """A URL on 127.0.0.1 where nothing listens."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
    return 'http://127.0.0.1:%d/health' % port


def test_request_json_parses_a_json_answer(server):
    assert request_json(server.base_url + '/server_info', timeout=5) == {'internal_states': [{'avg_spec_accept_length': 3.5}]}
    assert server.requests == [('GET', '/server_info', b'')]


@pytest.mark.parametrize('path, expected', [
    ('/empty', None),
    ('/text', 'Success.'),
    ('/garbled', '\ufffd\ufffd{"a": \ufffd'),  # undecodable bytes are replaced, and what is not JSON comes back as text
])
def test_request_json_gives_an_answer_that_is_not_json_as_it_came(server, path, expected):
    assert request_json(server.base_url + path, timeout=5) == expected


def test_request_json_reads_a_large_answer_whole(server):
    answer = request_json(server.base_url + '/big', timeout=30)
    assert len(answer['padding']) == BIG > MAX_LINE_BYTES


def test_request_json_raises_the_status_and_body_of_an_error(server):
    with pytest.raises(HTTPStatusError) as caught:
        request_json(server.base_url + '/missing', timeout=5)
    assert (caught.value.status, caught.value.body) == (404, '{"detail": "Not Found"}')
    assert str(caught.value) == '%s/missing answered HTTP 404: {"detail": "Not Found"}' % server.base_url


def test_an_error_message_keeps_the_first_500_characters_of_the_body(server):
    with pytest.raises(HTTPStatusError) as caught:
        request_json(server.base_url + '/overloaded', timeout=5)
    assert caught.value.status == 503 and len(caught.value.body) == 1000
    assert str(caught.value).endswith('answered HTTP 503: ' + 'busy ' * 100)


@pytest.mark.parametrize('path', ['/cut', '/slow'])
def test_a_cut_off_or_silent_answer_raises_a_connection_error(server, path):
    with pytest.raises(CONNECTION_ERRORS):
        request_json(server.base_url + path, timeout=0.3)


def test_nothing_listening_raises_a_connection_error(refused_url):
    with pytest.raises(CONNECTION_ERRORS):
        request_json(refused_url, timeout=5)


@pytest.mark.parametrize('path, status', [('/server_info', 200), ('/missing', 404), ('/overloaded', 503), ('/other', 500)])
def test_get_status_gives_the_status_of_any_answer(server, path, status):
    assert get_status(server.base_url + path, timeout=5) == status


@pytest.mark.parametrize('path', ['/cut', '/slow'])
def test_get_status_is_none_for_a_cut_off_or_silent_answer(server, path):
    assert get_status(server.base_url + path, timeout=0.3) is None


def test_get_status_is_none_when_nothing_listens(refused_url):
    assert get_status(refused_url, timeout=5) is None


def test_post_sends_an_empty_body_and_gives_status_and_text(server):
    assert post(server.base_url + '/flush_cache', timeout=5) == (200, 'Cache flushed.\n')
    assert post(server.base_url + '/flush_busy', timeout=5) == (400, 'Cache not flushed: requests are running.\n')
    assert server.requests == [('POST', '/flush_cache', b''), ('POST', '/flush_busy', b'')]


def test_post_raises_a_connection_error_when_nothing_answers(server, refused_url):
    with pytest.raises(CONNECTION_ERRORS):
        post(refused_url, timeout=5)
    with pytest.raises(CONNECTION_ERRORS):
        post(server.base_url + '/slow', timeout=0.3)


def test_join_and_the_line_limits_message():
    assert join('http://127.0.0.1:30000/', '/generate') == join('http://127.0.0.1:30000', '/generate') == \
        'http://127.0.0.1:30000/generate'
    assert line_too_long(10) == 'a stream line longer than 10 bytes (no newline within the limit)'
