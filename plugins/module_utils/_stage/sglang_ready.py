# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""specdec.bench.sglang_ready's engine: wait until an SGLang server generates, or its service dies.

sglang_ready(module, params) returns the module's result or raises StageError; module is the running AnsibleModule (its
run_command, get_bin_path, warn and check mode); ARGUMENT_SPEC is its options.
"""

from __future__ import annotations

import time

from .sglang_http import (
    CONNECTION_ERRORS,
    HTTPStatusError,
    get_status,
    request_json,
)
from ansible_collections.specdec.bench.plugins.module_utils import _service as service
from .errors import StageError

MAX_INTERVAL = 0.2
C_LOCALE = dict(LANG='C', LC_ALL='C', LC_MESSAGES='C', LANGUAGE='C', SYSTEMD_PAGER='', SYSTEMD_COLORS='0')

ARGUMENT_SPEC = dict(
    host=dict(type='str', default='127.0.0.1'),
    port=dict(type='int', default=30000),
    unit=dict(type='str'),
    backend=dict(type='str', default='systemd', choices=list(service.BACKENDS)),
    state_dir=dict(type='path', default='/var/lib/specdec/services'),
    timeout=dict(type='float', default=600),
    interval=dict(type='float', default=0.1),
    probe_timeout=dict(type='float', default=5),
    unit_check_every=dict(type='int', default=5),
    journal_lines=dict(type='int', default=50),
)


def is_dead(state):
    """Not running and not going to run by itself (systemd shows an automatic restart as running)."""
    return bool(state) and state.get('state') in ('inactive', 'exited', 'failed', 'not-found')


def describe_state(unit, state):
    if not state:
        return '%s: state unknown' % unit
    ended = None
    if state.get('state') != 'running':
        ended = state.get('error') or ('killed by signal %s' % state['signal'] if state.get('signal') else
                                       'exit status %s' % state['exit_code'] if state.get('exit_code') is not None else None)
    return '%s is %s (%smain pid %s)' % (unit, state.get('state'), '%s, ' % ended if ended else '', state.get('pid') or '-')


def read_unit_state(module, params):
    """The service's state, or None (with a warning) when it cannot be told."""
    try:
        return service.status(module, params['backend'], params['unit'], params['state_dir'])
    except (RuntimeError, ValueError, OSError) as exc:
        module.warn('cannot read the state of %s: %s' % (params['unit'], exc))
        return None


def read_info(module, base, path, timeout):
    try:
        return request_json(base + path, timeout=timeout)
    except (HTTPStatusError, ValueError) + CONNECTION_ERRORS as exc:
        module.warn('cannot read %s: %s' % (path, exc))
        return None


def sglang_ready(module, params, tick=None):
    """The server ready: the module's result; StageError (with the unit's state and journal) when it is not.

    tick: called once per poll while waiting (specdec.bench.stage_run keeps its progress and checks its lease there);
    whatever it raises ends the wait."""
    started = time.monotonic()
    host = params['host']
    base = 'http://%s:%d' % ('[%s]' % host if ':' in host else host, params['port'])
    url = base + '/health_generate'
    if not 0 < params['interval'] <= MAX_INTERVAL:
        raise StageError('interval must be above 0 and at most %s s, got %s' % (MAX_INTERVAL, params['interval']))
    if params['unit_check_every'] < 1 or params['journal_lines'] < 0 or params['timeout'] < 0 or params['probe_timeout'] <= 0:
        raise StageError('unit_check_every must be at least 1; journal_lines and timeout at least 0; probe_timeout above 0')
    if module.check_mode:
        return dict(changed=False, skipped=True, msg='check mode: the server was not polled', url=url, polls=0,
                    last_status=None, unit_state=None)

    module.run_command_environ_update.update(C_LOCALE)
    unit = params['unit']
    watch = bool(unit)
    if unit and params['backend'] == 'systemd' and module.get_bin_path('systemctl') is None:
        module.warn('no systemctl on this host: the state of %s is not watched' % unit)
        watch = False

    deadline = started + params['timeout']
    polls, status, state = 0, None, None
    next_poll = time.monotonic()
    while True:
        status = get_status(url, min(params['probe_timeout'], max(0.05, deadline - time.monotonic())))
        polls += 1
        if status == 200:
            break
        if watch and polls % params['unit_check_every'] == 1 % params['unit_check_every']:
            state = read_unit_state(module, params)
            if is_dead(state):
                # it may have become ready and then died between two polls: one last look decides
                if get_status(url, params['probe_timeout']) == 200:
                    status = 200
                    break
                fail(module, params, url, polls, status, state, '%s before it was ready' % describe_state(unit, state))
        now = time.monotonic()
        if now >= deadline:
            if watch:
                state = read_unit_state(module, params)
            what = '; %s' % describe_state(unit, state) if unit else ''
            fail(module, params, url, polls, status, state,
                 'not ready after %s s: %s last answered %s%s' % (params['timeout'], url, status or 'nothing', what))
        if tick is not None:
            tick()
        next_poll += params['interval']
        time.sleep(max(0.0, min(next_poll, deadline) - now))
        if next_poll < now:
            next_poll = now  # a slow probe: poll again at once, without a burst to catch up

    ready_seconds = time.monotonic() - started
    info_timeout = max(params['probe_timeout'], 30)
    return dict(
        changed=False, url=url, polls=polls, last_status=status, unit_state=state, ready_seconds=round(ready_seconds, 4),
        model_info=read_info(module, base, '/model_info', info_timeout),
        server_info=read_info(module, base, '/server_info', info_timeout),
    )


def fail(module, params, url, polls, status, state, msg):
    result = dict(url=url, polls=polls, last_status=status, unit_state=state)
    if params['unit']:
        result['journal'], journal_error = service.log(module, params['backend'], params['unit'], params['journal_lines'],
                                                       params['state_dir'])
        if journal_error:
            result['journal_error'] = journal_error
    raise StageError(msg, result)
