# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure parsers for nvidia-smi output, and the NVML reader that yields the same rows.

Private to the specdec.bench collection. Every parser takes text and returns plain data; it raises
ValueError on output it cannot read, which the module turns into fail_json.
"""

from __future__ import annotations

import re

# One --query-gpu field per row: (nvidia-smi field, fact key, converter name).
# Kept to fields every driver since R450 knows, except compute_cap (R510+), which older drivers reject.
GPU_FIELDS = (
    ('index', 'index', 'int'),
    ('uuid', 'uuid', 'str'),
    ('name', 'name', 'str'),
    ('pci.bus_id', 'pci_bus_id', 'str'),
    ('driver_version', 'driver_version', 'str'),
    ('memory.total', 'memory_total_mib', 'int'),
    ('memory.used', 'memory_used_mib', 'int'),
    ('memory.free', 'memory_free_mib', 'int'),
    ('utilization.gpu', 'utilization_gpu_pct', 'int'),
    ('utilization.memory', 'utilization_memory_pct', 'int'),
    ('temperature.gpu', 'temperature_gpu_c', 'int'),
    ('power.draw', 'power_draw_w', 'float'),
    ('power.limit', 'power_limit_w', 'float'),
    ('pstate', 'pstate', 'str'),
    ('compute_cap', 'compute_capability', 'str'),
    ('compute_mode', 'compute_mode', 'str'),
    ('persistence_mode', 'persistence_mode', 'enabled'),
    ('mig.mode.current', 'mig_mode', 'enabled'),
    ('ecc.mode.current', 'ecc_mode', 'enabled'),
    ('pcie.link.gen.current', 'pcie_link_gen', 'int'),
    ('pcie.link.gen.max', 'pcie_link_gen_max', 'int'),
    ('pcie.link.width.current', 'pcie_link_width', 'int'),
    ('pcie.link.width.max', 'pcie_link_width_max', 'int'),
    ('serial', 'serial', 'str'),
    ('vbios_version', 'vbios_version', 'str'),
)
QUERY_GPU_FIELDS = tuple(field for field, _key, _kind in GPU_FIELDS)
# Without these a GPU cannot be identified or sized: a driver rejecting one is not a usable driver.
REQUIRED_GPU_FIELDS = ('index', 'uuid', 'name', 'memory.total', 'memory.used')

# process_name last: it is the only value that may contain a comma, so the row is split at most 3 times.
QUERY_APPS_FIELDS = ('pid', 'gpu_uuid', 'used_memory', 'process_name')

BAD_FIELD_RE = re.compile(r'Field "([^"]+)" is not a valid field to query')
NO_DEVICES_RE = re.compile(r'No devices were found', re.IGNORECASE)
CUDA_VERSION_RE = re.compile(r'CUDA Version\s*:\s*([0-9]+(?:\.[0-9]+)*)')
DRIVER_VERSION_RE = re.compile(r'Driver Version\s*:\s*([0-9]+(?:\.[0-9]+)*)')
ANSI_RE = re.compile(r'\x1b\[[0-9;]*m')
NVLINK_RE = re.compile(r'^NV([0-9]+)$')
GPU_LABEL_RE = re.compile(r'^GPU([0-9]+)$')
NIC_LEGEND_RE = re.compile(r'^\s*(NIC[0-9]+)\s*:\s*(\S+)\s*$')

# nvidia-smi prints these on stdout ahead of the CSV rows; they are worth reporting, not parsing.
SMI_WARNING_PREFIXES = ('WARNING:',)

COMPUTE_MODES = {0: 'Default', 1: 'Exclusive_Thread', 2: 'Prohibited', 3: 'Exclusive_Process'}
MIB = 1024 * 1024


def clean_value(value):
    """A CSV cell as text, or None for "no value": empty, N/A and every bracketed word ([N/A], [Not Supported], ...)."""
    value = value.strip()
    if not value or value == 'N/A' or (value.startswith('[') and value.endswith(']')):
        return None
    return value


def convert(value, kind):
    """Convert one cleaned cell; raises ValueError when a number or mode is not one."""
    if value is None:
        return None
    if kind == 'int':
        return int(value)
    if kind == 'float':
        return float(value)
    if kind == 'enabled':
        if value == 'Enabled':
            return True
        if value == 'Disabled':
            return False
        raise ValueError('expected Enabled or Disabled, got %r' % value)
    return value


def split_smi_warnings(text):
    """Split nvidia-smi stdout into (data lines, warning lines); blank lines are dropped."""
    lines, warnings = [], []
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.lstrip().startswith(SMI_WARNING_PREFIXES):
            warnings.append(line.strip())
        else:
            lines.append(line)
    return lines, warnings


def bad_field(output):
    """The field named by "Field "x" is not a valid field to query.", or None."""
    match = BAD_FIELD_RE.search(output or '')
    return match.group(1) if match else None


def no_devices(output):
    """True when nvidia-smi says there is no GPU ("No devices were found", exit code 6)."""
    return bool(NO_DEVICES_RE.search(output or ''))


def parse_query_gpu(text, fields):
    """Rows of `--query-gpu=<fields> --format=csv,noheader,nounits` as dicts keyed by fact name.

    Every key of GPU_FIELDS is present; a field not in `fields` (dropped for this driver) is None.
    Columns of fields GPU_FIELDS does not name are skipped.
    """
    kinds = dict((field, (key, kind)) for field, key, kind in GPU_FIELDS)
    lines, _warnings = split_smi_warnings(text)
    if not lines:
        raise ValueError('nvidia-smi --query-gpu printed no GPU rows')
    rows = []
    for number, line in enumerate(lines, 1):
        cells = line.split(',')
        if len(cells) != len(fields):
            raise ValueError('line %d has %d fields, expected %d: %r' % (number, len(cells), len(fields), line))
        row = dict((key, None) for _field, key, _kind in GPU_FIELDS)
        for field, cell in zip(fields, cells):
            if field not in kinds:
                continue
            key, kind = kinds[field]
            try:
                row[key] = convert(clean_value(cell), kind)
            except ValueError:
                raise ValueError('line %d: field %s has value %r' % (number, field, cell.strip())) from None
        if row['index'] is None or row['uuid'] is None:
            raise ValueError('line %d has no GPU index or UUID: %r' % (number, line))
        rows.append(row)
    return rows


def parse_compute_apps(text):
    """Rows of `--query-compute-apps=pid,gpu_uuid,used_memory,process_name --format=csv,noheader,nounits`.

    used_memory is None where the driver cannot attribute memory (MIG: [N/A]).
    """
    lines, _warnings = split_smi_warnings(text)
    apps = []
    for number, line in enumerate(lines, 1):
        if line.strip().lower().startswith('no running'):
            continue
        cells = line.split(',', len(QUERY_APPS_FIELDS) - 1)
        if len(cells) != len(QUERY_APPS_FIELDS):
            raise ValueError('compute-apps line %d has %d fields, expected %d: %r' % (number, len(cells), len(QUERY_APPS_FIELDS), line))
        pid, gpu_uuid, used, name = [clean_value(cell) for cell in cells]
        try:
            apps.append({
                'pid': int(pid),
                'gpu_uuid': gpu_uuid,
                'used_memory_mib': convert(used, 'int'),
                'name': name,
            })
        except (TypeError, ValueError):
            raise ValueError('compute-apps line %d is not pid, uuid, MiB, name: %r' % (number, line)) from None
    return apps


def parse_driver_banner(text):
    """Driver and CUDA driver version from the plain `nvidia-smi` banner (or `-q`); values None when absent."""
    cuda = CUDA_VERSION_RE.search(text or '')
    driver = DRIVER_VERSION_RE.search(text or '')
    return {
        'version': driver.group(1) if driver else None,
        'cuda_version': cuda.group(1) if cuda else None,
    }


def cuda_version_from_int(value):
    """NVML's CUDA driver version integer (13000) as the string nvidia-smi prints (13.0)."""
    if value is None:
        return None
    return '%d.%d' % (value // 1000, (value % 1000) // 10)


def parse_topo(text):
    """`nvidia-smi topo -m` as {gpu index: {peers, nics, cpu_affinity, numa_affinity, gpu_numa_id}}.

    peers maps a peer GPU index to its connection (NV18, SYS, NODE, PHB, PXB, PIX, ...);
    nics maps a NIC's device name (mlx5_0, from the NIC legend) or label to its connection.
    """
    lines = [ANSI_RE.sub('', line) for line in (text or '').splitlines()]
    nic_names = {}
    for line in lines:
        match = NIC_LEGEND_RE.match(line)
        if match:
            nic_names[match.group(1)] = match.group(2)

    header = None
    matrix = {}
    for line in lines:
        if not line.strip():
            if header is not None and matrix:
                break
            continue
        if line.strip().startswith('Legend'):
            break
        cells = line.split('\t')
        if header is None:
            header = [cell.strip() for cell in cells]
            if len(header) < 2 or header[0] or not GPU_LABEL_RE.match(header[1]):
                raise ValueError('topo -m header does not start with GPU0: %r' % line)
            continue
        label = cells[0].strip()
        if not GPU_LABEL_RE.match(label):
            continue  # NIC rows: their GPU columns repeat what the GPU rows say
        devices = [name for name in header[1:] if name and name not in ('CPU Affinity', 'NUMA Affinity', 'GPU NUMA ID')]
        affinity_names = [name for name in header[1 + len(devices):] if name]
        values = [cell.strip() for cell in cells[1:]]
        if len(values) < len(devices):
            raise ValueError('topo -m row has %d cells for %d devices: %r' % (len(values), len(devices), line))
        # nvidia-smi pads the affinity columns with empty cells, so they are read by order, not position
        affinity = [value for value in values[len(devices):] if value]
        entry = {'peers': {}, 'nics': {}, 'cpu_affinity': None, 'numa_affinity': None, 'gpu_numa_id': None}
        for device, value in zip(devices, values):
            gpu = GPU_LABEL_RE.match(device)
            if gpu:
                if value != 'X':
                    entry['peers'][int(gpu.group(1))] = value
            else:
                entry['nics'][nic_names.get(device, device)] = value
        for name, value in zip(affinity_names, affinity):
            key = name.lower().replace(' ', '_')
            if key in entry:
                entry[key] = clean_value(value)
        matrix[int(GPU_LABEL_RE.match(label).group(1))] = entry
    if header is None or not matrix:
        raise ValueError('topo -m printed no GPU matrix')
    return matrix


def topology_facts(entry, uuid_by_index):
    """One GPU's `topology` and `nvlink` facts from its parse_topo entry (None, None when not gathered)."""
    if entry is None:
        return None, None
    peers = []
    nvlink = []
    for peer in sorted(entry['peers']):
        connection = entry['peers'][peer]
        peers.append({'index': peer, 'uuid': uuid_by_index.get(peer), 'connection': connection})
        links = NVLINK_RE.match(connection)
        if links:
            nvlink.append({'index': peer, 'uuid': uuid_by_index.get(peer), 'links': int(links.group(1))})
    topology = {
        'peers': peers,
        'nics': dict(entry['nics']),
        'cpu_affinity': entry['cpu_affinity'],
        'numa_affinity': entry['numa_affinity'],
        'gpu_numa_id': entry['gpu_numa_id'],
    }
    return topology, nvlink


def unexplained_memory(used_mib, processes, tolerance_mib):
    """Used MiB that no listed process accounts for; 0 within tolerance; None when it cannot be known.

    It cannot be known when the GPU's used memory is unknown, the process list is unknown, or a
    process's memory is not reported (MIG). The tolerance absorbs the driver's per-context overhead
    (measured: one process with 19592 MiB, 19601 MiB used on the GPU).
    """
    if used_mib is None or processes is None:
        return None
    if any(process['used_memory_mib'] is None for process in processes):
        return None
    rest = used_mib - sum(process['used_memory_mib'] for process in processes)
    return rest if rest > tolerance_mib else 0


def build_gpu_facts(rows, apps, topology, units, tolerance_mib):
    """The nvidia_gpus fact: GPU rows joined with their processes, units and topology, sorted by index.

    rows: parse_query_gpu (or nvml_snapshot) rows; apps: parse_compute_apps rows, or None when the
    process list could not be read; topology: parse_topo result or None; units: {pid: (unit, cgroup)}.
    Returns (gpus, orphan_apps): apps whose GPU UUID matches no GPU are returned apart.
    """
    uuid_by_index = dict((row['index'], row['uuid']) for row in rows)
    by_uuid = {}
    orphans = []
    for app in apps or []:
        by_uuid.setdefault(app['gpu_uuid'], []).append(app)
    known = set(uuid_by_index.values())
    for uuid, listed in by_uuid.items():
        if uuid not in known:
            orphans.extend(listed)

    gpus = []
    for row in sorted(rows, key=lambda item: item['index']):
        gpu = dict((key, value) for key, value in row.items() if key != 'driver_version')
        if apps is None:
            processes = None
        else:
            processes = []
            for app in sorted(by_uuid.get(row['uuid'], []), key=lambda item: item['pid']):
                unit, cgroup = units.get(app['pid'], (None, None))
                processes.append({
                    'pid': app['pid'],
                    'name': app['name'],
                    'used_memory_mib': app['used_memory_mib'],
                    'unit': unit,
                    'cgroup': cgroup,
                })
        gpu['processes'] = processes
        gpu['unexplained_memory_mib'] = unexplained_memory(row['memory_used_mib'], processes, tolerance_mib)
        entry = topology.get(row['index']) if topology is not None else None
        if topology is not None and entry is None:
            entry = {'peers': {}, 'nics': {}, 'cpu_affinity': None, 'numa_affinity': None, 'gpu_numa_id': None}
        gpu['topology'], gpu['nvlink'] = topology_facts(entry, uuid_by_index)
        gpus.append(gpu)
    return gpus, orphans


def _text(value):
    """NVML strings are bytes in old pynvml releases and str in new ones."""
    if isinstance(value, bytes):
        return value.decode('utf-8', 'replace')
    return value


def _mib(value):
    """Bytes to MiB, rounded to nearest: the H200's NVML bytes then give the MiB nvidia-smi printed for the same state."""
    return None if value is None else (int(value) + MIB // 2) // MIB


def nvml_snapshot(nvml):
    """Read GPUs and compute processes through an initialised pynvml module.

    Returns (driver, rows, apps, notes): rows and apps in the shape parse_query_gpu and
    parse_compute_apps return, so both backends produce one schema; notes are warnings to report.
    A value the device does not support is None, as a bracketed CSV value is.
    """
    errors = (nvml.NVMLError, AttributeError, TypeError)
    notes = []

    def value(name, *args):
        try:
            return getattr(nvml, name)(*args)
        except errors:
            return None

    def enabled(result):
        if result is None:
            return None
        current = result[0] if isinstance(result, (list, tuple)) else result
        return bool(current)

    cuda = value('nvmlSystemGetCudaDriverVersion_v2')
    if cuda is None:
        cuda = value('nvmlSystemGetCudaDriverVersion')
    driver = {'version': _text(value('nvmlSystemGetDriverVersion')), 'cuda_version': cuda_version_from_int(cuda)}

    rows, apps = [], []
    memory_v1 = False
    for index in range(nvml.nvmlDeviceGetCount()):
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        try:
            # v2 separates driver-reserved memory from used, as nvidia-smi's memory.used does
            memory = nvml.nvmlDeviceGetMemoryInfo(handle, version=nvml.nvmlMemory_v2)
            reserved = memory.reserved
        except errors:
            memory = nvml.nvmlDeviceGetMemoryInfo(handle)
            reserved = None
            memory_v1 = True
        used = memory.used if reserved is not None else memory.total - memory.free
        pci = value('nvmlDeviceGetPciInfo', handle)
        capability = value('nvmlDeviceGetCudaComputeCapability', handle)
        utilization = value('nvmlDeviceGetUtilizationRates', handle)
        power = value('nvmlDeviceGetPowerUsage', handle)
        power_limit = value('nvmlDeviceGetPowerManagementLimit', handle)
        pstate = value('nvmlDeviceGetPerformanceState', handle)
        rows.append({
            'index': index,
            'uuid': _text(nvml.nvmlDeviceGetUUID(handle)),
            'name': _text(nvml.nvmlDeviceGetName(handle)),
            'pci_bus_id': _text(pci.busId) if pci is not None else None,
            'driver_version': driver['version'],
            'memory_total_mib': _mib(memory.total),
            'memory_used_mib': _mib(used),
            'memory_free_mib': _mib(memory.free),
            'utilization_gpu_pct': utilization.gpu if utilization is not None else None,
            'utilization_memory_pct': utilization.memory if utilization is not None else None,
            'temperature_gpu_c': value('nvmlDeviceGetTemperature', handle, getattr(nvml, 'NVML_TEMPERATURE_GPU', 0)),
            'power_draw_w': power / 1000.0 if power is not None else None,
            'power_limit_w': power_limit / 1000.0 if power_limit is not None else None,
            'pstate': 'P%d' % pstate if pstate is not None else None,
            'compute_capability': '%d.%d' % tuple(capability) if capability is not None else None,
            'compute_mode': COMPUTE_MODES.get(value('nvmlDeviceGetComputeMode', handle)),
            'persistence_mode': enabled(value('nvmlDeviceGetPersistenceMode', handle)),
            'mig_mode': enabled(value('nvmlDeviceGetMigMode', handle)),
            'ecc_mode': enabled(value('nvmlDeviceGetEccMode', handle)),
            'pcie_link_gen': value('nvmlDeviceGetCurrPcieLinkGeneration', handle),
            'pcie_link_gen_max': value('nvmlDeviceGetMaxPcieLinkGeneration', handle),
            'pcie_link_width': value('nvmlDeviceGetCurrPcieLinkWidth', handle),
            'pcie_link_width_max': value('nvmlDeviceGetMaxPcieLinkWidth', handle),
            'serial': _text(value('nvmlDeviceGetSerial', handle)),
            'vbios_version': _text(value('nvmlDeviceGetVbiosVersion', handle)),
        })
        for process in value('nvmlDeviceGetComputeRunningProcesses', handle) or []:
            apps.append({
                'pid': process.pid,
                'gpu_uuid': rows[-1]['uuid'],
                'used_memory_mib': _mib(process.usedGpuMemory),
                'name': _text(value('nvmlSystemGetProcessName', process.pid)),
            })
    if memory_v1:
        notes.append('NVML has no memory v2 here: memory_used_mib includes driver-reserved memory')
    return driver, rows, apps, notes
