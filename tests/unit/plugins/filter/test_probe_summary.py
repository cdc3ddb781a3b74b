# SPDX-License-Identifier: GPL-3.0-or-later
from ansible_collections.specdec.bench.plugins.filter.probe_summary import probe_summary

FACTS = {
    'nvidia_driver': {'version': '580.95.05', 'cuda_version': '13.0'},
    'nvidia_gpus': [
        {'index': 1, 'uuid': 'GPU-b', 'name': 'X', 'compute_capability': '12.0', 'memory_used_mib': 0,
         'memory_total_mib': 97887, 'processes': [], 'unexplained_memory_mib': 0, 'nvlink': []},
        {'index': 0, 'uuid': 'GPU-a', 'name': 'X', 'compute_capability': '12.0', 'memory_used_mib': 56077,
         'memory_total_mib': 97887, 'unexplained_memory_mib': 0,
         'processes': [{'pid': 812, 'name': '/usr/bin/python3', 'used_memory_mib': 56077, 'unit': 'ddtree-qwen.service'}],
         'nvlink': [{'index': 1, 'uuid': 'GPU-b', 'links': 18}]},
    ],
    'systemd_units': {
        'sglang-dflash-smoke.service': {'load_state': 'loaded', 'active_state': 'inactive', 'sub_state': 'dead', 'main_pid': None},
        'nosuch.service': {'load_state': 'not-found', 'active_state': 'inactive', 'sub_state': 'dead', 'main_pid': None},
    },
    'specdec_host': {
        'os': {'pretty_name': 'Debian GNU/Linux 12 (bookworm)'},
        'container': {'detected': True, 'type': 'podman'},
        'cpu': {'count': 2},
        'memory': {'total_bytes': 1024},
        'disk': {'/root/bench_results': {'exists': False, 'checked_path': '/root', 'mount_point': '/', 'free_bytes': 5,
                                         'total_bytes': 10, 'fstype': 'overlay'}},
        'listening_ports': [{'port': 22, 'family': 'ipv4'}, {'port': 22, 'family': 'ipv6'}, {'port': 30000}],
        'toolchain': {'python3': {'path': '/usr/bin/python3', 'version': '3.11.2'}, 'uv': {'path': None, 'version': None}},
        'python_envs': {'/opt/sglang': {'packages': {'sglang': '0.5.23', 'torch': None}}},
    },
}


def test_gpus_are_sorted_and_name_their_holders():
    summary = probe_summary(FACTS, 'ct200')
    assert [g['index'] for g in summary['gpus']] == [0, 1]
    assert summary['gpus'][0]['holders'] == [{'pid': 812, 'unit': 'ddtree-qwen.service', 'used_memory_mib': 56077}]
    assert summary['gpus'][0]['nvlink_peers'] == [1]
    assert summary['gpus'][1]['holders'] == []


def test_host_level_entries():
    summary = probe_summary(FACTS, 'ct200')
    assert summary['host'] == 'ct200'
    assert (summary['driver'], summary['cuda'], summary['container']) == ('580.95.05', '13.0', 'podman')
    assert summary['units']['nosuch.service']['load_state'] == 'not-found'
    assert summary['units']['sglang-dflash-smoke.service']['active_state'] == 'inactive'
    assert summary['disks']['/root/bench_results']['checked_path'] == '/root'
    assert summary['listening_ports'] == [22, 30000]
    assert summary['toolchain'] == {'python3': '3.11.2', 'uv': None}
    assert summary['python_envs'] == {'/opt/sglang': {'sglang': '0.5.23', 'torch': None}}


def test_a_host_without_gpus_or_systemd():
    summary = probe_summary({'nvidia_gpus': [], 'nvidia_driver': {'version': None, 'cuda_version': None},
                             'systemd_units': {}, 'specdec_host': {'container': {'detected': False}}}, 'bare')
    assert summary['gpus'] == [] and summary['units'] == {} and summary['container'] is None


def test_lines_name_the_holder_and_tell_missing_units_from_stopped():
    from ansible_collections.specdec.bench.plugins.filter.probe_summary import probe_summary_lines
    lines = probe_summary_lines(probe_summary(FACTS, 'ct200'))
    assert lines[0] == 'ct200: Debian GNU/Linux 12 (bookworm) (podman container), 2 CPUs, driver 580.95.05, CUDA 13.0, 2 GPU(s)'
    assert lines[1] == 'GPU0 X cc 12.0: 56077/97887 MiB used, held by ddtree-qwen.service pid 812 56077 MiB, NVLink to GPU1'
    assert lines[2] == 'GPU1 X cc 12.0: 0/97887 MiB used, free'
    assert 'unit nosuch.service: not-found' in lines
    assert 'unit sglang-dflash-smoke.service: inactive/dead' in lines
    assert lines[-1] == 'disk /root/bench_results: 0.0 GiB free on / (does not exist yet; checked /root)'


def test_a_host_whose_pid1_is_not_systemd_says_where_its_services_run():
    from ansible_collections.specdec.bench.plugins.filter.probe_summary import probe_summary_lines
    facts = dict(FACTS, systemd_units={}, specdec_host=dict(
        FACTS['specdec_host'], init={'pid1': 'sim-init', 'systemd': False, 'service_backend': 'supervisor'}))
    facts['nvidia_gpus'] = [dict(FACTS['nvidia_gpus'][0], processes=[
        {'pid': 97, 'used_memory_mib': 36045, 'unit': 'specdec-train-dflash-sim.service', 'unit_backend': 'supervisor'}])]
    summary = probe_summary(facts, 'a100box')
    assert summary['init'] == {'pid1': 'sim-init', 'service_backend': 'supervisor'}
    lines = probe_summary_lines(summary)
    assert lines[1] == "init sim-init (no systemd: services run under specdec's supervisor)"
    assert lines[2] == 'GPU1 X cc 12.0: 0/97887 MiB used, held by specdec-train-dflash-sim.service pid 97 36045 MiB'


def test_a_systemd_host_gets_no_init_line():
    from ansible_collections.specdec.bench.plugins.filter.probe_summary import probe_summary_lines
    facts = dict(FACTS, specdec_host=dict(FACTS['specdec_host'], init={'pid1': 'systemd', 'systemd': True, 'service_backend': 'systemd'}))
    summary = probe_summary(facts, 'ct200')
    assert summary['init'] == {'pid1': 'systemd', 'service_backend': 'systemd'}
    assert not [line for line in probe_summary_lines(summary) if line.startswith('init ')]
