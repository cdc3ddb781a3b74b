# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The plan of every campaign file in campaigns/ against committed golden files: any change to a stage the plan makes
fails here, whichever part of the planner made it.

Each spec of a file (sim.yml holds one per host) is planned twice, with fixed inputs:
- on its own host (the simulated CT200 or the A100 box: their GPUs, topology and CPUs as the layouts in tests/sim/layouts/
  give them, the CT200's GPU0 held by ddtree-qwen.service, which the host may stop; a checkpoint set's checkpoints listed
  on the training host, one of them installed here already), strictly;
- on the other host, not strictly, without the model's size and with part of the CPUs offline: infeasible stages,
  unjudged memory and pinning notes.
The stages are compared, as indented JSON with sorted keys, byte for byte with tests/fixtures/plan-golden/<campaign>.json.

After a deliberate change to the plan, rewrite the golden files with
    SPECDEC_PLAN_GOLDEN=write python -m pytest tests/unit/plugins/filter/test_plan_golden.py
and review their diff.
"""

from __future__ import annotations

import copy
import json
import os
import sys

import pytest

from ansible.module_utils import _internal as _module_internal
from ansible_collections.specdec.bench.plugins.filter.plan import campaign_plan

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_plan_campaigns import CAMPAIGN_SPECS, REPO_ROOT, checkpoint_records  # noqa: E402  pylint: disable=import-error,wrong-import-position

# Importing controller code flips module_utils into controller mode for the whole test process (see test_plan.py).
_module_internal.is_controller = False


@pytest.fixture(autouse=True)
def _controller_mode(monkeypatch):
    monkeypatch.setattr(_module_internal, 'is_controller', True)


GOLDEN = os.path.join(REPO_ROOT, 'tests', 'fixtures', 'plan-golden')
BUILDS = {'ct200': 'sglang-ddtree-pr29907', 'a100box': 'sglang-0.5.23'}
MEMORY_MIB = {'ct200': 97887, 'a100box': 40960}
CPUS = {'ct200': ('0-191', '0-1'), 'a100box': ('0-127', '0-1')}
OTHER = {'ct200': 'a100box', 'a100box': 'ct200'}
DDTREE_QWEN = {'pid': 47028, 'name': '/opt/ddtree/.venv/bin/python3', 'used_memory_mib': 56077, 'unit': 'ddtree-qwen.service',
               'cmdline': '/opt/ddtree/.venv/bin/python3 -m sglang.launch_server --model-path /models/Qwen3.6-27B'}
HAND_WRAPPER = [{'name': 'hand-wrapper', 'match': r'sglang.launch_server.*--port 30100'}]
TRAINED_STEPS = (50, 100, 150, 200, 300)


def host_facts(host, online=None):
    """The simulated host's facts as the probe gives them: GPUs with topology, CPUs, listening ports, units."""
    with open(os.path.join(REPO_ROOT, 'tests', 'sim', 'layouts', '%s.json' % host), encoding='utf-8') as handle:
        layout = json.load(handle)
    gpus = []
    for index, gpu in enumerate(layout['gpus']):
        processes = [dict(DDTREE_QWEN)] if (host, index) == ('ct200', 0) else []
        used = sum(process['used_memory_mib'] for process in processes)
        gpus.append({'index': index, 'uuid': gpu['uuid'], 'name': 'GPU', 'memory_total_mib': MEMORY_MIB[host],
                     'memory_used_mib': used, 'processes': processes, 'unexplained_memory_mib': 0,
                     'topology': {'cpu_affinity': gpu['cpu_affinity'], 'numa_affinity': gpu['numa_affinity'], 'gpu_numa_id': None}})
    all_cpus, nodes = CPUS[host]
    online = online or all_cpus
    units = {'ddtree-qwen.service': {'load_state': 'loaded', 'active_state': 'active', 'sub_state': 'running', 'main_pid': 47028}}
    return {'nvidia_gpus': gpus, 'systemd_units': units if host == 'ct200' else {},
            'specdec_host': {'listening_ports': [{'port': 22, 'family': 'ipv4'}, {'port': 31002, 'family': 'ipv4'}],
                             'cpu': {'count': 192, 'usable': 192, 'online': online, 'numa_nodes': nodes, 'allowed': online}}}


def checkpoint_inputs(spec):
    """What the campaign role lists for a checkpoint set: the training host's checkpoints, the copies installed here."""
    draft = spec.get('draft')
    if not (isinstance(draft, dict) and 'run' in draft):
        return {}
    listed = checkpoint_records(draft['run'], TRAINED_STEPS)
    dest = '/var/lib/specdec/checkpoints/%s' % draft['run']
    first = copy.deepcopy(listed[1])
    first['installed'] = {'source_host': draft['host'], 'source_path': first['path'], 'name': first['name'], 'step': first['step'],
                          'run': draft['run'], 'bytes': first['bytes'], 'files': [], 'installed': '2026-12-03T20:00:00Z'}
    first['path'] = '%s/%s' % (dest, first['name'])
    return {'draft_checkpoints': listed, 'installed_checkpoints': [first], 'checkpoint_dir': '/var/lib/specdec/checkpoints',
            'checkpoint_free_bytes': 8 * 1024 ** 3, 'checkpoint_min_free_gib': 1}


def cases(host, spec):
    """(name, facts, host inputs, checkpoint inputs) of the two plans of a spec."""
    checkpoints = checkpoint_inputs(spec)
    own = {'build': BUILDS[host], 'sglang_version': '0.5.3', 'sglang_python': '/opt/sglang/.venv/bin/python3',
           'stoppable': ['ddtree-qwen.service'], 'stoppable_processes': HAND_WRAPPER, 'base_port': 31000, 'strict': True,
           'model_bytes': 55 * 10 ** 9}
    other = OTHER[host]
    lenient = {'build': BUILDS[host], 'stoppable': [], 'base_port': 32000, 'strict': False}
    return [(host, host_facts(host), own, checkpoints),
            ('%s-lenient' % other, host_facts(other, online='0-15,96-99'), lenient, checkpoints)]


def plan(facts, spec, host, checkpoints):
    """The planner's entry point, given the host's facts, the spec, the host's inputs and the checkpoint inputs."""
    return campaign_plan(facts, spec, host, checkpoints)


def golden_text(name):
    """The plans of every spec of campaigns/<name>, keyed by the spec's host and the case, as the golden file holds them."""
    plans = {}
    for file_name, host, spec in CAMPAIGN_SPECS:
        if file_name != name:
            continue
        for case, facts, host_inputs, checkpoints in cases(host, spec):
            plans['%s on %s' % (host, case)] = plan(facts, copy.deepcopy(spec), host_inputs, checkpoints)
    return json.dumps(plans, indent=1, sort_keys=True) + '\n'


def golden_path(name):
    return os.path.join(GOLDEN, name[:-len('.yml')] + '.json')


FILES = sorted(set(name for name, _host, _spec in CAMPAIGN_SPECS))


def test_the_golden_files_are_written_when_asked():
    if os.environ.get('SPECDEC_PLAN_GOLDEN') != 'write':
        pytest.skip('set SPECDEC_PLAN_GOLDEN=write to rewrite the golden files')
    os.makedirs(GOLDEN, exist_ok=True)
    for name in FILES:
        with open(golden_path(name), 'w', encoding='utf-8') as handle:
            handle.write(golden_text(name))


def test_every_campaign_file_has_a_golden_file_and_no_other():
    assert FILES == ['a100box.yml', 'ct200.yml', 'evaluate-sim.yml', 'sim-load.yml', 'sim.yml']
    assert sorted(os.listdir(GOLDEN)) == sorted(name[:-len('.yml')] + '.json' for name in FILES)


@pytest.mark.parametrize('name', FILES)
def test_the_plan_of_each_campaign_file_is_its_golden_file(name):
    with open(golden_path(name), encoding='utf-8') as handle:
        expected = handle.read()
    assert golden_text(name) == expected, 'the plan of campaigns/%s changed; see this module\'s docstring' % name


def test_the_goldens_cover_what_the_planner_decides():
    """The fixed inputs reach the planner's branches: waves, an interference stage, pinning notes, checkpoints present
    and to copy, infeasible stages, unjudged memory and a holder to stop."""
    stages = []
    for name in FILES:
        with open(golden_path(name), encoding='utf-8') as handle:
            for plan_stages in json.load(handle).values():
                stages.extend(plan_stages)
    assert any(stage['interference_of'] for stage in stages)
    assert any(stage['pin_note'] for stage in stages) and any(stage['cpu_affinity'] for stage in stages)
    assert any(not stage['feasible'] for stage in stages) and any(stage['fit'] is None for stage in stages)
    assert any(stage['conflicts'] for stage in stages)
    checkpoints = [stage['draft_checkpoint'] for stage in stages if stage.get('draft_checkpoint')]
    assert any(c['present'] for c in checkpoints) and any(not c['present'] for c in checkpoints)
    assert len(set(stage['port'] for stage in stages)) > 1
