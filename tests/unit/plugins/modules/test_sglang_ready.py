# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""sglang_ready against the SGLang emulator over real HTTP on 127.0.0.1; systemctl and journalctl are faked."""

from __future__ import annotations

import os
import socket
import sys
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.specdec.bench.plugins.module_utils import _service as service
from ansible_collections.specdec.bench.plugins.plugin_utils import sglang_build
from ansible_collections.specdec.bench.plugins.modules import sglang_ready

UNIT = 'sglang-stage-tp1-dflash.service'
SHOW = 'LoadState=loaded\nActiveState=%s\nSubState=%s\nMainPID=%s\nResult=%s\nExecMainStatus=%s\nExecMainCode=1\n'


class Host:
    """systemctl and journalctl of a host: the unit's state comes from a callable, journalctl may be missing or fail."""

    def __init__(self, monkeypatch, state=lambda: ('active', 'running', '4242', 'success', '0'), journal=(0, 'line one\nline two\n', ''),
                 binaries=('systemctl', 'journalctl')):
        self.state = state
        self.journal = journal
        self.commands = []

        def get_bin_path(_module, arg, required=False, opt_dirs=None):  # pylint: disable=unused-argument
            return '/usr/bin/%s' % arg if arg in binaries else None

        def run_command(module, args, **_kwargs):
            assert isinstance(args, list)
            assert module.run_command_environ_update.get('LC_ALL') == 'C'
            self.commands.append(args)
            if os.path.basename(args[0]) == 'systemctl':
                assert args[1:] == ['show', '-p', service.SYSTEMD_PROPERTIES, '--', UNIT]
                return 0, SHOW % self.state(), ''
            assert args[1:] == ['-u', UNIT, '--no-pager', '-n', '7', '-o', 'cat']
            return self.journal

        monkeypatch.setattr(AnsibleModule, 'get_bin_path', get_bin_path)
        monkeypatch.setattr(AnsibleModule, 'run_command', run_command)

    def verbs(self):
        return [os.path.basename(args[0]) for args in self.commands]


def args(emu, **extra):
    values = dict(port=emu.port, unit=UNIT, journal_lines=7, timeout=10)
    values.update(extra)
    return values


def test_ready_returns_the_wait_and_the_server_documents(run_module, emulator, monkeypatch):
    host = Host(monkeypatch)
    emu = emulator(['--speculative-algorithm', 'DFLASH', '--speculative-draft-model-path', 'z-lab/Qwen3.6-27B-DFlash'])
    result = run_module(sglang_ready, args(emu))
    assert result['exit_code'] == 0, result
    assert result['changed'] is False
    assert 0.2 < result['ready_seconds'] < 5  # the emulator loads for 0.3 s
    assert result['url'] == 'http://127.0.0.1:%d/health_generate' % emu.port
    assert result['last_status'] == 200
    assert result['model_info']['model_path'] == 'Qwen/Qwen3.6-27B'
    assert result['server_info']['speculative_algorithm'] == 'DFLASH'
    assert result['unit_state']['state'] == 'running' and result['unit_state']['pid'] == 4242
    assert 'systemctl' in host.verbs() and 'journalctl' not in host.verbs()


def test_ready_soon_after_the_server_is(run_module, emulator, monkeypatch):
    """Polls at 0.1 s: once /health_generate answers, the module returns within about one interval."""
    Host(monkeypatch, binaries=())
    emu = emulator().wait_ready()
    before = time.monotonic()
    result = run_module(sglang_ready, dict(port=emu.port, timeout=10))
    assert result['exit_code'] == 0, result
    assert time.monotonic() - before < 0.3 and result['polls'] == 1
    assert result['unit_state'] is None


def test_never_ready_times_out_with_the_unit_state_and_a_missing_journal(run_module, emulator, monkeypatch):
    host = Host(monkeypatch, binaries=('systemctl',))
    emu = emulator(env={'SIM_SGLANG_FAULT': 'never_ready'}, load_seconds='0.1')
    before = time.monotonic()
    result = run_module(sglang_ready, args(emu, timeout=1.0))
    elapsed = time.monotonic() - before
    assert result['exit_code'] == 1 and result['failed']
    assert 1.0 <= elapsed < 3.0
    assert 'not ready after 1.0 s' in result['msg']
    assert '%s is running (main pid 4242)' % UNIT in result['msg']
    assert result['journal'] == [] and 'journalctl is not installed' in result['journal_error']
    assert 5 <= result['polls'] <= 12  # every 0.1 s
    assert host.verbs().count('systemctl') >= 2


def test_a_dead_unit_stops_the_wait_early_with_its_journal(run_module, emulator, monkeypatch):
    Host(monkeypatch, state=lambda: ('failed', 'failed', '0', 'exit-code', '1'), journal=(0, 'CUDA out of memory\nexit 1\n', ''))
    emu = emulator(env={'SIM_SGLANG_FAULT': 'never_ready'})
    before = time.monotonic()
    result = run_module(sglang_ready, args(emu, timeout=30))
    assert result['exit_code'] == 1
    assert time.monotonic() - before < 2
    assert '%s is failed (exit status 1, main pid -)' % UNIT in result['msg'] and 'before it was ready' in result['msg']
    assert result['journal'] == ['CUDA out of memory', 'exit 1']
    assert 'journal_error' not in result


def test_nothing_listening_and_a_failing_journalctl(run_module, monkeypatch):
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]  # nothing listens once it is closed
    Host(monkeypatch, journal=(1, '', 'Failed to get journal access: Permission denied\n'))
    result = run_module(sglang_ready, dict(port=port, unit=UNIT, journal_lines=7, timeout=0.5))
    assert result['exit_code'] == 1
    assert 'last answered nothing' in result['msg']
    assert result['last_status'] is None
    assert 'Permission denied' in result['journal_error']


def test_interval_is_at_most_0_2(run_module, monkeypatch):
    Host(monkeypatch)
    result = run_module(sglang_ready, dict(interval=0.5))
    assert result['exit_code'] == 1 and 'at most 0.2' in result['msg']


def test_check_mode_polls_nothing(run_module, monkeypatch):
    host = Host(monkeypatch)
    result = run_module(sglang_ready, dict(port=1, unit=UNIT, _ansible_check_mode=True))
    assert result['exit_code'] == 0 and result['skipped'] is True and result['changed'] is False
    assert host.commands == []


def test_a_server_under_the_supervisor_that_dies_is_seen_with_its_log(run_module, tmp_path, monkeypatch):
    """No systemd at all: the emulator runs under specdec's supervisor and fails while loading (CUDA OOM)."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
    emulator_path = os.path.join(repo, 'tests', 'sim', 'sglang_emulator')
    layout = os.path.join(repo, 'tests', 'sim', 'layouts', 'ct200.json')
    sglang_build.write_option_lists(str(tmp_path / 'options'))
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
    Host(monkeypatch, binaries=())  # neither systemctl nor journalctl on this host
    definition = {
        'argv': [sys.executable, '-m', 'sglang.launch_server', '--model-path', 'Qwen/Qwen3.6-27B', '--port', str(port)],
        'env': {'PYTHONPATH': emulator_path, 'SIM_GPU_STATE_DIR': str(tmp_path / 'gpu'), 'SIM_GPU_LAYOUT': layout,
                'SIM_SGLANG_LOAD_SECONDS': '0.3', 'SIM_SGLANG_CHECK_MEMORY': '0', 'SIM_SGLANG_OPTIONS_DIR': str(tmp_path / 'options'),
                'SIM_SGLANG_FAULT': 'fail_start', 'CUDA_VISIBLE_DEVICES': '1'},
        'cwd': str(tmp_path)}
    service.write_definition(str(tmp_path / 'services' / UNIT), definition, UNIT)
    _changed, started = service.start(None, 'supervisor', UNIT, str(tmp_path / 'services'))
    assert started['state'] == 'running'
    before = time.monotonic()
    result = run_module(sglang_ready, dict(port=port, unit=UNIT, backend='supervisor', state_dir=str(tmp_path / 'services'),
                                           journal_lines=7, timeout=30))
    assert result['exit_code'] == 1 and time.monotonic() - before < 15
    assert '%s is failed (exit status 1' % UNIT in result['msg'] and 'before it was ready' in result['msg']
    assert result['unit_state']['backend'] == 'supervisor' and result['unit_state']['exit_code'] == 1
    assert any('out of memory' in line.lower() for line in result['journal']), result['journal']
    assert 'exited with status 1' in result['journal'][-1]
