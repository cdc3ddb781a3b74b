# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment:
    """The GPU gathering options of gpu_facts and probe (their spec is GPU_OPTIONS in module_utils/_gpu_probe.py)."""

    DOCUMENTATION = r"""
options:
  topology:
    description:
      - Run C(nvidia-smi topo -m) for the GPU interconnect (NVLink peers and link counts, PCIe relation, CPU and NUMA affinity).
      - When V(false), the C(topology) and C(nvlink) of every GPU in C(ansible_facts.nvidia_gpus) are null.
    type: bool
    default: true
  unexplained_tolerance_mib:
    description:
      - Used memory per GPU, in MiB, that no listed process accounts for and that is still reported as 0 unexplained.
      - It absorbs the driver's own per-context overhead; on a real H200 one process holding 19592 MiB showed 19601 MiB used.
      - A real CUDA process holds several hundred MiB at least, so the default does not hide one.
    type: int
    default: 256
"""
