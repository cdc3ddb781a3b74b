# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The training monitor's service, installed as the role installs it and run for real on a free loopback port.

systemctl is a stand-in script that prints what a test writes; everything else (HTTP, the log file growing, the
server-sent events) is real.
"""

from __future__ import annotations

import http.client
import importlib
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import threading
import time

import pytest

from ansible_collections.specdec.bench.plugins.modules import train_monitor_install
from testhelpers import free_port, wait_until  # pylint: disable=import-error

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
FILES = os.path.join(REPO, 'roles', 'train_monitor', 'files')
PARSER = os.path.join(REPO, 'plugins', 'module_utils', '_train_log.py')
DEADLINE = 15
# A log burst as after a stalled run's buffers flush: tens of MB at once.
BURST_BYTES = 50 * 1024 * 1024
# What one /api/status may read of the log: the monitor's 1 MiB limit, with room for the unit's few hundred bytes.
READ_BOUND_BYTES = 2 * 1024 * 1024
SECURITY_HEADERS = ('Content-Security-Policy', 'X-Content-Type-Options', 'Referrer-Policy', 'X-Frame-Options',
                    'Cache-Control')


class Service:
    def __init__(self, root):
        self.install = os.path.join(root, 'install')
        self.run_dir = os.path.join(root, 'runs', 'dflash-test')
        self.log = os.path.join(self.run_dir, 'train.log')
        self.unit_file = os.path.join(root, 'unit-state')
        os.makedirs(self.run_dir)
        # As the role installs it: the service's files, and the collection's parser and supervisor reader beside
        # them, as specdec.bench.train_monitor_install writes them from its payload.
        shutil.copytree(FILES, self.install)
        for name, source in train_monitor_install.library_sources().items():
            with open(os.path.join(self.install, name), 'wb') as handle:
                handle.write(source)
        self.systemctl = os.path.join(root, 'systemctl')
        with open(self.systemctl, 'w', encoding='utf-8') as handle:
            handle.write('#!/bin/sh\ncat %s\n' % self.unit_file)
        os.chmod(self.systemctl, 0o755)
        self.set_unit(ActiveState='active', SubState='running', Result='success', ExecMainStatus='0',
                      ExecMainStartTimestamp='Wed 2026-12-02 10:00:00 UTC')
        with open(os.path.join(self.run_dir, 'run.json'), 'w', encoding='utf-8') as handle:
            json.dump({'name': 'dflash-test'}, handle)
        self.port = free_port()
        self.process = None

    def set_unit(self, **props):
        with open(self.unit_file, 'w', encoding='utf-8') as handle:
            handle.write('LoadState=loaded\n' + ''.join('%s=%s\n' % item for item in props.items()))

    def write(self, text, mode='a'):
        with open(self.log, mode + 'b') as handle:
            handle.write(text.encode('utf-8') if isinstance(text, str) else text)

    def start(self):
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(self.install, 'specdec_train_monitor.py'), '--run-dir', self.run_dir,
             '--unit', 'specdec-train-dflash-test.service', '--port', str(self.port), '--interval', '0.1',
             '--systemctl', self.systemctl, '--allowed-host', 'monitor.example'],
            stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            try:
                socket.create_connection(('127.0.0.1', self.port), timeout=1).close()
                return
            except OSError:
                assert self.process.poll() is None, self.process.stderr.read()
                time.sleep(0.05)
        raise AssertionError('the monitor did not listen within %d s' % DEADLINE)

    def stop(self):
        if self.process:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process.stderr.close()

    def request(self, path, method='GET', host=None):
        """(status, headers, body) of one request with the path sent exactly as given."""
        conn = http.client.HTTPConnection('127.0.0.1', self.port, timeout=10)
        conn.putrequest(method, path, skip_host=True)
        conn.putheader('Host', host or '127.0.0.1:%d' % self.port)
        conn.endheaders()
        response = conn.getresponse()
        body = response.read()
        conn.close()
        return response.status, dict(response.getheaders()), body

    def status(self):
        code, _headers, body = self.request('/api/status')
        assert code == 200
        return json.loads(body)


@pytest.fixture(name='service')
def monitor_service(tmp_path):
    service = Service(str(tmp_path))
    service.write('Loading\n{"step": 10, "total_steps": 100, "loss": 3.5, "time": 100}\n'
                  '{"step": 20, "total_steps": 100, "loss": 3.1, "time": 110}\n')
    service.start()
    yield service
    service.stop()


def status_when(service, key, expected):
    """The status when its key holds the expected value (or, for a dict, those items), else None."""
    status = service.status()
    value = status[key]
    if isinstance(expected, dict):
        return status if value and all(value.get(name) == item for name, item in expected.items()) else None
    return status if value == expected else None


def test_status(service):
    status = service.status()
    assert status['run'] == 'dflash-test' and status['unit'] == 'specdec-train-dflash-test.service'
    assert status['state'] == 'running' and status['unit_state']['active_state'] == 'active'
    assert status['progress']['step'] == 20 and status['progress']['percent'] == 20.0
    assert status['progress']['rate'] == pytest.approx(1.0) and status['progress']['eta_seconds'] == pytest.approx(80)
    assert status['loss'] == 3.1 and status['lines'][0] == 'Loading' and status['log_file'] == 'train.log'


def test_status_follows_the_log_and_the_unit(service):
    service.write('\r 30%|###  | 30/100 [00:30<01:10, 1.00it/s, loss=2.9]')
    wait_until(lambda: service.status()['progress']['step'] == 30, 'step 30 (the unfinished bar not read)', timeout=DEADLINE)
    service.write('\r 40%|#### | 40/100 [00:40<01:00, 1.00it/s, loss=2.8]\r\nTraceback (most recent call last):\n'
                  'torch.OutOfMemoryError: CUDA out of memory\n')
    service.set_unit(ActiveState='failed', SubState='failed', Result='exit-code', ExecMainStatus='1',
                     ExecMainStartTimestamp='Wed 2026-12-02 10:00:00 UTC')
    status = wait_until(lambda: status_when(service, 'state', 'failed'), 'the failed state', timeout=DEADLINE)
    assert status['progress']['step'] == 40 and status['loss'] == 2.8
    assert status['last_error'] == 'torch.OutOfMemoryError: CUDA out of memory'
    assert status['unit_state']['exit_status'] == 1


def test_a_truncated_log_is_read_again(service):
    service.status()
    service.write('{"step": 3, "total_steps": 50}\n', mode='w')
    status = wait_until(lambda: status_when(service, 'progress', {'total': 50}), 'the log reread', timeout=DEADLINE)
    assert status['lines'] == ['{"step": 3, "total_steps": 50}']


def read_event(stream, name=None):
    """The next `data:` event of a server-sent event stream named `name` (None: the status, unnamed), as JSON."""
    event = None
    while True:
        line = stream.readline()
        assert line, 'the event stream ended'
        if line.startswith(b'event: '):
            event = line[len(b'event: '):].decode().strip()
        elif line.startswith(b'data: '):
            if event == name:
                return json.loads(line[len(b'data: '):])
        elif line in (b'\n', b'\r\n'):
            event = None


def test_events_push_each_change(service):
    conn = http.client.HTTPConnection('127.0.0.1', service.port, timeout=DEADLINE)
    conn.request('GET', '/api/events')
    response = conn.getresponse()
    assert response.status == 200 and response.getheader('Content-Type').startswith('text/event-stream')
    assert read_event(response)['progress']['step'] == 20
    service.write('{"step": 21, "total_steps": 100, "loss": 3.0, "time": 111}\n<b>new line</b>\n')
    event = read_event(response)
    while event['progress']['step'] != 21:
        event = read_event(response)
    assert event['lines'][-1] == '<b>new line</b>'
    conn.close()


@pytest.mark.parametrize('path', [
    '/files/../../../../etc/passwd',
    '/files/..%2f..%2f..%2f..%2fetc%2fpasswd',
    '/files/%2e%2e%2f%2e%2e%2fetc%2fpasswd',
    '/files/%2fetc%2fpasswd',
    '/files//etc/passwd',
    '/files/..',
    '/files/.hidden',
    '/files/secret-link',
    '/files/checkpoints',
    '/files/train.log%00.png',
    '/../../etc/passwd',
    '/static/../specdec_train_monitor.py',
    '/static/../../../etc/passwd',
    '/_train_log.py',
    '/specdec_train_monitor.py',
    '/specdec_monitor/server.py',
    '/static/../specdec_monitor/status.py',
])
def test_nothing_outside_the_run_is_served(service, path):
    os.symlink('/etc/passwd', os.path.join(service.run_dir, 'secret-link'))
    os.mkdir(os.path.join(service.run_dir, 'checkpoints'))
    with open(os.path.join(service.run_dir, '.hidden'), 'w', encoding='utf-8') as handle:
        handle.write('hidden')
    code, _headers, body = service.request(path)
    assert code == 404 and b'root:' not in body and b'hidden' not in body and b'import' not in body


def test_the_runs_own_files_are_served_as_text(service):
    os.symlink('/etc/passwd', os.path.join(service.run_dir, 'secret-link'))
    code, headers, body = service.request('/files/train.log')
    assert code == 200 and body.startswith(b'Loading\n')
    assert headers['Content-Type'] == 'text/plain; charset=utf-8' and headers['X-Content-Type-Options'] == 'nosniff'
    code, _headers, body = service.request('/files/')
    assert json.loads(body)['files'] == {'train.log': os.path.getsize(service.log)}


# What train_run writes into the run folder beside the log (root's, 0750): the launcher and the pipeline scripts, the
# manifest; and what a trainer or a person may leave there: an env file with a token, a private key.
NOT_FOR_THE_PAGE = {'run.sh': (0o600, b'#!/bin/bash\nexport HF_TOKEN=hf_secret\n'),
                    'train_dflash.sh': (0o750, b'#!/bin/bash\nWANDB_API_KEY=wandb_secret\n'),
                    'train-dflash-test.env': (0o600, b'HF_TOKEN="hf_secret"\n'),
                    'secrets.env': (0o644, b'WANDB_API_KEY=wandb_secret\n'),
                    'run.json': (0o644, b'{"name": "dflash-test", "settings": {"env": {"X": "secret"}}}\n'),
                    'id_rsa': (0o600, b'-----BEGIN OPENSSH PRIVATE KEY----- secret\n')}


def test_only_the_files_the_page_needs_are_served(service):
    """The service runs as root and any local user (nobody) can reach its port: /files/ served run.sh
    (0600) and any other file of the root-only run folder. Only the page's files are served, by an allow-list: the
    log it links, evaluation.json and the GPU samples; a script, a secret, an env file, the manifest are 404."""
    for name, (mode, data) in NOT_FOR_THE_PAGE.items():
        path = os.path.join(service.run_dir, name)
        with open(path, 'wb') as handle:
            handle.write(data)
        os.chmod(path, mode)
    page_files = {'evaluation.json': b'{"run": "dflash-test"}\n', 'monitor-gpus.jsonl': b'{"t": 1.0, "gpu": "0"}\n'}
    for name, data in page_files.items():
        with open(os.path.join(service.run_dir, name), 'wb') as handle:
            handle.write(data)
    for name in NOT_FOR_THE_PAGE:
        code, _headers, body = service.request('/files/' + name)
        assert code in (403, 404) and b'secret' not in body, (name, code, body)
        assert service.request('/files/' + name, method='HEAD')[0] in (403, 404)
    for name, data in page_files.items():
        code, _headers, body = service.request('/files/' + name)
        assert code == 200 and body == data, name
    assert service.request('/files/train.log')[0] == 200
    code, _headers, body = service.request('/files/')
    assert code == 200 and set(json.loads(body)['files']) == {'train.log', 'evaluation.json', 'monitor-gpus.jsonl'}
    assert b'secret' not in body and b'run.sh' not in body


def test_an_executable_log_is_not_served(service):
    """Never a script: a served name that is executable (a log replaced by a script) is refused too."""
    os.chmod(service.log, 0o755)
    assert service.request('/files/train.log')[0] == 404
    assert json.loads(service.request('/files/')[2])['files'] == {}


@pytest.mark.parametrize('method', ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE', 'PROPFIND', 'CONNECT',
                                    'MKCOL', 'BREW', 'get'])
def test_read_only(service, method):
    """Every method but GET and HEAD, known to http.server or not, is 405 with the headers of a GET answer."""
    _code, page_headers, _body = service.request('/')
    code, headers, body = service.request('/api/status', method=method)
    assert code == 405 and headers['Allow'] == 'GET, HEAD'
    assert headers['Content-Type'] == 'text/plain; charset=utf-8' and b'<' not in body
    assert {key: headers.get(key) for key in SECURITY_HEADERS} == {key: page_headers[key] for key in SECURITY_HEADERS}


@pytest.mark.parametrize(('request_line', 'expected'), [
    (b'GET / HTTP/9.9', 505), (b'GET', 400), (b'GET /' + b'x' * 70000 + b' HTTP/1.1', 414)])
def test_http_servers_own_errors_are_text_with_the_security_headers(service, request_line, expected):
    _code, page_headers, _body = service.request('/')
    with socket.create_connection(('127.0.0.1', service.port), timeout=DEADLINE) as conn:
        conn.sendall(request_line + b'\r\nHost: 127.0.0.1\r\n\r\n')
        answer = b''
        while True:
            data = conn.recv(65536)
            if not data:
                break
            answer += data
    head, _sep, body = answer.partition(b'\r\n\r\n')
    lines = head.decode('latin-1').split('\r\n')
    headers = dict(line.split(': ', 1) for line in lines[1:])
    assert lines[0].split()[1] == str(expected) and headers['Content-Type'] == 'text/plain; charset=utf-8'
    assert {key: headers.get(key) for key in SECURITY_HEADERS} == {key: page_headers[key] for key in SECURITY_HEADERS}
    assert b'<' not in body


@pytest.mark.parametrize(('host', 'expected'), [
    ('evil.example:8080', 403), ('attacker.example', 403), ('127.0.0.2:8080', 403),
    # an SSH tunnel may use another local port; the name is what counts
    ('localhost:9000', 200), ('127.0.0.1', 200), ('[::1]:8080', 200), ('monitor.example:8080', 200),
])
def test_host_header(service, host, expected):
    assert service.request('/api/status', host=host)[0] == expected


def test_page_is_self_contained_and_locked_down(service):
    code, headers, page = service.request('/')
    assert code == 200 and headers['Content-Type'] == 'text/html; charset=utf-8'
    policy = headers['Content-Security-Policy']
    assert "default-src 'none'" in policy and "script-src 'self'" in policy and 'unsafe-inline' not in policy
    for path in ('/static/monitor.js', '/static/monitor.css'):
        code, _headers, body = service.request(path)
        assert code == 200
        page += body
    # no CDN, no external font or script: the page works with no internet (SVG's namespace is a name, not a fetch)
    assert not re.search(rb'(https?:)?//[a-z0-9.-]+\.[a-z]{2,}', page.replace(b"'http://www.w3.org/2000/svg'", b''), re.I)
    script = service.request('/static/monitor.js')[2]
    assert b'innerHTML' not in script and b'insertAdjacentHTML' not in script and b'document.write' not in script


def load_monitor():
    """The service's package, imported as the service runs it (its parser and the supervisor's reader beside it)."""
    # No __pycache__ in the role's files: the role ships that folder as it is.
    writes_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    sys.path.insert(0, FILES)
    sys.path.insert(0, os.path.dirname(PARSER))
    try:
        return importlib.import_module('specdec_monitor')
    finally:
        sys.path.remove(FILES)
        sys.path.remove(os.path.dirname(PARSER))
        sys.dont_write_bytecode = writes_bytecode


def burst(first_step, size, total=10_000_000):
    """At least `size` bytes of JSON step lines, from first_step on: the bytes and the last step."""
    line = '{"step": %d, "total_steps": %d, "loss": 2.5, "time": %d}\n'
    count = size // len(line % (first_step, total, 1764680000)) + 1
    steps = range(first_step, first_step + count)
    return ''.join(line % (step, total, 1764680000 + step) for step in steps).encode('ascii'), steps[-1]


def bytes_read(pid):
    """What the process has read so far (read(2) and the like), from /proc/<pid>/io."""
    with open('/proc/%d/io' % pid, encoding='ascii') as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith('rchar:'))


def test_a_burst_costs_a_request_a_bounded_read(service):
    """After 50 MB at once, one /api/status reads at most about 1 MiB (counted by the kernel) and shows the burst's
    last step; the next one reads only what came since."""
    service.status()
    data, last = burst(21, BURST_BYTES)
    service.write(data)
    before = bytes_read(service.process.pid)
    status = service.status()
    assert bytes_read(service.process.pid) - before <= READ_BOUND_BYTES
    assert status['progress']['step'] == last and status['log_bytes'] == os.path.getsize(service.log)
    assert status['log_read_bytes'] <= READ_BOUND_BYTES and status['log_skipped_bytes'] >= BURST_BYTES - READ_BOUND_BYTES
    line = '{"step": %d, "total_steps": 10000000, "loss": 2.4}\n' % (last + 1)
    service.write(line)
    before = bytes_read(service.process.pid)
    status = service.status()
    assert bytes_read(service.process.pid) - before <= 64 * 1024
    assert status['progress']['step'] == last + 1 and status['log_read_bytes'] == len(line)


def test_a_request_never_waits_behind_another_reading_a_burst(tmp_path, monkeypatch):
    """The first request after a burst is held inside its read of the log; meanwhile another /api/status (and the
    page) answers at once, with the status from before the burst."""
    module = load_monitor()
    reading, release = threading.Event(), threading.Event()

    class HeldLog(module.status.TrainLog):
        hold = False

        def feed(self, data):
            if HeldLog.hold:
                HeldLog.hold = False
                reading.set()
                release.wait(DEADLINE)
            super().feed(data)

    monkeypatch.setattr(module.status, 'TrainLog', HeldLog)
    service = Service(str(tmp_path))
    service.write('{"step": 20, "total_steps": 100, "loss": 3.1}\n')
    monitor = module.Monitor(service.run_dir, 'specdec-train-dflash-test.service', 'dflash-test',
                             systemctl=service.systemctl)
    server = module.MonitorServer(('127.0.0.1', 0), module.make_handler(monitor))
    service.port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    first = {}
    try:
        assert service.status()['progress']['step'] == 20
        data, last = burst(21, BURST_BYTES)
        service.write(data)
        HeldLog.hold = True
        worker = threading.Thread(target=lambda: first.update(status=service.status()))
        worker.start()
        assert reading.wait(DEADLINE), 'the first request never read the log'
        # http.client's timeout is the deadline: a request queued behind the read would never answer in time
        second = service.status()
        assert second['progress']['step'] == 20 and second['log_bytes'] < BURST_BYTES
        assert service.request('/')[0] == 200 and not first
        release.set()
        worker.join(DEADLINE)
        assert first['status']['progress']['step'] == last
    finally:
        release.set()
        server.shutdown()
        server.server_close()


def test_unit_states():
    monitor = load_monitor()
    started = {'LoadState': 'loaded', 'ExecMainStartTimestamp': 'Wed 2026-12-02 10:00:00 UTC'}
    cases = [
        ({'LoadState': 'not-found', 'ActiveState': 'inactive'}, 'unknown'),
        ({'LoadState': 'loaded', 'ActiveState': 'inactive', 'ExecMainStartTimestamp': ''}, 'not started'),
        (dict(started, ActiveState='activating'), 'running'),
        (dict(started, ActiveState='deactivating'), 'stopping'),
        (dict(started, ActiveState='failed', Result='exit-code'), 'failed'),
        (dict(started, ActiveState='inactive', Result='success', ExecMainStatus='0'), 'succeeded'),
        (dict(started, ActiveState='inactive', Result='success', ExecMainStatus='15'), 'stopped'),
        (dict(started, ActiveState='inactive', Result='timeout', ExecMainStatus='0'), 'failed'),
    ]
    for props, state in cases:
        assert monitor.unit_state(props) == state, props
    assert monitor.parse_show('A=1\nB=x=y\nnoise\n') == {'A': '1', 'B': 'x=y'}


def test_the_service_files_are_not_executable_scripts():
    # The unit runs them with the Python it names; nothing in the install folder is executed by itself.
    for folder, _folders, names in os.walk(FILES):
        for name in names:
            assert not os.stat(os.path.join(folder, name)).st_mode & stat.S_IXUSR, name
