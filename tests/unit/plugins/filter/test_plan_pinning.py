# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""campaign_plan's CPU and NUMA pinning of each stage (cpu_affinity, numa_nodes, pin_note), its words in plan_lines,
and campaign_spec_changes on a campaign recorded before pinning. The GPU topology is the simulated CT200's."""

from __future__ import annotations

import json
import os

import pytest

from ansible.module_utils import _internal as _module_internal
from ansible_collections.specdec.bench.plugins.filter.campaign import campaign_spec_changes
from ansible_collections.specdec.bench.plugins.plugin_utils.plan import campaign_plan, stage_pinning
from ansible_collections.specdec.bench.plugins.filter.plan_lines import pinning_text, plan_lines

_module_internal.is_controller = False


@pytest.fixture(autouse=True)
def _controller_mode(monkeypatch):
    monkeypatch.setattr(_module_internal, 'is_controller', True)


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
DDTREE_BUILD = 'sglang-ddtree-pr29907'
NODE0_CPUS, NODE1_CPUS = '0-47,96-143', '48-95,144-191'


def ct200_gpus():
    """The simulated CT200's GPUs as gpu_facts gives them: topo -m's row under topology (GPU0-3 node 0, GPU4-7 node 1)."""
    with open(os.path.join(REPO, 'tests', 'sim', 'layouts', 'ct200.json'), encoding='utf-8') as handle:
        layout = json.load(handle)
    return [{'index': index, 'uuid': gpu['uuid'], 'memory_total_mib': 97887, 'processes': [],
             'topology': {'cpu_affinity': gpu['cpu_affinity'], 'numa_affinity': gpu['numa_affinity'], 'gpu_numa_id': None}}
            for index, gpu in enumerate(layout['gpus'])]


def facts(online='0-191', numa_nodes='0-1', allowed=None, gpus=None):
    cpu = {'count': 192, 'usable': 192, 'online': online, 'numa_nodes': numa_nodes, 'allowed': allowed or online}
    return {'nvidia_gpus': ct200_gpus() if gpus is None else gpus, 'specdec_host': {'listening_ports': [], 'cpu': cpu}}


def plan(host_facts, tp=({'size': 1, 'gpus': [1]},)):
    spec = {'campaign': 'pin', 'model': {'path': '/models/Qwen3.6-27B'}, 'tp': list(tp), 'methods': {'autoregressive': {}},
            'workload': {'input_len': 8, 'output_len': 8, 'num_prompts': 2}, 'concurrency': [1]}
    return campaign_plan(host_facts, spec, {'build': DDTREE_BUILD, 'strict': False})


def pins(stage):
    return stage['cpu_affinity'], stage['numa_nodes'], stage['pin_note']


def test_the_ct200_layout_gives_two_nodes():
    gpus = ct200_gpus()
    assert [gpu['topology']['cpu_affinity'] for gpu in gpus] == [NODE0_CPUS] * 4 + [NODE1_CPUS] * 4
    assert [gpu['topology']['numa_affinity'] for gpu in gpus] == ['0'] * 4 + ['1'] * 4


def test_a_stage_is_pinned_to_its_gpus_cpus_and_node():
    stages = plan(facts(), tp=[{'size': 1, 'gpus': [1]}, {'size': 1, 'gpus': [6], 'id': 'g6'}, {'size': 2, 'gpus': [2, 3]}])
    assert [pins(stage) for stage in stages] == [(NODE0_CPUS, '0', None), (NODE1_CPUS, '1', None), (NODE0_CPUS, '0', None)]


def test_a_stage_across_two_nodes_gets_both():
    stage, = plan(facts(), tp=[{'size': 4, 'gpus': [2, 3, 4, 5]}])
    assert pins(stage) == ('0-191', '0-1', None)


def test_only_online_cpus_and_nodes_count():
    # the molecule container: two CPUs online, one node
    one, four, six = plan(facts(online='0-1', numa_nodes='0'), tp=[{'size': 1, 'gpus': [1]}, {'size': 4, 'gpus': [1, 2, 3, 4]},
                                                                   {'size': 1, 'gpus': [5], 'id': 'g5'}])
    assert pins(one) == ('0-1', '0', None)
    assert pins(four) == ('0-1', '0', None)  # GPU4's node 1 is not online: the stage keeps what is
    assert pins(six) == (None, None, "GPU 5's CPUs 48-95,144-191 are not online on this host (0-1): not pinned; "
                                     "GPU 5's NUMA node 1 is not online on this host (0): not pinned")
    assert all(stage['feasible'] for stage in (one, four, six))  # pinning never makes a stage infeasible


def test_the_cpus_the_probe_may_use_limit_them_too():
    stage, = plan(facts(online='0-191', allowed='40-55'))  # a container's cpuset
    assert pins(stage) == ('40-47', '0', None)


def test_cpus_without_the_node_say_why_the_node_is_not_bound():
    stage, = plan(facts(online='0-191', numa_nodes='1'))
    assert pins(stage) == (NODE0_CPUS, None, "GPU 1's NUMA node 0 is not online on this host (1): not pinned to a NUMA node")


def test_unknown_gpu_facts_leave_the_stage_unpinned():
    gpus = ct200_gpus()
    gpus[1]['topology'] = None  # gpu_facts with topology=false
    gpus[2]['topology'].update(cpu_affinity=None, numa_affinity='N/A')
    one, two = plan(facts(gpus=gpus), tp=[{'size': 1, 'gpus': [1]}, {'size': 2, 'gpus': [2, 3]}])
    assert pins(one) == (None, None, 'GPU 1 has no cpu_affinity in the facts (nvidia-smi topo -m): not pinned; '
                                     'GPU 1 has no numa_affinity in the facts (nvidia-smi topo -m): not pinned')
    assert pins(two)[:2] == (None, None) and 'GPU 2 has no cpu_affinity' in pins(two)[2]


def test_unknown_host_facts_leave_the_stage_unpinned():
    host = facts()
    del host['specdec_host']['cpu']
    stage, = plan(host)
    assert pins(stage) == (None, None, "the host's online CPUs are unknown (specdec_host.cpu.online; probe again): not pinned; "
                                       "the host's online NUMA nodes are unknown (specdec_host.cpu.numa_nodes; probe again): not pinned")


def test_a_stage_without_gpus_is_not_pinned():
    stage, = plan(facts(), tp=[{'size': 16}])
    assert stage['feasible'] is False and pins(stage) == (None, None, 'no GPUs placed: not pinned')


def test_pinning_is_a_pure_function_of_the_facts():
    host = facts(online='0-1', numa_nodes='0')
    before = json.dumps(host, sort_keys=True)
    gpus = [gpu for gpu in host['nvidia_gpus'] if gpu['index'] in (3, 4)]
    assert stage_pinning(gpus, host) == stage_pinning(gpus, host) == ('0-1', '0', None)
    assert json.dumps(host, sort_keys=True) == before


def test_plan_lines_say_where_each_stage_is_pinned():
    stages = plan(facts(online='0-1', numa_nodes='0'), tp=[{'size': 1, 'gpus': [1]}, {'size': 1, 'gpus': [5], 'id': 'g5'}, {'size': 16}])
    lines = plan_lines(stages, 'pin', 'ct200')
    assert lines[2] == 'stage 1/3 tp1-autoregressive: autoregressive, TP1 on GPU(s) 1, port 31000, feasible, pinned to CPUs 0-1, NUMA node 0'
    assert lines[3].endswith("port 31001, feasible, GPU 5's CPUs 48-95,144-191 are not online on this host (0-1): not pinned; "
                             "GPU 5's NUMA node 1 is not online on this host (0): not pinned")
    assert 'pinned' not in lines[4]  # infeasible: its reason is what matters


def test_pinning_text_of_each_case():
    assert pinning_text({'cpu_affinity': NODE0_CPUS, 'numa_nodes': '0', 'pin_note': None}) == \
        'pinned to CPUs 0-47,96-143, NUMA node 0'
    assert pinning_text({'cpu_affinity': '0-191', 'numa_nodes': '0-1', 'pin_note': None}) == 'pinned to CPUs 0-191, NUMA nodes 0-1'
    assert pinning_text({'cpu_affinity': '0-3', 'numa_nodes': None, 'pin_note': 'why'}) == 'pinned to CPUs 0-3 (why)'
    assert pinning_text({'cpu_affinity': None, 'numa_nodes': None, 'pin_note': None}) == 'not pinned'
    assert pinning_text({'id': 'recorded-before-pinning'}) is None


def test_a_campaign_recorded_before_pinning_has_no_spec_change():
    stages = plan(facts(), tp=[{'size': 1, 'gpus': [1]}, {'size': 2, 'gpus': [4, 5]}])
    recorded = [dict((key, value) for key, value in stage.items() if key not in ('cpu_affinity', 'numa_nodes', 'pin_note'))
                for stage in stages]
    assert campaign_spec_changes(stages, recorded) == []
    # nor does a host whose CPUs went offline since: pinning is where a stage runs, not what it measures
    assert campaign_spec_changes(plan(facts(online='0-1', numa_nodes='0'), tp=[{'size': 1, 'gpus': [1]}, {'size': 2, 'gpus': [4, 5]}]),
                                 stages) == []
    # while a real spec change still shows
    assert campaign_spec_changes(plan(facts(), tp=[{'size': 1, 'gpus': [2]}]), stages[:1]) == ['tp1-autoregressive (gpus)']
