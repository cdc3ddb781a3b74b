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

from ansible.module_utils.basic import AnsibleModule

# the engine and the names callers use live in module_utils (specdec.bench.stage_run runs it as a step)
from ansible_collections.specdec.bench.plugins.module_utils._stage.errors import StageError
from ansible_collections.specdec.bench.plugins.module_utils._stage.sglang_ready import (  # noqa: F401  pylint: disable=unused-import
    ARGUMENT_SPEC,
    MAX_INTERVAL,
    describe_state,
    is_dead,
    sglang_ready,
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        result = sglang_ready(module, module.params)
    except StageError as exc:
        module.fail_json(msg=exc.reason, **exc.evidence)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
