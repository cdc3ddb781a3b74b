# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark-only callback: one JSON line per task result (host, task name, wall-clock end), to TASK_CLOCK_FILE.

Enabled by tests/perf/bench_campaign.py only (ANSIBLE_CALLBACK_PLUGINS + ANSIBLE_CALLBACKS_ENABLED); not part of the
collection.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: task_clock
type: aggregate
short_description: Write when each task ended on each host, for the campaign benchmark
description:
  - Appends C({host, task, status, end}) per task result to the file named by E(TASK_CLOCK_FILE).
"""

import json
import os
import time

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'task_clock'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._path = os.environ.get('TASK_CLOCK_FILE')

    def _write(self, result, status):
        if not self._path:
            return
        record = {'host': result._host.get_name(), 'task': result._task.name, 'status': status, 'end': time.time()}
        with open(self._path, 'a', encoding='utf-8') as handle:
            handle.write(json.dumps(record) + '\n')

    def v2_runner_on_ok(self, result):
        self._write(result, 'ok')

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._write(result, 'failed')

    def v2_runner_on_skipped(self, result):
        self._write(result, 'skipped')
