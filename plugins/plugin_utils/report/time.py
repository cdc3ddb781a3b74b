# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report: where the campaign's time went on each host, and its tables.

time_breakdown(host data of read.read_host) splits the campaign's wall time on a host into STAGES_OF_TIME:
- page-cache warm-up: timing.json's page_cache_warmup_s (the campaign's reading of the weights before its stages);
- server loads: each stage's timings.ready_s (status.json: from the start of the readiness wait to /health_generate);
- warm-up requests: each stage's timings.warmup_s (the sum of bench_run's warmup_s);
- measuring: each stage's timings.measure_s (bench_run's measure_s: the measured runs), else the sum of its results'
  duration_s (the load runs' and the capacity search's included), plus its timings.idle_s and timings.flush_s where
  recorded (the idle-power sampling and cache flushes before the measured runs);
- orchestration: the rest of each stage's wall time (finished - started): Ansible's tasks, the server's start and stop,
  the evidence, bench_run's own overhead; a stage whose warm-up was not timed (SGLang's client, or results from before
  the timings) has its warm-up here too;
- not split: the wall time of the stages that have no timings (a failed stage, or results from before them);
- waiting: the wall time outside the stages and the page-cache warm-up (between stages, before the first, after the last).
The rows add up to the wall time: from timing.json's campaign_started to campaign_finished, else from the first stage's
start to the last stage's end (extended to any stage outside timing.json's window: one of an earlier run of a resumed
campaign). Every stage counts with its last attempt: each attempt rewrites its status.json. A figure that cannot be
known is None ("unknown" in the tables), never a guess.

Pure functions; markdown_sections.time_markdown and latex_sections.time_latex render one host's breakdown.
"""

from __future__ import annotations

import datetime

from ansible_collections.specdec.bench.plugins.module_utils._common import RESULTS_LAYOUT, finite


# The campaign-level file the campaign writes beside campaign.json (tolerated absent).
TIMING_FILE = RESULTS_LAYOUT['timing']


# The rows of the breakdown, in order: key, label.
STAGES_OF_TIME = (
    ('page_cache', 'page-cache warm-up'),
    ('server_loads', 'server loads'),
    ('warmup', 'warm-up requests'),
    ('measuring', 'measuring'),
    ('orchestration', 'orchestration'),
    ('not_split', 'stages without timings'),
    ('waiting', 'waiting'),
)


UNKNOWN = 'unknown'


def parse_time(value):
    """An ISO 8601 UTC time (status.json's and timing.json's, '2026-12-02T14:00:00Z') as a timezone-aware datetime;
    None when absent or not such a time. A time without a zone is UTC."""
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    if text.endswith(('Z', 'z')):
        text = text[:-1] + '+00:00'
    try:
        parsed = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.timezone.utc)
    return parsed


def seconds(value):
    """A number of seconds as float: a finite number of 0 or more, or a string of one (a role's templated value);
    None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    number = finite(value) if isinstance(value, (int, float)) else None
    return number if number is not None and number >= 0 else None


def check_timing(doc):
    """timing.json as the campaign writes it: {campaign_started, campaign_finished: ISO times or null,
    page_cache_warmup_s: seconds or null}. None when it is, else why not."""
    if not isinstance(doc, dict):
        return 'the document is %s; allowed: an object' % type(doc).__name__
    for key in ('campaign_started', 'campaign_finished'):
        if doc.get(key) is not None and parse_time(doc[key]) is None:
            return '%s is %r; allowed: an ISO 8601 UTC time (2026-12-02T14:00:00Z) or null' % (key, doc[key])
    value = doc.get('page_cache_warmup_s')
    if value is not None and (isinstance(value, (bool, str)) or seconds(value) is None):
        return 'page_cache_warmup_s is %r; allowed: a finite number of seconds, 0 or more, or null' % (value,)
    return None


def _sum(values):
    """The sum of the known values; None when none is known."""
    known = [value for value in values if value is not None]
    return sum(known) if known else None


def _measured_s(entry):
    """The sum of the duration_s of a stage's results (every repeat found), the load family's (load runs and the capacity
    search's, read.py's 'load') included; None when it has none."""
    runs = list(entry['results'].values()) + list((entry.get('load') or {}).values())
    return _sum(seconds((result or {}).get('duration_s')) for results in runs for result in results.values())


def stage_time(entry):
    """One stage's times: {'stage', 'status', 'started', 'finished', 'wall_s', 'split', 'server_load_s', 'warmup_s',
    'measuring_s', 'orchestration_s', 'warmup_timed', 'measure_from_results'}; None for a stage that never ran."""
    status = entry.get('status')
    if status is None:
        return None
    started, finished = parse_time(status.get('started')), parse_time(status.get('finished'))
    wall = (finished - started).total_seconds() if started and finished else None
    timings = status.get('timings') if isinstance(status.get('timings'), dict) else {}
    ready, harness = seconds(timings.get('ready_s')), seconds(timings.get('harness_s'))
    item = {'stage': entry['stage']['id'], 'status': status.get('status'), 'started': status.get('started'),
            'finished': status.get('finished'), 'wall_s': wall, 'split': False, 'server_load_s': None, 'warmup_s': None,
            'measuring_s': None, 'orchestration_s': None, 'warmup_timed': False, 'measure_from_results': False,
            '_start': started, '_end': finished}
    if wall is None or ready is None or harness is None:
        return item
    measure = seconds(timings.get('measure_s'))
    if measure is None:
        measure = _measured_s(entry) or 0.0
        item['measure_from_results'] = True
    warmup = seconds(timings.get('warmup_s'))
    measuring = measure + (seconds(timings.get('idle_s')) or 0.0) + (seconds(timings.get('flush_s')) or 0.0)
    item.update(split=True, server_load_s=ready, warmup_s=warmup, warmup_timed=warmup is not None, measuring_s=measuring,
                orchestration_s=wall - ready - (warmup or 0.0) - measuring)
    return item


def _share(value, wall):
    return None if value is None or not wall or wall <= 0 else value / wall * 100.0


def _round(value, digits=3):
    return None if value is None else round(value, digits)


def _names(items):
    return ', '.join(item['stage'] for item in items)


def timeline_shares(spans):
    """Each stage's share of the wall time, {stage id: seconds}: the timeline cut at every stage's start and end, each
    piece split equally between the stages in flight then. Stages one after another get their own wall time; stages
    side by side (a wave) share the seconds they overlap, so the shares add up to the time any stage ran, never more."""
    points = sorted(set([item['_start'] for item in spans] + [item['_end'] for item in spans]))
    shares = dict((item['stage'], 0.0) for item in spans)
    for low, high in zip(points, points[1:]):
        live = [item['stage'] for item in spans if item['_start'] <= low and item['_end'] >= high]
        for stage in live:
            shares[stage] += (high - low).total_seconds() / len(live)
    return shares


def time_breakdown(data):
    """Where the campaign's time went on one host (read_host's data, with its 'timing': timing.json or None).

    Returns {'wall_s', 'started', 'finished', 'source' ('timing.json', 'stages' or None), 'rows': [{'key', 'label',
    'seconds', 'share'}] in STAGES_OF_TIME order (not_split only when a stage has no timings), 'stages': [stage_time
    without its private keys, with 'share'], 'notes': [text]}; seconds and shares (percent of the wall time) rounded,
    None when unknown.
    """
    timing = data.get('timing') or {}
    stages = [item for item in (stage_time(entry) for entry in data.get('stages') or []) if item is not None]
    spans = [item for item in stages if item['wall_s'] is not None]
    campaign_start, campaign_end = parse_time(timing.get('campaign_started')), parse_time(timing.get('campaign_finished'))
    page = seconds(timing.get('page_cache_warmup_s'))
    notes = []
    starts = [item['_start'] for item in spans] + ([campaign_start] if campaign_start else [])
    ends = [item['_end'] for item in spans] + ([campaign_end] if campaign_end else [])
    start, end = (min(starts) if starts else None), (max(ends) if ends else None)
    wall = (end - start).total_seconds() if start and end and end >= start else None
    source = 'timing.json' if campaign_start and campaign_end else 'stages' if wall is not None else None
    if not data.get('timing'):
        notes.append('no %s: the wall time runs from the first stage\'s start to the last stage\'s end, and the '
                     'page-cache warm-up is unknown (counted in waiting)' % TIMING_FILE)
    elif page is None:
        notes.append('the page-cache warm-up was not recorded: it is counted in waiting')
    earlier = [item for item in spans if campaign_start and item['_start'] < campaign_start]
    if earlier:
        notes.append('%d stage(s) ran before this run of the campaign started (%s: an earlier run of a resumed campaign): '
                     'the wall time starts with them and waiting holds the time between the runs' % (len(earlier), _names(earlier)))
    split = [item for item in spans if item['split']]
    unsplit = [item for item in spans if not item['split']]
    if unsplit:
        notes.append('no timings in status.json of %s (a failed stage, or one from before the timings were recorded): '
                     'their wall time is not split' % _names(unsplit))
    untimed = [item for item in split if not item['warmup_timed']]
    if untimed:
        notes.append('the warm-up requests of %s were not timed (SGLang\'s client, or results from before bench_run timed '
                     'them): counted in orchestration' % _names(untimed))
    from_results = [item for item in split if item['measure_from_results']]
    if from_results:
        notes.append('measuring of %s is the sum of its results\' duration_s (status.json has no measure_s; reused repeats '
                     'of an earlier attempt included)' % _names(from_results))
    # Stages side by side share the wall time: each part of a stage counts with the stage's share of the timeline.
    shares = timeline_shares(spans)
    scale = dict((item['stage'], shares[item['stage']] / item['wall_s'] if item['wall_s'] > 0 else 1.0) for item in spans)
    overlapping = [item for item in spans if item['wall_s'] - shares[item['stage']] > 0.5]

    def scaled(key, items):
        return _sum(None if item[key] is None else item[key] * scale[item['stage']] for item in items)

    values = {
        'page_cache': page,
        'server_loads': scaled('server_load_s', split),
        'warmup': scaled('warmup_s', split),
        'measuring': scaled('measuring_s', split),
        'orchestration': scaled('orchestration_s', split),
        'not_split': _sum(shares[item['stage']] for item in unsplit),
        'waiting': None if wall is None else wall - sum(shares.values()) - (page or 0.0),
    }
    if overlapping:  # waves of stages side by side
        stage_seconds = sum(item['wall_s'] for item in spans)
        notes.append('%d stage(s) ran side by side with others (%s): their %.1f stage-seconds took %.1f s of wall time; each '
                     'second two or more stages ran is split equally between them, so each part and each stage\'s share '
                     'counts what the host spent on it' % (len(overlapping), _names(overlapping), stage_seconds, sum(shares.values())))
    elif values['waiting'] is not None and values['waiting'] < -1.0:
        notes.append('the page-cache warm-up overlaps the stages (their started and finished): waiting is negative')
    rows = [{'key': key, 'label': label, 'seconds': _round(values[key]), 'share': _round(_share(values[key], wall), 2)}
            for key, label in STAGES_OF_TIME if key != 'not_split' or unsplit]
    stage_rows = []
    for item in stages:
        public = dict((key, value) for key, value in item.items() if not key.startswith('_'))
        for key in ('wall_s', 'server_load_s', 'warmup_s', 'measuring_s', 'orchestration_s'):
            public[key] = _round(public[key])
        # its share of the wall time: its own wall, or its part of the seconds it shared with stages beside it
        public['share'] = _round(_share(shares.get(item['stage'], item['wall_s']), wall), 2)
        stage_rows.append(public)
    return {'wall_s': _round(wall), 'started': start.strftime('%Y-%m-%dT%H:%M:%SZ') if start else None,
            'finished': end.strftime('%Y-%m-%dT%H:%M:%SZ') if end else None, 'source': source, 'rows': rows,
            'stages': stage_rows, 'notes': notes}


def split_known(breakdown):
    """Whether the breakdown splits any of the wall time: a known page-cache warm-up or a stage with timings."""
    return any(row['seconds'] is not None for row in breakdown['rows'] if row['key'] not in ('not_split', 'waiting'))
