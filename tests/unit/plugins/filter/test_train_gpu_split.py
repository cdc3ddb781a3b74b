# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""train_gpu_split on the A100 box: the target's GPUs from fit_tp, the trainer's from what is left, busy GPUs refused."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError
from ansible.module_utils import _internal as _module_internal
from ansible_collections.specdec.bench.plugins.plugin_utils.plan import fit_tp
from ansible_collections.specdec.bench.plugins.filter.train import train_gpu_split

# As in test_plan.py: controller mode only while a filter runs.
_module_internal.is_controller = False


@pytest.fixture(autouse=True)
def _controller_mode(monkeypatch):
    monkeypatch.setattr(_module_internal, 'is_controller', True)


def a100box(held=None):
    """6 x A100 40 GB; held maps an index to (MiB used, [processes])."""
    held = held or {}
    return [{
        'index': index, 'uuid': 'GPU-a100-%d' % index, 'memory_total_mib': 40960,
        'memory_used_mib': held.get(index, (0, []))[0], 'processes': held.get(index, (0, []))[1],
    } for index in range(6)]


RUN_PROCESS = [{'pid': 812, 'unit': 'specdec-train-a.service', 'used_memory_mib': 30000}]


def test_a100_target_on_tp2_and_the_trainer_on_the_rest():
    gpus = a100box()
    serve_tp = fit_tp(55000000000, gpus)['min_tp']
    split = train_gpu_split(gpus, serve_tp=serve_tp)
    assert serve_tp == 2
    assert split['serve_indices'] == [0, 1] and split['train_indices'] == [2, 3, 4, 5]
    assert split['serve'] == ['GPU-a100-0', 'GPU-a100-1'] and split['problems'] == [] and split['busy'] == []


def test_busy_gpus_are_skipped():
    split = train_gpu_split(a100box({0: (30000, RUN_PROCESS), 3: (2000, [])}), serve_tp=2, train_count=2)
    assert split['serve_indices'] == [1, 2] and split['train_indices'] == [4, 5] and split['busy'] == [0, 3]


def test_driver_overhead_is_still_free():
    split = train_gpu_split(a100box({0: (500, [])}), train_count=1)
    assert split['train_indices'] == [0]


def test_pins_by_index_or_uuid_keep_their_order():
    split = train_gpu_split(a100box(), serve_tp=2, serve_gpus=['GPU-a100-5', 4], train_gpus=['1'])
    assert split['serve_indices'] == [5, 4] and split['train_indices'] == [1] and split['problems'] == []


def test_trainer_only():
    split = train_gpu_split(a100box(), train_count=3)
    assert split['serve'] == [] and split['train_indices'] == [0, 1, 2]


@pytest.mark.parametrize(('kwargs', 'held', 'problem'), [
    ({'train_gpus': [2]}, {2: (30000, RUN_PROCESS)},
     'train_run_train_gpus: GPU 2 (30000 MiB used, pid 812 (specdec-train-a.service) 30000 MiB) is busy; '
     'allowed: free GPUs [0, 1, 3, 4, 5]'),
    ({'train_gpus': [9]}, {}, "train_run_train_gpus: no GPU 9 on this host; allowed: indices [0, 1, 2, 3, 4, 5] or their UUIDs"),
    ({'train_gpus': ['GPU-nope']}, {}, "train_run_train_gpus: no GPU 'GPU-nope' on this host"),
    ({'train_gpus': [1, 1]}, {}, 'train_run_train_gpus: GPU 1 is given twice'),
    ({'serve_tp': 2, 'serve_gpus': [0, 1], 'train_gpus': [1]}, {}, 'train_run_train_gpus: GPU 1 is also in train_run_serve_gpus'),
    ({'serve_tp': 2, 'serve_gpus': [0]}, {}, 'train_run_serve_gpus: 1 GPU(s) given, the target needs a multiple of 2'),
    ({'serve_gpus': [0]}, {}, 'train_run_serve_gpus: given, but no target is served on this host'),
    ({'serve_tp': 2}, {index: (30000, RUN_PROCESS) for index in range(5)},
     'train_run_serve_gpus: the target needs 2 free GPU(s), 1 free ([5]); busy: GPU 0'),
    ({'serve_tp': 2, 'train_count': 5}, {}, 'train_run_train_gpus: the trainer needs 5 free GPU(s), 4 left ([2, 3, 4, 5])'),
    ({'serve_tp': 4}, {0: (30000, RUN_PROCESS), 1: (30000, RUN_PROCESS)},
     'train_run_train_gpus: the trainer needs at least 1 free GPU(s), 0 left ([]) after the target; busy: GPU 0'),
])
def test_problems_name_the_field_and_what_is_allowed(kwargs, held, problem):
    split = train_gpu_split(a100box(held), prefix='train_run_', **kwargs)
    assert any(text.startswith(problem) for text in split['problems']), split['problems']


def test_no_gpus():
    split = train_gpu_split([], train_count=1)
    assert split['problems'] == ['train_gpus: the trainer needs 1 free GPU(s), 0 left ([]) after the target; busy: none']


@pytest.mark.parametrize(('gpus', 'kwargs'), [
    ('not a list', {}),
    ([{'index': 0}], {}),
    (a100box(), {'serve_tp': -1}),
    (a100box(), {'train_count': True}),
    (a100box(), {'train_gpus': 3}),
])
def test_bad_input_fails(gpus, kwargs):
    with pytest.raises(AnsibleFilterError):
        train_gpu_split(gpus, **kwargs)
