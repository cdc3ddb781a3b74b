# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Small HTTP helpers for an SGLang server's JSON endpoints and its streamed /generate. Standard library only.

Private to the specdec.bench collection. Nothing here goes through a proxy: the opener has an empty
ProxyHandler and the stream uses http.client directly, so HTTP_PROXY in the environment never routes
traffic for the server (usually 127.0.0.1) elsewhere.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request

# An empty ProxyHandler disables the environment's proxies for this opener.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
# What a server that is down, restarting or still binding raises.
CONNECTION_ERRORS = (urllib.error.URLError, http.client.HTTPException, ConnectionError, socket.timeout, OSError)
# The longest stream line read: SGLang re-sends the cumulative text and ids in every chunk, some tens of bytes a
# token, so a few MiB hold any output a benchmark asks for; a longer line is a broken server, not a long answer.
MAX_LINE_BYTES = 4 << 20


class BrokenResponse(http.client.HTTPException):
    """An answer that breaks HTTP or the stream's contract (bad framing, an over-long line, counts beyond what was
    asked); like http.client's own LineTooLong, it ends the request."""


class HTTPStatusError(Exception):
    """A response other than 200."""

    def __init__(self, url, status, body):
        super().__init__('%s answered HTTP %s: %s' % (url, status, (body or '').strip()[:500]))
        self.status = status
        self.body = body


def line_too_long(max_line):
    return 'a stream line longer than %d bytes (no newline within the limit)' % max_line


def join(base_url, path):
    return base_url.rstrip('/') + path


def get_status(url, timeout):
    """The HTTP status of a GET, or None when nothing answered (refused, reset, timed out)."""
    try:
        with _OPENER.open(url, timeout=timeout) as response:
            response.read()
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except CONNECTION_ERRORS:
        return None


def request_json(url, body=None, timeout=30.0, method=None):
    """GET (or POST when body is given) and parse the JSON answer; raises HTTPStatusError or a connection error."""
    data = None if body is None else json.dumps(body).encode('utf-8')
    request = urllib.request.Request(url, data=data, method=method, headers={'Content-Type': 'application/json'})
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            text = response.read().decode('utf-8', 'replace')
    except urllib.error.HTTPError as exc:
        raise HTTPStatusError(url, exc.code, exc.read().decode('utf-8', 'replace')) from None
    try:
        return json.loads(text) if text.strip() else None
    except ValueError:
        return text


def post(url, timeout=30.0):
    """POST with an empty body; (status, text). Raises a connection error when nothing answers."""
    request = urllib.request.Request(url, data=b'', method='POST')
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            return response.status, response.read().decode('utf-8', 'replace')
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode('utf-8', 'replace')


def stream_generate(base_url, body, timeout, clock=time.perf_counter, max_line=MAX_LINE_BYTES):
    """POST a streamed native /generate; yields (arrival time, event) per SSE `data:` line, event "[DONE]" last.

    The arrival time is taken as soon as the line is read, before it is parsed. Raises HTTPStatusError for an
    answer other than 200, BrokenResponse for a line longer than max_line bytes and ConnectionError when the
    stream ends before `data: [DONE]` (the server died).
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
        readline = response.readline
        while True:
            line = readline(max_line + 1)
            now = clock()
            if not line:
                raise ConnectionError('the stream ended before data: [DONE]')
            if len(line) > max_line:
                raise BrokenResponse(line_too_long(max_line))
            if not line.startswith(b'data:'):
                continue  # blank separators, comments, event: lines
            payload = line[5:].strip()
            if payload == b'[DONE]':
                yield now, '[DONE]'
                return
            yield now, json.loads(payload)
    finally:
        connection.close()
