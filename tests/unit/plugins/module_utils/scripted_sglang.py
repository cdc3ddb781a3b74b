# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""A stand-in SGLang server on 127.0.0.1 whose streamed /generate answers are scripts, for the harness's limits:
servers that ping forever, stay silent, break the chunk framing, claim absurd counts or send endless lines.

A script is a function (stream, body, number) that writes raw bytes with stream.write; number counts the /generate
requests from 0. Scripts that wait do so on stream.stopping, so the server always ends. For each request,
server.outcome(number) waits (with a deadline) until its script returned and gives 'sent', or the error that
ended the writing (the client went away).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHUNKED_HEAD = b'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n'
PLAIN_HEAD = b'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n'
DEADLINE_S = 30.0  # how long a test waits for something that happens at once when the code is right


def chunk(data):
    return b'%x\r\n%s\r\n' % (len(data), data)


def event(text, tokens, **meta):
    meta['completion_tokens'] = tokens
    return b'data: %s\n\n' % json.dumps({'text': text, 'meta_info': meta}).encode()


def good_events(tokens, prompt_tokens):
    """A whole SSE stream of `tokens` output tokens, one a chunk, then [DONE]."""
    events = [event(' t' * count, count) for count in range(1, tokens)]
    events.append(event(' t' * tokens, tokens, prompt_tokens=prompt_tokens, spec_verify_ct=max(1, tokens // 2)))
    return events + [b'data: [DONE]\n\n']


def good(stream, body, _number):
    """A well-formed answer for exactly what the body asked."""
    stream.write(CHUNKED_HEAD)
    for piece in good_events(body['sampling_params']['max_new_tokens'], len(body['input_ids'])):
        stream.write(chunk(piece))
    stream.write(b'0\r\n\r\n')


def ping(stream, _body, _number, interval=0.05):
    """Keep-alive comments, never a token, until the client goes away (or the server stops)."""
    stream.write(CHUNKED_HEAD)
    while not stream.stopping.wait(interval):
        stream.write(chunk(b': ping\n\n'))


def by_number(*scripts):
    """The n-th request gets the n-th script, later ones the last."""
    return lambda stream, body, number: scripts[min(number, len(scripts) - 1)](stream, body, number)


class _Stream:
    def __init__(self, wfile, stopping):
        self._wfile = wfile
        self.stopping = stopping

    def write(self, data):
        self._wfile.write(data)
        self._wfile.flush()


class ScriptedServer:
    """POST /generate runs the script; GET /server_info and POST /flush_cache answer {}. pages: {path: (status, body
    bytes)} of GETs answered otherwise (a /metrics text, a 404); a body may be a function of the GETs of that path
    so far, from 0. self.gets lists the paths got, in order."""

    def __init__(self, script, pages=None):
        self.script = script
        self.pages = dict(pages or {})
        self.gets = []
        self.stopping = threading.Event()
        self.bodies = []
        self._outcomes = {}
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def do_GET(self):  # noqa: N802 (BaseHTTPRequestHandler's name)
                with server._lock:
                    number = server.gets.count(self.path)
                    server.gets.append(self.path)
                if self.path not in server.pages:
                    self._json({})
                    return
                status, data = server.pages[self.path]
                data = data(number) if callable(data) else data
                self.send_response(status)
                self.send_header('Content-Type', 'text/plain; version=0.0.4')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get('Content-Length') or 0))
                if self.path != '/generate':
                    self._json({})
                    return
                with server._lock:
                    number = len(server.bodies)
                    server.bodies.append(json.loads(body))
                    done = server._outcomes[number] = [threading.Event(), None]
                try:
                    server.script(_Stream(self.wfile, server.stopping), server.bodies[number], number)
                    done[1] = 'sent'
                except OSError as exc:
                    done[1] = exc
                finally:
                    done[0].set()
                    self.close_connection = True

            def _json(self, value):
                data = json.dumps(value).encode()
                self.send_response(200)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_args):
                pass

        self.httpd = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = 'http://127.0.0.1:%d' % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def outcome(self, number):
        """'sent', or the OSError that ended request `number`'s script; waits for it to end."""
        with self._lock:
            done = self._outcomes.get(number)
        assert done is not None, 'request %d never reached the server' % number
        assert done[0].wait(DEADLINE_S), 'the script of request %d did not end' % number
        return done[1]

    def close(self):
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()
