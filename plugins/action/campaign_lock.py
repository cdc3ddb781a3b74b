# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action for specdec.bench.campaign_lock: name this ansible-playbook run as the holder, and recognize a lock whose
holder ran on this controller and is gone.

Only the controller can tell whether the ansible-playbook process that took a lock still runs; the module on the host
cannot. So: try the module; when it refuses, and the holder's controller is provably this one and its process is gone
(or its pid now belongs to another process), try once more with `takeover` set to exactly that holder.

A controller is named by its controller id, not its hostname (two controllers may share one): a keyed hash of its
machine-id, its boot id and its pid namespace. A holder with another controller id, or with none (a lock written by
an older specdec.bench, or by a controller that cannot read its boot id), is never judged from here: only its heartbeat
(`stale_after`) or `break_lock` ends it.
"""

from __future__ import annotations

import getpass
import hashlib
import hmac
import os
import socket

from ansible.plugins.action import ActionBase

PLAYBOOK_COMMANDS = ('ansible-playbook', 'ansible')
MACHINE_ID_PATHS = ('/etc/machine-id', '/var/lib/dbus/machine-id')
BOOT_ID = '/proc/sys/kernel/random/boot_id'
PID_NAMESPACE = '/proc/self/ns/pid'
# machine-id(5) asks that the id never be shown as it is; the lock file is readable by all on the host.
MACHINE_ID_KEY = b'specdec.bench campaign_lock controller'


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


def _first_line(path):
    try:
        with open(path, encoding='ascii', errors='replace') as handle:
            return handle.readline().strip() or None
    except OSError:
        return None


def controller_id(hostname):
    """This controller's id, `<machine>-<boot id>-<pid namespace>`, or None when its boot id cannot be read.

    The boot id (random per boot) is what makes it unique; the machine part is a keyed hash of the machine-id, or of
    the hostname where no machine-id can be read. The pid namespace tells apart containers that share one kernel, and
    often an image's machine-id, but not their pids. None means no pid of this controller can be checked, so it judges
    no holder gone, and no controller judges its own holders gone.
    """
    boot = _first_line(BOOT_ID)
    if not boot:
        return None
    machine = next((value for value in map(_first_line, MACHINE_ID_PATHS) if value), None)
    key = ('machine-id:%s' % machine) if machine else ('hostname:%s' % hostname)
    digest = hmac.new(MACHINE_ID_KEY, key.encode('utf-8', 'replace'), hashlib.sha256).hexdigest()[:16]
    try:
        namespace = os.readlink(PID_NAMESPACE).rsplit('[', 1)[-1].rstrip(']')
    except OSError:
        namespace = 'none'
    return '%s-%s-%s' % (digest, boot, namespace)


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
    start = _proc_start(pid)
    identity = controller_id(controller)
    holder_id = '%s:%d:%s' % (controller, pid, start)
    return {
        'id': holder_id if identity is None else '%s:%s' % (holder_id, identity),
        'controller': controller,
        'controller_id': identity,
        'pid': pid,
        'start': start,
        'user': getpass.getuser(),
        'playbook': task_vars.get('ansible_play_name') or '',
    }


def holder_gone(holder, me):
    """Why the holder's ansible-playbook is known to be gone, or None when it may still run.

    Only a holder with this controller's id is judged: its process is gone, or its pid now belongs to a process that
    started at another time. Any other holder (another controller, an old lock without a controller id, a controller
    that could not identify itself) may be alive, as far as this controller can tell.
    """
    if not isinstance(holder, dict) or not me.get('controller_id') or holder.get('controller_id') != me['controller_id']:
        return None
    try:
        pid = int(holder.get('pid'))
    except (TypeError, ValueError):
        return None
    start = holder.get('start')
    if start is None or _proc_start(pid) == str(start):
        return None
    return 'its ansible-playbook (pid %d) on this controller is gone' % pid


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        args.setdefault('holder', this_holder(task_vars))
        result.update(self._execute_module(module_name='specdec.bench.campaign_lock', module_args=args, task_vars=task_vars))
        held_by = result.get('holder')
        reason = holder_gone(held_by, args['holder']) if result.get('failed') and args.get('state', 'locked') == 'locked' else None
        if reason:
            args.update(takeover=held_by.get('id'), takeover_reason=reason)
            result = super().run(tmp, task_vars)
            result.update(self._execute_module(module_name='specdec.bench.campaign_lock', module_args=args,
                                               task_vars=task_vars))
        return result
