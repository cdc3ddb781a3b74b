# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment:
    """The host gathering options of host_facts and probe (their spec is HOST_OPTIONS in module_utils/_host_probe.py)."""

    DOCUMENTATION = r"""
options:
  paths:
    description:
      - Paths to measure free and total space for. They need not exist.
    type: list
    elements: path
    default: []
  python_envs:
    description:
      - Python interpreters, or virtual environment directories (their C(bin/python3) or C(bin/python) is used),
        to read the versions of O(python_packages) in.
      - An interpreter that is missing or fails is reported with its error, not as a module failure.
    type: list
    elements: path
    default: []
  python_packages:
    description:
      - Distribution names whose installed versions are read in each of O(python_envs).
    type: list
    elements: str
    default: [torch, sglang, vllm, speculators]
"""
