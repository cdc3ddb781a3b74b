#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: report
short_description: Write the report of a benchmark campaign from the results collected on the controller
version_added: 0.1.0
description:
  - Runs on the controller only (an action plugin; nothing runs on a host). Reads what M(specdec.bench.results_unpack)
    collected under O(results_dir)C(/<host>/<campaign>/), with the file names of the collection's results layout
    (P(specdec.bench.results_layout#filter)), and writes to O(output_dir) C(results.csv) and C(results.json) (one
    row per host, stage, dataset, temperature and concurrency), C(results-repeats.csv) (one row per repeat of each),
    C(results-categories.csv) (per category of a categorized prompt set, such as Spec-Bench's),
    C(results-why.csv) (per run the acceptance in full, the papers' decode speedup, Spec-Bench's speedup, the
    verify-cost factor and the cache-hit rates), C(report.md), C(report.tex) (booktabs tables, ready to C(\input)) and
    PNG plots.
  - "Repeats: a row aggregates the repeats of its run (a spec's C(repeats: N); a result file from before repeats is
    repeat 1). Throughput, median TTFT and ITL and tau are the mean over the repeats with their sample standard
    deviation, 95% Student t interval and coefficient of variation (C(_sd), C(_ci_low), C(_ci_high), C(_cv) columns;
    empty for one repeat). The speedup is the ratio of the two mean throughputs with Fieller's 95% interval
    (C(speedup_ci_low), C(speedup_ci_high), C(speedup_ci_method) C(fieller)); C(speedup_significant) is false when
    the interval contains 1.0 (marked with a dagger), and C(noisy) true when the throughput's or tau's coefficient
    of variation exceeds O(noisy_cv) (marked with an asterisk). The statistics use numpy and scipy on the controller."
  - C(speedup) is the output throughput of a stage over that of the O(baseline_method) stage on the same host, TP,
    dataset, temperature and concurrency; it is left empty when that baseline was not measured, never guessed.
  - A row is C(ok) when its stage ran and the harness completed every prompt at that concurrency; failed,
    infeasible and never-run stages are rows too, with their status and reason, and C(report.md) lists them.
  - Every collected file is checked against the schema of its kind (C(campaign.json), C(status.json), the result files,
    C(server_info.json), C(gpus.json); the types and values the stages write) before it is used. A file that cannot be
    read, is not JSON or is not of its schema is skipped as if absent and named with the reason in RV(skipped_files), a
    warning, C(report.md) and C(results.json). The rows of a skipped C(status.json) or result file have the status
    C(invalid) and that reason; without C(campaign.json) the stages are the folders found.
  - Text that came from a host (failure reasons, settings, versions, GPU names, folder names) is escaped in C(report.md)
    (C(<), C(>), C(&) and C($) as HTML entities, table pipes, Markdown's backslash, backtick and brackets) and in
    C(report.tex), where a character pdflatex cannot set (a control or bidi character, an emoji) is written as
    Python's ascii() writes it (C(\u202e)). In the CSV files a text cell that starts with C(=), C(+), C(-), C(@), a tab
    or a carriage return gets a leading single quote so that a spreadsheet never runs it as a formula (a number, and a
    text that is all one decimal number, stay as they are). The plots show it as plain text, never as mathtext.
  - The report is a pure function of the collected files; a file is rewritten only when its content changed, so
    running it again on the same results reports no change.
  - The files are written as a set. All are made first; the changed ones are written into a temporary folder inside
    O(output_dir) and only then renamed into place, so a failure leaves the previous report whole.
  - The plots need matplotlib on the controller; without it the other files are written and RV(plots_skipped) says why.
  - "Checkpoint sweeps (stages with C(params.step), one per drafter checkpoint): the rows carry C(step) and
    C(checkpoint), C(report.md) and C(report.tex) get a Checkpoints section per host and TP (speedup and tau per step
    and dataset, the best checkpoint by overall speedup named), C(checkpoints-<host>-tp<N>-<dataset>.png) plots tau and
    speedup against the step, and C(evaluation.json) sums it up (RV(evaluation)). Without steps none of this appears."
  - "Where the time went: per host, C(report.md) and C(report.tex) get a table splitting the campaign's
    wall time (C(<campaign>/timing.json)'s C(campaign_started) to C(campaign_finished), else the first stage's start
    to the last stage's end) into page-cache warm-up, server loads, warm-up requests, measuring, orchestration and
    waiting, in seconds and shares, then each stage's wall time and share (each stage's last attempt); C(results.json)
    has it as C(hosts[].time_breakdown). What was not recorded (results from before the timings) is C(unknown). See
    C(docs/report.md)."
  - "Stages run side by side: each row carries C(wave), C(beside) (how many other stages were in flight with
    its stage, C(status.json)'s C(ran_beside); 0 for results from before it), C(ran_beside) and C(interference_of);
    C(report.md) and C(report.tex) mark a setting measured beside other stages with a section sign and one footnote per
    table. The plan's interference stage (C(<id>-alone), C(interference_of) set: a re-run of a stage alone at the end)
    is a control measurement: its rows are in C(results.csv) and C(results.json)'s rows, never in the tables, speedups,
    best settings, plots or checkpoint sections; the Interference section per host (C(results.json)'s C(interference))
    compares it with the stage it re-runs: output throughput and median ITL beside the others vs alone per dataset,
    temperature and concurrency, the difference in %, the repeats of each mean. See C(docs/report.md)."
  - "Where speculation pays (only with the load family: an C(slo), a C(search), a C(workload.request_rate) list or
    C(crossover.concurrency) in the spec, or their files in the stage folders; otherwise nothing of this appears):
    the load runs' files (C(result-<dataset>-t<T>-c<N>-q<rate>-r<r>.json), rate C(inf) for closed loop) and the
    capacity searches' (C(search-<dataset>-t<T>-<kind>.json)) are read beside the grid's, whose tables do not change.
    C(results-slo.csv) holds per run of a stage with an SLO its SLO attainment, request goodput (vLLM benchmark_serving's
    --goodput), token goodput (DistServe, inference-perf) and good tokens per joule; C(capacity.csv) per search the
    capacity at SLO with its interval, binding SLO and the gain over AR with its interval; C(crossover.csv) per
    setting the concurrency where its speedup falls to 1.0 (or that it pays at every load measured, or never);
    C(schedule.json) per host and TP the best setting per band of concurrency with its SGLang flags. C(report.md) gets
    the section with those tables and the plots C(goodput-vs-rate-*.png), C(speedup-vs-concurrency-*.png) (the
    Fieller band, the crossover marked) and C(pareto-*.png) (median TPOT against throughput, the front per method);
    C(results.json) has it all as C(pays). See C(docs/report.md)."
  - In check mode the report is written too, since it changes no host, only files on the controller.
author:
  - specdec.bench developers (!UNKNOWN)
options:
  campaign:
    description: The campaign id, C([a-z0-9][a-z0-9._-]*).
    type: str
    required: true
  results_dir:
    description: The controller folder that holds C(<inventory_hostname>/<campaign>/<stage>/), as the C(collect) role fills it.
    type: path
    required: true
  output_dir:
    description: Where the report files go; created when missing.
    type: path
    required: true
  hosts:
    description: The hosts to report on, in this order. A host listed here with nothing collected appears as such. Default every host
      under O(results_dir) that holds the campaign.
    type: list
    elements: str
  compare_to:
    description:
      - Another campaign collected under O(results_dir) (the "before" of a change). Writes C(compare-<compare_to>.md) and
        C(compare-<compare_to>.csv) with both campaigns side by side per host, stage and concurrency, and the deltas.
      - With repeats on both sides, the throughput change is tested by Welch's t-test over the repeats
        (C(output_throughput_p), C(output_throughput_significant) at p < 0.05) and the speedup change by its two
        Fieller intervals (C(speedup_change_significant) when they do not overlap).
    type: str
  baseline_method:
    description: The method that speedups are measured against.
    type: str
    default: autoregressive
  plots:
    description: Draw the PNG plots (speedup and acceptance length against DDTree budget per TP, throughput against concurrency per method).
    type: bool
    default: true
  noisy_cv:
    description: The coefficient of variation over a run's repeats (of its throughput or tau) above which the run is
      marked noisy; a number above 0 and at most 1.
    type: float
    default: 0.05
    version_added: 0.4.0
  schedule_check:
    description:
      - "The path of an earlier report's C(schedule.json) that this campaign measured again at its band edges (a campaign
        whose spec P(specdec.bench.schedule_check_spec#filter) made from the schedule's). Where two bands meet, each
        band's setting is compared with its neighbour's at the band's own edge (output throughput ratio, Fieller's 95%
        interval over the repeats): V(holds) above 1.0, V(tie) when the interval contains 1.0, V(reversed) below it,
        V(missing) when a setting has no measured row there."
      - Writes C(schedule-check.json) and the section "Schedule check" of C(report.md), returns RV(schedule_check), and
        fails (after writing the report) when a comparison is reversed or missing, naming each.
    type: path
    version_added: 0.4.0
requirements:
  - matplotlib on the controller for the plots (optional).
  - numpy and scipy on the controller for the statistics (in the collection's requirements.txt).
seealso:
  - module: specdec.bench.results_unpack
notes:
  - Numbers come from the normalized harness results (C(result-<dataset>-t<temperature>-c<concurrency>.json); an older
    campaign's C(result-c<N>.json) reads as dataset C(random) at temperature 0); the unit tests recompute them from the
    raw per-request records. The acceptance length is per request (the run's own completion tokens over its verify
    steps); the server's average is shown beside it as a cross-check.
"""

EXAMPLES = r"""
- name: Write the report of campaign qwen36-ct200
  specdec.bench.report:
    campaign: qwen36-ct200
    results_dir: "{{ playbook_dir }}/../results"
    output_dir: "{{ playbook_dir }}/../reports/qwen36-ct200"

- name: Compare it against the campaign before a change
  specdec.bench.report:
    campaign: qwen36-ct200-after
    compare_to: qwen36-ct200
    results_dir: results
    output_dir: reports/qwen36-ct200-after
"""

RETURN = r"""
schedule_check:
  description: With O(schedule_check), the check of that schedule (also in C(schedule-check.json)).
  returned: when O(schedule_check) is set
  type: dict
  contains:
    passed:
      description: No comparison reversed or missing.
      type: bool
    edges:
      description: >-
        Each comparison: C(host), C(tp), C(dataset), C(temperature), C(concurrency), C(stage) (the schedule's setting
        there), C(other_stage) (the neighbouring band's), C(ratio), C(low), C(high), C(repeats), C(verdict).
      type: list
      elements: dict
  sample: {passed: true, entries: 1, checked: 2, reversed: 0, missing: 0, schedule: reports/qwen36-sim-load/schedule.json,
           edges: [{host: ct200, tp: 1, dataset: random, temperature: 0.0, concurrency: 4, stage: tp1-ddtree-b32-k4,
                    other_stage: tp1-autoregressive, ratio: 1.31, low: 1.22, high: 1.41, repeats: 2, verdict: holds}]}
files:
  description: Every file the report consists of, name to path.
  returned: success
  type: dict
  sample: {results.csv: /work/reports/qwen36-ct200/results.csv, report.md: /work/reports/qwen36-ct200/report.md}
written:
  description: The files whose content changed in this run.
  returned: success
  type: list
  elements: str
  sample: [report.md, results.csv]
report_md:
  description: Path of C(report.md).
  returned: success
  type: str
  sample: /work/reports/qwen36-ct200/report.md
hosts:
  description: The hosts reported on.
  returned: success
  type: list
  elements: str
  sample: [a100box, ct200]
rows:
  description: How many result rows (host, stage, dataset, temperature, concurrency) the report has; the rows of an
    interference stage (C(interference_of)) are not counted.
  returned: success
  type: int
  sample: 45
measured:
  description: How many of them were measured (status ok).
  returned: success
  type: int
  sample: 36
not_measured:
  description: The stages that did not run or did not end ok, with their reason.
  returned: success
  type: list
  elements: dict
  sample: [{host: a100box, stage: tp1-autoregressive, tp: 1, setting: AR, status: infeasible, reason: the smallest TP that fits is 2}]
best:
  description: Per host, TP and concurrency, the setting with the highest output throughput.
  returned: success
  type: list
  elements: dict
  sample: [{host: ct200, tp: 1, concurrency: 1, stage: tp1-ddtree-b64-k4, setting: DDTree B=64 k=4, output_throughput: 88.1,
            speedup: 2.31, accept_length: 4.2, is_baseline: false}]
summary_lines:
  description: A readable summary, one line per host, TP and concurrency.
  returned: success
  type: list
  elements: str
  sample: ["ct200 TP1 c=1: best DDTree B=64 k=4 88.1 tok/s, 2.31x"]
skipped_files:
  description:
    - The collected files that were not used (of the campaign and of O(compare_to)), with why; also listed in C(report.md).
  returned: success
  type: list
  elements: dict
  contains:
    path:
      description: The file's path on the controller.
      type: str
    reason:
      description: Why it was skipped (unreadable, not valid JSON, or which field is not what the stage writes).
      type: str
  sample: [{path: /work/results/ct200/qwen36-ct200/tp1-autoregressive/status.json, reason: "the document is a list; allowed: an object"}]
evaluation:
  description:
    - Path of C(evaluation.json), written when the campaign is a checkpoint sweep (its stages have C(params.step)); it
      holds the best checkpoint and each checkpoint's tau and speedup per dataset, the summary the evaluation copies to
      the training host. Also listed in RV(files).
  returned: when a row has a step
  type: str
  sample: /work/reports/dflash-eval/evaluation.json
  version_added: 0.4.0
best_checkpoint:
  description:
    - The checkpoint with the highest overall speedup (the mean over the datasets weighted by their prompt counts, at
      the lowest temperature and concurrency measured), as C(evaluation.json)'s C(best); null when no speedup was measured.
  returned: when a row has a step
  type: dict
  sample: {host: ct200, tp: 1, method: dflash, setting: DFlash n=16, step: 500, name: checkpoint-500, speedup: 3.1,
           speedup_ci_low: 2.9, speedup_ci_high: 3.3, tau: 5.2, dataset: overall}
  version_added: 0.4.0
plots_skipped:
  description: Why no plots were drawn, when none were.
  returned: when no plots were drawn
  type: str
  sample: "matplotlib is not importable on the controller (No module named 'matplotlib'); pip install matplotlib for the plots"
"""
