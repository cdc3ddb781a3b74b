# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""sglang_preflight: every stage's argv parsed in the servers' interpreter, in one process, before anything changes.

The interpreter here is this test's Python with the emulator's sglang package on its path: its
sglang.srt.server_args parser is made from the option lists generated from real SGLang 0.5.23's parser
(plugins/plugin_utils/sglang_builds), so it refuses what that release refuses. The same module against real SGLang
is tests/unit/plugins/filter/test_real_sglang_parser.py.
"""

from __future__ import annotations

import copy
import sys

import pytest

from ansible.module_utils import _internal as _module_internal
from ansible_collections.specdec.bench.plugins.plugin_utils.plan import campaign_plan
from ansible_collections.specdec.bench.plugins.modules import sglang_preflight

_module_internal.is_controller = False

CT200 = {'nvidia_gpus': [{'index': i, 'uuid': 'GPU-%d' % i, 'memory_total_mib': 97887, 'processes': []} for i in range(8)]}


@pytest.fixture(name='models')
def models_folders(tmp_path):
    for name in ('target', 'draft'):
        (tmp_path / name).mkdir()
        (tmp_path / name / 'config.json').write_text('{}')
    return tmp_path


def stages(models, build, methods, **spec):
    from ansible.module_utils import _internal  # the filter is controller code
    before = _internal.is_controller
    _internal.is_controller = True
    try:
        spec = dict({'campaign': 'pre', 'model': {'path': str(models / 'target'), 'bytes': 1000},
                     'draft': str(models / 'draft'), 'tp': [1], 'methods': methods,
                     'workload': {'input_len': 8, 'output_len': 8, 'num_prompts': 2}, 'concurrency': [1]}, **spec)
        return campaign_plan(CT200, spec, {'build': build, 'sglang_python': sys.executable})
    finally:
        _internal.is_controller = before


def test_every_stage_of_the_release_profile_is_accepted_in_one_process(run_module, sglang_env, models):
    planned = stages(models, 'sglang-0.5.23', {'autoregressive': {}, 'dflash': {'num_draft_tokens': [8, 16]}})
    result = run_module(sglang_preflight, dict(python=sys.executable, stages=planned))
    assert result['exit_code'] == 0, result['msg'] if 'msg' in result else result
    assert result['sglang_version'] == '0.5.23+sim'
    assert result['stages'] == {'tp1-autoregressive': {'ok': True}, 'tp1-dflash-n8': {'ok': True}, 'tp1-dflash-n16': {'ok': True}}


def test_a_renamed_flag_fails_naming_stage_flag_version_and_interpreter(run_module, sglang_env, models):
    planned = stages(models, 'sglang-0.5.23', {'autoregressive': {}, 'dflash': {}})
    old = copy.deepcopy(planned[1])
    old['argv'] = old['argv'] + ['--mamba-scheduler-strategy=extra_buffer']  # what the collection wrote before 0.5.23
    result = run_module(sglang_preflight, dict(python=sys.executable, stages=[planned[0], old]))
    assert result['failed'] and result['stages']['tp1-autoregressive'] == {'ok': True}
    assert ('stage tp1-dflash-n16: SGLang 0.5.23+sim (%s) refuses --mamba-scheduler-strategy: unrecognized arguments'
            % sys.executable) in result['msg']
    assert result['stages']['tp1-dflash-n16']['status'] == 2


def test_a_ddtree_stage_on_a_host_whose_sglang_is_the_release_is_refused(run_module, sglang_env, models):
    planned = stages(models, 'sglang-ddtree-pr29907', {'ddtree': {'budget': [64]}})
    result = run_module(sglang_preflight, dict(python=sys.executable, stages=planned))
    assert result['failed']
    assert 'stage tp1-ddtree-b64-k4: SGLang 0.5.23+sim' in result['msg']
    assert 'refuses --speculative-ddtree-budget: unrecognized arguments' in result['msg']
    sglang_env.setenv('SIM_SGLANG_BUILD', 'sglang-ddtree-pr29907')
    assert run_module(sglang_preflight, dict(python=sys.executable, stages=planned))['exit_code'] == 0


def test_missing_model_and_draft_folders_and_config_are_named(run_module, sglang_env, models):
    planned = stages(models, 'sglang-0.5.23', {'autoregressive': {}, 'dflash': {}})
    (models / 'target' / 'config.json').unlink()
    planned[1]['draft_path'] = str(models / 'nowhere')
    result = run_module(sglang_preflight, dict(python=sys.executable, stages=planned))
    assert result['failed']
    assert 'the model folder %s (stages tp1-autoregressive, tp1-dflash-n16) has no config.json' % (models / 'target') in result['msg']
    assert 'the draft folder %s (stage tp1-dflash-n16) does not exist or is not a folder' % (models / 'nowhere') in result['msg']


def test_an_interpreter_without_sglang_or_missing_is_named(run_module, sglang_env, models, monkeypatch):
    planned = stages(models, 'sglang-0.5.23', {'autoregressive': {}})
    monkeypatch.delenv('PYTHONPATH')
    result = run_module(sglang_preflight, dict(python=sys.executable, stages=planned))
    assert result['failed'] and "cannot import SGLang's server parser (sglang.srt.server_args)" in result['msg']
    result = run_module(sglang_preflight, dict(python='/opt/nowhere/bin/python', stages=planned))
    assert result['failed'] and "the servers' interpreter /opt/nowhere/bin/python does not exist" in result['msg']


def test_disabled_checks_nothing_and_warns(run_module, models):
    planned = stages(models, 'sglang-0.5.23', {'autoregressive': {}})
    result = run_module(sglang_preflight, dict(python='/opt/nowhere/bin/python', stages=planned, enabled=False))
    assert result['exit_code'] == 0 and result['stages'] == {}
    assert any('campaign_preflight is false' in text for text in result['warning_texts'])
