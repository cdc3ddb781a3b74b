#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: process_stop
short_description: Stop a GPU holder that no service manager runs, recording first how to start it again
version_added: 0.3.0
description:
  - For a host whose PID 1 is not systemd, where a GPU a campaign needs is held by a program started by hand (no unit,
    no service of specdec's supervisor). The conflicts role calls it for each holder the plan matched to an entry of
    the host variable C(specdec_stoppable_processes).
  - First it checks that O(pid) still runs a command line that O(match) finds (a pid reused by another program is
    never signalled). Then, before any signal, it records the process in O(record), the campaign's conflicts record,
    under C(processes.<name>) - argv, the program's absolute path, working directory, environment, its owner (uid,
    gid and supplementary groups from C(/proc/<pid>/status)), pid, start ticks and process group. The record is
    written atomically with mode 0600, since the environment may hold secrets; the environment is never returned.
  - A process the restore could not start again as it ran is refused before anything is recorded or signalled, with
    the pid, the field and why. That is one whose real, effective, saved and filesystem uids (or gids) differ (a
    set-user-ID program); one of another uid than 0 that holds capabilities (C(CapEff), C(CapPrm), C(CapAmb)); text
    that is not UTF-8 in its argv, environment or cwd; and a program or cwd that is no longer there. The restore's
    own checks of the definition run here too, on the same definition, so what is stopped can be restored.
    An empty argument (C(--tag '')) is restored as it was.
  - Then SIGTERM to the process, and to its process group when it leads one; SIGKILL after O(timeout) seconds; it
    returns once neither the process nor its group is left.
  - A record of an interrupted run that already names O(name) keeps its first entry, like the units the role records.
  - The role's restore starts the recorded program again as the supervisor service C(specdec-restored-<name>.service)
    (M(specdec.bench.service)), as the recorded uid, gid and groups (never as root for a process that was not root),
    with exactly the recorded environment and nothing of the supervisor's own.
author:
  - specdec.bench developers (!UNKNOWN)
options:
  name:
    description: The entry's name in C(specdec_stoppable_processes), C([a-z0-9][a-z0-9._-]*).
    type: str
    required: true
  pid:
    description: The process to stop (the GPU holder's pid in the plan).
    type: int
    required: true
  match:
    description: The Python regular expression the process's command line (its words joined by spaces) must contain.
    type: str
    required: true
  record:
    description: The campaign's conflicts record, C(<conflicts_record_dir>/<campaign>.json); created when missing.
    type: path
    required: true
  campaign:
    description: The campaign id, written to a record this module creates.
    type: str
    default: ""
  timeout:
    description: Seconds between SIGTERM and SIGKILL.
    type: int
    default: 30
extends_documentation_fragment:
  - specdec.bench.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reads the process and reports what it would record and stop; writes and signals nothing.
  diff_mode:
    support: none
notes:
  - Requires Python 3.9 or later on the host; standard library only. Reading another user's process needs root.
seealso:
  - module: specdec.bench.service
"""

EXAMPLES = r"""
- name: Stop the hand-started server holding GPU 0
  specdec.bench.process_stop:
    name: hand-wrapper
    pid: 4242
    match: 'sglang.launch_server.*--port 30100'
    record: /var/lib/specdec/conflicts/qwen36-a100box.json
    campaign: qwen36-a100box
"""

RETURN = r"""
state:
  description: V(stopped) (it ran and was stopped, or would be in check mode) or V(gone) (no process O(pid) was left).
  returned: always
  type: str
  sample: stopped
how:
  description: V(terminated) (it ended after SIGTERM) or V(killed) (SIGKILL after O(timeout)); null when nothing was signalled.
  returned: always
  type: str
  sample: terminated
recorded:
  description: Whether this call wrote the entry; false when an interrupted run's record already had O(name).
  returned: always
  type: bool
  sample: true
process:
  description: What was recorded, without the environment's values.
  returned: when RV(state=stopped)
  type: dict
  contains:
    name:
      description: O(name).
      type: str
    pid:
      description: The process's pid.
      type: int
    start_ticks:
      description: Its start time in clock ticks since boot (field 22 of C(/proc/<pid>/stat)).
      type: int
    argv:
      description: Its command line, word for word.
      type: list
      elements: str
    program:
      description: C(argv[0]) as an absolute path (found on the process's own C(PATH)).
      type: str
    cwd:
      description: Its working directory.
      type: str
    leads_group:
      description: Whether it leads its process group (then the whole group is signalled).
      type: bool
    env_names:
      description: The names of its environment variables, sorted; the values are only in the record.
      type: list
      elements: str
    uid:
      description: The uid it ran as, and is restored as (real, effective, saved and filesystem uid alike).
      type: int
    gid:
      description: The gid it ran as, and is restored as.
      type: int
    groups:
      description: Its supplementary group ids (the C(Groups) line of C(/proc/<pid>/status)), restored exactly.
      type: list
      elements: int
  sample:
    name: hand-wrapper
    pid: 4242
    start_ticks: 912345
    argv: [python3, -m, sglang.launch_server, --model-path, /data/models/Qwen3.6-27B, --port, "30100", --tp-size, "1"]
    program: /usr/bin/python3
    cwd: /home/bench
    leads_group: true
    env_names: [CUDA_VISIBLE_DEVICES, HOME, PATH]
    uid: 1000
    gid: 1000
    groups: [44, 1000]
"""

import re
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.specdec.bench.plugins.module_utils import _process as process
from ansible_collections.specdec.bench.plugins.module_utils._common import ID_PATTERN, ID_RE


def summary(name, entry):
    """The record entry as returned: everything but the environment's values."""
    keys = ('pid', 'start_ticks', 'argv', 'program', 'cwd', 'leads_group', 'uid', 'gid', 'groups')
    return dict(dict((key, entry.get(key)) for key in keys), name=name, env_names=sorted(entry.get('env') or {}))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type='str', required=True),
            pid=dict(type='int', required=True),
            match=dict(type='str', required=True),
            record=dict(type='path', required=True),
            campaign=dict(type='str', default=''),
            timeout=dict(type='int', default=30),
        ),
        supports_check_mode=True,
    )
    p = module.params
    name, pid = p['name'], p['pid']
    if not ID_RE.match(name):
        module.fail_json(msg='name is %r; allowed: an id matching %s' % (name, ID_PATTERN))
    try:
        pattern = re.compile(p['match'])
    except re.error as exc:
        module.fail_json(msg='match is %r: %s; allowed: a Python regular expression' % (p['match'], exc))
    if pid <= 1:
        module.fail_json(msg='pid is %d; allowed: a process other than PID 1' % pid)

    result = dict(changed=False, state='gone', how=None, recorded=False)
    cmdline = process.read_cmdline(pid)
    if process.start_ticks(pid) is None or cmdline is None:
        module.exit_json(**result)
    if not pattern.search(cmdline):
        module.fail_json(msg='process %d now runs %r, which %r does not match: nothing was signalled' % (pid, cmdline, p['match']),
                         **result)
    try:
        record = process.read_record(p['record'])
        entry = process.snapshot(pid)
    except ValueError as exc:
        module.fail_json(msg='%s: nothing was signalled' % exc, **result)
    entries = record.get('processes') if isinstance(record.get('processes'), dict) else {}
    recorded = name not in entries
    if recorded:
        entry.update(name=name, match=p['match'], stopped=time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()))
        record = dict(record, processes=dict(entries, **{name: entry}))
        record.setdefault('campaign', p['campaign'])
    try:
        # the restore's own checks, on what it will restore (an interrupted run's entry is kept): refused, not stopped
        process.check_restorable(name, record['processes'][name], record.get('campaign') or p['campaign'])
    except ValueError as exc:
        module.fail_json(msg='%s: nothing was signalled' % exc, **result)
    result.update(changed=True, state='stopped', recorded=recorded)
    result['process'] = summary(name, entry)
    if module.check_mode:
        module.exit_json(**result)
    try:
        if result['recorded']:
            process.write_record(p['record'], record)  # before any signal: what is not recorded is not stopped
        result['how'] = process.stop(entry, p['timeout'])
    except (OSError, RuntimeError) as exc:
        module.fail_json(msg='%s (pid %d): %s' % (name, pid, exc), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
