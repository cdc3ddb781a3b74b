# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The live monitoring page of one training run: a read-only web service (Python 3.9+ standard library only).

    python3 specdec_train_monitor.py --run-dir /root/train_runs/NAME --unit specdec-train-NAME.service \
        [--backend supervisor --state-dir /var/lib/specdec/services]

GET /                 the page: run name and state, progress bar, rate, ETA, loss and metrics, last log lines,
                      updated live from /api/events (server-sent events), polling /api/status when that fails
GET /api/status       the same as JSON
GET /api/events       a server-sent event with the status whenever it changes
GET /files/           the run folder's files (top level) as JSON; GET /files/NAME one of them as text
Anything else is 404; any other method (TRACE, PROPFIND, CONNECT, ... included) 405 with `Allow: GET, HEAD` and
the same security headers. Only the run folder's own top-level regular files are served (no path traversal, no
symlinks out), requests whose Host is not a loopback name (DNS rebinding) are refused, and the page's
Content-Security-Policy allows only its own script and style: log text reaches the page as text, never as markup.
Progress is read from the log by _train_log.py (the collection's module_utils/_train_log.py, installed beside this
file). The run's state comes from systemd (`systemctl show`), or, where PID 1 is not systemd, from the run's folder of
specdec's supervisor (<state-dir>/<unit>/: run.json, exit.json), read by _supervisor.py (the collection's
module_utils/_supervisor.py, installed beside this file too); the page shows the same states either way.

The work per request is bounded: one request at a time refreshes the status (the unit, then at most READ_LIMIT_BYTES
of what the log gained, from where the last refresh stopped; a bigger burst is skipped to its last part, the tail
showing the gap); a request that comes meanwhile answers at once with the last status instead of waiting for it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

import _supervisor  # pylint: disable=import-error
from _train_log import TrainLog  # pylint: disable=import-error

HERE = os.path.dirname(os.path.abspath(__file__))
STATIC = {
    '/': ('index.html', 'text/html; charset=utf-8'),
    '/static/monitor.js': ('monitor.js', 'text/javascript; charset=utf-8'),
    '/static/monitor.css': ('monitor.css', 'text/css; charset=utf-8'),
}
SECURITY_HEADERS = {
    'Content-Security-Policy': "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                               "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'X-Frame-Options': 'DENY',
    'Cache-Control': 'no-store',
}
LOOPBACK_NAMES = ('localhost', '127.0.0.1', '[::1]', '::1')
UNIT_PROPERTIES = ('LoadState', 'ActiveState', 'SubState', 'Result', 'ExecMainStatus', 'ExecMainCode',
                   'ExecMainStartTimestamp', 'ExecMainExitTimestamp')
# The most one refresh reads of the log: a log (at start) or a burst bigger than this is read from its last part.
READ_LIMIT_BYTES = 1024 * 1024
CHUNK_BYTES = 256 * 1024


def unit_state(props):
    """The run's state from `systemctl show` properties: running, succeeded, failed, stopped, stopping, not started
    or unknown (no such unit)."""
    load, active = props.get('LoadState'), props.get('ActiveState')
    if load in (None, '', 'not-found'):
        return 'unknown'
    if active in ('active', 'activating', 'reloading'):
        return 'running'
    if active == 'deactivating':
        return 'stopping'
    if active == 'failed':
        return 'failed'
    if not props.get('ExecMainStartTimestamp'):
        return 'not started'
    if props.get('Result', 'success') != 'success':
        return 'failed'
    if props.get('ExecMainStatus', '0') == '0':
        return 'succeeded'
    # Killed by SIGTERM (systemctl stop) counts as success for systemd: the run was stopped, not finished.
    return 'stopped'


def service_state(service):
    """(state, unit details) of the run from specdec's supervisor (a status of _supervisor.status()), in the words of
    unit_state() and `systemctl show`: the page shows the same on both backends."""
    state, code, number = service.get('state'), service.get('exit_code'), service.get('signal')
    detail = {
        'load_state': 'not-found' if state in (None, 'not-found') else 'loaded',
        'active_state': None, 'sub_state': None, 'result': None,
        'exit_status': code if code is not None else number,
        'started': service.get('started'), 'exited': service.get('finished'), 'error': service.get('error'),
    }
    if state == 'running':
        detail.update(active_state='active', sub_state='running')
        return 'running', detail
    if state == 'inactive':
        detail.update(active_state='inactive', sub_state='dead')
        return 'not started', detail
    if state == 'exited':
        detail.update(active_state='inactive', sub_state='dead', result='success')
        return 'succeeded', detail
    if state == 'failed':
        if number == signal.SIGTERM and not service.get('error'):
            # as systemd counts it: stopped (the supervisor's stop), not finished
            detail.update(active_state='inactive', sub_state='dead', result='success')
            return 'stopped', detail
        result = 'exit-code' if code is not None else 'signal' if number is not None else 'lost'
        detail.update(active_state='failed', sub_state='failed', result=result)
        return 'failed', detail
    return 'unknown', detail


def parse_show(text):
    props = {}
    for line in text.splitlines():
        key, sep, value = line.partition('=')
        if sep:
            props[key] = value
    return props


class Monitor:
    """The run's status, read incrementally from its log and from systemd or the supervisor, shared by all requests.

    One refresh at a time reads the unit and the log (under `_refreshing`, which no request waits for once there is
    a status); every request gets the status of the latest refresh.
    """

    def __init__(self, run_dir, unit, name, log_name='train.log', tail=40, systemctl='systemctl', unit_ttl=1.0,
                 backend='systemd', state_dir=_supervisor.DEFAULT_STATE_DIR):
        self.run_dir = os.path.realpath(run_dir)
        self.unit = unit
        self.backend = backend
        self.service_dir = os.path.join(state_dir, unit)
        self.name = name
        self.log_name = log_name
        self.tail = tail
        self.systemctl = systemctl
        self.unit_ttl = unit_ttl
        self._refreshing = threading.Lock()
        self._status = None
        self._log = TrainLog()
        self._offset = 0
        self._inode = None
        self._log_bytes = 0
        self._log_mtime = None
        self._read_bytes = 0
        self._unit_props = {}
        self._service = None
        self._unit_read = 0.0

    def _read_log(self):
        """Read what the log gained since the last read, at most READ_LIMIT_BYTES of it (its end)."""
        self._read_bytes = 0
        path = os.path.join(self.run_dir, self.log_name)
        try:
            handle = open(path, 'rb')  # pylint: disable=consider-using-with
        except OSError:
            return
        with handle:
            info = os.fstat(handle.fileno())
            if info.st_ino != self._inode or info.st_size < self._offset:
                # A new or truncated log: start again.
                self._log, self._inode, self._offset = TrainLog(), info.st_ino, 0
            self._log_bytes, self._log_mtime = info.st_size, info.st_mtime
            end = info.st_size  # what it gains while this read runs is for the next one
            if end - self._offset > READ_LIMIT_BYTES:
                start = end - READ_LIMIT_BYTES
                handle.seek(start - 1)
                self._log.skip(start - self._offset, cut=handle.read(1) not in (b'\n', b'\r'))
                self._offset = start
            handle.seek(self._offset)
            while self._offset < end:
                chunk = handle.read(min(CHUNK_BYTES, end - self._offset))
                if not chunk:
                    break
                self._log.feed(chunk)
                self._offset += len(chunk)
                self._read_bytes += len(chunk)

    def _read_unit(self):
        now = time.monotonic()
        if (self._unit_props or self._service) and now - self._unit_read < self.unit_ttl:
            return
        if self.backend == 'supervisor':
            self._service = _supervisor.status(self.service_dir)
            self._unit_read = now
            return
        try:
            result = subprocess.run(
                [self.systemctl, 'show', '--property=' + ','.join(UNIT_PROPERTIES), '--', self.unit],
                capture_output=True, text=True, timeout=10, check=False, env=dict(os.environ, LC_ALL='C'))
            self._unit_props = parse_show(result.stdout) if result.returncode == 0 else {}
        except (OSError, subprocess.SubprocessError):
            self._unit_props = {}
        self._unit_read = now

    def status(self):
        """The latest status: refreshed by this request, or, while another refreshes it, the one before."""
        # Only the very first requests wait (for the first status); the refresh they wait for is bounded too.
        if self._refreshing.acquire(blocking=self._status is None):  # pylint: disable=consider-using-with
            try:
                self._status = self._refresh()
            finally:
                self._refreshing.release()
        return dict(self._status, now=time.time())

    def _refresh(self):
        # The unit first: once it shows the run ended, the log read after it holds the run's last line.
        self._read_unit()
        self._read_log()
        status = self._log.status(tail=self.tail)
        state, detail = self._state()
        status.update({
            'run': self.name,
            'unit': self.unit,
            'backend': self.backend,
            'state': state,
            'unit_state': detail,
            'log_file': self.log_name,
            'log_bytes': self._log_bytes,
            'log_updated': self._log_mtime,
            # bytes of the log this status cost, and those left unread (bursts bigger than READ_LIMIT_BYTES)
            'log_read_bytes': self._read_bytes,
            'log_skipped_bytes': self._log.skipped_bytes,
        })
        return status

    def _state(self):
        """(state, unit details) from the last read of systemd or the supervisor."""
        if self.backend == 'supervisor':
            return service_state(self._service or {})
        props = dict(self._unit_props)
        return unit_state(props), {
            'load_state': props.get('LoadState') or None,
            'active_state': props.get('ActiveState') or None,
            'sub_state': props.get('SubState') or None,
            'result': props.get('Result') or None,
            'exit_status': int(props['ExecMainStatus']) if props.get('ExecMainStatus', '').isdigit() else None,
            'started': props.get('ExecMainStartTimestamp') or None,
            'exited': props.get('ExecMainExitTimestamp') or None,
            'error': None,
        }

    def files(self):
        """The run folder's top-level regular files (no dot files, no symlinks), name -> size."""
        entries = {}
        try:
            with os.scandir(self.run_dir) as scan:
                for entry in scan:
                    if not entry.name.startswith('.') and entry.is_file(follow_symlinks=False):
                        entries[entry.name] = entry.stat(follow_symlinks=False).st_size
        except OSError:
            pass
        return dict(sorted(entries.items()))

    def open_file(self, name):
        """An open binary file of the run folder, or None: one top-level regular file, by exact name."""
        if not name or name.startswith('.') or any(char in name for char in '/\\\x00') or name not in self.files():
            return None
        try:
            descriptor = os.open(os.path.join(self.run_dir, name), os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0))
        except OSError:
            return None
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            os.close(descriptor)
            return None
        return os.fdopen(descriptor, 'rb')


def make_handler(monitor, interval=0.5, keepalive=15.0, stream_seconds=600.0, allowed_hosts=()):
    hosts = set(LOOPBACK_NAMES) | set(allowed_hosts)

    class Handler(BaseHTTPRequestHandler):
        server_version = 'specdec-train-monitor'
        sys_version = ''
        protocol_version = 'HTTP/1.1'

        def version_string(self):
            return self.server_version

        def log_message(self, format, *args):  # pylint: disable=redefined-builtin
            sys.stderr.write('%s %s\n' % (self.address_string(), format % args))

        def _host_allowed(self):
            host = (self.headers.get('Host') or '').strip().lower()
            name = host.rsplit(':', 1)[0] if not host.endswith(']') else host
            return name in hosts

        def _send(self, code, body, content_type, extra=None):
            self.send_response(code)
            for key, value in dict(SECURITY_HEADERS, **(extra or {})).items():
                self.send_header(key, value)
            self.send_header('Content-Type', content_type)
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            if self.command != 'HEAD':
                self.wfile.write(body)

        def _json(self, value, code=200):
            self._send(code, json.dumps(value, sort_keys=True).encode('ascii'), 'application/json')

        def _error(self, code, message, extra=None):
            self._send(code, (message + '\n').encode('utf-8'), 'text/plain; charset=utf-8', extra)

        def send_error(self, code, message=None, explain=None):  # pylint: disable=unused-argument
            """http.server's own errors (bad request line, headers too long, ...) as plain text with the security
            headers, not its HTML page."""
            self.log_error('code %d, message %s', code, message)
            self.close_connection = True
            if self.request_version == 'HTTP/0.9':
                # a request line too broken to name its version still gets a status line and the headers
                self.request_version = 'HTTP/1.0'
            try:
                phrase = HTTPStatus(code).phrase
            except ValueError:
                phrase = 'error'
            self._error(code, message or phrase, {'Connection': 'close'})

        def __getattr__(self, name):
            # http.server calls do_<METHOD>, and answers a method it finds none for with 501: every method but GET and
            # HEAD gets the same 405 instead, whatever its name.
            if name.startswith('do_'):
                return self._refuse
            raise AttributeError(name)

        def do_GET(self):  # pylint: disable=invalid-name
            if not self._host_allowed():
                self._error(HTTPStatus.FORBIDDEN, 'forbidden: unexpected Host header')
                return
            path = urlsplit(self.path).path
            if path in STATIC:
                name, content_type = STATIC[path]
                with open(os.path.join(HERE, name), 'rb') as handle:
                    self._send(200, handle.read(), content_type)
            elif path == '/api/status':
                self._json(monitor.status())
            elif path == '/api/events':
                self._events()
            elif path == '/files/':
                self._json({'run': monitor.name, 'files': monitor.files()})
            elif path.startswith('/files/'):
                self._file(unquote(path[len('/files/'):]))
            else:
                self._error(HTTPStatus.NOT_FOUND, 'not found')

        do_HEAD = do_GET

        def _refuse(self):
            # A body the request may carry is not read: close rather than parse it as the next request.
            self.close_connection = True
            self._error(HTTPStatus.METHOD_NOT_ALLOWED, 'read-only: only GET and HEAD',
                        {'Allow': 'GET, HEAD', 'Connection': 'close'})

        def _file(self, name):
            handle = monitor.open_file(name)
            if handle is None:
                self._error(HTTPStatus.NOT_FOUND, 'not found')
                return
            with handle:
                size = os.fstat(handle.fileno()).st_size
                self.send_response(200)
                for key, value in SECURITY_HEADERS.items():
                    self.send_header(key, value)
                self.send_header('Content-Type', 'text/plain; charset=utf-8')
                self.send_header('Content-Disposition', 'inline')
                self.send_header('Content-Length', str(size))
                self.end_headers()
                remaining = size
                while remaining > 0 and self.command != 'HEAD':
                    chunk = handle.read(min(CHUNK_BYTES, remaining))
                    if not chunk:
                        break
                    self.wfile.write(chunk)
                    remaining -= len(chunk)

        def _events(self):
            self.send_response(200)
            for key, value in SECURITY_HEADERS.items():
                self.send_header(key, value)
            self.send_header('Content-Type', 'text/event-stream; charset=utf-8')
            self.send_header('Connection', 'close')
            self.end_headers()
            self.close_connection = True
            if self.command == 'HEAD':
                return
            last, last_write, started = None, 0.0, time.monotonic()
            try:
                self.wfile.write(b'retry: 2000\n\n')
                while time.monotonic() - started < stream_seconds:
                    status = monitor.status()
                    status.pop('now')
                    payload = json.dumps(status, sort_keys=True)
                    now = time.monotonic()
                    if payload != last:
                        self.wfile.write(('data: %s\n\n' % payload).encode('ascii'))
                        last, last_write = payload, now
                    elif now - last_write > keepalive:
                        self.wfile.write(b': keep-alive\n\n')
                        last_write = now
                    self.wfile.flush()
                    time.sleep(interval)
            except (BrokenPipeError, ConnectionResetError):
                pass

    return Handler


class MonitorServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, handler):
        if ':' in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, handler)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description='Read-only live monitoring page of one training run.')
    parser.add_argument('--run-dir', required=True, help='the run folder (holds the log)')
    parser.add_argument('--unit', required=True, help="the run's service (its unit name on both backends)")
    parser.add_argument('--backend', choices=('systemd', 'supervisor'), default='systemd',
                        help="where the run's state is read: systemctl show, or the supervisor's folder of the run")
    parser.add_argument('--state-dir', default=_supervisor.DEFAULT_STATE_DIR,
                        help="the supervisor's folder of services (--backend supervisor)")
    parser.add_argument('--name', help='the run name shown (default: the run folder name)')
    parser.add_argument('--log', default='train.log', help='the log file, in the run folder')
    parser.add_argument('--bind', default='127.0.0.1', help='address to listen on')
    parser.add_argument('--port', type=int, default=8080)
    parser.add_argument('--tail', type=int, default=40, help='log lines shown')
    parser.add_argument('--interval', type=float, default=0.5, help='seconds between checks for a live page')
    parser.add_argument('--allowed-host', action='append', default=[], help='a Host name accepted besides loopback')
    parser.add_argument('--systemctl', default='systemctl')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    monitor = Monitor(args.run_dir, args.unit, args.name or os.path.basename(os.path.realpath(args.run_dir)),
                      log_name=args.log, tail=args.tail, systemctl=args.systemctl, backend=args.backend,
                      state_dir=args.state_dir)
    server = MonitorServer((args.bind, args.port), make_handler(
        monitor, interval=args.interval, allowed_hosts=[host.lower() for host in args.allowed_host]))
    sys.stderr.write('serving run %s (%s, %s) on http://%s:%d/\n' % (monitor.name, args.unit, args.backend, args.bind,
                                                                     server.server_address[1]))
    sys.stderr.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == '__main__':
    sys.exit(main())
