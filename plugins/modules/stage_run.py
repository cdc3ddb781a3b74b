#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: stage_run
short_description: Run a whole benchmark stage on its host in one call, from its attempt folder to its status
version_added: 0.4.0
description:
  - "One round trip per stage. In this order, on the host, what the C(specdec.bench.bench_stage) role did in six tasks
    (one remote round trip each, and one per harness run). The earlier attempt's files move to C(attempt-<n>/)
    (M(specdec.bench.stage_attempt), O(keep) copied and left in place). The stage's server starts
    (M(specdec.bench.service)) and is waited for until C(/health_generate) answers (M(specdec.bench.sglang_ready)).
    Each harness run of O(runs) follows in order (M(specdec.bench.bench_run)), then those of O(load_runs), then the
    capacity searches of O(searches). Then, always, the record
    (M(specdec.bench.stage_record)): C(/server_info), the GPU snapshot, the service's state, stop, the unit file or
    definition, the journal excerpt, and C(status.json)."
  - The same files and the same C(status.json) as those tasks wrote. An ok stage gets C(headline) (per run of O(runs),
    the means over its repeats) and C(timings) (C(ready_s), C(harness_s), C(warmup_s), C(measure_s), C(idle_s); over
    every harness run, those of O(load_runs) and of the searches' points included).
    A failed stage gets C(reason) and C(evidence) (C(step), the module whose engine failed, one of V(stage_attempt),
    V(service), V(sglang_ready) or V(bench_run); C(journal)).
    A step that raises (a bug, not a failure it reports) is a failure of that step with its message and the tail of
    its traceback in C(evidence.traceback). Nothing is raised out of the module; the record step always runs.
  - Every run is run, also after an earlier one failed (as the role's loop ran every item); the reason is then the
    first failed run's label and message, with how many failed.
  - "A progress file (O(progress_file), JSON, rewritten atomically at each change) tells a controller polling an
    C(async) job where the stage is: C(stage), C(phase) (V(starting), V(loading) (the server started, not ready yet),
    V(running), V(recording), V(done)), C(started) and C(updated) (epoch seconds), C(ready_s), C(runs_total),
    C(runs_done), C(current) (the label of the run in flight), C(runs) (per finished run: C(label)
    C(<dataset> t<temperature> c<concurrency>), C(dataset), C(temperature), C(concurrency), C(output_throughput),
    C(accept_length), C(repeats), C(elapsed_s), C(failed); a load run's label ends C(q<rate>) and it has
    C(request_rate); a finished search is one entry, C(<dataset> t<temperature> search <kind>), with C(capacity),
    C(bound_by) and C(points)), C(status) (null until done, then V(ok) or V(failed)) and C(reason)."
  - "A lease (O(lease_file), O(lease_timeout)): the controller that polls the stage touches the lease file. When its
    mtime is older than O(lease_timeout) seconds before a step, between two runs, while the server loads or while a
    harness run measures (a thread watches it every second and stops the server, so the run ends at once), nobody
    polls the stage any more (the campaign was interrupted): the stage stops, failed, reason C(no controller polled
    this stage for <n> s (the campaign was interrupted): stopped), and is recorded as any failure (its server
    stopped). A missing lease file is as old as the module's start."
  - "One run of a stage at a time: the module holds a lock (C(flock)) on C(<lease_file>.lock) (without O(lease_file),
    C(.stage.lock) in O(dir)) from start to record. A second run of the same stage (a rerun while a killed campaign's
    stage still stops itself) waits up to O(lease_timeout) + 30 seconds for it, then fails naming its pid, having
    started and written nothing."
author:
  - specdec.bench developers (!UNKNOWN)
options:
  dir:
    description: The stage's results folder, C(<root>/<campaign>/<stage id>/); it must exist (the results_dir role makes it).
    type: path
    required: true
  keep:
    description:
      - File name patterns of an earlier attempt to copy into C(attempt-<n>/) and leave in place for reuse (O(runs)
        reuse complete repeats of the same requests); see P(specdec.bench.stage_attempt#module). Empty moves every file.
    type: list
    elements: str
    default: []
  unit:
    description: The stage's service (a systemd unit name on both backends).
    type: str
    required: true
  unit_dir:
    description: Where the unit file was rendered (O(backend=systemd)), kept beside the results.
    type: path
    default: /etc/systemd/system
  stop_timeout:
    description: Seconds between SIGTERM and SIGKILL when the supervisor stops the server.
    type: int
    default: 60
  port:
    description: The server's port on the host; its base URL is C(http://127.0.0.1:<port>).
    type: int
    required: true
  ready_timeout:
    description: Seconds to wait for the server to answer C(/health_generate).
    type: float
    default: 900
  journal_lines:
    description: How many of the service's last lines of output a readiness failure returns and the record keeps.
    type: int
    default: 200
  runs:
    description:
      - The harness runs, in order, each the options of one M(specdec.bench.bench_run) call.
      - A run's C(output_dir), C(base_url) and C(stage) default to O(dir), the server's base URL and C(status.stage).
      - Every run is checked before anything starts; an invalid one fails the module and nothing is started.
    type: list
    elements: dict
    required: true
  load_runs:
    description:
      - The load family's harness runs, after O(runs) on the same server, in order, each the options of one
        M(specdec.bench.bench_run) call with C(name_rate) (set here when missing; their files are named with their
        rate, C(result-<dataset>-t<temperature>-c<concurrency>-q<rate>-r<repeat>.json), so they never take the place of
        a grid run's) - the open-loop runs (a finite C(request_rate), C(burstiness), C(concurrency) the cap on requests
        in flight) and the crossover concurrencies (C(request_rate=inf)); P(specdec.bench.stage_run_args#filter) fills
        them in from the plan.
      - Checked, defaulted and failed like O(runs) (a failed load run fails the stage after every run has run).
    type: list
    elements: dict
    default: []
  searches:
    description:
      - "The capacity searches, after O(load_runs), in order: each C({kind, base, slo, min, max, resolution, max_runs,
        max_seconds}). C(kind) V(concurrency) (each point C(base) at that concurrency and C(request_rate=inf)) or
        V(request_rate) (each point C(base) at that rate, at C(base.concurrency)); C(base) a builtin harness run's
        options; C(slo) C({metric: {p, max}}) of C(ttft_ms), C(itl_ms), C(tpot_ms), C(e2e_ms) (milliseconds; not both
        C(itl_ms) and C(tpot_ms))."
      - "Each point is one M(specdec.bench.bench_run) call (its files named with the rate; a rerun reuses complete
        repeats), judged from the raw records of its measured repeats: per metric the percentile of each repeat,
        their mean and Student-t interval; it passes when every mean is at most its C(max). The search brackets
        (C(min), doubling) and bisects (halving for concurrency, geometric for request rate, to C(resolution)), within
        C(max_runs) harness runs and C(max_seconds) (plugins/module_utils/_stage/load_search.py)."
      - "Its file, C(search-<dataset>-t<temperature>-<kind>.json) in O(dir), holds its points (each with C(value),
        C(passed), C(sure), C(percentiles), C(binding), C(runs), C(result_files)), C(capacity) (the largest passing
        value), C(capacity_low) and C(capacity_high) (by the points sure of their side), C(binding) (the SLO metric that
        binds), C(bound_by) (V(resolution), V(max_runs), V(max_seconds), V(lowest_fails) or V(highest_passes)),
        C(runs), C(seconds), C(schema_version), C(stage), C(dataset), C(temperature) and C(slo)."
      - A point whose run fails ends its search without a file and fails the stage as a failed run does; the later
        searches still run.
    type: list
    elements: dict
    default: []
  status:
    description:
      - The base of the stage's status, as the role passes it (C(stage) required, C(sglang_build), C(datasets),
        C(repeats), C(ran_beside), C(wave), C(interference_of)); C(status), C(reason), C(started), C(headline),
        C(timings) or C(evidence) are set here and C(finished) by the record.
    type: dict
    required: true
  mode:
    description: Mode of the files written (the record's files and the progress file).
    type: str
    default: "0640"
  progress_file:
    description: The progress file; default C(<dir>/progress.json).
    type: path
  lease_file:
    description: The lease file the controller touches at each poll (see the description). Unset, no lease.
    type: path
  lease_timeout:
    description: Seconds the lease file may go untouched before the stage stops; V(0) turns the lease off.
    type: float
    default: 0
extends_documentation_fragment:
  - specdec.bench.attributes
  - specdec.bench.service_backend
attributes:
  check_mode:
    support: full
    details:
      - Checks the options (every run's too), then starts nothing, writes nothing and returns C(skipped).
  diff_mode:
    support: none
seealso:
  - module: specdec.bench.stage_attempt
  - module: specdec.bench.service
  - module: specdec.bench.sglang_ready
  - module: specdec.bench.bench_run
  - module: specdec.bench.stage_record
notes:
  - Requires Python 3.9 or later on the host; standard library only.
  - Meant to run with C(async) and C(poll=0), its progress file read while it runs.
"""

EXAMPLES = r"""
- name: Run a stage in one call, in the background
  specdec.bench.stage_run:
    dir: /root/bench_results/qwen36-ct200/tp1-dflash-n16
    keep: ['result-*-r*.json', 'raw-*-r*.*', 'telemetry-*-r*.csv']
    unit: specdec-qwen36-ct200-tp1-dflash-n16.service
    backend: supervisor
    port: 31001
    runs:
      - {concurrency: 1, num_prompts: 16, input_len: 512, output_len: 256, repeats: 3}
      - {concurrency: 8, num_prompts: 64, input_len: 512, output_len: 256, repeats: 3}
    status: {stage: tp1-dflash-n16, sglang_build: null, datasets: [], repeats: 3, ran_beside: [], wave: 1, interference_of: null}
    lease_file: /var/lib/specdec/stages/qwen36-ct200/tp1-dflash-n16.lease
    lease_timeout: 300
  async: 86400
  poll: 0
  register: stage_job
"""

RETURN = r"""
status:
  description: The stage's status as written to C(status.json) (null in check mode).
  returned: always
  type: dict
  sample: {stage: tp1-dflash-n16, status: ok, reason: null, started: "2026-12-02T14:00:00Z", finished: "2026-12-02T14:03:10Z",
           headline: [], timings: {ready_s: 41.2, harness_s: 120.5, warmup_s: 1.9, measure_s: 110.1, idle_s: 3.0}}
attempt:
  description: What the attempt step returned (P(specdec.bench.stage_attempt#module)'s C(attempt), C(files), C(kept)); null when it did not run.
  returned: always
  type: dict
ready:
  description: What the readiness step returned (P(specdec.bench.sglang_ready#module)'s C(ready_seconds), C(model_info), ...); null when it did not succeed.
  returned: always
  type: dict
runs:
  description:
    - Per run, in order, what P(specdec.bench.bench_run#module) returned (C(result), C(results), C(elapsed_s), ...; C(failed)
      and C(msg) when it failed).
  returned: always
  type: list
  elements: dict
load_runs:
  description: Per load run of O(load_runs), in order, what P(specdec.bench.bench_run#module) returned, as RV(runs).
  returned: always
  type: list
  elements: dict
searches:
  description:
    - Per search of O(searches), in order, C(kind), C(dataset), C(temperature), C(capacity), C(capacity_low),
      C(capacity_high), C(binding), C(bound_by), C(runs), C(points) (how many) and C(search_file); C(failed) and C(msg)
      instead of the figures when a point's run failed.
  returned: always
  type: list
  elements: dict
  sample: [{kind: concurrency, dataset: gsm8k, temperature: 0.0, capacity: 20, capacity_low: 16, capacity_high: 20,
            binding: ttft_ms, bound_by: resolution, runs: 30, points: 10,
            search_file: /root/bench_results/qwen36-ct200/tp1-dflash-n16/search-gsm8k-t0-concurrency.json}]
search_runs:
  description: What P(specdec.bench.bench_run#module) returned for each point of the searches, in the order measured.
  returned: unless in check mode
  type: list
  elements: dict
record:
  description: What the record step returned (P(specdec.bench.stage_record#module)'s C(status), C(written), C(warnings_seen)).
  returned: unless in check mode
  type: dict
progress_file:
  description: The progress file.
  returned: always
  type: str
  sample: /root/bench_results/qwen36-ct200/tp1-dflash-n16/progress.json
skipped:
  description: True in check mode, where nothing was started.
  returned: check mode
  type: bool
  sample: true
"""

from ansible.module_utils.basic import AnsibleModule

# the engine lives in module_utils, with the steps it runs
from ansible_collections.specdec.bench.plugins.module_utils._stage.errors import StageError
from ansible_collections.specdec.bench.plugins.module_utils._stage.stage_run import ARGUMENT_SPEC, stage_run


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        result = stage_run(module, module.params)
    except StageError as exc:
        module.fail_json(msg=exc.reason, **exc.evidence)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
