# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters probe_summary and probe_summary_lines (documented in probe_summary.yml and probe_summary_lines.yml)."""

from __future__ import annotations

from ansible_collections.specdec.bench.plugins.plugin_utils.probe_summary import probe_summary, probe_summary_lines


class FilterModule:
    def filters(self):
        return {'probe_summary': probe_summary, 'probe_summary_lines': probe_summary_lines}
