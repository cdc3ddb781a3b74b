# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, renderer: the machine-readable files. results.csv, results-repeats.csv, results-categories.csv,
results-why.csv, results-slo.csv, capacity.csv, crossover.csv and compare-<c>.csv (every cell through csv_cell: never a
formula in a spreadsheet), results.json, evaluation.json and schedule.json.
"""

from __future__ import annotations

import csv
import io
import json
import re

from .checkpoints import evaluation
from .keys import ROW_KEYS


# What a spreadsheet reads as the start of a formula (OWASP, "CSV Injection"): such a text cell gets a leading '.
CSV_FORMULA_START = ('=', '+', '-', '@', '\t', '\r')


# A text that is all one decimal number (-3, +0.5, -1e-3): a spreadsheet reads it as that number and runs nothing.
_CSV_NUMBER_RE = re.compile(r'^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$')


def csv_cell(value):
    """One cell of the report's CSV files: None empty, a bool true or false, a number as it is (-0.5 stays a number);
    a text that starts with = + - @, a tab or a carriage return gets a leading ' so that a spreadsheet shows it and
    never runs it as a formula, unless the whole text is a decimal number (_CSV_NUMBER_RE), which stays as it is."""
    if value is None:
        return ''
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, (int, float)):
        return value
    text = str(value)
    if text.startswith(CSV_FORMULA_START) and not _CSV_NUMBER_RE.match(text):
        return "'" + text
    return text


def render_csv(rows, keys=ROW_KEYS):
    """results.csv, results-repeats.csv, results-categories.csv and compare-<c>.csv: every cell through csv_cell."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator='\n')
    writer.writerow(keys)
    for row in rows:
        writer.writerow([csv_cell(row.get(key)) for key in keys])
    return out.getvalue()


def all_rows(report):
    """The rows of results.csv and results.json: the result rows, then the interference stages' (control_rows)."""
    return list(report['rows']) + list(report.get('control_rows') or [])


def render_json(report):
    """results.json: the report, its rows being all_rows (control_rows is not a key of its own)."""
    doc = dict((key, value) for key, value in report.items() if key != 'control_rows')
    doc['rows'] = all_rows(report)
    return json.dumps(doc, indent=2, sort_keys=False, allow_nan=False) + '\n'


def render_schedule(schedule):
    """schedule.json: pays.schedule's list, per host, TP, dataset and temperature the bands of concurrency with each
    one's best setting and its SGLang flags."""
    return json.dumps(schedule, indent=2, allow_nan=False) + '\n'


def render_evaluation(report, previous=None, generated=None):
    """evaluation.json's bytes, or None without a checkpoint sweep. previous: the bytes of the evaluation.json already in
    the report folder: when it says the same apart from its generated time, that time is kept, so the same results
    rewrite nothing."""
    doc = evaluation(report, generated)
    if doc is None:
        return None
    try:
        old = json.loads(previous) if previous else {}
    except ValueError:
        old = {}
    if isinstance(old, dict) and isinstance(old.get('generated'), str) and dict(old, generated=doc['generated']) == doc:
        doc['generated'] = old.get('generated')
    return (json.dumps(doc, indent=2, allow_nan=False) + '\n').encode('utf-8')
