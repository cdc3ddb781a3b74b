# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action for specdec.bench.campaign_lock: name this ansible-playbook run as the holder, and recognize a lock whose
holder ran on this controller and is gone.

Only the controller can tell whether the ansible-playbook process that took a lock still runs; the module on the host
cannot. So: try the module; when it refuses, and the holder's controller is this one and its process is gone (or its pid
now belongs to another process), try once more with `takeover` set to exactly that holder.
"""

from __future__ import annotations

import getpass
import os
import socket

from ansible.plugins.action import ActionBase

PLAYBOOK_COMMANDS = ('ansible-playbook', 'ansible')


def _proc_start(pid):
    """The start time of a process (clock ticks since boot, /proc/<pid>/stat field 22), or None when it is gone."""
    try:
        with open('/proc/%d/stat' % pid, encoding='ascii', errors='replace') as handle:
            stat = handle.read()
    except OSError:
        return None
    # the command name may hold spaces and parentheses: fields start after the last ')'
    fields = stat[stat.rfind(')') + 2:].split()
    return fields[19] if len(fields) > 19 else None


def _cmdline(pid):
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as handle:
            return [part.decode('utf-8', 'replace') for part in handle.read().split(b'\0') if part]
    except OSError:
        return []


def _parent(pid):
    try:
        with open('/proc/%d/stat' % pid, encoding='ascii', errors='replace') as handle:
            stat = handle.read()
        return int(stat[stat.rfind(')') + 2:].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def playbook_process():
    """The pid of this run's ansible-playbook: the first ancestor whose command is an Ansible entry point."""
    pid = os.getppid()
    seen = 0
    while pid > 1 and seen < 16:
        argv = _cmdline(pid)
        if any(os.path.basename(arg) in PLAYBOOK_COMMANDS for arg in argv[:2]):
            return pid
        pid, seen = _parent(pid), seen + 1
    return os.getppid()


def this_holder(task_vars):
    pid = playbook_process()
    controller = socket.gethostname()
    playbook = task_vars.get('ansible_play_name') or ''
    return {
        'id': '%s:%d:%s' % (controller, pid, _proc_start(pid)),
        'controller': controller,
        'pid': pid,
        'user': getpass.getuser(),
        'playbook': playbook,
    }


def holder_gone(holder, controller):
    """True when the holder ran on this controller and its process no longer runs (or its pid was reused)."""
    if not isinstance(holder, dict) or holder.get('controller') != controller:
        return False
    try:
        pid = int(holder.get('pid'))
        start = str(holder.get('id', '')).rsplit(':', 1)[1]
    except (TypeError, ValueError, IndexError):
        return False
    return _proc_start(pid) != start


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        args.setdefault('holder', this_holder(task_vars))
        result.update(self._execute_module(module_name='specdec.bench.campaign_lock', module_args=args, task_vars=task_vars))
        held_by = result.get('holder')
        if result.get('failed') and held_by and args.get('state', 'locked') == 'locked' \
                and holder_gone(held_by, args['holder']['controller']):
            args.update(takeover=held_by.get('id'),
                        takeover_reason='its ansible-playbook (pid %s) on this controller is gone' % held_by.get('pid'))
            result = super().run(tmp, task_vars)
            result.update(self._execute_module(module_name='specdec.bench.campaign_lock', module_args=args,
                                               task_vars=task_vars))
        return result
