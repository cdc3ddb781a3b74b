# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""train_gpu_split: a training host's GPU facts -> the GPUs of the served target and of the trainer, by UUID.

A pure function, so that a run's GPUs can be printed and tested without a host. Its documentation is in
train_gpu_split.yml beside this file.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

DEFAULT_FREE_MIB = 1024


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _check_count(value, field):
    if not _is_int(value) or value < 0:
        raise AnsibleFilterError('%s is %r; allowed: an integer >= 0' % (field, value))


def _describe(gpu):
    holders = ', '.join(
        'pid %s%s %s MiB' % (proc.get('pid'), ' (%s)' % proc['unit'] if proc.get('unit') else '', proc.get('used_memory_mib'))
        for proc in gpu.get('processes') or [])
    return 'GPU %s (%s MiB used%s)' % (gpu['index'], gpu.get('memory_used_mib'), ', ' + holders if holders else '')


def _resolve(pins, field, by_index, by_uuid, problems):
    """Pinned GPUs (indices or UUIDs) as GPU facts, in the order given; unknown ones become problems."""
    if pins is None:
        return []
    if not isinstance(pins, (list, tuple)):
        raise AnsibleFilterError('%s is %r; allowed: a list of GPU indices or UUIDs' % (field, pins))
    chosen = []
    for pin in pins:
        gpu = None
        if _is_int(pin) or (isinstance(pin, str) and pin.isdigit()):
            gpu = by_index.get(int(pin))
        elif isinstance(pin, str):
            gpu = by_uuid.get(pin)
        if gpu is None:
            problems.append('%s: no GPU %r on this host; allowed: indices %s or their UUIDs'
                            % (field, pin, sorted(by_index) or 'none (the host has no GPU)'))
        elif gpu in chosen:
            problems.append('%s: GPU %s is given twice' % (field, gpu['index']))
        else:
            chosen.append(gpu)
    return chosen


def train_gpu_split(gpus, serve_tp=0, serve_gpus=None, train_gpus=None, train_count=0, free_mib=DEFAULT_FREE_MIB,
                    prefix=''):
    """Split a host's GPUs between the served target (serve_tp GPUs) and the trainer; only free GPUs are chosen."""
    if not isinstance(gpus, (list, tuple)) or not all(isinstance(gpu, Mapping) and 'index' in gpu and 'uuid' in gpu
                                                      for gpu in gpus):
        raise AnsibleFilterError('the GPUs must be GPU facts (ansible_facts.nvidia_gpus, each with index and uuid)')
    _check_count(serve_tp, prefix + 'serve_tp')
    _check_count(train_count, prefix + 'train_gpu_count')
    _check_count(free_mib, prefix + 'gpu_free_mib')
    gpus = sorted(gpus, key=lambda gpu: gpu['index'])
    by_index = {gpu['index']: gpu for gpu in gpus}
    by_uuid = {gpu['uuid']: gpu for gpu in gpus}
    problems = []
    serve = _resolve(serve_gpus, prefix + 'serve_gpus', by_index, by_uuid, problems)
    train = _resolve(train_gpus, prefix + 'train_gpus', by_index, by_uuid, problems)

    def busy(gpu):
        return bool(gpu.get('processes')) or (gpu.get('memory_used_mib') or 0) > free_mib

    free = [gpu for gpu in gpus if not busy(gpu)]
    free_text = [gpu['index'] for gpu in free]
    for field, pinned in (('serve_gpus', serve), ('train_gpus', train)):
        for gpu in pinned:
            if busy(gpu):
                problems.append('%s%s: %s is busy; allowed: free GPUs %s' % (prefix, field, _describe(gpu), free_text))
    for gpu in serve:
        if gpu in train:
            problems.append('%strain_gpus: GPU %s is also in %sserve_gpus; allowed: distinct GPUs'
                            % (prefix, gpu['index'], prefix))
    if serve_gpus and serve_tp and len(serve) % serve_tp:
        problems.append('%sserve_gpus: %d GPU(s) given, the target needs a multiple of %d (its smallest TP); allowed: '
                        'a multiple of %d' % (prefix, len(serve), serve_tp, serve_tp))
    if serve_gpus and not serve_tp:
        problems.append('%sserve_gpus: given, but no target is served on this host; allowed: [] (empty)' % prefix)
    if problems:
        return _result(serve, train, gpus, free_mib, problems)

    left = [gpu for gpu in free if gpu not in serve and gpu not in train]
    busy_text = '; '.join(_describe(gpu) for gpu in gpus if busy(gpu)) or 'none'
    if serve_tp and not serve_gpus:
        if len(left) < serve_tp:
            problems.append('%sserve_gpus: the target needs %d free GPU(s), %d free (%s); busy: %s'
                            % (prefix, serve_tp, len(left), [gpu['index'] for gpu in left], busy_text))
            return _result(serve, train, gpus, free_mib, problems)
        serve, left = left[:serve_tp], left[serve_tp:]
    if not train_gpus:
        count = train_count or len(left)
        if count == 0 or len(left) < count:
            problems.append('%strain_gpus: the trainer needs %s free GPU(s), %d left (%s) after the target; busy: %s'
                            % (prefix, count or 'at least 1', len(left), [gpu['index'] for gpu in left], busy_text))
            return _result(serve, train, gpus, free_mib, problems)
        train = left[:count]
    return _result(serve, train, gpus, free_mib, problems)


def _result(serve, train, gpus, free_mib, problems):
    return {
        'serve': [gpu['uuid'] for gpu in serve],
        'serve_indices': [gpu['index'] for gpu in serve],
        'train': [gpu['uuid'] for gpu in train],
        'train_indices': [gpu['index'] for gpu in train],
        'busy': [gpu['index'] for gpu in gpus if gpu.get('processes') or (gpu.get('memory_used_mib') or 0) > free_mib],
        'problems': problems,
    }


class FilterModule:
    def filters(self):
        return {'train_gpu_split': train_gpu_split}
