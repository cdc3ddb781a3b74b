# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ctypes binding to libnvidia-ml.so.1: struct layouts against nvml.h, return codes, and the calls
against a fake library (Python callables that fill the ctypes out-arguments as the driver would)."""

from __future__ import annotations

import ctypes

import pytest

from ansible_collections.specdec.bench.plugins.module_utils import _nvml

UUID = 'GPU-ff5bd000-d5b2-bc39-142e-dcdc7a95938f'


def test_struct_layouts_match_nvml_h():
    # nvmlFieldValue_t: u32 fieldId, u32 scopeId, i64 timestamp, i64 latencyUsec, enum valueType,
    # enum nvmlReturn, nvmlValue_t value (8-byte union): 40 bytes, value at 32
    assert ctypes.sizeof(_nvml.NvmlValue) == 8
    assert ctypes.sizeof(_nvml.NvmlFieldValue) == 40
    assert _nvml.NvmlFieldValue.value.offset == 32
    assert _nvml.NvmlFieldValue.nvmlReturn.offset == 28
    assert ctypes.sizeof(_nvml.NvmlMemory) == 24
    assert ctypes.sizeof(_nvml.NvmlUtilization) == 8


def test_constants_match_nvml_h():
    assert _nvml.NVML_FI_DEV_POWER_INSTANT == 186
    assert _nvml.NVML_FI_DEV_POWER_AVERAGE == 185
    assert (_nvml.NVML_CLOCK_SM, _nvml.NVML_CLOCK_MEM, _nvml.NVML_TEMPERATURE_GPU) == (1, 2, 0)
    assert _nvml.NVML_ERROR_NOT_SUPPORTED == 3 and _nvml.NVML_ERROR_FUNCTION_NOT_FOUND == 13


def test_check_raises_with_the_code_and_the_function():
    _nvml.check(0, 'nvmlInit_v2')
    with pytest.raises(_nvml.NVMLError) as caught:
        _nvml.check(3, 'nvmlDeviceGetTotalEnergyConsumption')
    assert caught.value.value == 3
    assert str(caught.value) == 'nvmlDeviceGetTotalEnergyConsumption: Not Supported'
    with pytest.raises(_nvml.NVMLError, match='error 77'):
        _nvml.check(77, 'x')


@pytest.mark.parametrize('value_type, member, number, expected', [
    (1, 'uiVal', 79800, 79800),
    (3, 'ullVal', 2 ** 40, 2 ** 40),
    (0, 'dVal', 1.5, 1.5),
    (5, 'siVal', -4, -4),
])
def test_field_value_reads_the_member_its_type_names(value_type, member, number, expected):
    field = _nvml.NvmlFieldValue()
    field.valueType = value_type
    setattr(field.value, member, number)
    assert _nvml.field_value(field) == expected


def test_field_value_of_an_unsupported_field_is_none_and_a_bad_type_an_error():
    field = _nvml.NvmlFieldValue()
    field.nvmlReturn = _nvml.NVML_ERROR_NOT_SUPPORTED
    assert _nvml.field_value(field) is None
    field.nvmlReturn = 0
    field.valueType = 9
    with pytest.raises(ValueError, match='value type 9'):
        _nvml.field_value(field)


@pytest.mark.parametrize('mask, names', [
    (None, None),
    (0, []),
    (0x1, ['gpu_idle']),
    (0x4 | 0x40, ['sw_power_cap', 'hw_thermal_slowdown']),
    (0x1000 | 0x8, ['hw_slowdown', '0x1000']),
])
def test_reason_names(mask, names):
    assert _nvml.reason_names(mask) == names


class OldDriverLib:
    """The driver library's calls as Python: out-arguments arrive as byref() objects, filled through _obj.

    A driver before R535: nvmlDeviceGetCurrentClocksEventReasons is not there, only ...ThrottleReasons.
    """

    def __init__(self, energy=(1000, 2500)):
        self.calls = []
        self.energy = list(energy)

    def nvmlInit_v2(self):
        self.calls.append('init')
        return 0

    def nvmlShutdown(self):
        return 0

    def nvmlDeviceGetHandleByUUID(self, uuid, handle):
        if uuid.value != UUID.encode():
            return _nvml.NVML_ERROR_NOT_FOUND
        handle._obj.contents = _nvml.NvmlDevice()
        return 0

    def nvmlDeviceGetTotalEnergyConsumption(self, handle, out):
        out._obj.value = self.energy.pop(0)
        return 0

    def nvmlDeviceGetFieldValues(self, handle, count, values):
        assert count.value == len(values)
        for value in values:
            if value.fieldId == _nvml.NVML_FI_DEV_POWER_INSTANT:
                value.valueType, value.value.uiVal = 1, 412345
            else:
                value.nvmlReturn = _nvml.NVML_ERROR_NOT_SUPPORTED
        return 0

    def nvmlDeviceGetPowerUsage(self, handle, out):
        out._obj.value = 300000
        return 0

    def nvmlDeviceGetUtilizationRates(self, handle, out):
        out._obj.gpu, out._obj.memory = 97, 40
        return 0

    def nvmlDeviceGetMemoryInfo(self, handle, out):
        out._obj.total, out._obj.used, out._obj.free = 150 << 30, 20 << 30, 130 << 30
        return 0

    def nvmlDeviceGetClockInfo(self, handle, clock, out):
        out._obj.value = {1: 1980, 2: 3201}[clock.value]
        return 0

    def nvmlDeviceGetTemperature(self, handle, sensor, out):
        out._obj.value = 51
        return 0

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle, out):
        out._obj.value = 0x20
        return 0


class FakeLib(OldDriverLib):
    """A current driver's library."""

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle, out):
        out._obj.value = 0x4
        return 0


def test_binding_calls_through_a_fake_library():
    nvml = _nvml.Nvml(lib=FakeLib())
    nvml.nvmlInit()
    handle = nvml.nvmlDeviceGetHandleByUUID(UUID)
    assert nvml.nvmlDeviceGetTotalEnergyConsumption(handle) == 1000
    assert nvml.nvmlDeviceGetTotalEnergyConsumption(handle) == 2500
    fields = nvml.nvmlDeviceGetFieldValues(handle, [_nvml.NVML_FI_DEV_POWER_INSTANT, _nvml.NVML_FI_DEV_POWER_AVERAGE])
    assert [_nvml.field_value(field) for field in fields] == [412345, None]
    assert nvml.nvmlDeviceGetPowerUsage(handle) == 300000
    assert nvml.nvmlDeviceGetUtilizationRates(handle).gpu == 97
    assert nvml.nvmlDeviceGetMemoryInfo(handle).used == 20 << 30
    assert nvml.nvmlDeviceGetClockInfo(handle, _nvml.NVML_CLOCK_SM) == 1980
    assert nvml.nvmlDeviceGetClockInfo(handle, _nvml.NVML_CLOCK_MEM) == 3201
    assert nvml.nvmlDeviceGetTemperature(handle, _nvml.NVML_TEMPERATURE_GPU) == 51
    assert nvml.nvmlDeviceGetCurrentClocksEventReasons(handle) == 0x4
    nvml.nvmlShutdown()


def test_binding_maps_an_unknown_uuid_to_not_found():
    nvml = _nvml.Nvml(lib=FakeLib())
    with pytest.raises(_nvml.NVMLError) as caught:
        nvml.nvmlDeviceGetHandleByUUID('GPU-00000000-0000-0000-0000-000000000000')
    assert caught.value.value == _nvml.NVML_ERROR_NOT_FOUND


def test_binding_falls_back_to_the_throttle_reasons_symbol_of_older_drivers():
    nvml = _nvml.Nvml(lib=OldDriverLib())
    handle = nvml.nvmlDeviceGetHandleByUUID(UUID)
    assert nvml.nvmlDeviceGetCurrentClocksEventReasons(handle) == 0x20


def test_binding_names_a_missing_symbol_and_a_missing_library():
    class Bare:
        pass
    with pytest.raises(_nvml.NVMLError) as caught:
        _nvml.Nvml(lib=Bare()).nvmlInit()
    assert caught.value.value == _nvml.NVML_ERROR_FUNCTION_NOT_FOUND and 'nvmlInit_v2' in str(caught.value)
    with pytest.raises(_nvml.NVMLError) as caught:
        _nvml.Nvml(library='libnvidia-ml-absent.so.0')
    assert caught.value.value == _nvml.NVML_ERROR_LIBRARY_NOT_FOUND
