# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""specdec.bench.stage_run's engine: a whole stage on its host in one module call.

The steps are the engines of the modules stage_attempt, service, sglang_ready, bench_run (for each run of the grid,
then of the load family, then for each point of each capacity search: load_search with slo's evaluate_point) and
stage_record, called as plain functions with their options validated by the module's ARGUMENT_SPEC; a step's
StageError is a failure of the stage, recorded, never the end of the call. The outcome is the ok outcome's headline and
timings, or the failure's reason and evidence {step, journal}, step naming the module whose engine failed. The record
step always runs. stage_run(module, params) returns the module's result or raises StageError (bad options, a stage
locked by another run, a record that could not be written). Standard library only (the host's bare Python 3.9+).
"""

from __future__ import annotations

import copy
import errno
import fcntl
import json
import os
import select
import threading
import time
import traceback

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.errors import UnsupportedError

from ansible_collections.specdec.bench.plugins.module_utils import _service as service
from ansible_collections.specdec.bench.plugins.module_utils import _supervisor as supervisor
from ansible_collections.specdec.bench.plugins.module_utils._common import atomic_write, rate_tag, results_file, utc_stamp
from ansible_collections.specdec.bench.plugins.module_utils._lease import Lease, open_regular, renew
from . import bench_run as _bench_run
from . import load_search as _load_search
from . import slo as _slo
from . import sglang_ready as _sglang_ready
from . import stage_attempt as _stage_attempt
from . import stage_record as _stage_record
from .errors import StageError

# The steps, each named for the module whose engine it calls: a failure's evidence.step.
STEP_ATTEMPT = 'stage_attempt'
STEP_START = 'service'
STEP_READY = 'sglang_ready'
STEP_RUNS = 'bench_run'
# What status.json's headline keeps of each run's summary (bench_run's result), in the summary's order.
HEADLINE_KEYS = ('dataset', 'temperature', 'concurrency', 'output_throughput', 'accept_length', 'output_tokens_per_j', 'repeats')
PROGRESS_FILE = 'progress.json'
# Held (flock) while a stage runs, so that two runs of one stage never write its folder at once (a killed campaign's
# stage still stopping while a rerun starts): beside the lease file (<lease>.lock), else hidden in the stage folder.
LOCK_FILE = '.stage.lock'
# How often the lease is watched while a harness run measures.
WATCH_S = 1.0
# How often the progress file and the lease are looked after while the server loads.
TICK_S = 2.0
TRACEBACK_LINES = 12
# the schema of a capacity search's file (RESULTS_LAYOUT['search'])
SEARCH_SCHEMA_VERSION = 1
SEARCH_KEYS = ('kind', 'base', 'slo', 'min', 'max', 'resolution', 'max_runs', 'max_seconds')

ARGUMENT_SPEC = dict(
    dir=dict(type='path', required=True),
    keep=dict(type='list', elements='str', default=[]),
    unit=dict(type='str', required=True),
    backend=dict(type='str', default='systemd', choices=list(service.BACKENDS)),
    state_dir=dict(type='path', default=supervisor.DEFAULT_STATE_DIR),
    unit_dir=dict(type='path', default='/etc/systemd/system'),
    stop_timeout=dict(type='int', default=60),
    port=dict(type='int', required=True),
    ready_timeout=dict(type='float', default=900),
    journal_lines=dict(type='int', default=200),
    runs=dict(type='list', elements='dict', required=True),
    load_runs=dict(type='list', elements='dict', default=[]),
    searches=dict(type='list', elements='dict', default=[]),
    status=dict(type='dict', required=True),
    mode=dict(type='str', default='0640'),
    progress_file=dict(type='path'),
    lease_file=dict(type='path'),
    lease_timeout=dict(type='float', default=0),
)


def stage_failure(step_name, reason, journal=None, trace=None):
    """The stage's end as failed at a step: StageError with the evidence status.json keeps ({step, journal}, and the
    traceback of an unexpected exception)."""
    evidence = {'step': step_name, 'journal': list(journal or [])}
    if trace:
        evidence['traceback'] = trace
    return StageError(reason, evidence)


def check_lease(lease, step_name):
    """End the stage as failed at the step when its lease ran out."""
    reason = lease.expired()
    if reason:
        raise stage_failure(step_name, reason)


def validate(argument_spec, params):
    """params checked against argument_spec (a step's module's options), defaults filled in; ValueError naming every
    invalid option."""
    validator = ArgumentSpecValidator(copy.deepcopy(argument_spec))
    outcome = validator.validate(copy.deepcopy(params))
    if outcome.error_messages:
        raise ValueError('invalid options: %s' % '; '.join(
            ('unsupported parameter %s' if isinstance(error, UnsupportedError) else '%s') % error for error in outcome.errors))
    return outcome.validated_parameters


class LeaseWatch:
    """While a harness run measures (one long call), a thread watches the lease; when it expires it stops the server
    once, so the run ends at once instead of measuring for nobody, and remembers why."""

    def __init__(self, lease, stop_server, interval=WATCH_S):
        self.lease = lease
        self.stop_server = stop_server
        self.interval = interval
        self.reason = None
        self._done = threading.Event()
        self._thread = None

    def __enter__(self):
        if self.lease.path and self.lease.timeout > 0:
            self._thread = threading.Thread(target=self._watch, name='lease-watch', daemon=True)
            self._thread.start()
        return self

    def _watch(self):
        while not self._done.wait(self.interval):
            reason = self.lease.expired()
            if reason:
                self.reason = reason
                try:
                    self.stop_server()
                except Exception:  # pylint: disable=broad-exception-caught  # the record step stops it again
                    pass
                return

    def __exit__(self, *exc):
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        return False


class ServerGuard:
    """The server's guard for when this process dies (SIGKILL, the OOM killer) while its controller is gone too: the
    lease's watch dies with it and nothing else would stop the server. A watchdog of its own (double fork, a session of
    its own, its output to /dev/null) blocks on a pipe whose only writer is this process: `done()` writes one byte
    first; an end of file without it means this process died, and the watchdog stops the stage's server (up to its
    stop timeout). It keeps the stage's lock open meanwhile, so a rerun waits until the server is stopped."""

    DONE = b'd'

    # how long done() waits for the watchdog to end (and so to let go of the stage's lock it inherited)
    DONE_WAIT_S = 10

    def __init__(self, stop):
        self._write = None
        self._ended = None
        read_end, write_end = os.pipe()  # not inherited by what this process executes (O_CLOEXEC)
        # the watchdog holds ended_write until it exits: an end of file on ended_read says it let go of the lock
        ended_read, ended_write = os.pipe()
        child = os.fork()
        if child == 0:  # pragma: no cover  # the watchdog; tested by killing a stage_run process for real
            try:
                os.close(write_end)
                os.close(ended_read)
                os.setsid()
                if os.fork():
                    os._exit(0)
                devnull = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(devnull, fd)
                while True:
                    try:
                        data = os.read(read_end, 1)
                        break
                    except InterruptedError:
                        continue
                if data != ServerGuard.DONE:
                    stop()
            except BaseException:  # pylint: disable=broad-exception-caught
                pass
            finally:
                os._exit(0)
        os.close(read_end)
        os.close(ended_write)
        os.waitpid(child, 0)
        self._write = write_end
        self._ended = ended_read

    def done(self):
        """This process ends normally: the watchdog leaves the server alone (the record step stopped it). Returns once
        the watchdog has ended (at most DONE_WAIT_S), so that closing the stage's lock then releases it at once."""
        if self._write is not None:
            try:
                os.write(self._write, self.DONE)
            finally:
                os.close(self._write)
                self._write = None
        if self._ended is not None:
            try:
                deadline = time.monotonic() + self.DONE_WAIT_S
                while time.monotonic() < deadline:
                    ready = select.select([self._ended], [], [], max(0.0, deadline - time.monotonic()))[0]
                    if not ready or not os.read(self._ended, 64):
                        break
            finally:
                os.close(self._ended)
                self._ended = None


def make_parent(path):
    """The folder of a control file (progress, lease, lock) outside the stage folder, made when missing."""
    if path:
        try:
            os.makedirs(os.path.dirname(path), mode=0o750, exist_ok=True)
        except OSError:
            pass  # writing it then fails and says so


def hold_stage_lock(path, wait_s, clock=time.monotonic, sleep=time.sleep):
    """An open file holding the stage's flock at path, or None when it cannot be opened (a stage folder that is missing:
    the attempt step then fails and says so). Waits up to wait_s for an earlier run of the stage that still holds it
    (one that stops itself at its lease's end); raises RuntimeError naming its pid when it is still there. The file is
    opened without following a symbolic link: a link at its path is refused, naming it, and its target never written."""
    try:
        fd = open_regular(path, os.O_RDWR | os.O_CREAT, 0o640)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EINVAL):
            raise RuntimeError('%s is a symbolic link or not a regular file; refused (remove it)' % path)
        return None
    handle = os.fdopen(fd, 'r+', encoding='utf-8')
    deadline = clock() + wait_s
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES) or clock() >= deadline:
                handle.seek(0)
                holder = handle.read().strip() or '?'
                handle.close()
                raise RuntimeError('another run of this stage (pid %s) still holds %s after %d s' % (holder, path, wait_s))
            sleep(0.2)
    handle.seek(0)
    handle.truncate()
    handle.write('%d\n' % os.getpid())
    handle.flush()
    return handle


def lock_wait_s(lease_timeout, stop_timeout):
    """How long a run of a stage waits for an earlier run that still holds the stage's lock: that run stops itself
    within its lease (checked every WATCH_S), then stops its server (up to stop_timeout) and records; 30 s for the
    record. Without a lease, only the stop and the record."""
    return (lease_timeout + WATCH_S if lease_timeout else 0) + stop_timeout + 30


class Progress:
    """The progress file: rewritten atomically at each change, read by the controller while the stage runs."""

    def __init__(self, module, path, mode, stage, runs_total, started):
        self.module = module
        self.path = path
        self.mode = mode
        self.broken = False
        self.data = {'stage': stage, 'phase': 'starting', 'started': started, 'updated': started, 'ready_s': None,
                     'runs_total': runs_total, 'runs_done': 0, 'current': None, 'runs': [], 'status': None, 'reason': None}

    def write(self, **changes):
        self.data.update(changes)
        self.data['updated'] = round(time.time(), 3)
        if self.broken:
            return
        try:
            atomic_write(self.path, json.dumps(self.data, indent=1, sort_keys=True) + '\n', self.mode)
        except OSError as exc:  # progress is for the eyes only: the stage goes on without it
            self.broken = True
            self.module.warn('cannot write the progress file %s: %s' % (self.path, exc))

    def add_run(self, entry):
        runs = self.data['runs'] + [entry]
        self.write(runs=runs, runs_done=len(runs), current=None)


def dataset_of(args):
    return (args.get('dataset') or {}).get('name') or 'random'


def run_label(args):
    """'<dataset> t<temperature> c<concurrency>', as the role's loop labelled a harness run; a load run (name_rate)
    adds ' q<rate>' (rate_tag)."""
    label = '%s t%g c%d' % (dataset_of(args), args['temperature'], args['concurrency'])
    if args.get('name_rate'):
        label += ' q%s' % rate_tag(args.get('request_rate'))
    return label


def search_label(search):
    """'<dataset> t<temperature> search <kind>': a capacity search in the progress file and a failure's reason."""
    return '%s t%g search %s' % (dataset_of(search['base']), search['base']['temperature'], search['kind'])


def trace_tail():
    return traceback.format_exc().rstrip('\n').splitlines()[-TRACEBACK_LINES:]


def bench_options(run_args, p, base_url, where):
    """One run's bench_run options, validated, its output_dir, base_url and stage defaulted to the stage's."""
    args = dict(run_args)
    for key, value in (('output_dir', p['dir']), ('base_url', base_url), ('stage', p['status']['stage'])):
        if args.get(key) is None:
            args[key] = value
    try:
        return validate(_bench_run.ARGUMENT_SPEC, args)
    except ValueError as exc:
        raise StageError('%s has %s (the options of specdec.bench.bench_run)' % (where, exc))


def check_slo(target, where):
    """A search's SLO: {metric: {p, max}} with metrics of slo.METRICS (not both itl_ms and tpot_ms), p in (0, 100], max
    milliseconds above 0; StageError naming the field."""
    if not isinstance(target, dict) or not target:
        raise StageError('%s.slo must be a mapping of %s to {p, max}, got %r' % (where, ', '.join(_slo.METRICS), target))
    for metric, bound in target.items():
        if metric not in _slo.METRICS:
            raise StageError('%s.slo.%s is not an SLO metric; allowed: %s' % (where, metric, ', '.join(_slo.METRICS)))
        if not isinstance(bound, dict) or not isinstance(bound.get('max'), (int, float)) or not bound['max'] > 0:
            raise StageError('%s.slo.%s.max must be a number of milliseconds above 0, got %r' % (where, metric, bound))
        p = bound.get('p', _slo.DEFAULT_P)
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p <= 100:
            raise StageError('%s.slo.%s.p must be a percentile in (0, 100], got %r' % (where, metric, p))
    if 'itl_ms' in target and 'tpot_ms' in target:
        raise StageError('%s.slo has both itl_ms and tpot_ms; give one of them' % where)


def check_search(search, p, base_url, where):
    """A capacity search's options checked (SEARCH_KEYS), its base run validated as bench_run's with name_rate."""
    if not isinstance(search, dict) or set(search) != set(SEARCH_KEYS):
        raise StageError('%s must have the keys %s, got %s' % (where, ', '.join(SEARCH_KEYS),
                                                               ', '.join(sorted(search)) if isinstance(search, dict) else repr(search)))
    if not isinstance(search['base'], dict):
        raise StageError('%s.base must be the options of specdec.bench.bench_run, got %r' % (where, search['base']))
    base = bench_options(dict(search['base'], name_rate=True), p, base_url, where + '.base')
    if base['harness'] != 'builtin':
        raise StageError('%s.base.harness must be builtin: a search point reads each request\'s timings from the raw '
                         'file, which SGLang\'s client does not write, got %s' % (where, base['harness']))
    check_slo(search['slo'], where)
    try:
        _load_search.check_bounds(search['min'], search['max'], search['kind'], search['resolution'])
    except ValueError as exc:
        raise StageError('%s: %s' % (where, exc))
    for key, low in (('max_runs', 1), ('max_seconds', 0)):
        value = search[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value < float('inf') or (
                key == 'max_runs' and not isinstance(value, int)):
            allowed = 'an integer of 1 or more' if key == 'max_runs' else 'a number of seconds of 0 or more'
            raise StageError('%s.%s must be %s, got %r' % (where, key, allowed, value))
    return dict(search, base=base)


def check_params(p):
    """The options checked before anything runs; (mode as int, the runs', the load runs' validated bench_run options,
    the searches with their base validated)."""
    if not 1 <= p['port'] <= 65535:
        raise StageError('port must be 1 to 65535, got %d' % p['port'])
    for key in ('ready_timeout', 'lease_timeout'):
        if not 0 <= p[key] < float('inf'):
            raise StageError('%s must be a number of seconds of 0 or more, got %s' % (key, p[key]))
    for key in ('journal_lines', 'stop_timeout'):
        if p[key] < 0:
            raise StageError('%s must be 0 or more, got %d' % (key, p[key]))
    if not isinstance(p['status'].get('stage'), str) or not p['status']['stage']:
        raise StageError('status.stage must be the stage id (a string), got %r' % (p['status'].get('stage'),))
    try:
        mode = int(p['mode'], 8)
    except ValueError:
        raise StageError('mode must be an octal string such as 0640, got %r' % p['mode'])
    base_url = 'http://127.0.0.1:%d' % p['port']
    runs = [bench_options(args, p, base_url, 'runs[%d]' % number) for number, args in enumerate(p['runs'])]
    load_runs = [bench_options(dict(args, name_rate=True), p, base_url, 'load_runs[%d]' % number)
                 for number, args in enumerate(p.get('load_runs') or [])]
    searches = [check_search(search, p, base_url, 'searches[%d]' % number)
                for number, search in enumerate(p.get('searches') or [])]
    return mode, runs, load_runs, searches


def ok_status(base, started, ready, results, load_results=()):
    """The ok outcome: its headline (the grid's runs) and timings (every harness run's: the grid's, then load_results,
    the load runs' and the search points')."""
    headline = [dict((key, value) for key, value in result['result'].items() if key in HEADLINE_KEYS) for result in results]
    results = list(results) + list(load_results)
    warmups = [result.get('warmup_s') for result in results]
    return dict(
        base, status='ok', reason=None, started=started,
        headline=headline,
        timings={
            'ready_s': ready.get('ready_seconds'),
            'harness_s': round(sum(float(result.get('elapsed_s') or 0.0) for result in results), 4),
            'warmup_s': None if any(value is None for value in warmups) else round(sum(float(value) for value in warmups), 4),
            'measure_s': round(sum(float(result.get('measure_s') or 0.0) for result in results), 4),
            'idle_s': round(sum(float(result.get('idle_s') or 0.0) for result in results), 4),
        })


def failed_status(base, started, failure):
    """The failed outcome: failure is the StageError of stage_failure."""
    return dict(base, status='failed', reason=failure.reason, started=started, headline=[], evidence=dict(failure.evidence))


def step(engine, spec, params, step_name):
    """One step: engine(validated params); its result, or the stage's failure at step_name with the step's reason (and
    journal) when it raised StageError."""
    try:
        return engine(validate(spec, params))
    except StageError as exc:
        if 'step' in exc.evidence:  # the stage's own failure (its lease, checked while the step waited)
            raise
        raise stage_failure(step_name, exc.reason or 'step failed', exc.evidence.get('journal'))


def stop_server(module, p):
    """Stop the stage's server now (the lease ran out while a run measured); the record step stops it again."""
    service.manage(module, validate(service.ARGUMENT_SPEC, {
        'name': p['unit'], 'backend': p['backend'], 'state': 'stopped', 'state_dir': p['state_dir']}))


def one_run(module, p, args, lease, results):
    """One bench_run call, the lease watched while it measures, its result appended to results: (its result, failed,
    traceback or None); the stage's failure at once when the lease ran out (the server was stopped)."""
    check_lease(lease, STEP_RUNS)
    trace = None
    with LeaseWatch(lease, lambda: stop_server(module, p)) as watch:
        try:
            result, failed = _bench_run.bench_run(module, args), False
        except StageError as exc:
            result, failed = dict(exc.evidence, failed=True, msg=exc.reason), True
        except Exception as exc:  # pylint: disable=broad-exception-caught  # a run's crash is that run's failure
            trace = trace_tail()
            result, failed = {'failed': True, 'msg': '%s: %s' % (type(exc).__name__, exc)}, True
    results.append(result)
    if watch.reason:
        raise stage_failure(STEP_RUNS, watch.reason)
    return result, failed, trace


def progress_entry(label, args, result, failed):
    """A finished harness run in the progress file (a load run's with its request rate)."""
    summary = result.get('result') or {}
    entry = {'label': label, 'dataset': dataset_of(args), 'temperature': args['temperature'], 'concurrency': args['concurrency'],
             'output_throughput': summary.get('output_throughput'), 'accept_length': summary.get('accept_length'),
             'repeats': summary.get('repeats', args['repeats']), 'elapsed_s': result.get('elapsed_s'), 'failed': failed}
    if args.get('name_rate'):
        entry['request_rate'] = rate_tag(args.get('request_rate'))
    return entry


def run_each(module, p, runs, lease, progress, results, failures):
    """Every run in order, each one even after an earlier one failed (as the role's loop did): its result appended to
    results, a failure's (label, message, traceback) to failures; the stage's failure at once when the lease ran out."""
    for args in runs:
        label = run_label(args)
        progress.write(current=label)
        result, failed, trace = one_run(module, p, args, lease, results)
        progress.add_run(progress_entry(label, args, result, failed))
        if failed:
            failures.append((label, result.get('msg') or 'task failed', trace))


def raise_failures(failures, total):
    """The stage's failure when any run or search failed: the first failure's label and message, with how many."""
    if failures:
        label, msg, trace = failures[0]
        reason = '%s: %s' % (label, msg)
        if len(failures) > 1:
            reason = '%d of %d runs failed; the first, %s' % (len(failures), total, reason)
        raise stage_failure(STEP_RUNS, reason, trace=trace)


def read_records(path):
    """The request records of a raw file (JSON lines); a line that is not a JSON object is skipped."""
    records = []
    with open(path, encoding='utf-8') as handle:
        for line in handle:
            line = line.strip()
            if line:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict):
                    records.append(record)
    return records


def raw_path(row):
    """The raw file of a repeat's row in bench_run's results: beside its result file, named as RESULTS_LAYOUT's load_raw
    is beside load_result (result-<name>.json, raw-<name>.jsonl), so a row reused from an earlier attempt is read where
    its files are now; the row's raw_file when it has no result file."""
    name = os.path.basename(row.get('result_file') or '')
    if name.startswith('result-') and name.endswith('.json'):
        return os.path.join(os.path.dirname(row['result_file']), 'raw-%s.jsonl' % name[len('result-'):-len('.json')])
    return row['raw_file']


class SearchPointFailed(Exception):
    """A capacity search's harness run failed: the search ends, the stage fails as for a failed run."""

    def __init__(self, msg, trace=None):
        super().__init__(msg)
        self.msg = msg
        self.trace = trace


def point_args(search, value):
    """The bench_run options of a search point: concurrency value at an infinite rate, or request rate value at the
    base's concurrency (the plan's max_concurrency) and burstiness."""
    if search['kind'] == 'concurrency':
        return dict(search['base'], concurrency=int(value), request_rate=float('inf'), burstiness=1.0, name_rate=True)
    return dict(search['base'], request_rate=float(value), name_rate=True)


def measure_point(module, p, search, value, lease, progress, point_results):
    """One point of a search: bench_run at it (files named with its rate), then slo.evaluate_point over the raw
    records of its measured repeats, with 'runs' (its repeats) and 'result_files' (their basenames)."""
    args = point_args(search, value)
    label = '%s: %s' % (search_label(search), run_label(args))
    progress.write(current=label)
    result, failed, trace = one_run(module, p, args, lease, point_results)
    if failed:
        raise SearchPointFailed('%s: %s' % (run_label(args), result.get('msg') or 'task failed'), trace)
    rows = result.get('results') or []
    point = _slo.evaluate_point([read_records(raw_path(row)) for row in rows], search['slo'])
    point['runs'] = len(rows)
    point['result_files'] = [os.path.basename(row['result_file']) for row in rows]
    return point


def search_file_data(search, found, stage):
    """What a search's file holds: load_search.search's result with the schema version, the stage, the dataset, the
    temperature and the SLO."""
    return dict(found, schema_version=SEARCH_SCHEMA_VERSION, stage=stage, dataset=dataset_of(search['base']),
                temperature=search['base']['temperature'], slo=search['slo'])


def run_search(module, p, search, lease, progress, point_results, clock=time.monotonic):
    """One capacity search (load_search.search with measure_point), its file written in the stage folder
    (RESULTS_LAYOUT['search']); returns its summary for the module's result."""
    found = _load_search.search(
        lambda value: measure_point(module, p, search, value, lease, progress, point_results),
        search['min'], search['max'], kind=search['kind'], resolution=search['resolution'], max_runs=search['max_runs'],
        max_seconds=float(search['max_seconds']), repeats=search['base']['repeats'], clock=clock)
    data = search_file_data(search, found, p['status']['stage'])
    path = os.path.join(p['dir'], results_file('search', dataset=data['dataset'], temperature=data['temperature'],
                                               kind=search['kind']))
    atomic_write(path, json.dumps(data, indent=1, allow_nan=False) + '\n', fsync=True)
    return {'kind': search['kind'], 'dataset': data['dataset'], 'temperature': data['temperature'],
            'capacity': found['capacity'], 'capacity_low': found['capacity_low'], 'capacity_high': found['capacity_high'],
            'binding': found['binding'], 'bound_by': found['bound_by'], 'runs': found['runs'], 'points': len(found['points']),
            'search_file': path}


def search_each(module, p, searches, lease, progress, out, failures):
    """Every search in order, each one even after an earlier one failed; a failed point ends its search (no file), a
    failure as a failed run's."""
    for search in searches:
        label = search_label(search)
        started = time.monotonic()
        point_results = []
        try:
            summary, failed, trace = run_search(module, p, search, lease, progress, point_results), False, None
        except SearchPointFailed as exc:
            summary, failed, trace = {'kind': search['kind'], 'dataset': dataset_of(search['base']),
                                      'temperature': search['base']['temperature'], 'failed': True, 'msg': exc.msg}, True, exc.trace
        finally:
            out['search_runs'].extend(point_results)
        out['searches'].append(summary)
        progress.add_run({'label': label, 'dataset': dataset_of(search['base']), 'temperature': search['base']['temperature'],
                          'concurrency': None, 'capacity': summary.get('capacity'), 'bound_by': summary.get('bound_by'),
                          'points': summary.get('points'), 'elapsed_s': round(time.monotonic() - started, 4),
                          'failed': failed})
        if failed:
            failures.append((label, summary['msg'], trace))


def harness_runs(module, p, runs, lease, progress, out, load_runs=(), searches=()):
    """The grid's runs, then the load runs, then the capacity searches, each even after an earlier one failed (as the
    role's loop did); the stage's failure when any failed, with the first failure's message, or at once when the lease
    ran out (the server was stopped)."""
    failures = []
    run_each(module, p, runs, lease, progress, out['runs'], failures)
    run_each(module, p, load_runs, lease, progress, out['load_runs'], failures)
    search_each(module, p, searches, lease, progress, out, failures)
    raise_failures(failures, len(runs) + len(load_runs) + len(searches))


def stage_run(module, params):
    """The stage run and recorded: the module's result (its status ok or failed); StageError when nothing could start
    (bad options, the stage locked by another run) or the record could not be written."""
    p = params
    progress_file = p['progress_file'] or os.path.join(p['dir'], PROGRESS_FILE)
    mode, runs, load_runs, searches = check_params(p)
    if module.check_mode:
        return dict(changed=False, skipped=True, msg='check mode: nothing started', progress_file=progress_file,
                    status=None, attempt=None, ready=None, runs=[], load_runs=[], searches=[], record=None)

    for path in (progress_file, p['lease_file']):
        make_parent(path)
    try:
        # an earlier run of this stage stops itself within its lease: wait that long for it, no longer
        lock = hold_stage_lock(p['lease_file'] + '.lock' if p['lease_file'] else os.path.join(p['dir'], LOCK_FILE),
                               lock_wait_s(p['lease_timeout'], p['stop_timeout']))
    except RuntimeError as exc:
        raise StageError('%s: %s; nothing was started or written' % (p['status']['stage'], exc),
                         dict(status=None, progress_file=progress_file))
    start = time.time()
    started = utc_stamp(start)
    if p['lease_file'] and os.path.islink(p['lease_file']):
        if lock is not None:
            lock.close()
        raise StageError('%s: the lease file %s is a symbolic link; refused (remove it); nothing was started or written'
                         % (p['status']['stage'], p['lease_file']), dict(status=None, progress_file=progress_file))
    if p['lease_file']:
        # this run's lease starts now, on this process's monotonic clock: a lease file an earlier run left is not this
        # controller's; the touch only shows when it began
        renew(p['lease_file'])
    base = dict(p['status'])
    lease = Lease(p['lease_file'], p['lease_timeout'])
    guard = ServerGuard(lambda: service.stop(module, p['backend'], p['unit'], p['stop_timeout'], p['state_dir']))
    progress = Progress(module, progress_file, mode, base['stage'], len(runs) + len(load_runs) + len(searches), round(start, 3))
    out = {'attempt': None, 'ready': None, 'runs': [], 'load_runs': [], 'searches': [], 'search_runs': []}
    at_step = STEP_ATTEMPT
    try:
        check_lease(lease, at_step)
        out['attempt'] = step(_stage_attempt.stage_attempt, _stage_attempt.ARGUMENT_SPEC, {'dir': p['dir'], 'keep': p['keep']}, at_step)
        progress.write()

        at_step = STEP_START
        check_lease(lease, at_step)
        step(lambda params: service.manage(module, params), service.ARGUMENT_SPEC,
             {'name': p['unit'], 'backend': p['backend'], 'state': 'started', 'state_dir': p['state_dir']}, at_step)
        progress.write(phase='loading')

        at_step = STEP_READY
        check_lease(lease, at_step)
        last = [time.monotonic()]

        def tick():
            if time.monotonic() - last[0] >= TICK_S:
                last[0] = time.monotonic()
                check_lease(lease, STEP_READY)
                progress.write()

        out['ready'] = step(lambda params: _sglang_ready.sglang_ready(module, params, tick=tick), _sglang_ready.ARGUMENT_SPEC, {
            'port': p['port'], 'unit': p['unit'], 'backend': p['backend'], 'state_dir': p['state_dir'],
            'timeout': p['ready_timeout'], 'journal_lines': p['journal_lines']}, at_step)
        progress.write(phase='running', ready_s=out['ready'].get('ready_seconds'))

        at_step = STEP_RUNS
        harness_runs(module, p, runs, lease, progress, out, load_runs, searches)
        status = ok_status(base, started, out['ready'], out['runs'], out['load_runs'] + out['search_runs'])
    except StageError as failure:
        status = failed_status(base, started, failure)
    except Exception as exc:  # pylint: disable=broad-exception-caught  # never raised: recorded as the step's failure
        status = failed_status(base, started, stage_failure(at_step, '%s: %s' % (type(exc).__name__, exc), trace=trace_tail()))

    # always, as the role's always: keep the evidence, stop the server, write status.json
    progress.write(phase='recording', current=None)
    try:
        record, failed = _stage_record.stage_record(module, validate(_stage_record.ARGUMENT_SPEC, {
            'dir': p['dir'], 'unit': p['unit'], 'unit_dir': p['unit_dir'], 'backend': p['backend'], 'state_dir': p['state_dir'],
            'stop_timeout': p['stop_timeout'], 'base_url': 'http://127.0.0.1:%d' % p['port'], 'status': status,
            'journal_lines': p['journal_lines'], 'mode': p['mode']})), False
    except StageError as exc:
        record, failed = dict(exc.evidence, msg=exc.reason, failed=True), True
    except Exception as exc:  # pylint: disable=broad-exception-caught
        record, failed = {'msg': '%s: %s' % (type(exc).__name__, exc), 'traceback': trace_tail()}, True
    guard.done()
    if lock is not None:
        lock.close()  # releases the flock: the stage's folder is complete
    if failed:
        progress.write(phase='done', status='failed', reason='not recorded: %s' % record.get('msg'))
        raise StageError('%s: the stage could not be recorded: %s' % (base['stage'], record.get('msg')),
                         dict(out, changed=True, status=status, record=record, progress_file=progress_file))
    progress.write(phase='done', status=record['status']['status'], reason=record['status'].get('reason'))
    return dict(out, changed=True, status=record['status'], record=record, progress_file=progress_file)
