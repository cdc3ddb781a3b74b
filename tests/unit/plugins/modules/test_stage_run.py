# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""stage_run: a whole stage in one call. The SGLang emulator runs as a real server under specdec's supervisor (no
systemd: neither systemctl nor journalctl exists for these tests), the builtin harness sends real requests, the GPU
snapshot is replaced by a recorder. Every wait has a deadline; nothing is timed by sleeping."""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.specdec.bench.plugins.module_utils import _service as service
from ansible_collections.specdec.bench.plugins.module_utils._stage import stage_run as _stage_run
from ansible_collections.specdec.bench.plugins.module_utils._stage import stage_attempt as _stage_attempt
from ansible_collections.specdec.bench.plugins.module_utils._stage import stage_record as _stage_record
from ansible_collections.specdec.bench.plugins.module_utils import _supervisor as supervisor
from ansible_collections.specdec.bench.plugins.module_utils._stage.errors import StageError
from ansible_collections.specdec.bench.plugins.modules import stage_run

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import DEAD_PROXY, DFLASH_ARGS, EMULATOR, LAYOUT, OPTIONS_DIR, free_port  # noqa: E402  pylint: disable=wrong-import-position

UNIT = 'specdec-c-tp1-dflash-n16.service'
STAGE = 'tp1-dflash-n16'
BASE = {'stage': STAGE, 'sglang_build': {'profile': 'sglang-ddtree-pr29907'}, 'datasets': [], 'repeats': 1,
        'ran_beside': ['tp1-autoregressive'], 'wave': 1, 'interference_of': None}
# status.json of an ok stage as the bench_stage role's tasks wrote it (plus the wave keys of the base)
OK_KEYS = {'stage', 'status', 'reason', 'started', 'finished', 'sglang_build', 'datasets', 'repeats', 'headline', 'timings',
           'ran_beside', 'wave', 'interference_of'}
FAILED_KEYS = OK_KEYS - {'timings'} | {'evidence'}
LEASE_REASON = re.compile(r'no controller polled this stage for \d+ s \(the campaign was interrupted\): stopped\Z')


class Stage:
    """A stage folder, its service defined under the supervisor (the emulator on a free port), and the call's options."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.dir = tmp_path / 'results' / STAGE
        self.dir.mkdir(parents=True)
        self.services = tmp_path / 'services'
        self.port = free_port()

    def define(self, fault='', load_seconds='0.3', time_scale='0.02'):
        definition = {
            'argv': [sys.executable, '-m', 'sglang.launch_server', '--model-path', 'Qwen/Qwen3.6-27B', '--host', '127.0.0.1',
                     '--port', str(self.port)] + list(DFLASH_ARGS),
            'env': {'PYTHONPATH': EMULATOR, 'SIM_GPU_STATE_DIR': str(self.tmp / 'gpu'), 'SIM_GPU_LAYOUT': LAYOUT,
                    'SIM_SGLANG_LOAD_SECONDS': load_seconds, 'SIM_SGLANG_TIME_SCALE': time_scale, 'SIM_SGLANG_CHECK_MEMORY': '0',
                    'SIM_SGLANG_OPTIONS_DIR': OPTIONS_DIR, 'SIM_SGLANG_BUILD': 'sglang-ddtree-pr29907', 'SIM_SGLANG_FAULT': fault,
                    'CUDA_VISIBLE_DEVICES': '1'},
            'cwd': str(self.tmp)}
        service.write_definition(str(self.services / UNIT), definition, UNIT)
        return self

    def run(self, concurrency, **extra):
        values = dict(harness='builtin', concurrency=concurrency, num_prompts=4, input_len=16, output_len=12, seed=5,
                      warmup_requests=1, request_timeout=10, telemetry='off')
        values.update(extra)
        return values

    def args(self, runs, **extra):
        values = dict(dir=str(self.dir), unit=UNIT, backend='supervisor', state_dir=str(self.services), stop_timeout=5,
                      port=self.port, ready_timeout=30, journal_lines=50, runs=runs, status=dict(BASE))
        values.update(extra)
        return values

    def state(self):
        return service.status(None, 'supervisor', UNIT, str(self.services))

    def read(self, name):
        with open(str(self.dir / name), encoding='utf-8') as handle:
            return json.load(handle) if name.endswith('.json') else handle.read()


@pytest.fixture(name='stage')
def stage_fixture(tmp_path, monkeypatch):
    """A host without systemd (no systemctl, no journalctl, no other command), proxies pointing nowhere, the GPU
    snapshot recorded, every phase written to the progress file recorded; the server is never left running."""
    for name in ('HTTP_PROXY', 'http_proxy', 'HTTPS_PROXY', 'https_proxy'):
        monkeypatch.setenv(name, DEAD_PROXY)
    for name in ('NO_PROXY', 'no_proxy'):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(AnsibleModule, 'get_bin_path', lambda _m, arg, required=False, opt_dirs=None: None)

    def run_command(_module, args, **_kwargs):
        raise AssertionError('no command runs on this host: %r' % (args,))
    monkeypatch.setattr(AnsibleModule, 'run_command', run_command)
    stage = Stage(tmp_path)
    stage.snapshots = []

    def gather(*_args):
        stage.snapshots.append(stage.state()['state'])
        return {'nvidia_gpus': [{'index': 1}], 'nvidia_driver': None}, {}
    monkeypatch.setattr(_stage_record, 'gather_gpu_facts', gather)
    stage.phases = []
    write = _stage_run.atomic_write

    def recording_write(path, data, mode=0o644, **kwargs):
        if path.endswith('progress.json'):
            phase = json.loads(data)['phase']
            if not stage.phases or stage.phases[-1] != phase:
                stage.phases.append(phase)
        return write(path, data, mode, **kwargs)
    monkeypatch.setattr(_stage_run, 'atomic_write', recording_write)
    yield stage
    run = supervisor.read_json(str(stage.services / UNIT / 'run.json'))
    if run and supervisor.alive(run):
        supervisor.signal_group(run, signal.SIGKILL)


def test_a_good_stage_is_recorded_ok_with_the_roles_status_and_its_progress(run_module, stage):
    stage.define()
    result = run_module(stage_run, stage.args([stage.run(1), stage.run(2, repeats=2)]))
    assert result['exit_code'] == 0, result
    assert result['changed'] is True
    status = stage.read('status.json')
    assert status == result['status'] and set(status) == OK_KEYS
    assert status['status'] == 'ok' and status['reason'] is None and status['ran_beside'] == ['tp1-autoregressive']
    assert [(row['dataset'], row['concurrency'], row['repeats']) for row in status['headline']] == [('random', 1, 1), ('random', 2, 2)]
    assert all(set(row) <= set(_stage_run.HEADLINE_KEYS) and row['output_throughput'] > 0 for row in status['headline'])
    timings = status['timings']
    assert set(timings) == {'ready_s', 'harness_s', 'warmup_s', 'measure_s', 'idle_s'}
    assert timings['ready_s'] == result['ready']['ready_seconds'] > 0
    assert timings['harness_s'] == round(sum(run['elapsed_s'] for run in result['runs']), 4)
    assert 0 < timings['measure_s'] <= timings['harness_s'] and timings['warmup_s'] is not None
    assert all(isinstance(value, float) for value in timings.values()), timings  # as the role's sums were
    # the record's evidence: taken while the server ran, then it was stopped
    assert stage.snapshots == ['running'] and stage.state()['state'] != 'running'
    assert stage.read('server_info.json') and stage.read('service.json')['name'] == UNIT
    assert '%s exited with status 0' % UNIT in stage.read('journal.txt')  # the emulator ends cleanly on SIGTERM
    assert os.path.exists(str(stage.dir / 'result-random-t0-c2-r2.json'))
    progress = stage.read('progress.json')
    assert stage.phases == ['starting', 'loading', 'running', 'recording', 'done']
    assert progress['status'] == 'ok' and progress['runs_done'] == progress['runs_total'] == 2
    assert [(run['label'], run['failed']) for run in progress['runs']] == [('random t0 c1', False), ('random t0 c2', False)]
    assert progress['ready_s'] == timings['ready_s'] and progress['runs'][1]['repeats'] == 2
    assert result['progress_file'] == str(stage.dir / 'progress.json')


def test_a_server_that_exits_at_start_fails_at_the_readiness_step_with_its_journal(run_module, stage):
    stage.define(fault='fail_start')
    before = time.monotonic()
    result = run_module(stage_run, stage.args([stage.run(1)]))
    assert result['exit_code'] == 0 and time.monotonic() - before < 20
    status = stage.read('status.json')
    assert set(status) == FAILED_KEYS and status['status'] == 'failed' and status['headline'] == []
    assert status['evidence']['step'] == _stage_run.STEP_READY == 'sglang_ready'
    assert 'before it was ready' in status['reason'] and '%s is failed (exit status 1' % UNIT in status['reason']
    assert any('out of memory' in line.lower() for line in status['evidence']['journal']), status['evidence']
    assert status['evidence']['unit_state']['state'] == 'failed'
    assert result['runs'] == [] and result['ready'] is None
    assert stage.read('progress.json')['status'] == 'failed' and stage.phases[-1] == 'done'
    # the record's warnings (no /server_info from a dead server) reach the module's result
    assert any('server_info' in text for text in result['warning_texts']), result['warning_texts']


def test_a_harness_failure_fails_at_the_harness_step_runs_the_rest_and_stops_the_server(run_module, stage):
    stage.define()
    missing = str(stage.tmp / 'no-such-prompts.jsonl')
    result = run_module(stage_run, stage.args([stage.run(1, prompts_file=missing, max_new_tokens=8), stage.run(2)]))
    assert result['exit_code'] == 0, result
    status = stage.read('status.json')
    assert status['status'] == 'failed' and status['evidence']['step'] == _stage_run.STEP_RUNS
    assert status['reason'].startswith('random t0 c1: cannot read the prompts file') and missing in status['reason']
    assert [run.get('failed', False) for run in result['runs']] == [True, False]  # every run ran, as the role's loop
    assert status['evidence']['unit_state']['state'] == 'running' and stage.state()['state'] != 'running'
    progress = stage.read('progress.json')
    assert progress['runs_done'] == 2 and [run['failed'] for run in progress['runs']] == [True, False]


def test_an_earlier_attempts_files_move_to_attempt_1(run_module, stage):
    stage.define()
    (stage.dir / 'status.json').write_text('{"stage": "%s", "status": "failed"}\n' % STAGE)
    (stage.dir / 'progress.json').write_text('{"phase": "done"}\n')
    (stage.dir / 'result-random-t0-c1-r1.json').write_text('{}\n')
    result = run_module(stage_run, stage.args([stage.run(1)], keep=['result-*-r*.json']))
    assert result['exit_code'] == 0 and result['status']['status'] == 'ok', result
    assert result['attempt']['attempt'] == str(stage.dir / 'attempt-1')
    earlier = stage.dir / 'attempt-1'
    assert json.loads((earlier / 'status.json').read_text())['status'] == 'failed'
    assert json.loads((earlier / 'progress.json').read_text()) == {'phase': 'done'}
    assert (earlier / 'result-random-t0-c1-r1.json').read_text() == '{}\n'
    assert stage.read('status.json')['status'] == 'ok' and stage.read('progress.json')['phase'] == 'done'


def test_a_lease_gone_stale_while_the_server_loads_stops_the_stage(run_module, stage, monkeypatch):
    stage.define(load_seconds='60')
    monkeypatch.setattr(_stage_run, 'TICK_S', 0.05)
    lease = stage.tmp / 'lease'
    lease.write_text('')
    before = time.monotonic()
    result = run_module(stage_run, stage.args([stage.run(1)], lease_file=str(lease), lease_timeout=1.0))
    assert result['exit_code'] == 0 and time.monotonic() - before < 20
    status = stage.read('status.json')
    assert status['status'] == 'failed' and LEASE_REASON.match(status['reason']), status['reason']
    assert status['evidence']['step'] == _stage_run.STEP_READY
    assert status['evidence']['unit_state']['state'] == 'running' and stage.state()['state'] != 'running'
    assert stage.read('progress.json')['phase'] == 'done' and 'loading' in stage.phases


def test_a_lease_stamped_ahead_of_the_clock_still_runs_out(run_module, stage, monkeypatch):
    """The host's clock stepped back after the last renewal (the lease file's mtime is a day ahead): a lease that
    compared mtime with the wall clock never ran out; on the stage's monotonic clock it does."""
    stage.define(load_seconds='60')
    monkeypatch.setattr(_stage_run, 'TICK_S', 0.05)
    lease = stage.tmp / 'lease'
    lease.write_text('')
    ahead = time.time() + 86400
    os.utime(str(lease), (ahead, ahead))
    before = time.monotonic()
    result = run_module(stage_run, stage.args([stage.run(1)], lease_file=str(lease), lease_timeout=1.0))
    assert result['exit_code'] == 0 and time.monotonic() - before < 20
    status = stage.read('status.json')
    assert status['status'] == 'failed' and LEASE_REASON.match(status['reason']), status['reason']
    assert stage.state()['state'] != 'running'


def test_a_lease_file_that_is_a_link_is_refused_before_anything_starts(run_module, stage, tmp_path):
    stage.define()
    target = tmp_path / 'elsewhere'
    target.write_text('x')
    os.utime(str(target), (1, 1))
    lease = stage.tmp / 'stages' / 'x.lease'
    lease.parent.mkdir()
    lease.symlink_to(target)
    result = run_module(stage_run, stage.args([stage.run(1)], lease_file=str(lease), lease_timeout=30))
    assert result['exit_code'] == 1 and 'is a symbolic link; refused' in result['msg']
    assert os.stat(str(target)).st_mtime == 1 and stage.state()['state'] != 'running'
    assert not (stage.dir / 'status.json').exists()


def test_a_stage_run_killed_while_its_controller_is_gone_leaves_no_server_running(stage):
    """stage_run itself dies (SIGKILL, the OOM killer) mid-run: its lease watch dies with it, and before the server's
    guard nothing stopped the server. Run as a real process, killed for real; the watchdog stops the server."""
    stage.define(time_scale='1')
    args = stage.args([stage.run(1, output_len=600, request_timeout=120)], lease_file=str(stage.tmp / 'stages' / 'x.lease'),
                      lease_timeout=0)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path for path in sys.path if path))
    code = 'from ansible_collections.specdec.bench.plugins.modules import stage_run; stage_run.main()'
    proc = subprocess.Popen([sys.executable, '-c', code], stdin=subprocess.PIPE,  # pylint: disable=consider-using-with
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, text=True)
    proc.stdin.write(json.dumps({'ANSIBLE_MODULE_ARGS': args}))
    proc.stdin.close()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (stage.dir / 'progress.json').exists() or stage.read('progress.json')['phase'] != 'running':
            assert time.monotonic() < deadline and proc.poll() is None, 'the stage never reached its harness run'
            time.sleep(0.1)
        assert stage.state()['state'] == 'running'
    finally:
        proc.kill()
        proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while stage.state()['state'] == 'running' and time.monotonic() < deadline:
        time.sleep(0.1)
    assert stage.state()['state'] != 'running'


def test_a_lease_gone_stale_while_a_run_measures_stops_the_server_at_once(run_module, stage, monkeypatch):
    """The controller went away in the middle of a long harness run: the stage does not measure on for nobody."""
    stage.define(time_scale='1')
    monkeypatch.setattr(_stage_run, 'WATCH_S', 0.1)
    lease = stage.tmp / 'stages' / 'lease'
    before = time.monotonic()
    # four prompts of 600 tokens at the modelled speed: far longer than the test waits
    result = run_module(stage_run, stage.args([stage.run(1, output_len=600, request_timeout=120)], lease_file=str(lease),
                                              lease_timeout=2.0))
    assert result['exit_code'] == 0 and time.monotonic() - before < 20
    status = stage.read('status.json')
    assert status['status'] == 'failed' and LEASE_REASON.match(status['reason']), status['reason']
    assert status['evidence']['step'] == _stage_run.STEP_RUNS and stage.state()['state'] != 'running'
    # the lease's folder was made; its lock is released (a rerun of the stage may start at once)
    assert lease.parent.is_dir()
    with open(str(lease) + '.lock', 'a+', encoding='utf-8') as handle:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_a_stage_still_held_by_an_earlier_run_is_waited_for_then_refused_naming_it(tmp_path):
    path = str(tmp_path / 'x.lease.lock')
    held = _stage_run.hold_stage_lock(path, 0)
    now = [0.0]

    def sleep(seconds):
        now[0] += seconds

    with pytest.raises(RuntimeError, match=r'another run of this stage \(pid %d\) still holds .* after 5 s' % os.getpid()):
        _stage_run.hold_stage_lock(path, 5, clock=lambda: now[0], sleep=sleep)
    assert now[0] >= 5
    held.close()
    again = _stage_run.hold_stage_lock(path, 5, clock=lambda: now[0], sleep=sleep)
    assert again is not None
    again.close()
    assert _stage_run.hold_stage_lock(str(tmp_path / 'missing' / 'x.lock'), 1) is None


def test_a_lease_an_earlier_run_left_is_renewed_at_the_start(run_module, stage):
    """A killed campaign's stage left its lease file behind, long stale: a rerun's stage starts its own lease."""
    stage.define()
    lease = stage.tmp / 'lease'
    lease.write_text('')
    os.utime(str(lease), (time.time() - 100, time.time() - 100))
    result = run_module(stage_run, stage.args([stage.run(1)], lease_file=str(lease), lease_timeout=30))
    assert result['exit_code'] == 0 and result['status']['status'] == 'ok', result['status']
    assert time.time() - os.stat(str(lease)).st_mtime < 60


def test_a_lease_that_runs_out_before_the_first_step_starts_nothing_and_is_recorded(run_module, stage, monkeypatch):
    stage.define()
    lease = stage.tmp / 'lease'
    # the controller's poll never comes: the lease is older than its timeout by the first check
    monkeypatch.setattr(_stage_run.Lease, 'age', lambda self: 100.0)
    result = run_module(stage_run, stage.args([stage.run(1)], lease_file=str(lease), lease_timeout=30))
    assert result['exit_code'] == 0
    assert result['status']['status'] == 'failed' and LEASE_REASON.match(result['status']['reason'])
    assert result['status']['reason'].startswith('no controller polled this stage for 100')
    assert result['status']['evidence']['step'] == _stage_run.STEP_ATTEMPT and result['attempt'] is None
    assert stage.state()['state'] == 'inactive' and stage.read('status.json') == result['status']


def test_a_missing_lease_file_is_fresh_at_the_start(run_module, stage):
    stage.define()
    result = run_module(stage_run, stage.args([stage.run(1)], lease_file=str(stage.tmp / 'no-lease'), lease_timeout=30))
    assert result['exit_code'] == 0 and result['status']['status'] == 'ok', result['status']


def test_check_mode_starts_nothing(run_module, stage):
    stage.define()
    result = run_module(stage_run, dict(stage.args([stage.run(1)]), _ansible_check_mode=True))
    assert result['exit_code'] == 0 and result['skipped'] is True and result['changed'] is False
    assert os.listdir(str(stage.dir)) == [] and stage.state()['state'] == 'inactive'


def test_an_invalid_run_fails_before_anything_starts(run_module, stage):
    stage.define()
    result = run_module(stage_run, stage.args([stage.run(1), stage.run(2, concurency=4)]))
    assert result['exit_code'] == 1 and 'runs[1]' in result['msg'] and 'unsupported parameter concurency' in result['msg']
    assert os.listdir(str(stage.dir)) == [] and stage.state()['state'] == 'inactive'


def test_a_step_raises_nothing_out_of_the_module_and_records_the_failure(run_module, stage, monkeypatch):
    stage.define()

    def broken(*_args, **_kwargs):
        raise ZeroDivisionError('division by zero')
    monkeypatch.setattr(_stage_attempt, 'rotate', broken)
    result = run_module(stage_run, stage.args([stage.run(1)]))
    assert result['exit_code'] == 0
    status = stage.read('status.json')
    assert status['reason'] == 'ZeroDivisionError: division by zero' and status['evidence']['step'] == _stage_run.STEP_ATTEMPT
    assert 'ZeroDivisionError: division by zero' in status['evidence']['traceback'][-1]
    assert stage.state()['state'] == 'inactive'


def test_a_step_is_called_with_validated_options_and_its_stage_error_is_the_stages_failure(stage):
    seen = {}

    def engine(params):
        seen.update(params)
        raise StageError('no', {'journal': ['last line'], 'rc': 3})

    with pytest.raises(StageError) as failure:
        _stage_run.step(engine, _stage_attempt.ARGUMENT_SPEC, {'dir': str(stage.dir)}, _stage_run.STEP_ATTEMPT)
    assert failure.value.reason == 'no' and failure.value.evidence == {'step': _stage_run.STEP_ATTEMPT, 'journal': ['last line']}
    assert seen == {'dir': str(stage.dir), 'mode': '0750', 'keep': []}
    assert _stage_run.step(lambda params: {'ok': params['dir']}, _stage_attempt.ARGUMENT_SPEC, {'dir': '/x'}, 'x') == {'ok': '/x'}
    with pytest.raises(ValueError, match=r'invalid options: .*dir'):
        _stage_run.step(engine, _stage_attempt.ARGUMENT_SPEC, {'keep': []}, 'x')
    with pytest.raises(ValueError, match='unsupported parameter bogus'):
        _stage_run.step(engine, _stage_attempt.ARGUMENT_SPEC, {'dir': '/x', 'bogus': 1}, 'x')
