# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The example campaigns in campaigns/*.yml plan on their hosts, measure real prompt sets, and the demo's prompt
files (sim.yml, make demo) are prepared offline at about today's demo size."""

from __future__ import annotations

import glob
import json
import os

import pytest
import yaml

from ansible_collections.specdec.bench.plugins.filter.plan import campaign_plan
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


def example_specs():
    """(file, host, spec) for every campaign spec in campaigns/*.yml (sim.yml holds one per host)."""
    specs = []
    for path in sorted(glob.glob(os.path.join(CAMPAIGNS, '*.yml'))):
        with open(path, encoding='utf-8') as handle:
            data = yaml.safe_load(handle)
        per_host = data.get('sim_specs') or {data['campaign_hosts']: data['campaign_spec']}
        specs.extend((os.path.basename(path), host, spec) for host, spec in sorted(per_host.items()))
    return specs


def stages_of(host, spec):
    return campaign_plan(host_facts(host), spec, build=BUILDS[host], model_bytes=55 * 10 ** 9)


CAMPAIGN_SPECS = example_specs()


def test_every_example_file_is_found():
    assert sorted(set((name, host) for name, host, _spec in CAMPAIGN_SPECS)) == [
        ('a100box.yml', 'a100box'), ('ct200.yml', 'ct200'), ('sim.yml', 'a100box'), ('sim.yml', 'ct200')]


@pytest.mark.parametrize('name, host, spec', CAMPAIGN_SPECS, ids=['%s:%s' % (name, host) for name, host, _spec in CAMPAIGN_SPECS])
def test_every_example_plans_on_its_host_and_every_stage_carries_the_workload(name, host, spec):
    stages = stages_of(host, spec)
    assert stages and any(stage['feasible'] for stage in stages)
    workload = stages[0]['workload']
    assert all(stage['workload'] == workload for stage in stages)
    assert workload['temperature'] == [0.0] and workload['stop_at_eos'] is True
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
