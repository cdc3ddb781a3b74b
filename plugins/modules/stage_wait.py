#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: stage_wait
short_description: Wait for stages started with async, printing each one's progress as it happens
version_added: 0.4.0
description:
  - Waits until every M(specdec.bench.stage_run) job of a wave has ended, and returns each stage's recorded status.
  - Each poll is one round trip for the whole wave (M(specdec.bench.stage_progress)); it renews each stage's lease,
    waits on the host until a job ends or a progress file changes (at most O(poll) seconds), and returns the jobs'
    results and progress. A stage whose lease is not renewed for its
    O(specdec.bench.stage_run#module:lease_timeout) stops itself and is recorded failed, so an interrupted campaign does
    not leave servers measuring.
  - "Prints, while it waits, one line per event: C([host] <stage>: server started, loading), C(ready after <s> s),
    and one line per finished harness run with its output throughput and acceptance length."
  - This is an action, it runs on the controller.
author:
  - specdec.bench developers (!UNKNOWN)
options:
  jobs:
    description:
      - The registered results of the loop that started M(specdec.bench.stage_run) with C(async) and C(poll=0) (its
        RV(ignore:results)); each has C(ansible_job_id) and, as C(item), the stage_run options (C(status.stage),
        C(progress_file), C(lease_file)).
      - A result without a job id (the start itself failed) is returned at once with its message.
    type: list
    elements: dict
    required: true
  poll:
    description:
      - The longest a poll waits on the host for something to happen (a job ending, a progress file changing) before it
        answers; it answers as soon as something does. Also how often leases are renewed at least.
    type: float
    default: 5.0
  timeout:
    description: Seconds to wait at most; 0 waits until every job ends (each job's own C(async) limit still applies).
    type: float
    default: 0.0
  missing_after:
    description: Seconds after which a job whose results file never appeared is given up as not started.
    type: float
    default: 60.0
  keeper:
    description:
      - The wave's lease keeper (RV(specdec.bench.stage_lease#module:keeper) of M(specdec.bench.stage_lease) with
        C(state=kept)), released when the wait ends, however it ends.
    type: dict
extends_documentation_fragment:
  - specdec.bench.attributes
attributes:
  check_mode:
    support: full
    details: [It only reads; in check mode nothing is started, so there is nothing to wait for.]
  diff_mode:
    support: none
seealso:
  - module: specdec.bench.stage_run
  - module: specdec.bench.stage_progress
  - module: specdec.bench.stage_lease
"""

EXAMPLES = r"""
- name: Start the stages of the wave
  specdec.bench.stage_run:
    dir: "{{ item.dir }}"
    unit: "{{ item.unit }}"
    port: "{{ item.port }}"
    runs: "{{ item.runs }}"
    status: "{{ item.status }}"
    progress_file: "{{ item.progress_file }}"
    lease_file: "{{ item.lease_file }}"
    lease_timeout: 120
  loop: "{{ wave_args }}"
  async: 86400
  poll: 0
  register: started

- name: Wait for the stages
  specdec.bench.stage_wait:
    jobs: "{{ started.results }}"
  register: waited
"""

RETURN = r"""
stages:
  description: One entry per job, in the order of O(jobs).
  returned: always
  type: list
  elements: dict
  contains:
    stage:
      description: The stage id.
      type: str
    jid:
      description: The async job id; null when the stage was not started.
      type: str
    status:
      description: The status the stage recorded (M(specdec.bench.stage_run)'s RV(specdec.bench.stage_run#module:status)),
        or null when the job ended without one (it was killed, or never started).
      type: dict
    msg:
      description: Why there is no status; null when there is one.
      type: str
    result:
      description: The job's whole result.
      type: dict
polls:
  description: How many round trips the wait took.
  returned: always
  type: int
waited_s:
  description: Seconds waited.
  returned: always
  type: float
lease_keeper:
  description: What the released keeper did (renewals, failures, the longest gap in seconds between two renewals, why
    it stopped); null without O(keeper).
  returned: always
  type: dict
"""
