# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every example campaign's stages parsed by real SGLang 0.5.23's own parser, where a venv with it is given.

Real SGLang pulls torch (several GB), too heavy for CI: these tests run when SPECDEC_SGLANG_PYTHON names the
interpreter of a venv that has it (README, "SGLang builds and the preflight", says how to make one) and are
skipped, saying why, when not.

    SPECDEC_SGLANG_PYTHON=/work/sglang-venv/bin/python .venv/bin/python -m pytest tests/unit/plugins/filter/test_real_sglang_parser.py
"""

from __future__ import annotations

import glob
import json
import os
import subprocess

import pytest
import yaml

from ansible_collections.specdec.bench.plugins.plugin_utils.plan import campaign_plan
from ansible_collections.specdec.bench.plugins.module_utils._sglang_preflight import parse_output, refusal
from ansible_collections.specdec.bench.plugins.modules.sglang_preflight import run_parser
from ansible_collections.specdec.bench.plugins.plugin_utils import sglang_build

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
PYTHON = os.environ.get('SPECDEC_SGLANG_PYTHON', '')
RELEASE = 'sglang-0.5.23'

pytestmark = pytest.mark.skipif(
    not (PYTHON and os.access(PYTHON, os.X_OK)),
    reason='SPECDEC_SGLANG_PYTHON is %s: set it to the interpreter of a venv with real SGLang 0.5.23 (see the README) '
           'to parse every example stage with SGLang\'s own parser' % ('unset' if not PYTHON else 'not an executable (%s)' % PYTHON))

# 8 GPUs of 96 GB: every example's TP entries are placed and fit
FACTS = {'nvidia_gpus': [{'index': i, 'uuid': 'GPU-%d' % i, 'memory_total_mib': 97887, 'processes': []} for i in range(8)]}


def example_specs():
    """(file, host, spec) for every campaign spec in campaigns/*.yml (sim.yml holds one per host)."""
    specs = []
    for path in sorted(glob.glob(os.path.join(REPO, 'campaigns', '*.yml'))):
        with open(path, encoding='utf-8') as handle:
            data = yaml.safe_load(handle)
        per_host = data.get('sim_specs') or {data.get('campaign_hosts', 'host'): data['campaign_spec']}
        specs.extend((os.path.basename(path), host, spec) for host, spec in sorted(per_host.items()))
    return specs


def release_stages(spec):
    """The spec's stages for the release profile: its methods that 0.5.23 has (DDTree is in no release)."""
    methods = sglang_build.load_builds()[RELEASE]['methods']
    spec = dict(spec, methods=dict((name, value) for name, value in spec['methods'].items() if name in methods))
    model = spec['model'] if isinstance(spec['model'], dict) else {'path': spec['model']}
    spec['model'] = dict(model, bytes=model.get('bytes') or 55 * 10 ** 9)
    return campaign_plan(FACTS, spec, {'build': RELEASE, 'sglang_python': PYTHON})


def parse(stages):
    rc, out, err = run_parser(PYTHON, stages, 600)
    data = parse_output(out)
    assert data['error'] is None, (data['error'], err[-2000:])
    return data


def test_the_venv_has_sglang_0523():
    assert sglang_build.release_version(parse([])['sglang_version']) == '0.5.23'


@pytest.mark.parametrize('name, host, spec', example_specs(), ids=lambda value: value if isinstance(value, str) else '')
def test_every_autoregressive_and_dflash_stage_is_accepted_by_real_sglang(name, host, spec):
    stages = [stage for stage in release_stages(spec) if stage['feasible']]
    assert {stage['method'] for stage in stages} <= {'autoregressive', 'dflash'} and stages
    data = parse(stages)
    refused = dict((stage_id, refusal(said.get('stderr'))) for stage_id, said in data['stages'].items() if not said['ok'])
    assert refused == {}, (name, host, refused)
    assert len(data['stages']) == len(stages)


def test_the_command_line_before_0523_is_refused_by_real_sglang():
    stage = [s for s in release_stages(example_specs()[0][2]) if s['method'] == 'dflash'][0]
    stage['argv'] = stage['argv'] + ['--mamba-scheduler-strategy=extra_buffer']
    said = parse([stage])['stages'][stage['id']]
    assert not said['ok'] and said['status'] == 2
    assert refusal(said['stderr']) == ('--mamba-scheduler-strategy', 'unrecognized arguments')


def test_what_the_plan_refuses_in_extra_args_really_sets_planned_options():
    """--hos and --tensor-parallel-size are host and tp_size to SGLang: the plan's refusal is not a false alarm."""
    code = ('import argparse, json; from sglang.srt.server_args import ServerArgs; p = argparse.ArgumentParser(); '
            'ServerArgs.add_cli_args(p); a = p.parse_args(["--model-path", "/m", "--hos", "0.0.0.0", '
            '"--tensor-parallel-size", "8"]); print(json.dumps([a.host, a.tp_size]))')
    out = subprocess.run([PYTHON, '-c', code], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True,
                         timeout=600, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == ['0.0.0.0', 8]


def test_the_shipped_option_list_is_what_the_real_parser_generates():
    script = os.path.join(REPO, 'plugins', 'plugin_utils', 'sglang_builds', 'generate_options.py')
    out = subprocess.run([PYTHON, script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True,
                         timeout=600, check=True).stdout
    with open(os.path.join(REPO, 'plugins', 'plugin_utils', 'sglang_builds', 'sglang-0.5.23.options.json'), encoding='utf-8') as handle:
        shipped = json.load(handle)
    generated = json.loads(out)
    assert generated['options'] == shipped['options']
