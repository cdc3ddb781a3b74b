# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import os
import re

import pytest

from ansible_collections.specdec.bench.plugins.module_utils import _nvidia_smi as smi

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures', 'nvidia-smi')


def read(*parts):
    with open(os.path.join(FIXTURES, *parts), encoding='utf-8') as handle:
        return handle.read()


def header_fields(fixture):
    """Field names from the header of a --format=csv capture (units stripped)."""
    header = read(fixture, 'query_gpu_csv.txt').splitlines()[0]
    return [re.sub(r'\s*\[[^]]*\]$', '', cell.strip()) for cell in header.split(',')]


@pytest.mark.parametrize('cell, expected', [
    ('[N/A]', None),
    (' [Not Supported]', None),
    ('[Requested functionality has been deprecated]', None),
    ('[Unknown Error]', None),
    ('N/A', None),
    ('', None),
    (' 9.0 ', '9.0'),
    ('Default', 'Default'),
])
def test_clean_value(cell, expected):
    assert smi.clean_value(cell) == expected


@pytest.mark.parametrize('value, kind, expected', [
    ('Enabled', 'enabled', True),
    ('Disabled', 'enabled', False),
    ('143771', 'int', 143771),
    ('129.14', 'float', 129.14),
    (None, 'int', None),
    ('9.0', 'str', '9.0'),
])
def test_convert(value, kind, expected):
    assert smi.convert(value, kind) == expected


@pytest.mark.parametrize('value, kind', [('143771 MiB', 'int'), ('On', 'enabled'), ('fast', 'float')])
def test_convert_rejects_garbage(value, kind):
    with pytest.raises(ValueError):
        smi.convert(value, kind)


def test_parse_query_gpu_real_h200():
    """The real 28-field capture, in its own field order: fields gpu_facts does not ask for are skipped."""
    rows = smi.parse_query_gpu(read('h200-1gpu', 'query_gpu_nh.txt'), header_fields('h200-1gpu'))
    assert rows == [{
        'index': 0,
        'uuid': 'GPU-9e1c631b-fafe-f96d-935d-1ff4b8a5bf54',
        'name': 'NVIDIA H200',
        'pci_bus_id': '00000000:00:06.0',
        'driver_version': '580.159.04',
        'memory_total_mib': 143771,
        'memory_used_mib': 0,
        'memory_free_mib': 143156,
        'utilization_gpu_pct': 0,
        'utilization_memory_pct': 0,
        'temperature_gpu_c': 40,
        'power_draw_w': 129.14,
        'power_limit_w': 700.0,
        'pstate': 'P0',
        'compute_capability': '9.0',
        'compute_mode': 'Default',
        'persistence_mode': True,
        'mig_mode': False,
        'ecc_mode': True,
        'pcie_link_gen': 5,
        'pcie_link_gen_max': 5,
        'pcie_link_width': 16,
        'pcie_link_width_max': 16,
        'serial': '1653924042554',
        'vbios_version': '96.00.A5.00.1A',
    }]


def test_parse_query_gpu_real_output_with_units_is_garbage():
    """--format=csv (units kept) is not what the parser reads: it says which field is wrong."""
    lines = read('h200-1gpu', 'query_gpu_csv.txt').splitlines()[1:]
    with pytest.raises(ValueError, match=r'memory\.total'):
        smi.parse_query_gpu('\n'.join(lines), header_fields('h200-1gpu'))


def test_parse_query_gpu_dropped_field_is_null():
    fields = [field for field in smi.QUERY_GPU_FIELDS if field != 'compute_cap']
    rows = smi.parse_query_gpu(read('a100-470', 'query_gpu_nh.txt'), fields)
    assert [row['index'] for row in rows] == [0, 1]
    assert all(row['compute_capability'] is None for row in rows)
    assert rows[1]['name'] == 'NVIDIA A100-PCIE-40GB'
    assert rows[1]['memory_total_mib'] == 40536


def test_parse_query_gpu_mig_brackets_are_null():
    rows = smi.parse_query_gpu(read('h100-mig', 'query_gpu_nh.txt'), header_fields('h100-mig'))
    assert rows[0]['mig_mode'] is True and rows[0]['utilization_gpu_pct'] is None and rows[0]['utilization_memory_pct'] is None
    assert rows[1]['mig_mode'] is False and rows[1]['utilization_gpu_pct'] == 23


def test_parse_query_gpu_skips_smi_warning_lines():
    text = 'WARNING: infoROM is corrupted at gpu 0000:00:06.0\n' + read('h200-1gpu', 'query_gpu_nh.txt')
    assert smi.split_smi_warnings(text)[1] == ['WARNING: infoROM is corrupted at gpu 0000:00:06.0']
    assert len(smi.parse_query_gpu(text, header_fields('h200-1gpu'))) == 1


@pytest.mark.parametrize('name, match', [
    ('query_gpu_nh.txt', r'line 1 has 5 fields, expected 25'),
    ('query_gpu_badvalue.txt', r'memory\.total.*81559 MiB'),
])
def test_parse_query_gpu_garbage(name, match):
    with pytest.raises(ValueError, match=match):
        smi.parse_query_gpu(read('garbage', name), list(smi.QUERY_GPU_FIELDS))


def test_parse_query_gpu_empty_is_garbage():
    with pytest.raises(ValueError, match='no GPU rows'):
        smi.parse_query_gpu('\n', list(smi.QUERY_GPU_FIELDS))


@pytest.mark.parametrize('fixture, name, expected', [
    ('h200-1gpu', 'query_gpu_badfield.txt', 'no.such.field'),
    ('a100-470', 'query_gpu_badfield.txt', 'compute_cap'),
    ('h200-1gpu', 'query_gpu_nh.txt', None),
])
def test_bad_field(fixture, name, expected):
    assert smi.bad_field(read(fixture, name)) == expected


def test_no_devices():
    assert smi.no_devices(read('no-devices', 'query_gpu_nh.txt'))
    assert not smi.no_devices(read('h200-1gpu', 'query_gpu_nh.txt'))


def test_parse_compute_apps_real_busy(fake_smi):
    fake = fake_smi('h200-1gpu', apps='apps_busy.txt')
    _rc, out, _err = fake.run(['nvidia-smi', '--query-compute-apps=%s' % ','.join(smi.QUERY_APPS_FIELDS), '--format=csv,noheader,nounits'])
    assert smi.parse_compute_apps(out) == [
        {'pid': 444, 'gpu_uuid': 'GPU-9e1c631b-fafe-f96d-935d-1ff4b8a5bf54', 'used_memory_mib': 19592, 'name': 'python3'},
    ]


def test_parse_compute_apps_real_idle_is_empty():
    assert smi.parse_compute_apps(read('h200-1gpu', 'apps_idle.txt')) == []


def test_parse_compute_apps_mig_memory_unknown_and_comma_in_name():
    text = '3311, GPU-c7ff839c-55e5-57ba-bd95-75b7d443f0c2, [N/A], python3\n4100, GPU-9515deb1-634e-5ec0-aa0f-199ac2a0c52d, 20480, /opt/x,y/bin/python\n'
    apps = smi.parse_compute_apps(text)
    assert apps[0]['used_memory_mib'] is None
    assert apps[1]['name'] == '/opt/x,y/bin/python'


@pytest.mark.parametrize('text', ['444, GPU-x\n', 'pid, GPU-x, 12, python3\n', '444, GPU-x, 12 MiB, python3\n'])
def test_parse_compute_apps_garbage(text):
    with pytest.raises(ValueError):
        smi.parse_compute_apps(text)


@pytest.mark.parametrize('fixture, driver, cuda', [
    ('h200-1gpu', '580.159.04', '13.0'),
    ('dgx-h100-8gpu', '550.127.05', '12.4'),
    ('a100-470', '470.256.02', '11.4'),
])
def test_parse_driver_banner(fixture, driver, cuda):
    assert smi.parse_driver_banner(read(fixture, 'smi.txt')) == {'version': driver, 'cuda_version': cuda}


def test_parse_driver_banner_q_format_and_nothing():
    text = 'Driver Version                            : 535.183.01\nCUDA Version                              : 12.2\n'
    assert smi.parse_driver_banner(text) == {'version': '535.183.01', 'cuda_version': '12.2'}
    assert smi.parse_driver_banner('') == {'version': None, 'cuda_version': None}


@pytest.mark.parametrize('value, expected', [(13000, '13.0'), (12040, '12.4'), (11040, '11.4'), (None, None)])
def test_cuda_version_from_int(value, expected):
    assert smi.cuda_version_from_int(value) == expected


def test_parse_topo_real_h200():
    assert smi.parse_topo(read('h200-1gpu', 'topo.txt')) == {
        0: {'peers': {}, 'nics': {}, 'cpu_affinity': '0-15', 'numa_affinity': '0', 'gpu_numa_id': None},
    }


def test_parse_topo_nvlink_8gpu():
    topo = smi.parse_topo(read('dgx-h100-8gpu', 'topo.txt'))
    assert sorted(topo) == list(range(8))
    assert topo[0]['peers'] == dict((peer, 'NV18') for peer in range(1, 8))
    assert topo[0]['nics'] == {'mlx5_0': 'PIX', 'mlx5_1': 'NODE', 'mlx5_2': 'SYS', 'mlx5_3': 'SYS'}
    assert topo[5]['cpu_affinity'] == '56-111,168-223' and topo[5]['numa_affinity'] == '1'


def test_parse_topo_old_driver_without_gpu_numa_column():
    topo = smi.parse_topo(read('a100-470', 'topo.txt'))
    assert topo[1] == {'peers': {0: 'SYS'}, 'nics': {}, 'cpu_affinity': '24-47,72-95', 'numa_affinity': '1', 'gpu_numa_id': None}


@pytest.mark.parametrize('text', ['', 'Failed to run topology command\nsomething unexpected\n', '\tCPU Affinity\nGPU0\t0-15\n'])
def test_parse_topo_garbage(text):
    with pytest.raises(ValueError):
        smi.parse_topo(text)


def test_topology_facts_nvlink_peers():
    entry = smi.parse_topo(read('dgx-h100-8gpu', 'topo.txt'))[2]
    topology, nvlink = smi.topology_facts(entry, dict((index, 'GPU-%d' % index) for index in range(8)))
    assert [peer['index'] for peer in nvlink] == [0, 1, 3, 4, 5, 6, 7]
    assert nvlink[0] == {'index': 0, 'uuid': 'GPU-0', 'links': 18}
    assert topology['peers'][0] == {'index': 0, 'uuid': 'GPU-0', 'connection': 'NV18'}
    assert smi.topology_facts(None, {}) == (None, None)


@pytest.mark.parametrize('used, processes, tolerance, expected', [
    # the real H200 capture: 19601 MiB used, one process with 19592 MiB
    (19601, [{'used_memory_mib': 19592}], 256, 0),
    (30720, [], 256, 30720),
    (56077, [{'used_memory_mib': 20000}], 256, 36077),
    (300, [], 256, 300),
    (200, [], 256, 0),
    (19601, [{'used_memory_mib': 19592}], 0, 9),
    (100, [{'used_memory_mib': 500}], 256, 0),
    (10304, [{'used_memory_mib': None}], 256, None),
    (10304, None, 256, None),
    (None, [], 256, None),
])
def test_unexplained_memory(used, processes, tolerance, expected):
    assert smi.unexplained_memory(used, processes, tolerance) == expected


def test_build_gpu_facts_joins_and_sorts():
    rows = smi.parse_query_gpu(read('h100-mig', 'query_gpu_nh.txt'), header_fields('h100-mig'))
    apps = [
        {'pid': 4100, 'gpu_uuid': rows[1]['uuid'], 'used_memory_mib': 20480, 'name': 'python3'},
        {'pid': 3311, 'gpu_uuid': rows[0]['uuid'], 'used_memory_mib': None, 'name': 'python3'},
        {'pid': 9, 'gpu_uuid': 'GPU-elsewhere', 'used_memory_mib': 1, 'name': 'x'},
    ]
    units = {3311: ('mig-inference.service', '/system.slice/mig-inference.service')}
    gpus, orphans = smi.build_gpu_facts(list(reversed(rows)), apps, None, units, 256)
    assert [gpu['index'] for gpu in gpus] == [0, 1]
    assert 'driver_version' not in gpus[0]
    assert gpus[0]['processes'] == [{'pid': 3311, 'name': 'python3', 'used_memory_mib': None, 'unit': 'mig-inference.service',
                                     'cgroup': '/system.slice/mig-inference.service'}]
    assert gpus[0]['unexplained_memory_mib'] is None
    assert gpus[1]['processes'][0]['unit'] is None and gpus[1]['unexplained_memory_mib'] == 0
    assert gpus[0]['topology'] is None and gpus[0]['nvlink'] is None
    assert [app['pid'] for app in orphans] == [9]


def test_build_gpu_facts_unknown_process_list():
    rows = smi.parse_query_gpu(read('h200-1gpu', 'query_gpu_nh.txt'), header_fields('h200-1gpu'))
    gpus, _orphans = smi.build_gpu_facts(rows, None, {}, {}, 256)
    assert gpus[0]['processes'] is None and gpus[0]['unexplained_memory_mib'] is None
    # topology was gathered but has no row for this GPU: empty, not unknown
    assert gpus[0]['nvlink'] == [] and gpus[0]['topology']['peers'] == []


# ---------------------------------------------------------------------------------------------------------------
# NVML, through the fake pynvml of conftest.py, which answers from the real capture (pynvml.txt).

def test_nvml_snapshot_real_values_match_nvidia_smi(fake_pynvml):
    driver, rows, apps, notes = smi.nvml_snapshot(fake_pynvml())
    assert driver == {'version': '580.159.04', 'cuda_version': '13.0'}
    assert notes == []
    row = rows[0]
    assert set(row) == set(key for _field, key, _kind in smi.GPU_FIELDS)
    # the same numbers nvidia-smi printed for the same state: 143771 total, 19601 used (query_gpu_busy.txt)
    assert (row['memory_total_mib'], row['memory_used_mib']) == (143771, 19601)
    assert row['name'] == 'NVIDIA H200' and row['pci_bus_id'] == '00000000:00:06.0'
    assert row['compute_capability'] == '9.0' and row['mig_mode'] is False and row['pstate'] == 'P0' and row['power_draw_w'] == 129.14
    assert row['compute_mode'] == 'Default'
    assert row['utilization_gpu_pct'] is None and row['ecc_mode'] is None and row['temperature_gpu_c'] is None
    assert apps == [{'pid': 444, 'gpu_uuid': 'GPU-9e1c631b-fafe-f96d-935d-1ff4b8a5bf54', 'used_memory_mib': 19592, 'name': 'python3'}]


def test_nvml_snapshot_without_memory_v2_counts_reserved_as_used(fake_pynvml):
    _driver, rows, _apps, notes = smi.nvml_snapshot(fake_pynvml(memory_v2=False, supported=()))
    assert rows[0]['memory_used_mib'] == 20216  # 19601 + the 615 MiB reserve
    assert rows[0]['compute_capability'] is None
    assert notes and 'reserved' in notes[0]
