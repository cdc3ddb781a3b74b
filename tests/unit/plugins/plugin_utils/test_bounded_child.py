# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""plugin_utils/bounded_child.py: work in a forked child, its result back, and each bound a ChildError saying which."""

from __future__ import annotations

import os
import time

import pytest

from ansible_collections.specdec.bench.plugins.plugin_utils import bounded_child
from ansible_collections.specdec.bench.plugins.plugin_utils.bounded_child import ChildError


def spin():
    while True:
        pass


def test_the_result_comes_back_from_another_process_however_large():
    assert bounded_child.run(lambda: str(os.getpid()).encode(), 10) != str(os.getpid()).encode()
    big = os.urandom(3 << 20)
    assert bounded_child.run(lambda: big, 10) == big
    assert bounded_child.run(lambda: b'', 10) == b''


def test_an_exception_in_the_work_names_its_class_and_message():
    def fail():
        raise ValueError('no good')
    with pytest.raises(ChildError, match='^ValueError: no good$') as error:
        bounded_child.run(fail, 10)
    assert (error.value.reason, error.value.kind, error.value.detail) == ('exception', 'ValueError', 'no good')
    with pytest.raises(ChildError, match='^TypeError: work\\(\\) returned str, not bytes$'):
        bounded_child.run(lambda: 'text', 10)


@pytest.mark.parametrize(('bounds', 'reason', 'message'), [
    ({'deadline': 0.5, 'cpu_seconds': 30}, 'deadline', '^took longer than 0.5 s$'),
    ({'deadline': 20, 'cpu_seconds': 1}, 'cpu', '^used more than 1 s of CPU$'),
])
def test_a_busy_child_ends_at_its_deadline_or_its_cpu_bound(bounds, reason, message):
    started = time.monotonic()
    with pytest.raises(ChildError, match=message) as error:
        bounded_child.run(spin, **bounds)
    assert error.value.reason == reason
    assert time.monotonic() - started < min(bounds['deadline'], bounds['cpu_seconds']) + 3


def test_memory_past_the_bound_and_output_past_max_bytes_are_refused():
    with pytest.raises(ChildError, match='^needed more than 64 MiB of memory$') as error:
        bounded_child.run(lambda: b'x' * (256 << 20), 10, memory_bytes=64 << 20)
    assert error.value.reason == 'memory'
    with pytest.raises(ChildError, match='^returned more than 1000 bytes$'):
        bounded_child.run(lambda: b'x' * 5000, 10, max_bytes=1000)
    assert bounded_child.run(lambda: b'x' * 1000, 10, max_bytes=1000) == b'x' * 1000


def test_a_child_that_dies_says_how():
    with pytest.raises(ChildError, match=r'^ended without a result \(killed by SIGKILL\)$') as error:
        bounded_child.run(lambda: os.kill(os.getpid(), 9), 10)
    assert error.value.reason == 'died'
