# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The example campaigns in campaigns/*.yml plan on their hosts, measure real prompt sets, and the demo's prompt
files (sim.yml, make demo) are prepared offline at about today's demo size."""

from __future__ import annotations

import glob
import json
import os

import jinja2
import jinja2.meta
import pytest
import yaml

from ansible_collections.specdec.bench.plugins.plugin_utils.plan import campaign_plan
from ansible_collections.specdec.bench.plugins.plugin_utils import datasets

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
CAMPAIGNS = os.path.join(REPO_ROOT, 'campaigns')
REAL_SETS = ['mt-bench', 'gsm8k', 'humaneval', 'math500', 'spec-bench']
# the SGLang build each simulated host runs (tests/sim/hosts/*.yml): the CT200's DDTree build, the A100 box's release
BUILDS = {'ct200': 'sglang-ddtree-pr29907', 'a100box': 'sglang-0.5.23'}
GPUS = {'ct200': (8, 97887), 'a100box': (6, 40960)}
# today's demo sent 16 random prompts of 128 tokens per harness run; the demo's sets together stay about that size
DEMO_TURN_REQUESTS = 17
DEMO_MAX_NEW_TOKENS = 128


def host_facts(host):
    count, mib = GPUS[host]
    return {'nvidia_gpus': [{'index': i, 'uuid': 'GPU-%s-%d' % (host, i), 'memory_total_mib': mib, 'processes': []}
                            for i in range(count)], 'specdec_host': {'listening_ports': []}}


def _render(value, variables):
    """The spec's strings templated with the file's own scalar variables (evaluate-sim.yml's evaluate_run), as Ansible does."""
    if isinstance(value, str) and '{{' in value:
        names = jinja2.meta.find_undeclared_variables(jinja2.Environment().parse(value))
        # only what the file defines itself; the rest (inventory variables) is Ansible's at run time
        return jinja2.Template(value, undefined=jinja2.StrictUndefined).render(**variables) if names <= set(variables) else value
    if isinstance(value, dict):
        return {key: _render(item, variables) for key, item in value.items()}
    if isinstance(value, list):
        return [_render(item, variables) for item in value]
    return value


def example_specs():
    """(file, host, spec) for every campaign spec in campaigns/*.yml (sim.yml holds one per host)."""
    specs = []
    for path in sorted(glob.glob(os.path.join(CAMPAIGNS, '*.yml'))):
        with open(path, encoding='utf-8') as handle:
            data = yaml.safe_load(handle)
        data = _render(data, {key: value for key, value in data.items() if isinstance(value, (str, int, float))})
        per_host = data.get('sim_specs') or {data['campaign_hosts']: data['campaign_spec']}
        specs.extend((os.path.basename(path), host, spec) for host, spec in sorted(per_host.items()))
    return specs


def checkpoint_records(run, steps):
    """What specdec.bench.checkpoint_facts lists of a training run's checkpoints on the training host."""
    return [{'name': 'checkpoint-%d' % step, 'step': step, 'path': '/root/train_runs/%s/checkpoints/checkpoint-%d' % (run, step),
             'bytes': 262144 + 900, 'mtime': 1.0, 'files': [], 'installed': None} for step in steps]


def stages_of(host, spec):
    draft = spec.get('draft')
    sweep = {}
    if isinstance(draft, dict) and 'run' in draft:  # a checkpoint set: the campaign role lists them on the training host
        sweep = {'draft_checkpoints': checkpoint_records(draft['run'], (50, 100, 150, 200, 300)), 'installed_checkpoints': []}
    return campaign_plan(host_facts(host), spec, {'build': BUILDS[host], 'model_bytes': 55 * 10 ** 9}, sweep)


CAMPAIGN_SPECS = example_specs()


def test_every_example_file_is_found():
    assert sorted(set((name, host) for name, host, _spec in CAMPAIGN_SPECS)) == [
        ('a100box.yml', 'a100box'), ('ct200.yml', 'ct200'), ('evaluate-sim.yml', 'ct200'), ('sim-load.yml', 'ct200'),
        ('sim.yml', 'a100box'), ('sim.yml', 'ct200')]


def test_the_evaluation_example_measures_each_checkpoint_it_picks_and_the_baseline_once():
    (spec,) = [spec for name, _host, spec in CAMPAIGN_SPECS if name == 'evaluate-sim.yml']
    assert spec['campaign'] == 'eval-dflash-ckpt'
    stages = stages_of('ct200', spec)
    # every: 100 picks 100, 200, 300 of the listed 50..300
    assert [stage['id'] for stage in stages] == ['tp1-autoregressive', 'tp1-dflash-n16-s100', 'tp1-dflash-n16-s200',
                                                 'tp1-dflash-n16-s300']
    assert all(not stage['draft_checkpoint']['present'] for stage in stages[1:])
    assert stages[2]['draft_path'] == '/var/lib/specdec/checkpoints/dflash-ckpt/checkpoint-200'


@pytest.mark.parametrize('name, host, spec', CAMPAIGN_SPECS, ids=['%s:%s' % (name, host) for name, host, _spec in CAMPAIGN_SPECS])
def test_every_example_plans_on_its_host_and_every_stage_carries_the_workload(name, host, spec):
    stages = stages_of(host, spec)
    assert stages and any(stage['feasible'] for stage in stages)
    workload = stages[0]['workload']
    assert all(stage['workload'] == workload for stage in stages)
    assert workload['temperature'] == [0.0] and workload['stop_at_eos'] is True
    if any(entry['kind'] != 'random' for entry in workload['datasets']):  # random prompts are token ids, no template
        assert workload['chat_template_kwargs'] == {'enable_thinking': False}  # Qwen3.x, measured with thinking off


@pytest.mark.parametrize('name', ['ct200.yml', 'a100box.yml'])
def test_the_lab_campaigns_measure_the_references_sets_at_t0(name):
    (host, spec), = [(host, spec) for file_name, host, spec in CAMPAIGN_SPECS if file_name == name]
    workload = stages_of(host, spec)[0]['workload']
    assert [(entry['name'], entry['kind']) for entry in workload['datasets']] == [(s, 'builtin') for s in REAL_SETS]
    assert all(entry['max_new_tokens'] == datasets.DEFAULT_MAX_NEW_TOKENS and entry['turns'] == 'all'
               for entry in workload['datasets'])


def demo_entries():
    (ct200,) = [spec for name, host, spec in CAMPAIGN_SPECS if (name, host) == ('sim.yml', 'ct200')]
    (a100box,) = [spec for name, host, spec in CAMPAIGN_SPECS if (name, host) == ('sim.yml', 'a100box')]
    assert stages_of('ct200', ct200)[0]['workload'] == stages_of('a100box', a100box)[0]['workload']
    return stages_of('ct200', ct200)[0]['workload']['datasets']


def test_the_demo_runs_every_demo_prompt_file_offline(tmp_path):
    entries = demo_entries()
    files = sorted(os.path.relpath(path, CAMPAIGNS) for path in glob.glob(os.path.join(CAMPAIGNS, 'prompts', 'demo-*.jsonl')))
    assert sorted(entry['file'] for entry in entries) == files
    for entry in entries:
        assert entry['kind'] == 'file' and entry['name'] == os.path.basename(entry['file'])[:-len('.jsonl')]
        # file: paths are relative to the campaign file's folder; nothing is downloaded
        prepared = datasets.prepare(entry, cache=str(tmp_path), base_dir=CAMPAIGNS)
        assert prepared['source'] == os.path.join(CAMPAIGNS, entry['file'])
        with open(prepared['path'], encoding='utf-8') as handle:
            records = [json.loads(line) for line in handle]
        assert records and all(record['id'].startswith('demo-') for record in records)  # labelled as demo prompts
        assert len(records) == prepared['count'] == (entry['num_prompts'] or len(records))


def test_the_demo_stays_about_todays_size(tmp_path):
    entries = demo_entries()
    assert all(entry['max_new_tokens'] <= DEMO_MAX_NEW_TOKENS for entry in entries)
    requests = 0
    for entry in entries:
        prepared = datasets.prepare(entry, cache=str(tmp_path), base_dir=CAMPAIGNS)
        with open(prepared['path'], encoding='utf-8') as handle:
            requests += sum(len(json.loads(line)['turns']) for line in handle)
    assert requests == DEMO_TURN_REQUESTS  # the figure sim.yml's header gives


def test_the_demo_spec_bench_shows_math_code_and_translation():
    (entry,) = [entry for entry in demo_entries() if entry['name'] == 'demo-spec-bench']
    assert entry['categories'] == ['coding', 'translation', 'math_reasoning']


@pytest.mark.parametrize('name, host, repeats', [('ct200.yml', 'ct200', 3), ('a100box.yml', 'a100box', 3),
                                                 ('sim.yml', 'ct200', 3), ('sim.yml', 'a100box', 1)])
def test_the_lab_campaigns_and_the_demos_ct200_measure_three_repeats(name, host, repeats):
    (spec,) = [spec for file_name, spec_host, spec in CAMPAIGN_SPECS if (file_name, spec_host) == (name, host)]
    assert {stage['repeats'] for stage in stages_of(host, spec)} == {repeats}


def test_the_load_example_gives_every_stage_the_same_rates_slo_and_search():
    (spec,) = [spec for name, _host, spec in CAMPAIGN_SPECS if name == 'sim-load.yml']
    stages = [stage for stage in stages_of('ct200', spec) if not stage['alone']]
    load = stages[0]['load']
    assert load['request_rates'] and load['slo'] and load['search'] and load['crossover_concurrency']
    assert all(stage['load'] == load for stage in stages)  # a paired design: the same load on every stage
    assert all(stage['workload']['request_rate'] == 'inf' for stage in stages)  # a rate list: the grid closed-loop
    assert not set(load['crossover_concurrency']) & set(stages[0]['concurrency'])
