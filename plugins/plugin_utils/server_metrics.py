# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A server's Prometheus /metrics scraped before and after a measured run, as what changed over the run (controller side).

The builtin harness writes the scrapes raw beside the run's raw log (bench_run's metrics_file: {"before": {"t": <unix
time>, "text": <the /metrics text>}, "after": {...}}); SGLang serves the text with --enable-metrics. The text is parsed
by prometheus_client's own parser (text_string_to_metric_families), never by hand, so every exposition detail it
knows (escaping, exemplars, the _total and _created samples) reads as Prometheus reads it.

Per metric family, summed over its label sets (SGLang labels by model, engine and TP rank):
- a counter: the after value less the before value (a family missing before counts 0 there); family names are those
  prometheus_client gives, without the _total suffix (sglang:prompt_tokens). A counter lower after than before (the
  server restarted during the run) is an error naming it.
- a gauge (and an untyped metric): its value after the run. The _created gauges prometheus_client writes beside its
  counters and histograms (their creation times) are left out.
- a histogram or summary: the deltas of its _count and _sum.
"""

from __future__ import annotations

import json

COUNTER_TYPES = ('counter',)
GAUGE_TYPES = ('gauge', 'unknown', 'untyped')
DISTRIBUTION_TYPES = ('histogram', 'summary', 'gaugehistogram')


class MetricsError(ValueError):
    """A scrape file or /metrics text that cannot be read, or counters that went down."""


def read_scrapes(path):
    """(before_text, after_text, before_t, after_t) of a metrics file; MetricsError naming what is wrong."""
    try:
        with open(path, encoding='utf-8') as handle:
            doc = json.load(handle)
    except (OSError, ValueError) as exc:
        raise MetricsError('cannot read the metrics file %s: %s' % (path, exc))
    values = []
    for when in ('before', 'after'):
        scrape = doc.get(when) if isinstance(doc, dict) else None
        if not isinstance(scrape, dict) or not isinstance(scrape.get('text'), str):
            raise MetricsError('%s: %s is %r; allowed: {"t": <unix time>, "text": <the /metrics text>}'
                               % (path, when, type(scrape).__name__ if not isinstance(scrape, dict) else scrape.get('text')))
        moment = scrape.get('t')
        if isinstance(moment, bool) or not isinstance(moment, (int, float)):
            raise MetricsError('%s: %s.t is %r; allowed: a unix time in seconds' % (path, when, moment))
        values.append((scrape['text'], float(moment)))
    (before, before_t), (after, after_t) = values
    return before, after, before_t, after_t


def _parser():
    """prometheus_client's text_string_to_metric_families, imported when first used: the collection's plugins import
    without it (ansible-test's import check), reading a scrape needs it (requirements.txt)."""
    try:
        from prometheus_client.parser import text_string_to_metric_families  # pylint: disable=import-outside-toplevel
    except ImportError as exc:
        raise ImportError('reading SGLang\'s /metrics needs prometheus_client on the controller (pip install -r '
                          'requirements.txt): %s' % exc) from exc
    return text_string_to_metric_families


def _families(text, names):
    """{family name: (type, {sample name: value summed over the label sets})} of a /metrics text."""
    families = {}
    try:
        parsed = list(_parser()(text))
    except ValueError as exc:
        raise MetricsError('the /metrics text cannot be parsed: %s' % exc)
    for family in parsed:
        if names is not None and family.name not in names:
            continue
        sums = {}
        for sample in family.samples:
            sums[sample.name] = sums.get(sample.name, 0.0) + sample.value
        families[family.name] = (family.type, sums)
    return families


def _created(name, families):
    """Whether a gauge is the creation time prometheus_client writes beside a counter or histogram of the text."""
    return name.endswith('_created') and families.get(name[:-len('_created')], ('gauge',))[0] != 'gauge'


def scrape_deltas(before_text, after_text, names=None):
    """{'counters': {family: delta}, 'gauges': {family: value after}, 'histograms': {family: {'count': delta, 'sum':
    delta}}} between two /metrics texts, summed over label sets; names, when given, the families to keep.
    MetricsError for a text that cannot be parsed or a counter (or a histogram's count or sum) that went down."""
    names = None if names is None else set(names)
    before, after = _families(before_text, names), _families(after_text, names)
    deltas = {'counters': {}, 'gauges': {}, 'histograms': {}}

    def delta(name, sample, kind):
        old = before.get(name, (kind, {}))[1].get(sample, 0.0)
        new = after[name][1].get(sample, 0.0)
        if new < old:
            raise MetricsError('%s %s went down over the run, from %r to %r (the server restarted?)' % (kind, sample, old, new))
        return new - old

    for name, (kind, samples) in sorted(after.items()):
        if kind in COUNTER_TYPES:
            deltas['counters'][name] = delta(name, name + '_total' if name + '_total' in samples else name, 'counter')
        elif kind in DISTRIBUTION_TYPES:
            count, total = ('_gcount', '_gsum') if kind == 'gaugehistogram' else ('_count', '_sum')
            deltas['histograms'][name] = {'count': delta(name, name + count, kind), 'sum': delta(name, name + total, kind)}
        elif kind in GAUGE_TYPES and not _created(name, after):
            deltas['gauges'][name] = samples.get(name, sum(samples.values()))
    for name, (kind, samples) in sorted(before.items()):
        if name not in after and kind in COUNTER_TYPES + DISTRIBUTION_TYPES:
            raise MetricsError('%s %s is in the scrape before the run and not after it (the server restarted?)' % (kind, name))
    return deltas
