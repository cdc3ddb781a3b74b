# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""checkpoint_install: the module verifies a copy against checkpoint_facts' sha256 of the source and renames it into place."""

from __future__ import annotations

import json
import struct

import pytest

from ansible_collections.specdec.bench.plugins.modules import checkpoint_facts, checkpoint_install

# a whole safetensors file of 4096 bytes: its header's length (8 bytes, little endian), the header, the data
WEIGHTS = struct.pack('<Q', 2) + b'{}' + b'\x01' * 4086


@pytest.fixture(name='shipment')
def shipment_(run_module, tmp_path):
    """(module args for checkpoint_install, staging, dest): the source listed with checksums by checkpoint_facts."""
    source = tmp_path / 'train' / 'checkpoint-400'
    source.mkdir(parents=True)
    (source / 'config.json').write_text('{"specdec_sim": {"step": 400, "quality": 0.4}}')
    (source / 'model.safetensors').write_bytes(WEIGHTS)
    listed = run_module(checkpoint_facts, dict(paths=[str(source)], checksums=True))['checkpoints'][0]
    staging = tmp_path / 'bench' / '.incoming-checkpoint-400'
    staging.mkdir(parents=True)
    for entry in listed['files']:
        (staging / entry['path']).write_bytes((source / entry['path']).read_bytes())
    manifest = dict(source_host='a100box', source_path=listed['path'], name=listed['name'], step=listed['step'],
                    run='demo', files=listed['files'])
    return dict(staging=str(staging), dest=str(tmp_path / 'bench' / 'checkpoint-400'), manifest=manifest), staging, \
        tmp_path / 'bench' / 'checkpoint-400'


def test_installs_then_is_unchanged(run_module, shipment):
    args, staging, dest = shipment
    result = run_module(checkpoint_install, args)
    assert result['exit_code'] == 0 and result['changed'] and result['files'] == 2 and result['bytes'] == 4096 + len((dest / 'config.json').read_bytes())
    assert not staging.exists() and (dest / 'model.safetensors').read_bytes() == WEIGHTS
    assert json.loads((dest / '.specdec-checkpoint.json').read_text())['source_host'] == 'a100box'
    again = run_module(checkpoint_install, args)
    assert again['exit_code'] == 0 and again['changed'] is False and again['reason'] == 'already installed'


def test_a_corrupted_copy_fails_with_the_file_named(run_module, shipment):
    args, staging, dest = shipment
    (staging / 'model.safetensors').write_bytes(b'\x01' * 4095 + b'\x02')
    result = run_module(checkpoint_install, args)
    assert result['failed'] and result['msg'].startswith('checkpoint checkpoint-400 from a100box: model.safetensors has sha256 ')
    assert args['manifest']['files'][1]['sha256'] in result['msg']
    assert not dest.exists() and not staging.exists()


def test_check_mode_changes_nothing(run_module, shipment):
    args, staging, dest = shipment
    result = run_module(checkpoint_install, dict(args, _ansible_check_mode=True))
    assert result['exit_code'] == 0 and result['changed'] and result['verified']
    assert staging.exists() and not dest.exists() and not (staging / '.specdec-checkpoint.json').exists()


def test_bad_arguments_name_the_field(run_module, shipment):
    args, staging, _dest = shipment
    args['manifest']['files'][0]['sha256'] = 'not-hex'
    result = run_module(checkpoint_install, args)
    assert result['failed'] and "manifest.files[0].sha256 must be 64 hex digits, got 'not-hex'" in result['msg']
    assert staging.exists()
    missing = run_module(checkpoint_install, dict(args, manifest={'name': 'checkpoint-400'}))
    assert missing['failed'] and 'files' in missing['msg']
