#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: stage_progress
short_description: Read the progress and the outcome of the stages in flight on a host, in one round trip
version_added: 0.4.0
description:
  - For each M(specdec.bench.stage_run) job started with C(async), reads the job's results file (as
    M(ansible.builtin.async_status) does) and the stage's progress file, and renews the stage's lease (touches its
    lease file), so the stage goes on only while a controller polls it.
  - The M(specdec.bench.stage_wait) action calls it once per poll for all the stages of a wave; a playbook need not.
author:
  - specdec.bench developers (!UNKNOWN)
options:
  jobs:
    description: The jobs to read.
    type: list
    elements: dict
    required: true
    suboptions:
      jid:
        description: The async job id (C(ansible_job_id) of the task that started it).
        type: str
        required: true
      progress_file:
        description: The stage's progress file (M(specdec.bench.stage_run)'s O(specdec.bench.stage_run#module:progress_file)).
        type: path
      lease_file:
        description: The stage's lease file, touched at each read (M(specdec.bench.stage_run)'s
          O(specdec.bench.stage_run#module:lease_file)); not touched once the job finished.
        type: path
      seen:
        description:
          - "What the previous answer returned as RV(jobs[].seen) for this job: what the controller last saw of the
            job's files. A long poll answers at once when the files changed since then, also when they changed between
            two polls; without it the poll waits for a change after it began."
        type: str
  async_dir:
    description: Where the async jobs' results files are (the shell's C(async_dir); the action passes it).
    type: path
    required: true
  cleanup:
    description: Remove the results file of a finished job once it was read, as M(ansible.builtin.async_status) with
      C(mode=cleanup) does.
    type: bool
    default: true
  wait:
    description:
      - Seconds to wait on the host for something to happen before answering (a long poll); it answers as soon as a job
        ends or a progress file changes, at the latest after O(wait) seconds. V(0) answers at once.
      - One round trip per event instead of one per fixed interval, and no interval's delay after a stage ends.
    type: float
    default: 0.0
extends_documentation_fragment:
  - specdec.bench.attributes
attributes:
  check_mode:
    support: full
    details: [It reads and renews leases in check mode too; the jobs it reads were started by a real run.]
  diff_mode:
    support: none
notes:
  - A results file that cannot be parsed yet is a job still running (the wrapper writes it atomically, so this happens
    only before the first write).
"""

EXAMPLES = r"""
- name: Read the stages in flight
  specdec.bench.stage_progress:
    jobs:
      - {jid: "j1234.5678", progress_file: /root/bench_results/c/tp1-autoregressive/progress.json,
         lease_file: /root/bench_results/c/tp1-autoregressive/.lease}
    async_dir: /root/.ansible_async
"""

RETURN = r"""
jobs:
  description: One entry per job, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    jid:
      description: The job id.
      type: str
    found:
      description: Whether the job's results file exists (false for a job that never started or was cleaned up).
      type: bool
    finished:
      description: Whether the job ended (its result is there).
      type: bool
    result:
      description: The job's result when it finished (the module's own result, or the async wrapper's failure), else null.
      type: dict
    progress:
      description: The stage's progress file as JSON, or null when it is missing or not JSON yet.
      type: dict
    seen:
      description: The identity and modification time of the job's results file and progress file as read for this
        answer; pass it back as O(jobs[].seen) in the next poll.
      type: str
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.specdec.bench.plugins.module_utils._lease import renew

# how often a long poll looks at the files
TICK_S = 0.02


def read_json(path):
    """The JSON document at path, or None when it is missing or not (yet) JSON."""
    try:
        with open(path, encoding='utf-8') as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def _mtime(path):
    """The file's identity and modification time: inode, mtime (ns) and size. Both files are replaced atomically (a new
    inode per write), so two writes within one tick of the kernel's coarse file clock still differ."""
    try:
        st = os.stat(path)
    except (OSError, TypeError):
        return None
    return '%d-%d-%d' % (st.st_ino, st.st_mtime_ns, st.st_size)


def stamp(async_dir, job):
    """What a long poll watches of one job: its results file and its progress file (_mtime), as a string."""
    return '%s:%s' % (_mtime(os.path.join(async_dir, job['jid'])), _mtime(job.get('progress_file')))


def snapshot(async_dir, jobs):
    return [stamp(async_dir, job) for job in jobs]


def wait_for_change(async_dir, jobs, seconds, clock=time.monotonic, sleep=time.sleep):
    """Return as soon as a watched file changes, at the latest after `seconds`: changes since each job's `seen` (what the
    controller saw in the previous answer), or, for a job without one, since the poll began. Without `seen`, a stage
    that wrote its last progress and then its result between two polls would be seen only at the poll's end."""
    deadline = clock() + seconds
    now = snapshot(async_dir, jobs)
    before = [job.get('seen') or current for job, current in zip(jobs, now)]
    if now != before:
        return True
    while clock() < deadline:
        sleep(min(TICK_S, max(0.0, deadline - clock())))
        if snapshot(async_dir, jobs) != before:
            return True
    return False


def finished_result(path):
    """The job's result when it ended, else None: as async_status, the wrapper's first write has `started`, the
    module's result (or the wrapper's failure) does not."""
    data = read_json(path)
    return data if isinstance(data, dict) and ('started' not in data or bool(data.get('finished'))) else None


def job_state(async_dir, job, cleanup):
    path = os.path.join(async_dir, job['jid'])
    seen = stamp(async_dir, job)  # before reading: a write after this is news to the next poll
    found = os.path.exists(path)
    data = finished_result(path) if found else None
    finished = data is not None
    if found and finished and cleanup:
        try:
            os.unlink(path)
        except OSError:
            pass
    return {
        'jid': job['jid'],
        'found': found,
        'finished': finished,
        'result': data if finished else None,
        'progress': read_json(job['progress_file']) if job.get('progress_file') else None,
        'seen': seen,
    }


def main():
    module = AnsibleModule(
        argument_spec=dict(
            jobs=dict(type='list', elements='dict', required=True, options=dict(
                jid=dict(type='str', required=True),
                progress_file=dict(type='path'),
                lease_file=dict(type='path'),
                seen=dict(type='str'),
            )),
            async_dir=dict(type='path', required=True),
            cleanup=dict(type='bool', default=True),
            wait=dict(type='float', default=0.0),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if not 0 <= params['wait'] <= 600:
        module.fail_json(msg='wait is %s; allowed: 0 to 600 seconds' % params['wait'])
    for job in params['jobs']:
        # only a stage still in flight: a finished one's folder gets no lease file
        if job.get('lease_file') and finished_result(os.path.join(params['async_dir'], job['jid'])) is None:
            renew(job['lease_file'])
    if params['wait']:
        wait_for_change(params['async_dir'], params['jobs'], params['wait'])
    module.exit_json(changed=False, jobs=[job_state(params['async_dir'], job, params['cleanup']) for job in params['jobs']])


if __name__ == '__main__':
    main()
