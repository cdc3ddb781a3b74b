"""Fake NVML bindings for the simulated GPU hosts (Python 3.9+, standard library only).

It stands in for nvidia-ml-py's ``pynvml`` (13.580.x) on hosts with no libnvidia-ml.so.1, for the calls
the collection's telemetry makes, with the real module's names, constants, return types and exceptions
(NVMLError and its per-code subclasses such as NVMLError_NotFound). The figures come from the same
layout, claims and power model as the fake nvidia-smi (tests/sim/nvidia_smi: nvidia_smi.py,
sim_gpu_power.py), read at each call, so both tools agree:

    nvmlInit / nvmlInitWithFlags / nvmlShutdown      (calls before nvmlInit raise NVMLError_Uninitialized)
    nvmlSystemGetDriverVersion, nvmlDeviceGetCount, nvmlDeviceGetHandleByIndex, nvmlDeviceGetHandleByUUID,
    nvmlDeviceGetName, nvmlDeviceGetUUID,
    nvmlDeviceGetTotalEnergyConsumption (mJ since driver load; NOT_SUPPORTED where the layout entry says
        "nvml_total_energy": false), nvmlDeviceGetPowerUsage (mW, the 1-second average),
    nvmlDeviceGetFieldValues (NVML_FI_DEV_POWER_INSTANT, NVML_FI_DEV_POWER_AVERAGE,
        NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION; other fields come back with nvmlReturn NOT_SUPPORTED),
    nvmlDeviceGetUtilizationRates, nvmlDeviceGetMemoryInfo, nvmlDeviceGetClockInfo, nvmlDeviceGetTemperature,
    nvmlDeviceGetCurrentClocksEventReasons (and the older nvmlDeviceGetCurrentClocksThrottleReasons)

and for the collection's GPU probe (plugins/module_utils/_nvidia_smi.py: nvml_snapshot), each from the same
--query-gpu value the fake nvidia-smi prints, so `gpu_facts` gives the same facts through either backend:

    nvmlSystemGetCudaDriverVersion and _v2 (13000 for the layout's "cuda_version": "13.0"),
    nvmlDeviceGetMemoryInfo (v1: used = total - free, driver-reserved memory included, as NVML's;
        version=nvmlMemory_v2: total, reserved, free, used as nvidia-smi's memory.* fields, claims included),
    nvmlDeviceGetPciInfo (busId b'00000000:18:00.0' as pci.bus_id, busIdLegacy, domain, bus, device, ...),
    nvmlDeviceGetCudaComputeCapability, nvmlDeviceGetPowerManagementLimit (mW), nvmlDeviceGetPerformanceState,
    nvmlDeviceGetComputeMode, nvmlDeviceGetPersistenceMode, nvmlDeviceGetMigMode and nvmlDeviceGetEccMode
        ([current, pending]), nvmlDeviceGetCurr/MaxPcieLinkGeneration, nvmlDeviceGetCurr/MaxPcieLinkWidth,
    nvmlDeviceGetSerial, nvmlDeviceGetVbiosVersion,
    nvmlDeviceGetComputeRunningProcesses (and _v2, _v3): the claims the fake nvidia-smi's --query-compute-apps
        lists, as objects with pid, usedGpuMemory (bytes), gpuInstanceId and computeInstanceId,
    nvmlSystemGetProcessName (the process's argv[0], as the compute-apps process_name).

A value the layout gives as a bracketed string ("[Not Supported]", "[N/A]") or null raises
NVMLError_NotSupported, as NVML does for what a GPU lacks; nvidia-smi prints it as that bracketed value.

Environment: SIM_GPU_LAYOUT (missing file: nvmlInit raises NVMLError_DriverNotLoaded), SIM_GPU_STATE_DIR,
SIM_PROC_ROOT, as for the fake nvidia-smi.
"""

import os
import string
import sys
import threading
import time
from ctypes import Structure, Union, c_char, c_double, c_int, c_int64, c_longlong, c_uint, c_uint32, \
    c_ulong, c_ulonglong, c_ushort
from datetime import datetime

try:
    import nvidia_smi as _smi
except ImportError:  # the repository's layout: tests/sim/pynvml next to tests/sim/nvidia_smi
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "nvidia_smi"))
    import nvidia_smi as _smi
import sim_gpu_power as _power

SIMULATED = True  # not in the real module: lets a caller tell the two apart

NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_ALREADY_INITIALIZED = 5
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_INSUFFICIENT_SIZE = 7
NVML_ERROR_INSUFFICIENT_POWER = 8
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_TIMEOUT = 10
NVML_ERROR_IRQ_ISSUE = 11
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_CORRUPTED_INFOROM = 14
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25
NVML_ERROR_UNKNOWN = 999

NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_GRAPHICS = 0
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_CLOCK_VIDEO = 3

NVML_VALUE_TYPE_DOUBLE = 0
NVML_VALUE_TYPE_UNSIGNED_INT = 1
NVML_VALUE_TYPE_UNSIGNED_LONG = 2
NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3
NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4
NVML_VALUE_TYPE_SIGNED_INT = 5
NVML_VALUE_TYPE_UNSIGNED_SHORT = 6

NVML_FEATURE_DISABLED = 0
NVML_FEATURE_ENABLED = 1

NVML_COMPUTEMODE_DEFAULT = 0
NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1
NVML_COMPUTEMODE_PROHIBITED = 2
NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3

NVML_PSTATE_0 = 0
NVML_PSTATE_15 = 15
NVML_PSTATE_UNKNOWN = 32

NVML_DEVICE_MIG_DISABLE = 0x0
NVML_DEVICE_MIG_ENABLE = 0x1

NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32
NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16
NVML_VALUE_NOT_AVAILABLE_uint = c_uint(-1)
NVML_VALUE_NOT_AVAILABLE_ulonglong = c_ulonglong(-1)

nvmlMemory_v2 = 0x02000028

NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION = 83
NVML_FI_DEV_POWER_AVERAGE = 185
NVML_FI_DEV_POWER_INSTANT = 186

nvmlClocksEventReasonGpuIdle = 0x0000000000000001
nvmlClocksEventReasonApplicationsClocksSetting = 0x0000000000000002
nvmlClocksEventReasonSwPowerCap = 0x0000000000000004
nvmlClocksEventReasonHwSlowdown = 0x0000000000000008
nvmlClocksEventReasonSyncBoost = 0x0000000000000010
nvmlClocksEventReasonSwThermalSlowdown = 0x0000000000000020
nvmlClocksEventReasonHwThermalSlowdown = 0x0000000000000040
nvmlClocksEventReasonHwPowerBrakeSlowdown = 0x0000000000000080
nvmlClocksEventReasonNone = 0x0000000000000000
nvmlClocksThrottleReasonGpuIdle = nvmlClocksEventReasonGpuIdle
nvmlClocksThrottleReasonNone = nvmlClocksEventReasonNone


class NVMLError(Exception):
    """As nvidia-ml-py's: NVMLError(code) is an instance of the code's subclass; .value is the code."""

    _valClassMapping = dict()
    _errcode_to_string = {
        NVML_ERROR_UNINITIALIZED: "Uninitialized",
        NVML_ERROR_INVALID_ARGUMENT: "Invalid Argument",
        NVML_ERROR_NOT_SUPPORTED: "Not Supported",
        NVML_ERROR_NO_PERMISSION: "Insufficient Permissions",
        NVML_ERROR_ALREADY_INITIALIZED: "Already Initialized",
        NVML_ERROR_NOT_FOUND: "Not Found",
        NVML_ERROR_INSUFFICIENT_SIZE: "Insufficient Size",
        NVML_ERROR_INSUFFICIENT_POWER: "Insufficient External Power",
        NVML_ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded",
        NVML_ERROR_TIMEOUT: "Timeout",
        NVML_ERROR_IRQ_ISSUE: "Interrupt Request Issue",
        NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
        NVML_ERROR_FUNCTION_NOT_FOUND: "Function Not Found",
        NVML_ERROR_CORRUPTED_INFOROM: "Corrupted infoROM",
        NVML_ERROR_GPU_IS_LOST: "GPU is lost",
        NVML_ERROR_ARGUMENT_VERSION_MISMATCH: "Argument version mismatch",
        NVML_ERROR_UNKNOWN: "Unknown Error",
    }

    def __new__(typ, value):  # pylint: disable=bad-classmethod-argument  # nvidia-ml-py's own code
        if typ == NVMLError:
            typ = NVMLError._valClassMapping.get(value, typ)  # pylint: disable=self-cls-assignment
        obj = Exception.__new__(typ)
        obj.value = value
        return obj

    def __str__(self):
        return NVMLError._errcode_to_string.get(self.value, "NVML Error with code %d" % self.value)

    def __eq__(self, other):
        return self.value == other.value

    def __hash__(self):
        return hash(self.value)


def nvmlExceptionClass(nvmlErrorCode):
    if nvmlErrorCode not in NVMLError._valClassMapping:
        raise ValueError("nvmlErrorCode %s is not valid" % nvmlErrorCode)
    return NVMLError._valClassMapping[nvmlErrorCode]


def _extractNVMLErrorsAsClasses():
    """NVML_ERROR_NOT_FOUND -> class NVMLError_NotFound(NVMLError), as the real module names them."""
    module = sys.modules[__name__]
    for name in [x for x in dir(module) if x.startswith("NVML_ERROR_")]:
        class_name = "NVMLError_" + string.capwords(name.replace("NVML_ERROR_", ""), "_").replace("_", "")
        value = getattr(module, name)

        def gen_new(val):
            def new(typ, *args):
                return NVMLError.__new__(typ, val)
            return new
        cls = type(class_name, (NVMLError,), {"__new__": gen_new(value)})
        cls.__module__ = __name__
        setattr(module, class_name, cls)
        NVMLError._valClassMapping[value] = cls


_extractNVMLErrorsAsClasses()


# ---- structures the real functions return (ctypes, same field names) ------------------------

class c_nvmlMemory_t(Structure):
    _fields_ = [("total", c_ulonglong), ("free", c_ulonglong), ("used", c_ulonglong)]


class c_nvmlMemory_v2_t(Structure):
    _fields_ = [("version", c_uint), ("total", c_ulonglong), ("reserved", c_ulonglong), ("free", c_ulonglong),
                ("used", c_ulonglong)]


class nvmlPciInfo_t(Structure):
    _fields_ = [("busIdLegacy", c_char * NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE), ("domain", c_uint), ("bus", c_uint),
                ("device", c_uint), ("pciDeviceId", c_uint), ("pciSubSystemId", c_uint),
                ("busId", c_char * NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE)]


class c_nvmlProcessInfo_v2_t(Structure):
    _fields_ = [("pid", c_uint), ("usedGpuMemory", c_ulonglong), ("gpuInstanceId", c_uint),
                ("computeInstanceId", c_uint)]


c_nvmlProcessInfo_v3_t = c_nvmlProcessInfo_v2_t
c_nvmlProcessInfo_t = c_nvmlProcessInfo_v3_t


class nvmlFriendlyObject(object):
    """As nvidia-ml-py's: a structure's fields as plain attributes (what the process lists return)."""

    def __init__(self, dictionary):
        for x in dictionary:
            setattr(self, x, dictionary[x])

    def __str__(self):
        return self.__dict__.__str__()


def nvmlStructToFriendlyObject(struct):
    d = {}
    for x in struct._fields_:
        key = x[0]
        value = getattr(struct, key)
        d[key] = value.decode() if isinstance(value, bytes) else value
    return nvmlFriendlyObject(d)


class c_nvmlUtilization_t(Structure):
    _fields_ = [("gpu", c_uint), ("memory", c_uint)]


class c_nvmlValue_t(Union):
    _fields_ = [("dVal", c_double), ("uiVal", c_uint), ("ulVal", c_ulong), ("ullVal", c_ulonglong),
                ("sllVal", c_longlong), ("siVal", c_int), ("usVal", c_ushort)]


class c_nvmlFieldValue_t(Structure):
    _fields_ = [("fieldId", c_uint32), ("scopeId", c_uint32), ("timestamp", c_int64), ("latencyUsec", c_int64),
                ("valueType", c_uint), ("nvmlReturn", c_uint), ("value", c_nvmlValue_t)]


class c_struct_nvmlDevice_t(Structure):
    """A device handle: the GPU's index in the layout."""
    _fields_ = [("index", c_uint)]


# ---- state ----------------------------------------------------------------------------------

_lock = threading.Lock()
_refcount = 0


def _environ():
    return os.environ


def _layout_path():
    return _environ().get("SIM_GPU_LAYOUT") or _smi.DEFAULT_LAYOUT


def _layout():
    try:
        layout = _smi.load_layout(_layout_path())
    except (OSError, ValueError):
        layout = None
    if layout is None:
        raise NVMLError(NVML_ERROR_DRIVER_NOT_LOADED)
    return layout


def _check_init():
    if _refcount <= 0:
        raise NVMLError(NVML_ERROR_UNINITIALIZED)


def _gpu(handle):
    """The merged layout entry of a handle."""
    _check_init()
    gpus = _smi.layout_gpus(_layout())
    index = getattr(handle, "index", None)
    if not isinstance(index, int) or not 0 <= index < len(gpus):
        raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
    return gpus[index]


_VALUES_TTL_S = 0.05


def _cache_key():
    """What the cached figures depend on besides the time: another layout or state is another host."""
    env = _environ()
    return (_layout_path(), env.get("SIM_GPU_STATE_DIR"), env.get("SIM_PROC_ROOT"))


_values_cache = {}


def _values(handle):
    """The GPU's values as the fake nvidia-smi computes them (claims and power included); one /proc scan serves
    the calls of the next 50 ms (a sampler reads utilization, memory, clocks and temperature in a row)."""
    gpu = _gpu(handle)
    key = _cache_key() + (gpu["index"],)
    cached = _values_cache.get(key)
    if cached is not None and time.monotonic() - cached[0] < _VALUES_TTL_S:
        return cached[1]
    values = _compute_values(gpu)
    for stale in [k for k in _values_cache if k[:-1] != key[:-1]]:
        del _values_cache[stale]  # another host's: at most one host's GPUs are kept
    _values_cache[key] = (time.monotonic(), values)
    return values


def _proc_root():
    return _environ().get("SIM_PROC_ROOT") or _smi.DEFAULT_PROC_ROOT


_claims_cache = []


def _claims():
    """The fake nvidia-smi's claims scan (its --query-compute-apps rows and memory.used); one scan serves 50 ms."""
    key = _cache_key()
    if _claims_cache and _claims_cache[0][1] == key and time.monotonic() - _claims_cache[0][0] < _VALUES_TTL_S:
        return _claims_cache[0][2]
    state = _environ().get("SIM_GPU_STATE_DIR") or _smi.DEFAULT_STATE_DIR
    claims = _smi.scan_claims(_proc_root(), state, _smi.layout_gpus(_layout()))
    _claims_cache[:] = [(time.monotonic(), key, claims)]
    return claims


def _compute_values(gpu):
    layout = _layout()
    env = _environ()
    proc_root = _proc_root()
    state = env.get("SIM_GPU_STATE_DIR") or _smi.DEFAULT_STATE_DIR
    claims = _claims()
    powers = _smi.read_powers([gpu], state, _power.boot_epoch(proc_root, _layout_path()))
    return _smi.gpu_values(gpu, layout, claims, datetime.now(), powers.get(gpu["index"]))


def _reading(handle):
    """sim_gpu_power.Reading of a GPU, or NVMLError NOT_SUPPORTED when it reports no power."""
    gpu = _gpu(handle)
    figure = _power.idle_and_peak(gpu)
    if figure is None:
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
    env = _environ()
    key = _power.gpu_key(gpu)
    boot = _power.boot_epoch(env.get("SIM_PROC_ROOT") or _smi.DEFAULT_PROC_ROOT, _layout_path())
    return _power.read_gpus(env.get("SIM_GPU_STATE_DIR") or _smi.DEFAULT_STATE_DIR, [key], {key: figure},
                            boot)[key]


def _has_counter(handle):
    return _gpu(handle).get("nvml_total_energy", True) is not False


def _number(value):
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    raise NVMLError(NVML_ERROR_NOT_SUPPORTED)


def _text(value):
    """A string value; a bracketed one ("[N/A]", "[Not Supported]") or null is NOT_SUPPORTED."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value or _smi.is_bracketed(value):
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
    return value


def _enable_state(value):
    """"Enabled" / "Disabled" as NVML_FEATURE_ENABLED / NVML_FEATURE_DISABLED; anything else NOT_SUPPORTED."""
    states = {"Enabled": NVML_FEATURE_ENABLED, "Disabled": NVML_FEATURE_DISABLED}
    if value not in states:
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
    return states[value]


def _hex(value):
    try:
        return int(str(value), 16)
    except ValueError:
        return 0


# ---- the API --------------------------------------------------------------------------------

def nvmlInitWithFlags(flags):
    global _refcount
    _layout()
    with _lock:
        _refcount += 1


def nvmlInit():
    nvmlInitWithFlags(0)


def nvmlShutdown():
    global _refcount
    _check_init()
    with _lock:
        if _refcount > 0:
            _refcount -= 1


def nvmlSystemGetDriverVersion():
    _check_init()
    return _layout()["driver_version"]


def nvmlDeviceGetCount():
    _check_init()
    return len(_layout().get("gpus", []))


def nvmlDeviceGetHandleByIndex(index):
    _check_init()
    if not isinstance(index, int) or index < 0:
        raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
    if index >= nvmlDeviceGetCount():
        raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
    return c_struct_nvmlDevice_t(index)


def nvmlDeviceGetHandleByUUID(uuid):
    """The handle of the GPU with this UUID (str or bytes, exact); NVMLError_NotFound when none has it."""
    _check_init()
    if isinstance(uuid, bytes):
        uuid = uuid.decode("utf-8", "replace")
    if not isinstance(uuid, str) or not uuid:
        raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
    for gpu in _smi.layout_gpus(_layout()):
        if str(gpu.get("uuid", "")) == uuid:
            return c_struct_nvmlDevice_t(gpu["index"])
    raise NVMLError(NVML_ERROR_NOT_FOUND)


def nvmlDeviceGetName(handle):
    return str(_gpu(handle).get("name", ""))


def nvmlDeviceGetUUID(handle):
    return str(_gpu(handle).get("uuid", ""))


def nvmlDeviceGetTotalEnergyConsumption(handle):
    """mJ since the driver loaded (monotonic); NOT_SUPPORTED on a GPU the layout marks without it."""
    if not _has_counter(handle):
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
    return _reading(handle).energy_mj


def nvmlDeviceGetPowerUsage(handle):
    """mW, the mean of the last second (as Ampere and newer report it)."""
    return int(round(_reading(handle).average_w * 1000))


def nvmlDeviceGetFieldValues(handle, fieldIds):
    """An array of c_nvmlFieldValue_t; per field nvmlReturn NOT_SUPPORTED for what is not simulated."""
    values = (c_nvmlFieldValue_t * len(fieldIds))()
    reading = _reading(handle) if _power.idle_and_peak(_gpu(handle)) is not None else None
    counter = _has_counter(handle)
    stamp = int(time.time() * 1e6)
    for i, field in enumerate(fieldIds):
        try:
            (values[i].fieldId, values[i].scopeId) = field
        except TypeError:
            values[i].fieldId = field
        value = values[i]
        value.timestamp = stamp
        fid = value.fieldId
        if reading is not None and fid in (NVML_FI_DEV_POWER_INSTANT, NVML_FI_DEV_POWER_AVERAGE):
            value.valueType = NVML_VALUE_TYPE_UNSIGNED_INT
            watts = reading.instant_w if fid == NVML_FI_DEV_POWER_INSTANT else reading.average_w
            value.value.uiVal = int(round(watts * 1000))
            value.nvmlReturn = NVML_SUCCESS
        elif reading is not None and counter and fid == NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION:
            value.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
            value.value.ullVal = reading.energy_mj
            value.nvmlReturn = NVML_SUCCESS
        else:
            value.nvmlReturn = NVML_ERROR_NOT_SUPPORTED
    return values


def nvmlDeviceGetUtilizationRates(handle):
    v = _values(handle)
    return c_nvmlUtilization_t(int(_number(v["utilization.gpu"])), int(_number(v["utilization.memory"])))


def nvmlDeviceGetMemoryInfo(handle, version=None):
    """Bytes. v1: used = total - free, so it includes driver-reserved memory (as NVML's v1 does); a version
    (nvmlMemory_v2) gives c_nvmlMemory_v2_t, whose used and reserved are nvidia-smi's memory.used and .reserved."""
    v = _values(handle)
    mib = 1024 * 1024
    total = int(_number(v["memory.total"])) * mib
    used = int(_number(v["memory.used"])) * mib
    free = int(_number(v["memory.free"])) * mib
    if not version:
        return c_nvmlMemory_t(total, free, total - free)
    if version != nvmlMemory_v2:
        raise NVMLError(NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
    reserved = int(_number(v["memory.reserved"] or 0)) * mib
    return c_nvmlMemory_v2_t(version, total, reserved, free, used)


_CLOCK_FIELDS = {NVML_CLOCK_GRAPHICS: "clocks.current.graphics", NVML_CLOCK_SM: "clocks.current.sm",
                 NVML_CLOCK_MEM: "clocks.current.memory", NVML_CLOCK_VIDEO: "clocks.current.video"}


def nvmlDeviceGetClockInfo(handle, type):
    if type not in _CLOCK_FIELDS:
        _gpu(handle)
        raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
    return int(_number(_values(handle)[_CLOCK_FIELDS[type]]))


def nvmlDeviceGetTemperature(handle, sensor):
    if sensor != NVML_TEMPERATURE_GPU:
        _gpu(handle)
        raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
    return int(_number(_values(handle)["temperature.gpu"]))


def nvmlDeviceGetCurrentClocksEventReasons(handle):
    active = _values(handle)["clocks_event_reasons.active"]
    try:
        return int(str(active), 16)
    except ValueError:
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)


nvmlDeviceGetCurrentClocksThrottleReasons = nvmlDeviceGetCurrentClocksEventReasons


# ---- what the GPU probe reads (nvml_snapshot) ------------------------------------------------

def nvmlSystemGetCudaDriverVersion():
    """The layout's cuda_version as NVML's integer: "13.0" -> 13000, "12.8" -> 12080."""
    _check_init()
    text = str(_layout().get("cuda_version") or "")
    major, _dot, minor = text.partition(".")
    if not major.isdigit() or not (minor or "0").isdigit():
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
    return int(major) * 1000 + int(minor or 0) * 10


nvmlSystemGetCudaDriverVersion_v2 = nvmlSystemGetCudaDriverVersion


def nvmlSystemGetProcessName(pid):
    """The process's argv[0] (what --query-compute-apps prints as process_name); NOT_FOUND for no live process."""
    _check_init()
    info = _smi.read_proc(_proc_root(), int(pid), None, 100)
    if info is None:
        raise NVMLError(NVML_ERROR_NOT_FOUND)
    return info.name


def nvmlDeviceGetPciInfo(handle):
    """nvmlPciInfo_t: busId as nvidia-smi's pci.bus_id (bytes, as the real char array reads)."""
    v = _values(handle)
    bus_id = _text(v["pci.bus_id"])
    domain, bus, device, function = _smi.split_bus_id(bus_id)
    return nvmlPciInfo_t(busIdLegacy=("%04X:%02X:%02X.%X" % (domain, bus, device, function)).encode(),
                         domain=domain, bus=bus, device=device, pciDeviceId=_hex(v["pci.device_id"]),
                         pciSubSystemId=_hex(v["pci.sub_device_id"]), busId=bus_id.encode())


nvmlDeviceGetPciInfo_v3 = nvmlDeviceGetPciInfo


def nvmlDeviceGetCudaComputeCapability(handle):
    """(major, minor) from compute_cap ("9.0")."""
    major, _dot, minor = _text(_values(handle)["compute_cap"]).partition(".")
    try:
        return (int(major), int(minor or 0))
    except ValueError:
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)


def nvmlDeviceGetPowerManagementLimit(handle):
    """mW, from power.limit."""
    return int(round(_number(_values(handle)["power.limit"]) * 1000))


def nvmlDeviceGetPerformanceState(handle):
    """0 for "P0" ... 15 for "P15"; NVML_PSTATE_UNKNOWN for another word."""
    pstate = _text(_values(handle)["pstate"])
    if pstate[:1] == "P" and pstate[1:].isdigit() and int(pstate[1:]) <= NVML_PSTATE_15:
        return int(pstate[1:])
    return NVML_PSTATE_UNKNOWN


_COMPUTE_MODES = {"Default": NVML_COMPUTEMODE_DEFAULT, "Exclusive_Thread": NVML_COMPUTEMODE_EXCLUSIVE_THREAD,
                  "Prohibited": NVML_COMPUTEMODE_PROHIBITED, "Exclusive_Process": NVML_COMPUTEMODE_EXCLUSIVE_PROCESS}


def nvmlDeviceGetComputeMode(handle):
    mode = _values(handle)["compute_mode"]
    if mode not in _COMPUTE_MODES:
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
    return _COMPUTE_MODES[mode]


def nvmlDeviceGetPersistenceMode(handle):
    return _enable_state(_values(handle)["persistence_mode"])


def nvmlDeviceGetMigMode(device):
    """[current, pending] (NVML_DEVICE_MIG_DISABLE / _ENABLE)."""
    v = _values(device)
    return [_enable_state(v["mig.mode.current"]), _enable_state(v["mig.mode.pending"])]


def nvmlDeviceGetEccMode(handle):
    """[current, pending] (NVML_FEATURE_DISABLED / _ENABLED)."""
    v = _values(handle)
    return [_enable_state(v["ecc.mode.current"]), _enable_state(v["ecc.mode.pending"])]


def nvmlDeviceGetCurrPcieLinkGeneration(handle):
    return int(_number(_values(handle)["pcie.link.gen.current"]))


def nvmlDeviceGetMaxPcieLinkGeneration(handle):
    return int(_number(_values(handle)["pcie.link.gen.max"]))


def nvmlDeviceGetCurrPcieLinkWidth(handle):
    return int(_number(_values(handle)["pcie.link.width.current"]))


def nvmlDeviceGetMaxPcieLinkWidth(handle):
    return int(_number(_values(handle)["pcie.link.width.max"]))


def nvmlDeviceGetSerial(handle):
    return _text(_values(handle)["serial"])


def nvmlDeviceGetVbiosVersion(handle):
    return _text(_values(handle)["vbios_version"])


def nvmlDeviceGetComputeRunningProcesses_v3(handle):
    """The claims on this GPU, by pid, as nvidia-ml-py's friendly objects: pid, usedGpuMemory (bytes),
    gpuInstanceId and computeInstanceId (0xFFFFFFFF: not a MIG instance)."""
    index = _gpu(handle)["index"]
    procs = []
    for claim in sorted(_claims(), key=lambda c: c.pid):
        if index in claim.gpus:
            info = c_nvmlProcessInfo_v3_t(claim.pid, claim.memory_mib * 1024 * 1024,
                                          NVML_VALUE_NOT_AVAILABLE_uint.value, NVML_VALUE_NOT_AVAILABLE_uint.value)
            procs.append(nvmlStructToFriendlyObject(info))
    return procs


nvmlDeviceGetComputeRunningProcesses_v2 = nvmlDeviceGetComputeRunningProcesses_v3
nvmlDeviceGetComputeRunningProcesses = nvmlDeviceGetComputeRunningProcesses_v3
