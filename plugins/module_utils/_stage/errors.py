# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one failure of the stage engine: a step that cannot go on raises StageError; its module turns it into fail_json."""

from __future__ import annotations


class StageError(Exception):
    """A step failed: reason (the failed result's msg) and evidence (the other keys of the failed result, as the
    step's module returns them: the unit's state, journal lines, the measured result, ...)."""

    def __init__(self, reason, evidence=None):
        super().__init__(reason)
        self.reason = str(reason)
        self.evidence = dict(evidence or {})
