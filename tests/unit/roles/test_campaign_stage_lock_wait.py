# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign's wait for the stages of a killed run (roles/campaign/tasks/stages.yml), run for real with bash and
flock: it waits for any campaign's stage that still holds its lock (a lock taken over from another campaign leaves
that campaign's stages running), refuses a link planted at a lock's path, and gives up naming the lock."""

from __future__ import annotations

import fcntl
import os
import select
import shlex
import subprocess

import jinja2
import pytest
import yaml

from ansible_collections.specdec.bench.plugins.filter.stage import stage_lock_wait

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def wait_command(stages_dir, campaign, wait_s):
    with open(os.path.join(REPO, 'roles', 'campaign', 'tasks', 'stages.yml'), encoding='utf-8') as handle:
        tasks = yaml.safe_load(handle)
    task = next(t for t in tasks if t['name'] == 'Wait for the stages of an interrupted run to stop')
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters['quote'] = lambda value: shlex.quote(str(value))
    return env.from_string(task['ansible.builtin.shell']['cmd']).render(
        campaign_stages_dir=stages_dir, _campaign_id=campaign, _campaign_stage_lock_wait=wait_s)


def run(command, timeout=60):
    return subprocess.run(['/bin/bash', '-c', command], capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(name='held')
def hold(tmp_path):
    """A stage of another campaign still stopping: it holds its lock until released."""
    handles = []

    def take(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        handle = open(path, 'a+', encoding='utf-8')  # pylint: disable=consider-using-with
        fcntl.flock(handle, fcntl.LOCK_EX)
        handles.append(handle)
        return handle

    yield take
    for handle in handles:
        handle.close()


@pytest.mark.skipif(not os.path.exists('/usr/bin/flock'), reason='util-linux flock')
def test_another_campaigns_stage_still_stopping_is_waited_for(tmp_path, held):
    stages = tmp_path / 'stages'
    handle = held(str(stages / 'killed-campaign' / 'tp8-dflash-n16.lease.lock'))
    proc = subprocess.Popen(['/bin/bash', '-c', wait_command(str(stages), 'mine', 30)],  # pylint: disable=consider-using-with
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # it says whom it waits for, then waits: the stage ends only once that line is there
    ready, _w, _x = select.select([proc.stdout], [], [], 30)
    first = proc.stdout.readline() if ready else ''
    assert proc.poll() is None, 'it did not wait'
    handle.close()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert first.strip() == 'waited for %s' % (stages / 'killed-campaign' / 'tp8-dflash-n16.lease.lock'), (first, out)


@pytest.mark.skipif(not os.path.exists('/usr/bin/flock'), reason='util-linux flock')
def test_a_stage_that_outlasts_the_wait_is_named_and_a_link_refused(tmp_path, held):
    stages = tmp_path / 'stages'
    held(str(stages / 'other' / 's.lease.lock'))
    result = run(wait_command(str(stages), 'mine', 1))
    assert result.returncode == 1 and 'other/s.lease.lock is still held after 1 s' in result.stderr
    link = tmp_path / 'links' / 'mine' / 's.lease.lock'
    link.parent.mkdir(parents=True)
    target = tmp_path / 'target'
    target.write_text('x')
    link.symlink_to(target)
    result = run(wait_command(str(tmp_path / 'links'), 'mine', 1))
    assert result.returncode == 1 and 'is a symbolic link: refused' in result.stderr
    assert run(wait_command(str(tmp_path / 'empty'), 'mine', 1)).returncode == 0


def test_the_wait_covers_the_lease_the_servers_stop_and_the_record():
    assert stage_lock_wait(60, 60) == 151 and stage_lock_wait(0, 60) == 90 and stage_lock_wait('3', '90') == 124
