# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""campaign_lock: one campaign per host, the holder named when refused, stale locks recognized, never another's lock
released; and the action plugin's test of whether a holder on this controller is gone, with the controller named by
its machine-id, boot id and pid namespace rather than its hostname."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from unittest import mock

import pytest
from ansible.playbook.task import Task

from ansible_collections.specdec.bench.plugins.action import campaign_lock as action
from ansible_collections.specdec.bench.plugins.modules import campaign_lock

MODULE = os.path.abspath(campaign_lock.__file__.replace('.pyc', '.py'))


def holder(name, pid=4242):
    return {'id': 'ctl-%s:%d:777' % (name, pid), 'controller': 'ctl-%s' % name, 'pid': pid, 'user': 'root',
            'playbook': 'Run a benchmark campaign'}


@pytest.fixture(name="paths")
def lock_paths(tmp_path, monkeypatch):
    boot = tmp_path / 'boot_id'
    boot.write_text('boot-1\n')
    monkeypatch.setattr(campaign_lock, 'BOOT_ID', str(boot))
    return {'lock': str(tmp_path / 'specdec' / 'campaign.lock'), 'boot': boot}


def take(run_module, paths, who, **extra):
    args = dict(path=paths['lock'], campaign=extra.pop('campaign', 'qwen36-ct200'), holder=who)
    args.update(extra)
    return run_module(campaign_lock, args)


def on_disk(paths):
    with open(paths['lock'], encoding='utf-8') as handle:
        return json.load(handle)


def test_a_free_lock_is_taken_and_names_its_holder(run_module, paths):
    result = take(run_module, paths, holder('a'))
    assert result['exit_code'] == 0 and result['changed'] and result['acquired']
    lock = on_disk(paths)
    assert lock['campaign'] == 'qwen36-ct200' and lock['holder'] == holder('a') and lock['boot_id'] == 'boot-1'
    assert lock == result['lock'] and result['previous'] is None
    assert oct(os.stat(paths['lock']).st_mode & 0o777) == '0o644'


def test_the_same_run_takes_it_again_and_renews_the_heartbeat(run_module, paths):
    first = take(run_module, paths, holder('a'))
    old = dict(first['lock'], heartbeat_at=first['lock']['heartbeat_at'] - 100)
    with open(paths['lock'], 'w', encoding='utf-8') as handle:
        json.dump(old, handle)
    again = take(run_module, paths, holder('a'))
    assert again['exit_code'] == 0 and again['acquired'] and again['changed']  # the heartbeat is written
    assert on_disk(paths)['heartbeat_at'] >= first['lock']['heartbeat_at']
    assert on_disk(paths)['acquired_at'] == first['lock']['acquired_at']


def test_the_same_run_cannot_switch_campaign_under_the_lock(run_module, paths):
    take(run_module, paths, holder('a'))
    result = take(run_module, paths, holder('a'), campaign='other')
    assert result['exit_code'] == 1 and 'not other' in result['msg']


def test_another_campaign_is_refused_and_told_who_holds_the_host(run_module, paths):
    take(run_module, paths, holder('a'))
    before = on_disk(paths)
    result = take(run_module, paths, holder('b', pid=99), campaign='other')
    assert result['exit_code'] == 1 and result['failed']
    for part in ('locked by campaign qwen36-ct200', 'root@ctl-a', 'ansible-playbook pid 4242', 'campaign_lock_break'):
        assert part in result['msg']
    assert result['holder'] == holder('a')
    assert on_disk(paths) == before


def test_a_lock_from_before_a_reboot_is_stale(run_module, paths):
    take(run_module, paths, holder('a'))
    paths['boot'].write_text('boot-2\n')
    result = take(run_module, paths, holder('b'), campaign='other')
    assert result['exit_code'] == 0 and result['acquired'] and result['changed']
    assert result['stale_reason'] == 'the host rebooted since it was taken'
    assert result['previous']['holder'] == holder('a') and on_disk(paths)['holder'] == holder('b')


def test_takeover_replaces_exactly_the_named_holder(run_module, paths):
    take(run_module, paths, holder('a'))
    wrong = take(run_module, paths, holder('b'), takeover='ctl-x:1:1')
    assert wrong['exit_code'] == 1 and on_disk(paths)['holder'] == holder('a')
    right = take(run_module, paths, holder('b'), takeover=holder('a')['id'], takeover_reason='its process is gone')
    assert right['exit_code'] == 0 and right['stale_reason'] == 'its process is gone'
    assert on_disk(paths)['holder'] == holder('b')


@pytest.mark.parametrize(('age', 'taken'), [(30, False), (7200, True)])
def test_a_lock_without_heartbeat_for_stale_after_seconds_is_stale(run_module, paths, age, taken):
    take(run_module, paths, holder('a'))
    lock = on_disk(paths)
    lock['heartbeat_at'] -= age
    with open(paths['lock'], 'w', encoding='utf-8') as handle:
        json.dump(lock, handle)
    result = take(run_module, paths, holder('b'), stale_after=3600)
    assert (result['exit_code'] == 0) is taken
    if taken:
        assert result['stale_reason'].startswith('no heartbeat for 72')


def test_break_lock_takes_it_whoever_holds_it(run_module, paths):
    take(run_module, paths, holder('a'))
    result = take(run_module, paths, holder('b'), break_lock=True)
    assert result['exit_code'] == 0 and result['stale_reason'] == 'break_lock was set'


def test_a_lock_file_that_is_not_a_lock_is_replaced(run_module, paths):
    os.makedirs(os.path.dirname(paths['lock']))
    with open(paths['lock'], 'w', encoding='utf-8') as handle:
        handle.write('garbage{')
    result = take(run_module, paths, holder('a'))
    assert result['exit_code'] == 0 and 'not a lock' in result['stale_reason']


def test_release_removes_only_the_holders_own_lock(run_module, paths):
    take(run_module, paths, holder('a'))
    other = run_module(campaign_lock, dict(path=paths['lock'], state='unlocked', holder=holder('b')))
    assert other['exit_code'] == 0 and not other['changed'] and not other['acquired']
    assert 'held by campaign qwen36-ct200' in other['warning_texts'][0] and os.path.exists(paths['lock'])
    mine = run_module(campaign_lock, dict(path=paths['lock'], state='unlocked', holder=holder('a')))
    assert mine['exit_code'] == 0 and mine['changed'] and not os.path.exists(paths['lock'])
    again = run_module(campaign_lock, dict(path=paths['lock'], state='unlocked', holder=holder('a')))
    assert again['exit_code'] == 0 and not again['changed']


def test_check_mode_reports_and_writes_nothing(run_module, paths):
    result = run_module(campaign_lock, dict(path=paths['lock'], campaign='c', holder=holder('a'), _ansible_check_mode=True))
    assert result['exit_code'] == 0 and result['changed'] and result['acquired']
    assert not os.path.exists(paths['lock']) and not os.path.exists(os.path.dirname(paths['lock']))
    take(run_module, paths, holder('a'))
    refused = run_module(campaign_lock, dict(path=paths['lock'], campaign='c', holder=holder('b'), _ansible_check_mode=True))
    assert refused['exit_code'] == 1 and 'locked by campaign' in refused['msg']


@pytest.mark.parametrize(('args', 'field'), [
    (dict(holder={'controller': 'x'}), 'holder.id'),
    (dict(holder={'id': 'x'}), 'campaign is required'),
    (dict(holder={'id': 'x'}, campaign='c', stale_after=-1), 'stale_after must be 0'),
    (dict(holder={'id': 'x'}, campaign='c', state='held'), 'state'),
])
def test_bad_options_name_the_field(run_module, paths, args, field):
    result = run_module(campaign_lock, dict(path=paths['lock'], **args))
    assert result['exit_code'] == 1 and field in result['msg']
    assert not os.path.exists(paths['lock'])


def test_campaigns_starting_together_take_the_lock_once(tmp_path):
    """Eight real module processes race for one lock: the flock-guarded read-and-write lets exactly one win."""
    path = str(tmp_path / 'campaign.lock')
    procs = []
    for index in range(8):
        args = {'ANSIBLE_MODULE_ARGS': {'path': path, 'campaign': 'c%d' % index, 'holder': holder(str(index), index)}}
        procs.append(subprocess.Popen([sys.executable, MODULE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))))
        procs[-1].stdin.write(json.dumps(args).encode())
        procs[-1].stdin.close()
    results = [json.loads(proc.stdout.read()) for proc in procs]
    for proc in procs:
        proc.wait(timeout=30)
    winners = [r for r in results if not r.get('failed')]
    assert len(winners) == 1, results
    with open(path, encoding='utf-8') as handle:
        assert json.load(handle)['holder'] == winners[0]['lock']['holder']
    assert all('locked by campaign %s' % winners[0]['lock']['campaign'] in r['msg'] for r in results if r.get('failed'))


@pytest.fixture(name="controller")
def this_controller(tmp_path, monkeypatch):
    """This controller's machine-id and boot id, as files the test can change or remove."""
    machine = tmp_path / 'machine-id'
    machine.write_text('0123456789abcdef0123456789abcdef\n')
    boot = tmp_path / 'controller-boot_id'
    boot.write_text('controller-boot-1\n')
    monkeypatch.setattr(action, 'MACHINE_ID_PATHS', (str(machine), str(tmp_path / 'no-dbus-machine-id')), raising=False)
    monkeypatch.setattr(action, 'BOOT_ID', str(boot), raising=False)
    return {'machine': machine, 'boot': boot}


def dead_pid():
    """A pid and start time of a process that has ended."""
    proc = subprocess.Popen([sys.executable, '-c', 'pass'])
    start = action._proc_start(proc.pid)
    proc.wait()
    return proc.pid, start


def holder_here(pid, start):
    """A holder record as this controller writes it, for any pid."""
    host = socket.gethostname()
    identity = action.controller_id(host)
    return {'id': '%s:%d:%s:%s' % (host, pid, start, identity), 'controller': host, 'controller_id': identity,
            'pid': pid, 'start': start, 'user': 'root', 'playbook': 'Run a benchmark campaign'}


def put_lock(paths, who, heartbeat_age):
    """A lock on disk as another run left it, its last heartbeat heartbeat_age seconds ago."""
    now = time.time()
    os.makedirs(os.path.dirname(paths['lock']), exist_ok=True)
    lock = {'campaign': 'qwen36-ct200', 'holder': who, 'boot_id': 'boot-1', 'acquired_at': now - 600,
            'heartbeat_at': now - heartbeat_age}
    with open(paths['lock'], 'w', encoding='utf-8') as handle:
        json.dump(lock, handle)
    return on_disk(paths)


def run_action(run_module, **args):
    """The action plugin as a task runs it, its module calls answered by the real module in this process."""
    task = Task()
    task.args = args
    plugin = action.ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=None,
                                 shared_loader_obj=None)
    calls = []

    def execute(module_name, module_args, task_vars):
        assert module_name == 'specdec.bench.campaign_lock'
        calls.append(dict(module_args))
        return run_module(campaign_lock, module_args)

    with mock.patch.object(plugin, '_execute_module', side_effect=execute):
        result = plugin.run(task_vars={'ansible_play_name': 'Run a benchmark campaign'})
    return result, calls


SAME_HOSTNAME_FORMATS = {
    # another controller with this controller's hostname, as this version writes its holder
    'other controller': lambda host: {'id': '%s:31337:4242:feedfacecafebeef-other-boot-4026531836' % host,
                                      'controller': host, 'controller_id': 'feedfacecafebeef-other-boot-4026531836',
                                      'pid': 31337, 'start': '4242', 'user': 'root', 'playbook': 'p'},
    # a lock of an older specdec.bench: hostname:pid:start, no controller id
    'old format': lambda host: {'id': '%s:31337:4242' % host, 'controller': host, 'pid': 31337, 'user': 'root',
                                'playbook': 'p'},
}


@pytest.mark.parametrize('stale_after', [0, 3600])
@pytest.mark.parametrize('kind', sorted(SAME_HOSTNAME_FORMATS))
def test_a_live_lock_of_another_controller_with_this_hostname_is_not_taken(run_module, paths, controller, kind, stale_after):
    """The reported case: pid 31337 on a controller named like this one, heartbeat 5 s old, was taken as gone."""
    before = put_lock(paths, SAME_HOSTNAME_FORMATS[kind](socket.gethostname()), heartbeat_age=5)
    result, calls = run_action(run_module, path=paths['lock'], campaign='other', stale_after=stale_after)
    assert result['failed'] and not result['acquired'] and len(calls) == 1 and 'takeover' not in calls[0]
    assert on_disk(paths) == before
    assert 'campaign_lock_break=true' in result['msg'] and 'ansible-playbook pid 31337' in result['msg']
    assert ('names no controller id' in result['msg']) is (kind == 'old format')
    if stale_after:
        assert 'heartbeat is 3600 s old' in result['msg']
    else:
        assert 'campaign_lock_stale_after is 0: a lock never expires by age' in result['msg']


@pytest.mark.parametrize('kind', sorted(SAME_HOSTNAME_FORMATS))
def test_a_lock_of_another_controller_ends_with_its_heartbeat(run_module, paths, controller, kind):
    put_lock(paths, SAME_HOSTNAME_FORMATS[kind](socket.gethostname()), heartbeat_age=7200)
    result, calls = run_action(run_module, path=paths['lock'], campaign='other', stale_after=3600)
    assert result['acquired'] and not result.get('failed') and len(calls) == 1
    assert result['stale_reason'].startswith('no heartbeat for 72')
    assert on_disk(paths)['holder']['controller_id'] == action.controller_id(socket.gethostname())


def test_a_dead_run_of_this_controller_is_taken_over(run_module, paths, controller):
    pid, start = dead_pid()
    put_lock(paths, holder_here(pid, start), heartbeat_age=5)
    result, calls = run_action(run_module, path=paths['lock'], campaign='other')
    assert result['acquired'] and result['changed'] and len(calls) == 2
    assert calls[1]['takeover'] == holder_here(pid, start)['id']
    assert result['stale_reason'] == 'its ansible-playbook (pid %d) on this controller is gone' % pid
    mine = on_disk(paths)['holder']
    assert mine['id'] == calls[0]['holder']['id'] and mine['pid'] != pid


def test_the_same_run_renews_and_releases_its_own_lock(run_module, paths, controller):
    taken, _calls = run_action(run_module, path=paths['lock'], campaign='c')
    again, calls = run_action(run_module, path=paths['lock'], campaign='c')
    assert again['acquired'] and again['changed'] and len(calls) == 1
    released, _calls = run_action(run_module, path=paths['lock'], state='unlocked')
    assert released['changed'] and not os.path.exists(paths['lock']) and taken['lock']['holder'] == again['lock']['holder']


def test_the_controller_id_is_machine_boot_and_pid_namespace_never_the_raw_machine_id(controller):
    host = socket.gethostname()
    first = action.controller_id(host)
    assert first == action.controller_id(host) and '0123456789abcdef' not in first
    assert 'controller-boot-1' in first and first.endswith('-' + os.readlink('/proc/self/ns/pid')[5:-1])
    controller['boot'].write_text('controller-boot-2\n')
    rebooted = action.controller_id(host)
    controller['machine'].write_text('fedcba9876543210fedcba9876543210\n')
    other_machine = action.controller_id(host)
    assert len({first, rebooted, other_machine}) == 3
    found = action.this_holder({})
    assert found['controller_id'] == other_machine and found['id'].endswith(':' + other_machine)
    assert found['start'] == action._proc_start(found['pid'])


def test_without_a_machine_id_the_hostname_stands_in(controller):
    controller['machine'].unlink()
    fallback = action.controller_id('ctl-a')
    assert fallback and fallback != action.controller_id('ctl-b') and 'controller-boot-1' in fallback


def test_a_controller_without_a_boot_id_judges_no_one_and_is_judged_by_no_one(controller):
    controller['boot'].unlink()
    found = action.this_holder({})
    assert found['controller_id'] is None
    assert found['id'] == '%s:%d:%s' % (found['controller'], found['pid'], found['start'])
    pid, start = dead_pid()
    dead = {'id': 'x', 'controller': found['controller'], 'controller_id': None, 'pid': pid, 'start': start}
    assert action.holder_gone(dead, found) is None


def test_a_live_holder_on_this_controller_is_not_gone(controller):
    me = os.getpid()
    here = action.this_holder({})
    assert action.holder_gone(holder_here(me, action._proc_start(me)), here) is None


def test_a_holder_whose_process_ended_or_whose_pid_was_reused_is_gone(controller):
    here = action.this_holder({})
    pid, start = dead_pid()
    assert action.holder_gone(holder_here(pid, start), here) == 'its ansible-playbook (pid %d) on this controller is gone' % pid
    assert action.holder_gone(holder_here(os.getpid(), '1'), here)


def test_a_holder_on_another_controller_is_never_judged_from_here(controller):
    here = action.this_holder({})
    pid, start = dead_pid()
    elsewhere = dict(holder_here(pid, start), controller_id='feedfacecafebeef-other-boot-4026531836')
    assert action.holder_gone(elsewhere, here) is None
    old_format = {'id': '%s:%d:%s' % (here['controller'], pid, start), 'controller': here['controller'], 'pid': pid}
    assert action.holder_gone(old_format, here) is None
    assert action.holder_gone({'id': None}, here) is None
    assert action.holder_gone(dict(holder_here(pid, start), start=None), here) is None


def test_the_holder_is_this_runs_playbook_process():
    found = action.this_holder({'ansible_play_name': 'Run a benchmark campaign'})
    assert found['controller'] == socket.gethostname() and found['playbook'] == 'Run a benchmark campaign'
    assert found['id'].startswith('%s:%d:%s' % (found['controller'], found['pid'], action._proc_start(found['pid'])))
    assert action._proc_start(found['pid']) is not None
