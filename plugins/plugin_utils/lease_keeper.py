# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The controller's lease keeper: renews a wave's leases from a process of its own, not from an Ansible worker.

Why: with more hosts than `forks`, the free strategy gives a host's next task a worker only when one is free. A host
whose stages were started then waits, unpolled, while another host's stage_wait holds the only worker for a whole
wave, and its stages stop themselves at the end of their leases. The keeper is started (start()) by the task before
the wave's start, from the host's worker, as a daemon of the controller (double fork, a session of its own). It
renews through the task's connection (ssh, podman, local: each call a new client process) every `interval` seconds
and stops when:
- stage_wait releases it (release(): a stop file in its state folder);
- every stage it saw running has ended (their locks are free);
- the ansible-playbook that started it is gone (pid and process start time): a killed controller's stages must stop;
- its lifetime passed, or its state folder is gone (ansible-playbook removes its local tmp at exit).

Its state folder holds state.json (renewals, failures, the longest gap between renewals, why it stopped), written
atomically after each renewal; release() reads it and removes the folder.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import tempfile
import time

from ansible_collections.specdec.bench.plugins.module_utils import _lease
from ansible_collections.specdec.bench.plugins.module_utils import _process

# One renewal on the host: module_utils/_lease.py itself (the one place that renews and tests a lease), run by the
# host's Python with the lease files as JSON; no module wrapper, so a round trip costs a process start, not an AnsiballZ.
RENEW_MAIN = '''
import json as _json, sys as _sys
print(_json.dumps([{'path': p, 'renewed': renew(p, create=False), 'running': held(p + '.lock')}
                   for p in _json.loads(_sys.argv[1])]))
'''
STATE = 'state.json'
STOP = 'stop'
TICK_S = 0.1


def proc_start(pid):
    """The process's start time (clock ticks since boot), or None when it is gone: _process's one reading of /proc."""
    try:
        return _process.start_ticks(int(pid))
    except (TypeError, ValueError):
        return None


def renew_command(interpreter, lease_files):
    """The shell command that renews the lease files once with the host's Python and prints their state as JSON."""
    with open(_lease.__file__, encoding='utf-8') as handle:
        source = handle.read()
    return '%s -c %s %s' % (shlex.quote(interpreter), shlex.quote(source + RENEW_MAIN), shlex.quote(json.dumps(list(lease_files))))


def parse_renewal(stdout):
    """The leases that renew_command printed; ValueError when the answer is not that."""
    leases = json.loads(stdout.strip().splitlines()[-1] if stdout.strip() else '')
    if not isinstance(leases, list) or not all(isinstance(lease, dict) and 'path' in lease for lease in leases):
        raise ValueError('not a list of leases: %r' % stdout[-200:])
    return leases


def write_state(folder, state):
    path = os.path.join(folder, STATE)
    tmp = path + '.tmp'
    try:
        with open(tmp, 'w', encoding='utf-8') as handle:
            json.dump(state, handle)
        os.replace(tmp, path)
    except OSError:
        pass  # the folder is gone: the loop sees that and stops


def read_state(folder):
    try:
        with open(os.path.join(folder, STATE), encoding='utf-8') as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


class Keeper:
    """The keeper's loop, apart from how it is started: `renew()` is one round trip on the host, answering the module's
    leases (path, renewed, running) or raising; the clock, sleep and liveness test are given for the tests."""

    def __init__(self, folder, renew, interval, lifetime, alive, clock=time.monotonic, sleep=time.sleep):
        self.folder = folder
        self.renew = renew
        self.interval = interval
        self.lifetime = lifetime
        self.alive = alive
        self.clock = clock
        self.sleep = sleep
        self.state = {'pid': os.getpid(), 'renewals': 0, 'failures': 0, 'max_gap_s': 0.0, 'last_error': None,
                      'stopped': None}

    def why_stop(self, started):
        if not os.path.isdir(self.folder):
            return 'its state folder is gone'
        if os.path.exists(os.path.join(self.folder, STOP)):
            return 'released'
        if not self.alive():
            return 'ansible-playbook is gone'
        if self.clock() - started > self.lifetime:
            return 'lifetime of %d s passed' % self.lifetime
        return None

    def run(self):
        started = last = self.clock()
        seen_running = set()
        next_renewal = started
        reason = None
        while reason is None:
            reason = self.why_stop(started)
            if reason is not None or self.clock() < next_renewal:
                if reason is None:
                    self.sleep(TICK_S)
                continue
            began = self.clock()
            next_renewal = began + self.interval
            try:
                leases = self.renew()
            except Exception as exc:  # pylint: disable=broad-exception-caught  # logged, retried at the next interval
                self.state['failures'] += 1
                self.state['last_error'] = '%s: %s' % (type(exc).__name__, exc)
            else:
                now = self.clock()
                self.state['renewals'] += 1
                self.state['max_gap_s'] = round(max(self.state['max_gap_s'], now - last), 3)
                last = now
                running = set(lease['path'] for lease in leases if lease.get('running'))
                seen_running |= running
                paths = set(lease['path'] for lease in leases)
                if paths and seen_running >= paths and not running:
                    reason = 'every stage it kept has ended'
            write_state(self.folder, self.state)
        self.state['stopped'] = reason
        write_state(self.folder, self.state)
        return reason


def _detach():
    """Away from the worker's descriptors and signal handlers, and from Ansible's display queue to the main process."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    try:
        from ansible.utils.display import Display  # pylint: disable=import-outside-toplevel
        display = Display()
        display._final_q = None  # pylint: disable=protected-access  # never write into the worker's queue
        display.verbosity = 0
    except Exception:  # pylint: disable=broad-exception-caught
        pass


def start(renew, interval, lifetime, tmp_root=None):
    """Start a keeper daemon; returns {'pid', 'folder', 'controller_pid'}. `renew` runs in the daemon."""
    folder = tempfile.mkdtemp(prefix='specdec-lease-', dir=tmp_root if tmp_root and os.path.isdir(tmp_root) else None)
    controller = os.getppid()  # the worker's parent: ansible-playbook
    controller_start = proc_start(controller)

    def alive():
        return proc_start(controller) == controller_start

    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover  # runs in the daemon; the tests run Keeper directly and start() end to end
        try:
            os.close(read_end)
            os.setsid()
            daemon = os.fork()
            if daemon:
                os.write(write_end, str(daemon).encode('ascii'))
                os._exit(0)
            os.close(write_end)
            _detach()
            Keeper(folder, renew, interval, lifetime, alive).run()
        except BaseException:  # pylint: disable=broad-exception-caught
            pass
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        data = os.read(read_end, 32)
    finally:
        os.close(read_end)
        os.waitpid(child, 0)
    return {'pid': int(data) if data else None, 'folder': folder, 'controller_pid': controller}


def release(keeper, timeout=10.0, clock=time.monotonic, sleep=time.sleep):
    """Stop the keeper (a stop file), wait for its last state, remove its folder; returns its state (None if none)."""
    if not isinstance(keeper, dict) or not keeper.get('folder'):
        return None
    folder = keeper['folder']
    try:
        with open(os.path.join(folder, STOP), 'w', encoding='utf-8'):
            pass
    except OSError:
        return None
    deadline = clock() + timeout
    state = read_state(folder)
    while (state is None or not state.get('stopped')) and clock() < deadline and proc_start(keeper.get('pid') or -1):
        sleep(TICK_S)
        state = read_state(folder)
    state = read_state(folder) or state
    shutil.rmtree(folder, ignore_errors=True)
    return state
