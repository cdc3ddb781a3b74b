#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: unit_facts
short_description: State of named systemd units and glob patterns, with not-found told apart from inactive
version_added: 0.1.0
description:
  - Gathers load, active and sub state, main pid and unit file state of the given units as C(ansible_facts.systemd_units).
  - All units are read by one C(systemctl show) call. A unit that does not exist has RV(ansible_facts.systemd_units.load_state=not-found),
    which C(systemctl is-active) cannot tell from a stopped unit.
  - Glob patterns (C(sglang-*)) are expanded first against loaded units (C(systemctl list-units --all)) and unit files
    (C(systemctl list-unit-files)), one call each and only when a pattern is given, so stopped units that systemd has
    unloaded are found too. Template units (C(name@.service)) are left out; their instances are kept.
  - A host without systemd (no C(systemctl), or C(/run/systemd/system) missing, as in most containers) gets an empty result and a warning.
  - The unit part of M(specdec.bench.probe) (its O(specdec.bench.probe#module:units)), which gathers it with the same code, in the
    same shapes, in one round trip with the GPU and host facts; this module is for a play that needs the units alone.
author:
  - specdec.bench developers (!UNKNOWN)
options:
  names:
    description:
      - Unit names and glob patterns (C(*), C(?), C([...])).
      - A name or pattern without a unit type suffix is a service (V(sglang-*) means V(sglang-*.service)).
    type: list
    elements: str
    required: true
extends_documentation_fragment:
  - specdec.bench.attributes
  - specdec.bench.facts
requirements:
  - systemd on the target.
seealso:
  - module: specdec.bench.probe
  - module: ansible.builtin.service_facts
  - module: specdec.bench.gpu_facts
"""

EXAMPLES = r"""
- name: State of the benchmark units and the long-running holder
  specdec.bench.unit_facts:
    names:
      - sglang-*
      - ddtree-qwen

- name: Stop only units that exist and run
  ansible.builtin.debug:
    msg: "{{ ansible_facts.systemd_units | dict2items | selectattr('value.active_state', 'equalto', 'active') | map(attribute='key') | list }}"

- name: Fail on a unit the inventory names but the host lacks
  ansible.builtin.assert:
    that: ansible_facts.systemd_units['ddtree-qwen.service'].load_state != 'not-found'
"""

RETURN = r"""
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    systemd_units:
      description:
        - One entry per unit, keyed by the normalized name asked for (with its type suffix), or matched by a pattern.
        - Empty when the host has no systemd.
      returned: always
      type: dict
      sample:
        ddtree-qwen.service:
          id: ddtree-qwen.service
          description: DDTree Qwen3.6-27B server
          load_state: loaded
          active_state: active
          sub_state: running
          main_pid: 47028
          unit_file_state: enabled
          fragment_path: /etc/systemd/system/ddtree-qwen.service
          result: success
          n_restarts: 0
      contains:
        id:
          description: The unit's primary name; differs from the key when the key is an alias.
          returned: always
          type: str
          sample: ddtree-qwen.service
        description:
          description: The unit's description.
          returned: always
          type: str
          sample: DDTree Qwen3.6-27B server
        load_state:
          description: V(loaded), V(not-found) (no such unit), V(masked), V(error), V(bad-setting) or V(stub).
          returned: always
          type: str
          sample: loaded
        active_state:
          description: V(active), V(inactive), V(failed), V(activating), V(deactivating), V(reloading) or V(maintenance).
          returned: always
          type: str
          sample: active
        sub_state:
          description: The unit type's own state, such as V(running), V(dead), V(exited), V(failed) or V(auto-restart) for a service.
          returned: always
          type: str
          sample: running
        main_pid:
          description: The service's main process id; null when it has none (stopped, or not a service).
          returned: always
          type: int
          sample: 47028
        unit_file_state:
          description: V(enabled), V(disabled), V(static), V(masked), V(generated), V(transient) and so on; null when there is no unit file.
          returned: always
          type: str
          sample: enabled
        fragment_path:
          description: The unit file; null when there is none.
          returned: always
          type: str
          sample: /etc/systemd/system/ddtree-qwen.service
        result:
          description: Result of the last run (V(success), V(exit-code), V(signal), V(timeout), ...); null for unit types without one.
          returned: always
          type: str
          sample: success
        n_restarts:
          description: Automatic restarts since the unit was loaded; null for unit types without one or systemd before 235.
          returned: always
          type: int
          sample: 0
patterns:
  description: Each glob pattern (normalized) and the unit names it matched.
  returned: always
  type: dict
  sample: {"sglang-*.service": ["sglang-ddtree-tree.service", "sglang-dflash-smoke.service"]}
unmatched_patterns:
  description: Glob patterns that matched no unit.
  returned: always
  type: list
  elements: str
  sample: ["vllm-*.service"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.specdec.bench.plugins.module_utils._unit_probe import gather_unit_facts


def main():
    module = AnsibleModule(
        argument_spec=dict(
            names=dict(type='list', elements='str', required=True),
        ),
        supports_check_mode=True,
    )
    facts, extra = gather_unit_facts(module, module.params['names'])
    module.exit_json(changed=False, ansible_facts=facts, **extra)


if __name__ == '__main__':
    main()
