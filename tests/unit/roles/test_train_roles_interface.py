# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The training roles' interface: every default documented in meta/argument_specs.yml (both entry points) and back."""

from __future__ import annotations

import os
import re

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def load(role, *path):
    with open(os.path.join(REPO, 'roles', role, *path), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


@pytest.mark.parametrize('role', ['train_run', 'train_monitor'])
@pytest.mark.parametrize('entry_point', ['main', 'preflight'])
def test_defaults_and_argument_specs_agree(role, entry_point):
    defaults = load(role, 'defaults', 'main.yml')
    options = load(role, 'meta', 'argument_specs.yml')['argument_specs'][entry_point]['options']
    assert set(defaults) == set(options)
    for name, spec in options.items():
        assert name.startswith(role + '_') and spec.get('description'), name
        if 'default' in spec:
            assert spec['default'] == defaults[name], name


def test_the_default_pipeline_has_every_setting_it_reads():
    dflash = load('train_run', 'defaults', 'main.yml')['train_run_dflash']
    with open(os.path.join(REPO, 'roles', 'train_run', 'templates', 'train_dflash.sh.j2'), encoding='utf-8') as handle:
        template = handle.read()
    used = set(re.findall(r'\bd\.([a-z_]+)', template)) | set(re.findall(r'\bsmoke\.([a-z_]+)', template))
    assert {'speculators_dir', 'target_layer_ids', 'max_samples'} <= used
    assert used <= set(dflash) | set(dflash['smoke']), used - set(dflash)
