# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""campaign_plan's draft as a sweep: a list of checkpoints, a glob on the benchmark host, or a checkpoint set of a
training run on another host; each checkpoint a sweep value of the methods that use the draft, the autoregressive
baseline once per TP; what is already here, what is in the way, and whether the copies fit on the disk."""

from __future__ import annotations

import copy

import pytest

from ansible.errors import AnsibleFilterError
from ansible.module_utils import _internal as _module_internal
from ansible_collections.specdec.bench.plugins.filter.campaign import campaign_done, campaign_spec_changes
from ansible_collections.specdec.bench.plugins.plugin_utils.plan import campaign_plan
from ansible_collections.specdec.bench.plugins.filter.plan_lines import plan_lines

_module_internal.is_controller = False


@pytest.fixture(autouse=True)
def _controller_mode(monkeypatch):
    monkeypatch.setattr(_module_internal, 'is_controller', True)


DDTREE_BUILD = 'sglang-ddtree-pr29907'
GIB = 1024 ** 3
KIB256 = 256 * 1024
ROOT = '/root/train_runs/dflash-demo/checkpoints'
DEST = '/var/lib/specdec/checkpoints/dflash-demo'


def facts(count=4, mib=97887):
    return {'nvidia_gpus': [{'index': i, 'uuid': 'GPU-%d' % i, 'memory_total_mib': mib, 'processes': []} for i in range(count)],
            'specdec_host': {'listening_ports': []}}


def spec(draft, tp=(1,), methods=None, model_bytes=None):
    model = {'path': '/models/Qwen3.6-27B'}
    if model_bytes:
        model['bytes'] = model_bytes
    return {'campaign': 'ckpt', 'model': model, 'draft': draft, 'tp': list(tp),
            'methods': methods or {'autoregressive': {}, 'dflash': {'num_draft_tokens': [16]}},
            'workload': {'input_len': 8, 'output_len': 8, 'num_prompts': 2}, 'concurrency': [1]}


def record(step, root=ROOT, size=KIB256, installed=None, name=None):
    name = name or 'checkpoint-%d' % step
    return {'name': name, 'step': step, 'path': '%s/%s' % (root, name), 'bytes': size, 'mtime': 1.0e9 + step,
            'files': [{'path': 'config.json', 'bytes': 812}, {'path': 'model.safetensors', 'bytes': size - 812}],
            'installed': installed}


def installed(step, host='a100box', size=KIB256, source_root=ROOT):
    """A record as checkpoint_facts lists it under <checkpoint_dir>/<run> on the benchmark host, with its manifest."""
    manifest = {'source_host': host, 'source_path': '%s/checkpoint-%d' % (source_root, step), 'name': 'checkpoint-%d' % step,
                'step': step, 'run': 'dflash-demo', 'bytes': size, 'files': [], 'installed': '2026-12-03T20:00:00Z'}
    return record(step, root=DEST, size=size, installed=manifest)


TRAINED = [record(step) for step in (200, 400, 600, 800, 1000)]
SET = {'run': 'dflash-demo', 'host': 'a100box'}


def plan(draft, draft_checkpoints=None, gpus=None, **checkpoints):
    """The plan of a spec with this draft, given the checkpoint inputs by name (tp, methods and model_bytes: the spec's)."""
    tp = checkpoints.pop('tp', (1,))
    methods = checkpoints.pop('methods', None)
    model_bytes = checkpoints.pop('model_bytes', None)
    return campaign_plan(gpus or facts(), spec(draft, tp, methods, model_bytes), {'build': DDTREE_BUILD},
                         dict(checkpoints, draft_checkpoints=draft_checkpoints))


def refusal(draft, draft_checkpoints=None, **kwargs):
    with pytest.raises(AnsibleFilterError) as error:
        plan(draft, draft_checkpoints, **kwargs)
    message = str(error.value)
    assert message.startswith('campaign_plan: ')
    return message


def ids(stages):
    return [stage['id'] for stage in stages]


def by_id(stages):
    return dict((stage['id'], stage) for stage in stages)


# --- one draft: as before ------------------------------------------------------------------------------------------

@pytest.mark.parametrize('draft', ['/models/d', {'path': '/models/d'}, {'path': '/models/d', 'bytes': 2 * GIB}])
def test_a_single_draft_plans_as_before(draft):
    stages = plan(draft)
    assert ids(stages) == ['tp1-autoregressive', 'tp1-dflash-n16']
    assert stages[1]['params'] == {'num_draft_tokens': 16} and stages[1]['draft_path'] == '/models/d'
    assert [stage['draft_checkpoint'] for stage in stages] == [None, None]
    assert '--speculative-draft-model-path=/models/d' in stages[1]['argv']


# --- a list of checkpoints ------------------------------------------------------------------------------------------

def test_a_list_is_a_sweep_by_step_and_the_baseline_runs_once_per_tp():
    draft = ['/ckpt/run/checkpoint-800', {'path': '/ckpt/run/step_400', 'bytes': 3 * GIB}, {'path': '/ckpt/final', 'step': 1200}]
    stages = plan(draft, tp=(1, 2), methods={'autoregressive': {}, 'dflash': {'num_draft_tokens': [8, 16]}})
    assert ids(stages) == [
        'tp1-autoregressive',
        'tp1-dflash-n8-s400', 'tp1-dflash-n8-s800', 'tp1-dflash-n8-s1200',
        'tp1-dflash-n16-s400', 'tp1-dflash-n16-s800', 'tp1-dflash-n16-s1200',
        'tp2-autoregressive',
        'tp2-dflash-n8-s400', 'tp2-dflash-n8-s800', 'tp2-dflash-n8-s1200',
        'tp2-dflash-n16-s400', 'tp2-dflash-n16-s800', 'tp2-dflash-n16-s1200']
    assert len(set(stage['port'] for stage in stages)) == len(stages)
    stage = by_id(stages)['tp1-dflash-n16-s400']
    assert stage['params'] == {'num_draft_tokens': 16, 'step': 400}
    assert stage['draft_path'] == '/ckpt/run/step_400'
    assert stage['draft_checkpoint'] == {'name': 'step_400', 'step': 400, 'run': None, 'source_host': None,
                                         'source_path': '/ckpt/run/step_400', 'path': '/ckpt/run/step_400',
                                         'bytes': 3 * GIB, 'present': True}
    assert '--speculative-draft-model-path=/ckpt/run/step_400' in stage['argv']
    assert stage['description'] == 'ckpt tp1-dflash-n16-s400: dflash num_draft_tokens=16 step 400, TP1 on GPU(s) 0'
    assert by_id(stages)['tp1-dflash-n8-s1200']['draft_checkpoint']['name'] == 'final'
    auto = by_id(stages)['tp1-autoregressive']
    assert (auto['params'], auto['draft_path'], auto['draft_checkpoint']) == ({}, None, None)


@pytest.mark.parametrize('draft, fragments', [
    ([], ['draft is an empty list', 'allowed: a non-empty list of paths or {path, bytes, step}']),
    (['/m/checkpoint-4', '/models/x'], ['draft[1].step is missing and /models/x has no step in its name',
                                        'allowed: a positive integer step, or a folder named by its step (checkpoint-4000)']),
    (['/m/checkpoint-0'], ['draft[0].step is missing and /m/checkpoint-0 has no step', 'a positive integer step']),
    ([{'path': '/m/a', 'step': 0}], ['draft[0].step is 0', 'allowed: a positive integer step']),
    ([{'path': '/m/a', 'step': '4'}], ["draft[0].step is '4'", 'a positive integer step']),
    (['/m/checkpoint-4', {'path': '/m/b', 'step': 4}], ['draft[1].step repeats step 4 of draft[0]', 'allowed: distinct steps']),
    (['/m/checkpoint-4', {'path': '/m/checkpoint-4/', 'step': 8}], ['draft[1].path repeats /m/checkpoint-4 of draft[0]', 'distinct paths']),
    (['m/checkpoint-4'], ['draft[0].path is', 'an absolute path on the host']),
    ([{'path': '/m/checkpoint-4', 'run': 'x'}], ['draft[0] has unknown key(s) run', 'allowed: path, bytes, step']),
    ([{'path': '/m/checkpoint-4', 'bytes': -1}], ['draft[0].bytes is -1', 'a positive integer number of bytes']),
    ([3], ['draft[0] is 3, not a mapping', 'path, bytes, step']),
])
def test_a_bad_list_names_the_entry_and_what_is_allowed(draft, fragments):
    message = refusal(draft)
    for fragment in fragments:
        assert fragment in message, (fragment, message)


# --- a glob on this host ----------------------------------------------------------------------------------------------

def test_a_glob_sweeps_the_checkpoints_found_here_picked_by_every_and_last():
    here = [record(step, root='/models/drafts') for step in (500, 1000, 1500, 2000, 3000)] + [record(7, root='/elsewhere')]
    stages = plan({'glob': '/models/drafts/checkpoint-*', 'every': 1000, 'last': 2}, here)
    assert ids(stages) == ['tp1-autoregressive', 'tp1-dflash-n16-s2000', 'tp1-dflash-n16-s3000']
    checkpoint = stages[2]['draft_checkpoint']
    assert checkpoint == {'name': 'checkpoint-3000', 'step': 3000, 'run': None, 'source_host': None,
                          'source_path': '/models/drafts/checkpoint-3000', 'path': '/models/drafts/checkpoint-3000',
                          'bytes': KIB256, 'present': True}
    assert stages[2]['draft_path'] == '/models/drafts/checkpoint-3000'
    assert ids(plan({'glob': '/models/drafts/*'}, here))[1:] == ['tp1-dflash-n16-s%d' % s for s in (500, 1000, 1500, 2000, 3000)]


def test_a_glob_that_picks_nothing_or_has_no_listing_is_refused():
    here = [record(step, root='/models/drafts') for step in (500, 1500)]
    message = refusal({'glob': '/models/drafts/*', 'every': 1000}, here)
    assert 'draft: glob /models/drafts/* picked no checkpoint (2 listed (2 matching), every 1000, last not set)' in message
    message = refusal({'glob': '/models/drafts/*'})
    assert 'draft_checkpoints' in message and 'specdec.bench.checkpoint_facts' in message and 'the campaign role lists them' in message
    assert "draft.glob is 'drafts/*'" in refusal({'glob': 'drafts/*'}, here)
    assert 'draft has unknown key(s) host; allowed: glob, every, last' in refusal({'glob': '/m/*', 'host': 'x'}, here)
    assert 'draft has unknown key(s) glob; allowed: run, host, every, last, root' in refusal({'glob': '/m/*', 'run': 'x'}, here)


# --- a checkpoint set of a training run on another host -----------------------------------------------------------

def test_a_set_plans_the_picked_checkpoints_to_be_copied_into_the_checkpoint_dir():
    stages = plan(dict(SET, every=400), TRAINED)
    assert ids(stages) == ['tp1-autoregressive', 'tp1-dflash-n16-s400', 'tp1-dflash-n16-s800']
    stage = stages[1]
    assert stage['draft_checkpoint'] == {
        'name': 'checkpoint-400', 'step': 400, 'run': 'dflash-demo', 'source_host': 'a100box',
        'source_path': ROOT + '/checkpoint-400', 'path': DEST + '/checkpoint-400', 'bytes': KIB256, 'present': False}
    assert stage['draft_path'] == DEST + '/checkpoint-400' and stage['feasible'] is True
    assert '--speculative-draft-model-path=%s/checkpoint-400' % DEST in stage['argv']
    assert ['--speculative-draft-model-path', DEST + '/checkpoint-400'] in stage['sglang_args']
    assert stage['params'] == {'num_draft_tokens': 16, 'step': 400}
    # last, every and last, another checkpoint_dir
    assert ids(plan(dict(SET, last=2), TRAINED))[1:] == ['tp1-dflash-n16-s800', 'tp1-dflash-n16-s1000']
    assert ids(plan(dict(SET, every=200, last=1), TRAINED))[1:] == ['tp1-dflash-n16-s1000']
    other = plan(dict(SET, last=1), TRAINED, checkpoint_dir='/data/ckpt/')
    assert other[1]['draft_path'] == '/data/ckpt/dflash-demo/checkpoint-1000'


def test_a_set_with_a_ddtree_method_sweeps_both_methods_and_the_step_is_last_in_the_id():
    stages = plan(dict(SET, last=2), TRAINED, methods={'autoregressive': {}, 'dflash': {}, 'ddtree': {'budget': [32, 64]}})
    assert ids(stages) == ['tp1-autoregressive', 'tp1-dflash-n16-s800', 'tp1-dflash-n16-s1000',
                           'tp1-ddtree-b32-k4-s800', 'tp1-ddtree-b32-k4-s1000', 'tp1-ddtree-b64-k4-s800', 'tp1-ddtree-b64-k4-s1000']


def test_an_installed_copy_of_the_same_source_is_present():
    here = [installed(400), installed(800, host='trainbox')]
    stages = by_id(plan(dict(SET, every=400), TRAINED, installed_checkpoints=here))
    assert stages['tp1-dflash-n16-s400']['draft_checkpoint']['present'] is True
    assert stages['tp1-dflash-n16-s400']['feasible'] is True
    # the same name copied from another host is in the way: never overwritten, the stage cannot run
    s800 = stages['tp1-dflash-n16-s800']
    assert s800['draft_checkpoint']['present'] is False and s800['feasible'] is False
    assert s800['reason'] == (
        'a different checkpoint is already at %s/checkpoint-800 (installed from trainbox:%s/checkpoint-800, 262144 bytes; '
        'this one is a100box:%s/checkpoint-800, 262144 bytes); it is never overwritten' % (DEST, ROOT, ROOT))


@pytest.mark.parametrize('here, what', [
    (installed(400, size=KIB256 + 1), 'installed from a100box:%s/checkpoint-400, 262145 bytes' % ROOT),
    (installed(400, source_root='/root/train_runs/other/checkpoints'),
     'installed from a100box:/root/train_runs/other/checkpoints/checkpoint-400, 262144 bytes'),
    (record(400, root=DEST), 'a checkpoint folder no copy of specdec installed (no .specdec-checkpoint.json)'),
])
def test_a_folder_at_the_destination_that_is_not_that_checkpoint_makes_its_stage_infeasible(here, what):
    stage = plan(dict(SET, every=400, last=1), TRAINED, installed_checkpoints=[here])[1]
    assert stage['id'] == 'tp1-dflash-n16-s800' and stage['feasible'] is True  # another name: not in the way
    stage = plan(dict(SET, every=400, last=2), TRAINED, installed_checkpoints=[here])[1]
    assert stage['id'] == 'tp1-dflash-n16-s400' and stage['feasible'] is False
    assert stage['draft_checkpoint']['present'] is False
    assert stage['reason'].startswith('a different checkpoint is already at %s/checkpoint-400 (%s; ' % (DEST, what))
    assert stage['reason'].endswith('); it is never overwritten')


def test_step_zero_is_not_measured_and_records_are_taken_in_step_order():
    listed = [record(800), record(0), record(400)]
    assert ids(plan(SET, listed))[1:] == ['tp1-dflash-n16-s400', 'tp1-dflash-n16-s800']


@pytest.mark.parametrize('draft, fragments', [
    (dict(SET, every=0), ['draft.every is 0', 'allowed: a positive integer']),
    (dict(SET, last='2'), ["draft.last is '2'", 'a positive integer']),
    (dict(SET, root='train_runs/x'), ["draft.root is 'train_runs/x'", 'an absolute path']),
    (dict(SET, run='Dflash Demo'), ['draft.run', '[a-z0-9][a-z0-9._-]*']),
    (dict(SET, host=''), ["draft.host is ''", 'the inventory name of the training host']),
    ({'run': 'dflash-demo'}, ['draft.host is None', 'the inventory name of the training host']),
    (dict(SET, keep=3), ['draft has unknown key(s) keep', 'allowed: run, host, every, last, root']),
    ({'path': '/m/d', 'every': 2}, ['draft has unknown key(s) every', 'a path or {path, bytes} (one draft)',
                                    '{glob, every, last}', '{run, host, every, last, root}']),
])
def test_a_bad_set_names_the_field_and_the_allowed_values(draft, fragments):
    message = refusal(draft, TRAINED)
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_a_set_that_picks_nothing_or_comes_without_its_listing_is_refused():
    message = refusal(dict(SET, every=3000, last=2), TRAINED)
    assert ('draft: checkpoint set of run dflash-demo on a100box picked no checkpoint (5 listed at %s, every 3000, last 2)'
            % ROOT) in message
    message = refusal(dict(SET, root='/data/runs/dflash-demo/ckpt'), [])
    assert 'picked no checkpoint (0 listed at /data/runs/dflash-demo/ckpt, every not set, last not set)' in message
    message = refusal(SET)
    assert ('draft is a checkpoint set of run dflash-demo on a100box, and draft_checkpoints (the checkpoints it picks from) '
            'is not given; allowed: draft_checkpoints as the campaign role lists them (specdec.bench.checkpoint_facts on the '
            'training host)') in message
    # autoregressive alone does not use the draft: nothing to list
    assert ids(plan(SET, methods={'autoregressive': {}}, tp=(1, 2))) == ['tp1-autoregressive', 'tp2-autoregressive']


@pytest.mark.parametrize('records, fragments', [
    ('x', ['draft_checkpoints is', 'a list of checkpoint records as specdec.bench.checkpoint_facts returns them']),
    ([dict(record(400), name='../x')], ["draft_checkpoints[0].name is '../x'", 'a checkpoint folder name']),
    ([dict(record(400), path='x/checkpoint-400')], ['draft_checkpoints[0].path', 'an absolute path']),
    ([dict(record(400), bytes=None)], ['draft_checkpoints[0].bytes is None', "the checkpoint's size"]),
    ([dict(record(400), step='400')], ["draft_checkpoints[0].step is '400'", 'an integer >= 0']),
])
def test_bad_checkpoint_records_are_refused(records, fragments):
    message = refusal(SET, records)
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    assert 'installed_checkpoints[0].installed' in refusal(SET, TRAINED, installed_checkpoints=[dict(installed(400), installed='yes')])


def test_a_method_with_a_parameter_named_step_cannot_sweep_checkpoints():
    table = {'autoregressive': {}, 'mine': {'args': [['--speculative-draft-model-path', '{draft}'], ['--x', '{step}']],
                                            'params': {'step': {'default': 1}}}}
    with pytest.raises(AnsibleFilterError) as error:
        campaign_plan(facts(), dict(spec(SET), methods={'mine': {}}), {'methods': table}, {'draft_checkpoints': TRAINED})
    assert 'method mine has a parameter step of its own' in str(error.value)
    assert len(campaign_plan(facts(), dict(spec('/m/d'), methods={'mine': {}}), {'methods': table})) == 1


# --- the fit uses the checkpoint's bytes ---------------------------------------------------------------------------

def test_the_fit_adds_the_checkpoints_own_bytes():
    a100 = facts(count=2, mib=40960)
    model = int(31.5 * GIB)  # fits TP1 by 0.5 GiB alone
    listed = [record(400, size=KIB256), record(800, size=2 * GIB)]
    stages = by_id(plan(SET, listed, gpus=a100, model_bytes=model, tp=(1,)))
    assert stages['tp1-autoregressive']['feasible'] is True
    assert stages['tp1-dflash-n16-s400']['feasible'] is True
    assert stages['tp1-dflash-n16-s400']['fit']['model_bytes'] == model + KIB256
    assert stages['tp1-dflash-n16-s800']['feasible'] is False and stages['tp1-dflash-n16-s800']['fit']['model_bytes'] == model + 2 * GIB
    # a list entry's bytes count the same way; without bytes the draft adds nothing (as a single draft without bytes)
    stages = by_id(plan(['/m/checkpoint-1', {'path': '/m/checkpoint-2', 'bytes': 2 * GIB}], gpus=a100, model_bytes=model))
    assert stages['tp1-dflash-n16-s1']['fit']['model_bytes'] == model
    assert stages['tp1-dflash-n16-s2']['fit']['model_bytes'] == model + 2 * GIB


# --- the disk at checkpoint_dir ---------------------------------------------------------------------------------------

def test_the_copies_fit_on_the_disk_keeping_the_margin():
    listed = [record(step, size=GIB // 2) for step in (400, 800, 1200)]
    # 1.5 GiB to copy; 2.5 GiB free keeps exactly 1 GiB
    assert len(plan(SET, listed, checkpoint_free_bytes=int(2.5 * GIB), tp=(1, 2))) == 8
    assert len(plan(SET, listed, checkpoint_free_bytes=int(1.6 * GIB), checkpoint_min_free_gib=0)) == 4
    # not checked without the free bytes
    assert len(plan(SET, listed, checkpoint_free_bytes=None)) == 4


def test_copies_that_do_not_fit_fail_before_anything_moves():
    listed = [record(step, size=GIB // 2) for step in (400, 800, 1200)]
    message = refusal(SET, listed, checkpoint_free_bytes=int(0.9 * GIB), tp=(1, 2))
    assert message == (
        'campaign_plan: draft: the 3 checkpoints to copy (checkpoint-400, checkpoint-800, checkpoint-1200) take 1.5 GiB and '
        '/var/lib/specdec/checkpoints has 921.6 MiB free, keeping checkpoint_min_free_gib 1; allowed: more free space, or fewer '
        'checkpoints (draft.every, draft.last)')
    assert 'has 2.4 GiB free' in refusal(SET, listed, checkpoint_free_bytes=int(2.4 * GIB))


def test_the_disk_counts_only_checkpoints_not_here_of_feasible_stages_once_each():
    listed = [record(step, size=GIB // 2) for step in (400, 800, 1200)]
    here = [installed(400, size=GIB // 2), installed(1200, host='trainbox', size=GIB // 2)]
    # 400 is here, 1200's stage cannot run (another copy in the way): only 800 is copied, once for two TP sizes
    stages = plan(SET, listed, installed_checkpoints=here, checkpoint_free_bytes=int(1.5 * GIB), tp=(1, 2))
    assert [stage['feasible'] for stage in stages] == [True, True, True, False] * 2
    message = refusal(SET, listed, installed_checkpoints=here, checkpoint_free_bytes=int(1.4 * GIB))
    assert 'the 1 checkpoint to copy (checkpoint-800) takes 512.0 MiB' in message
    # stages that do not fit the GPUs copy nothing
    small = facts(count=1, mib=40960)
    stages = plan(SET, listed, gpus=small, model_bytes=40 * GIB, checkpoint_free_bytes=0)
    assert not any(stage['feasible'] for stage in stages)


@pytest.mark.parametrize('kwargs, fragments', [
    ({'checkpoint_dir': 'var/ckpt'}, ["checkpoint_dir is 'var/ckpt'", 'an absolute path']),
    ({'checkpoint_free_bytes': -1}, ['checkpoint_free_bytes is -1', 'an integer >= 0, or null (not checked)']),
    ({'checkpoint_free_bytes': 1.5}, ['checkpoint_free_bytes is 1.5']),
    ({'checkpoint_min_free_gib': -1}, ['checkpoint_min_free_gib is -1', 'a number of GiB >= 0']),
])
def test_bad_checkpoint_options_are_refused(kwargs, fragments):
    message = refusal(SET, TRAINED, **kwargs)
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_the_plan_is_the_same_for_the_same_input():
    first = plan(dict(SET, every=400), copy.deepcopy(TRAINED), installed_checkpoints=[installed(400)])
    again = plan(dict(SET, every=400), list(reversed(TRAINED)), installed_checkpoints=[installed(400)])
    assert first == again


# --- a rerun: copied checkpoints are not a change, new ones are added stages ----------------------------------------

def test_a_rerun_after_the_copies_and_with_new_checkpoints_is_no_spec_change():
    first = plan(dict(SET, every=400), TRAINED[:4])  # 400 and 800, not here yet
    assert [stage['draft_checkpoint']['present'] for stage in first[1:]] == [False, False]
    recorded = copy.deepcopy(first)  # what campaign.json keeps
    # both copied since, and training wrote checkpoint-1200: present flips, a new stage appears
    again = plan(dict(SET, every=400), TRAINED[:4] + [record(1200)],
                 installed_checkpoints=[installed(400), installed(800)])
    assert ids(again) == ['tp1-autoregressive', 'tp1-dflash-n16-s400', 'tp1-dflash-n16-s800', 'tp1-dflash-n16-s1200']
    assert [stage['draft_checkpoint']['present'] for stage in again[1:]] == [True, True, False]
    assert campaign_spec_changes(again, recorded) == []
    status = {'stages': dict((stage['id'], {'status': 'ok'}) for stage in recorded)}
    assert campaign_done(again, status) == ['tp1-autoregressive', 'tp1-dflash-n16-s400', 'tp1-dflash-n16-s800']


def test_a_checkpoint_of_the_same_name_from_another_source_is_a_spec_change():
    recorded = plan(dict(SET, every=400), TRAINED)
    moved = plan(dict(SET, every=400, host='trainbox'), TRAINED)
    assert campaign_spec_changes(moved, recorded) == ['tp1-dflash-n16-s400 (draft_checkpoint)', 'tp1-dflash-n16-s800 (draft_checkpoint)']
    rewritten = plan(dict(SET, every=400), [record(400, size=KIB256 + 4096)] + TRAINED[2:])
    assert campaign_spec_changes(rewritten, recorded) == ['tp1-dflash-n16-s400 (draft_checkpoint)']
    # a single draft has none, as campaign.json recorded before checkpoints existed
    single = plan('/models/d')
    assert campaign_spec_changes(single, [dict((k, v) for k, v in stage.items() if k != 'draft_checkpoint') for stage in single]) == []


# --- the plan's lines in check mode ------------------------------------------------------------------------------------

def unpinned(stages):
    """The stages without their CPU/NUMA pinning keys, as planned before pinning: plan_lines then says nothing of it
    (test_plan_pinning.py tests those words)."""
    return [dict((key, value) for key, value in stage.items() if key not in ('cpu_affinity', 'numa_nodes', 'pin_note'))
            for stage in stages]


def test_plan_lines_say_which_checkpoint_each_stage_runs_and_what_is_copied():
    here = [installed(400), installed(1200, host='trainbox')]
    stages = plan(dict(SET, every=400), TRAINED + [record(1200)], installed_checkpoints=here)
    lines = plan_lines(unpinned(stages), 'ckpt', 'ct200')
    assert lines[0] == 'ckpt on ct200: 4 stage(s), 3 feasible, 0 blocked'
    assert lines[1].startswith('workload: random (2 prompts')
    assert lines.pop(2) == 'draft checkpoints: 1 to copy (256.0 KiB) from a100box, 1 already here'
    assert lines[2] == 'stage 1/4 tp1-autoregressive: autoregressive, TP1 on GPU(s) 0, port 31000, feasible'
    assert lines[3] == ('stage 2/4 tp1-dflash-n16-s400: dflash num_draft_tokens=16, TP1 on GPU(s) 0, port 31001, feasible, '
                        'draft checkpoint-400 (step 400) of run dflash-demo, already here')
    assert lines[4] == ('stage 3/4 tp1-dflash-n16-s800: dflash num_draft_tokens=16, TP1 on GPU(s) 0, port 31002, feasible, '
                        'draft checkpoint-800 (step 800) of run dflash-demo, to copy from a100box (256.0 KiB)')
    assert lines[5].startswith('stage 4/4 tp1-dflash-n16-s1200: dflash num_draft_tokens=16, TP1 on GPU(s) 0, port 31003, '
                               'infeasible: a different checkpoint is already at %s/checkpoint-1200 (' % DEST)
    assert lines[5].endswith('draft checkpoint-1200 (step 1200) of run dflash-demo, to copy from a100box (256.0 KiB)')


def test_plan_lines_of_a_list_and_of_a_single_draft():
    lines = plan_lines(unpinned(plan(['/m/checkpoint-4', '/m/checkpoint-8'])), 'ckpt', 'ct200')
    assert lines[2] == 'draft checkpoints: 0 to copy, 2 already here'
    assert lines[3].endswith('feasible') and lines[4].endswith(', feasible, draft checkpoint-4 (step 4), already here')
    lines = plan_lines(unpinned(plan('/models/d')), 'ckpt', 'ct200')
    assert len(lines) == 4 and lines[3].endswith('dflash num_draft_tokens=16, TP1 on GPU(s) 0, port 31001, feasible')
