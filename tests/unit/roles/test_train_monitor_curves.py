# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The training monitor's curves and GPU tiles: the log's metric index (_train_log.MetricIndex), served
incrementally by /api/history and `history` events, and the GPU watch (its records, idle time, bounded history
file read back after a restart, the run's GPUs from its definition), through the monitor as the role installs it."""

from __future__ import annotations

import ast
import http.client
import json
import os
import shutil
import subprocess
import sys

import pytest

from ansible_collections.specdec.bench.plugins.module_utils import _train_log
from test_train_monitor_server import DEADLINE, Service, read_event  # pylint: disable=import-error
from testhelpers import wait_until  # pylint: disable=import-error

FILES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                     'roles', 'train_monitor', 'files')


@pytest.fixture(name='service')
def monitor_service(tmp_path):
    service = Service(str(tmp_path))
    service.write('Loading\n{"step": 10, "total_steps": 100, "loss": 3.5, "lr": 0.001, "time": 100}\n'
                  '{"step": 20, "total_steps": 100, "loss": 3.1, "lr": 0.0009, "time": 110}\n')
    service.start()
    yield service
    service.stop()


@pytest.fixture(name='monitor_module')
def import_monitor(tmp_path, monkeypatch):
    """The monitor's package (specdec_monitor), from the role's files and the collection's module_utils."""
    monkeypatch.syspath_prepend(FILES)
    monkeypatch.syspath_prepend(os.path.dirname(_train_log.__file__))
    monkeypatch.setattr(sys, 'dont_write_bytecode', True)  # no __pycache__ in the role's files
    for name in [name for name in sys.modules if name.partition('.')[0] == 'specdec_monitor']:
        monkeypatch.delitem(sys.modules, name)  # imported again from FILES, as the service imports it
    import specdec_monitor  # pylint: disable=import-error,import-outside-toplevel
    return specdec_monitor


def history(service, since=0, of=None):
    code, _headers, body = service.request('/api/history?since=%d%s' % (since, '&id=' + of if of else ''))
    assert code == 200
    return json.loads(body)


def answer_if(answer, condition):
    return answer if condition(answer) else None


# --- the index


def test_the_index_has_every_metric_against_its_step():
    index = _train_log.MetricIndex()
    index.feed(b'Epoch 0:  45%|####5     | 45/100 [00:12<00:15,  3.61it/s, loss=2.31]\r'
               b'{"step": 46, "loss": 2.2, "lr": 0.001, "time": 5}\n{"grad_norm": 3, "acc": "NaN"}\nplain\n{"step": 4')
    assert index.points() == {'from': 0, 'next': 4, 'series': {
        'loss': [[45.0, 2.31], [46.0, 2.2]], 'lr': [[46.0, 0.001]], 'grad_norm': [[46.0, 3.0]]}}
    # the cursor: what came after the first n points, at most `limit` of them
    assert index.points(2, 1) == {'from': 2, 'next': 3, 'series': {'lr': [[46.0, 0.001]]}}
    index.feed('7, "loss": 1.5}\n')  # a line cut between two reads
    assert index.points(4) == {'from': 4, 'next': 5, 'series': {'loss': [[47.0, 1.5]]}}
    assert index.points(99)['next'] == 5


def test_the_index_keeps_names_as_text_and_is_bounded():
    index = _train_log.MetricIndex(max_points=3)
    index.feed('{"grad_norm": 1}\n')  # no step seen yet: no point
    index.feed('{"step": 1, "<img src=x onerror=alert(1)>": 2, "\\u001b[31mred": 3, "x": Infinity}\n')
    assert len(index) == 2 and index.names == ['<img src=x onerror=alert(1)>', 'red']
    index.feed('{"step": 2, "a": 1, "b": 2}\n')
    assert len(index) == 3 and index.full


# --- served


def test_history_is_served_incrementally(service):
    first = history(service)
    assert first['from'] == 0 and first['complete'] and first['names'] == ['loss', 'lr']
    assert first['series'] == {'loss': [[10, 3.5], [20, 3.1]], 'lr': [[10, 0.001], [20, 0.0009]]}
    service.write('{"step": 30, "total_steps": 100, "loss": 2.9, "time": 120}\n')
    later = wait_until(lambda: answer_if(history(service, first['next'], first['id']),
                                         lambda answer: answer['next'] > first['next']), 'no new point')
    assert later['from'] == first['next'] and later['series'] == {'loss': [[30, 2.9]]} and later['id'] == first['id']


def test_a_big_log_is_indexed_a_bounded_part_per_request(tmp_path):
    service = Service(str(tmp_path))
    line = '{"step": %d, "total_steps": 999999, "loss": %s, "time": %d}\n'
    service.write(''.join(line % (step, 1.0 + 1.0 / step, step) for step in range(1, 200001)))
    size = os.path.getsize(service.log)
    assert size > 12 * 1024 * 1024
    service.start()
    try:
        cursor, of, answers, indexed = 0, None, 0, 0
        while True:
            answer = history(service, cursor, of)
            assert answer['from'] == cursor and answer['indexed_bytes'] - indexed <= 1024 * 1024
            indexed, cursor, of, answers = answer['indexed_bytes'], answer['next'], answer['id'], answers + 1
            if answer['complete']:
                break
            assert answers < 20
        assert answers >= 12 and cursor == 200000 and indexed == size
        assert answer['series']['loss'][-1] == [200000, 1.0 + 1.0 / 200000]
    finally:
        service.stop()


def test_a_new_log_starts_the_history_over(service):
    first = history(service)
    service.write('{"step": 3, "total_steps": 50, "loss": 9.0}\n', mode='w')
    again = wait_until(lambda: answer_if(history(service, first['next'], first['id']),
                                         lambda answer: answer['id'] != first['id']), 'the new log has the old id')
    assert again['from'] == 0 and again['series'] == {'loss': [[3, 9.0]]}


def test_events_bring_the_points_not_seen_and_resume_where_they_were(service):
    conn = http.client.HTTPConnection('127.0.0.1', service.port, timeout=DEADLINE)
    conn.request('GET', '/api/events')
    response = conn.getresponse()
    event = read_event(response, 'history')
    assert event['from'] == 0 and event['next'] == 4 and event['series']['loss'] == [[10, 3.5], [20, 3.1]]
    service.write('{"step": 30, "total_steps": 100, "loss": 2.9, "time": 120}\n')
    event = read_event(response, 'history')
    assert event['from'] == 4 and event['series'] == {'loss': [[30, 2.9]]}
    conn.close()
    # a browser reconnecting sends back the last event's id: it gets only what came after
    conn = http.client.HTTPConnection('127.0.0.1', service.port, timeout=DEADLINE)
    conn.request('GET', '/api/events', headers={'Last-Event-ID': '%s:%d' % (event['id'], event['next'])})
    response = conn.getresponse()
    service.write('{"step": 40, "total_steps": 100, "loss": 2.7, "time": 130}\n')
    event = read_event(response, 'history')
    while not event['series']:
        event = read_event(response, 'history')
    assert event['from'] == 5 and event['series'] == {'loss': [[40, 2.7]]}
    conn.close()


# --- GPUs


def test_gpu_records_and_idle_time(monitor_module):
    sample = {'t': 100.0, 'uuid': 'GPU-1', 'power_w': 61.234, 'sm_util': 0, 'mem_used_mib': 1024.4, 'temp_c': 40}
    assert monitor_module.gpu_record(sample, '2') == {'t': 100.0, 'gpu': '2', 'util': 0, 'mem': 1024,
                                                      'power': 61.2, 'temp': 40}
    records = [{'t': 1.0, 'util': 0}, {'t': 2.0, 'util': 50}, {'t': 3.0, 'util': 0}, {'t': 4.0, 'util': 0}]
    assert monitor_module.idle_seconds(records, 10.0) == 7.0
    assert monitor_module.idle_seconds(records[:2], 10.0) == 0.0
    assert monitor_module.visible_devices(' 0, GPU-ab ,,3') == ['0', 'GPU-ab', '3']
    assert monitor_module.unit_environment('A=1 "CUDA_VISIBLE_DEVICES=2,3" B="x y"') == {
        'A': '1', 'CUDA_VISIBLE_DEVICES': '2,3', 'B': 'x y'}


def test_gpu_history_is_bounded_and_read_back(monitor_module, tmp_path):
    watch = monitor_module.GpuWatch(str(tmp_path), ['0'], idle_threshold_s=5, history_bytes=4000)
    watch.gpus = [{'index': '0', 'uuid': 'GPU-0', 'name': 'A100', 'mem_total': 40960.0}]
    for second in range(100):  # fewer than the sparkline's samples: 100 (the newest 120 kept)
        watch._add([{'t': 1000.0 + second, 'gpu': '0', 'util': 0 if second >= 90 else 80, 'mem': 100, 'power': 60.0,
                     'temp': 40}])  # pylint: disable=protected-access
    size = os.path.getsize(str(tmp_path / monitor_module.GPU_HISTORY))
    assert 1000 < size <= 4000
    shown = watch.snapshot(now=1100.0)['gpus'][0]
    assert shown['idle'] and shown['idle_seconds'] == 10.0 and shown['mem_total'] == 40960.0
    assert shown['power'] == 60.0 and len(shown['spark']['util']) == 100 <= monitor_module.GPU_SPARK_SAMPLES
    # a restarted monitor shows the samples of before, newest last
    again = monitor_module.GpuWatch(str(tmp_path), ['0'], idle_threshold_s=30)
    again._load_history()  # pylint: disable=protected-access
    shown = again.snapshot(now=1100.0)['gpus'][0]
    assert shown['t'] == 1099.0 and shown['util'] == 0 and not shown['idle'] and shown['idle_seconds'] == 10.0
    assert 10 < len(shown['spark']['t']) and shown['spark']['t'] == sorted(shown['spark']['t'])


def test_the_run_gpus_come_from_its_definition(monitor_module, tmp_path):
    folder = tmp_path / 'specdec-train-x.service'
    folder.mkdir()
    (folder / 'service.json').write_text(json.dumps({'argv': ['true'], 'env': {'CUDA_VISIBLE_DEVICES': 'GPU-a,GPU-b'}}))
    monitor = monitor_module.Monitor(str(tmp_path), 'specdec-train-x.service', 'x', backend='supervisor',
                                     state_dir=str(tmp_path))
    assert monitor.run_devices() == ['GPU-a', 'GPU-b']
    systemctl = tmp_path / 'systemctl'
    systemctl.write_text('#!/bin/sh\necho \'HOME=/root CUDA_VISIBLE_DEVICES=1,2\'\n')
    systemctl.chmod(0o755)
    monitor = monitor_module.Monitor(str(tmp_path), 'specdec-train-x.service', 'x', systemctl=str(systemctl))
    assert monitor.run_devices() == ['1', '2']


def test_the_gpu_sampler_loads_on_a_bare_python(tmp_path):
    """Installed as the role installs it, _telemetry (whose imports name the collection) loads with no collection."""
    from ansible_collections.specdec.bench.plugins.modules import train_monitor_install  # pylint: disable=import-outside-toplevel
    install = tmp_path / 'install'
    install.mkdir()
    shutil.copytree(FILES, install, dirs_exist_ok=True, ignore=shutil.ignore_patterns('__pycache__'))
    for name, source in train_monitor_install.library_sources().items():
        (install / name).write_bytes(source)
    code = ('import specdec_monitor as m; t, e = m.import_telemetry(); print(e or t.BACKENDS); print(t.smi.__name__, t._nvml.__name__); '
            'print([name for name in sys.modules if name.startswith("ansible_collections")])')
    done = subprocess.run([sys.executable, '-I', '-S', '-c', 'import sys; sys.path.insert(0, %r); %s' % (str(install), code)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and 'nvidia-smi' in done.stdout, done.stderr
    # the plain modules beside it, and no stand-in for the collection's package
    assert done.stdout.splitlines()[1:] == ['_nvidia_smi _nvml', '[]'], done.stdout


def test_the_monitor_puts_nothing_in_sys_modules():
    """No module of the monitor writes sys.modules or makes a module object: its imports are plain imports."""
    for folder, _folders, names in os.walk(FILES):
        for name in names:
            if name.endswith('.py'):
                with open(os.path.join(folder, name), encoding='utf-8') as handle:
                    tree = ast.parse(handle.read())
                for node in ast.walk(tree):
                    if isinstance(node, ast.Attribute):
                        assert node.attr not in ('modules', 'ModuleType'), '%s:%d' % (name, node.lineno)
