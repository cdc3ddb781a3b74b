# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment:
    """The options of the modules that read or stop a server through specdec.bench.service's two backends."""

    DOCUMENTATION = r"""
options:
  backend:
    description: How the server's service runs; see P(specdec.bench.service#module).
    type: str
    default: systemd
    choices: [systemd, supervisor]
  state_dir:
    description: The supervisor's state folder (O(backend=supervisor)).
    type: path
    default: /var/lib/specdec/services
"""
