# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""sglang_preflight with a draft sweep: the draft folder of a checkpoint the campaign copies later (present false in the
plan) is not checked, and named in drafts_not_checked; every other draft folder is checked as before."""

from __future__ import annotations

import sys

from ansible.module_utils import _internal as _module_internal
from ansible_collections.specdec.bench.plugins.plugin_utils.plan import campaign_plan
from ansible_collections.specdec.bench.plugins.modules import sglang_preflight

_module_internal.is_controller = False

FACTS = {'nvidia_gpus': [{'index': i, 'uuid': 'GPU-%d' % i, 'memory_total_mib': 97887, 'processes': []} for i in range(2)]}
ROOT = '/root/train_runs/dflash-demo/checkpoints'


def folder(path):
    path.mkdir(parents=True)
    (path / 'config.json').write_text('{}')
    (path / 'model.safetensors').write_bytes(b'\0' * 16)
    return path


def record(step, path, installed=None):
    return {'name': 'checkpoint-%d' % step, 'step': step, 'path': str(path), 'bytes': 16, 'installed': installed}


def plan(tmp_path, draft, **checkpoints):
    before = _module_internal.is_controller
    _module_internal.is_controller = True  # the filter is controller code
    try:
        spec = {'campaign': 'pre', 'model': {'path': str(folder(tmp_path / 'target')), 'bytes': 1000}, 'draft': draft,
                'tp': [1], 'methods': {'autoregressive': {}, 'dflash': {}},
                'workload': {'input_len': 8, 'output_len': 8, 'num_prompts': 2}, 'concurrency': [1]}
        return campaign_plan(FACTS, spec, {'build': 'sglang-0.5.23', 'sglang_python': sys.executable}, checkpoints)
    finally:
        _module_internal.is_controller = before


def test_a_checkpoint_copied_later_is_parsed_but_its_folder_not_checked(run_module, sglang_env, tmp_path):
    checkpoints = tmp_path / 'checkpoints'
    here = folder(checkpoints / 'dflash-demo' / 'checkpoint-400')
    manifest = {'source_host': 'a100box', 'source_path': ROOT + '/checkpoint-400', 'bytes': 16}
    stages = plan(tmp_path, {'run': 'dflash-demo', 'host': 'a100box'},
                  draft_checkpoints=[record(400, ROOT + '/checkpoint-400'), record(800, ROOT + '/checkpoint-800')],
                  installed_checkpoints=[record(400, here, installed=manifest)], checkpoint_dir=str(checkpoints))
    assert [(s['id'], (s['draft_checkpoint'] or {}).get('present')) for s in stages] == [
        ('tp1-autoregressive', None), ('tp1-dflash-n16-s400', True), ('tp1-dflash-n16-s800', False)]
    result = run_module(sglang_preflight, dict(python=sys.executable, stages=stages))
    assert result['exit_code'] == 0, result.get('msg', result)
    assert result['stages'] == {'tp1-autoregressive': {'ok': True}, 'tp1-dflash-n16-s400': {'ok': True},
                                'tp1-dflash-n16-s800': {'ok': True}}
    assert result['drafts_not_checked'] == ['%s/dflash-demo/checkpoint-800 (stage tp1-dflash-n16-s800)' % checkpoints]
    # a checkpoint the plan found here is checked: gone since, it is named
    (here / 'config.json').unlink()
    result = run_module(sglang_preflight, dict(python=sys.executable, stages=stages))
    assert result['failed']
    assert 'the draft folder %s (stage tp1-dflash-n16-s400) has no config.json' % here in result['msg']
    assert 'checkpoint-800' not in result['msg']


def test_a_list_of_drafts_on_the_host_is_checked_as_before(run_module, sglang_env, tmp_path):
    there = folder(tmp_path / 'drafts' / 'checkpoint-4')
    stages = plan(tmp_path, [str(there), str(tmp_path / 'drafts' / 'checkpoint-8')])
    result = run_module(sglang_preflight, dict(python=sys.executable, stages=stages))
    assert result['failed'] and result['drafts_not_checked'] == []
    assert ('the draft folder %s (stage tp1-dflash-n16-s8) does not exist or is not a folder' % (tmp_path / 'drafts' / 'checkpoint-8')
            in result['msg'])
    assert str(there) + ' ' not in result['msg']
