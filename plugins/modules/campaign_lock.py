#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: campaign_lock
short_description: Take or release the one benchmark campaign lock of a host
version_added: 0.1.0
description:
  - One campaign at a time may use a host's GPUs. The lock is a JSON file on the host naming its holder (the
    campaign, the controller, the C(ansible-playbook) process, the user) and the host's boot id.
  - O(state=locked) takes the lock when it is free, when the same holder already has it (a rerun within one
    C(ansible-playbook) run), or when the lock is stale. Otherwise it fails and names the holder.
  - A lock is stale when the host rebooted since it was taken (its boot id differs), when O(takeover) names its holder
    (the action plugin does that when the holder's C(ansible-playbook) process is gone from this controller), when
    its last heartbeat is older than O(stale_after) seconds, or when O(break_lock) is set.
  - The action plugin judges only holders with this controller's V(controller_id) (machine-id, boot id and pid
    namespace of the controller; not its hostname, which another controller may share). A holder on another
    controller, or one without a V(controller_id) (a lock taken by an older version of this module, or on a controller
    without a boot id), counts as alive until its heartbeat is older than O(stale_after) seconds; with O(stale_after=0)
    only O(break_lock) or a reboot of the host ends it. The refusal says so, and how to break the lock.
  - O(state=unlocked) removes the lock only when O(holder) holds it; another holder's lock is left alone.
  - C(changed) is true when the lock file is written or removed (taken, its heartbeat renewed, released) and false when
    it is not (another holder's lock left alone, no lock to release).
  - Reading and writing happen under an exclusive C(flock) on a guard file beside the lock, and the lock is written to
    a temporary file and renamed, so two campaigns starting together cannot both take it.
  - The action plugin of the same name fills O(holder) from the controller; run through it, a playbook never sets
    O(holder) itself.
author:
  - specdec.bench developers (!UNKNOWN)
options:
  path:
    description: The lock file. One per host, whatever the campaign.
    type: path
    default: /var/lib/specdec/campaign.lock
  state:
    description: V(locked) takes (or refreshes) the lock, V(unlocked) releases it.
    type: str
    choices: [locked, unlocked]
    default: locked
  campaign:
    description: The campaign id that takes the lock. Required with O(state=locked).
    type: str
  holder:
    description:
      - Who takes the lock. V(id) identifies one C(ansible-playbook) run. V(controller_id) names the controller
        (the action plugin's keyed hash of its machine-id, its boot id and its pid namespace; null when it has no boot
        id), V(start) the process start time of V(pid); a holder without V(controller_id) can never be proven gone.
        The other keys are kept for the message a refused campaign prints (V(controller), V(pid), V(user),
        V(playbook)).
    type: dict
    required: true
  stale_after:
    description:
      - Seconds after its last heartbeat when a lock counts as stale, whoever holds it.
      - V(0) never by age; then the lock of a run that died on another controller (or of an old lock without a
        controller id) stays until O(break_lock) is set or the host reboots.
    type: int
    default: 0
  takeover:
    description: The holder id of a lock known to be stale; that lock, and only that one, is replaced.
    type: str
  break_lock:
    description: Take the lock whoever holds it. For a run known dead on another controller.
    type: bool
    default: false
  takeover_reason:
    description: Why O(takeover) counts as stale, reported back as RV(stale_reason).
    type: str
extends_documentation_fragment:
  - specdec.bench.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reports whether the lock would be taken or refused; writes nothing.
  diff_mode:
    support: none
notes:
  - Requires Python 3.9 or later on the host; standard library only.
"""

EXAMPLES = r"""
- name: Take the host's campaign lock
  specdec.bench.campaign_lock:
    campaign: qwen36-ct200

- name: Release it
  specdec.bench.campaign_lock:
    state: unlocked
"""

RETURN = r"""
acquired:
  description: Whether O(holder) holds the lock now (V(locked)) or held it until now (V(unlocked)).
  returned: always
  type: bool
  sample: true
lock:
  description: The lock as it is now (V(locked)) or as it was (V(unlocked)); null when there was none.
  returned: always
  type: dict
  sample: {campaign: qwen36-ct200, holder: {id: "ctl:4242:81233:9b1e04c2a7d35f60-0f4c...-4026531836", controller: ctl,
                                             controller_id: 9b1e04c2a7d35f60-0f4c...-4026531836, pid: 4242,
                                             start: "81233", user: root},
           boot_id: 0f4c..., acquired_at: 1764684000.5, heartbeat_at: 1764684000.5}
previous:
  description: The stale lock that was replaced (RV(stale_reason) says why); null otherwise.
  returned: always
  type: dict
stale_reason:
  description: Why the previous lock counted as stale.
  returned: when a stale lock was replaced
  type: str
  sample: the host rebooted since it was taken
holder:
  description: The lock's holder when the lock was refused.
  returned: failure
  type: dict
"""

import fcntl
import json
import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.specdec.bench.plugins.module_utils._common import atomic_write

BOOT_ID = '/proc/sys/kernel/random/boot_id'


def boot_id():
    try:
        with open(BOOT_ID, encoding='ascii') as handle:
            return handle.read().strip()
    except OSError:
        return None


def read_lock(path):
    """The lock as a dict, None when there is none; a lock that is not JSON counts as a broken lock (None holder)."""
    try:
        with open(path, encoding='utf-8') as handle:
            text = handle.read()
    except FileNotFoundError:
        return None
    try:
        lock = json.loads(text)
    except ValueError:
        return {'campaign': None, 'holder': {'id': None}, 'broken': text[:200]}
    return lock if isinstance(lock, dict) else {'campaign': None, 'holder': {'id': None}, 'broken': text[:200]}


def write_lock(path, lock):
    atomic_write(path, json.dumps(lock, indent=2, sort_keys=True) + '\n', mode=0o644)


def stale_reason(lock, params, now, current_boot):
    """Why an existing lock of another holder may be replaced, or None."""
    if lock.get('broken') is not None:
        return 'the lock file is not a lock (%r)' % lock['broken']
    if current_boot and lock.get('boot_id') and lock['boot_id'] != current_boot:
        return 'the host rebooted since it was taken'
    holder_id = (lock.get('holder') or {}).get('id')
    if params['takeover'] and params['takeover'] == holder_id:
        return params.get('takeover_reason') or 'its holder is gone'
    heartbeat = lock.get('heartbeat_at')
    if params['stale_after'] > 0 and isinstance(heartbeat, (int, float)) and now - heartbeat > params['stale_after']:
        return 'no heartbeat for %d s (stale_after %d s)' % (now - heartbeat, params['stale_after'])
    if params['break_lock']:
        return 'break_lock was set'
    return None


def describe(lock, now):
    holder = lock.get('holder') or {}
    since = lock.get('acquired_at')
    age = '%d s ago' % (now - since) if isinstance(since, (int, float)) else 'at an unknown time'
    return ('campaign %s, taken %s by %s@%s (ansible-playbook pid %s, %s)'
            % (lock.get('campaign'), age, holder.get('user', '?'), holder.get('controller', '?'), holder.get('pid', '?'),
               holder.get('playbook', 'playbook unknown')))


def refusal(lock, params, now):
    """Why the lock stays with its holder, and how to end it if that holder is dead."""
    holder = lock.get('holder') or {}
    if not holder.get('controller_id'):
        # An old lock (no controller id) or one from a controller that could not identify itself: no pid check proves
        # its ansible-playbook gone, whatever the hostname says.
        why = (' Its holder names no controller id (taken by an older specdec.bench, or on a controller without a boot '
               'id), so no controller can tell whether its ansible-playbook still runs.')
    else:
        why = ''
    if params['stale_after'] > 0:
        expiry = ' or wait until its heartbeat is %d s old (campaign_lock_stale_after)' % params['stale_after']
    else:
        expiry = ' (campaign_lock_stale_after is 0: a lock never expires by age)'
    return ('%s is locked by %s.%s Wait for that campaign to finish; if its ansible-playbook is dead (on another '
            'controller, or not provably gone), rerun with -e campaign_lock_break=true%s'
            % (params['path'], describe(lock, now), why, expiry))


def lock_state(module, params):
    path = params['path']
    holder = params['holder']
    if not holder.get('id'):
        module.fail_json(msg='holder.id is required: the id of the ansible-playbook run taking the lock')
    if params['state'] == 'locked' and not params['campaign']:
        module.fail_json(msg='campaign is required with state=locked')
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        if module.check_mode or params['state'] == 'unlocked':
            return guarded(module, params, None)
        os.makedirs(directory, mode=0o755)
    with open(path + '.guard', 'a', encoding='utf-8') as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        try:
            return guarded(module, params, read_lock(path))
        finally:
            fcntl.flock(guard, fcntl.LOCK_UN)


def guarded(module, params, lock):
    path, holder, now = params['path'], params['holder'], time.time()
    mine = lock is not None and (lock.get('holder') or {}).get('id') == holder['id']
    if params['state'] == 'unlocked':
        if not mine:
            if lock is not None:
                module.warn('the lock is held by %s, not by this run: left alone' % describe(lock, now))
            return dict(changed=False, acquired=False, lock=lock, previous=None)
        if not module.check_mode:
            os.unlink(path)
        return dict(changed=True, acquired=True, lock=lock, previous=None)

    new = {'campaign': params['campaign'], 'holder': holder, 'boot_id': boot_id(), 'acquired_at': now, 'heartbeat_at': now}
    if lock is None:
        if not module.check_mode:
            write_lock(path, new)
        return dict(changed=True, acquired=True, lock=new, previous=None)
    if mine:
        if lock.get('campaign') != params['campaign']:
            module.fail_json(msg='this run holds the lock for campaign %s, not %s' % (lock.get('campaign'), params['campaign']),
                             holder=lock.get('holder'), lock=lock)
        refreshed = dict(lock, heartbeat_at=now)
        if not module.check_mode:
            write_lock(path, refreshed)
        return dict(changed=True, acquired=True, lock=refreshed, previous=None)
    reason = stale_reason(lock, params, now, new['boot_id'])
    if reason is None:
        module.fail_json(msg=refusal(lock, params, now), holder=lock.get('holder'), lock=lock, acquired=False)
    if not module.check_mode:
        write_lock(path, new)
    return dict(changed=True, acquired=True, lock=new, previous=lock, stale_reason=reason)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', default='/var/lib/specdec/campaign.lock'),
            state=dict(type='str', choices=['locked', 'unlocked'], default='locked'),
            campaign=dict(type='str'),
            holder=dict(type='dict', required=True),
            stale_after=dict(type='int', default=0),
            takeover=dict(type='str'),
            takeover_reason=dict(type='str'),
            break_lock=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    if module.params['stale_after'] < 0:
        module.fail_json(msg='stale_after must be 0 (never by age) or a number of seconds, got %d' % module.params['stale_after'])
    module.exit_json(**lock_state(module, module.params))


if __name__ == '__main__':
    main()
