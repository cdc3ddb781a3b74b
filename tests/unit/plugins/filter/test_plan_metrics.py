# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""spec.enable_metrics: SGLang's --enable-metrics on every stage's command line where the build's option list has it
(the default), silently off with a plan line where it has not, refused when asked of such a build; and bench_run told
to scrape /metrics only where the server has the flag."""

from __future__ import annotations

import os
import sys

import pytest

from ansible.errors import AnsibleFilterError
from ansible.module_utils import _internal as _module_internal
from ansible_collections.specdec.bench.plugins.filter.plan_lines import plan_lines
from ansible_collections.specdec.bench.plugins.filter.stage import stage_run_args
from ansible_collections.specdec.bench.plugins.plugin_utils import sglang_build
from ansible_collections.specdec.bench.plugins.plugin_utils.report.why import SERVER_COUNTERS, SERVER_QUEUE

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_plan import DDTREE_BUILD, METHODS, ct200_spec, plan  # noqa: E402  pylint: disable=import-error,wrong-import-position

_module_internal.is_controller = False

SETTINGS = {'results_root': '/root/bench_results', 'campaign': 'qwen36-ct200'}


@pytest.fixture(autouse=True)
def _controller_mode(monkeypatch):
    monkeypatch.setattr(_module_internal, 'is_controller', True)


@pytest.fixture(name='no_metrics_build')
def fixture_no_metrics_build(monkeypatch):
    """The DDTree build as if its SGLang had no --enable-metrics (its option list without the dest enable_metrics)."""
    load = sglang_build.load_builds

    def without(*args, **kwargs):
        builds = load(*args, **kwargs)
        builds[DDTREE_BUILD]['options'] = [option for option in builds[DDTREE_BUILD]['options'] if option['dest'] != 'enable_metrics']
        return builds
    monkeypatch.setattr(sglang_build, 'load_builds', without)


def spec_with(**fields):
    spec = ct200_spec()
    spec.update(fields)
    return spec


def test_on_by_default_where_the_build_has_it():
    for stage in plan():
        assert '--enable-metrics' in stage['argv'] and stage['argv'].count('--enable-metrics') == 1
        assert (stage['enable_metrics'], stage['metrics_note']) == (True, None)
    assert not any('metrics' in line for line in plan_lines(plan(), 'qwen36-ct200', 'ct200'))


def test_false_leaves_the_flag_out_and_says_so():
    stages = plan(spec=spec_with(enable_metrics=False))
    assert all('--enable-metrics' not in stage['argv'] and stage['enable_metrics'] is False for stage in stages)
    assert plan_lines(stages, 'qwen36-ct200', 'ct200')[2] == 'server metrics off (enable_metrics: false)'


def test_a_build_without_the_flag_is_silently_off_with_a_plan_line(no_metrics_build):
    stages = plan()
    assert all('--enable-metrics' not in stage['argv'] and stage['enable_metrics'] is False for stage in stages)
    note = 'server metrics off: SGLang 0.5.23 (build %s) has no --enable-metrics' % DDTREE_BUILD
    assert stages[0]['metrics_note'] == note and plan_lines(stages, 'qwen36-ct200', 'ct200')[2] == note


def test_true_on_a_build_without_the_flag_is_refused_naming_both(no_metrics_build):
    with pytest.raises(AnsibleFilterError, match=r'enable_metrics is true, and SGLang 0\.5\.23 \(build %s\) has no --enable-metrics'
                       % DDTREE_BUILD):
        plan(spec=spec_with(enable_metrics=True))


def test_a_method_table_without_a_build_is_on_only_when_asked():
    off = plan(methods=METHODS)
    assert off[0]['enable_metrics'] is False and 'names no SGLang build' in off[0]['metrics_note']
    on = plan(spec=spec_with(enable_metrics=True), methods=METHODS)
    assert all('--enable-metrics' in stage['argv'] for stage in on)


@pytest.mark.parametrize('value', ['yes', 1, 'true'])
def test_only_a_boolean(value):
    with pytest.raises(AnsibleFilterError, match='enable_metrics is %r; allowed: true or false' % (value,)):
        plan(spec=spec_with(enable_metrics=value))


def test_extra_args_may_not_set_it():
    with pytest.raises(AnsibleFilterError, match=r'extra_args\[0\] repeats --enable-metrics, which the plan sets'):
        plan(spec=spec_with(enable_metrics=False, extra_args=['--enable-metrics']))


def test_bench_run_scrapes_only_a_server_with_the_flag(no_metrics_build):
    assert all(run['metrics'] is False for run in stage_run_args(plan()[0], SETTINGS)['runs'])


def test_bench_run_scrapes_a_server_with_the_flag():
    runs = stage_run_args(plan()[0], SETTINGS)['runs']
    assert runs and all(run['metrics'] is True for run in runs)


def test_every_profile_lists_its_metrics_and_the_report_reads_only_listed_ones():
    builds = sglang_build.load_builds()
    for name, build in builds.items():
        assert build['metrics_file'] == 'sglang-0.5.23.metrics.json', name
        # prometheus_client's family names: a counter's without its _total
        assert all(family + '_total' in build['metrics'] for family in SERVER_COUNTERS.values()), name
        assert SERVER_QUEUE in build['metrics'], name


@pytest.mark.parametrize('listing, error', [
    ('[1]', "metrics is None; allowed: a list of {name, type, help, labels}"),
    ('{"metrics": [{"name": "sglang:x", "type": "meter"}]}', "metrics[0] is {'name': 'sglang:x', 'type': 'meter'}; "
                                                             "allowed: {name, type (counter, gauge, histogram, summary)"),
])
def test_a_bad_metrics_list_is_refused_naming_it(tmp_path, listing, error):
    source = os.path.dirname(sglang_build.__file__)
    for name in ('builds.yml', 'sglang-0.5.23.options.json'):
        with open(os.path.join(source, 'sglang_builds', name), encoding='utf-8') as handle:
            (tmp_path / name).write_text(handle.read())
    (tmp_path / 'sglang-0.5.23.metrics.json').write_text(listing)
    with pytest.raises(sglang_build.BuildError) as caught:
        sglang_build.load_builds(str(tmp_path))
    assert str(caught.value).startswith('sglang-0.5.23.metrics.json: ') and error in str(caught.value)
