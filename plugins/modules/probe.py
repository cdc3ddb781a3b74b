#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: probe
short_description: GPU, systemd unit and host facts of a benchmark host in one module run
version_added: 0.1.0
description:
  - Gathers in one execution, so in one round trip per host, what M(specdec.bench.gpu_facts), M(specdec.bench.unit_facts) and
    M(specdec.bench.host_facts) gather one by one, with the same code and in the same shapes.
  - C(ansible_facts.nvidia_gpus) and C(ansible_facts.nvidia_driver) as M(specdec.bench.gpu_facts) returns them,
    with RV(backend) and RV(dropped_fields).
  - C(ansible_facts.systemd_units) as M(specdec.bench.unit_facts) returns it for O(units), with RV(patterns) and RV(unmatched_patterns).
  - C(ansible_facts.specdec_host) as M(specdec.bench.host_facts) returns it.
  - O(gather) picks a subset; the facts and keys of a part not gathered are left out, so facts gathered before are kept.
  - A host without GPUs or without systemd gets empty GPU or unit facts and a warning, as from the single modules;
    what fails one of them fails this module.
author:
  - specdec.bench developers (!UNKNOWN)
options:
  gather:
    description:
      - The parts to gather. V(gpu) runs C(nvidia-smi) or NVML, V(units) runs C(systemctl), V(host) reads C(/proc) and runs the toolchain.
    type: list
    elements: str
    choices: [gpu, units, host]
    default: [gpu, units, host]
  units:
    description:
      - Unit names and glob patterns (C(*), C(?), C([...])), as O(specdec.bench.unit_facts#module:names).
      - A name or pattern without a unit type suffix is a service (V(sglang-*) means V(sglang-*.service)).
      - When empty, C(systemctl) is not run and C(ansible_facts.systemd_units) is empty.
    type: list
    elements: str
    default: []
  gpu_backend:
    description:
      - Where GPU and process data come from, as O(specdec.bench.gpu_facts#module:backend).
      - V(smi) runs C(nvidia-smi); V(nvml) reads NVML through C(pynvml) and fails when it cannot be imported;
        V(auto) uses NVML when C(pynvml) is importable and NVML initialises, else C(nvidia-smi).
    type: str
    choices: [auto, smi, nvml]
    default: auto
  summary_dir:
    description:
      - A folder on the controller where the action plugin saves the host's summary as C(<inventory_hostname>.json)
        (written atomically, and only when it changed; in check mode too, since it is a report, not a host change).
      - The summary is also returned as C(ansible_facts.specdec_probe_summary) and RV(summary_lines), see
        P(specdec.bench.probe_summary#filter). Not saved when unset.
      - The module on the host ignores it.
    type: path
extends_documentation_fragment:
  - specdec.bench.attributes
  - specdec.bench.facts
  - specdec.bench.gpu_probe
  - specdec.bench.host_probe
requirements:
  - For GPU facts, C(nvidia-smi) on the target, or C(nvidia-ml-py) (C(pynvml)) with O(gpu_backend=nvml).
  - For unit facts, systemd on the target.
notes:
  - The notes of M(specdec.bench.gpu_facts) and M(specdec.bench.host_facts) hold here too (processes of other PID namespaces,
    PID 1's environment needs root, ports of the module's network namespace).
seealso:
  - module: specdec.bench.gpu_facts
  - module: specdec.bench.unit_facts
  - module: specdec.bench.host_facts
"""

EXAMPLES = r"""
- name: Probe GPUs, the benchmark units and the results disk in one round trip
  specdec.bench.probe:
    units:
      - sglang-*
      - ddtree-qwen
    paths:
      - /root/bench_results
    python_envs:
      - /opt/sglang/.venv

- name: Units holding GPU memory
  ansible.builtin.debug:
    msg: "{{ ansible_facts.nvidia_gpus | map(attribute='processes') | flatten | map(attribute='unit') | select | unique | list }}"

- name: Refresh only the GPU and unit facts, with nvidia-smi and without topology
  specdec.bench.probe:
    gather: [gpu, units]
    units: [sglang-*]
    gpu_backend: smi
    topology: false
"""

RETURN = r"""
summary_lines:
  description: The host's summary as lines to read (P(specdec.bench.probe_summary_lines#filter)), made on the controller.
  returned: success
  type: list
  elements: str
  sample:
    - "ct200: Debian GNU/Linux 12 (bookworm), 96 CPUs, driver 580.95.05, CUDA 13.0, 8 GPU(s)"
    - "GPU0 NVIDIA RTX PRO 6000 Blackwell Server Edition cc 12.0: 56077/97887 MiB used, held by ddtree-qwen.service pid 47028 56077 MiB"
summary_path:
  description: Where the summary was saved on the controller.
  returned: when O(summary_dir) is set
  type: str
  sample: /home/me/bench/results/probe/ct200.json
ansible_facts:
  description: Facts added to the host, those of the parts in O(gather).
  returned: always
  type: dict
  contains:
    specdec_probe_summary:
      description: The summary made on the controller by P(specdec.bench.probe_summary#filter) from the facts below.
      returned: success
      type: dict
      sample: {"host": "ct200", "driver": "580.95.05", "cuda": "13.0", "gpus": [], "units": {}}
    nvidia_gpus:
      description:
        - Every GPU, sorted by index, each as RV(specdec.bench.gpu_facts#module:ansible_facts.nvidia_gpus) describes it.
        - Empty when the host has no usable NVIDIA GPU.
      returned: when O(gather) contains V(gpu)
      type: list
      elements: dict
      sample:
        - index: 0
          uuid: GPU-9e1c631b-fafe-f96d-935d-1ff4b8a5bf54
          name: NVIDIA H200
          memory_total_mib: 143771
          memory_used_mib: 19601
          compute_capability: "9.0"
          processes: [{"pid": 444, "name": "python3", "used_memory_mib": 19592, "unit": null, "cgroup": "/process_api/1f06963cf23d61497cb6ab8840d89a14",
                       "unit_backend": null, "cmdline": "python3 -m sglang.launch_server --model-path /models/Qwen3.6-27B"}]
          unexplained_memory_mib: 0
          nvlink: []
    nvidia_driver:
      description: The NVIDIA driver, as RV(specdec.bench.gpu_facts#module:ansible_facts.nvidia_driver); its values are null without a usable GPU.
      returned: when O(gather) contains V(gpu)
      type: dict
      sample: {"version": 580.159.04, "cuda_version": "13.0"}
    systemd_units:
      description:
        - One entry per unit of O(units), or matched by a pattern of it, as RV(specdec.bench.unit_facts#module:ansible_facts.systemd_units).
        - Empty when O(units) is empty or the host has no systemd.
      returned: when O(gather) contains V(units)
      type: dict
      sample: {"ddtree-qwen.service": {"id": ddtree-qwen.service, "load_state": loaded, "active_state": active, "main_pid": 47028}}
    specdec_host:
      description:
        - Disk, memory, CPU, OS, init system, container, GPU visibility, ports and toolchain,
          as RV(specdec.bench.host_facts#module:ansible_facts.specdec_host).
      returned: when O(gather) contains V(host)
      type: dict
      sample:
        disk: {"/root/bench_results": {"exists": false, "checked_path": /root, "mount_point": /, "fstype": ext4, "source": /dev/vda,
               "total_bytes": 270553174016, "used_bytes": 17286803456, "free_bytes": 68702134272}}
        memory: {"total_bytes": 135128870912, "available_bytes": 134632656896, "swap_total_bytes": 0}
        cpu: {"count": 16, "usable": 16}
        os: {"id": ubuntu, "id_like": debian, "name": Ubuntu, "pretty_name": Ubuntu 24.04.3 LTS, "version_id": "24.04",
             "version_codename": noble, "kernel": 6.8.0-87-generic}
        systemd: true
        init: {"pid1": systemd, "systemd": true, "service_backend": systemd}
        container: {"detected": false, "type": null, "markers": []}
        gpu_visibility: {"env": {"NVIDIA_VISIBLE_DEVICES": null, "CUDA_VISIBLE_DEVICES": null}, "pid1": null}
        listening_ports: [{"port": 22, "address": 0.0.0.0, "family": ipv4}]
        toolchain: {"python3": {"path": /usr/bin/python3, "version": 3.12.3}, "pip": {"path": null, "version": null},
                    "uv": {"path": null, "version": null}, "nvcc": {"path": /usr/local/cuda/bin/nvcc, "version": 13.0.88}}
        python_envs: {}
backend:
  description: The GPU backend that produced the facts, V(smi) or V(nvml); null when neither was available.
  returned: when O(gather) contains V(gpu)
  type: str
  sample: smi
dropped_fields:
  description: C(--query-gpu) fields this driver rejected, left out of the query and null on every GPU.
  returned: when O(gather) contains V(gpu)
  type: list
  elements: str
  sample: [compute_cap]
patterns:
  description: Each glob pattern of O(units) (normalized) and the unit names it matched.
  returned: when O(gather) contains V(units)
  type: dict
  sample: {"sglang-*.service": ["sglang-ddtree-tree.service", "sglang-dflash-smoke.service"]}
unmatched_patterns:
  description: Glob patterns of O(units) that matched no unit.
  returned: when O(gather) contains V(units)
  type: list
  elements: str
  sample: ["vllm-*.service"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.specdec.bench.plugins.module_utils._gpu_probe import BACKENDS, GPU_OPTIONS, GpuProbeError, gather_gpu_facts
from ansible_collections.specdec.bench.plugins.module_utils._host_probe import HOST_OPTIONS, gather_host_facts
from ansible_collections.specdec.bench.plugins.module_utils._unit_probe import gather_unit_facts

PARTS = ('gpu', 'units', 'host')


def main():
    module = AnsibleModule(
        argument_spec=dict(
            gather=dict(type='list', elements='str', default=list(PARTS), choices=list(PARTS)),
            units=dict(type='list', elements='str', default=[]),
            gpu_backend=dict(type='str', default='auto', choices=list(BACKENDS)),
            summary_dir=dict(type='path'),  # used by the action plugin on the controller
            **GPU_OPTIONS,
            **HOST_OPTIONS
        ),
        supports_check_mode=True,
    )
    params = module.params
    facts = {}
    extra = {}
    parts = []
    if 'gpu' in params['gather']:
        try:
            parts.append(gather_gpu_facts(module, params['gpu_backend'], params['topology'], params['unexplained_tolerance_mib']))
        except GpuProbeError as exc:
            module.fail_json(msg=exc.msg, **exc.result)
    if 'units' in params['gather']:
        # No units asked for: nothing to run, and no warning about a host without systemd.
        parts.append(gather_unit_facts(module, params['units']) if params['units'] else
                     ({'systemd_units': {}}, {'patterns': {}, 'unmatched_patterns': []}))
    if 'host' in params['gather']:
        parts.append(gather_host_facts(module, params['paths'], params['python_envs'], params['python_packages']))
    for part_facts, part_extra in parts:
        facts.update(part_facts)
        extra.update(part_extra)
    module.exit_json(changed=False, ansible_facts=facts, **extra)


if __name__ == '__main__':
    main()
