# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The normalized benchmark result (one row per stage, dataset, temperature and concurrency) and how each harness's raw output maps to it.

Private to the specdec.bench collection; standard library only, pure functions. This is the one place the result
schema is defined: bench_run writes rows made here and the report reads nothing else.

Statistics follow SGLang's benchmark client (sglang.benchmark.serving, 0.5.23) so both harnesses mean the same:
- TTFT: request start to the first chunk whose `text` is not empty.
- ITL: after the first token, each chunk's gap since the previous counted chunk is spread evenly over the tokens
  it carries (the growth of `meta_info.completion_tokens`); a chunk that adds no token is skipped.
- E2E latency: request start to the last line of the stream (`data: [DONE]` included).
- TPOT: (E2E - TTFT) / (output tokens - 1), for requests with more than one output token.
- Acceptance length (tau): the run's own requests' sum of completion_tokens over their sum of spec_verify_ct
  (final meta_info), over the completed requests that carry spec_verify_ct > 0; null when none does (an
  autoregressive server). /server_info's avg_spec_accept_length (since /flush_cache, after the warm-up) is kept
  beside it as a cross-check. The server's figure counts only the tokens its verify steps made (SGLang 0.5.23:
  metrics_reporter.update_spec_metrics adds num_accept_tokens and the batch size per verify step, and
  internal_state._average_accept_length divides their totals), not each request's first token, which prefill makes.
  So it is compared with the same quantity over the run's requests, (sum of completion_tokens - requests) / sum of
  spec_verify_ct: accept_length_disagreement = |that - server| / server, flagged above ACCEPT_DISAGREEMENT (2%). What
  is left is the warm-up the server also counted, or a server that miscounts.
- Acceptance in full (SPEC_KEYS; SGLang 0.5.23's final meta_info, managers/tokenizer_manager.py
  _calculate_spec_decoding_metrics), over the requests that carry each field:
  accept_rate = sum spec_num_correct_drafts / sum spec_num_proposed_drafts (pooled);
  accept_length_mean_of_means = mean_i tau_i, tau_i = output_tokens_i / spec_verify_ct_i (requests with
  spec_verify_ct > 0; DDTree's and dflash's per-request mean);
  accept_length_token_weighted = sum_i tokens_i * tau_i / sum_i tokens_i (accept_length, sum tokens / sum steps, stays
  the headline tau);
  accept_histogram = the element-wise sum of the requests' spec_correct_drafts_histogram (index: correct drafts in a
  verify step, value: verify steps);
  accept_by_position[i - 1] = sum_{j >= i} hist[j] / sum(hist) for draft position i = 1 .. len(hist) - 1 (the chance
  the i-th draft token is accepted in a verify step).
- Decode-only timing (DECODE_KEYS; the papers' definition, the first token excluded), over the requests with more
  than one output token: decode_tpot_n and decode_tpot_sd_ms, the count and sample standard deviation (n - 1) of
  their TPOT (the mean is mean_tpot_ms); decode_time_s = sum (latency - TTFT); decode_tokens = sum (output tokens - 1);
  decode_steps = sum spec_verify_ct when every one of them carries it (a speculative server), decode_tokens when none
  does (autoregressive: one token per forward step), null when mixed; step_time_ms = decode_time_s / decode_steps *
  1000; request_tokens_per_s_mean = mean over the finished requests of output tokens / E2E latency (Spec-Bench's
  per-request speed, evaluation/speed.py).
- Prefix cache (CACHE_KEYS; meta_info.cached_tokens, the prompt tokens the radix cache served): cached_tokens = sum
  cached_tokens; cache_hit_rate = sum cached_tokens / sum prompt_tokens; cache_hit_rate_by_turn[t] the same over the
  requests of turn t (0-based; null for a turn none of whose requests carries both).
- Server metrics (METRICS_KEYS): metrics_file, the basename of the raw file holding the server's /metrics text
  scraped right before and right after the measured run ({"before": {"t", "text"}, "after": {...}}); null when not
  scraped, metrics_note then says why.
- Load: request_rate (null: infinite, every request at once, closed loop up to the concurrency) and burstiness, the
  gamma shape of the arrivals at a finite rate (1.0 Poisson; null at an infinite rate).
- mean is the arithmetic mean; median and p99 are percentiles by linear interpolation between the closest ranks
  (numpy's default, which SGLang's client uses): rank = (n - 1) * q / 100.
"""

from __future__ import annotations

import json
import math

from ansible_collections.specdec.bench.plugins.module_utils._common import finite, results_file

SCHEMA_VERSION = 1
HARNESSES = ('builtin', 'sglang')
LATENCY_METRICS = ('ttft_ms', 'itl_ms', 'tpot_ms', 'e2e_latency_ms')
STATISTICS = ('mean', 'median', 'p99')
STAT_KEYS = tuple('%s_%s' % (stat, metric) for metric in LATENCY_METRICS for stat in STATISTICS)
CLIENT_LAG_KEYS = ('mean_client_lag_ms', 'p99_client_lag_ms', 'max_client_lag_ms')
# The dataset and sampling keys of a row (bench_run's options; harness_run.workload fills them).
DATASET_KEYS = ('dataset', 'dataset_kind', 'dataset_source', 'dataset_source_sha256', 'dataset_sha256', 'prompts_sha256',
                'template_sha256', 'turns')
SAMPLING_KEYS = ('temperature', 'top_p', 'top_k', 'ignore_eos', 'max_new_tokens')
# Which measurement of its cell a row is (1..repeats), the cell's planned repeats, and the requests of the cell's one
# warm-up pass (before its first measured repeat; discarded).
REPEAT_KEYS = ('repeat', 'repeats', 'warmup_requests')
ACCEPT_KEYS = ('accept_length', 'accept_length_source', 'accept_length_server_info', 'accept_length_disagreement',
               'accept_length_flag', 'accept_length_p10', 'accept_length_median', 'accept_length_p90')
# Acceptance beyond tau, from each request's final meta_info (see the module docstring for each formula).
SPEC_KEYS = ('accept_rate', 'accept_length_mean_of_means', 'accept_length_token_weighted', 'accept_histogram',
             'accept_by_position')
# The papers' decode-only timing (first token excluded) and Spec-Bench's per-request speed.
DECODE_KEYS = ('decode_tpot_sd_ms', 'decode_tpot_n', 'decode_time_s', 'decode_tokens', 'decode_steps', 'step_time_ms',
               'request_tokens_per_s_mean')
# Prefix-cache hits (meta_info.cached_tokens), per run and per turn of a conversation.
CACHE_KEYS = ('cached_tokens', 'cache_hit_rate', 'cache_hit_rate_by_turn')
# The server's /metrics scraped before and after the measured run (builtin harness, SGLang's --enable-metrics).
METRICS_KEYS = ('metrics_file', 'metrics_note')
# The stage's GPUs during the measured run (_telemetry, through harness_run.EnergyMeter); null when not measured,
# energy_note then says why.
ENERGY_KEYS = ('energy_j', 'avg_power_w', 'idle_power_w', 'output_tokens_per_j', 'j_per_output_token', 'energy_method',
               'energy_backend', 'energy_samples', 'power_source', 'gpu_throttled', 'telemetry_file', 'energy_note')
# Every key of a result row, in the order it is written.
RESULT_KEYS = (
    'schema_version', 'harness', 'stage', 'concurrency', 'num_prompts', 'input_len', 'output_len', 'request_rate',
    'burstiness', 'seed',
) + REPEAT_KEYS + DATASET_KEYS + SAMPLING_KEYS + (
    'completed', 'failed', 'complete', 'requests', 'duration_s', 'total_input_tokens', 'total_output_tokens',
    'mean_output_len', 'output_throughput', 'request_throughput',
) + STAT_KEYS + ACCEPT_KEYS + SPEC_KEYS + DECODE_KEYS + CACHE_KEYS + CLIENT_LAG_KEYS + ENERGY_KEYS + METRICS_KEYS + (
    'errors', 'raw_file')
MAX_ERRORS = 5
ACCEPT_DISAGREEMENT = 0.02  # relative gap between the requests' tau and /server_info's that flags a row


def result_file_name(dataset, temperature, concurrency, repeat=1):
    return results_file('result', dataset=dataset, temperature=temperature, concurrency=concurrency, repeat=repeat)


def raw_file_name(dataset, temperature, concurrency, suffix='jsonl', repeat=1):
    """The layout's raw file of a run; another suffix names a file beside it (the sglang client's log: 'log')."""
    name = results_file('raw', dataset=dataset, temperature=temperature, concurrency=concurrency, repeat=repeat)
    return '%s.%s' % (name.rsplit('.', 1)[0], suffix)


def result_row(**values):
    """A result row: every schema key, None where not given. Unknown keys are an error, so the schema stays here."""
    unknown = set(values) - set(RESULT_KEYS)
    if unknown:
        raise ValueError('not result keys: %s' % ', '.join(sorted(unknown)))
    row = dict.fromkeys(RESULT_KEYS)
    row.update(values)
    row['schema_version'] = SCHEMA_VERSION
    return row


def percentile(values, q):
    """The q-th percentile (0..100) by linear interpolation between closest ranks, as numpy.percentile's default."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = (len(ordered) - 1) * q / 100.0
    low = int(math.floor(rank))
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summarize(seconds, metric):
    """{mean_<metric>, median_<metric>, p99_<metric>} in milliseconds of values in seconds; None when there are none."""
    if not seconds:
        return dict.fromkeys('%s_%s' % (stat, metric) for stat in STATISTICS)
    return {
        'mean_%s' % metric: math.fsum(seconds) / len(seconds) * 1000.0,
        'median_%s' % metric: percentile(seconds, 50) * 1000.0,
        'p99_%s' % metric: percentile(seconds, 99) * 1000.0,
    }


class RequestTiming:
    """The timing of one streamed request, fed event by event (see the module docstring for the definitions)."""

    __slots__ = ('start', 'ttft', 'itl', 'latency', 'meta', '_last_time', '_last_tokens')

    def __init__(self, start):
        self.start = start
        self.ttft = None
        self.itl = []
        self.latency = None
        self.meta = {}
        self._last_time = None
        self._last_tokens = 0

    def feed(self, now, event):
        """One stream line: its arrival time and the parsed event (or "[DONE]")."""
        self.latency = now - self.start
        if event == '[DONE]':
            return
        meta = event.get('meta_info') or {}
        self.meta = meta
        if not event.get('text'):
            return  # SGLang's client counts only chunks that carry text
        tokens = meta.get('completion_tokens', self._last_tokens + 1)
        if self.ttft is None:
            self.ttft = now - self.start
        else:
            new_tokens = tokens - self._last_tokens
            if new_tokens <= 0:
                return
            self.itl.extend([(now - self._last_time) / new_tokens] * new_tokens)
        self._last_time = now
        self._last_tokens = tokens

    @property
    def output_tokens(self):
        return self.meta.get('completion_tokens', self._last_tokens)

    def record(self):
        """The timing fields of a builtin harness request record, with the final meta_info's counts and finish reason
        (its type: stop, length or abort)."""
        reason = self.meta.get('finish_reason')
        return {
            'ttft_s': self.ttft,
            'latency_s': self.latency,
            'itl_s': self.itl,
            'output_tokens': self.output_tokens,
            'completion_tokens': self.meta.get('completion_tokens'),
            'prompt_tokens': self.meta.get('prompt_tokens'),
            'spec_verify_ct': self.meta.get('spec_verify_ct'),
            'spec_accept_length': self.meta.get('spec_accept_length'),
            'spec_accept_rate': self.meta.get('spec_accept_rate'),
            'spec_num_correct_drafts': self.meta.get('spec_num_correct_drafts'),
            'spec_num_proposed_drafts': self.meta.get('spec_num_proposed_drafts'),
            'spec_correct_drafts_histogram': self.meta.get('spec_correct_drafts_histogram'),
            'cached_tokens': self.meta.get('cached_tokens'),
            'finish_reason': reason.get('type') if isinstance(reason, dict) else reason,
        }


def server_accept_length(server_info):
    """/server_info's avg_spec_accept_length (of the first internal state, as SGLang's client reads it), or None."""
    if not isinstance(server_info, dict):
        return None
    states = server_info.get('internal_states')
    if isinstance(states, list) and states and isinstance(states[0], dict):
        return finite(states[0].get('avg_spec_accept_length'))
    return finite(server_info.get('avg_spec_accept_length'))


def _verify_steps(record):
    """A request's spec_verify_ct when it is a positive count, else None."""
    steps = record.get('spec_verify_ct')
    return steps if isinstance(steps, int) and not isinstance(steps, bool) and steps > 0 else None


def requests_accept_length(records):
    """Acceptance length over finished requests: the sum of their output tokens over the sum of their verify steps,
    over those that carry spec_verify_ct > 0; None when none does."""
    steps = [(r.get('output_tokens') or 0, _verify_steps(r)) for r in records if _verify_steps(r)]
    if not steps:
        return None
    return float(sum(tokens for tokens, _ct in steps)) / sum(ct for _tokens, ct in steps)


def accept_fields(records, server_info=None, server_accept=None):
    """The ACCEPT_KEYS of a row from the finished requests (output_tokens, spec_verify_ct) and /server_info (or its
    figure, server_accept, when the harness read it itself). See the module docstring for what the disagreement
    holds."""
    accept = requests_accept_length(records)
    counted = [r for r in records if _verify_steps(r)]
    per_request = [float(r.get('output_tokens') or 0) / _verify_steps(r) for r in counted]
    if server_accept is None:
        server_accept = server_accept_length(server_info)
    disagreement = None
    if accept is not None and server_accept:
        # the server's own quantity: the tokens verify steps made, without each request's first (prefill) token
        verify_made = float(sum((r.get('output_tokens') or 0) - 1 for r in counted)) / sum(_verify_steps(r) for r in counted)
        disagreement = abs(verify_made - server_accept) / server_accept
    return dict(
        accept_length=accept, accept_length_source='requests' if accept is not None else None,
        accept_length_server_info=server_accept, accept_length_disagreement=disagreement,
        accept_length_flag=disagreement is not None and disagreement > ACCEPT_DISAGREEMENT,
        accept_length_p10=percentile(per_request, 10), accept_length_median=percentile(per_request, 50),
        accept_length_p90=percentile(per_request, 90),
    )


def _count(value):
    """A non-negative integer count, else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _histogram(record):
    """A request's spec_correct_drafts_histogram when it is a non-empty list of counts, else None."""
    hist = record.get('spec_correct_drafts_histogram')
    if isinstance(hist, list) and hist and all(_count(steps) is not None for steps in hist):
        return hist
    return None


def _ratio(numerator, denominator):
    return float(numerator) / denominator if denominator else None


def spec_fields(records):
    """The SPEC_KEYS of a row from the finished requests (see the module docstring for each formula); null where no
    request carries what a key needs (an autoregressive server, SGLang's client)."""
    pairs = [(_count(r.get('spec_num_correct_drafts')), _count(r.get('spec_num_proposed_drafts'))) for r in records]
    pairs = [(correct, proposed) for correct, proposed in pairs if correct is not None and proposed is not None]
    taus = [(float(r.get('output_tokens') or 0), float(r.get('output_tokens') or 0) / _verify_steps(r))
            for r in records if _verify_steps(r)]
    tokens = math.fsum(count for count, _tau in taus)
    histograms = [hist for hist in map(_histogram, records) if hist is not None]
    total = None
    if histograms:
        total = [0] * max(len(hist) for hist in histograms)
        for hist in histograms:
            for index, count in enumerate(hist):
                total[index] += count
    steps = sum(total) if total else 0
    return dict(
        accept_rate=_ratio(sum(c for c, _p in pairs), sum(p for _c, p in pairs)) if pairs else None,
        accept_length_mean_of_means=math.fsum(tau for _tokens, tau in taus) / len(taus) if taus else None,
        accept_length_token_weighted=_ratio(math.fsum(count * tau for count, tau in taus), tokens) if taus else None,
        accept_histogram=total,
        accept_by_position=[float(sum(total[index:])) / steps for index in range(1, len(total))] if steps else None,
    )


def _decoded(record):
    """A request with more than one output token and both its TTFT and latency (the decode-timing set)."""
    return (record.get('output_tokens') or 0) > 1 and record.get('ttft_s') is not None and record.get('latency_s') is not None


def decode_fields(records):
    """The DECODE_KEYS of a row from the finished requests (see the module docstring for each formula)."""
    decoded = [r for r in records if _decoded(r)]
    tpots = [(r['latency_s'] - r['ttft_s']) / (r['output_tokens'] - 1) for r in decoded]
    sd = None
    if len(tpots) > 1:
        mean = math.fsum(tpots) / len(tpots)
        sd = math.sqrt(math.fsum((tpot - mean) ** 2 for tpot in tpots) / (len(tpots) - 1)) * 1000.0
    time_s = math.fsum(r['latency_s'] - r['ttft_s'] for r in decoded) if decoded else None
    tokens = sum(r['output_tokens'] - 1 for r in decoded) if decoded else None
    spec = [_verify_steps(r) for r in decoded]
    if not decoded:
        steps = None
    elif all(spec):
        steps = sum(spec)
    elif not any(spec):
        steps = tokens  # autoregressive: one output token per forward step
    else:
        steps = None  # some requests carry verify steps, some not: no one count of steps
    speeds = [float(r.get('output_tokens') or 0) / r['latency_s'] for r in records
              if r.get('latency_s') is not None and r['latency_s'] > 0]
    return dict(
        decode_tpot_sd_ms=sd, decode_tpot_n=len(tpots), decode_time_s=time_s, decode_tokens=tokens, decode_steps=steps,
        step_time_ms=time_s / steps * 1000.0 if steps else None,
        request_tokens_per_s_mean=math.fsum(speeds) / len(speeds) if speeds else None,
    )


def cache_fields(records):
    """The CACHE_KEYS of a row from the finished requests: hits over the requests that carry cached_tokens and
    prompt_tokens, overall and by turn (a record without `turn` is turn 0)."""
    counted = [(r.get('turn') or 0, _count(r.get('cached_tokens')), _count(r.get('prompt_tokens'))) for r in records]
    counted = [(turn, cached, prompt) for turn, cached, prompt in counted if cached is not None and prompt is not None]
    if not counted:
        return dict(cached_tokens=None, cache_hit_rate=None, cache_hit_rate_by_turn=None)
    by_turn = []
    for turn in range(max(turn for turn, _cached, _prompt in counted) + 1):
        of_turn = [(cached, prompt) for number, cached, prompt in counted if number == turn]
        by_turn.append(_ratio(sum(c for c, _p in of_turn), sum(p for _c, p in of_turn)) if of_turn else None)
    cached = sum(c for _t, c, _p in counted)
    return dict(cached_tokens=cached, cache_hit_rate=_ratio(cached, sum(p for _t, _c, p in counted)),
                cache_hit_rate_by_turn=by_turn)


def from_builtin(records, duration_s, concurrency, num_prompts, input_len, output_len, request_rate=None, seed=None,
                 server_info=None, raw_file=None, stage=None, interrupted=False, **workload):
    """The result row of a builtin harness run from its request records (warm-up records are left out).

    A record holds success, error, intended_start_s, start_s and RequestTiming.record()'s fields; a turn of a
    conversation also `final` (False but on its last turn). `completed` counts the prompts (conversations) whose
    every turn completed, `failed` every other prompt, sent or not; `requests` the turn requests sent. Latency,
    token and acceptance figures are over the completed turn requests. workload: the DATASET_KEYS and
    SAMPLING_KEYS.
    """
    measured = [r for r in records if not r.get('warmup')]
    finished = [r for r in measured if r.get('success')]
    completed = sum(1 for r in finished if r.get('final', True))
    ttfts = [r['ttft_s'] for r in finished if r.get('ttft_s') is not None]
    e2e = [r['latency_s'] for r in finished if r.get('latency_s') is not None]
    itls = [gap for r in finished for gap in r.get('itl_s') or ()]
    tpots = [(r['latency_s'] - r['ttft_s']) / (r['output_tokens'] - 1)
             for r in finished if (r.get('output_tokens') or 0) > 1 and r.get('ttft_s') is not None]
    lags = [r['start_s'] - r['intended_start_s'] for r in measured
            if r.get('start_s') is not None and r.get('intended_start_s') is not None]
    total_output = sum(r.get('output_tokens') or 0 for r in finished)
    duration = finite(duration_s)
    values = dict(
        harness='builtin', stage=stage, concurrency=concurrency, num_prompts=num_prompts, input_len=input_len,
        output_len=output_len, request_rate=finite(request_rate), seed=seed,
        completed=completed, failed=num_prompts - completed, complete=completed == num_prompts and not interrupted,
        requests=sum(1 for r in measured if r.get('start_s') is not None), duration_s=duration,
        total_input_tokens=sum(r.get('prompt_tokens') or 0 for r in finished), total_output_tokens=total_output,
        mean_output_len=float(total_output) / len(finished) if finished else None,
        output_throughput=total_output / duration if duration else None,
        request_throughput=len(finished) / duration if duration else None,
        mean_client_lag_ms=math.fsum(lags) / len(lags) * 1000.0 if lags else None,
        p99_client_lag_ms=percentile(lags, 99) * 1000.0 if lags else None,
        max_client_lag_ms=max(lags) * 1000.0 if lags else None,
        errors=_first_errors(r.get('error') for r in measured), raw_file=raw_file,
    )
    values.update(workload)
    values.update(accept_fields(finished, server_info))
    values.update(spec_fields(finished))
    values.update(decode_fields(finished))
    values.update(cache_fields(finished))
    for metric, seconds in (('ttft_ms', ttfts), ('itl_ms', itls), ('tpot_ms', tpots), ('e2e_latency_ms', e2e)):
        values.update(summarize(seconds, metric))
    return result_row(**values)


def parse_client_output(text):
    """The last JSON object line of SGLang's client output file; bare Infinity and NaN are accepted, as the client writes them.

    Lines may end in \\r (the client's progress bar). Raises ValueError when there is none.
    """
    for line in reversed((text or '').replace('\r', '\n').split('\n')):
        line = line.strip()
        if not line.startswith('{'):
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    raise ValueError('no JSON result line in the client output')


def from_sglang_client(text, num_prompts=None, concurrency=None, input_len=None, output_len=None, request_rate=None,
                       seed=None, raw_file=None, stage=None, interrupted=False, **workload):
    """The result row of one run of SGLang's benchmark client, from its --output-file text (the last line counts).

    What the line does not hold (num_prompts, seed, workload: the DATASET_KEYS and SAMPLING_KEYS) comes from the
    arguments; the workload keys fall back to the line's random_input_len, random_output_len, max_concurrency and
    request_rate (input_len and output_len only for random prompts). The client reads acceptance length from
    /server_info and keeps no per-request verify count: accept_length is null, the client's figure is
    accept_length_server_info. Raises ValueError when the text holds no result line.
    """
    data = parse_client_output(text)
    completed = data.get('completed')
    if not isinstance(completed, int):
        raise ValueError('the client result line has no completed count')
    if num_prompts is None:
        num_prompts = completed
    random_prompts = workload.get('dataset_kind', 'random') == 'random'
    if not random_prompts:
        input_len = output_len = None
    values = dict(
        harness='sglang', stage=stage,
        concurrency=concurrency if concurrency is not None else data.get('max_concurrency'),
        num_prompts=num_prompts,
        input_len=input_len if input_len is not None or not random_prompts else data.get('random_input_len'),
        output_len=output_len if output_len is not None or not random_prompts else data.get('random_output_len'),
        request_rate=finite(request_rate if request_rate is not None else data.get('request_rate')), seed=seed,
        completed=completed, failed=num_prompts - completed, complete=completed == num_prompts and not interrupted,
        duration_s=finite(data.get('duration')),
        total_input_tokens=data.get('total_input_tokens'), total_output_tokens=data.get('total_output_tokens'),
        output_throughput=finite(data.get('output_throughput')), request_throughput=finite(data.get('request_throughput')),
        requests=completed if interrupted else num_prompts,
        mean_output_len=(float(data['total_output_tokens']) / completed
                         if completed and isinstance(data.get('total_output_tokens'), int) else None),
        errors=_first_errors(data.get('errors') or ()), raw_file=raw_file,
    )
    values.update(workload)
    values.update(accept_fields([], server_accept=finite(data.get('accept_length'))))
    for key in STAT_KEYS:
        values[key] = finite(data.get(key))
    return result_row(**values)


# Of a cell's repeats: what its summary adds up, and what it takes if any repeat has it.
SUMMED_KEYS = ('completed', 'failed', 'requests', 'total_input_tokens', 'total_output_tokens')
ANY_KEYS = ('accept_length_flag',)
# What a summary takes from the first repeat that has it: the run's keys, which every repeat of a cell shares.
SHARED_KEYS = ('harness', 'stage', 'concurrency', 'num_prompts', 'input_len', 'output_len', 'request_rate', 'burstiness', 'seed',
               'repeats', 'warmup_requests', 'accept_length_source', 'energy_method', 'energy_backend', 'power_source',
               'energy_note', 'metrics_note') + DATASET_KEYS + SAMPLING_KEYS
# The list-valued keys: of several repeats, the histogram is summed element-wise, the others averaged element-wise.
LIST_KEYS = ('accept_histogram', 'accept_by_position', 'cache_hit_rate_by_turn')


def cell_summary(rows):
    """The summary of one cell's repeat rows (in repeat order), a row of the same keys: a single row as it is; of
    several, the run's keys, counts summed, complete when every repeat is, each other number the mean of the repeats
    that have it (output_throughput and accept_length included), the list keys (LIST_KEYS) position by position,
    errors the first few of all, repeat and the raw file names null. The report computes its statistics from the files, not from this."""
    rows = list(rows)
    if len(rows) == 1:
        return dict(rows[0])
    summary = result_row()
    for key in RESULT_KEYS:
        values = [row.get(key) for row in rows if row.get(key) is not None]
        if key in ('schema_version', 'repeat', 'raw_file', 'telemetry_file', 'metrics_file'):
            continue
        if key in SHARED_KEYS:
            summary[key] = values[0] if values else None
        elif key in SUMMED_KEYS:
            summary[key] = sum(values) if values else None
        elif key == 'complete':
            summary[key] = all(row.get('complete') is True for row in rows)
        elif key in ANY_KEYS:
            summary[key] = any(values) if values else None
        elif key in LIST_KEYS:
            summary[key] = _elementwise(values, sum if key == 'accept_histogram' else None)
        elif key == 'gpu_throttled':
            summary[key] = sorted(set(name for value in values for name in value)) if values else None
        elif key == 'errors':
            summary[key] = _first_errors(error for row in rows for error in row.get('errors') or ())
        else:
            numbers = [finite(value) for value in values if finite(value) is not None]
            summary[key] = math.fsum(numbers) / len(numbers) if numbers else None
    return summary


def _elementwise(lists, combine=None):
    """Lists of numbers (None allowed) combined position by position: combine(numbers) (default: their mean); None at
    a position none has, None when there are no lists."""
    lists = [value for value in lists if isinstance(value, list)]
    if not lists:
        return None
    combined = []
    for index in range(max(len(value) for value in lists)):
        numbers = [value[index] for value in lists if index < len(value) and finite(value[index]) is not None]
        if not numbers:
            combined.append(None)
        else:
            combined.append(combine(numbers) if combine else math.fsum(numbers) / len(numbers))
    return combined


def _first_errors(errors):
    """The first few distinct non-empty error texts, shortened."""
    seen = []
    for error in errors:
        text = (error or '').strip()[:300]
        if text and text not in seen:
            seen.append(text)
            if len(seen) == MAX_ERRORS:
                break
    return seen
