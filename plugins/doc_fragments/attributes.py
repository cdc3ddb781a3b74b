# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment:
    """The attributes' descriptions, once (community.general's attributes fragment): a module gives only support/details.

    Use: `extends_documentation_fragment: [specdec.bench.attributes]` and, in the module's own documentation,
    `attributes: {check_mode: {support: full, details: [...]}, diff_mode: {support: none}}`.
    """

    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in C(check_mode) and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in C(check_mode)), when in diff mode.
"""
