# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One harness run of bench_run, whichever harness drives it: its limits, its row's workload keys, its files.

Private to the specdec.bench collection; standard library only. The drivers are builtin_driver (the builtin
load generator) and sglang_client (SGLang's own benchmark client); both take bench_run's params and the limits.
"""

from __future__ import annotations

import csv
import json
import os
import time

from ansible_collections.specdec.bench.plugins.module_utils._common import atomic_write, finite, rate_tag, results_file
from .sglang_http import CONNECTION_ERRORS, HTTPStatusError, TooLarge, get_text
from ansible_collections.specdec.bench.plugins.module_utils._telemetry import (
    SERIES_COLUMNS,
    Telemetry,
    energy_figures,
    gpu_summary,
    merge,
    series_rows,
)

# The derived limits (see bench_run's options): slow enough for any healthy server, so only a broken one meets them.
CONNECT_S = 60.0  # connecting and queueing, before any prefill
PREFILL_TOKENS_PER_S = 2000.0  # prompt tokens a server prefills a second at least
DECODE_S_PER_TOKEN = 0.5  # seconds an output token takes at most
STOP_GRACE_S = 10.0  # after SIGTERM, before SIGKILL; also how long bench_run waits on a run past its deadline


# The keys of bench_run's `dataset` option that a row records, by row key.
DATASET_ROW_KEYS = (('dataset_kind', 'kind'), ('dataset_source', 'source'), ('dataset_source_sha256', 'source_sha256'),
                    ('dataset_sha256', 'normalized_sha256'), ('prompts_sha256', 'prompts_sha256'),
                    ('template_sha256', 'template_sha256'))


def run_limits(params, shape=None):
    """{request_timeout, request_deadline, run_deadline} in seconds: the options where given, else derived from the
    workload (see bench_run's DOCUMENTATION). shape, for a prompts file: {input_len, output_len, num_prompts} of
    its longest conversation (prompt characters, an upper bound of its tokens; max_new_tokens times its turns)."""
    shape = dict(params, **(shape or {}))
    timeout = params['request_timeout']
    if timeout is None:
        timeout = CONNECT_S + shape['input_len'] * params['concurrency'] / PREFILL_TOKENS_PER_S
    request = params['request_deadline']
    if request is None:
        request = timeout + shape['output_len'] * DECODE_S_PER_TOKEN
    run = params['run_deadline']
    if run is None:
        rate = finite(params['request_rate'])
        waves = -(-shape['num_prompts'] // params['concurrency'])
        run = (2.0 * shape['num_prompts'] / rate if rate else 0.0) + waves * request
    return dict(request_timeout=timeout, request_deadline=request, run_deadline=run)


def prompts_shape(records, max_new_tokens):
    """run_limits's shape of a prompts file's records: its longest conversation's prompt characters and answers,
    max_new_tokens per request, one request per turn."""
    longest = max(sum(len(segment) for segment in record['segments']) + max_new_tokens * (len(record['segments']) - 1)
                  for record in records)
    return dict(input_len=longest, output_len=max_new_tokens, num_prompts=sum(len(r['segments']) for r in records))


def dataset_name(params):
    """The run's dataset name: the `dataset` option's name, else 'random'."""
    return (params.get('dataset') or {}).get('name') or 'random'


def run_files(output_dir, dataset, temperature, concurrency, repeat=1, rate=None, load=False):
    """(result file, raw output, the SGLang client's console log) of one run (one repeat of a cell), as
    RESULTS_LAYOUT names them: a grid run's names, or with load (bench_run's name_rate) the load family's, which carry
    the request rate (rate_tag: 'inf' for None)."""
    fields = dict(dataset=dataset, temperature=temperature, concurrency=concurrency, repeat=repeat)
    if load:
        fields['rate'] = rate_tag(rate)
    raw = os.path.join(output_dir, results_file('load_raw' if load else 'raw', **fields))
    return os.path.join(output_dir, results_file('load_result' if load else 'result', **fields)), raw, os.path.splitext(raw)[0] + '.log'


def arrivals_path(output_dir, dataset, temperature, concurrency, rate=None):
    """A load run's arrivals file (RESULTS_LAYOUT's 'arrivals')."""
    return os.path.join(output_dir, results_file('arrivals', dataset=dataset, temperature=temperature,
                                                 concurrency=concurrency, rate=rate_tag(rate)))


def telemetry_path(result_path):
    """The telemetry series file beside a run's result file (RESULTS_LAYOUT's 'telemetry', same fields)."""
    name = os.path.basename(result_path)
    if not (name.startswith('result-') and name.endswith('.json')):
        raise ValueError('%s is not a result file name (result-....json)' % name)
    return os.path.join(os.path.dirname(result_path), 'telemetry-' + name[len('result-'):-len('.json')] + '.csv')


# ---------------------------------------------------------------------------------------------------------
# Energy of one measured repeat: the stage's GPUs sampled from just before its first request to just
# after its last response; never the warm-up. A telemetry failure never fails the run: the row's energy keys are
# null and energy_note says why.

TELEMETRY_CHOICES = ('auto', 'off', 'pynvml', 'ctypes', 'nvidia-smi')
IDLE_S = 0.5  # the GPUs' idle power is measured this long, after the cache flush and before the run


def energy_none(note):
    """The row's energy keys of a repeat measured without energy, with the reason."""
    return dict(energy_j=None, avg_power_w=None, idle_power_w=None, output_tokens_per_j=None, j_per_output_token=None,
                energy_method=None, energy_backend=None, energy_samples=None, power_source=None, gpu_throttled=None,
                telemetry_file=None, energy_note=note)


def energy_keys(figures, output_tokens, series_file=None, notes=()):
    """The row's energy keys from a Telemetry.stop() dict (or one of the same keys) and the run's output tokens."""
    derived = energy_figures(figures['energy_j'], output_tokens, figures['duration_s'])
    notes = [note for note in list(figures.get('notes') or ()) + list(notes) if note]
    return dict(energy_j=figures['energy_j'], avg_power_w=derived['avg_power_w'], idle_power_w=figures.get('idle_power_w'),
                output_tokens_per_j=derived['output_tokens_per_j'], j_per_output_token=derived['j_per_output_token'],
                energy_method=figures['method'] if figures['energy_j'] is not None else None,
                energy_backend=figures.get('backend'), energy_samples=figures.get('samples'),
                power_source=figures.get('power_source'), gpu_throttled=list(figures.get('throttled') or ()),
                telemetry_file=None if series_file is None else os.path.basename(series_file),
                energy_note='; '.join(notes) or None)


class EnergyMeter:
    """The telemetry of one measured repeat, for bench_run's drivers; it never raises.

        meter = EnergyMeter(params, series_path)  # params: bench_run's (telemetry, telemetry_interval, gpus)
        try:
            meter.begin()                         # idle power, then start(): right before the first request
            ...                                   # the measured run
            meter.end()                           # right after the last response: figures and the series file
        finally:
            meter.close()
        row.update(meter.keys(total_output_tokens))

    window(t0, t1), before end(), narrows the figures to [t0, t1] (wall clock) by the samples, for a client whose
    run starts and ends inside the sampled span (SGLang's, with its start-up and warm-up).
    """

    def __init__(self, params, series_path):
        self.series_path = series_path
        self.telemetry = None
        self.figures = None
        self.note = None
        self.span = None
        backend = params.get('telemetry') or 'auto'
        gpus = [gpu for gpu in params.get('gpus') or () if gpu]
        if backend == 'off':
            self.note = 'telemetry off'
        elif not gpus:
            self.note = 'no GPUs given (gpus): no telemetry'
        else:
            self._guard(lambda: setattr(self, 'telemetry', Telemetry(
                gpus, interval_s=float(params.get('telemetry_interval') or 0.1), backend=backend)))

    def _guard(self, action):
        """Run action; on any error: the note, and the telemetry closed (the run goes on without energy)."""
        try:
            action()
        except Exception as error:  # pylint: disable=broad-exception-caught  # telemetry must never fail a run
            self.note = self.note or 'telemetry failed: %s: %s' % (type(error).__name__, error)
            self.close()
            self.telemetry = None

    def begin(self):
        if self.telemetry is not None:
            self._guard(lambda: (self.telemetry.idle(IDLE_S), self.telemetry.start()))

    def window(self, t0, t1):
        self.span = (t0, t1)

    def end(self):
        if self.telemetry is not None:
            self._guard(self._end)

    def _end(self):
        figures = self.telemetry.stop()
        if self.span is not None:
            # inside the sampled span only: nothing is known of the GPUs outside it; none of it inside: the whole span
            self.span = (max(self.span[0], self.telemetry.t_start), min(self.span[1], self.telemetry.t_stop))
            if self.span[1] <= self.span[0]:
                self.span = None
        if self.span is None:
            self.telemetry.write_series(self.series_path)
        else:
            t0, t1 = self.span
            figures = dict(figures, **window_figures(self.telemetry, t0, t1))
            write_series(self.series_path, series_rows(self.telemetry.samples, t0, t1))
        self.figures = figures

    def close(self):
        if self.telemetry is not None:
            try:
                self.telemetry.close()
            except Exception:  # pylint: disable=broad-exception-caught  # closing must not hide the run's own outcome
                pass

    def keys(self, output_tokens):
        """The row's energy keys (energy_none with the reason when nothing was measured)."""
        if self.figures is None:
            return energy_none(self.note or 'telemetry did not run')
        return energy_keys(self.figures, output_tokens, self.series_path)


def window_figures(telemetry, t0, t1):
    """A stopped Telemetry's figures over [t0, t1] inside its span, by its samples (its counters bound only its own
    span): method 'samples', with a note saying so."""
    per_gpu = [gpu_summary(uuid, telemetry.samples, t0, t1) for uuid in telemetry.uuids]
    figures = merge(per_gpu, t1 - t0)
    figures['per_gpu'] = per_gpu
    figures['notes'] = list(telemetry.result.get('notes') or ()) + [
        'energy over the client\'s measured run (its start-up and warm-up excluded), by power samples']
    return figures


def write_series(path, rows):
    """A telemetry series file of series_rows's rows (the columns of _telemetry.SERIES_COLUMNS)."""
    with open(path, 'w', newline='', encoding='utf-8') as handle:
        writer = csv.writer(handle)
        writer.writerow(SERIES_COLUMNS)
        writer.writerows(rows)
    return len(rows)


# ---------------------------------------------------------------------------------------------------------
# The server's Prometheus /metrics (SGLang's --enable-metrics) of one measured repeat: scraped right before and right
# after it (outside the energy window: the idle half second between moves no counter), kept raw beside the raw log;
# the report takes the deltas (plugins/plugin_utils/server_metrics.py). A scrape never fails the run: the row's
# metrics_file is then null and metrics_note says why.

METRICS_MAX_BYTES = 8 << 20  # a /metrics text longer than this is dropped (SGLang's is tens of KiB)
METRICS_TIMEOUT_S = 10.0
NO_METRICS = 'the server serves no /metrics (SGLang needs --enable-metrics)'
METRICS_OFF = 'metrics off: the stage runs SGLang without --enable-metrics'
METRICS_SGLANG = 'the sglang harness (SGLang\'s own client) does not scrape /metrics'


def scrape_metrics(base_url, timeout=METRICS_TIMEOUT_S, max_bytes=None, clock=time.time):
    """One GET of base_url/metrics: ({"t": unix time of the answer, "text": its text}, None) or (None, why not).
    max_bytes: METRICS_MAX_BYTES unless given."""
    max_bytes = METRICS_MAX_BYTES if max_bytes is None else max_bytes
    try:
        text = get_text(base_url.rstrip('/') + '/metrics', timeout=timeout, max_bytes=max_bytes)
    except HTTPStatusError as exc:
        return None, NO_METRICS if exc.status == 404 else 'GET /metrics failed: %s' % exc
    except TooLarge:
        return None, 'GET /metrics answered more than %d bytes; the scrape is dropped' % max_bytes
    except CONNECTION_ERRORS as exc:
        return None, 'GET /metrics failed: %s: %s' % (type(exc).__name__, exc)
    return {'t': round(clock(), 6), 'text': text}, None


class MetricsScrape:
    """The /metrics of one measured repeat, for the builtin driver; it never raises.

        scrape = MetricsScrape(base_url, enabled, path)   # path: the file beside the raw log
        scrape.before()                                   # right before the run
        ...                                               # the measured run
        scrape.after()                                    # right after it: the file is written
        row.update(scrape.keys())
    """

    def __init__(self, base_url, enabled, path, scrape=scrape_metrics):
        self.base_url = base_url
        self.path = path
        self.scrape = scrape
        self.snapshots = {}
        self.note = None if enabled else METRICS_OFF
        self.written = False

    def _take(self, when):
        if self.note is None:
            self.snapshots[when], self.note = self.scrape(self.base_url)

    def before(self):
        self._take('before')

    def after(self):
        self._take('after')
        if self.note is not None:
            return
        try:
            atomic_write(self.path, json.dumps({'before': self.snapshots['before'], 'after': self.snapshots['after']}) + '\n')
            self.written = True
        except (OSError, ValueError) as exc:
            self.note = 'cannot write %s: %s' % (os.path.basename(self.path), exc)

    def keys(self):
        """The row's METRICS_KEYS."""
        if self.written:
            return dict(metrics_file=os.path.basename(self.path), metrics_note=None)
        return dict(metrics_file=None, metrics_note=self.note or 'not scraped: the run did not end')


def run_burstiness(params):
    """The row's burstiness: the gamma shape of the arrivals of a run at a finite rate; null at an infinite rate (no
    arrivals drawn)."""
    return float(params.get('burstiness') or 1.0) if finite(params['request_rate']) else None


def workload(params, num_prompts=None, turns=None):
    """The row's workload, dataset and sampling keys; an infinite rate is null (strict JSON has no infinity).
    num_prompts: the records of a prompts file (else the option); turns: the turns run ('all' or 'first'; null for
    random prompts)."""
    dataset = params.get('dataset') or {}
    prompts = bool(params.get('prompts_file'))
    values = dict(concurrency=params['concurrency'],
                  num_prompts=params['num_prompts'] if num_prompts is None else num_prompts,
                  input_len=None if prompts else params['input_len'], output_len=None if prompts else params['output_len'],
                  request_rate=finite(params['request_rate']), burstiness=run_burstiness(params), seed=params['seed'],
                  stage=params['stage'],
                  dataset=dataset_name(params), turns=turns if prompts else None,
                  temperature=float(params.get('temperature') or 0.0), top_p=float(params.get('top_p', 1.0)),
                  top_k=int(params.get('top_k', -1)), ignore_eos=bool(params.get('ignore_eos', True)),
                  max_new_tokens=params.get('max_new_tokens') if prompts else params['output_len'],
                  repeats=int(params.get('repeats') or 1), warmup_requests=params.get('warmup_requests'))
    for row_key, key in DATASET_ROW_KEYS:
        values[row_key] = dataset.get(key)
    if not prompts:
        values['dataset_kind'] = values['dataset_kind'] or 'random'
    return values


# What a recorded repeat must share with this call's run to be reused instead of measured again: every field that
# shapes the requests sent (the prompts, their sampling, the load) and which server and client measured them.
# Not compared: repeats (a rerun with more repeats fills in), warmup_requests (discarded requests), the limits.
REUSE_KEYS = ('harness', 'stage', 'dataset', 'prompts_sha256', 'turns', 'num_prompts', 'input_len', 'output_len',
              'max_new_tokens', 'temperature', 'top_p', 'top_k', 'ignore_eos', 'seed', 'concurrency', 'request_rate',
              'burstiness')


def reusable_row(result_path, raw_path, expected, schema_version):
    """The recorded row of one repeat when it can stand for this call's: its result file holds a row of
    schema_version that is complete, of that repeat (expected['repeat']) and equal to `expected` in every REUSE_KEYS
    key, and its raw output is there. None otherwise (missing, unreadable, incomplete, another workload)."""
    try:
        with open(result_path, encoding='utf-8') as handle:
            row = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(row, dict) or row.get('schema_version') != schema_version or row.get('complete') is not True:
        return None
    if row.get('repeat') != expected['repeat'] or not os.path.isfile(raw_path):
        return None
    if 'burstiness' not in row:  # a row from before burstiness: its arrivals, if any, were Poisson
        row = dict(row, burstiness=1.0 if row.get('request_rate') is not None else None)
    if any(row.get(key) != expected.get(key) for key in REUSE_KEYS):
        return None
    return row


def write_row(path, row):
    """The result row as strict JSON, written atomically and synced: a run killed after it keeps it."""
    atomic_write(path, json.dumps(row, indent=2, sort_keys=False, allow_nan=False) + '\n', fsync=True)
