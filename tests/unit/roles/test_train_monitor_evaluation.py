# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The training monitor's latest evaluation: the run folder's evaluation.json, which playbooks/evaluate.yml
copies there, served by /api/evaluation (parsed, with what is wrong with it), /evaluation.json (as it is) and
`evaluation` events, through the monitor as the role installs it: missing, valid, invalid, too large, a symlink,
changing, and read again only when it changed."""

from __future__ import annotations

import http.client
import json
import os
import sys

import pytest

from ansible_collections.specdec.bench.plugins.module_utils import _train_log
from test_train_monitor_server import (DEADLINE, SECURITY_HEADERS, Service, bytes_read,  # pylint: disable=import-error
                                       read_event)

FILES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                     'roles', 'train_monitor', 'files')
LIMIT = 1024 * 1024
HOSTILE = '<img src=x onerror=window.__pwned=4>'
# The shape of the contract (the report's evaluation.json), with a name that is markup: it stays data.
SUMMARY = {
    'campaign': 'dflash-sweep',
    'generated': '2026-12-03T21:00:00Z',
    'run': 'dflash-demo',
    'best': {'host': 'h200box', 'tp': 1, 'method': 'dflash', 'setting': 'n16', 'step': 800, 'name': HOSTILE,
             'speedup': 2.31, 'speedup_ci_low': 2.2, 'speedup_ci_high': 2.4, 'tau': 3.9, 'dataset': 'overall'},
    'checkpoints': [
        {'step': 400, 'name': 'checkpoint-400', 'host': 'h200box', 'tp': 1, 'method': 'dflash', 'setting': 'n16',
         'datasets': {'gsm8k': {'tau': 3.1, 'tau_ci_low': 3.0, 'tau_ci_high': 3.2, 'speedup': 1.9, 'speedup_ci_low': 1.8,
                                'speedup_ci_high': 2.0, 'concurrency': 1, 'temperature': 0.0}},
         'overall_speedup': 1.9},
        {'step': 800, 'name': HOSTILE, 'host': 'h200box', 'tp': 1, 'method': 'dflash', 'setting': 'n16',
         'datasets': {'gsm8k': {'tau': 3.9, 'tau_ci_low': 3.8, 'tau_ci_high': 4.0, 'speedup': 2.31, 'speedup_ci_low': 2.2,
                                'speedup_ci_high': 2.4, 'concurrency': 1, 'temperature': 0.0}},
         'overall_speedup': 2.31},
    ],
    'report': 'report.md',
}
ABSENT = {'present': False, 'error': None, 'summary': None, 'mtime': None, 'bytes': None}


@pytest.fixture(name='service')
def monitor_service(tmp_path):
    service = Service(str(tmp_path))
    service.write('{"step": 10, "total_steps": 100, "loss": 3.5, "time": 100}\n')
    service.start()
    yield service
    service.stop()


@pytest.fixture(name='monitor_module')
def import_monitor(monkeypatch):
    """The monitor's package (specdec_monitor), from the role's files and the collection's module_utils."""
    monkeypatch.syspath_prepend(FILES)
    monkeypatch.syspath_prepend(os.path.dirname(_train_log.__file__))
    monkeypatch.setattr(sys, 'dont_write_bytecode', True)
    for name in [name for name in sys.modules if name.partition('.')[0] == 'specdec_monitor']:
        monkeypatch.delitem(sys.modules, name)  # imported again from FILES, as the service imports it
    import specdec_monitor  # pylint: disable=import-error,import-outside-toplevel
    return specdec_monitor


def path_of(service):
    return os.path.join(service.run_dir, 'evaluation.json')


def write(service, data, atomic=True):
    """The evaluation file as evaluate.yml leaves it (written aside, then renamed over it), or rewritten in place."""
    data = data if isinstance(data, bytes) else json.dumps(data).encode('utf-8')
    target = path_of(service)
    part = target + '.part' if atomic else target
    with open(part, 'wb') as handle:
        handle.write(data)
    if atomic:
        os.replace(part, target)
    return data


def strict_json(body):
    """JSON as a browser's JSON.parse reads it: NaN or Infinity would make the whole answer fail."""
    def refuse(name):
        raise AssertionError('%s in an answer: JSON.parse refuses it' % name)
    return json.loads(body, parse_constant=refuse)


def evaluation(service):
    code, headers, body = service.request('/api/evaluation')
    assert code == 200 and headers['Content-Type'] == 'application/json'
    return strict_json(body)


def test_no_evaluation_yet(service):
    assert evaluation(service) == ABSENT
    code, headers, body = service.request('/evaluation.json')
    assert code == 404 and body == b'no evaluation yet (playbooks/evaluate.yml writes one)\n'
    assert all(key in headers for key in SECURITY_HEADERS)


def test_a_valid_evaluation_is_served_parsed_and_as_it_is(service):
    data = write(service, SUMMARY)
    answer = evaluation(service)
    assert answer == {'present': True, 'error': None, 'summary': SUMMARY, 'mtime': os.path.getmtime(path_of(service)),
                      'bytes': len(data)}
    code, headers, body = service.request('/evaluation.json')
    assert code == 200 and body == data
    assert headers['Content-Type'] == 'application/json' and headers['X-Content-Type-Options'] == 'nosniff'
    assert headers['Content-Security-Policy'].startswith("default-src 'none'")
    code, headers, body = service.request('/evaluation.json', method='HEAD')
    assert code == 200 and body == b'' and headers['Content-Length'] == str(len(data))
    # read-only, as every path
    code, headers, _body = service.request('/evaluation.json', method='PUT')
    assert code == 405 and headers['Allow'] == 'GET, HEAD'


@pytest.mark.parametrize(('data', 'error'), [
    (b'{"campaign": "dflash-sweep", "best": {', 'evaluation.json is not valid JSON: Expecting property name'),
    (b'', 'evaluation.json is not valid JSON: Expecting value: line 1 column 1'),
    (b'\xff\xfe{}', 'evaluation.json is not UTF-8 text'),
    (b'[' * 200000, 'evaluation.json is not valid JSON: nested too deeply'),
    (b'[{"campaign": "x"}]', 'evaluation.json holds a list, expected an object with campaign, generated, run, best, '
                             'checkpoints, report'),
    (b'"text"', 'evaluation.json holds a string, expected an object'),
    (b'{"checkpoints": {"step": 400}}', 'evaluation.json: checkpoints is an object, expected a list of objects or null'),
    (b'{"best": "checkpoint-400"}', 'evaluation.json: best is a string, expected an object or null'),
    (b'{"campaign": 7}', 'evaluation.json: campaign is a number, expected a string or null'),
    (b'{"checkpoints": [{"step": 400}, 800]}', 'evaluation.json: checkpoints[1] is a number, expected an object'),
])
def test_a_bad_file_is_an_error_string_not_a_crash(service, data, error):
    write(service, data)
    answer = evaluation(service)
    assert answer['present'] is True and answer['summary'] is None and answer['bytes'] == len(data)
    assert answer['error'].startswith(error), answer['error']
    # the link still gives the file as it is (the page shows what is wrong with it)
    code, _headers, body = service.request('/evaluation.json')
    assert code == 200 and body == data
    assert service.status()['run'] == 'dflash-test'


def test_nan_and_infinity_become_null(service):
    # Python's json writes them; the page's JSON.parse would refuse the whole answer
    write(service, b'{"campaign": "c", "best": {"speedup": NaN, "tau": Infinity, "speedup_ci_low": -Infinity}}')
    answer = evaluation(service)
    assert answer['error'] is None
    assert answer['summary'] == {'campaign': 'c', 'best': {'speedup': None, 'tau': None, 'speedup_ci_low': None}}


def test_a_file_too_large_is_not_read(service):
    data = json.dumps(dict(SUMMARY, padding='x' * LIMIT)).encode('ascii')
    write(service, data)
    before = bytes_read(service.process.pid)
    answer = evaluation(service)
    assert bytes_read(service.process.pid) - before < 64 * 1024
    assert answer['present'] is True and answer['summary'] is None and answer['bytes'] == len(data)
    assert answer['error'] == 'evaluation.json is %d bytes, more than the %d the monitor reads' % (len(data), LIMIT)
    code, _headers, body = service.request('/evaluation.json')
    assert code == 404 and body.decode().strip() == answer['error']
    # at the limit exactly, it is read
    data = write(service, json.dumps(SUMMARY).encode('ascii').ljust(LIMIT))
    answer = evaluation(service)
    assert answer['error'] is None and answer['summary'] == SUMMARY and answer['bytes'] == LIMIT == len(data)


def test_a_symlink_is_not_followed(service):
    os.symlink('/etc/passwd', path_of(service))
    answer = evaluation(service)
    assert answer == dict(ABSENT, error='evaluation.json is a symlink: not read')
    code, _headers, body = service.request('/evaluation.json')
    assert code == 404 and b'root:' not in body


def test_a_folder_is_not_read(service):
    os.mkdir(path_of(service))
    assert evaluation(service) == dict(ABSENT, error='evaluation.json is not a regular file: not read')


def test_a_changing_file_is_read_again(service):
    write(service, SUMMARY)
    assert evaluation(service)['summary']['best']['step'] == 800
    # replaced, as evaluate.yml's copy does it (a new inode)
    later = dict(SUMMARY, best=dict(SUMMARY['best'], step=1200, name='checkpoint-1200'))
    write(service, later)
    assert evaluation(service)['summary']['best']['name'] == 'checkpoint-1200'
    # rewritten in place with the same size: its mtime tells
    again = dict(later, best=dict(later['best'], name='checkpoint-1300'))
    stamp = os.stat(path_of(service)).st_mtime_ns
    write(service, again, atomic=False)
    os.utime(path_of(service), ns=(stamp + 10 ** 9, stamp + 10 ** 9))
    answer = evaluation(service)
    assert answer['summary']['best']['name'] == 'checkpoint-1300' and answer['mtime'] == pytest.approx(stamp / 1e9 + 1)
    # a bad write, then a good one again
    write(service, b'{"best": ')
    assert evaluation(service)['error'].startswith('evaluation.json is not valid JSON')
    write(service, SUMMARY)
    assert evaluation(service)['summary'] == SUMMARY
    os.remove(path_of(service))
    assert evaluation(service) == ABSENT


def test_an_unchanged_file_is_not_read_again(service):
    data = json.dumps(dict(SUMMARY, padding='x' * 600000)).encode('ascii')
    write(service, data)
    before = bytes_read(service.process.pid)
    assert evaluation(service)['error'] is None
    assert bytes_read(service.process.pid) - before >= len(data)
    before = bytes_read(service.process.pid)
    for _request in range(5):
        assert evaluation(service)['summary']['padding'] == 'x' * 600000
    # five answers from the cache: the requests' own bytes, not the file's 600 kB
    assert bytes_read(service.process.pid) - before < 64 * 1024
    stamp = os.stat(path_of(service)).st_mtime_ns + 10 ** 9
    os.utime(path_of(service), ns=(stamp, stamp))
    before = bytes_read(service.process.pid)
    assert evaluation(service)['mtime'] == pytest.approx(stamp / 1e9)
    assert bytes_read(service.process.pid) - before >= len(data)


def test_events_push_the_evaluation_when_it_changes(service):
    conn = http.client.HTTPConnection('127.0.0.1', service.port, timeout=DEADLINE)
    conn.request('GET', '/api/events')
    response = conn.getresponse()
    try:
        # the stream starts with the evaluation as it is
        assert read_event(response, 'evaluation') == ABSENT
        write(service, SUMMARY)
        event = read_event(response, 'evaluation')
        assert event['present'] and event['summary'] == SUMMARY and event['error'] is None
        write(service, b'[]')
        assert read_event(response, 'evaluation')['error'].startswith('evaluation.json holds a list')
        os.remove(path_of(service))
        assert read_event(response, 'evaluation') == ABSENT
    finally:
        conn.close()


def test_the_cache_counts_reads_and_versions(tmp_path, monitor_module):
    """One read per change, whatever the number of checks; the version moves only when the answer does."""
    watched = monitor_module.Evaluation(str(tmp_path))
    answer, raw, version = watched.read()
    assert answer == ABSENT and raw is None and watched.reads == 0
    (tmp_path / 'evaluation.json').write_text(json.dumps(SUMMARY), encoding='utf-8')
    answer, raw, changed = watched.read()
    assert answer['summary'] == SUMMARY and json.loads(raw) == SUMMARY and changed == version + 1
    for _check in range(3):
        assert watched.read()[2] == changed
    assert watched.reads == 1


def test_parse_evaluation_keeps_hostile_text_as_data(monitor_module):
    summary, error = monitor_module.parse_evaluation(json.dumps(SUMMARY).encode('utf-8'))
    assert error is None and summary['best']['name'] == HOSTILE and summary['checkpoints'][1]['name'] == HOSTILE
    assert monitor_module.parse_evaluation(b'{}') == ({}, None)
    assert monitor_module.parse_evaluation(b'{"best": null, "checkpoints": null}') == ({'best': None, 'checkpoints': None}, None)


def test_the_page_has_the_panel_and_its_link(service):
    code, _headers, page = service.request('/')
    assert code == 200
    assert b'Latest evaluation' in page and b'No evaluation yet (playbooks/evaluate.yml writes one)' in page
    assert b'<a id="evaluation-link" href="evaluation.json">evaluation.json</a>' in page
    script = service.request('/static/monitor.js')[2]
    assert b"addEventListener('evaluation'" in script and b"fetch('api/evaluation'" in script
