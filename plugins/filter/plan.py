# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""model_bytes, fit_tp and campaign_plan: the filters of the campaign planner, whose engine is the package
plugins/plugin_utils/plan/. Their documentation is in the .yml files of the same names beside this file."""

from __future__ import annotations

from ansible_collections.specdec.bench.plugins.plugin_utils.plan import campaign_plan, fit_tp, safetensors_total_size


class FilterModule:
    def filters(self):
        return {'model_bytes': safetensors_total_size, 'fit_tp': fit_tp, 'campaign_plan': campaign_plan}
