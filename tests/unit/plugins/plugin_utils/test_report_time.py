# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""Where the campaign's time went, per host. A synthetic campaign with known timings (timing.json,
each stage's status.json started, finished and timings), every figure of results.json's time_breakdown checked, the
shares adding up to 100%, the tables of report.md and report.tex (compiled), and older results without timings."""
import json
import sys
from pathlib import Path

import pytest

from ansible_collections.specdec.bench.plugins.plugin_utils.report import generate
from ansible_collections.specdec.bench.plugins.plugin_utils.report.time import check_timing, parse_time, seconds, time_breakdown

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synthetic_results as synth  # noqa: E402  pylint: disable=wrong-import-position
from report_helpers import compile_tex  # noqa: E402  pylint: disable=wrong-import-position

MATRIX = [(1, 'autoregressive', {}), (1, 'dflash', {'num_draft_tokens': 16}), (1, 'ddtree', {'budget': 64, 'topk': 4})]
AR, DFLASH, DDTREE = 'tp1-autoregressive', 'tp1-dflash-n16', 'tp1-ddtree-b64-k4'
TIMING = {'campaign_started': '2026-12-02T10:00:00Z', 'campaign_finished': '2026-12-02T11:00:00Z', 'page_cache_warmup_s': 300.0}
# stage: (started, finished, timings or None)
STAGES = {
    # 900 s: 120 load, 30 warm-up, 500 measured + 1 idle, the rest (249) orchestration
    AR: ('2026-12-02T10:05:00Z', '2026-12-02T10:20:00Z',
         {'ready_s': 120.0, 'harness_s': 600.0, 'warmup_s': 30.0, 'measure_s': 500.0, 'idle_s': 1.0}),
    # 1200 s: SGLang's client (warm-up not timed), the ready time as a role templates it (a string)
    DFLASH: ('2026-12-02T10:21:00Z', '2026-12-02T10:41:00Z',
             {'ready_s': '200.5', 'harness_s': 800.0, 'warmup_s': None, 'measure_s': 700.0}),
    # 480 s of a failed stage: no timings
    DDTREE: ('2026-12-02T10:42:00Z', '2026-12-02T10:50:00Z', None),
}


def write_timings(root, campaign, stages, timing='default'):
    timing = TIMING if timing == 'default' else timing
    folder = Path(root) / 'ct200' / campaign
    if timing is not None:
        synth.write_json(folder / 'timing.json', timing)
    for stage, (started, finished, timings) in stages.items():
        path = folder / stage / 'status.json'
        status = json.loads(path.read_text())
        status.update(started=started, finished=finished)
        if timings is None:
            status.pop('timings', None)
        else:
            status['timings'] = timings
        synth.write_json(path, status)


@pytest.fixture(name='made', scope='module')
def made_fixture(tmp_path_factory):
    root = tmp_path_factory.mktemp('time') / 'results'
    synth.make_campaign(root, 'ct200', 'tm', MATRIX, concurrency=(1, 4), num_prompts=6, repeats=2, seed=5,
                        faults={DDTREE: ('failed', 'the server died while loading')})
    write_timings(root, 'tm', STAGES)
    out = root.parent / 'out'
    made = generate(str(root), 'tm', str(out), plots=False)
    return {'root': root, 'out': out, 'made': made, 'json': json.loads((out / 'results.json').read_text())}


def by_key(breakdown):
    return dict((row['key'], (row['seconds'], row['share'])) for row in breakdown['rows'])


def test_every_figure_of_the_breakdown_and_the_shares_add_up(made):
    breakdown = made['json']['hosts'][0]['time_breakdown']
    assert (breakdown['wall_s'], breakdown['started'], breakdown['finished'], breakdown['source']) == (
        3600.0, '2026-12-02T10:00:00Z', '2026-12-02T11:00:00Z', 'timing.json')
    expected = {'page_cache': 300.0, 'server_loads': 320.5, 'warmup': 30.0, 'measuring': 1201.0, 'orchestration': 548.5,
                'not_split': 480.0, 'waiting': 720.0}
    rows = by_key(breakdown)
    assert [row['key'] for row in breakdown['rows']] == list(expected)
    for key, value in expected.items():
        assert rows[key] == (value, round(value / 3600.0 * 100, 2)), key
    assert sum(seconds_ for seconds_, _share in rows.values()) == pytest.approx(3600.0)
    assert sum(share for _seconds, share in rows.values()) == pytest.approx(100.0, abs=0.05)
    stages = dict((item['stage'], item) for item in breakdown['stages'])
    assert [item['stage'] for item in breakdown['stages']] == [AR, DFLASH, DDTREE]
    assert dict((key, stages[AR][key]) for key in ('status', 'wall_s', 'share', 'server_load_s', 'warmup_s', 'measuring_s', 'orchestration_s')) == {
        'status': 'ok', 'wall_s': 900.0, 'share': 25.0, 'server_load_s': 120.0, 'warmup_s': 30.0, 'measuring_s': 501.0,
        'orchestration_s': 249.0}
    assert (stages[DFLASH]['wall_s'], stages[DFLASH]['share'], stages[DFLASH]['warmup_s'], stages[DFLASH]['orchestration_s']) == (
        1200.0, 33.33, None, 299.5)
    assert (stages[DDTREE]['status'], stages[DDTREE]['wall_s'], stages[DDTREE]['share'], stages[DDTREE]['split']) == (
        'failed', 480.0, 13.33, False)
    assert stages[DDTREE]['measuring_s'] is None and stages[DDTREE]['orchestration_s'] is None
    notes = ' | '.join(breakdown['notes'])
    assert 'no timings in status.json of %s' % DDTREE in notes
    assert 'warm-up requests of %s were not timed' % DFLASH in notes and 'earlier run' not in notes


def test_report_md_has_the_tables_per_host(made):
    md = (made['out'] / 'report.md').read_text()
    section = md[md.index('### Where the time went'):]
    assert 'Campaign wall time 3600.0 s (1:00:00), 2026-12-02T10:00:00Z to 2026-12-02T11:00:00Z, from timing.json.' in section
    for line in ('| page-cache warm-up | 300.0 | 8.3% |', '| server loads | 320.5 | 8.9% |', '| warm-up requests | 30.0 | 0.8% |',
                 '| measuring | 1201.0 | 33.4% |', '| orchestration | 548.5 | 15.2% |', '| stages without timings | 480.0 | 13.3% |',
                 '| waiting | 720.0 | 20.0% |',
                 '| `tp1-autoregressive` | ok | 900.0 | 25.0% | 120.0 | 30.0 | 501.0 | 249.0 |',
                 '| `tp1-dflash-n16` | ok | 1200.0 | 33.3% | 200.5 | unknown | 700.0 | 299.5 |',
                 '| `tp1-ddtree-b64-k4` | failed | 480.0 | 13.3% | unknown | unknown | unknown | unknown |'):
        assert line in section.splitlines(), line
    assert 'Each stage counts with its last attempt.' in section


def test_report_tex_has_the_time_table_and_compiles(made, tmp_path):
    tex = (made['out'] / 'report.tex').read_text()
    assert r'\label{tab:tm-ct200-time}' in tex
    assert r'measuring & 1201.0 & 33.4\% \\' in tex and r'Campaign wall time & 3600.0 & 100.0\% \\' in tex
    assert r'tp1-dflash-n16 & 1200.0 & 33.3\% \\' in tex.replace(r'\_', '_')
    log = compile_tex(made['out'] / 'report.tex', tmp_path)
    assert 'Overfull \\hbox' not in log


def test_results_without_timings_report_unknown_and_no_tex_table(tmp_path):
    """A campaign collected before the timings: status.json with started and finished only, no timing.json."""
    root = tmp_path / 'results'
    synth.make_campaign(root, 'ct200', 'old', MATRIX[:2], concurrency=(1,))
    write_timings(root, 'old', {AR: ('2026-12-02T10:00:00Z', '2026-12-02T10:10:00Z', None),
                                DFLASH: ('2026-12-02T10:12:00Z', '2026-12-02T10:20:00Z', None)}, timing=None)
    generate(str(root), 'old', str(tmp_path / 'out'), plots=False)
    breakdown = json.loads((tmp_path / 'out' / 'results.json').read_text())['hosts'][0]['time_breakdown']
    assert (breakdown['wall_s'], breakdown['source']) == (1200.0, 'stages')
    rows = by_key(breakdown)
    for key in ('page_cache', 'server_loads', 'warmup', 'measuring', 'orchestration'):
        assert rows[key] == (None, None), key
    assert rows['not_split'] == (1080.0, 90.0) and rows['waiting'] == (120.0, 10.0)
    assert any(note.startswith('no timing.json') for note in breakdown['notes'])
    md = (tmp_path / 'out' / 'report.md').read_text()
    assert '| server loads | unknown | unknown |' in md and '| measuring | unknown | unknown |' in md
    assert '-time}' not in (tmp_path / 'out' / 'report.tex').read_text()


def test_measuring_falls_back_to_the_results_durations(tmp_path):
    """status.json from before bench_run's measure_s and warmup_s: measuring is the sum of the results' duration_s."""
    root = tmp_path / 'results'
    synth.make_campaign(root, 'ct200', 'mid', MATRIX[:1], concurrency=(1, 4), repeats=2)
    write_timings(root, 'mid', {AR: ('2026-12-02T10:00:00Z', '2026-12-02T10:10:00Z', {'ready_s': 60.0, 'harness_s': 300.0})},
                  timing=None)
    folder = root / 'ct200' / 'mid' / AR
    durations = [json.loads(path.read_text())['duration_s'] for path in sorted(folder.glob('result-*.json'))]
    assert len(durations) == 4
    generate(str(root), 'mid', str(tmp_path / 'out'), plots=False)
    breakdown = json.loads((tmp_path / 'out' / 'results.json').read_text())['hosts'][0]['time_breakdown']
    rows = by_key(breakdown)
    assert rows['measuring'][0] == pytest.approx(sum(durations), abs=1e-3)
    assert rows['warmup'] == (None, None) and rows['server_loads'] == (60.0, 10.0)
    assert rows['orchestration'][0] == pytest.approx(600.0 - 60.0 - sum(durations), abs=1e-3)
    assert rows['waiting'] == (0.0, 0.0) and 'not_split' not in rows
    notes = ' | '.join(breakdown['notes'])
    assert 'sum of its results\' duration_s' in notes and 'were not timed' in notes


def test_a_stage_of_an_earlier_run_extends_the_wall_time(tmp_path):
    """A resumed campaign: timing.json is this run's, one stage was measured by the run before."""
    root = tmp_path / 'results'
    synth.make_campaign(root, 'ct200', 'again', MATRIX[:2], concurrency=(1,))
    write_timings(root, 'again', {
        AR: ('2026-12-01T22:00:00Z', '2026-12-01T22:10:00Z', {'ready_s': 60.0, 'harness_s': 300.0, 'warmup_s': 5.0, 'measure_s': 280.0}),
        DFLASH: ('2026-12-02T10:01:00Z', '2026-12-02T10:11:00Z', {'ready_s': 90.0, 'harness_s': 400.0, 'warmup_s': 6.0, 'measure_s': 380.0}),
    }, timing={'campaign_started': '2026-12-02T10:00:00Z', 'campaign_finished': '2026-12-02T10:12:00Z', 'page_cache_warmup_s': None})
    generate(str(root), 'again', str(tmp_path / 'out'), plots=False)
    breakdown = json.loads((tmp_path / 'out' / 'results.json').read_text())['hosts'][0]['time_breakdown']
    assert (breakdown['started'], breakdown['finished'], breakdown['wall_s']) == ('2026-12-01T22:00:00Z', '2026-12-02T10:12:00Z', 43920.0)
    rows = by_key(breakdown)
    assert rows['page_cache'] == (None, None) and rows['waiting'][0] == 43920.0 - 1200.0
    assert sum(value for value, _share in rows.values() if value is not None) == pytest.approx(43920.0)
    notes = ' | '.join(breakdown['notes'])
    assert '1 stage(s) ran before this run of the campaign started (%s' % AR in notes
    assert 'page-cache warm-up was not recorded' in notes


def test_a_bad_timing_json_is_skipped_and_listed(tmp_path):
    root = tmp_path / 'results'
    synth.make_campaign(root, 'ct200', 'bad', MATRIX[:1], concurrency=(1,))
    write_timings(root, 'bad', {AR: ('2026-12-02T10:00:00Z', '2026-12-02T10:10:00Z', None)},
                  timing={'campaign_started': 'yesterday', 'campaign_finished': None})
    made = generate(str(root), 'bad', str(tmp_path / 'out'), plots=False)
    assert [(item['path'], item['reason']) for item in made['skipped_files']] == [
        ('ct200/bad/timing.json', "campaign_started is 'yesterday'; allowed: an ISO 8601 UTC time (2026-12-02T14:00:00Z) or null")]
    assert made['report']['hosts'][0]['time_breakdown']['source'] == 'stages'


@pytest.mark.parametrize('doc, reason', [
    ([], 'the document is list; allowed: an object'),
    ({'campaign_finished': 12}, 'campaign_finished is 12; allowed: an ISO 8601 UTC time (2026-12-02T14:00:00Z) or null'),
    ({'page_cache_warmup_s': -1}, 'page_cache_warmup_s is -1; allowed: a finite number of seconds, 0 or more, or null'),
    ({'page_cache_warmup_s': '30'}, "page_cache_warmup_s is '30'; allowed: a finite number of seconds, 0 or more, or null"),
    ({'page_cache_warmup_s': True}, 'page_cache_warmup_s is True; allowed: a finite number of seconds, 0 or more, or null'),
])
def test_check_timing_names_the_field_and_what_is_allowed(doc, reason):
    assert check_timing(doc) == reason


def test_times_and_seconds_are_read_leniently_but_never_guessed():
    assert parse_time('2026-12-02T10:00:00Z') == parse_time('2026-12-02T10:00:00+00:00') == parse_time('2026-12-02T10:00:00')
    assert parse_time('2026-12-02T10:00:00.5Z').microsecond == 500000
    assert parse_time('soon') is None and parse_time(None) is None
    assert (seconds(2), seconds('2.5'), seconds(float('nan')), seconds(-1), seconds(True), seconds('x')) == (2.0, 2.5, None, None, None, None)
    assert check_timing({'campaign_started': None, 'campaign_finished': '2026-12-02T10:00:00Z', 'page_cache_warmup_s': 0}) is None


def test_a_host_with_nothing_timed_has_no_wall_time():
    stage = {'stage': {'id': AR}, 'status': {'status': 'ok', 'started': None, 'finished': None}, 'results': {}}
    breakdown = time_breakdown({'timing': None, 'stages': [stage, {'stage': {'id': DFLASH}, 'status': None, 'results': {}}]})
    assert breakdown['wall_s'] is None and breakdown['source'] is None
    assert [item['stage'] for item in breakdown['stages']] == [AR] and breakdown['stages'][0]['share'] is None
    assert all(row['share'] is None for row in breakdown['rows'])


def test_the_timeline_is_split_between_the_stages_in_flight():
    from ansible_collections.specdec.bench.plugins.plugin_utils.report.time import timeline_shares  # pylint: disable=import-outside-toplevel
    import datetime  # pylint: disable=import-outside-toplevel

    def span(stage, start, end):
        base = datetime.datetime(2026, 12, 4)
        return {'stage': stage, '_start': base + datetime.timedelta(seconds=start), '_end': base + datetime.timedelta(seconds=end)}

    # a from 0 to 10 alone; b beside a from 4 to 10 and alone to 12; c alone after a gap
    shares = timeline_shares([span('a', 0, 10), span('b', 4, 12), span('c', 20, 25)])
    assert shares == {'a': 4 + 3, 'b': 3 + 2, 'c': 5}
    assert sum(shares.values()) == 12 + 5  # the time any stage ran


def test_a_stage_timed_to_the_millisecond_has_its_exact_orchestration():
    """status.json's times carry milliseconds: a stage's orchestration is wall - load - warm-up - measuring exactly,
    not off by up to a second (whole seconds made a short stage's orchestration negative)."""
    from ansible_collections.specdec.bench.plugins.plugin_utils.report.time import stage_time  # pylint: disable=import-outside-toplevel
    status = {'status': 'ok', 'started': '2026-12-04T08:59:00.900Z', 'finished': '2026-12-04T09:00:07.100Z',
              'timings': {'ready_s': 2.0, 'harness_s': 62.6, 'warmup_s': 3.1, 'measure_s': 58.4, 'idle_s': 1.0}}
    item = stage_time({'stage': {'id': AR}, 'status': status, 'results': {}})
    assert item['wall_s'] == pytest.approx(66.2)
    assert item['orchestration_s'] == pytest.approx(1.7)  # whole seconds (08:59:00 to 09:00:07) would give 2.5
