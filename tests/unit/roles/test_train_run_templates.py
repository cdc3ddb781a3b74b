# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""train_run's rendered scripts, made by Ansible's own template module on this machine and then run or checked.

The launcher (run.sh) is run for real with a hostile command, which must reach the program word for word, with its
output in the log and its exit status kept; the default DFlash pipeline (train_dflash.sh) must be valid bash that
shellcheck accepts, in both target modes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import yaml

from ansible_collections.specdec.bench.plugins.module_utils._service import check_definition
from ansible_collections.specdec.bench.plugins.module_utils._systemd import render_unit
from test_service_units import role_values
from testhelpers import run_playbook  # pylint: disable=import-error

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROLE = os.path.join(REPO, 'roles', 'train_run')
HOSTILE = ['a b', "it's", '$(touch pwned)', '`touch pwned`', '"quoted"', '%n', '{name}@{run_dir}', '; exit 7']


def render(tmp_path, templates=('run.sh.j2', 'train_dflash.sh.j2'), **overrides):
    """Render the role's templates with its defaults and vars, plus overrides, into the run folder."""
    run_dir = tmp_path / 'dflash-test'
    run_dir.mkdir(exist_ok=True)
    variables = {
        'train_run_name': 'dflash-test',
        'train_run_root': str(tmp_path),
        'train_run_info': {'gpus': {'serve': ['GPU-a', 'GPU-b'], 'train': ['GPU-c']}},
        'ansible_python_interpreter': sys.executable,
    }
    variables.update(overrides)
    playbook = [{
        'hosts': 'localhost', 'gather_facts': False, 'connection': 'local',
        'vars_files': [os.path.join(ROLE, 'defaults', 'main.yml'), os.path.join(ROLE, 'vars', 'main.yml')],
        'tasks': [{
            'ansible.builtin.template': {'src': os.path.join(ROLE, 'templates', name), 'dest': str(run_dir / name[:-3]),
                                         'mode': '0644'},
        } for name in templates],
    }]
    path = tmp_path / 'render.yml'
    path.write_text(yaml.safe_dump(playbook))
    # extra vars: above the role's files, as a play's own variables are not
    extra = tmp_path / 'vars.yml'
    extra.write_text(yaml.safe_dump(variables))
    run_playbook(path, '-e', '@%s' % extra, timeout=120)
    return run_dir


def test_launcher_runs_the_command_word_for_word(tmp_path):
    run_dir = render(tmp_path, train_run_command=['/bin/sh', '-c', 'printf "<%s>\\n" "$@"; exit 3', 'sh'] + HOSTILE)
    result = subprocess.run(['bash', str(run_dir / 'run.sh')], capture_output=True, text=True, cwd=tmp_path,
                            timeout=30, check=False)
    assert result.returncode == 3
    placed = ['<%s>' % word.replace('{name}', 'dflash-test').replace('{run_dir}', str(run_dir)) for word in HOSTILE]
    log = (run_dir / 'train.log').read_text().splitlines()
    assert log[0].startswith('=== run dflash-test (full) started ')
    assert log[1] == '=== GPUs: target none, trainer none'
    assert log[2:-1] == placed and result.stdout.splitlines()[2:-1] == placed
    assert log[-1].startswith('=== run dflash-test exited with status 3 ')
    assert not (tmp_path / 'pwned').exists() and not (run_dir / 'pwned').exists()


@pytest.mark.parametrize('serve_target', [True, False])
def test_default_pipeline_is_valid_bash(tmp_path, serve_target):
    run_dir = render(tmp_path, train_run_serve_target=serve_target)
    script = run_dir / 'train_dflash.sh'
    text = script.read_text()
    subprocess.run(['bash', '-n', str(script)], check=True, timeout=30)
    if shutil.which('shellcheck'):
        result = subprocess.run(['shellcheck', '-s', 'bash', str(script), str(run_dir / 'run.sh')],
                                capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 0, result.stdout
    assert '--speculator-type dflash' in text and '--target-layer-ids "${LAYER_IDS[@]}"' in text
    assert ('"$SPECULATORS/scripts/launch_vllm.py"' in text) == serve_target
    assert 'LAYER_IDS=(2 18 33)' in text and 'MAX_SAMPLES=64' in text and 'MAX_SAMPLES=5000' in text


def test_unit_pins_gpus_and_quotes_for_systemd(tmp_path):
    """The run's unit, rendered by specdec.bench.service from the role's definition."""
    definition = role_values(tmp_path, 'train_run', [{
        'train_run_name': 'dflash-test', 'train_run_root': str(tmp_path), 'train_run_env': {'NOTE': 'say "hi" 100% \\o/'},
        'train_run_info': {'gpus': {'serve': ['GPU-a', 'GPU-b'], 'train': ['GPU-c']}}}], '_train_run_definition')[0]
    unit = render_unit(check_definition(definition))
    run_dir = tmp_path / 'dflash-test'
    assert 'Environment="CUDA_VISIBLE_DEVICES=GPU-a,GPU-b,GPU-c"' in unit
    assert 'Environment="SPECDEC_SERVE_GPUS=GPU-a,GPU-b"' in unit and 'Environment="SPECDEC_TRAIN_NPROC=1"' in unit
    assert 'Environment="NOTE=say \\"hi\\" 100%% \\\\o/"' in unit
    assert "ExecStart='/bin/bash' '%s/run.sh'" % run_dir in unit and 'Restart=no' in unit and '[Install]' not in unit
    if shutil.which('systemd-analyze') and os.path.isdir('/run/systemd/system'):
        (tmp_path / 'specdec-train.service').write_text(unit)
        subprocess.run(['systemd-analyze', 'verify', str(tmp_path / 'specdec-train.service')], check=False, timeout=60)
