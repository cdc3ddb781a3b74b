# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What fits: model_bytes (the size of the weights from a safetensors index), fit_tp (the smallest TP size whose GPUs
hold the weights with KV cache headroom left) and a stage's fit at its own TP on its own GPUs."""

from __future__ import annotations

import json
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from .common import GIB, POSITIVE_INT, gib, is_number, is_positive_int, powers_of_two

DEFAULT_MEM_FRACTION = 0.9
DEFAULT_MIN_KV_HEADROOM_GIB = 4


def safetensors_total_size(index):
    """metadata.total_size of a safetensors index (model.safetensors.index.json), parsed or as its JSON text."""
    if isinstance(index, (str, bytes)):
        try:
            index = json.loads(index)
        except ValueError as exc:
            raise AnsibleFilterError('model_bytes: the safetensors index is not JSON: %s' % exc)
    total = ((index or {}).get('metadata') or {}).get('total_size') if isinstance(index, Mapping) else None
    if isinstance(total, str) and total.isdigit():
        total = int(total)
    if not is_positive_int(total):
        raise AnsibleFilterError('model_bytes: metadata.total_size of the safetensors index is %r; allowed: %s'
                                 % (total, POSITIVE_INT))
    return total


def _memory_mib(gpus, caller):
    """memory_total_mib of each GPU, from GPU facts or plain numbers."""
    if not isinstance(gpus, (list, tuple)):
        raise AnsibleFilterError('%s: gpus is %r; allowed: a list of GPU facts or of memory_total_mib numbers' % (caller, gpus))
    memory = []
    for position, gpu in enumerate(gpus):
        mib = gpu.get('memory_total_mib') if isinstance(gpu, Mapping) else gpu
        if not is_number(mib) or mib <= 0:
            raise AnsibleFilterError('%s: gpus[%d].memory_total_mib is %r; allowed: a positive number of MiB'
                                     % (caller, position, mib))
        memory.append(mib)
    return memory


def _check_capacity_options(weights_bytes, mem_fraction, min_kv_headroom_gib, caller):
    if not is_number(weights_bytes) or weights_bytes <= 0:
        raise AnsibleFilterError('%s: model bytes are %r; allowed: a positive number of bytes' % (caller, weights_bytes))
    if not is_number(mem_fraction) or not 0 < mem_fraction <= 1:
        raise AnsibleFilterError('%s: mem_fraction is %r; allowed: a number in (0, 1]' % (caller, mem_fraction))
    if not is_number(min_kv_headroom_gib) or min_kv_headroom_gib < 0:
        raise AnsibleFilterError('%s: min_kv_headroom_gib is %r; allowed: a number >= 0' % (caller, min_kv_headroom_gib))


def _capacity(weights_bytes, memory_mib, tp, mem_fraction, min_kv_headroom_gib):
    """The headroom rule at one TP size, on the smallest GPU of the group.

    usable = mem_fraction x GPU memory (what SGLang's --mem-fraction-static lets it take), weights shard evenly
    over tp GPUs, and the rest of usable is the KV cache: it fits when that is at least min_kv_headroom_gib.
    """
    gpu_gib = min(memory_mib) / 1024.0
    usable = mem_fraction * gpu_gib
    weights = weights_bytes / float(tp) / GIB
    headroom = usable - weights
    return {
        'tp': tp,
        'gpu_memory_gib': gib(gpu_gib),
        'usable_per_gpu_gib': gib(usable),
        'weights_per_gpu_gib': gib(weights),
        'kv_headroom_per_gpu_gib': gib(headroom),
        'fits': headroom >= min_kv_headroom_gib,
    }


def _short_of_memory(capacity, mem_fraction, min_kv_headroom_gib):
    return ('at TP%d the weights take %s GiB per GPU, leaving %s GiB for the KV cache of the %s GiB usable '
            '(mem_fraction %s x %s GiB GPU memory), below min_kv_headroom_gib %s' % (
                capacity['tp'], capacity['weights_per_gpu_gib'], capacity['kv_headroom_per_gpu_gib'],
                capacity['usable_per_gpu_gib'], mem_fraction, capacity['gpu_memory_gib'], min_kv_headroom_gib))


def fit_tp(weights_bytes, gpus, mem_fraction=DEFAULT_MEM_FRACTION, min_kv_headroom_gib=DEFAULT_MIN_KV_HEADROOM_GIB):
    """The smallest power-of-two TP size that holds the weights with KV headroom left, and how many such groups fit."""
    memory = _memory_mib(gpus, 'fit_tp')
    _check_capacity_options(weights_bytes, mem_fraction, min_kv_headroom_gib, 'fit_tp')
    candidates = [_capacity(weights_bytes, memory, tp, mem_fraction, min_kv_headroom_gib) for tp in powers_of_two(len(memory))]
    best = next((c for c in candidates if c['fits']), None)
    result = {
        'fits': best is not None,
        'min_tp': best['tp'] if best else None,
        'dp_replicas': len(memory) // best['tp'] if best else 0,
        'weights_per_gpu_gib': best['weights_per_gpu_gib'] if best else None,
        'kv_headroom_per_gpu_gib': best['kv_headroom_per_gpu_gib'] if best else None,
        'model_gib': gib(weights_bytes / float(GIB)),
        'gpu_count': len(memory),
        'gpu_memory_gib': gib(min(memory) / 1024.0) if memory else None,
        'usable_per_gpu_gib': gib(mem_fraction * min(memory) / 1024.0) if memory else None,
        'candidates': candidates,
        'reason': None,
    }
    if not memory:
        result['reason'] = 'no GPUs'
    elif best is None:
        result['reason'] = '%s GiB of weights do not fit on %d GPU(s): %s' % (
            result['model_gib'], len(memory), _short_of_memory(candidates[-1], mem_fraction, min_kv_headroom_gib))
    return result


def stage_fit(plan, stage_bytes, gpus, tp, host_memory):
    """(capacity at this TP, why not); (None, None) when the model size is unknown."""
    if not stage_bytes:
        return None, None
    memory = [gpu.get('memory_total_mib') for gpu in gpus]
    if not all(is_number(mib) and mib > 0 for mib in memory + host_memory):
        return None, 'GPU memory is unknown in the facts (memory_total_mib)'
    fit = _capacity(stage_bytes, memory, tp, plan['mem_fraction'], plan['min_kv_headroom_gib'])
    host_fit = fit_tp(stage_bytes, host_memory, plan['mem_fraction'], plan['min_kv_headroom_gib'])
    fit.update(model_bytes=stage_bytes, min_tp=host_fit['min_tp'], dp_replicas=len(host_memory) // tp)
    if fit['fits']:
        return fit, None
    return fit, 'the weights (%s GiB) do not fit at TP%d: %s; %s' % (
        host_fit['model_gib'], tp, _short_of_memory(fit, plan['mem_fraction'], plan['min_kv_headroom_gib']),
        'the smallest TP that fits is %d' % host_fit['min_tp'] if host_fit['min_tp'] else 'no TP size fits on this host')
