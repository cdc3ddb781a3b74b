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

Environment: SIM_GPU_LAYOUT (missing file: nvmlInit raises NVMLError_DriverNotLoaded), SIM_GPU_STATE_DIR,
SIM_PROC_ROOT, as for the fake nvidia-smi.
"""

import os
import string
import sys
import threading
import time
from ctypes import Structure, Union, c_double, c_int, c_int64, c_longlong, c_uint, c_uint32, \
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
        NVML_ERROR_UNKNOWN: "Unknown Error",
    }

    def __new__(typ, value):
        if typ == NVMLError:
            typ = NVMLError._valClassMapping.get(value, typ)
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
_values_cache = {}


def _values(handle):
    """The GPU's values as the fake nvidia-smi computes them (claims and power included); one /proc scan serves
    the calls of the next 50 ms (a sampler reads utilization, memory, clocks and temperature in a row)."""
    gpu = _gpu(handle)
    cached = _values_cache.get(gpu["index"])
    if cached is not None and time.monotonic() - cached[0] < _VALUES_TTL_S:
        return cached[1]
    values = _compute_values(gpu)
    _values_cache[gpu["index"]] = (time.monotonic(), values)
    return values


def _compute_values(gpu):
    layout = _layout()
    env = _environ()
    proc_root = env.get("SIM_PROC_ROOT") or _smi.DEFAULT_PROC_ROOT
    state = env.get("SIM_GPU_STATE_DIR") or _smi.DEFAULT_STATE_DIR
    gpus = _smi.layout_gpus(layout)
    claims = _smi.scan_claims(proc_root, state, gpus)
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
    v = _values(handle)
    mib = 1024 * 1024
    total = int(_number(v["memory.total"])) * mib
    used = int(_number(v["memory.used"])) * mib
    free = int(_number(v["memory.free"])) * mib
    return c_nvmlMemory_t(total, free, used)


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
