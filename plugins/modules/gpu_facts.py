#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_facts
short_description: NVIDIA GPUs, their driver, topology and the processes (and systemd units) holding them
version_added: 0.1.0
description:
  - Gathers every NVIDIA GPU of the host as C(ansible_facts.nvidia_gpus), sorted by index, and the driver as C(ansible_facts.nvidia_driver).
  - Each GPU lists its compute processes with the systemd unit owning each pid (read from C(/proc/PID/cgroup)) and the used
    memory that no listed process accounts for, so a caller can tell which unit holds a GPU, and whether something it cannot see does.
  - On a host whose PID 1 is not systemd, a process of a service that M(specdec.bench.service) runs under specdec's supervisor
    is named by that service (read from C(/var/lib/specdec/services) and C(/proc)); RV(ansible_facts.nvidia_gpus[].processes[].unit_backend)
    says which of the two named it.
  - With O(backend=smi) it runs C(nvidia-smi) a fixed number of times with argument lists and the C locale; one C(--query-gpu) call
    with every field, one C(--query-compute-apps) call, one C(topo -m) call and the plain banner for the CUDA driver version.
  - A driver that does not know a field fails the whole query (exit code 2, C(Field "x" is not a valid field to query.)).
    The module then drops that field and retries, a bounded number of times; the dropped fields are null on every GPU,
    reported in RV(dropped_fields) and in a warning.
  - A host without C(nvidia-smi), or where it finds no device or no driver, gets an empty list and a warning, not a failure.
  - The GPU part of M(specdec.bench.probe), which gathers it with the same code, in the same shapes, in one round trip with the
    unit and host facts; this module is for a play that needs the GPUs alone.
author:
  - specdec.bench developers (!UNKNOWN)
options:
  backend:
    description:
      - Where GPU and process data come from. Both give the same schema.
      - V(smi) runs C(nvidia-smi) with CSV output.
      - V(nvml) reads NVML through the C(pynvml) module of C(nvidia-ml-py); it fails when C(pynvml) cannot be imported.
      - V(auto) uses NVML when C(pynvml) is importable and NVML initialises, else C(nvidia-smi).
      - Topology always comes from C(nvidia-smi topo -m), whichever backend is used.
    type: str
    choices: [auto, smi, nvml]
    default: auto
extends_documentation_fragment:
  - specdec.bench.attributes
  - specdec.bench.facts
  - specdec.bench.gpu_probe
requirements:
  - C(nvidia-smi) on the target for O(backend=smi) and for topology; C(nvidia-ml-py) (C(pynvml)) for O(backend=nvml).
notes:
  - C(nvidia-smi) in a container lists only the processes of the container's PID namespace; memory held from outside shows up as
    RV(ansible_facts.nvidia_gpus[].unexplained_memory_mib).
  - Without NVML memory v2 (drivers before R510 or an old C(nvidia-ml-py)) the NVML backend's used memory includes driver-reserved memory,
    a few hundred MiB; a warning says so.
seealso:
  - module: specdec.bench.probe
  - module: specdec.bench.unit_facts
  - module: specdec.bench.host_facts
"""

EXAMPLES = r"""
- name: Gather GPU facts
  specdec.bench.gpu_facts:

- name: GPUs no process holds, by UUID
  ansible.builtin.debug:
    msg: "{{ ansible_facts.nvidia_gpus | selectattr('processes', 'equalto', []) | map(attribute='uuid') | list }}"

- name: Units holding GPU memory
  ansible.builtin.debug:
    msg: "{{ ansible_facts.nvidia_gpus | map(attribute='processes') | flatten | map(attribute='unit') | select | unique | list }}"

- name: Refuse to go on when memory is held by something invisible
  ansible.builtin.assert:
    that: ansible_facts.nvidia_gpus | map(attribute='unexplained_memory_mib') | select | list | length == 0

- name: Use nvidia-smi only, without topology
  specdec.bench.gpu_facts:
    backend: smi
    topology: false
"""

RETURN = r"""
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    nvidia_gpus:
      description:
        - Every GPU, sorted by index. Empty when the host has no usable NVIDIA GPU.
        - A value the driver does not report (a bracketed value such as V([N/A]) or V([Not Supported])) or a dropped field is null.
      returned: always
      type: list
      elements: dict
      contains:
        index:
          description: The nvidia-smi (PCI bus order) index. It can change between boots; pin GPUs by RV(ansible_facts.nvidia_gpus[].uuid).
          returned: always
          type: int
          sample: 0
        uuid:
          description: The GPU's immutable UUID.
          returned: always
          type: str
          sample: GPU-9e1c631b-fafe-f96d-935d-1ff4b8a5bf54
        name:
          description: Product name.
          returned: always
          type: str
          sample: NVIDIA H200
        pci_bus_id:
          description: PCI bus id, domain:bus:device.function.
          returned: always
          type: str
          sample: 00000000:00:06.0
        memory_total_mib:
          description: Memory usable by processes, in MiB.
          returned: always
          type: int
          sample: 143771
        memory_used_mib:
          description: Memory allocated by active contexts, in MiB (driver-reserved memory not included).
          returned: always
          type: int
          sample: 19601
        memory_free_mib:
          description: Free memory, in MiB.
          returned: always
          type: int
          sample: 123555
        utilization_gpu_pct:
          description: Percent of the last sample period a kernel ran. Null on a MIG-enabled GPU.
          returned: always
          type: int
          sample: 0
        utilization_memory_pct:
          description: Percent of the last sample period memory was read or written. Null on a MIG-enabled GPU.
          returned: always
          type: int
          sample: 0
        temperature_gpu_c:
          description: Core temperature in degrees Celsius.
          returned: always
          type: int
          sample: 40
        power_draw_w:
          description: Power draw in watts.
          returned: always
          type: float
          sample: 129.14
        power_limit_w:
          description: Power limit in watts.
          returned: always
          type: float
          sample: 700.0
        pstate:
          description: Performance state, V(P0) (maximum) to V(P12).
          returned: always
          type: str
          sample: P0
        compute_capability:
          description: CUDA compute capability, major.minor. Null on drivers without the C(compute_cap) field (before R510) with O(backend=smi).
          returned: always
          type: str
          sample: "9.0"
        compute_mode:
          description: V(Default), V(Exclusive_Process), V(Exclusive_Thread) or V(Prohibited).
          returned: always
          type: str
          sample: Default
        persistence_mode:
          description: Whether persistence mode is enabled.
          returned: always
          type: bool
          sample: true
        mig_mode:
          description: Whether MIG mode is currently enabled. Null on GPUs without MIG.
          returned: always
          type: bool
          sample: false
        ecc_mode:
          description: Whether ECC is currently enabled. Null on GPUs without ECC.
          returned: always
          type: bool
          sample: true
        pcie_link_gen:
          description: Current PCIe link generation (it drops while the GPU idles).
          returned: always
          type: int
          sample: 5
        pcie_link_gen_max:
          description: Maximum PCIe link generation of the GPU and the slot.
          returned: always
          type: int
          sample: 5
        pcie_link_width:
          description: Current PCIe link width (lanes).
          returned: always
          type: int
          sample: 16
        pcie_link_width_max:
          description: Maximum PCIe link width (lanes).
          returned: always
          type: int
          sample: 16
        serial:
          description: Board serial number.
          returned: always
          type: str
          sample: "1653924042554"
        vbios_version:
          description: VBIOS version.
          returned: always
          type: str
          sample: 96.00.A5.00.1A
        processes:
          description:
            - Compute processes on this GPU, sorted by pid. Null when the process list could not be read (a warning says why).
          returned: always
          type: list
          elements: dict
          contains:
            pid:
              description: Process id, as nvidia-smi reports it.
              returned: always
              type: int
              sample: 47028
            name:
              description: Process name or path.
              returned: always
              type: str
              sample: python3
            used_memory_mib:
              description: GPU memory the process holds, in MiB. Null when the driver cannot attribute it (MIG).
              returned: always
              type: int
              sample: 19592
            unit:
              description:
                - The systemd unit owning the pid, as systemd resolves its cgroup (slices skipped, first C(.service) or C(.scope)).
                - Else, or in place of a session scope, the service of specdec's supervisor whose process group or process tree
                  holds the pid (a member left over after the service's main process exited included).
                - Null when the process is in neither (a container's own cgroup, such as C(/docker/<id>), and no supervised service),
                  or its C(/proc/PID/cgroup) cannot be read (another PID namespace, the process exited).
                - A process of a user's session gives the session scope; one of a user service gives C(user@UID.service).
              returned: always
              type: str
              sample: ddtree-qwen.service
            unit_backend:
              description: What named RV(ansible_facts.nvidia_gpus[].processes[].unit), V(systemd) or V(supervisor); null when nothing did.
              returned: always
              type: str
              choices: [systemd, supervisor]
              sample: systemd
            cgroup:
              description: The pid's cgroup path as read (the C(name=systemd) line, else the unified C(0::) one); null when unreadable.
              returned: always
              type: str
              sample: /system.slice/ddtree-qwen.service
            cmdline:
              description:
                - The process's command line from C(/proc/PID/cmdline), its words joined by spaces, at most 4096 characters.
                - Null when it cannot be read (another PID namespace, the process exited) or is empty (a zombie).
                - A holder no unit names is matched by it to the host variable C(specdec_stoppable_processes) (P(specdec.bench.campaign_plan#filter)).
              returned: always
              type: str
              sample: python3 -m sglang.launch_server --model-path /data/models/Qwen3.6-27B --port 30100 --tp-size 1
        unexplained_memory_mib:
          description:
            - Used memory, in MiB, that the listed processes do not account for, when more than O(unexplained_tolerance_mib); else 0.
            - Null when it cannot be known (process list unreadable, or a process whose memory is not reported, as under MIG).
          returned: always
          type: int
          sample: 0
        topology:
          description: This GPU's row of C(nvidia-smi topo -m). Null when O(topology=false) or topo failed.
          returned: always
          type: dict
          contains:
            peers:
              description: The other GPUs and how this GPU reaches each.
              returned: always
              type: list
              elements: dict
              contains:
                index:
                  description: Peer GPU index.
                  returned: always
                  type: int
                  sample: 1
                uuid:
                  description: Peer GPU UUID.
                  returned: always
                  type: str
                  sample: GPU-3c2b9b8e-5f0e-4a55-9a07-7f1f3b0c2a11
                connection:
                  description: C(NV<n>) (n bonded NVLinks), V(SYS), V(NODE), V(PHB), V(PXB) or V(PIX).
                  returned: always
                  type: str
                  sample: NV18
            nics:
              description: Network adapters (by device name, from the topo legend) and how this GPU reaches each.
              returned: always
              type: dict
              sample: {"mlx5_0": "PIX"}
            cpu_affinity:
              description: CPUs close to this GPU.
              returned: always
              type: str
              sample: 0-47,96-143
            numa_affinity:
              description: NUMA node close to this GPU.
              returned: always
              type: str
              sample: "0"
            gpu_numa_id:
              description: The GPU's own NUMA node id, null when it has none.
              returned: always
              type: str
              sample: null
        nvlink:
          description:
            - The GPUs this GPU reaches over NVLink, with the number of bonded links. Empty without NVLink.
            - Null when O(topology=false) or topo failed.
          returned: always
          type: list
          elements: dict
          contains:
            index:
              description: Peer GPU index.
              returned: always
              type: int
              sample: 1
            uuid:
              description: Peer GPU UUID.
              returned: always
              type: str
              sample: GPU-3c2b9b8e-5f0e-4a55-9a07-7f1f3b0c2a11
            links:
              description: Number of bonded NVLinks to that peer.
              returned: always
              type: int
              sample: 18
    nvidia_driver:
      description: The NVIDIA driver. Its values are null on a host without a usable GPU.
      returned: always
      type: dict
      contains:
        version:
          description: Driver version.
          returned: always
          type: str
          sample: 580.159.04
        cuda_version:
          description: Highest CUDA version the driver supports.
          returned: always
          type: str
          sample: "13.0"
backend:
  description: The backend that produced the facts, V(smi) or V(nvml); null when neither was available.
  returned: always
  type: str
  sample: smi
dropped_fields:
  description: C(--query-gpu) fields this driver rejected, left out of the query and null on every GPU.
  returned: always
  type: list
  elements: str
  sample: [compute_cap]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.specdec.bench.plugins.module_utils._gpu_probe import BACKENDS, GPU_OPTIONS, GpuProbeError, gather_gpu_facts


def main():
    module = AnsibleModule(
        argument_spec=dict(GPU_OPTIONS, backend=dict(type='str', default='auto', choices=list(BACKENDS))),
        supports_check_mode=True,
    )
    try:
        facts, extra = gather_gpu_facts(module, module.params['backend'], module.params['topology'], module.params['unexplained_tolerance_mib'])
    except GpuProbeError as exc:
        module.fail_json(msg=exc.msg, **exc.result)
    module.exit_json(changed=False, ansible_facts=facts, **extra)


if __name__ == '__main__':
    main()
