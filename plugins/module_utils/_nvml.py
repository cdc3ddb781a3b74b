# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A small ctypes binding to the driver's libnvidia-ml.so.1, for hosts without nvidia-ml-py.

Private to the specdec.bench collection. It covers only what telemetry reads, under the names and
return shapes of NVIDIA's own binding (nvidia-ml-py's `pynvml` module), so one reader serves both:
`Nvml()` stands in for the `pynvml` module, errors are `NVMLError` with the NVML return code in `.value`.

Function names, argument types, struct layouts and constants follow nvidia-ml-py 13.615.71's pynvml.py
(NVIDIA's binding, generated from nvml.h) and nvml.h itself: nvmlInit_v2 (nvml.h maps nvmlInit to it),
nvmlDeviceGetTotalEnergyConsumption (unsigned long long mJ since the driver was last reloaded, Volta and
newer), nvmlDeviceGetFieldValues with NVML_FI_DEV_POWER_INSTANT = 186 ("Current GPU power, supported on
all architectures", mW), nvmlDeviceGetPowerUsage (mW; on Ampere except GA100 and newer a 1-second average),
nvmlDeviceGetCurrentClocksEventReasons (R535+; the older symbol is ...ClocksThrottleReasons, same bitmask).
Standard library only: it runs on the host's bare Python.
"""

from __future__ import annotations

import ctypes

LIBRARY = 'libnvidia-ml.so.1'

# nvmlReturn_t values (nvml.h; pynvml.py NVML_SUCCESS ...)
NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_UNKNOWN = 999
ERROR_NAMES = {
    NVML_ERROR_UNINITIALIZED: 'Uninitialized',
    NVML_ERROR_INVALID_ARGUMENT: 'Invalid Argument',
    NVML_ERROR_NOT_SUPPORTED: 'Not Supported',
    NVML_ERROR_NO_PERMISSION: 'Insufficient Permissions',
    NVML_ERROR_NOT_FOUND: 'Not Found',
    NVML_ERROR_DRIVER_NOT_LOADED: 'Driver Not Loaded',
    NVML_ERROR_LIBRARY_NOT_FOUND: 'NVML Shared Library Not Found',
    NVML_ERROR_FUNCTION_NOT_FOUND: 'Function Not Found',
    NVML_ERROR_GPU_IS_LOST: 'GPU is lost',
    NVML_ERROR_UNKNOWN: 'Unknown Error',
}

# nvmlClockType_t, nvmlTemperatureSensors_t, field ids and nvmlValueType_t (nvml.h)
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_TEMPERATURE_GPU = 0
NVML_FI_DEV_POWER_AVERAGE = 185
NVML_FI_DEV_POWER_INSTANT = 186
VALUE_MEMBERS = {0: 'dVal', 1: 'uiVal', 2: 'ulVal', 3: 'ullVal', 4: 'sllVal', 5: 'siVal', 6: 'usVal'}

# nvmlClocksEventReason* bits (nvml.h), named as nvidia-smi's clocks_event_reasons.* fields are
CLOCK_EVENT_REASONS = (
    (0x1, 'gpu_idle'),
    (0x2, 'applications_clocks_setting'),
    (0x4, 'sw_power_cap'),
    (0x8, 'hw_slowdown'),
    (0x10, 'sync_boost'),
    (0x20, 'sw_thermal_slowdown'),
    (0x40, 'hw_thermal_slowdown'),
    (0x80, 'hw_power_brake_slowdown'),
    (0x100, 'display_clock_setting'),
)


class NVMLError(Exception):
    """An NVML call that did not return NVML_SUCCESS; `.value` is its nvmlReturn_t, as in pynvml."""

    def __init__(self, value, function=None):
        self.value = value
        self.function = function
        name = ERROR_NAMES.get(value, 'error %d' % value)
        super().__init__('%s: %s' % (function, name) if function else name)


class NvmlDevice(ctypes.Structure):
    """The opaque struct nvmlDevice_st; handles are pointers to it."""


DeviceHandle = ctypes.POINTER(NvmlDevice)


class NvmlMemory(ctypes.Structure):
    """nvmlMemory_t (v1): bytes; `used` includes driver-reserved memory."""

    _fields_ = [('total', ctypes.c_ulonglong), ('free', ctypes.c_ulonglong), ('used', ctypes.c_ulonglong)]


class NvmlUtilization(ctypes.Structure):
    """nvmlUtilization_t: percent of the last sample period the GPU (kernels) and memory were busy."""

    _fields_ = [('gpu', ctypes.c_uint), ('memory', ctypes.c_uint)]


class NvmlValue(ctypes.Union):
    """nvmlValue_t."""

    _fields_ = [
        ('dVal', ctypes.c_double),
        ('uiVal', ctypes.c_uint),
        ('ulVal', ctypes.c_ulong),
        ('ullVal', ctypes.c_ulonglong),
        ('sllVal', ctypes.c_longlong),
        ('siVal', ctypes.c_int),
        ('usVal', ctypes.c_ushort),
    ]


class NvmlFieldValue(ctypes.Structure):
    """nvmlFieldValue_t: the caller sets fieldId (and scopeId); NVML fills the rest, nvmlReturn per field."""

    _fields_ = [
        ('fieldId', ctypes.c_uint32),
        ('scopeId', ctypes.c_uint32),
        ('timestamp', ctypes.c_int64),
        ('latencyUsec', ctypes.c_int64),
        ('valueType', ctypes.c_uint),
        ('nvmlReturn', ctypes.c_uint),
        ('value', NvmlValue),
    ]


def check(code, function):
    """Raise NVMLError for a return code other than NVML_SUCCESS."""
    if code != NVML_SUCCESS:
        raise NVMLError(int(code), function)


def field_value(field):
    """The number an nvmlFieldValue_t carries, read by its valueType; None when its nvmlReturn is an error."""
    if field.nvmlReturn != NVML_SUCCESS:
        return None
    member = VALUE_MEMBERS.get(field.valueType)
    if member is None:
        raise ValueError('field %d has value type %d, expected one of %s' % (field.fieldId, field.valueType, sorted(VALUE_MEMBERS)))
    return getattr(field.value, member)


def reason_names(mask):
    """nvmlClocksEventReason bitmask as names (gpu_idle, sw_power_cap, ...); unknown bits as hex; None stays None."""
    if mask is None:
        return None
    names = [name for bit, name in CLOCK_EVENT_REASONS if mask & bit]
    known = 0
    for bit, _name in CLOCK_EVENT_REASONS:
        known |= bit
    if mask & ~known:
        names.append('0x%x' % (mask & ~known))
    return names


class Nvml:
    """libnvidia-ml.so.1 through ctypes, with pynvml's names for the calls telemetry makes.

    `lib` is for tests: any object whose attributes are callables taking the same ctypes arguments.
    Loading fails with NVMLError(NVML_ERROR_LIBRARY_NOT_FOUND) where the library is absent.
    """

    NVMLError = NVMLError

    def __init__(self, lib=None, library=LIBRARY):
        if lib is None:
            try:
                lib = ctypes.CDLL(library)
            except OSError:
                raise NVMLError(NVML_ERROR_LIBRARY_NOT_FOUND, library) from None
        self._lib = lib

    def _call(self, name, *args):
        try:
            function = getattr(self._lib, name)
        except AttributeError:
            raise NVMLError(NVML_ERROR_FUNCTION_NOT_FOUND, name) from None
        check(function(*args), name)

    def nvmlInit(self):
        self._call('nvmlInit_v2')

    def nvmlShutdown(self):
        self._call('nvmlShutdown')

    def nvmlDeviceGetHandleByUUID(self, uuid):
        handle = DeviceHandle()
        if isinstance(uuid, str):
            uuid = uuid.encode('ascii')
        self._call('nvmlDeviceGetHandleByUUID', ctypes.c_char_p(uuid), ctypes.byref(handle))
        return handle

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        millijoules = ctypes.c_ulonglong()
        self._call('nvmlDeviceGetTotalEnergyConsumption', handle, ctypes.byref(millijoules))
        return millijoules.value

    def nvmlDeviceGetFieldValues(self, handle, field_ids):
        values = (NvmlFieldValue * len(field_ids))()
        for value, field_id in zip(values, field_ids):
            value.fieldId = field_id
        self._call('nvmlDeviceGetFieldValues', handle, ctypes.c_int32(len(field_ids)), values)
        return values

    def nvmlDeviceGetPowerUsage(self, handle):
        milliwatts = ctypes.c_uint()
        self._call('nvmlDeviceGetPowerUsage', handle, ctypes.byref(milliwatts))
        return milliwatts.value

    def nvmlDeviceGetUtilizationRates(self, handle):
        utilization = NvmlUtilization()
        self._call('nvmlDeviceGetUtilizationRates', handle, ctypes.byref(utilization))
        return utilization

    def nvmlDeviceGetMemoryInfo(self, handle):
        memory = NvmlMemory()
        self._call('nvmlDeviceGetMemoryInfo', handle, ctypes.byref(memory))
        return memory

    def nvmlDeviceGetClockInfo(self, handle, clock_type):
        mhz = ctypes.c_uint()
        self._call('nvmlDeviceGetClockInfo', handle, ctypes.c_uint(clock_type), ctypes.byref(mhz))
        return mhz.value

    def nvmlDeviceGetTemperature(self, handle, sensor):
        celsius = ctypes.c_uint()
        self._call('nvmlDeviceGetTemperature', handle, ctypes.c_uint(sensor), ctypes.byref(celsius))
        return celsius.value

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle):
        reasons = ctypes.c_ulonglong()
        try:
            self._call('nvmlDeviceGetCurrentClocksEventReasons', handle, ctypes.byref(reasons))
        except NVMLError as error:
            if error.value != NVML_ERROR_FUNCTION_NOT_FOUND:
                raise
            # drivers before R535 have only the older name of the same call
            self._call('nvmlDeviceGetCurrentClocksThrottleReasons', handle, ctypes.byref(reasons))
        return reasons.value
