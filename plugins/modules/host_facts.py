#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: host_facts
short_description: Disk, memory, CPU, OS, container, GPU visibility, listening ports and toolchain facts of a benchmark host
version_added: 0.1.0
description:
  - Gathers what a benchmark or training host must be checked for, as one fact C(ansible_facts.specdec_host).
  - Free and total bytes of given paths (results dir, model dir), also of paths not created yet (their nearest existing parent is measured),
    with the mount holding each.
  - RAM from C(/proc/meminfo), CPU count, OS from C(/etc/os-release), whether systemd runs.
  - The init system, RV(ansible_facts.specdec_host.init) - the name of PID 1 and whether it is systemd - and so where
    M(specdec.bench.service) runs long-lived processes - systemd units, or specdec's own supervisor on a host whose PID 1 is not
    systemd (a Docker container whose entrypoint is PID 1).
  - Container detection from its markers (C(/.dockerenv), C(/run/.containerenv), C(/dev/lxd), the C(container) variable of PID 1,
    Kubernetes variables and secrets, runtime paths in C(/proc/1/cgroup)).
  - C(NVIDIA_VISIBLE_DEVICES) and C(CUDA_VISIBLE_DEVICES), both of this module's environment and of PID 1 (where a container runtime
    puts them; a login over SSH does not inherit them).
  - Listening TCP ports from C(/proc/net/tcp) and C(/proc/net/tcp6) of the module's network namespace.
  - C(python3), C(pip), C(uv) and C(nvcc) versions, and the versions of given Python packages inside given interpreters or
    virtual environments (one process per interpreter).
  - The host part of M(specdec.bench.probe), which gathers it with the same code, in the same shapes, in one round trip with the
    GPU and unit facts; this module is for a play that needs the host facts alone.
author:
  - specdec.bench developers (!UNKNOWN)
extends_documentation_fragment:
  - specdec.bench.attributes
  - specdec.bench.facts
  - specdec.bench.host_probe
notes:
  - Reading the environment of PID 1 needs root; without it RV(ansible_facts.specdec_host.gpu_visibility.pid1) is null.
  - Listening ports are those of the network namespace the module runs in.
seealso:
  - module: specdec.bench.probe
  - module: specdec.bench.gpu_facts
  - module: ansible.builtin.setup
"""

EXAMPLES = r"""
- name: Gather host facts for the results and model directories and the SGLang venv
  specdec.bench.host_facts:
    paths:
      - /root/bench_results
      - /models/Qwen3.6-27B
    python_envs:
      - /opt/sglang/.venv

- name: Need 100 GB free for results
  ansible.builtin.assert:
    that: ansible_facts.specdec_host.disk['/root/bench_results'].free_bytes > 100 * 1024 ** 3

- name: Port 30000 must be free
  ansible.builtin.assert:
    that: 30000 not in (ansible_facts.specdec_host.listening_ports | map(attribute='port'))

- name: SGLang version in its venv
  ansible.builtin.debug:
    msg: "{{ ansible_facts.specdec_host.python_envs['/opt/sglang/.venv'].packages.sglang }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    specdec_host:
      description: The host's facts.
      returned: always
      type: dict
      contains:
        disk:
          description: One entry per path of O(paths), keyed by the path as given (after C(~) expansion).
          returned: always
          type: dict
          sample:
            /root/bench_results:
              exists: false
              checked_path: /root
              mount_point: /
              fstype: ext4
              source: /dev/vda
              total_bytes: 270553174016
              used_bytes: 17286803456
              free_bytes: 68702134272
          contains:
            exists:
              description: Whether the path exists.
              returned: always
              type: bool
              sample: false
            checked_path:
              description: The path measured, the path itself or its nearest existing parent, symlinks resolved.
              returned: always
              type: str
              sample: /root
            mount_point:
              description: Mount point of the file system holding RV(ansible_facts.specdec_host.disk.checked_path); null without mountinfo.
              returned: always
              type: str
              sample: /
            fstype:
              description: File system type.
              returned: always
              type: str
              sample: ext4
            source:
              description: Mount source (device).
              returned: always
              type: str
              sample: /dev/vda
            total_bytes:
              description: Size of the file system.
              returned: always
              type: int
              sample: 270553174016
            used_bytes:
              description: Bytes in use.
              returned: always
              type: int
              sample: 17286803456
            free_bytes:
              description: Bytes an unprivileged writer can still use (what C(df) calls Available).
              returned: always
              type: int
              sample: 68702134272
        memory:
          description: RAM from C(/proc/meminfo).
          returned: always
          type: dict
          contains:
            total_bytes:
              description: MemTotal.
              returned: always
              type: int
              sample: 135128870912
            available_bytes:
              description: MemAvailable, null on kernels before 3.14.
              returned: always
              type: int
              sample: 134632656896
            swap_total_bytes:
              description: SwapTotal.
              returned: always
              type: int
              sample: 0
        cpu:
          description: CPUs.
          returned: always
          type: dict
          contains:
            count:
              description: Logical CPUs of the host.
              returned: always
              type: int
              sample: 16
            usable:
              description: Logical CPUs this process may run on (its affinity, which a container's cpuset limits).
              returned: always
              type: int
              sample: 16
            online:
              description:
                - The online CPUs, as a kernel cpulist (C(/sys/devices/system/cpu/online)), else the allowed ones; null
                  when neither is known. P(specdec.bench.campaign_plan#filter) pins a stage to its GPUs' CPUs among these.
              returned: always
              type: str
              sample: 0-191
            allowed:
              description: The CPUs this process may run on (sched_getaffinity), as a cpulist; null when unknown.
              returned: always
              type: str
              sample: 0-191
            numa_nodes:
              description: The online NUMA nodes (C(/sys/devices/system/node/online)) as a cpulist; V(0) without that file.
              returned: always
              type: str
              sample: 0-1
        os:
          description: The OS from C(/etc/os-release), and the kernel.
          returned: always
          type: dict
          contains:
            id:
              description: ID.
              returned: always
              type: str
              sample: ubuntu
            id_like:
              description: ID_LIKE.
              returned: always
              type: str
              sample: debian
            name:
              description: NAME.
              returned: always
              type: str
              sample: Ubuntu
            pretty_name:
              description: PRETTY_NAME.
              returned: always
              type: str
              sample: Ubuntu 24.04.3 LTS
            version_id:
              description: VERSION_ID.
              returned: always
              type: str
              sample: "24.04"
            version_codename:
              description: VERSION_CODENAME.
              returned: always
              type: str
              sample: noble
            kernel:
              description: Kernel release.
              returned: always
              type: str
              sample: 6.8.0-87-generic
        systemd:
          description: Whether systemd is the running init system (C(/run/systemd/system) exists).
          returned: always
          type: bool
          sample: true
        init:
          description: The init system, and the service backend that follows from it.
          returned: always
          type: dict
          sample: {"pid1": "tini", "systemd": false, "service_backend": "supervisor"}
          contains:
            pid1:
              description: The name of PID 1 (C(/proc/1/comm)), null when it cannot be read.
              returned: always
              type: str
              sample: systemd
            systemd:
              description: Whether systemd is the running init system, as sd_booted() tests it (C(/run/systemd/system) exists).
              returned: always
              type: bool
              sample: true
            service_backend:
              description:
                - Where M(specdec.bench.service) runs services on this host; V(systemd) exactly when systemd runs, else V(supervisor)
                  (specdec's own supervisor, state under C(/var/lib/specdec/services)).
              returned: always
              type: str
              choices: [systemd, supervisor]
              sample: systemd
        container:
          description: Whether the module runs in a container, of which type, and the markers that say so.
          returned: always
          type: dict
          contains:
            detected:
              description: Whether any container marker was found.
              returned: always
              type: bool
              sample: true
            type:
              description:
                - V(kubernetes), V(podman), V(docker), V(lxc), V(systemd-nspawn), V(containerd) or the value of PID 1's C(container) variable;
                  null when none was detected.
              returned: always
              type: str
              sample: docker
            markers:
              description: The markers found, such as V(/.dockerenv), V(/proc/1/environ:container=lxc), V(env:KUBERNETES_SERVICE_HOST).
              returned: always
              type: list
              elements: str
              sample: [/.dockerenv]
        gpu_visibility:
          description: C(NVIDIA_VISIBLE_DEVICES) and C(CUDA_VISIBLE_DEVICES) (null where unset).
          returned: always
          type: dict
          contains:
            env:
              description: In the module's environment.
              returned: always
              type: dict
              sample: {"NVIDIA_VISIBLE_DEVICES": null, "CUDA_VISIBLE_DEVICES": null}
            pid1:
              description: In the environment of PID 1, which is where a container runtime sets them; null when unreadable.
              returned: always
              type: dict
              sample: {"NVIDIA_VISIBLE_DEVICES": "0", "CUDA_VISIBLE_DEVICES": null}
        listening_ports:
          description: Listening TCP sockets, sorted by port.
          returned: always
          type: list
          elements: dict
          contains:
            port:
              description: Port number.
              returned: always
              type: int
              sample: 8080
            address:
              description: Bound address (V(0.0.0.0) or V(::) for all).
              returned: always
              type: str
              sample: 127.0.0.1
            family:
              description: V(ipv4) or V(ipv6).
              returned: always
              type: str
              sample: ipv4
        toolchain:
          description: V(python3), V(pip), V(uv) and V(nvcc), each with its path and version, both null when not found.
          returned: always
          type: dict
          sample:
            python3: {"path": /usr/bin/python3, "version": 3.12.3}
            pip: {"path": /usr/bin/pip3, "version": "24.0"}
            uv: {"path": /usr/local/bin/uv, "version": 0.9.5}
            nvcc: {"path": /usr/local/cuda/bin/nvcc, "version": 13.0.88}
          contains:
            path:
              description: The executable found.
              returned: always
              type: str
              sample: /usr/local/cuda/bin/nvcc
            version:
              description: Its version (for nvcc the full toolkit version, V(13.0.88)).
              returned: always
              type: str
              sample: 13.0.88
        python_envs:
          description: One entry per path of O(python_envs), keyed by the path as given (after C(~) expansion).
          returned: always
          type: dict
          sample:
            /opt/sglang/.venv:
              python: /opt/sglang/.venv/bin/python3
              python_version: 3.11.2
              packages: {"torch": 2.9.1, "sglang": 0.5.23, "vllm": null, "speculators": null}
              error: null
          contains:
            python:
              description: The interpreter run; null when none was found.
              returned: always
              type: str
              sample: /opt/sglang/.venv/bin/python3
            python_version:
              description: Its version.
              returned: always
              type: str
              sample: 3.11.2
            packages:
              description: Each of O(python_packages) with its installed version, null when not installed (all null on error).
              returned: always
              type: dict
              sample: {"torch": 2.9.1, "sglang": 0.5.23, "vllm": null, "speculators": null}
            error:
              description: Why the versions could not be read; null on success.
              returned: always
              type: str
              sample: null
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.specdec.bench.plugins.module_utils._host_probe import HOST_OPTIONS, gather_host_facts


def main():
    module = AnsibleModule(argument_spec=dict(HOST_OPTIONS), supports_check_mode=True)
    params = module.params
    facts, extra = gather_host_facts(module, params['paths'], params['python_envs'], params['python_packages'])
    module.exit_json(changed=False, ansible_facts=facts, **extra)


if __name__ == '__main__':
    main()
