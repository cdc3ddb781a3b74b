# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""service_backend: how a host runs long-lived processes, from its probed facts. Documented in service_backend.yml."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

BACKENDS = ('systemd', 'supervisor')


def service_backend(facts, override=None):
    """override (specdec_service_backend) when set, else the probe's init.service_backend, else systemd."""
    if override not in (None, ''):
        if override not in BACKENDS:
            raise AnsibleFilterError('specdec_service_backend is %r; allowed: %s' % (override, ', '.join(BACKENDS)))
        return override
    host = (facts or {}).get('specdec_host') if isinstance(facts, Mapping) else None
    init = (host or {}).get('init') if isinstance(host, Mapping) else None
    found = (init or {}).get('service_backend') if isinstance(init, Mapping) else None
    return found if found in BACKENDS else 'systemd'


class FilterModule:
    def filters(self):
        return {'service_backend': service_backend}
