# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""CPU pinning below the plan: the cpulist parser and the host's online CPUs and nodes (_host_probe), the
supervisor's definition (_service.check_definition) and a real process pinned by SUPERVISOR_SCRIPT.

Every wait has a deadline; nothing is timed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from ansible_collections.specdec.bench.plugins.module_utils import _supervisor as supervisor
from ansible_collections.specdec.bench.plugins.module_utils._host_probe import format_cpu_list, online_facts, parse_cpu_list
from ansible_collections.specdec.bench.plugins.module_utils._service import check_definition
from testhelpers import wait_until  # noqa: E402  pylint: disable=wrong-import-position,import-error

DEADLINE_S = 15.0
SERVICE = 'specdec-pin-tp1-autoregressive.service'


@pytest.mark.parametrize('text, numbers', [
    ('0-47,96-143', list(range(48)) + list(range(96, 144))),
    ('0-1\n', [0, 1]),
    ('3,1,2', [1, 2, 3]),
    ('0 2-3', [0, 2, 3]),
    ('7', [7]),
    ('', []),
    (None, []),
])
def test_a_cpulist_parses(text, numbers):
    assert parse_cpu_list(text) == numbers


@pytest.mark.parametrize('text', ['N/A', '0-', '-3', '3-1', '0,,x', '1.5'])
def test_a_malformed_cpulist_names_its_item(text):
    with pytest.raises(ValueError, match='cpu list'):
        parse_cpu_list(text)


@pytest.mark.parametrize('numbers, text', [
    ([0, 1, 2, 5], '0-2,5'),
    (range(192), '0-191'),
    ([144, 0, 1, 143], '0-1,143-144'),
    ([4, 4, 6], '4,6'),
    ([], ''),
])
def test_a_cpulist_formats_runs_as_ranges(numbers, text):
    assert format_cpu_list(numbers) == text
    assert parse_cpu_list(text) == sorted(set(numbers))


def test_online_facts_from_sysfs():
    assert online_facts('0-191\n', '0-1\n', range(192)) == {'online': '0-191', 'allowed': '0-191', 'numa_nodes': '0-1'}
    # a container's cpuset: the kernel's list stays the host's, the allowed ones are fewer
    assert online_facts('0-191\n', '0-1\n', [4, 5, 6]) == {'online': '0-191', 'allowed': '4-6', 'numa_nodes': '0-1'}


def test_online_facts_without_sysfs():
    # no cpu/online: the allowed CPUs; no node/online (a kernel without NUMA): one node, 0
    assert online_facts(None, None, [0, 1]) == {'online': '0-1', 'allowed': '0-1', 'numa_nodes': '0'}
    assert online_facts('garbage', '', None) == {'online': None, 'allowed': None, 'numa_nodes': '0'}


def test_online_facts_of_this_machine():
    with open('/sys/devices/system/cpu/online', encoding='utf-8') as handle:
        online = handle.read()
    facts = online_facts(online, None, os.sched_getaffinity(0))
    assert set(parse_cpu_list(facts['allowed'])) == os.sched_getaffinity(0)
    assert set(parse_cpu_list(facts['allowed'])) <= set(parse_cpu_list(facts['online']))


# --- the supervisor's definition ------------------------------------------------------------------------------------

DEFINITION = {'argv': ['/usr/bin/python3', '-m', 'sglang.launch_server'], 'env': {}, 'cwd': '/'}


@pytest.mark.parametrize('given, kept', [('0-47,96-143', '0-47,96-143'), ('1,0', '0-1'), ([3, 1, 2], '1-3')])
def test_a_definition_keeps_its_cpus_as_a_cpulist(given, kept):
    assert check_definition(dict(DEFINITION, cpu_affinity=given))['cpu_affinity'] == kept


@pytest.mark.parametrize('given', [None, '', []])
def test_a_definition_without_cpus_has_no_key(given):
    """As a definition written before pinning existed: an unpinned stage's definition does not change."""
    assert 'cpu_affinity' not in check_definition(dict(DEFINITION, cpu_affinity=given))
    assert check_definition(dict(DEFINITION, cpu_affinity=given)) == check_definition(DEFINITION)


@pytest.mark.parametrize('given', ['N/A', 'all', [True], [-1], 3, {'cpus': '0'}])
def test_a_definition_refuses_what_is_not_a_cpulist(given):
    with pytest.raises(ValueError, match=r'definition\.cpu_affinity is .*; allowed: a cpulist'):
        check_definition(dict(DEFINITION, cpu_affinity=given))


# --- a real process under SUPERVISOR_SCRIPT -------------------------------------------------------------------------

def status_field(pid, name):
    with open('/proc/%d/status' % pid, encoding='utf-8') as handle:
        for line in handle:
            if line.startswith(name + ':'):
                return line.split(':', 1)[1].strip()
    raise AssertionError('no %s in /proc/%d/status' % (name, pid))


@pytest.fixture(name='supervise')
def supervise_fixture(tmp_path):
    """Start SUPERVISOR_SCRIPT as the module does on a definition checked by check_definition; kills what it left."""
    started = []

    def start(cpu_affinity):
        folder = tmp_path / 'services' / SERVICE
        folder.mkdir(parents=True)
        definition = check_definition({'argv': [sys.executable, '-c', 'import time; time.sleep(600)'], 'env': {},
                                       'cwd': str(tmp_path), 'cpu_affinity': cpu_affinity})
        (folder / 'service.json').write_text(json.dumps(dict(definition, name=SERVICE)))
        process = subprocess.Popen(  # pylint: disable=consider-using-with
            [sys.executable, '-c', supervisor.SUPERVISOR_SCRIPT, str(folder)], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        started.append((folder, process))
        return folder

    yield start
    for folder, process in started:
        run = supervisor.read_json(str(folder / 'run.json'))
        if run:  # never leave a process behind
            supervisor.signal_group(run, signal.SIGKILL)
        if process.poll() is None:
            process.kill()
        process.wait(DEADLINE_S)


def test_the_supervised_program_runs_on_its_cpus(supervise):
    mine = sorted(os.sched_getaffinity(0))
    wanted = mine[-1:]  # one CPU this test may use: the program runs there only
    folder = supervise(format_cpu_list(wanted))
    run = wait_until(lambda: supervisor.read_json(str(folder / 'run.json')), 'run.json')
    assert run['exec_error'] is None
    assert status_field(run['pid'], 'Cpus_allowed_list') == format_cpu_list(wanted)
    assert os.sched_getaffinity(run['pid']) == set(wanted)
    # the supervisor itself is not pinned
    assert os.sched_getaffinity(run['supervisor_pid']) == set(mine)


def test_without_cpus_the_program_runs_where_the_supervisor_may(supervise):
    folder = supervise(None)
    run = wait_until(lambda: supervisor.read_json(str(folder / 'run.json')), 'run.json')
    assert os.sched_getaffinity(run['pid']) == os.sched_getaffinity(0)


def test_cpus_the_host_does_not_have_fail_the_start_with_the_reason(supervise):
    folder = supervise('4000-4001')  # no such CPUs: sched_setaffinity refuses, as systemd's CPUAffinity= would fail
    ended = wait_until(lambda: supervisor.read_json(str(folder / 'exit.json')), 'exit.json')
    assert ended['exit_code'] == 127 and ended['error'].startswith('OSError: ')
    assert supervisor.status(str(folder))['state'] == 'failed'
