# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""stage_record: a stage's evidence kept in order (server_info and GPUs while the server runs, then stop, unit file,
journal) and its status written last; /server_info over real HTTP from the SGLang emulator, systemctl and journalctl
faked, the GPU snapshot replaced by a recorder."""

from __future__ import annotations

import json
import os
import re
import stat
import time

import pytest

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.specdec.bench.plugins.module_utils import _service as service
from ansible_collections.specdec.bench.plugins.module_utils._common import RESULTS_LAYOUT
from ansible_collections.specdec.bench.plugins.module_utils._stage import stage_record as _stage_record
from ansible_collections.specdec.bench.plugins.modules import stage_record

UNIT = 'specdec-c-tp1-dflash-n16.service'
FILES = {'status': 'status.json', 'server_info': 'server_info.json', 'gpus': 'gpus.json', 'unit': 'unit.service',
         'journal': 'journal.txt'}
SHOW = 'LoadState=loaded\nActiveState=%s\nSubState=%s\nMainPID=%s\nResult=exit-code\nExecMainStatus=1\nExecMainCode=1\n'


class Host:
    """systemctl, journalctl and the GPU snapshot of a host, recording the order of what happened."""

    def __init__(self, monkeypatch, stop=(0, '', ''), journal=(0, 'a\nb\nc\n', ''), running=True):
        self.events = []
        self.running = running

        def run_command(_module, args, **_kwargs):
            tool, verb = os.path.basename(args[0]), args[1]
            self.events.append('%s %s' % (tool, verb))
            if tool == 'systemctl' and verb == 'show':
                assert args[2:] == ['-p', service.SYSTEMD_PROPERTIES, '--', UNIT]
                return 0, SHOW % (('active', 'running', '4242') if self.running else ('failed', 'failed', '0')), ''
            if tool == 'systemctl':
                assert args[1:] == ['stop', '--', UNIT]
                self.running = stop[0] != 0
                return stop
            assert args[1:] == ['-u', UNIT, '--no-pager', '-n', '50', '-o', 'short-iso']
            return journal

        def gather(_module, backend, topology, tolerance):
            assert (backend, topology, tolerance) == ('auto', False, 256)
            self.events.append('gpus')
            return {'nvidia_gpus': [{'index': 1, 'processes': [{'pid': 7, 'unit': UNIT}]}], 'nvidia_driver': {'version': 'x'}}, {}

        monkeypatch.setattr(AnsibleModule, 'run_command', run_command)
        monkeypatch.setattr(AnsibleModule, 'get_bin_path', lambda _m, arg, required=False, opt_dirs=None: '/usr/bin/' + arg)
        monkeypatch.setattr(_stage_record, 'gather_gpu_facts', gather)


@pytest.fixture(name="stage")
def stage_dirs(tmp_path):
    (tmp_path / 'units').mkdir()
    (tmp_path / 'units' / UNIT).write_text('[Service]\nExecStart=/usr/bin/python3 -m sglang.launch_server\n')
    (tmp_path / 'stage').mkdir()
    return tmp_path


def args(stage, status, **extra):
    values = dict(dir=str(stage / 'stage'), unit=UNIT, unit_dir=str(stage / 'units'), status=status, files=FILES, journal_lines=50)
    values.update(extra)
    return values


def read(stage, name):
    return (stage / 'stage' / name).read_text()


def test_an_ok_stage_keeps_server_info_and_gpus_before_the_stop_and_writes_its_status(run_module, monkeypatch, stage, dflash):
    host = Host(monkeypatch)
    status = {'stage': 'tp1-dflash-n16', 'status': 'ok', 'reason': None, 'started': '2026-12-02T14:00:00Z',
              'headline': [{'concurrency': 1, 'output_throughput': 100.0, 'accept_length': 3.2}]}
    result = run_module(stage_record, args(stage, status, base_url=dflash.base_url))
    assert result['exit_code'] == 0 and result['changed'], result
    assert host.events == ['gpus', 'systemctl show', 'systemctl show', 'systemctl stop', 'systemctl show', 'journalctl -u']
    written = json.loads(read(stage, 'status.json'))
    assert written == result['status'] and written['status'] == 'ok' and written['finished'] >= written['started']
    assert 'evidence' not in written
    assert json.loads(read(stage, 'server_info.json'))['speculative_algorithm'] == 'DFLASH'
    assert json.loads(read(stage, 'gpus.json'))['nvidia_gpus'][0]['processes'][0]['unit'] == UNIT
    assert read(stage, 'unit.service') == (stage / 'units' / UNIT).read_text()
    assert read(stage, 'journal.txt') == 'a\nb\nc\n'
    for name in FILES.values():
        assert stat.S_IMODE(os.stat(str(stage / 'stage' / name)).st_mode) == 0o640
    assert not [name for name in os.listdir(str(stage / 'stage')) if name.startswith('.')]


def test_a_failed_stage_gets_the_unit_state_and_journal_as_evidence(run_module, monkeypatch, stage):
    Host(monkeypatch, journal=(0, 'Traceback\nCUDA out of memory\n', ''), running=False)
    status = {'stage': 's', 'status': 'failed', 'reason': 'the unit died', 'evidence': {'step': 'sglang_ready', 'journal': []}}
    result = run_module(stage_record, args(stage, status, gpu_snapshot=False))
    evidence = json.loads(read(stage, 'status.json'))['evidence']
    assert result['exit_code'] == 0
    assert evidence['unit_state']['state'] == 'failed' and evidence['unit_state']['exit_code'] == 1
    assert evidence['unit_state']['result'] == 'exit-code' and evidence['unit_state']['backend'] == 'systemd'
    assert evidence['step'] == 'sglang_ready' and evidence['journal'] == ['Traceback', 'CUDA out of memory']
    assert not (stage / 'stage' / 'gpus.json').exists() and not (stage / 'stage' / 'server_info.json').exists()


@pytest.mark.parametrize('files', [None, {'journal': 'server.log'}])
def test_file_names_default_to_the_collections_layout(run_module, monkeypatch, stage, files):
    Host(monkeypatch, running=False)
    values = args(stage, {'stage': 's', 'status': 'failed', 'reason': 'the unit died'})
    if files is None:
        del values['files']
    else:
        values['files'] = files
    result = run_module(stage_record, values)
    assert result['exit_code'] == 0, result
    names = {key: RESULTS_LAYOUT[key] for key in ('status', 'gpus', 'unit', 'journal')}
    names.update(files or {})
    assert result['written'] == {key: str(stage / 'stage' / name) for key, name in names.items()}
    assert sorted(os.listdir(str(stage / 'stage'))) == sorted(names.values())


def test_an_ok_stage_whose_server_stopped_answering_is_failed(run_module, monkeypatch, stage):
    Host(monkeypatch)
    status = {'stage': 's', 'status': 'ok', 'reason': None, 'headline': []}
    result = run_module(stage_record, args(stage, status, base_url='http://127.0.0.1:9', gpu_snapshot=False))
    written = json.loads(read(stage, 'status.json'))
    assert written['status'] == 'failed' and '/server_info' in written['reason']
    assert written['evidence']['unit_state']['state'] == 'running'
    assert written['evidence']['unit_state']['after_stop'] == 'failed'
    assert any('server_info' in text for text in result['warning_texts'])


def test_what_cannot_be_kept_is_warned_and_the_status_still_written(run_module, monkeypatch, stage):
    Host(monkeypatch, stop=(5, '', 'Unit not loaded.'), journal=(1, '', 'No journal files were found.'))
    os.unlink(str(stage / 'units' / UNIT))
    status = {'stage': 's', 'status': 'failed', 'reason': 'x'}
    result = run_module(stage_record, args(stage, status, gpu_snapshot=False))
    assert result['exit_code'] == 0 and json.loads(read(stage, 'status.json'))['status'] == 'failed'
    assert len(result['warnings_seen']) == 3
    assert any('Unit not loaded' in text for text in result['warning_texts'])


@pytest.mark.parametrize(('extra', 'text'), [
    (dict(status={'status': 'skipped'}), "status.status must be ok, failed or infeasible, got 'skipped'"),
    (dict(unit=None, base_url='http://127.0.0.1:9'), 'base_url is for a stage whose server ran: it needs unit'),
    (dict(files=dict(FILES, status='../status.json')), 'files must be file names'),
    (dict(mode='rw'), 'mode must be an octal string'),
    (dict(dir='/nonexistent/stage'), 'does not exist'),
])
def test_bad_input_is_refused_before_anything_is_done(run_module, monkeypatch, stage, extra, text):
    host = Host(monkeypatch)
    values = args(stage, {'status': 'ok'})
    values.update(extra)
    result = run_module(stage_record, values)
    assert result['exit_code'] == 1 and text in result['msg']
    assert host.events == [] and os.listdir(str(stage / 'stage')) == []


def test_under_the_supervisor_the_server_is_stopped_and_its_definition_and_log_kept(run_module, monkeypatch, stage):
    """No systemd: the stage's server runs under specdec's supervisor; its definition and log are the evidence."""
    import sys  # pylint: disable=import-outside-toplevel
    monkeypatch.setattr(_stage_record, 'gather_gpu_facts', lambda *a: ({'nvidia_gpus': []}, {}))
    services = stage / 'services'
    definition = {'argv': [sys.executable, '-c', 'import time; print("loading", flush=True); time.sleep(600)']}
    service.write_definition(str(services / UNIT), definition, UNIT)
    assert service.start(None, 'supervisor', UNIT, str(services))[1]['state'] == 'running'
    deadline = time.monotonic() + 15
    while 'loading' not in ''.join(service.log(None, 'supervisor', UNIT, 5, str(services))[0]):
        assert time.monotonic() < deadline, 'the program never started'
        time.sleep(0.02)
    status = {'stage': 's', 'status': 'failed', 'reason': 'never ready'}
    result = run_module(stage_record, args(stage, status, backend='supervisor', state_dir=str(services), stop_timeout=5,
                                           files=dict(FILES, service='service.json'), gpu_snapshot=False))
    assert result['exit_code'] == 0, result
    evidence = json.loads(read(stage, 'status.json'))['evidence']
    assert evidence['unit_state']['state'] == 'running' and evidence['unit_state']['backend'] == 'supervisor'
    assert evidence['unit_state']['after_stop'] == 'failed'  # ended by SIGTERM
    assert service.status(None, 'supervisor', UNIT, str(services))['signal'] == 15
    assert json.loads(read(stage, 'service.json'))['argv'] == definition['argv']
    assert 'loading' in read(stage, 'journal.txt') and 'killed by signal 15' in read(stage, 'journal.txt')
    assert not (stage / 'stage' / 'unit.service').exists()


STAMP = re.compile(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\Z')


def test_an_infeasible_stage_is_recorded_without_a_unit_and_without_times(run_module, monkeypatch, stage):
    """A stage that never runs: only status.json, written by the same writer as a stage that ran."""
    host = Host(monkeypatch)
    status = {'stage': 'tp8-dflash-n16', 'status': 'infeasible', 'reason': 'too few GPUs', 'sglang_build': None, 'headline': []}
    result = run_module(stage_record, dict(dir=str(stage / 'stage'), status=status))
    assert result['exit_code'] == 0 and result['changed'], result
    written = json.loads(read(stage, 'status.json'))
    assert written == result['status'] == dict(status, started=None, finished=None)
    assert result['written'] == {'status': str(stage / 'stage' / 'status.json')} and result['warnings_seen'] == []
    assert host.events == [] and os.listdir(str(stage / 'stage')) == ['status.json']
    assert stat.S_IMODE(os.stat(str(stage / 'stage' / 'status.json')).st_mode) == 0o640
    assert read(stage, 'status.json') == json.dumps(written, indent=4, sort_keys=True) + '\n'


def test_a_stage_that_cannot_run_is_recorded_failed_at_the_time_of_the_record(run_module, monkeypatch, stage):
    host = Host(monkeypatch)
    status = {'stage': 's', 'status': 'failed', 'reason': 'the draft checkpoint could not be copied', 'headline': [],
              'evidence': {'step': None, 'journal': []}}
    result = run_module(stage_record, dict(dir=str(stage / 'stage'), status=status, mode='0600'))
    written = json.loads(read(stage, 'status.json'))
    assert result['exit_code'] == 0 and written == result['status']
    assert STAMP.match(written['started']) and written['started'] == written['finished']
    assert written['evidence'] == {'step': None, 'journal': []} and host.events == []
    assert stat.S_IMODE(os.stat(str(stage / 'stage' / 'status.json')).st_mode) == 0o600


def test_check_mode_reads_stops_and_writes_nothing(run_module, monkeypatch, stage):
    host = Host(monkeypatch)
    status = {'stage': 's', 'status': 'infeasible', 'reason': 'no', 'headline': []}
    result = run_module(stage_record, dict(dir=str(stage / 'missing'), status=status, _ansible_check_mode=True))
    assert result['exit_code'] == 0 and result['changed'] and result['written'] == {}
    assert result['status'] == dict(status, started=None, finished=None)
    result = run_module(stage_record, dict(args(stage, {'stage': 's', 'status': 'ok', 'started': None}), _ansible_check_mode=True))
    assert result['exit_code'] == 0 and STAMP.match(result['status']['finished']) and result['written'] == {}
    assert host.events == [] and os.listdir(str(stage / 'stage')) == []
