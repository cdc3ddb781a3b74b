# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The collection's shared contracts, each named here once (community.docker's module_utils/_common*.py style).

Private to the specdec.bench collection; standard library only, so modules can ship it to a bare Python 3.9 host.
- ID_PATTERN: campaign, stage, TP, run and process names (they become folder and unit names).
- RESULTS_LAYOUT: the file names of a campaign's results folder; bench_stage writes them, collect and report read them.
- temperature_tag: a sampling temperature as it appears in a result's file name; rate_tag the same for a request rate.
- atomic_write: write-and-rename, so a reader sees the old or the new content and never a part.
- finite: a number as float, or None for what strict JSON cannot hold.
- file_sha256: a file's sha256, read in blocks.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import tempfile
import time

# A campaign, stage, TP entry, training run or process name: it names folders and systemd units, so no "/", no
# spaces, no shell characters, no leading dot or dash.
ID_PATTERN = '[a-z0-9][a-z0-9._-]*'
ID_RE = re.compile(ID_PATTERN + r'\Z')
ID_MAX_LEN = 64

# <results root>/<campaign>/ holds RESULTS_LAYOUT['campaign'] and one folder per stage id with the other files.
# {dataset}, {temperature}, {concurrency} and {repeat} are filled per harness run (Python str.format; results_file
# writes the temperature with temperature_tag). A run with no datasets in the spec is dataset 'random'; repeats are
# numbered from 1 (a spec's `repeats: N` measures each dataset, temperature and concurrency N times).
RESULTS_LAYOUT = {
    # in <root>/<campaign>/
    'campaign': 'campaign.json',
    # the last run's wall clock and page-cache warm-up: {campaign_started, campaign_finished, page_cache_warmup_s}
    'timing': 'timing.json',
    # a prompt set's grading references (answers, tests), named by their sha256 (status.json's datasets name it):
    # JSON lines {"id", "kind", ...} as plugins/plugin_utils/datasets.py writes them; the report grades from them
    'references': 'references/{sha256}.jsonl',
    # in <root>/<campaign>/<stage id>/
    'status': 'status.json',
    'result': 'result-{dataset}-t{temperature}-c{concurrency}-r{repeat}.json',
    'raw': 'raw-{dataset}-t{temperature}-c{concurrency}-r{repeat}.jsonl',
    # the stage's GPUs' telemetry during one measured repeat (CSV, _telemetry.SERIES_COLUMNS)
    'telemetry': 'telemetry-{dataset}-t{temperature}-c{concurrency}-r{repeat}.csv',
    'server_info': 'server_info.json',
    'gpus': 'gpus.json',
    'unit': 'unit.service',
    # where PID 1 is not systemd: the supervisor's definition of the server, as it ran
    'service': 'service.json',
    'journal': 'journal.txt',
    # the load family: open-loop runs at a request rate and the extra closed-loop concurrencies, named with
    # the rate ({rate}: rate_tag) so the grid's result-...-c{concurrency}-r{repeat}.json names never match them
    'load_result': 'result-{dataset}-t{temperature}-c{concurrency}-q{rate}-r{repeat}.json',
    'load_raw': 'raw-{dataset}-t{temperature}-c{concurrency}-q{rate}-r{repeat}.jsonl',
    'load_telemetry': 'telemetry-{dataset}-t{temperature}-c{concurrency}-q{rate}-r{repeat}.csv',
    # a load run's seeded arrival schedule: a JSON list of seconds from the run's start, one per conversation
    'arrivals': 'arrivals-{dataset}-t{temperature}-c{concurrency}-q{rate}.json',
    # a capacity search's points and capacity ({kind}: concurrency or request_rate)
    'search': 'search-{dataset}-t{temperature}-{kind}.json',
}

# The names of a run's files before repeats (0.5): a reader takes such a file as repeat 1 of its run.
RESULTS_LAYOUT_BEFORE_REPEATS = {
    'result': 'result-{dataset}-t{temperature}-c{concurrency}.json',
    'raw': 'raw-{dataset}-t{temperature}-c{concurrency}.jsonl',
}

CHUNK = 1 << 20


def utc_stamp(when=None):
    """An epoch time (now by default) as ISO 8601 UTC with milliseconds, '2026-12-02T14:00:00.125Z': status.json's
    started and finished, so a stage's wall time (and its orchestration, the rest of it) is good to a millisecond."""
    when = time.time() if when is None else when
    whole = int(when)
    return '%s.%03dZ' % (time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(whole)), min(999, int(round((when - whole) * 1000))))


def is_id(value, max_len=ID_MAX_LEN):
    """True for a str that matches ID_PATTERN and is at most max_len characters long."""
    return isinstance(value, str) and len(value) <= max_len and ID_RE.match(value) is not None


def temperature_tag(temperature):
    """A temperature as file names write it: '%g' (0 -> '0', 0.7 -> '0.7', 1.0 -> '1')."""
    return '%g' % float(temperature)


def rate_tag(rate):
    """A request rate as file names write it: 'inf' for an infinite or unset rate (None, 'inf', float('inf')), else
    '%g' (2.0 -> '2', 0.5 -> '0.5')."""
    if rate is None or (isinstance(rate, str) and rate.strip().lower() in ('inf', '+inf', 'infinity')):
        return 'inf'
    rate = float(rate)
    return 'inf' if math.isinf(rate) else '%g' % rate


def results_file(name, **fields):
    """The file name RESULTS_LAYOUT gives `name`, with its fields (dataset=, temperature=, concurrency=, repeat=)
    filled in; a temperature given as a number, or as a number's text ('0.0', as a template renders a float), is
    written by temperature_tag, so every writer and reader names a run's files alike. repeat defaults to 1."""
    fields.setdefault('repeat', 1)
    temperature = fields.get('temperature')
    if temperature is not None and not isinstance(temperature, bool):
        try:
            fields['temperature'] = temperature_tag(temperature)
        except (TypeError, ValueError):
            pass  # not a number: left as given, for the caller's own pattern ('*' in a glob)
    return RESULTS_LAYOUT[name].format(**fields)


def atomic_write(path, data, mode=0o644, fsync=False, unchanged_ok=False):
    """Write `data` (str or bytes) to `path` through a temporary file in the same folder and a rename.

    Returns False without writing when unchanged_ok is set and the file already holds exactly `data`, else True.
    The folder must exist. A failure leaves the old file as it was and no temporary file behind.
    """
    if isinstance(data, str):
        data = data.encode('utf-8')
    if unchanged_ok:
        try:
            with open(path, 'rb') as handle:
                if handle.read(len(data) + 1) == data:
                    return False
        except (FileNotFoundError, NotADirectoryError):
            pass
    directory = os.path.dirname(path) or '.'
    fd, tmp = tempfile.mkstemp(dir=directory, prefix='.%s.' % os.path.basename(path), suffix='.tmp')
    try:
        with os.fdopen(fd, 'wb') as handle:
            handle.write(data)
            if fsync:
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
    return True


def finite(value):
    """A number as float, or None for None, booleans, non-numbers, NaN and infinities (which strict JSON cannot hold)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        value = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return value if math.isfinite(value) else None


def file_sha256(path, chunk=CHUNK):
    """The hex sha256 of the file at `path`, read `chunk` bytes at a time."""
    digest = hashlib.sha256()
    with open(path, 'rb') as handle:
        for block in iter(lambda: handle.read(chunk), b''):
            digest.update(block)
    return digest.hexdigest()
