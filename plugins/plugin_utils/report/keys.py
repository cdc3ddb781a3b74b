# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, data: the names it uses, the methods' and parameters' labels and the columns of each file
(ROW_KEYS: results.csv and results.json's rows; REPEAT_KEYS: results-repeats.csv; CATEGORY_KEYS:
results-categories.csv; COMPARE_KEYS: compare-<c>.csv; DATASET_KEYS: results.json's datasets).
"""

from __future__ import annotations

from .schema import RESULT_ENERGY_NUMBERS


BASELINE_METHOD = 'autoregressive'


# Methods and parameters as a reader of the papers knows them; anything else is shown as it is named.
METHOD_NAMES = {'autoregressive': 'AR', 'dflash': 'DFlash', 'ddtree': 'DDTree'}


PARAM_NAMES = {'budget': 'B', 'topk': 'k', 'num_draft_tokens': 'n'}


# The measures whose spread over the repeats a row gives (STAT_SUFFIXES after each), and the noisy threshold.
STAT_METRICS = ('output_throughput', 'median_ttft_ms', 'median_itl_ms', 'accept_length', 'output_tokens_per_j')


STAT_SUFFIXES = ('sd', 'ci_low', 'ci_high', 'cv')


DEFAULT_NOISY_CV = 0.05


CI_METHOD = 'fieller'


SPEEDUP_KEYS = ('speedup', 'speedup_ci_low', 'speedup_ci_high', 'speedup_ci_method', 'speedup_significant')


# The energy ratio's columns: the row's mean J per output token over its AR baseline's, with Fieller's interval.
ENERGY_RATIO_KEYS = ('energy_ratio', 'energy_ratio_ci_low', 'energy_ratio_ci_high')


def _stats(metric):
    return tuple('%s_%s' % (metric, suffix) for suffix in STAT_SUFFIXES)


# Every column of results.csv, in order; results.json rows carry the same keys.
ROW_KEYS = (
    ('host', 'campaign', 'stage', 'method', 'setting', 'tp', 'budget', 'topk', 'num_draft_tokens', 'step', 'checkpoint',
     'wave', 'beside', 'ran_beside', 'interference_of', 'dataset', 'temperature', 'concurrency', 'status', 'reason', 'repeats', 'output_throughput') +
    _stats('output_throughput') + SPEEDUP_KEYS +
    ('noisy', 'baseline_stage', 'accept_length') +
    _stats('accept_length') +
    ('accept_length_source', 'accept_length_server_info', 'accept_length_disagreement', 'accept_length_flag',
     'accept_length_p10', 'accept_length_median', 'accept_length_p90', 'request_throughput', 'completed', 'failed',
     'requests', 'mean_output_len', 'duration_s', 'mean_ttft_ms', 'median_ttft_ms') +
    _stats('median_ttft_ms') +
    ('p99_ttft_ms', 'mean_itl_ms', 'median_itl_ms') +
    _stats('median_itl_ms') +
    ('p99_itl_ms', 'median_tpot_ms', 'p99_tpot_ms', 'median_e2e_latency_ms', 'p99_e2e_latency_ms',
     'energy_j', 'avg_power_w', 'idle_power_w', 'output_tokens_per_j') +
    _stats('output_tokens_per_j') +
    ('j_per_output_token',) + ENERGY_RATIO_KEYS +
    ('energy_method', 'energy_backend', 'power_source', 'gpu_throttled', 'throttle_reasons',
     'harness', 'dataset_kind', 'dataset_source', 'dataset_source_sha256', 'dataset_sha256', 'prompts_sha256',
     'template_sha256', 'turns', 'top_p', 'top_k', 'ignore_eos', 'max_new_tokens',
     'gpu_name', 'gpu_count', 'gpus', 'driver', 'cuda', 'model', 'draft', 'sglang_version', 'sglang_build')
)


# A row's run: the keys that, with host and stage, name it.
RUN_KEYS = ('dataset', 'temperature', 'concurrency')


# The keys naming a row, with its run, in the repeats' and the categories' rows.
_NAMES = ('host', 'campaign', 'stage', 'method', 'setting', 'tp', 'dataset', 'temperature', 'concurrency')


# Every column of results-repeats.csv: one row per measured repeat of a run, its own numbers.
REPEAT_NUMBERS = (
    'output_throughput', 'accept_length', 'request_throughput', 'completed', 'failed', 'requests', 'mean_output_len',
    'duration_s', 'mean_ttft_ms', 'median_ttft_ms', 'p99_ttft_ms', 'mean_itl_ms', 'median_itl_ms', 'p99_itl_ms',
    'median_tpot_ms', 'p99_tpot_ms', 'median_e2e_latency_ms', 'p99_e2e_latency_ms') + RESULT_ENERGY_NUMBERS + ('energy_samples',)


# The energy texts of each repeat's row (gpu_throttled: its reason names joined, empty when none was seen).
REPEAT_ENERGY_TEXTS = ('energy_method', 'energy_backend', 'power_source', 'gpu_throttled', 'telemetry_file', 'energy_note')


REPEAT_KEYS = _NAMES + ('repeat', 'status') + REPEAT_NUMBERS + REPEAT_ENERGY_TEXTS


# Every column of results-categories.csv: one row per category of a categorized dataset's run.
CATEGORY_KEYS = _NAMES + ('category', 'repeats', 'requests', 'accept_length') + _stats('accept_length') + (
    'decode_throughput',) + _stats('decode_throughput') + SPEEDUP_KEYS + ('baseline_stage',)


# The measures compare_rows sets side by side, with how their change is given (percent or absolute).
COMPARED = (('output_throughput', 'pct'), ('speedup', 'abs'), ('accept_length', 'abs'), ('median_ttft_ms', 'pct'),
            ('median_itl_ms', 'pct'))


def _compare_columns(metric, kind):
    columns = ('%s_before' % metric, '%s_after' % metric, '%s_delta%s' % (metric, '_pct' if kind == 'pct' else ''),
               '%s_ci_low_before' % metric, '%s_ci_high_before' % metric, '%s_ci_low_after' % metric,
               '%s_ci_high_after' % metric)
    if metric == 'output_throughput':
        columns += ('output_throughput_p', 'output_throughput_significant')
    elif metric == 'speedup':
        columns += ('speedup_change_significant',)
    return columns


# Every column of compare-<campaign>.csv, in order.
COMPARE_KEYS = (
    'host', 'stage', 'setting', 'tp', 'dataset', 'temperature', 'concurrency', 'status_before', 'status_after',
    'repeats_before', 'repeats_after',
) + tuple(column for metric, kind in COMPARED for column in _compare_columns(metric, kind))


# The status of a row whose status.json or result file was skipped (not of its schema); its reason names the file.
INVALID = 'invalid'


# What the datasets section shows of each dataset a host ran, from status.json's prepared entries (workload_prepare),
# else the plan's validated entries, else the result rows.
DATASET_KEYS = ('host', 'name', 'kind', 'source', 'source_sha256', 'sha256', 'pinned', 'count', 'num_prompts', 'turns',
                'max_new_tokens', 'template_sha256', 'prompts_sha256', 'input_len', 'output_len')
