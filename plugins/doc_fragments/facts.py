# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment:
    """Attributes shared by the read-only *_facts modules (the shape of community.general's attributes fragments)."""

    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in C(check_mode) and return changed status prediction without modifying target.
    support: full
    details:
      - This action does not modify state.
  diff_mode:
    description: Returns details on what has changed (or possibly needs changing in C(check_mode)), when in diff mode.
    support: none
    details:
      - This action does not modify state.
  facts:
    description: Action returns an C(ansible_facts) dictionary that updates existing host facts.
    support: full
"""
