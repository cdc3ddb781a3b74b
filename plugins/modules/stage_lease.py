#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: stage_lease
short_description: Keep the leases of a wave's stages renewed from the controller, whatever Ansible's worker scheduling
version_added: 0.4.0
description:
  - A stage (M(specdec.bench.stage_run)) stops itself when its lease file has not changed for its lease timeout (the
    controller is gone). The polls of M(specdec.bench.stage_wait) renew it, but they run in the host's Ansible worker;
    with more hosts than C(forks) a host whose stages are started waits for a worker while another host's wave runs,
    and its stages would stop themselves.
  - The action plugin of this name, with O(state=kept), starts a lease keeper on the controller before the wave's
    stages start, a small process of its own (not an Ansible worker) that renews the wave's lease files through the
    task's connection every O(interval) seconds until M(specdec.bench.stage_wait) releases it, every stage it saw
    running has ended, the C(ansible-playbook) that started it is gone, or O(lifetime) passed. With O(state=checked)
    it times one renewal round trip and refuses a lease timeout the keeper cannot keep, before any change on the host.
  - The module itself runs on the host; it touches each lease file that exists (never through a symbolic link, never
    making one) and says whether its stage runs (a process holds the stage's lock C(<lease_file>.lock)).
author:
  - specdec.bench developers (!UNKNOWN)
options:
  lease_files:
    description: The lease files of the wave's stages (M(specdec.bench.stage_run)'s
      O(specdec.bench.stage_run#module:lease_file)).
    type: list
    elements: path
    default: []
  state:
    description:
      - V(renewed) (the module on the host) touches the lease files once and answers.
      - V(kept) (the action) starts the keeper and returns RV(keeper); V(released) stops the keeper given in O(keeper)
        and returns what it did; V(checked) times one round trip and fails when O(lease_timeout) is shorter than
        three of them plus O(interval).
    type: str
    choices: [renewed, kept, released, checked]
    default: renewed
  lease_timeout:
    description: The stages' lease timeout in seconds (V(0) is no lease, and the keeper starts nothing).
    type: float
    default: 0
  interval:
    description: Seconds between two renewals by the keeper; V(0) is a quarter of O(lease_timeout).
    type: float
    default: 0
  lifetime:
    description: Seconds after which the keeper stops whatever happens (the stages' C(async) limit).
    type: float
    default: 172800
  keeper:
    description: With O(state=released), the RV(keeper) that O(state=kept) returned.
    type: dict
extends_documentation_fragment:
  - specdec.bench.attributes
attributes:
  check_mode:
    support: full
    details: [It renews leases in check mode too; a lease is the controller's presence, not a change.]
  diff_mode:
    support: none
notes:
  - The keeper uses the task's connection (ssh, podman, docker, local) and, to keep a round trip short, runs the
    collection's C(module_utils/_lease.py) with the host's Python directly instead of this module (the same code that
    this module and M(specdec.bench.stage_run) use). It counts each renewal it could not make, and O(state=released)
    returns the count and the longest gap between two renewals.
"""

EXAMPLES = r"""
- name: Keep the wave's leases while the host waits for a worker
  specdec.bench.stage_lease:
    state: kept
    lease_files: [/var/lib/specdec/stages/c/tp1-autoregressive.lease]
    lease_timeout: 60
  register: keeper

- name: Release it
  specdec.bench.stage_lease:
    state: released
    keeper: "{{ keeper.keeper }}"
"""

RETURN = r"""
leases:
  description: With O(state=renewed), one entry per lease file, in the order given.
  returned: success
  type: list
  elements: dict
  contains:
    path:
      description: The lease file.
      type: str
    renewed:
      description: Whether it was touched (false when it does not exist yet, or is not a regular file).
      type: bool
    running:
      description: Whether a process holds the stage's lock (its M(specdec.bench.stage_run) runs).
      type: bool
keeper:
  description: With O(state=kept), the keeper (null when there is no lease to keep).
  returned: success
  type: dict
round_trip_s:
  description: With O(state=checked), the median of three renewal round trips, in seconds.
  returned: success
  type: float
renewals:
  description: With O(state=released), how many renewals the keeper made, how many failed, and the longest gap in
    seconds between the keeper's start or a renewal and the next one.
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.specdec.bench.plugins.module_utils._lease import held, renew


def main():
    module = AnsibleModule(
        argument_spec=dict(
            lease_files=dict(type='list', elements='path', default=[]),
            state=dict(type='str', choices=['renewed', 'kept', 'released', 'checked'], default='renewed'),
            lease_timeout=dict(type='float', default=0),
            interval=dict(type='float', default=0),
            lifetime=dict(type='float', default=172800),
            keeper=dict(type='dict'),
        ),
        supports_check_mode=True,
    )
    if module.params['state'] != 'renewed':
        module.fail_json(msg='state=%s is the action plugin\'s; the module on the host only renews (state=renewed)'
                         % module.params['state'])
    leases = [{'path': path, 'renewed': renew(path, create=False), 'running': held(path + '.lock')}
              for path in module.params['lease_files']]
    module.exit_json(changed=False, leases=leases)


if __name__ == '__main__':
    main()
