# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Gathering of the GPU facts (nvidia-smi or NVML, /proc/PID/cgroup and specdec's supervisor), shared by gpu_facts and probe.

Private to the specdec.bench collection. The I/O lives here; the parsing is in _nvidia_smi. Warnings go
through module.warn; a fatal error raises GpuProbeError, which the calling module turns into its failure.
"""

from __future__ import annotations

from ansible_collections.specdec.bench.plugins.module_utils._nvidia_smi import (
    QUERY_APPS_FIELDS,
    QUERY_GPU_FIELDS,
    REQUIRED_GPU_FIELDS,
    bad_field,
    build_gpu_facts,
    no_devices,
    nvml_snapshot,
    parse_compute_apps,
    parse_driver_banner,
    parse_query_gpu,
    parse_topo,
    split_smi_warnings,
)
from ansible_collections.specdec.bench.plugins.module_utils._proc import parse_proc_cgroup, systemd_cgroup_path
from ansible_collections.specdec.bench.plugins.module_utils._process import read_cmdline
from ansible_collections.specdec.bench.plugins.module_utils._supervisor import DEFAULT_STATE_DIR, owner_of
from ansible_collections.specdec.bench.plugins.module_utils._systemd import cgroup_root, unit_from_cgroup_path

BACKENDS = ('auto', 'smi', 'nvml')
# The options documented by the specdec.bench.gpu_probe doc fragment.
GPU_OPTIONS = dict(
    topology=dict(type='bool', default=True),
    unexplained_tolerance_mib=dict(type='int', default=256),
)
# nvidia-smi's messages are parsed, so it runs in the C locale.
ENVIRON = dict(LANG='C', LC_ALL='C', LC_MESSAGES='C', LANGUAGE='C')
# nvidia-smi exit codes that mean "no usable GPU here" rather than a broken tool:
# 6 no device found, 9 driver not loaded, 12 NVML library not found.
NO_GPU_EXIT_CODES = (6, 9, 12)
# Each retry drops one rejected field; more retries than optional fields would mean a loop.
MAX_FIELD_RETRIES = len(QUERY_GPU_FIELDS) - len(REQUIRED_GPU_FIELDS)
SMI_DIRS = ['/usr/local/nvidia/bin', '/usr/lib/wsl/lib']
NO_DRIVER = {'version': None, 'cuda_version': None}
# Where specdec.bench.service keeps the supervisor's services (hosts whose PID 1 is not systemd).
SUPERVISOR_STATE_DIR = DEFAULT_STATE_DIR


class GpuProbeError(Exception):
    """The GPU facts cannot be gathered: msg and the other keys of the module's failed result (rc, stdout, ...)."""

    def __init__(self, msg, **result):
        super().__init__(msg)
        self.msg = msg
        self.result = result


def read_proc_cgroup(pid):
    with open('/proc/%d/cgroup' % pid, encoding='utf-8', errors='replace') as handle:
        return handle.read()


def systemd_path(pid):
    """The systemd cgroup path of a pid, or None when its cgroup cannot be read (exited, another PID namespace)."""
    try:
        return systemd_cgroup_path(parse_proc_cgroup(read_proc_cgroup(pid)))
    except (OSError, ValueError):
        return None


def supervisor_service(pid):
    """The service of specdec's supervisor that pid belongs to, or None."""
    return owner_of(pid, SUPERVISOR_STATE_DIR)


def process_cmdline(pid):
    """The pid's command line, NULs as spaces, at most 4096 characters; None when unreadable. A holder no unit names
    is matched by it (specdec_stoppable_processes)."""
    return read_cmdline(pid)


def process_units(pids):
    """{pid: (unit, cgroup path, backend)}: the systemd unit of the pid's cgroup (resolved against the root systemd
    runs its tree under), else the supervisor's service the pid belongs to; backend says which, None for neither.

    A session scope is no service: a supervised process started over SSH on a systemd host is in one, and its
    supervisor's service name says more.
    """
    root = cgroup_root(systemd_path(1))
    units = {}
    for pid in pids:
        path = systemd_path(pid)
        unit = unit_from_cgroup_path(path, root)
        backend = 'systemd' if unit else None
        if unit is None or unit.endswith('.scope'):
            service = supervisor_service(pid)
            if service:
                unit, backend = service, 'supervisor'
        units[pid] = (unit, path, backend)
    return units


def load_nvml():
    try:
        import pynvml  # pylint: disable=import-outside-toplevel
    except ImportError:
        return None
    return pynvml


def run_smi(module, smi, *args):
    rc, out, err = module.run_command([smi] + list(args))
    _lines, warnings = split_smi_warnings(out)
    for warning in warnings:
        module.warn('nvidia-smi: %s' % warning)
    return rc, out, err


def query_gpus(module, smi):
    """(rows, dropped fields), or (None, dropped) when nvidia-smi finds no usable GPU."""
    fields = list(QUERY_GPU_FIELDS)
    dropped = []
    for _attempt in range(MAX_FIELD_RETRIES + 1):
        rc, out, err = run_smi(module, smi, '--query-gpu=%s' % ','.join(fields), '--format=csv,noheader,nounits')
        output = (out or '') + (err or '')
        if no_devices(output):
            module.warn('nvidia-smi found no GPU: %s' % output.strip())
            return None, dropped
        if rc == 0:
            try:
                return parse_query_gpu(out, fields), dropped
            except ValueError as exc:
                raise GpuProbeError('cannot parse nvidia-smi --query-gpu output: %s' % exc, rc=rc, stdout=out, stderr=err)
        field = bad_field(output)
        if field in REQUIRED_GPU_FIELDS:
            raise GpuProbeError('nvidia-smi rejects the required field %s: %s' % (field, output.strip()), rc=rc, dropped_fields=dropped)
        if field is not None and field not in fields:
            raise GpuProbeError('nvidia-smi rejects the field %s, which was not asked for: %s' % (field, output.strip()), rc=rc, dropped_fields=dropped)
        if field is not None:
            fields.remove(field)
            dropped.append(field)
            continue
        if rc in NO_GPU_EXIT_CODES:
            module.warn('nvidia-smi has no usable GPU (exit code %d): %s' % (rc, output.strip()))
            return None, dropped
        raise GpuProbeError('nvidia-smi --query-gpu failed with exit code %d: %s' % (rc, output.strip()), rc=rc, stdout=out, stderr=err)
    raise GpuProbeError('nvidia-smi kept rejecting --query-gpu fields; dropped %s' % ', '.join(dropped), dropped_fields=dropped)


def query_apps(module, smi):
    """Compute processes, or None (with a warning) when nvidia-smi cannot list them."""
    rc, out, err = run_smi(module, smi, '--query-compute-apps=%s' % ','.join(QUERY_APPS_FIELDS), '--format=csv,noheader,nounits')
    if rc != 0:
        module.warn('nvidia-smi --query-compute-apps failed with exit code %d, processes unknown: %s' % (rc, (out + err).strip()))
        return None
    try:
        return parse_compute_apps(out)
    except ValueError as exc:
        raise GpuProbeError('cannot parse nvidia-smi --query-compute-apps output: %s' % exc, rc=rc, stdout=out, stderr=err)


def query_topology(module, smi):
    rc, out, err = run_smi(module, smi, 'topo', '-m')
    if rc != 0:
        module.warn('nvidia-smi topo -m failed with exit code %d, topology unknown: %s' % (rc, (out + err).strip()))
        return None
    try:
        return parse_topo(out)
    except ValueError as exc:
        raise GpuProbeError('cannot parse nvidia-smi topo -m output: %s' % exc, rc=rc, stdout=out, stderr=err)


def query_driver(module, smi, rows):
    """Driver version from the GPU rows; the CUDA driver version only the banner prints."""
    rc, out, err = run_smi(module, smi)
    banner = parse_driver_banner(out) if rc == 0 else dict(NO_DRIVER)
    if banner['cuda_version'] is None:
        module.warn('nvidia-smi printed no CUDA version (exit code %d): %s' % (rc, (err or '').strip()))
    versions = set(row['driver_version'] for row in rows if row['driver_version'])
    return {'version': versions.pop() if len(versions) == 1 else banner['version'], 'cuda_version': banner['cuda_version']}


def read_nvml(module, nvml, required):
    """(driver, rows, apps) through NVML, or None when NVML does not initialise (no driver, no GPU)."""
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        if required:
            module.warn('NVML does not initialise, no usable GPU: %s' % exc)
        return None
    try:
        driver, rows, apps, notes = nvml_snapshot(nvml)
    except nvml.NVMLError as exc:
        raise GpuProbeError('NVML failed while reading GPUs: %s' % exc)
    finally:
        nvml.nvmlShutdown()
    for note in notes:
        module.warn(note)
    return driver, rows, apps


def gather_gpu_facts(module, backend, topology, unexplained_tolerance_mib):
    """({nvidia_gpus, nvidia_driver}, {backend, dropped_fields}): the facts, and what produced them.

    backend is one of BACKENDS; the returned backend is the one used, or None when neither was available.
    """
    module.run_command_environ_update.update(ENVIRON)
    smi = module.get_bin_path('nvidia-smi', opt_dirs=SMI_DIRS)

    nvml = load_nvml() if backend in ('auto', 'nvml') else None
    if backend == 'nvml' and nvml is None:
        raise GpuProbeError('backend=nvml needs the pynvml module (pip package nvidia-ml-py) on the target Python')

    used = None
    dropped = []
    snapshot = read_nvml(module, nvml, backend == 'nvml') if nvml is not None else None
    if snapshot is not None:
        used = 'nvml'
        driver, rows, apps = snapshot
    elif backend == 'nvml':
        rows = None
    elif smi is None:
        module.warn('nvidia-smi is not installed: no NVIDIA GPU facts')
        rows = None
    else:
        used = 'smi'
        rows, dropped = query_gpus(module, smi)
        if dropped:
            module.warn('this driver rejects --query-gpu fields %s; they are null on every GPU' % ', '.join(dropped))
        if rows is not None:
            apps = query_apps(module, smi)
            driver = query_driver(module, smi, rows)

    extra = {'backend': used, 'dropped_fields': dropped}
    if rows is None:
        return {'nvidia_gpus': [], 'nvidia_driver': dict(NO_DRIVER)}, extra

    topo = None
    if topology and rows:
        if smi is None:
            module.warn('nvidia-smi is not installed: GPU topology and NVLink unknown')
        else:
            topo = query_topology(module, smi)

    units = process_units(sorted(set(app['pid'] for app in apps or [])))
    gpus, orphans = build_gpu_facts(rows, apps, topo, dict((pid, entry[:2]) for pid, entry in units.items()),
                                    unexplained_tolerance_mib)
    cmdlines = dict((pid, process_cmdline(pid)) for pid in units)
    for gpu in gpus:
        for process in gpu['processes'] or []:
            process['unit_backend'] = units[process['pid']][2]
            process['cmdline'] = cmdlines[process['pid']]
    for app in orphans:
        module.warn('compute process %d is on GPU %s, which is not in the GPU list' % (app['pid'], app['gpu_uuid']))
    return {'nvidia_gpus': gpus, 'nvidia_driver': driver}, extra
