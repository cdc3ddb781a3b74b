# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The training monitor: its read-only HTTP server (make_handler, MonitorServer) and its command line (main).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

import _supervisor  # pylint: disable=import-error

from .gpus import GpuWatch
from .status import CHUNK_BYTES, Monitor


# The page's files are beside the program, one folder above this package.
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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
            parts = urlsplit(self.path)
            path = parts.path
            if path in STATIC:
                name, content_type = STATIC[path]
                with open(os.path.join(HERE, name), 'rb') as handle:
                    self._send(200, handle.read(), content_type)
            elif path == '/api/status':
                self._json(monitor.status())
            elif path == '/api/events':
                self._events(*self._cursor(parts.query, self.headers.get('Last-Event-ID')))
            elif path == '/api/history':
                since, of = self._cursor(parts.query)
                self._json(monitor.history(since, of))
            elif path == '/api/evaluation':
                self._json(monitor.evaluation.read()[0])
            elif path == '/' + monitor.evaluation.name:
                self._evaluation_file()
            elif path == '/files/':
                self._json({'run': monitor.name, 'files': monitor.files()})
            elif path.startswith('/files/'):
                self._file(unquote(path[len('/files/'):]))
            else:
                self._error(HTTPStatus.NOT_FOUND, 'not found')

        do_HEAD = do_GET

        @staticmethod
        def _cursor(query, last_event_id=None):
            """(points the page has seen, the index they came from or None): ?since=N&id=ID, or the Last-Event-ID
            (ID:N) that the browser sends back when it reconnects."""
            if last_event_id:
                name, _sep, number = last_event_id.rpartition(':')
                if number.isdigit() and name:
                    return int(number), name
            fields = parse_qs(query)
            since = (fields.get('since') or ['0'])[0]
            return (int(since) if since.isdigit() and len(since) < 16 else 0), (fields.get('id') or [None])[0]

        def _refuse(self):
            # A body the request may carry is not read: close rather than parse it as the next request.
            self.close_connection = True
            self._error(HTTPStatus.METHOD_NOT_ALLOWED, 'read-only: only GET and HEAD',
                        {'Allow': 'GET, HEAD', 'Connection': 'close'})

        def _evaluation_file(self):
            """The evaluation file as it is (what the monitor read of it, at most its limit), for the page's link."""
            answer, raw, _version = monitor.evaluation.read()
            if raw is None:
                self._error(HTTPStatus.NOT_FOUND, answer['error'] or 'no evaluation yet (playbooks/evaluate.yml writes one)')
                return
            self._send(200, raw, 'application/json', {'Content-Disposition': 'inline'})

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

        def _events(self, cursor=0, last_id=None):
            self.send_response(200)
            for key, value in SECURITY_HEADERS.items():
                self.send_header(key, value)
            self.send_header('Content-Type', 'text/event-stream; charset=utf-8')
            self.send_header('Connection', 'close')
            self.end_headers()
            self.close_connection = True
            if self.command == 'HEAD':
                return
            last, last_write, started, sent_id, evaluation_sent = None, 0.0, time.monotonic(), None, None
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
                    # the evaluation file, checked (one lstat) each time and sent when it changed
                    evaluation, _raw, version = monitor.evaluation.read()
                    if version != evaluation_sent:
                        evaluation_sent = version
                        self.wfile.write(('event: evaluation\ndata: %s\n\n' % json.dumps(evaluation, sort_keys=True)).encode('ascii'))
                        last_write = now
                    # the points of the curves not sent yet, as long as there are some (the whole history first)
                    while True:
                        history = monitor.history(cursor, last_id, wait=False)
                        if history is None or (history['next'] == cursor and history['id'] == sent_id):
                            break
                        last_id = sent_id = history['id']
                        cursor = history['next']
                        self.wfile.write(('id: %s:%d\nevent: history\ndata: %s\n\n' % (
                            history['id'], cursor, json.dumps(history, sort_keys=True))).encode('ascii'))
                        last_write = now
                        if history['complete']:
                            break
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
    parser.add_argument('--gpu', action='append', default=[],
                        help="a GPU of the run (index or UUID), repeated; default: CUDA_VISIBLE_DEVICES of the run's unit")
    parser.add_argument('--idle-gpu-seconds', type=float, default=60.0,
                        help='seconds at 0%% utilization after which a GPU of the run is shown idle')
    parser.add_argument('--gpu-telemetry', choices=('auto', 'pynvml', 'ctypes', 'nvidia-smi', 'off'), default='auto',
                        help="how the GPUs are sampled (_telemetry's backends), or off")
    parser.add_argument('--nvidia-smi', default='nvidia-smi')
    args = parser.parse_args(argv)
    if args.idle_gpu_seconds <= 0:
        parser.error('--idle-gpu-seconds is %r, expected a number of seconds above 0' % args.idle_gpu_seconds)
    return args


def main(argv=None):
    args = parse_args(argv)
    monitor = Monitor(args.run_dir, args.unit, args.name or os.path.basename(os.path.realpath(args.run_dir)),
                      log_name=args.log, tail=args.tail, systemctl=args.systemctl, backend=args.backend,
                      state_dir=args.state_dir)
    if args.gpu_telemetry != 'off':
        monitor.gpu_watch = GpuWatch(monitor.run_dir, args.gpu or monitor.run_devices, args.idle_gpu_seconds,
                                     nvidia_smi=args.nvidia_smi, backend=args.gpu_telemetry).start()
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
