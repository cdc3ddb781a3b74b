# SPDX-License-Identifier: GPL-3.0-or-later
"""The probe action: runs the module once, then summarizes and saves the summary on the controller."""
import json
from unittest import mock

from ansible.playbook.task import Task

from ansible_collections.specdec.bench.plugins.action import probe as probe_action

FACTS = {
    'nvidia_driver': {'version': '580.95.05', 'cuda_version': '13.0'},
    'nvidia_gpus': [{'index': 0, 'uuid': 'GPU-a', 'name': 'X', 'memory_used_mib': 56077, 'memory_total_mib': 97887,
                     'processes': [{'pid': 7, 'unit': 'ddtree-qwen.service', 'used_memory_mib': 56077}]}],
    'systemd_units': {}, 'specdec_host': {},
}


def make_action(args):
    task = Task()
    task.args = args
    action = probe_action.ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=None,
                                       shared_loader_obj=None)
    return action


def run(args, module_result):
    action = make_action(args)
    with mock.patch.object(action, '_execute_module', return_value=module_result) as execute:
        result = action.run(task_vars={'inventory_hostname': 'ct200'})
    return result, execute


def test_one_module_run_and_the_summary_saved(tmp_path):
    result, execute = run({'units': ['sglang-*'], 'summary_dir': str(tmp_path)}, {'ansible_facts': dict(FACTS), 'changed': False})
    assert execute.call_count == 1
    assert execute.call_args.kwargs['module_name'] == 'specdec.bench.probe'
    saved = json.loads((tmp_path / 'ct200.json').read_text())
    assert saved == result['ansible_facts']['specdec_probe_summary']
    assert saved['gpus'][0]['holders'] == [{'pid': 7, 'unit': 'ddtree-qwen.service', 'used_memory_mib': 56077}]
    assert result['summary_path'] == str(tmp_path / 'ct200.json')
    assert result['summary_lines'][1].endswith('held by ddtree-qwen.service pid 7 56077 MiB')
    assert result['changed'] is False


def test_unchanged_summary_is_not_rewritten(tmp_path):
    run({'summary_dir': str(tmp_path)}, {'ansible_facts': dict(FACTS)})
    path = tmp_path / 'ct200.json'
    before = path.stat().st_mtime_ns
    run({'summary_dir': str(tmp_path)}, {'ansible_facts': dict(FACTS)})
    assert path.stat().st_mtime_ns == before
    run({'summary_dir': str(tmp_path)}, {'ansible_facts': dict(FACTS, nvidia_gpus=[])})
    assert json.loads(path.read_text())['gpus'] == []
    assert [p.name for p in tmp_path.iterdir()] == ['ct200.json']  # no temporary file left behind


def test_a_failed_module_is_passed_through_and_nothing_saved(tmp_path):
    result, _execute = run({'summary_dir': str(tmp_path)}, {'failed': True, 'msg': 'cannot parse nvidia-smi output'})
    assert result['failed'] and result['msg'] == 'cannot parse nvidia-smi output'
    assert not list(tmp_path.iterdir())
