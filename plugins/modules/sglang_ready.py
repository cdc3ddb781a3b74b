#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: sglang_ready
short_description: Wait on the host until an SGLang server generates, or its service dies
version_added: 0.1.0
description:
  - Polls C(http://<host>:<port>/health_generate), which runs one generation step, every O(interval) seconds from the
    benchmark host itself, until it answers 200 or O(timeout) has passed.
  - While it waits it reads the state of the service O(unit) (a systemd unit, or a service of specdec's supervisor,
    O(backend)) every O(unit_check_every) polls, and stops at once when it is no longer running, so a server that
    crashed at start fails in seconds, not after O(timeout).
  - Once ready it returns how long that took from the start of the module, and the server's C(/model_info) and C(/server_info).
  - On a timeout or a dead service it fails with the service's state and its last O(journal_lines) lines of output
    (the journal, or the supervisor's log).
  - Requests never go through a proxy, whatever C(HTTP_PROXY) says.
author:
  - specdec.bench developers (!UNKNOWN)
options:
  host:
    description: Address of the server, as the benchmark host reaches it.
    type: str
    default: 127.0.0.1
  port:
    description: Port of the server.
    type: int
    default: 30000
  unit:
    description:
      - The service running the server. Its state is checked while waiting and its output is returned on failure.
      - When unset only the HTTP endpoint is watched.
    type: str
  timeout:
    description: Seconds to wait for the server to become ready, counted from the start of the module.
    type: float
    default: 600
  interval:
    description: Seconds between two polls of C(/health_generate); at most 0.2, so readiness is seen within 0.2 s.
    type: float
    default: 0.1
  probe_timeout:
    description: Seconds one C(/health_generate) request may take before it counts as not ready.
    type: float
    default: 5
  unit_check_every:
    description: Read the unit's state once every this many polls.
    type: int
    default: 5
  journal_lines:
    description: How many of the service's last lines of output a failure returns.
    type: int
    default: 50
extends_documentation_fragment:
  - specdec.bench.attributes
  - specdec.bench.service_backend
attributes:
  check_mode:
    support: full
    details:
      - In check mode nothing is requested and the result is marked skipped, since the server was not started either.
  diff_mode:
    support: none
seealso:
  - module: specdec.bench.bench_run
"""

EXAMPLES = r"""
- name: Wait for the stage's server
  specdec.bench.sglang_ready:
    port: 30001
    unit: sglang-stage-tp1-dflash.service
    timeout: 900
  register: __bench_stage_ready

- name: Show the load time
  ansible.builtin.debug:
    msg: "ready after {{ __bench_stage_ready.ready_seconds }} s, model {{ __bench_stage_ready.model_info.model_path }}"
"""

RETURN = r"""
url:
  description: The readiness URL polled.
  returned: always
  type: str
  sample: http://127.0.0.1:30001/health_generate
ready_seconds:
  description: Seconds from the start of the module until C(/health_generate) answered 200.
  returned: success
  type: float
  sample: 41.23
polls:
  description: How many C(/health_generate) requests were made.
  returned: always
  type: int
  sample: 410
model_info:
  description: The server's C(/model_info); null when it could not be read (a warning says why).
  returned: success
  type: dict
  sample: {"model_path": "/models/Qwen3.6-27B", "tokenizer_path": "/models/Qwen3.6-27B", "is_generation": true}
server_info:
  description: The server's C(/server_info), with its arguments and C(internal_states); null when it could not be read.
  returned: success
  type: dict
  sample: {"tp_size": 1, "speculative_algorithm": "DFLASH", "internal_states": [{"avg_spec_accept_length": 3.5}]}
last_status:
  description: The last HTTP status C(/health_generate) answered; null when nothing answered (refused, timed out).
  returned: always
  type: int
  sample: 503
unit_state:
  description: The service's last read state, as P(specdec.bench.service#module) returns it; null when none was checked.
  returned: always
  type: dict
  sample: {"state": "failed", "pid": 4242, "exit_code": 1, "signal": null, "error": null, "backend": "systemd"}
journal:
  description: The service's last O(journal_lines) lines of output (C(journalctl -o cat), or the supervisor's log).
  returned: failure, when O(unit) is set
  type: list
  elements: str
  sample: ["torch.OutOfMemoryError: CUDA out of memory."]
journal_error:
  description: Why the output could not be read (no C(journalctl), its error output, no log).
  returned: failure, when the journal could not be read
  type: str
  sample: journalctl is not installed on this host
skipped:
  description: True in check mode, where nothing was polled.
  returned: check mode
  type: bool
  sample: true
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.specdec.bench.plugins.module_utils._sglang_http import (
    CONNECTION_ERRORS,
    HTTPStatusError,
    get_status,
    request_json,
)
from ansible_collections.specdec.bench.plugins.module_utils import _service as service

MAX_INTERVAL = 0.2
C_LOCALE = dict(LANG='C', LC_ALL='C', LC_MESSAGES='C', LANGUAGE='C', SYSTEMD_PAGER='', SYSTEMD_COLORS='0')


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


def main():
    started = time.monotonic()
    module = AnsibleModule(
        argument_spec=dict(
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
        ),
        supports_check_mode=True,
    )
    params = module.params
    host = params['host']
    base = 'http://%s:%d' % ('[%s]' % host if ':' in host else host, params['port'])
    url = base + '/health_generate'
    if not 0 < params['interval'] <= MAX_INTERVAL:
        module.fail_json(msg='interval must be above 0 and at most %s s, got %s' % (MAX_INTERVAL, params['interval']))
    if params['unit_check_every'] < 1 or params['journal_lines'] < 0 or params['timeout'] < 0 or params['probe_timeout'] <= 0:
        module.fail_json(msg='unit_check_every must be at least 1; journal_lines and timeout at least 0; probe_timeout above 0')
    if module.check_mode:
        module.exit_json(changed=False, skipped=True, msg='check mode: the server was not polled', url=url, polls=0,
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
        next_poll += params['interval']
        time.sleep(max(0.0, min(next_poll, deadline) - now))
        if next_poll < now:
            next_poll = now  # a slow probe: poll again at once, without a burst to catch up

    ready_seconds = time.monotonic() - started
    info_timeout = max(params['probe_timeout'], 30)
    module.exit_json(
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
    module.fail_json(msg=msg, **result)


if __name__ == '__main__':
    main()
