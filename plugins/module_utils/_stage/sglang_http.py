# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Small HTTP helpers for an SGLang server's endpoints, and the errors and limits of its streamed /generate (which
builtin_harness reads). Standard library only.

Private to the specdec.bench collection. Nothing here goes through a proxy: the opener has an empty
ProxyHandler (and builtin_harness uses http.client directly), so HTTP_PROXY in the environment never routes
traffic for the server (usually 127.0.0.1) elsewhere.
"""

from __future__ import annotations

import http.client
import json
import socket
import urllib.error
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


def request_json(url, timeout=30.0):
    """GET and parse the JSON answer (None for an empty body, the text itself when it is not JSON); raises
    HTTPStatusError or a connection error."""
    try:
        with _OPENER.open(url, timeout=timeout) as response:
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


class TooLarge(Exception):
    """An answer longer than the bound its reader set."""


def get_text(url, timeout=30.0, max_bytes=None):
    """GET the answer's text; raises HTTPStatusError for a status other than 200, TooLarge when the body is longer
    than max_bytes (no more than max_bytes + 1 bytes are read), or a connection error."""
    try:
        with _OPENER.open(url, timeout=timeout) as response:
            data = response.read() if max_bytes is None else response.read(max_bytes + 1)
    except urllib.error.HTTPError as exc:
        raise HTTPStatusError(url, exc.code, exc.read(4096).decode('utf-8', 'replace')) from None
    if max_bytes is not None and len(data) > max_bytes:
        raise TooLarge('%s answered more than %d bytes' % (url, max_bytes))
    return data.decode('utf-8', 'replace')
