"""Fake nvidia-smi for simulated GPU hosts (Python 3.9+, standard library only).

It answers like the real tool (driver 580, checked field for field against
tests/fixtures/nvidia-smi/h200-1gpu/) for:

    nvidia-smi                                   the summary table
    nvidia-smi -L | --list-gpus
    nvidia-smi --query-gpu=F,... --format=csv[,noheader][,nounits] [-i ID,...] [-l SEC | -lms MS]
    nvidia-smi --query-compute-apps=F,... --format=csv[,noheader][,nounits] [-i ID,...]
    nvidia-smi --help-query-gpu | --help-query-compute-apps   (names only)
    nvidia-smi topo -m
    nvidia-smi nvlink -s | --status [-i ID,...]
    nvidia-smi --version

It keeps no state: every call reads the layout, then scans /proc and the power state.
With -l/--loop=SEC or -lms/--loop-ms=MS a query (or the table) repeats every SEC seconds / MS
milliseconds until killed, the CSV header printed once, as the real tool does.

Power (sim_gpu_power.py, shared with the fake pynvml): a layout's "power.draw" is the GPU's idle
draw; what loads the GPU (the SGLang emulator, the trainer) raises it up to "power.peak" (default
97% of the power limit). power.draw and power.draw.average are the mean of the last second, as on
Ampere and newer, power.draw.instant the present draw; temperature.gpu rises with the load.

Environment
    SIM_GPU_LAYOUT      layout file (default /etc/sim-gpu/layout.json); missing ->
                        "couldn't communicate with the NVIDIA driver", exit 9
    SIM_GPU_STATE_DIR   claim files live in $SIM_GPU_STATE_DIR/claims/ (default /run/sim-gpu)
    SIM_PROC_ROOT       procfs to scan (default /proc)

Layout (JSON)
    {
      "driver_version": "580.159.04",
      "cuda_version": "13.0",
      "nvml_version": "580.159",          optional, default: driver_version minus its last part
      "gpu_defaults": {...},              optional, merged under every entry of "gpus"
      "gpus": [ {...}, ... ],             in index order
      "topology": [["X", "PIX", ...], ...]  optional N x N matrix for `topo -m`
                                          (X, PIX, PXB, PHB, NODE, SYS, NV<n>); default:
                                          NODE within a NUMA node, SYS across
    }
    A GPU entry maps --query-gpu field names (canonical or alias, see GPU_FIELDS) to values:
    numbers without units ("memory.total": 143771, "power.draw": 129.16), strings
    ("name": "NVIDIA H200"), bracketed strings for what the GPU lacks ("[Not Supported]"),
    or null for "[N/A]". Fields not given take the defaults in FIELD_DEFAULTS (mostly [N/A]);
    some are derived (index, count, pci.domain/bus/device, memory.free, *.pending, ...).
    "memory.used" and "utilization.gpu" are the idle values; claims add to them.
    memory.free = memory.total - memory.reserved - memory.used.
    Extra keys per GPU (not query fields):
      "cpu_affinity": "0-15", "numa_affinity": "0", "gpu_numa_id": "N/A"   for `topo -m`
      "nvlink_links": 18, "nvlink_speed": "26.562 GB/s"                   for `nvlink -s`
      "power.peak": 680                  W at full load (default 97% of the power limit)
      "nvml_total_energy": false         the fake pynvml's counter is [Not Supported] (a pre-Volta GPU)

Claims (see tests/sim/README.md)
    A live process claims GPU memory with SIM_GPU_MEMORY_MIB=<MiB per GPU> in its environment,
    on the GPUs named by its CUDA_VISIBLE_DEVICES (indices or UUIDs, parsed as CUDA does: up to
    the first invalid entry; unset means GPU 0). A claim file
    $SIM_GPU_STATE_DIR/claims/<pid>.json {"memory_mib": N, "utilization_pct": U, "gpus": [...]}
    ("utilization_pct" and "gpus" optional; "gpus" overrides CUDA_VISIBLE_DEVICES) wins over the
    environment; it counts only while <pid> is alive and started before the file was written.
    A process without a claim file whose parent holds the same claim is not counted again.
    Zombies and unreadable /proc entries are skipped.
"""

import json
import os
import signal
import sys
import time
from collections import namedtuple
from datetime import datetime

try:
    import sim_gpu_power
except ImportError:  # run from elsewhere than its own folder
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import sim_gpu_power

# --------------------------------------------------------------------------------------------
# Constants and messages
# --------------------------------------------------------------------------------------------

DEFAULT_LAYOUT = "/etc/sim-gpu/layout.json"
DEFAULT_STATE_DIR = "/run/sim-gpu"
DEFAULT_PROC_ROOT = "/proc"

EXIT_OK = 0
EXIT_INVALID_ARGUMENT = 2
EXIT_NOT_FOUND = 6
EXIT_DRIVER_NOT_LOADED = 9

MSG_NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running.\n\n"
)
MSG_INVALID_COMBINATION = (
    "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n"
)
MSG_NO_DEVICES = "No devices were found\n"
DEPRECATED = "[Requested functionality has been deprecated]"
NA = "[N/A]"

# A claim slightly older than its process start still counts (start times are estimates).
START_TIME_TOLERANCE_S = 1.0

# --------------------------------------------------------------------------------------------
# Field tables: "canonical|alias... [unit]", in the order of `--help-query-*`
# --------------------------------------------------------------------------------------------

GPU_FIELDS_TEXT = """
timestamp
driver_version
vgpu_driver_capability.heterogenous_multivGPU
count
name|gpu_name
serial|gpu_serial
uuid|gpu_uuid
pci.bus_id|gpu_bus_id
pci.domain
pci.bus
pci.device
pci.baseClass
pci.subClass
pci.device_id
pci.sub_device_id
vgpu_device_capability.fractional_multiVgpu
vgpu_device_capability.heterogeneous_timeSlice_profile
vgpu_device_capability.heterogeneous_timeSlice_sizes
vgpu_device_capability.homogeneous_placements
vgpu_device_capability.mig_timeSlicing
vgpu_device_capability.mig_timeSlicing_mode
pcie.link.gen.current
pcie.link.gen.gpucurrent
pcie.link.gen.max
pcie.link.gen.gpumax
pcie.link.gen.hostmax
pcie.link.width.current
pcie.link.width.max
index
display_mode
display_attached
display_active
persistence_mode
addressing_mode
accounting.mode
accounting.buffer_size
driver_model.current
driver_model.pending
vbios_version
inforom.img|inforom.image
inforom.oem
inforom.ecc
inforom.pwr|inforom.power
inforom.checksum_validation
gpu_recovery_action
gom.current|gpu_operation_mode.current
gom.pending|gpu_operation_mode.pending
fan.speed [%]
pstate
clocks_event_reasons.supported|clocks_throttle_reasons.supported
clocks_event_reasons.active|clocks_throttle_reasons.active
clocks_event_reasons.gpu_idle|clocks_throttle_reasons.gpu_idle
clocks_event_reasons.applications_clocks_setting|clocks_throttle_reasons.applications_clocks_setting
clocks_event_reasons.sw_power_cap|clocks_throttle_reasons.sw_power_cap
clocks_event_reasons.hw_slowdown|clocks_throttle_reasons.hw_slowdown
clocks_event_reasons.hw_thermal_slowdown|clocks_throttle_reasons.hw_thermal_slowdown
clocks_event_reasons.hw_power_brake_slowdown|clocks_throttle_reasons.hw_power_brake_slowdown
clocks_event_reasons.sw_thermal_slowdown|clocks_throttle_reasons.sw_thermal_slowdown
clocks_event_reasons.sync_boost|clocks_throttle_reasons.sync_boost
clocks_event_reasons_counters.sw_power_cap [us]
clocks_event_reasons_counters.sync_boost [us]
clocks_event_reasons_counters.sw_thermal_slowdown [us]
clocks_event_reasons_counters.hw_thermal_slowdown [us]
clocks_event_reasons_counters.hw_power_brake_slowdown [us]
memory.total [MiB]
memory.reserved [MiB]
memory.used [MiB]
memory.free [MiB]
compute_mode
compute_cap
utilization.gpu [%]
utilization.memory [%]
utilization.encoder [%]
utilization.decoder [%]
utilization.jpeg [%]
utilization.ofa [%]
encoder.stats.sessionCount
encoder.stats.averageFps
encoder.stats.averageLatency
dramEncryption.mode.current
dramEncryption.mode.pending
ecc.mode.current
ecc.mode.pending
ecc.errors.corrected.volatile.device_memory
ecc.errors.corrected.volatile.dram
ecc.errors.corrected.volatile.register_file
ecc.errors.corrected.volatile.l1_cache
ecc.errors.corrected.volatile.l2_cache
ecc.errors.corrected.volatile.texture_memory
ecc.errors.corrected.volatile.cbu
ecc.errors.corrected.volatile.sram
ecc.errors.corrected.volatile.total
ecc.errors.corrected.aggregate.device_memory
ecc.errors.corrected.aggregate.dram
ecc.errors.corrected.aggregate.register_file
ecc.errors.corrected.aggregate.l1_cache
ecc.errors.corrected.aggregate.l2_cache
ecc.errors.corrected.aggregate.texture_memory
ecc.errors.corrected.aggregate.cbu
ecc.errors.corrected.aggregate.sram
ecc.errors.corrected.aggregate.total
ecc.errors.uncorrected.volatile.device_memory
ecc.errors.uncorrected.volatile.dram
ecc.errors.uncorrected.volatile.register_file
ecc.errors.uncorrected.volatile.l1_cache
ecc.errors.uncorrected.volatile.l2_cache
ecc.errors.uncorrected.volatile.texture_memory
ecc.errors.uncorrected.volatile.cbu
ecc.errors.uncorrected.volatile.sram
ecc.errors.uncorrected.volatile.total
ecc.errors.uncorrected.aggregate.device_memory
ecc.errors.uncorrected.aggregate.dram
ecc.errors.uncorrected.aggregate.register_file
ecc.errors.uncorrected.aggregate.l1_cache
ecc.errors.uncorrected.aggregate.l2_cache
ecc.errors.uncorrected.aggregate.texture_memory
ecc.errors.uncorrected.aggregate.cbu
ecc.errors.uncorrected.aggregate.sram
ecc.errors.uncorrected.aggregate.total
ecc.errors.uncorrected.volatile.sram.parity
ecc.errors.uncorrected.volatile.sram.secded
ecc.errors.uncorrected.aggregate.sram.parity
ecc.errors.uncorrected.aggregate.sram.secded
ecc.errors.uncorrected.aggregate.sram.thresholdExceeded
ecc.errors.uncorrected.aggregate.sram.l2
ecc.errors.uncorrected.aggregate.sram.sm
ecc.errors.uncorrected.aggregate.sram.mcu
ecc.errors.uncorrected.aggregate.sram.pcie
ecc.errors.uncorrected.aggregate.sram.other
retired_pages.single_bit_ecc.count|retired_pages.sbe
retired_pages.double_bit.count|retired_pages.dbe
retired_pages.pending
remapped_rows.correctable|remapped_rows.sbe
remapped_rows.correctable_inactive
remapped_rows.uncorrectable|remapped_rows.dbe
remapped_rows.uncorrectable_inactive
remapped_rows.pending
remapped_rows.failure
remapped_rows.histogram.max
remapped_rows.histogram.high
remapped_rows.histogram.partial
remapped_rows.histogram.low
remapped_rows.histogram.none
temperature.gpu
temperature.gpu.tlimit
temperature.memory
power.management
power.draw [W]
power.draw.average|gpu.power.draw.average [W]
power.draw.instant|gpu.power.draw.instant [W]
power.limit|gpu.power.requested_limit [W]
enforced.power.limit|gpu.power.current_limit [W]
power.default_limit|gpu.power.default_limit [W]
power.min_limit|gpu.power.min_limit [W]
power.max_limit|gpu.power.max_limit [W]
module.power.draw.average [W]
module.power.draw.instant [W]
module.power.limit|module.power.requested_limit [W]
module.enforced.power.limit|module.power.current_limit [W]
module.power.default_limit [W]
module.power.min_limit [W]
module.power.max_limit [W]
power_smoothing.delayed_power_smoothing_supported
power_smoothing.primary_power_floor [W]
power_smoothing.secondary_power_floor [W]
power_smoothing.min_primary_floor_activation_offset [W]
power_smoothing.min_primary_floor_activation_point [W]
power_smoothing.window_multiplier [ms]
power_smoothing.curr_profile.secondary_power_floor [W]
power_smoothing.curr_profile.primary_floor_act_window_multiplier
power_smoothing.curr_profile.primary_floor_tar_window_multiplier
power_smoothing.curr_profile.primary_floor_act_offset [W]
power_smoothing.admin_override.secondary_power_floor [W]
power_smoothing.admin_override.primary_floor_act_window_multiplier
power_smoothing.admin_override.primary_floor_tar_window_multiplier
power_smoothing.admin_override.primary_floor_act_offset [W]
clocks.current.graphics|clocks.gr [MHz]
clocks.current.sm|clocks.sm [MHz]
clocks.current.memory|clocks.mem [MHz]
clocks.current.video|clocks.video [MHz]
clocks.applications.graphics|clocks.applications.gr [MHz]
clocks.applications.memory|clocks.applications.mem [MHz]
clocks.default_applications.graphics|clocks.default_applications.gr [MHz]
clocks.default_applications.memory|clocks.default_applications.mem [MHz]
clocks.max.graphics|clocks.max.gr [MHz]
clocks.max.sm [MHz]
clocks.max.memory|clocks.max.mem [MHz]
mig.mode.current
mig.mode.pending
gsp.mode.current
gsp.mode.default
c2c.mode
protected_memory.total [MiB]
protected_memory.used [MiB]
protected_memory.free [MiB]
fabric.state
fabric.status
fabric.cliqueId
fabric.clusterUuid
fabric.health.summary
fabric.health.bandwidth
fabric.health.route_recovery_in_progress
fabric.health.route_unhealthy
fabric.health.access_timeout_recovery
fabric.health.incorrect_configuration
fabric.health.partition_assigned
platform.chassis_serial_number
platform.slot_number
platform.tray_index
platform.host_id
platform.peer_type
platform.module_id
platform.gpu_fabric_guid
hostname
"""

APP_FIELDS_TEXT = """
timestamp
gpu_name
gpu_bus_id
gpu_serial
gpu_uuid
pid
process_name|name
used_gpu_memory|used_memory [MiB]
"""

Field = namedtuple("Field", "name aliases unit")


def parse_field_table(text):
    """Parse a field table into (ordered list of Field, {name or alias: Field})."""
    fields, lookup = [], {}
    for line in text.strip().splitlines():
        parts = line.split()
        names = parts[0].split("|")
        unit = parts[1].strip("[]") if len(parts) > 1 else None
        field = Field(names[0], tuple(names[1:]), unit)
        fields.append(field)
        for name in names:
            lookup[name] = field
    return fields, lookup


GPU_FIELDS, GPU_FIELD_LOOKUP = parse_field_table(GPU_FIELDS_TEXT)
APP_FIELDS, APP_FIELD_LOOKUP = parse_field_table(APP_FIELDS_TEXT)

_NOT_ACTIVE_REASONS = (
    "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "hw_thermal_slowdown",
    "hw_power_brake_slowdown", "sw_thermal_slowdown", "sync_boost",
)

# Values of a healthy idle datacenter GPU; everything not listed here (nor in the layout) is [N/A].
FIELD_DEFAULTS = {
    "display_mode": DEPRECATED,
    "display_attached": "No",
    "display_active": "Disabled",
    "persistence_mode": "Enabled",
    "addressing_mode": "None",
    "accounting.mode": "Disabled",
    "accounting.buffer_size": 4000,
    "gpu_recovery_action": "None",
    "pstate": "P0",
    "clocks_event_reasons.supported": "0x00000000000001FF",
    "clocks_event_reasons.active": "0x0000000000000001",
    "clocks_event_reasons.gpu_idle": "Active",
    "compute_mode": "Default",
    "utilization.gpu": 0,
    "utilization.memory": 0,
    "utilization.encoder": 0,
    "utilization.decoder": 0,
    "utilization.jpeg": 0,
    "utilization.ofa": 0,
    "encoder.stats.sessionCount": 0,
    "encoder.stats.averageFps": 0,
    "encoder.stats.averageLatency": 0,
    "memory.used": 0,
    "memory.reserved": 0,
    "ecc.mode.current": "Enabled",
    "remapped_rows.correctable": 0,
    "remapped_rows.correctable_inactive": 0,
    "remapped_rows.uncorrectable": 0,
    "remapped_rows.uncorrectable_inactive": 0,
    "remapped_rows.pending": "No",
    "remapped_rows.failure": "No",
    "power.management": "Supported",
    "c2c.mode": "Disabled",
    "protected_memory.total": 0,
    "protected_memory.used": 0,
    "protected_memory.free": 0,
}
FIELD_DEFAULTS.update(
    ("clocks_event_reasons." + reason, "Not Active") for reason in _NOT_ACTIVE_REASONS
)
FIELD_DEFAULTS.update(
    (f.name, 0) for f in GPU_FIELDS if f.name.startswith("clocks_event_reasons_counters.")
)

# ECC error counters a GPU with ECC enabled reports as 0 (the rest stay [N/A]).
_ECC_COUNTED = ("device_memory", "dram", "sram", "total")

# Fields whose default is another field's value (applied in this order).
FIELD_FALLBACKS = (
    ("pcie.link.gen.gpucurrent", "pcie.link.gen.current"),
    ("pcie.link.gen.gpumax", "pcie.link.gen.max"),
    ("power.draw.average", "power.draw"),
    ("power.draw.instant", "power.draw"),
    ("enforced.power.limit", "power.limit"),
    ("power.default_limit", "power.limit"),
    ("power.max_limit", "power.limit"),
    ("clocks.current.graphics", "clocks.current.sm"),
    ("clocks.max.graphics", "clocks.max.sm"),
    ("clocks.applications.graphics", "clocks.max.graphics"),
    ("clocks.applications.memory", "clocks.max.memory"),
    ("clocks.default_applications.graphics", "clocks.applications.graphics"),
    ("clocks.default_applications.memory", "clocks.applications.memory"),
    ("ecc.mode.pending", "ecc.mode.current"),
    ("mig.mode.pending", "mig.mode.current"),
    ("gsp.mode.default", "gsp.mode.current"),
    ("dramEncryption.mode.pending", "dramEncryption.mode.current"),
)

TOPO_LEGEND = """
Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
"""


class UsageError(Exception):
    """Bad command line: message (already newline-terminated) and exit code."""

    def __init__(self, message, code=EXIT_INVALID_ARGUMENT):
        super().__init__(message)
        self.message = message
        self.code = code


# --------------------------------------------------------------------------------------------
# Layout and GPU state (pure)
# --------------------------------------------------------------------------------------------

Claim = namedtuple("Claim", "pid name gpus memory_mib utilization_pct")


def canonical_gpu_entry(entry):
    """Layout keys may be aliases; store them under the canonical field name."""
    out = {}
    for key, value in entry.items():
        field = GPU_FIELD_LOOKUP.get(key)
        out[field.name if field else key] = value
    return out


def layout_gpus(layout):
    """The layout's GPUs as merged dicts (defaults < gpu_defaults < entry), in index order."""
    base = canonical_gpu_entry(layout.get("gpu_defaults", {}))
    gpus = []
    for index, entry in enumerate(layout.get("gpus", [])):
        gpu = dict(base)
        gpu.update(canonical_gpu_entry(entry))
        gpu["index"] = index
        gpus.append(gpu)
    return gpus


def nvml_version(layout):
    return layout.get("nvml_version") or ".".join(layout["driver_version"].split(".")[:2])


def split_bus_id(bus_id):
    """'00000000:00:06.0' -> (domain, bus, device, function) as ints."""
    head, _dot, function = bus_id.rpartition(".")
    parts = head.split(":")
    domain = int(parts[-3], 16) if len(parts) >= 3 else 0
    return domain, int(parts[-2], 16), int(parts[-1], 16), int(function, 16)


def resolve_visible_devices(spec, gpus):
    """CUDA_VISIBLE_DEVICES -> tuple of GPU indices, parsed as CUDA does (stop at the first
    invalid entry; duplicates ignored). None (unset) means GPU 0."""
    if spec is None:
        return (0,) if gpus else ()
    result = []
    for token in spec.split(","):
        token = token.strip()
        index = None
        if token.isdigit():
            if int(token) < len(gpus):
                index = int(token)
        elif token.startswith("GPU-"):
            matches = [g["index"] for g in gpus if str(g.get("uuid", "")).startswith(token)]
            if len(matches) == 1:
                index = matches[0]
        if index is None:
            break
        if index not in result:
            result.append(index)
    return tuple(result)


def gpu_values(gpu, layout, claims, now, power=None):
    """All --query-gpu values of one GPU, canonical name -> raw value (number, str or None).

    power: its sim_gpu_power.Reading, or None for the layout's static figures."""
    v = {f.name: None for f in GPU_FIELDS}
    v.update(FIELD_DEFAULTS)
    v.update((k, val) for k, val in gpu.items() if k in v)
    for name, source in FIELD_FALLBACKS:
        if name not in gpu:
            v[name] = v[source]
    if v["ecc.mode.current"] == "Enabled":
        for f in GPU_FIELDS:
            if f.name.startswith("ecc.errors.") and f.name.rsplit(".", 1)[-1] in _ECC_COUNTED:
                v[f.name] = gpu.get(f.name, 0)
        if "ecc.errors.uncorrected.aggregate.sram.thresholdExceeded" not in gpu:
            v["ecc.errors.uncorrected.aggregate.sram.thresholdExceeded"] = "No"
    v["timestamp"] = now.strftime("%Y/%m/%d %H:%M:%S.") + "%03d" % (now.microsecond // 1000)
    v["driver_version"] = layout["driver_version"]
    v["count"] = len(layout.get("gpus", []))
    if v["pci.bus_id"]:
        domain, bus, device, _function = split_bus_id(v["pci.bus_id"])
        v["pci.domain"] = gpu.get("pci.domain", "0x%04X" % domain)
        v["pci.bus"] = gpu.get("pci.bus", "0x%02X" % bus)
        v["pci.device"] = gpu.get("pci.device", "0x%02X" % device)
    mine = [c for c in claims if gpu["index"] in c.gpus]
    used = (v["memory.used"] or 0) + sum(c.memory_mib for c in mine)
    v["memory.used"] = used
    if isinstance(v["memory.total"], (int, float)):
        v["memory.free"] = max(0, v["memory.total"] - (v["memory.reserved"] or 0) - used)
    utils = [c.utilization_pct for c in mine if c.utilization_pct is not None]
    if utils and isinstance(v["utilization.gpu"], (int, float)):
        v["utilization.gpu"] = max([v["utilization.gpu"]] + utils)
    if power is not None:
        apply_power(v, power)
    return v


UTILIZATION_FULL_LOAD = 0.3  # the power load from which utilization.gpu reads 100%


def apply_power(v, power):
    """The power fields from a Reading (those the GPU reports at all), and what follows from the load."""
    for name, watts in (("power.draw", power.average_w), ("power.draw.average", power.average_w),
                        ("power.draw.instant", power.instant_w)):
        if isinstance(v[name], (int, float)):
            v[name] = round(watts, 2)
    if isinstance(v["temperature.gpu"], (int, float)):
        v["temperature.gpu"] = int(round(v["temperature.gpu"] + 30 * power.load))
    # utilization.gpu is the share of time a kernel ran: a GPU drawing a third of its range or more (batch-1 decode
    # draws 0.31) ran kernels all the time; a process that publishes a load without a claim's utilization (the
    # simulated trainer) shows busy too
    if power.load > 0 and isinstance(v["utilization.gpu"], (int, float)):
        v["utilization.gpu"] = max(v["utilization.gpu"], int(round(100 * min(1.0, power.load / UTILIZATION_FULL_LOAD))))
    if power.load > 0 and v["clocks_event_reasons.gpu_idle"] == "Active":
        v["clocks_event_reasons.gpu_idle"] = "Not Active"
        v["clocks_event_reasons.active"] = "0x0000000000000000"


# --------------------------------------------------------------------------------------------
# Formatting (pure)
# --------------------------------------------------------------------------------------------

def is_bracketed(value):
    return isinstance(value, str) and value.startswith("[") and value.endswith("]")


def format_number(value, unit):
    if unit == "W":
        return "%.2f" % value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def format_value(value, unit, nounits):
    if value is None:
        return NA
    if isinstance(value, bool):
        text = "Yes" if value else "No"
    elif isinstance(value, (int, float)):
        text = format_number(value, unit)
    else:
        text = str(value)
    if unit and not nounits and not is_bracketed(text):
        return "%s %s" % (text, unit)
    return text


def header_name(field):
    return "%s [%s]" % (field.name, field.unit) if field.unit else field.name


def format_csv(fields, rows, header, nounits):
    """rows: list of {canonical name: raw value}."""
    lines = []
    if header:
        lines.append(", ".join(header_name(f) for f in fields))
    for row in rows:
        lines.append(", ".join(format_value(row[f.name], f.unit, nounits) for f in fields))
    return "".join(line + "\n" for line in lines)


def format_list_gpus(gpus):
    return "".join("GPU %d: %s (UUID: %s)\n" % (g["index"], g["name"], g["uuid"]) for g in gpus)


def format_version(layout):
    return (
        "NVIDIA-SMI version  : %s\n"
        "NVML version        : %s\n"
        "DRIVER version      : %s\n"
        "CUDA Version        : %s\n"
    ) % (layout["driver_version"], nvml_version(layout), layout["driver_version"],
         layout["cuda_version"])


def default_topology(gpus):
    matrix = []
    for a in gpus:
        row = []
        for b in gpus:
            if a["index"] == b["index"]:
                row.append("X")
            elif str(a.get("numa_affinity", "0")) == str(b.get("numa_affinity", "0")):
                row.append("NODE")
            else:
                row.append("SYS")
        matrix.append(row)
    return matrix


def format_topo(layout, gpus):
    matrix = layout.get("topology") or default_topology(gpus)
    names = ["GPU%d" % g["index"] for g in gpus]
    out = ["\t\x1b[4m" + "\t".join(names + ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"])
           + "\x1b[0m\n"]
    for gpu, row in zip(gpus, matrix):
        cells = [" X " if cell == "X" else cell for cell in row]
        out.append("%s\t%s\t%s\t%s\t\t%s\n" % (
            names[gpu["index"]], "\t".join(cells), gpu.get("cpu_affinity", "N/A"),
            gpu.get("numa_affinity", "N/A"), gpu.get("gpu_numa_id", "N/A")))
    return "".join(out) + TOPO_LEGEND


def format_nvlink_status(gpus):
    out = []
    for gpu in gpus:
        links = int(gpu.get("nvlink_links") or 0)
        if not links:
            continue
        out.append("GPU %d: %s (UUID: %s)\n" % (gpu["index"], gpu["name"], gpu["uuid"]))
        speed = gpu.get("nvlink_speed", "26.562 GB/s")
        out.extend("\t Link %d: %s\n" % (link, speed) for link in range(links))
    return "".join(out)


def app_rows(claims, gpus, now):
    """One row per (claim, GPU), GPUs in index order, then by pid."""
    stamp = now.strftime("%Y/%m/%d %H:%M:%S.") + "%03d" % (now.microsecond // 1000)
    rows = []
    for gpu in gpus:
        for claim in sorted(claims, key=lambda c: c.pid):
            if gpu["index"] in claim.gpus:
                rows.append({
                    "timestamp": stamp,
                    "gpu_name": gpu.get("name"),
                    "gpu_bus_id": gpu.get("pci.bus_id"),
                    "gpu_serial": gpu.get("serial"),
                    "gpu_uuid": gpu.get("uuid"),
                    "pid": claim.pid,
                    "process_name": claim.name,
                    "used_gpu_memory": claim.memory_mib,
                })
    return rows


# --- the summary table ----------------------------------------------------------------------

TABLE_RULE = "+-----------------------------------------------------------------------------------------+\n"
TABLE_GPU_RULE = "+-----------------------------------------+------------------------+----------------------+\n"
TABLE_GPU_HEAD = (
    "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n"
    "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |\n"
    "|                                         |                        |               MIG M. |\n"
    "|=========================================+========================+======================|\n"
)
TABLE_PROC_HEAD = (
    "| Processes:                                                                              |\n"
    "|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |\n"
    "|        ID   ID                                                               Usage      |\n"
    "|=========================================================================================|\n"
)


def _short(value, width, keep="head"):
    text = str(value)
    if len(text) <= width:
        return text
    return text[:width - 3] + "..." if keep == "head" else "..." + text[-(width - 3):]


def _int_or_na(value, suffix):
    if isinstance(value, (int, float)):
        return "%d%s" % (int(round(value)), suffix)
    return "N/A"


def _on_off(value):
    return {"Enabled": "On", "Disabled": "Off"}.get(value, "N/A")


def format_table_gpu(v):
    ecc = v["ecc.mode.current"]
    if ecc == "Enabled":
        ecc_cell = _int_or_na(v["ecc.errors.uncorrected.volatile.total"], "")
    else:
        ecc_cell = "Off" if ecc == "Disabled" else "N/A"
    mig = v["mig.mode.current"] if v["mig.mode.current"] in ("Enabled", "Disabled") else "N/A"
    line1 = "|%4d  %-31s%-4s|%19s %-3s |%21s |\n" % (
        v["index"], _short(v["name"], 27), _on_off(v["persistence_mode"]),
        v["pci.bus_id"], _on_off(v["display_active"]), ecc_cell)
    line2 = "| %3s %5s %5s %15s / %5s |%8sMiB / %6sMiB |%7s%%%13s |\n" % (
        _int_or_na(v["fan.speed"], "%"), _int_or_na(v["temperature.gpu"], "C"), v["pstate"],
        _int_or_na(v["power.draw"], "W"), _int_or_na(v["power.limit"], "W"),
        v["memory.used"], v["memory.total"], v["utilization.gpu"], v["compute_mode"])
    line3 = "|%41s|%24s|%21s |\n" % ("", "", mig)
    return line1 + line2 + line3 + TABLE_GPU_RULE


def format_table(layout, values, claims, gpus, now):
    out = [now.strftime("%a %b ") + "%2d" % now.day + now.strftime(" %H:%M:%S %Y") + "       \n"]
    out.append(TABLE_RULE)
    out.append("| NVIDIA-SMI %-23sDriver Version: %-15sCUDA Version: %-9s|\n" % (
        layout["driver_version"], layout["driver_version"], layout["cuda_version"]))
    out.append(TABLE_GPU_RULE)
    out.append(TABLE_GPU_HEAD)
    out.extend(format_table_gpu(v) for v in values)
    out.append("\n")
    out.append(TABLE_RULE)
    out.append(TABLE_PROC_HEAD)
    rows = app_rows(claims, gpus, now)
    if not rows:
        out.append("|  %-87s|\n" % "No running processes found")
    for gpu in gpus:
        for claim in sorted(claims, key=lambda c: c.pid):
            if gpu["index"] in claim.gpus:
                out.append("|%5d   %3s  %3s%16d%7s   %-32s%11dMiB |\n" % (
                    gpu["index"], "N/A", "N/A", claim.pid, "C",
                    _short(claim.name, 32, keep="tail"), claim.memory_mib))
    out.append(TABLE_RULE)
    return "".join(out)


# --------------------------------------------------------------------------------------------
# Command line (pure)
# --------------------------------------------------------------------------------------------

Options = namedtuple("Options", "command ids query fields fmt loop_s")
Options.__new__.__defaults__ = (None,)

_VALUE_OPTIONS = {
    "-i": "id", "--id": "id",
    "--query-gpu": "query-gpu",
    "--query-compute-apps": "query-compute-apps",
    "--format": "format",
    "-l": "loop", "--loop": "loop",
    "-lms": "loop-ms", "--loop-ms": "loop-ms",
}
_FLAG_OPTIONS = {
    "-L": "list", "--list-gpus": "list",
    "--version": "version",
    "-h": "help", "--help": "help",
    "--help-query-gpu": "help-query-gpu",
    "--help-query-compute-apps": "help-query-compute-apps",
}


def _unrecognized(option):
    return UsageError("ERROR: Option %s is not recognized. Please run 'nvidia-smi -h'.\n" % option)


def parse_args(argv):
    """argv (without program name) -> Options. Raises UsageError."""
    args = list(argv)
    command = None
    if args and args[0] in ("topo", "nvlink"):
        command = args.pop(0)
    values, flags = {}, set()
    while args:
        arg = args.pop(0)
        name, eq, inline = arg.partition("=")
        if name in _VALUE_OPTIONS:
            if eq:
                value = inline
            elif args:
                value = args.pop(0)
            else:
                raise UsageError(MSG_INVALID_COMBINATION)
            values[_VALUE_OPTIONS[name]] = value
        elif name.startswith("-i") and len(name) > 2 and name[2:3].isalnum() and not eq:
            values["id"] = arg[2:]          # -i0
        elif arg in _FLAG_OPTIONS:
            flags.add(_FLAG_OPTIONS[arg])
        elif command == "topo" and arg in ("-m", "--matrix"):
            flags.add("matrix")
        elif command == "nvlink" and arg in ("-s", "--status"):
            flags.add("status")
        else:
            raise _unrecognized(arg)
    ids = [i.strip() for i in values["id"].split(",") if i.strip()] if "id" in values else None
    loop_s = parse_loop(values)

    if command == "topo":
        if "matrix" not in flags:
            raise UsageError(MSG_INVALID_COMBINATION)
        return Options("topo", ids, None, None, None)
    if command == "nvlink":
        if "status" not in flags:
            raise UsageError(MSG_INVALID_COMBINATION)
        return Options("nvlink", ids, None, None, None)
    for flag in ("help", "help-query-gpu", "help-query-compute-apps", "version"):
        if flag in flags:
            return Options(flag, ids, None, None, None)
    queries = [q for q in ("query-gpu", "query-compute-apps") if q in values]
    if len(queries) > 1 or ("list" in flags and queries):
        raise UsageError(MSG_INVALID_COMBINATION)
    if "list" in flags:
        return Options("list", ids, None, None, None)
    if not queries:
        if "format" in values:
            raise UsageError(MSG_INVALID_COMBINATION)
        return Options("table", ids, None, None, None, loop_s)
    query = queries[0]
    if "format" not in values:
        raise UsageError(MSG_INVALID_COMBINATION)
    fmt = [f.strip() for f in values["format"].split(",") if f.strip()]
    if not fmt or fmt[0] != "csv" or any(f not in ("csv", "noheader", "nounits") for f in fmt):
        raise UsageError(MSG_INVALID_COMBINATION)
    lookup = GPU_FIELD_LOOKUP if query == "query-gpu" else APP_FIELD_LOOKUP
    fields = []
    for raw in values[query].split(","):
        name = raw.strip()
        field = lookup.get(name) or _lookup_casefold(lookup, name)
        if field is None:
            raise UsageError('Field "%s" is not a valid field to query.\n\n' % name)
        fields.append(field)
    return Options(query, ids, query, fields, set(fmt), loop_s)


def parse_loop(values):
    """-l SEC / -lms MS -> seconds between reports, or None. Raises UsageError."""
    if "loop" in values and "loop-ms" in values:
        raise UsageError(MSG_INVALID_COMBINATION)
    for key, scale in (("loop", 1.0), ("loop-ms", 0.001)):
        if key in values:
            text = values[key]
            if not text.isdigit() or int(text) <= 0:
                raise UsageError(MSG_INVALID_COMBINATION)
            return int(text) * scale
    return None


def _lookup_casefold(lookup, name):
    wanted = name.lower()
    for key, field in lookup.items():
        if key.lower() == wanted:
            return field
    return None


def select_gpus(gpus, ids):
    """-i filter: indices, UUIDs (or unique prefixes) and PCI bus ids. Raises UsageError."""
    if ids is None:
        return list(gpus)
    chosen = []
    for ident in ids:
        match = None
        if ident.isdigit():
            match = next((g for g in gpus if g["index"] == int(ident)), None)
        elif ident.upper().startswith("GPU-"):
            found = [g for g in gpus if str(g.get("uuid", "")).lower().startswith(ident.lower())]
            match = found[0] if len(found) == 1 else None
        else:
            try:
                wanted = split_bus_id(ident)
            except (ValueError, IndexError):
                wanted = None
            match = next((g for g in gpus if wanted and g.get("pci.bus_id")
                          and split_bus_id(g["pci.bus_id"]) == wanted), None)
        if match is None:
            raise UsageError(MSG_NO_DEVICES, EXIT_NOT_FOUND)
        if match not in chosen:
            chosen.append(match)
    return sorted(chosen, key=lambda g: g["index"])


def format_help_query(fields, switch):
    out = ['List of valid properties to query for the switch "%s":\n\n' % switch]
    for f in fields:
        out.append(" or ".join('"%s"' % n for n in (f.name,) + f.aliases) + "\n\n")
    return "".join(out)


USAGE = """NVIDIA System Management Interface -- simulated (see tests/sim/README.md)

nvidia-smi [OPTION1 [ARG1]] [OPTION2 [ARG2]] ...

    -L,   --list-gpus           Display a list of GPUs connected to the system.
    -i,   --id=                 Target a specific GPU.
          --query-gpu=          Information about GPU.
          --query-compute-apps= List of currently active compute processes.
          --format=             csv[,noheader][,nounits]
          --version             Print version information.
    topo -m                     GPUDirect topology matrix.
    nvlink -s                   NVLink status.
"""


def render(options, layout, claims, now, powers=None, header=None):
    """Options + layout + claims -> (stdout text, exit code). Raises UsageError.

    powers: {GPU index: sim_gpu_power.Reading}; header: False to leave out the CSV header (a loop's
    later reports)."""
    all_gpus = layout_gpus(layout)
    if options.command == "help":
        return USAGE, EXIT_OK
    if options.command == "help-query-gpu":
        return format_help_query(GPU_FIELDS, "--query-gpu"), EXIT_OK
    if options.command == "help-query-compute-apps":
        return format_help_query(APP_FIELDS, "--query-compute-apps"), EXIT_OK
    if options.command == "version":
        return format_version(layout), EXIT_OK
    if not all_gpus:
        return MSG_NO_DEVICES, EXIT_NOT_FOUND
    gpus = select_gpus(all_gpus, options.ids)
    if options.command == "list":
        return format_list_gpus(gpus), EXIT_OK
    if options.command == "topo":
        return format_topo(layout, all_gpus), EXIT_OK
    if options.command == "nvlink":
        return format_nvlink_status(gpus), EXIT_OK
    values = [gpu_values(g, layout, claims, now, (powers or {}).get(g["index"])) for g in gpus]
    header = "noheader" not in (options.fmt or ()) and header is not False
    nounits = "nounits" in (options.fmt or ())
    if options.command == "query-gpu":
        return format_csv(options.fields, values, header, nounits), EXIT_OK
    if options.command == "query-compute-apps":
        return format_csv(options.fields, app_rows(claims, gpus, now), header, nounits), EXIT_OK
    return format_table(layout, values, claims, gpus, now), EXIT_OK


# --------------------------------------------------------------------------------------------
# I/O: layout, /proc scan, claim files
# --------------------------------------------------------------------------------------------

ProcInfo = namedtuple("ProcInfo", "pid ppid name environ start_epoch")


def _read(path, mode="r"):
    with open(path, mode) as handle:
        return handle.read()


def load_layout(path):
    """Parsed layout, or None when the file does not exist."""
    try:
        text = _read(path)
    except FileNotFoundError:
        return None
    layout = json.loads(text)
    layout.setdefault("gpus", [])
    return layout


def boot_epoch(proc_root):
    try:
        uptime = float(_read(os.path.join(proc_root, "uptime")).split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return time.time() - uptime


def read_proc(proc_root, pid, boot, hertz):
    """ProcInfo of a live process, or None (gone, zombie, kernel thread, unreadable)."""
    base = os.path.join(proc_root, str(pid))
    try:
        stat = _read(os.path.join(base, "stat"))
        cmdline = _read(os.path.join(base, "cmdline"), "rb")
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()
    if not fields or fields[0] in ("Z", "X") or not cmdline:
        return None
    try:
        environ = _read(os.path.join(base, "environ"), "rb")
    except OSError:
        environ = None
    env = None
    if environ is not None:
        env = {}
        for item in environ.split(b"\0"):
            key, sep, value = item.partition(b"=")
            if sep:
                env[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    start = None
    if boot is not None and len(fields) > 19:
        start = boot + int(fields[19]) / hertz
    name = cmdline.split(b"\0")[0].decode("utf-8", "replace")
    return ProcInfo(pid, int(fields[1]), name, env, start)


def read_claim_file(path):
    """(mtime, dict) of a claim file, or None."""
    try:
        mtime = os.stat(path).st_mtime
        data = json.loads(_read(path))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("memory_mib"), (int, float)):
        return None
    return mtime, data


def _env_claim(env, gpus):
    """(memory_mib, gpu indices) from SIM_GPU_MEMORY_MIB + CUDA_VISIBLE_DEVICES, or None."""
    if not env or "SIM_GPU_MEMORY_MIB" not in env:
        return None
    try:
        memory = int(float(env["SIM_GPU_MEMORY_MIB"]))
    except ValueError:
        return None
    return memory, resolve_visible_devices(env.get("CUDA_VISIBLE_DEVICES"), gpus)


def claims_from(procs, claim_files, gpus):
    """Pure: {pid: ProcInfo}, {pid: (mtime, data)}, gpus -> list of Claim."""
    effective, env_claims, from_file = {}, {}, set()
    for pid, info in procs.items():
        env_claim = _env_claim(info.environ, gpus)
        env_claims[pid] = env_claim
        claim = None
        if pid in claim_files:
            mtime, data = claim_files[pid]
            if info.start_epoch is None or info.start_epoch <= mtime + START_TIME_TOLERANCE_S:
                if "gpus" in data:
                    spec = ",".join(str(g) for g in data["gpus"])
                    visible = resolve_visible_devices(spec, gpus)
                elif info.environ is not None:
                    visible = resolve_visible_devices(info.environ.get("CUDA_VISIBLE_DEVICES"), gpus)
                else:
                    visible = ()
                util = data.get("utilization_pct")
                claim = (int(data["memory_mib"]), visible,
                         int(util) if isinstance(util, (int, float)) else None)
                from_file.add(pid)
        if claim is None and env_claim is not None:
            claim = (env_claim[0], env_claim[1], None)
        if claim is not None and claim[1]:
            effective[pid] = claim
    result = []
    for pid, (memory, visible, util) in effective.items():
        info = procs[pid]
        parent = effective.get(info.ppid)
        if pid not in from_file and parent is not None and (
                parent[:2] == (memory, visible) or env_claims.get(info.ppid) == env_claims[pid]):
            continue
        result.append(Claim(pid, info.name, visible, memory, util))
    return sorted(result, key=lambda c: c.pid)


def pid_namespace(proc_root, pid):
    """The pid namespace of a process (like 'pid:[4026531836]'), or None when it cannot be read."""
    try:
        return os.readlink(os.path.join(proc_root, str(pid), "ns", "pid"))
    except OSError:
        return None


def scan_claims(proc_root, state_dir, gpus):
    """Live GPU claims on this host.

    Only processes of our own pid namespace count, as for the real tool in a container: the
    simulated hosts' processes are visible in the machine's /proc but are not its GPUs' users.
    """
    claims_dir = os.path.join(state_dir, "claims")
    claim_files = {}
    try:
        names = os.listdir(claims_dir)
    except OSError:
        names = []
    for name in names:
        stem, ext = os.path.splitext(name)
        if ext == ".json" and stem.isdigit():
            claim = read_claim_file(os.path.join(claims_dir, name))
            if claim is not None:
                claim_files[int(stem)] = claim
    try:
        pids = [int(n) for n in os.listdir(proc_root) if n.isdigit()]
    except OSError:
        pids = []
    boot = boot_epoch(proc_root)
    hertz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    procs = {}
    own_ns = pid_namespace(proc_root, "self")
    for pid in pids:
        if own_ns is not None and pid_namespace(proc_root, pid) != own_ns:
            continue
        info = read_proc(proc_root, pid, boot, hertz)
        if info is None:
            continue
        if pid in claim_files or (info.environ and "SIM_GPU_MEMORY_MIB" in info.environ):
            procs[pid] = info
    # Only claimants are kept: a parent that claims nothing cannot make a child's claim a copy.
    return claims_from(procs, claim_files, gpus)


def main(argv=None, environ=None):
    environ = os.environ if environ is None else environ
    argv = sys.argv[1:] if argv is None else argv
    try:
        options = parse_args(argv)
    except UsageError as error:
        sys.stdout.write(error.message)
        return error.code
    layout_path = environ.get("SIM_GPU_LAYOUT") or DEFAULT_LAYOUT
    try:
        layout = load_layout(layout_path)
    except (OSError, ValueError) as error:
        sys.stderr.write("sim nvidia-smi: bad layout %s: %s\n" % (layout_path, error))
        layout = None
    if layout is None:
        sys.stdout.write(MSG_NO_DRIVER)
        return EXIT_DRIVER_NOT_LOADED
    if options.loop_s is not None and options.command in ("query-gpu", "table"):
        return loop(options, layout, layout_path, environ)
    text, code = report(options, layout, layout_path, environ)
    sys.stdout.write(text)
    return code


def report(options, layout, layout_path, environ, header=None):
    """One report: (text, exit code)."""
    proc_root = environ.get("SIM_PROC_ROOT") or DEFAULT_PROC_ROOT
    state = environ.get("SIM_GPU_STATE_DIR") or DEFAULT_STATE_DIR
    claims, powers = [], None
    if options.command in ("query-gpu", "query-compute-apps", "table"):
        gpus = layout_gpus(layout)
        claims = scan_claims(proc_root, state, gpus)
        if options.command != "query-compute-apps":
            powers = read_powers(gpus, state, sim_gpu_power.boot_epoch(proc_root, layout_path))
    try:
        return render(options, layout, claims, datetime.now(), powers, header)
    except UsageError as error:
        return error.message, error.code


def read_powers(gpus, state, boot):
    """{GPU index: Reading} of the GPUs that report power."""
    figures = {}
    for gpu in gpus:
        figure = sim_gpu_power.idle_and_peak(gpu)
        if figure is not None:
            figures[sim_gpu_power.gpu_key(gpu)] = figure
    readings = sim_gpu_power.read_gpus(state, list(figures), figures, boot)
    return {g["index"]: readings[sim_gpu_power.gpu_key(g)] for g in gpus
            if sim_gpu_power.gpu_key(g) in readings}


def loop(options, layout, layout_path, environ):
    """Report every options.loop_s seconds until killed (SIGINT/SIGTERM: exit 0); an error ends it."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(EXIT_OK))
    due = time.monotonic()
    first = True
    try:
        while True:
            text, code = report(options, layout, layout_path, environ, header=None if first else False)
            sys.stdout.write(text)
            sys.stdout.flush()
            if code != EXIT_OK:
                return code
            first = False
            # the next report one period after this one was due; a report that ran late shifts the rest
            due = max(due + options.loop_s, time.monotonic())
            time.sleep(max(0.0, due - time.monotonic()))
    except KeyboardInterrupt:
        return EXIT_OK


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        sys.exit(0)
