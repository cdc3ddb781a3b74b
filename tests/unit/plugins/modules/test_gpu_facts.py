# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpu_facts end to end: nvidia-smi answers from captured (h200-1gpu) and hand-written fixtures through a fake run_command."""

from __future__ import annotations

import json
import os

import pytest

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.specdec.bench.plugins.module_utils import _gpu_probe, _supervisor
from ansible_collections.specdec.bench.plugins.module_utils._nvidia_smi import GPU_FIELDS, QUERY_GPU_FIELDS, REQUIRED_GPU_FIELDS
from ansible_collections.specdec.bench.plugins.modules import gpu_facts

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures', 'nvidia-smi')
SMI = '/usr/bin/nvidia-smi'
GPU_KEYS = set(key for _field, key, _kind in GPU_FIELDS if key != 'driver_version') | {
    'processes', 'unexplained_memory_mib', 'topology', 'nvlink'}
H200_UUID = 'GPU-9e1c631b-fafe-f96d-935d-1ff4b8a5bf54'


class Host:
    """What the module sees of a host: which binaries exist, what nvidia-smi answers, each pid's /proc/PID/cgroup,
    the specdec supervisor's service each pid belongs to and each pid's command line (none unless given)."""

    def __init__(self, monkeypatch, smi=None, cgroups=None, nvml=None, binaries=(SMI,), services=None, cmdlines=None):
        self.smi = smi
        self.cgroups = dict(cgroups or {})
        self.services = dict(services or {})
        self.cmdlines = dict(cmdlines or {})
        self.commands = []

        def get_bin_path(_module, arg, required=False, opt_dirs=None):  # pylint: disable=unused-argument
            return next((path for path in binaries if os.path.basename(path) == arg), None)

        def run_command(module, args, **_kwargs):
            environ = module.run_command_environ_update
            assert environ.get('LC_ALL') == 'C' and environ.get('LANG') == 'C', 'nvidia-smi must run in the C locale'
            self.commands.append(args)
            return self.smi.run(args)

        def read_proc_cgroup(pid):
            if pid not in self.cgroups:
                raise FileNotFoundError('/proc/%d/cgroup' % pid)
            return self.cgroups[pid]

        monkeypatch.setattr(AnsibleModule, 'get_bin_path', get_bin_path)
        monkeypatch.setattr(AnsibleModule, 'run_command', run_command)
        monkeypatch.setattr(_gpu_probe, 'read_proc_cgroup', read_proc_cgroup)
        monkeypatch.setattr(_gpu_probe, 'load_nvml', lambda: nvml)
        monkeypatch.setattr(_gpu_probe, 'supervisor_service', self.services.get)
        monkeypatch.setattr(_gpu_probe, 'process_cmdline', self.cmdlines.get)

    def verbs(self):
        """The nvidia-smi calls made, by their first option: query-gpu, query-compute-apps, topo, banner."""
        names = []
        for args in self.commands:
            option = args[1] if len(args) > 1 else 'banner'
            names.append(option[2:].split('=')[0] if option.startswith('--') else option)
        return names


def cgroup_files(fixture):
    directory = os.path.join(FIXTURES, fixture, 'cgroup')
    texts = {}
    for name in os.listdir(directory):
        with open(os.path.join(directory, name), encoding='utf-8') as handle:
            texts[int(name.split('.')[0])] = handle.read()
    return texts


def h200_cgroups():
    with open(os.path.join(FIXTURES, 'h200-1gpu', 'holder_cgroup.txt'), encoding='utf-8') as handle:
        holder = handle.read().split('\n\n')[0]
    return {1: '0::/process_api/core\n', 444: holder}  # pid 1's cgroup from sysinfo.txt


def facts(result):
    return result['ansible_facts']['nvidia_gpus'], result['ansible_facts']['nvidia_driver']


def test_h200_idle_real(monkeypatch, run_module, fake_smi):
    host = Host(monkeypatch, fake_smi('h200-1gpu', apps='apps_idle.txt'), h200_cgroups())
    result = run_module(gpu_facts)
    gpus, driver = facts(result)
    assert result['changed'] is False and result['backend'] == 'smi' and result['dropped_fields'] == []
    assert driver == {'version': '580.159.04', 'cuda_version': '13.0'}
    assert len(gpus) == 1 and set(gpus[0]) == GPU_KEYS
    gpu = gpus[0]
    assert (gpu['uuid'], gpu['name'], gpu['memory_total_mib'], gpu['memory_used_mib'], gpu['compute_capability']) == \
        (H200_UUID, 'NVIDIA H200', 143771, 0, '9.0')
    assert gpu['processes'] == [] and gpu['unexplained_memory_mib'] == 0
    assert gpu['nvlink'] == [] and gpu['topology'] == {'peers': [], 'nics': {}, 'cpu_affinity': '0-15', 'numa_affinity': '0', 'gpu_numa_id': None}
    # one call of each kind, all fields in the one query
    assert host.verbs() == ['query-gpu', 'query-compute-apps', 'banner', 'topo']
    assert host.commands[0] == [SMI, '--query-gpu=' + ','.join(QUERY_GPU_FIELDS), '--format=csv,noheader,nounits']
    assert host.commands[1] == [SMI, '--query-compute-apps=pid,gpu_uuid,used_memory,process_name', '--format=csv,noheader,nounits']
    assert result['warning_texts'] == []


@pytest.mark.parametrize('tolerance, unexplained', [(256, 0), (8, 9), (9, 0)])
def test_h200_busy_real(monkeypatch, run_module, fake_smi, tolerance, unexplained):
    """The real busy state: 19601 MiB used, one process with 19592 MiB, in a container cgroup that is no systemd unit."""
    smi = fake_smi('h200-1gpu', apps='apps_busy.txt',
                   overlay=(['index', 'uuid', 'memory.used', 'memory.total', 'utilization.gpu'], 'query_gpu_busy.txt'))
    Host(monkeypatch, smi, h200_cgroups())
    gpus, _driver = facts(run_module(gpu_facts, {'unexplained_tolerance_mib': tolerance}))
    assert gpus[0]['memory_used_mib'] == 19601
    assert gpus[0]['processes'] == [{'pid': 444, 'name': 'python3', 'used_memory_mib': 19592, 'unit': None,
                                     'cgroup': '/process_api/1f06963cf23d61497cb6ab8840d89a14', 'unit_backend': None, 'cmdline': None}]
    assert gpus[0]['unexplained_memory_mib'] == unexplained


def test_dgx_8gpu_nvlink_units_and_unexplained(monkeypatch, run_module, fake_smi):
    Host(monkeypatch, fake_smi('dgx-h100-8gpu'), cgroup_files('dgx-h100-8gpu'))
    result = run_module(gpu_facts)
    gpus, driver = facts(result)
    assert driver == {'version': '550.127.05', 'cuda_version': '12.4'}
    assert [gpu['index'] for gpu in gpus] == list(range(8))
    uuids = [gpu['uuid'] for gpu in gpus]
    for gpu in gpus:
        assert [peer['index'] for peer in gpu['nvlink']] == [index for index in range(8) if index != gpu['index']]
        assert set(peer['links'] for peer in gpu['nvlink']) == {18}
        assert [peer['uuid'] for peer in gpu['nvlink']] == [uuid for uuid in uuids if uuid != gpu['uuid']]
    assert gpus[0]['topology']['nics'] == {'mlx5_0': 'PIX', 'mlx5_1': 'NODE', 'mlx5_2': 'SYS', 'mlx5_3': 'SYS'}
    assert [(p['pid'], p['unit']) for p in gpus[0]['processes']] == [(47028, 'ddtree-qwen.service')]
    assert [(p['pid'], p['unit']) for gpu in gpus[1:5] for p in gpu['processes']] == [
        (51207 + rank, 'sglang-stage@tp4-dflash.service') for rank in range(4)]
    assert gpus[5]['processes'] == [] and gpus[5]['pcie_link_gen'] == 1 and gpus[5]['pcie_link_gen_max'] == 5
    assert [(p['pid'], p['unit'], p['cgroup']) for p in gpus[6]['processes']] == [
        (60311, 'session-12.scope', '/user.slice/user-0.slice/session-12.scope'), (60522, None, None)]
    assert [gpu['unexplained_memory_mib'] for gpu in gpus] == [0, 0, 0, 0, 0, 0, 0, 30720]


def test_old_driver_rejected_field_is_dropped_and_retried(monkeypatch, run_module, fake_smi):
    host = Host(monkeypatch, fake_smi('a100-470'))
    result = run_module(gpu_facts)
    gpus, driver = facts(result)
    assert result['dropped_fields'] == ['compute_cap']
    assert any('compute_cap' in text for text in result['warning_texts'])
    assert [gpu['compute_capability'] for gpu in gpus] == [None, None]
    assert [gpu['name'] for gpu in gpus] == ['NVIDIA A100-PCIE-40GB'] * 2
    assert driver == {'version': '470.256.02', 'cuda_version': '11.4'}
    assert gpus[0]['nvlink'] == [] and gpus[0]['topology']['peers'] == [{'index': 1, 'uuid': gpus[1]['uuid'], 'connection': 'SYS'}]
    assert host.verbs() == ['query-gpu', 'query-gpu', 'query-compute-apps', 'banner', 'topo']
    assert 'compute_cap' in host.commands[0][1] and 'compute_cap' not in host.commands[1][1]


def test_driver_that_knows_only_the_required_fields(monkeypatch, run_module, fake_smi):
    """Every optional field dropped, one per retry, and the GPU still reported."""
    smi = fake_smi('h200-1gpu', apps='apps_idle.txt')
    smi.gpu_rows = [[row[smi.gpu_fields.index(field)] for field in REQUIRED_GPU_FIELDS] for row in smi.gpu_rows]
    smi.gpu_fields = list(REQUIRED_GPU_FIELDS)
    host = Host(monkeypatch, smi)
    result = run_module(gpu_facts)
    optional = [field for field in QUERY_GPU_FIELDS if field not in REQUIRED_GPU_FIELDS]
    assert result['dropped_fields'] == optional
    assert host.verbs().count('query-gpu') == len(optional) + 1
    gpu = result['ansible_facts']['nvidia_gpus'][0]
    assert gpu['uuid'] == H200_UUID and gpu['pci_bus_id'] is None and gpu['mig_mode'] is None
    # the banner still gives the driver version the dropped driver_version field would have
    assert result['ansible_facts']['nvidia_driver'] == {'version': '580.159.04', 'cuda_version': '13.0'}


def test_rejected_required_field_fails(monkeypatch, run_module, fake_smi):
    smi = fake_smi('h200-1gpu')
    smi.gpu_fields = [field if field != 'uuid' else 'gpu_uuid' for field in smi.gpu_fields]
    Host(monkeypatch, smi)
    result = run_module(gpu_facts)
    assert result['failed'] and 'required field uuid' in result['msg']


def test_field_rejected_again_fails_instead_of_looping(monkeypatch, run_module, fake_smi):
    smi = fake_smi('h200-1gpu', responses={'query-gpu': (2, 'Field "pstate" is not a valid field to query.\n\n', '')})
    host = Host(monkeypatch, smi)
    result = run_module(gpu_facts)
    assert result['failed'] and 'pstate' in result['msg']
    assert host.verbs() == ['query-gpu', 'query-gpu']


def test_mig_memory_not_attributed(monkeypatch, run_module, fake_smi):
    Host(monkeypatch, fake_smi('h100-mig'), cgroup_files('h100-mig'))
    gpus, driver = facts(run_module(gpu_facts))
    assert driver['cuda_version'] == '12.2'
    assert gpus[0]['mig_mode'] is True and gpus[0]['utilization_gpu_pct'] is None
    assert gpus[0]['processes'] == [{'pid': 3311, 'name': 'python3', 'used_memory_mib': None, 'unit': 'mig-inference.service',
                                     'cgroup': '/system.slice/mig-inference.service', 'unit_backend': 'systemd', 'cmdline': None}]
    assert gpus[0]['unexplained_memory_mib'] is None
    # a docker (cgroupfs) process on a hybrid host: not containerd.service
    assert gpus[1]['processes'][0]['unit'] is None and gpus[1]['processes'][0]['cgroup'].startswith('/docker/')
    assert gpus[1]['unexplained_memory_mib'] == 0
    assert gpus[0]['nvlink'] == [{'index': 1, 'uuid': gpus[1]['uuid'], 'links': 18}]


def test_no_nvidia_smi_binary(monkeypatch, run_module):
    host = Host(monkeypatch, None, binaries=())
    result = run_module(gpu_facts)
    assert result.get('failed') is not True and result['exit_code'] == 0
    assert result['ansible_facts'] == {'nvidia_gpus': [], 'nvidia_driver': {'version': None, 'cuda_version': None}}
    assert result['backend'] is None and host.commands == []
    assert any('nvidia-smi is not installed' in text for text in result['warning_texts'])


@pytest.mark.parametrize('rc, stdout', [
    (6, 'No devices were found\n'),
    (9, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver "
        "is installed and running.\n\n"),
    (12, "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that the NVIDIA Display Driver is "
         "properly installed and present in your system.\n"),
])
def test_no_usable_gpu_is_a_warning(monkeypatch, run_module, fake_smi, rc, stdout):
    if rc == 6:
        with open(os.path.join(FIXTURES, 'no-devices', 'query_gpu_nh.txt'), encoding='utf-8') as handle:
            stdout = handle.read()
    host = Host(monkeypatch, fake_smi('h200-1gpu', responses={'query-gpu': (rc, stdout, '')}))
    result = run_module(gpu_facts)
    assert result['exit_code'] == 0 and result['ansible_facts']['nvidia_gpus'] == []
    assert result['backend'] == 'smi' and host.verbs() == ['query-gpu']
    assert len(result['warning_texts']) == 1


@pytest.mark.parametrize('name, match', [
    ('query_gpu_nh.txt', 'line 1 has 5 fields, expected 25'),
    ('query_gpu_badvalue.txt', 'memory.total'),
])
def test_garbage_query_fails(monkeypatch, run_module, fake_smi, name, match):
    with open(os.path.join(FIXTURES, 'garbage', name), encoding='utf-8') as handle:
        smi = fake_smi('h200-1gpu', responses={'query-gpu': (0, handle.read(), '')})
    Host(monkeypatch, smi)
    result = run_module(gpu_facts)
    assert result['failed'] and result['exit_code'] == 1
    assert result['msg'].startswith('cannot parse nvidia-smi --query-gpu output') and match in result['msg']


def test_garbage_topology_fails(monkeypatch, run_module, fake_smi):
    with open(os.path.join(FIXTURES, 'garbage', 'topo.txt'), encoding='utf-8') as handle:
        smi = fake_smi('h200-1gpu', apps='apps_idle.txt', responses={'topo': (0, handle.read(), '')})
    Host(monkeypatch, smi)
    result = run_module(gpu_facts)
    assert result['failed'] and 'cannot parse nvidia-smi topo -m output' in result['msg']


def test_unknown_failure_fails(monkeypatch, run_module, fake_smi):
    lost = 'Unable to determine the device handle for GPU0000:00:06.0: GPU is lost.\n'
    Host(monkeypatch, fake_smi('h200-1gpu', responses={'query-gpu': (15, lost, '')}))
    result = run_module(gpu_facts)
    assert result['failed'] and 'exit code 15' in result['msg'] and 'GPU is lost' in result['msg']


def test_topology_off_and_failures_that_only_warn(monkeypatch, run_module, fake_smi):
    smi = fake_smi('h200-1gpu', apps='apps_busy.txt', responses={
        'query-compute-apps': (4, 'Insufficient Permissions\n', ''),
        'banner': (255, '', 'Unknown Error\n'),
    })
    host = Host(monkeypatch, smi, h200_cgroups())
    result = run_module(gpu_facts, {'topology': False})
    gpus, driver = facts(result)
    assert 'topo' not in host.verbs()
    assert gpus[0]['topology'] is None and gpus[0]['nvlink'] is None
    assert gpus[0]['processes'] is None and gpus[0]['unexplained_memory_mib'] is None
    assert driver == {'version': '580.159.04', 'cuda_version': None}
    assert len(result['warning_texts']) == 2


def test_smi_warning_lines_become_warnings(monkeypatch, run_module, fake_smi):
    smi = fake_smi('h200-1gpu', apps='apps_idle.txt')
    _rc, out, _err = smi.run([SMI, '--query-gpu=' + ','.join(QUERY_GPU_FIELDS), '--format=csv,noheader,nounits'])
    smi.responses['query-gpu'] = (0, 'WARNING: infoROM is corrupted at gpu 0000:00:06.0\n' + out, '')
    Host(monkeypatch, smi)
    result = run_module(gpu_facts)
    assert len(result['ansible_facts']['nvidia_gpus']) == 1
    assert result['warning_texts'] == ['nvidia-smi: WARNING: infoROM is corrupted at gpu 0000:00:06.0']


def test_check_mode_gathers_the_same(monkeypatch, run_module, fake_smi):
    Host(monkeypatch, fake_smi('dgx-h100-8gpu'), cgroup_files('dgx-h100-8gpu'))
    normal = run_module(gpu_facts)
    checked = run_module(gpu_facts, {'_ansible_check_mode': True})
    assert checked['ansible_facts'] == normal['ansible_facts'] and checked['changed'] is False


# ---------------------------------------------------------------------------------------------------------------
# NVML backend

def test_nvml_auto_gives_the_smi_schema(monkeypatch, run_module, fake_smi, fake_pynvml):
    nvml = fake_pynvml()
    host = Host(monkeypatch, fake_smi('h200-1gpu', apps='apps_busy.txt'), h200_cgroups(), nvml=nvml)
    result = run_module(gpu_facts)
    gpus, driver = facts(result)
    assert result['backend'] == 'nvml' and nvml.calls == ['init', 'shutdown']
    assert driver == {'version': '580.159.04', 'cuda_version': '13.0'}
    assert set(gpus[0]) == GPU_KEYS
    assert (gpus[0]['memory_used_mib'], gpus[0]['unexplained_memory_mib']) == (19601, 0)
    assert gpus[0]['processes'] == [{'pid': 444, 'name': 'python3', 'used_memory_mib': 19592, 'unit': None,
                                     'cgroup': '/process_api/1f06963cf23d61497cb6ab8840d89a14', 'unit_backend': None, 'cmdline': None}]
    # nvidia-smi only for the topology
    assert host.verbs() == ['topo'] and gpus[0]['topology']['cpu_affinity'] == '0-15'


def test_nvml_without_nvidia_smi_has_no_topology(monkeypatch, run_module, fake_pynvml):
    Host(monkeypatch, None, h200_cgroups(), nvml=fake_pynvml(), binaries=())
    result = run_module(gpu_facts)
    gpu = result['ansible_facts']['nvidia_gpus'][0]
    assert result['backend'] == 'nvml' and gpu['topology'] is None and gpu['nvlink'] is None
    assert any('topology' in text for text in result['warning_texts'])


def test_nvml_init_failure_falls_back_to_smi(monkeypatch, run_module, fake_smi, fake_pynvml):
    nvml = fake_pynvml()

    def init_fails():
        raise nvml.NVMLError('Driver Not Loaded')

    nvml.nvmlInit = init_fails
    Host(monkeypatch, fake_smi('h200-1gpu', apps='apps_idle.txt'), nvml=nvml)
    result = run_module(gpu_facts)
    assert result['backend'] == 'smi' and len(result['ansible_facts']['nvidia_gpus']) == 1


def test_nvml_required_but_not_importable_fails(monkeypatch, run_module, fake_smi):
    Host(monkeypatch, fake_smi('h200-1gpu'), nvml=None)
    result = run_module(gpu_facts, {'backend': 'nvml'})
    assert result['failed'] and 'pynvml' in result['msg']


def test_smi_backend_ignores_nvml(monkeypatch, run_module, fake_smi, fake_pynvml):
    nvml = fake_pynvml()
    Host(monkeypatch, fake_smi('h200-1gpu', apps='apps_idle.txt'), nvml=nvml)
    result = run_module(gpu_facts, {'backend': 'smi'})
    assert result['backend'] == 'smi' and nvml.calls == []


def test_nvml_and_smi_agree_on_the_real_busy_state(monkeypatch, run_module, fake_smi, fake_pynvml):
    smi = fake_smi('h200-1gpu', apps='apps_busy.txt',
                   overlay=(['index', 'uuid', 'memory.used', 'memory.total', 'utilization.gpu'], 'query_gpu_busy.txt'))
    Host(monkeypatch, smi, h200_cgroups(), nvml=fake_pynvml())
    by_nvml = run_module(gpu_facts)['ansible_facts']['nvidia_gpus'][0]
    by_smi = run_module(gpu_facts, {'backend': 'smi'})['ansible_facts']['nvidia_gpus'][0]
    same = ('index', 'uuid', 'name', 'pci_bus_id', 'memory_total_mib', 'memory_used_mib', 'compute_capability', 'mig_mode', 'pstate',
            'compute_mode', 'processes', 'unexplained_memory_mib', 'topology', 'nvlink')
    assert dict((key, by_nvml[key]) for key in same) == dict((key, by_smi[key]) for key in same)


# --- replay of the capture from a real H200 (tests/fixtures/nvidia-smi/h200-1gpu-busy) --------------------------

CAPTURE = os.path.join(FIXTURES, 'h200-1gpu-busy')
# Readings that move between two nvidia-smi calls a second apart.
VOLATILE = {'power_draw_w', 'temperature_gpu_c', 'utilization_gpu_pct', 'utilization_memory_pct'}


def captured(name):
    with open(os.path.join(CAPTURE, name), encoding='utf-8') as handle:
        return handle.read()


def on_machine(name):
    """The facts the module returned on the real machine."""
    return json.loads(captured(name))['ansible_facts']


def holder_cgroups():
    pid = int(captured('holder.txt').split()[2])
    return {pid: captured('holder_cgroup.txt').split('\n')[0] + '\n'}


@pytest.mark.parametrize('state, result', [('busy', 'gpu_facts_smi.json'), ('idle', 'gpu_facts_idle.json')])
def test_replay_matches_what_the_module_saw_on_the_h200(monkeypatch, run_module, fake_smi, state, result):
    smi = fake_smi('h200-1gpu-busy', apps='apps_%s.txt' % state, query='query_gpu_nh_%s.txt' % state)
    Host(monkeypatch, smi, holder_cgroups())
    facts = run_module(gpu_facts)['ansible_facts']
    real = on_machine(result)
    assert facts['nvidia_driver'] == real['nvidia_driver'] == {'version': '580.159.04', 'cuda_version': '13.0'}
    # unit_backend came after the capture: no unit, so no backend, for the container's own processes
    processes = [process for gpu in facts['nvidia_gpus'] for process in gpu['processes']]
    assert [process.pop('unit_backend') for process in processes] == [None] * len(processes)
    assert [process.pop('cmdline') for process in processes] == [None] * len(processes)  # came after it too
    strip = [{k: v for k, v in gpu.items() if k not in VOLATILE} for gpu in facts['nvidia_gpus']]
    real_strip = [{k: v for k, v in gpu.items() if k not in VOLATILE} for gpu in real['nvidia_gpus']]
    assert strip == real_strip


def test_busy_holder_is_attributed_with_its_pid_and_memory(monkeypatch, run_module, fake_smi):
    smi = fake_smi('h200-1gpu-busy', apps='apps_busy.txt', query='query_gpu_nh_busy.txt')
    Host(monkeypatch, smi, holder_cgroups())
    gpu = run_module(gpu_facts)['ansible_facts']['nvidia_gpus'][0]
    assert gpu['memory_used_mib'] == 21007
    assert gpu['processes'] == [{'pid': 850, 'name': 'python3', 'used_memory_mib': 20998, 'unit': None,
                                 'cgroup': '/process_api/384e1f4cfa9e212b0a91b6b4686a511e', 'unit_backend': None, 'cmdline': None}]
    assert gpu['unexplained_memory_mib'] == 0


def test_nvml_and_smi_agree_on_the_real_machine():
    smi, nvml = on_machine('gpu_facts_smi.json'), on_machine('gpu_facts_nvml.json')
    keep = ('uuid', 'name', 'memory_total_mib', 'memory_used_mib', 'compute_capability', 'processes', 'pci_bus_id')
    assert [{k: g[k] for k in keep} for g in smi['nvidia_gpus']] == [{k: g[k] for k in keep} for g in nvml['nvidia_gpus']]
    assert abs(smi['nvidia_gpus'][0]['memory_free_mib'] - nvml['nvidia_gpus'][0]['memory_free_mib']) <= 1


def test_host_facts_on_the_real_machine_saw_the_container():
    node = on_machine('host_facts.json')['specdec_host']
    assert node['container'] == {'detected': True, 'markers': ['/.dockerenv'], 'type': 'docker'}
    assert node['gpu_visibility']['env']['NVIDIA_VISIBLE_DEVICES'] == '0'
    assert node['disk']['/root/bench_results']['exists'] is False
    assert node['disk']['/root/bench_results']['checked_path'] == '/root'


# --- hosts whose PID 1 is not systemd: the supervisor's services ----------------------------------------

SUPERVISED = 'specdec-train-dflash-sim.service'


def test_a_process_in_no_unit_is_named_by_the_supervisor(monkeypatch, run_module, fake_smi):
    """The real H200 is a Docker container: its holder is in the container's cgroup, no unit; the supervisor names it."""
    smi = fake_smi('h200-1gpu-busy', apps='apps_busy.txt', query='query_gpu_nh_busy.txt')
    Host(monkeypatch, smi, holder_cgroups(), services={850: SUPERVISED})
    gpu = run_module(gpu_facts)['ansible_facts']['nvidia_gpus'][0]
    assert gpu['processes'] == [{'pid': 850, 'name': 'python3', 'used_memory_mib': 20998, 'unit': SUPERVISED,
                                 'cgroup': '/process_api/384e1f4cfa9e212b0a91b6b4686a511e', 'unit_backend': 'supervisor', 'cmdline': None}]


def test_a_systemd_service_wins_and_a_session_scope_gives_way(monkeypatch, run_module, fake_smi):
    """A pid in a .service is systemd's whatever the supervisor says; one in a session scope is the supervisor's
    service when it has one (started over SSH), else the scope; one in no unit and no service has no backend."""
    Host(monkeypatch, fake_smi('dgx-h100-8gpu'), cgroup_files('dgx-h100-8gpu'),
         services={47028: 'not-this.service', 60311: SUPERVISED})
    gpus, _driver = facts(run_module(gpu_facts))
    assert [(p['unit'], p['unit_backend']) for p in gpus[0]['processes']] == [('ddtree-qwen.service', 'systemd')]
    assert [(p['pid'], p['unit'], p['unit_backend']) for p in gpus[6]['processes']] == [
        (60311, SUPERVISED, 'supervisor'), (60522, None, None)]
    assert all('unit_backend' in p for gpu in gpus for p in gpu['processes'])


def test_a_session_scope_without_a_service_stays_systemds(monkeypatch, run_module, fake_smi):
    Host(monkeypatch, fake_smi('dgx-h100-8gpu'), cgroup_files('dgx-h100-8gpu'))
    gpus, _driver = facts(run_module(gpu_facts))
    assert [(p['unit'], p['unit_backend']) for p in gpus[6]['processes']] == [('session-12.scope', 'systemd'), (None, None)]


def test_supervisor_service_reads_the_state_folder_and_proc(monkeypatch, tmp_path):
    """This test's own process, recorded as a service's main process, is found through the real /proc."""
    folder = tmp_path / SUPERVISED
    folder.mkdir()
    pid = os.getpid()
    (folder / 'run.json').write_text(json.dumps({'pid': pid, 'pgid': pid, 'supervisor_pid': os.getppid(),
                                                 'start_ticks': _supervisor.start_ticks(pid), 'boot_id': None}))
    monkeypatch.setattr(_gpu_probe, 'SUPERVISOR_STATE_DIR', str(tmp_path))
    assert _gpu_probe.supervisor_service(pid) == SUPERVISED
    assert _gpu_probe.supervisor_service(os.getppid()) is None
    monkeypatch.setattr(_gpu_probe, 'SUPERVISOR_STATE_DIR', str(tmp_path / 'none'))
    assert _gpu_probe.supervisor_service(pid) is None


def test_each_process_has_its_command_line(monkeypatch, run_module, fake_smi):
    """The command line names a holder no unit does (specdec_stoppable_processes); null where it cannot be read."""
    smi = fake_smi('h200-1gpu-busy', apps='apps_busy.txt', query='query_gpu_nh_busy.txt')
    cmdline = 'python3 -m sglang.launch_server --model-path /models/Qwen3.6-27B --port 30100'
    Host(monkeypatch, smi, holder_cgroups(), cmdlines={850: cmdline})
    gpu = run_module(gpu_facts)['ansible_facts']['nvidia_gpus'][0]
    assert [(p['pid'], p['unit'], p['cmdline']) for p in gpu['processes']] == [(850, None, cmdline)]
