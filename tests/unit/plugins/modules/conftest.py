# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The SGLang emulator (tests/sim/sglang_emulator) as a real HTTP server on 127.0.0.1, for the modules that talk to SGLang."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

import pytest

from ansible_collections.specdec.bench.plugins.plugin_utils import sglang_build
from testhelpers import free_port, stop_process, wait_until  # noqa: E402  pylint: disable=wrong-import-position,import-error

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
EMULATOR = os.path.join(REPO, 'tests', 'sim', 'sglang_emulator')
LAYOUT = os.path.join(REPO, 'tests', 'sim', 'layouts', 'ct200.json')
DEADLINE_S = 15.0
DFLASH_ARGS = ('--speculative-algorithm', 'DFLASH', '--speculative-draft-model-path', 'z-lab/Qwen3.6-27B-DFlash',
               '--speculative-num-draft-tokens', '16')
# The emulator's parser is made from the build profiles' option lists, as in the simulated hosts' image.
OPTIONS_DIR = tempfile.mkdtemp(prefix='specdec-sim-options-')
sglang_build.write_option_lists(OPTIONS_DIR)
# Every request through urllib must ignore these: a test fails if traffic for 127.0.0.1 went to a proxy.
DEAD_PROXY = 'http://127.0.0.1:9'


class Emulator:
    """One emulator process on a free port, with a hub-style model name (no model folder is checked)."""

    def __init__(self, directory, args=(), env=None, load_seconds='0.3', time_scale='0.02'):
        self.port = free_port()
        self.base_url = 'http://127.0.0.1:%d' % self.port
        self.log_path = os.path.join(str(directory), 'emulator-%d.log' % self.port)
        environ = dict((k, v) for k, v in os.environ.items() if not k.startswith(('SIM_', 'SGLANG_')))
        environ.update({
            'PYTHONPATH': EMULATOR,
            'SIM_GPU_STATE_DIR': os.path.join(str(directory), 'state-%d' % self.port),
            'SIM_GPU_LAYOUT': LAYOUT,
            'SIM_SGLANG_LOAD_SECONDS': load_seconds,
            'SIM_SGLANG_TIME_SCALE': time_scale,
            'SIM_SGLANG_CHECK_MEMORY': '0',
            'SIM_SGLANG_OPTIONS_DIR': OPTIONS_DIR,
            'SIM_SGLANG_BUILD': 'sglang-ddtree-pr29907',
            'CUDA_VISIBLE_DEVICES': '1',
        })
        environ.update(env or {})
        command = [sys.executable, '-m', 'sglang.launch_server', '--model-path', 'Qwen/Qwen3.6-27B',
                   '--host', '127.0.0.1', '--port', str(self.port)] + list(args)
        with open(self.log_path, 'w', encoding='utf-8') as log:
            self.proc = subprocess.Popen(command, env=environ, stdout=log, stderr=subprocess.STDOUT, cwd=str(directory))

    def status(self, path):
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(self.base_url + path, timeout=5) as response:
                return response.status
        except urllib.error.HTTPError as exc:
            return exc.code
        except OSError:
            return None

    def wait_ready(self):
        wait_until(lambda: self.status('/health') == 200 or self.proc.poll() is not None, 'the emulator to be ready')
        assert self.proc.poll() is None, self.log()
        return self

    def log(self):
        with open(self.log_path, encoding='utf-8') as handle:
            return handle.read()

    def stop(self):
        stop_process(self.proc, DEADLINE_S)


@pytest.fixture
def emulator(tmp_path, monkeypatch):
    """Start emulators (stopped after the test); HTTP_PROXY points nowhere, so a module that used it would fail."""
    for name in ('HTTP_PROXY', 'http_proxy', 'HTTPS_PROXY', 'https_proxy'):
        monkeypatch.setenv(name, DEAD_PROXY)
    for name in ('NO_PROXY', 'no_proxy'):
        monkeypatch.delenv(name, raising=False)
    started = []

    def start(args=(), env=None, load_seconds='0.3', time_scale='0.02'):
        emu = Emulator(tmp_path, args, env, load_seconds, time_scale)
        started.append(emu)
        return emu

    yield start
    for emu in started:
        emu.stop()


@pytest.fixture
def dflash(emulator):
    """A ready DFLASH server (16 draft tokens)."""
    return emulator(DFLASH_ARGS).wait_ready()


@pytest.fixture(name='sglang_env')
def emulated_sglang(tmp_path, monkeypatch):
    """The servers' interpreter's environment for sglang_preflight: the emulator's sglang, with the build the host 'has'."""
    options = tmp_path / 'options'
    sglang_build.write_option_lists(str(options))
    monkeypatch.setenv('PYTHONPATH', EMULATOR)
    monkeypatch.setenv('SIM_SGLANG_OPTIONS_DIR', str(options))
    monkeypatch.setenv('SIM_SGLANG_BUILD', 'sglang-0.5.23')
    return monkeypatch
