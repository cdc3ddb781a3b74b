#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: sglang_ready
short_description: Wait on the host until an SGLang server generates, or its unit dies
version_added: 0.1.0
description:
  - Polls C(http://<host>:<port>/health_generate), which runs one generation step, every O(interval) seconds from the
    benchmark host itself, until it answers 200 or O(timeout) has passed.
  - While it waits it reads the state of the systemd O(unit) every O(unit_check_every) polls, and stops at once
    when the unit is no longer running (V(inactive) or V(failed)), so a server that crashed at start fails in
    seconds, not after O(timeout).
  - Once ready it returns how long that took from the start of the module, and the server's C(/model_info) and C(/server_info).
  - On a timeout or a dead unit it fails with the unit's state and the last O(journal_lines) lines of its journal.
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
      - The systemd unit running the server. Its state is checked while waiting and its journal is returned on failure.
      - When unset, or when the host has no C(systemctl), only the HTTP endpoint is watched.
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
    description: How many of the unit's last journal lines a failure returns.
    type: int
    default: 50
attributes:
  check_mode:
    description: Can run in C(check_mode) and return changed status prediction without modifying target.
    support: full
    details:
      - In check mode nothing is requested and the result is marked skipped, since the server was not started either.
  diff_mode:
    description: Returns details on what has changed (or possibly needs changing in C(check_mode)), when in diff mode.
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
  description: The unit's last read state (C(systemctl show) properties); null when no unit was checked.
  returned: always
  type: dict
  sample: {"LoadState": "loaded", "ActiveState": "failed", "SubState": "failed", "MainPID": "0", "Result": "exit-code"}
journal:
  description: The unit's last O(journal_lines) journal lines, without metadata (C(journalctl -o cat)).
  returned: failure, when O(unit) is set
  type: list
  elements: str
  sample: ["torch.OutOfMemoryError: CUDA out of memory."]
journal_error:
  description: Why the journal could not be read (no C(journalctl), or its error output).
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
from ansible_collections.specdec.bench.plugins.module_utils._systemd import parse_show

UNIT_PROPERTIES = 'LoadState,ActiveState,SubState,MainPID,Result'
# A unit in one of these states runs nothing and will not start by itself (auto-restart shows as activating).
DEAD_STATES = ('inactive', 'failed')
MAX_INTERVAL = 0.2
C_LOCALE = dict(LANG='C', LC_ALL='C', LC_MESSAGES='C', LANGUAGE='C', SYSTEMD_PAGER='', SYSTEMD_COLORS='0')


def is_dead(state):
    return bool(state) and state.get('ActiveState') in DEAD_STATES


def describe_state(unit, state):
    if not state:
        return '%s: state unknown' % unit
    return '%s is %s/%s (result %s, main pid %s)' % (
        unit, state.get('ActiveState'), state.get('SubState'), state.get('Result') or '-', state.get('MainPID') or '-')


def read_unit_state(module, systemctl, unit):
    """The unit's show properties as a dict, or None when systemctl cannot tell."""
    rc, out, err = module.run_command([systemctl, 'show', '-p', UNIT_PROPERTIES, '--', unit])
    if rc != 0:
        module.warn('systemctl show %s failed (rc %d): %s' % (unit, rc, (err or out).strip()))
        return None
    try:
        blocks = parse_show(out)
    except ValueError as exc:
        module.warn('cannot parse systemctl show output: %s' % exc)
        return None
    return blocks[0] if blocks else None


def read_journal(module, unit, lines):
    """(journal lines, error text or None); never fails the module."""
    journalctl = module.get_bin_path('journalctl')
    if journalctl is None:
        return [], 'journalctl is not installed on this host'
    rc, out, err = module.run_command([journalctl, '-u', unit, '--no-pager', '-n', str(lines), '-o', 'cat'])
    if rc != 0:
        return out.splitlines(), 'journalctl failed (rc %d): %s' % (rc, (err or out).strip())
    return out.splitlines(), None


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
    systemctl = module.get_bin_path('systemctl') if unit else None
    if unit and systemctl is None:
        module.warn('no systemctl on this host: the state of %s is not watched' % unit)

    deadline = started + params['timeout']
    polls, status, state = 0, None, None
    next_poll = time.monotonic()
    while True:
        status = get_status(url, min(params['probe_timeout'], max(0.05, deadline - time.monotonic())))
        polls += 1
        if status == 200:
            break
        if systemctl and polls % params['unit_check_every'] == 1 % params['unit_check_every']:
            state = read_unit_state(module, systemctl, unit)
            if is_dead(state):
                # it may have become ready and then died between two polls: one last look decides
                if get_status(url, params['probe_timeout']) == 200:
                    status = 200
                    break
                fail(module, params, url, polls, status, state, '%s before it was ready' % describe_state(unit, state))
        now = time.monotonic()
        if now >= deadline:
            if systemctl:
                state = read_unit_state(module, systemctl, unit)
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
        result['journal'], journal_error = read_journal(module, params['unit'], params['journal_lines'])
        if journal_error:
            result['journal_error'] = journal_error
    module.fail_json(msg=msg, **result)


if __name__ == '__main__':
    main()
