# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment:
    """The attributes' support in the read-only *_facts modules and probe; their descriptions come from
    specdec.bench.attributes, which goes beside this fragment in extends_documentation_fragment."""

    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    support: full
    details:
      - This action does not modify state.
  diff_mode:
    support: none
    details:
      - This action does not modify state.
  facts:
    description: Action returns an C(ansible_facts) dictionary that updates existing host facts.
    support: full
"""
