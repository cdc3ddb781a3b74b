# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""service_backend: the host variable wins, then the probe's facts, then systemd."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError
from ansible.module_utils import _internal as _module_internal
from ansible_collections.specdec.bench.plugins.filter.service import service_backend

_module_internal.is_controller = False


@pytest.fixture(autouse=True)
def _controller_mode(monkeypatch):
    monkeypatch.setattr(_module_internal, 'is_controller', True)


def facts(backend):
    return {'specdec_host': {'init': {'pid1': 'sim-init', 'systemd': False, 'service_backend': backend}}}


@pytest.mark.parametrize('given, override, expected', [
    (facts('supervisor'), None, 'supervisor'),
    (facts('systemd'), '', 'systemd'),
    (facts('supervisor'), 'systemd', 'systemd'),
    ({}, None, 'systemd'),
    (None, None, 'systemd'),
    ({'specdec_host': {'init': None}}, None, 'systemd'),
])
def test_the_override_then_the_facts_then_systemd(given, override, expected):
    assert service_backend(given, override) == expected


def test_an_unknown_override_names_the_variable():
    with pytest.raises(AnsibleFilterError) as error:
        service_backend({}, 'runit')
    assert "specdec_service_backend is 'runit'; allowed: systemd, supervisor" in str(error.value)
