#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: bench_run
short_description: Run one benchmark harness at one concurrency against an SGLang server, repeated, and keep normalized results
version_added: 0.1.0
description:
  - Runs a harness on the benchmark host against O(base_url), at one O(concurrency), O(repeats) times (one cell of a
    stage, one dataset, temperature and concurrency), and returns the normalized result row of each repeat (the same
    keys for every harness, see RV(results)) and their summary (RV(result)).
  - Writes each repeat's row to C(<output_dir>/result-<dataset>-t<temperature>-c<concurrency>-r<repeat>.json) (the
    collection's results layout, RESULTS_LAYOUT in C(module_utils/_common.py); the dataset is V(random) without
    O(prompts_file), the temperature written as C(%g), repeats numbered from 1) atomically (a temporary file renamed
    into place), and the harness's raw output beside it, C(raw-<dataset>-t<temperature>-c<concurrency>-r<repeat>.jsonl).
  - "Repeats: a repeat whose files are already in O(output_dir) is reused, not run again, when its result is complete
    (C(complete=true)), of this schema version and this repeat, its raw file is there, and it records the same
    C(harness), C(stage), C(dataset), C(prompts_sha256), C(turns), C(num_prompts), C(input_len), C(output_len),
    C(max_new_tokens), C(temperature), C(top_p), C(top_k), C(ignore_eos), C(seed), C(concurrency) and
    C(request_rate) as this call would (every field that shapes the requests). Not compared: C(repeats), so a rerun
    with more repeats fills in the missing ones, and C(warmup_requests). A reused file is left untouched; a call
    that reuses every repeat sends no request and reports no change."
  - When any repeat is missing, the cell gets one warm-up pass (O(warmup_requests), discarded; its records lead the
    first missing repeat's raw file, marked C(warmup)), then for each missing repeat in order C(POST /flush_cache)
    (O(flush_cache)) and the measured run. A repeat that does not complete ends the cell (its later repeats are not
    run) unless O(fail_on_incomplete=false).
  - With O(prompts_file) both harnesses send the templated prompts of a host prompts file (written by the
    C(specdec.bench.workload_prepare) action), with O(temperature), O(top_p), O(top_k), O(max_new_tokens) and
    end-of-sequence as O(ignore_eos) says; without it, seeded random prompts of exactly O(input_len) and O(output_len)
    tokens, ignoring end-of-sequence, as before.
  - Acceptance length RV(result.accept_length) is the run's own requests' sum of C(completion_tokens) over their sum
    of C(spec_verify_ct) (each request's final C(meta_info)); C(/server_info)'s figure after the cache flush is kept
    beside it as a cross-check and a disagreement over 2% is flagged (RV(result.accept_length_flag)).
  - O(harness=builtin) needs only the Python standard library. It sends O(num_prompts) seeded random prompts of
    O(input_len) token ids to the native C(/generate) endpoint, streamed, greedy, for exactly O(output_len) tokens,
    after O(warmup_requests) warm-up requests, with at most O(concurrency) in flight and, when O(request_rate) is set,
    arrivals as a seeded Poisson process. With O(prompts_file) it sends each record's turns as a conversation, turn
    after turn in one concurrency slot, each turn the concatenation of the record's segments and the answers the
    server generated for the turns before it. Its raw output holds one record per request (per turn C(id),
    C(turn), C(completion_tokens), C(spec_verify_ct), C(finish_reason)), with when the
    request was meant to start and when it did, TTFT, the inter-token gaps, each streamed chunk's arrival
    (C(chunk_s), seconds from the run's start), E2E latency and the request's C(meta_info) token and acceptance counts.
    While it runs, the raw output gets every finished request as it finishes (whole lines appended) and the result
    file the counts so far, marked C(complete=false), so a run that is killed leaves
    what finished.
  - O(harness=sglang) runs SGLang's own client C(python -m sglang.benchmark.serving) (or C(sglang.bench_serving) when
    the first is missing) with O(python), the server's interpreter, and reads the JSON line it appends to its
    C(--output-file). Its raw outputs are that file (the raw file) and its console output (C(.log) beside it).
    Without O(prompts_file) it uses the C(random-ids) dataset with C(--random-range-ratio 1), so prompts and outputs
    have exactly the lengths asked for, as with the builtin harness. With O(prompts_file) it uses the C(custom)
    dataset (a C(conversations) JSONL written beside the raw file from the prompts file's first segments, already
    templated, so no C(--apply-chat-template)) with C(--sharegpt-output-len) O(max_new_tokens), C(--temperature),
    C(--top-p) and C(--disable-ignore-eos) unless O(ignore_eos). That client sends only the first user turn of a
    conversation, so this harness runs first turns (RV(result.turns) is V(first)); it has no top-k option (O(top_k)
    other than V(-1) is refused), and it keeps no per-request C(spec_verify_ct), so its RV(result.accept_length) is
    null and C(/server_info)'s figure is in RV(result.accept_length_server_info).
  - Statistics mean the same for both harnesses (SGLang's client's definitions), see the C(_stage.harness) module_utils.
  - A run where not every prompt completed is written with C(complete=false), and fails the task unless O(fail_on_incomplete=false).
  - "Energy: each measured repeat records what the stage's GPUs (O(gpus)) drew, by NVML's energy counter or instant
    power samples (O(telemetry)), in the result's energy keys (RV(result.energy_j), RV(result.output_tokens_per_j),
    ...) and a telemetry series file beside it, C(telemetry-<dataset>-t<temperature>-c<concurrency>-r<repeat>.csv)."
  - Every run has limits, derived from the workload unless given (RV(limits) returns them); a request past one is
    recorded as failed with the reason, and what finished is kept. O(request_timeout) bounds each silent wait for
    bytes, O(request_deadline) one request from its start to its end (so a server that streams only keep-alive
    comments cannot hold it), O(run_deadline) the measured run (the warm-up gets one O(request_deadline)). A server's
    answer that breaks the stream (bad chunk framing, a line over 4 MiB, a token count beyond what was asked) fails
    its request the same way.
author:
  - specdec.bench developers (!UNKNOWN)
options:
  harness:
    description: Which client generates the load.
    type: str
    choices: [builtin, sglang]
    default: builtin
  base_url:
    description: The server's URL as the benchmark host reaches it. Requests never go through a proxy.
    type: str
    default: http://127.0.0.1:30000
  concurrency:
    description: Most requests in flight at once.
    type: int
    required: true
  num_prompts:
    description: Requests measured (warm-up requests not included). Required without O(prompts_file); with it, the number of records in the file.
    type: int
  input_len:
    description: Prompt length in tokens of the random prompts. Required without O(prompts_file).
    type: int
  output_len:
    description: Output length in tokens of the random prompts (generation ignores end-of-sequence tokens). Required without O(prompts_file).
    type: int
  prompts_file:
    description:
      - A host prompts file (JSONL, one C({"id", "category", "segments", "turns"}) a line, as the
        C(specdec.bench.workload_prepare) action writes it) to run instead of random prompts.
      - A record with k segments is a conversation of k turns; turn i sends C(segments[0] + answer_0 + ... + segments[i]).
    type: path
  dataset:
    description:
      - The prepared dataset the prompts come from, recorded in the result (C(name), C(kind), C(source),
        C(source_sha256), C(normalized_sha256), C(prompts_sha256), C(template_sha256), C(count), C(max_new_tokens),
        C(turns), C(chat_template_kwargs)); its C(name) names the result files.
      - Without it the dataset is V(random).
    type: dict
  temperature:
    description: Sampling temperature of every request.
    type: float
    default: 0.0
  top_p:
    description: Top-p of every request (0 < top_p <= 1).
    type: float
    default: 1.0
  top_k:
    description: Top-k of every request; V(-1) for none.
    type: int
    default: -1
  ignore_eos:
    description: Generate past end-of-sequence tokens (O(prompts_file) runs; random prompts always ignore them).
    type: bool
    default: true
  max_new_tokens:
    description: Most tokens generated per request of a O(prompts_file) run. Required with O(prompts_file).
    type: int
  seed:
    description: Seed of the prompts and of the request arrivals.
    type: int
    default: 1
  warmup_requests:
    description: Requests sent, all at once, before the measured run; not counted.
    type: int
    default: 1
  request_rate:
    description:
      - Mean requests per second of a Poisson arrival process (exponential gaps drawn with O(seed), the first
        request at once, as SGLang's client does), each request sent at its arrival or when a concurrency slot
        frees up, whichever is later. The SGLang client gets it as C(--request-rate).
      - Unset (or V(inf)) sends every request as soon as a concurrency slot is free.
    type: float
  burstiness:
    description:
      - The gamma shape of the arrival gaps at a finite O(request_rate) (vLLM's C(--burstiness), its
        C(benchmark_serving) C(get_request)); the gaps are gamma distributed with shape O(burstiness) and scale
        1 / (rate * O(burstiness)), so the mean gap stays 1 / rate and their coefficient of variation is
        1 / sqrt(O(burstiness)). V(1.0) is the Poisson process (the same seeded times as before this option);
        below 1 burstier, above 1 steadier. A positive number; ignored at an infinite rate.
      - The two harnesses' schedules differ. The builtin harness draws its gaps from Python's C(random) seeded with
        O(seed) (so the schedule is the same on every stage of a host, and with O(name_rate) it is written to the
        run's arrivals file); a request starts at its arrival or when one of O(concurrency) slots frees up. SGLang's
        client (C(sglang.benchmark.serving), and the older C(sglang.bench_serving)) has no C(--burstiness); it
        always draws Poisson gaps from its own numpy generator (its C(--seed)), so its times are not the builtin
        harness's and are not written; O(harness=sglang) with a O(burstiness) other than V(1.0) at a finite rate is
        refused.
    type: float
    default: 1.0
  name_rate:
    description:
      - Name the run's files with its request rate, the load family of RESULTS_LAYOUT
        (C(result-<dataset>-t<temperature>-c<concurrency>-q<rate>-r<repeat>.json), its raw, telemetry and
        C(/metrics) files alike; C(<rate>) is V(inf) for an infinite rate, else the rate as C(%g)), so a load run
        (an open-loop rate, a crossover concurrency, a point of a capacity search) never takes the place of a grid
        run's files.
      - With the builtin harness the run also writes its arrival schedule to
        C(arrivals-<dataset>-t<temperature>-c<concurrency>-q<rate>.json) (a JSON list of seconds from the run's
        start, one per conversation, rounded to 6 digits; the same bytes for the same O(seed), count, rate and
        O(burstiness)).
    type: bool
    default: false
  flush_cache:
    description:
      - C(POST /flush_cache) after the warm-up, so the server's prefix cache and its cumulative acceptance length
        (C(/server_info)) start from the measured run (the SGLang client's C(--flush-cache)).
    type: bool
    default: true
  output_dir:
    description: Folder for the result file and the raw output; created when missing.
    type: path
    required: true
  stage:
    description: The stage id, copied into the result row.
    type: str
  request_timeout:
    description:
      - Seconds a request may wait for its next bytes (the connection, the first token, any later chunk) before it
        fails (builtin harness).
      - Default V(60 + input_len * concurrency / 2000), in seconds. A wave of prompts is prefilled before the last
        of them gets a token, at 2000 prompt tokens a second at least. With O(prompts_file), input_len is the
        characters of its longest conversation (more than its tokens) plus O(max_new_tokens) per answer in it.
    type: float
  request_deadline:
    description:
      - Seconds one request may take from its start to its end; past it the request is ended and recorded as
        failed, C(DeadlineExceeded) (builtin harness).
      - Default O(request_timeout) V(+ output_len * 0.5) (2 output tokens a second at least); O(max_new_tokens) with O(prompts_file).
    type: float
  run_deadline:
    description:
      - Seconds the measured run may take from its start. Past it the requests in flight are ended and those not
        yet sent are not sent, all recorded as failed, C(DeadlineExceeded), next to what finished.
      - Default V(2 * num_prompts / request_rate) (the arrivals, none for an infinite rate) plus
        V(ceil(num_prompts / concurrency)) times O(request_deadline) (every wave of requests at its slowest); with
        O(prompts_file), num_prompts counts every turn.
      - For O(harness=sglang) SGLang's client is stopped when O(run_deadline), one O(request_deadline) for its
        warm-up and 180 s for its start-up and cache flush have passed; its own limit per request is 6 hours and it
        writes no result when stopped, so such a run is recorded with no completed request.
    type: float
  fail_on_incomplete:
    description: Fail the task (after writing the files) when not every prompt of a repeat completed.
    type: bool
    default: true
  repeats:
    description:
      - How many times the cell is measured (1 to 100), each repeat after a cache flush, all after one warm-up pass.
        Complete repeats already in O(output_dir) with the same requests are reused (see the description).
    type: int
    default: 1
  gpus:
    description:
      - The stage's GPUs by UUID (C(GPU-...)), whose energy and telemetry each measured repeat records
        (C(specdec.bench.bench_stage) passes the plan stage's C(gpus)).
      - Empty, no telemetry; the result's energy keys are null and RV(result.energy_note) says why.
    type: list
    elements: str
    default: []
  telemetry:
    description:
      - How the GPUs of O(gpus) are measured during each measured repeat (never the warm-up) on the host. After the
        cache flush, their idle power over 0.5 s; then sampling from right before the first request to right after
        the last response, every O(telemetry_interval); the series goes to
        C(telemetry-<dataset>-t<temperature>-c<concurrency>-r<repeat>.csv) beside the result.
      - Energy is NVML's total-energy counter where every GPU has it (RV(result.energy_method) V(counter)), else
        the instant power samples integrated over the run (V(samples)); never the 1-second average C(power.draw)
        where the instant reading exists. See C(docs/telemetry.md).
      - V(auto) takes the first backend that works of V(pynvml) (nvidia-ml-py, where importable), V(ctypes) (a
        binding to the driver's C(libnvidia-ml.so.1)) and V(nvidia-smi) (C(--query-gpu ... -lms), a subprocess,
        no counter). V(off) measures nothing.
      - A telemetry failure never fails the run; the energy keys are then null and RV(result.energy_note) carries
        the error. A reading that is not a finite number (a driver's NaN or inf) is dropped, counted in
        RV(result.energy_note), and the figures come from the rest (null when nothing finite is left); the row is
        written either way.
      - With O(harness=sglang) the sampling spans the client's whole process; the figures are narrowed to its
        measured run (its duration, ending when it wrote its output file) by the samples, so its
        RV(result.energy_method) is V(samples).
    type: str
    choices: [auto, 'off', pynvml, ctypes, nvidia-smi]
    default: auto
  telemetry_interval:
    description: Seconds between telemetry samples, 0.05 to 1.
    type: float
    default: 0.1
  metrics:
    description:
      - GET the server's Prometheus C(/metrics) right before and right after each measured repeat (never the warm-up)
        and keep both texts in C(raw-<dataset>-t<temperature>-c<concurrency>-r<repeat>.metrics.json) beside the result
        (RV(result.metrics_file)); builtin harness. SGLang serves it only with C(--enable-metrics) (the campaign's
        C(enable_metrics)).
      - A server without it (HTTP 404), a failed scrape or a text over 8 MiB leaves RV(result.metrics_file) null and
        RV(result.metrics_note) saying why; it never fails the run.
    type: bool
    default: true
  python:
    description: The interpreter that has SGLang installed (the server's own), for O(harness=sglang).
    type: path
    default: python3
  tokenizer:
    description:
      - A tokenizer folder (or name) for SGLang's client, passed as C(--tokenizer) (O(harness=sglang)).
      - Hosts without access to a model hub need a local folder.
    type: str
  extra_args:
    description: More arguments appended to the SGLang client's command line (O(harness=sglang)).
    type: list
    elements: str
    default: []
  environment:
    description:
      - Environment variables for SGLang's client (O(harness=sglang)), for example C(HF_HUB_OFFLINE=1) on hosts with
        no model hub.
    type: dict
    default: {}
extends_documentation_fragment:
  - specdec.bench.attributes
attributes:
  check_mode:
    support: full
    details:
      - In check mode no request is sent, no file is read or written; the result is marked skipped.
  diff_mode:
    support: none
seealso:
  - module: specdec.bench.sglang_ready
"""

EXAMPLES = r"""
- name: Run GSM8K's templated prompts at temperature 0, stopping at end-of-sequence
  specdec.bench.bench_run:
    concurrency: 4
    prompts_file: /var/lib/specdec/datasets/0f3c5e.jsonl
    max_new_tokens: 2048
    ignore_eos: false
    temperature: 0.0
    dataset: "{{ __bench_stage_dataset }}"
    output_dir: /root/bench_results/ct200-main/tp1-dflash
    stage: tp1-dflash

- name: Run the builtin harness at concurrency 4, three times (after one warm-up, a cache flush before each)
  specdec.bench.bench_run:
    harness: builtin
    base_url: http://127.0.0.1:30001
    concurrency: 4
    repeats: 3
    num_prompts: 64
    input_len: 1024
    output_len: 256
    output_dir: /root/bench_results/ct200-main/tp1-dflash
    stage: tp1-dflash
  register: __bench_stage_result

- name: Run SGLang's own client in the server's virtual environment
  specdec.bench.bench_run:
    harness: sglang
    python: /opt/sglang/bin/python
    tokenizer: /models/Qwen3.6-27B
    environment:
      HF_HUB_OFFLINE: "1"
    concurrency: 16
    num_prompts: 256
    input_len: 1024
    output_len: 256
    output_dir: /root/bench_results/ct200-main/tp1-dflash
"""

RETURN = r"""
results:
  description:
    - The normalized result row of each repeat, in repeat order, as written to its result file (see RV(result) for
      the keys), with two more keys, C(reused) (true for a repeat found in O(output_dir) and not run again) and
      C(result_file) (where the row is).
    - A cell cut short by a repeat that did not complete lists the repeats up to it.
  returned: success and failure, unless in check mode or the options are invalid
  type: list
  elements: dict
  sample: [{repeat: 1, repeats: 3, output_throughput: 1332.0, reused: true,
            result_file: /root/bench_results/ct200-main/tp1-dflash/result-random-t0-c4-r1.json}]
result:
  description:
    - With O(repeats=1), the normalized result row, as written to RV(result_file). Times are in milliseconds,
      throughputs per second.
    - With more, the cell's summary of RV(results), with the same keys. It has the run's keys and C(repeats), the
      counts summed, C(complete) when every repeat is, each other statistic (C(output_throughput) and
      C(accept_length) among them) the mean over the repeats that have it, C(repeat) and C(raw_file) null.
    - Statistics of requests that did not complete are left out; a statistic with no value is null.
  returned: success and failure, unless in check mode or the options are invalid
  type: dict
  contains:
    schema_version:
      description: Version of this schema.
      type: int
      returned: always
      sample: 1
    harness:
      description: V(builtin) or V(sglang).
      type: str
      returned: always
      sample: builtin
    stage:
      description: O(stage).
      type: str
      returned: always
      sample: tp1-dflash
    concurrency:
      description: O(concurrency).
      type: int
      returned: always
      sample: 4
    num_prompts:
      description: O(num_prompts).
      type: int
      returned: always
      sample: 64
    input_len:
      description: O(input_len).
      type: int
      returned: always
      sample: 1024
    output_len:
      description: O(output_len).
      type: int
      returned: always
      sample: 256
    request_rate:
      description: O(request_rate); null for an infinite rate.
      type: float
      returned: always
      sample: null
    burstiness:
      description: O(burstiness) at a finite O(request_rate); null for an infinite rate.
      type: float
      returned: always
      sample: null
    seed:
      description: O(seed).
      type: int
      returned: always
      sample: 1
    repeat:
      description: Which repeat of its cell the row is, from 1; null in a summary of several.
      type: int
      returned: always
      sample: 2
    repeats:
      description: O(repeats), the cell's planned repeats when the row was written (a reused row keeps its own).
      type: int
      returned: always
      sample: 3
    warmup_requests:
      description: O(warmup_requests), the requests of the cell's one warm-up pass before its first measured repeat.
      type: int
      returned: always
      sample: 1
    dataset:
      description: The dataset's name (C(name) of O(dataset)); V(random) for random prompts.
      type: str
      returned: always
      sample: gsm8k
    dataset_kind:
      description: V(builtin), V(file) or V(random).
      type: str
      returned: always
      sample: builtin
    dataset_source:
      description: Where the dataset came from (its URL or file); null for random prompts.
      type: str
      returned: always
      sample: https://raw.githubusercontent.com/openai/grade-school-math/master/grade_school_math/data/test.jsonl
    dataset_source_sha256:
      description: The sha256 of the source file.
      type: str
      returned: always
      sample: 3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14
    dataset_sha256:
      description: The sha256 of the normalized set (id, category, turns).
      type: str
      returned: always
      sample: 9b1e0c57a4d1a1b4e2b5f0d6c4c1fd2a7e9c3d8b5a6f7e1d2c3b4a5968778695
    prompts_sha256:
      description: The sha256 of the host prompts file (O(prompts_file)).
      type: str
      returned: always
      sample: 0f3c5e7d1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5
    template_sha256:
      description: The sha256 of the chat template the prompts were rendered with.
      type: str
      returned: always
      sample: 5d41402abc4b2a76b9719d911017c592aaf8b2e1f7c3d9a0b6e5c4d3e2f1a0b9
    turns:
      description: The turns of each conversation the harness ran, V(all) or V(first); null for random prompts.
      type: str
      returned: always
      sample: all
    temperature:
      description: O(temperature).
      type: float
      returned: always
      sample: 0.0
    top_p:
      description: O(top_p).
      type: float
      returned: always
      sample: 1.0
    top_k:
      description: O(top_k).
      type: int
      returned: always
      sample: -1
    ignore_eos:
      description: Whether generation went past end-of-sequence (always true for random prompts).
      type: bool
      returned: always
      sample: false
    max_new_tokens:
      description: Most tokens asked per request (O(output_len) for random prompts).
      type: int
      returned: always
      sample: 2048
    completed:
      description: Requests that completed.
      type: int
      returned: always
      sample: 64
    failed:
      description: Requests that did not complete (errors, and requests never sent).
      type: int
      returned: always
      sample: 0
    complete:
      description: Every prompt completed and the run was not cut short.
      type: bool
      returned: always
      sample: true
    requests:
      description: Requests sent in the measured run (one per turn of a conversation).
      type: int
      returned: always
      sample: 64
    mean_output_len:
      description: Mean output tokens of the completed requests, as generated (a request that stopped at end-of-sequence counts what it generated).
      type: float
      returned: always
      sample: 241.5
    duration_s:
      description: Seconds from the first request to the end of the last.
      type: float
      returned: always
      sample: 12.3
    total_input_tokens:
      description: Prompt tokens of the completed requests.
      type: int
      returned: always
      sample: 65536
    total_output_tokens:
      description: Output tokens of the completed requests.
      type: int
      returned: always
      sample: 16384
    output_throughput:
      description: Output tokens per second.
      type: float
      returned: always
      sample: 1332.0
    request_throughput:
      description: Completed requests per second.
      type: float
      returned: always
      sample: 5.2
    mean_ttft_ms:
      description: Mean time to first token. C(median_ttft_ms) and C(p99_ttft_ms) are its median and 99th percentile.
      type: float
      returned: always
      sample: 71.2
    mean_itl_ms:
      description: Mean inter-token latency, a chunk's gap spread over its tokens. C(median_itl_ms), C(p99_itl_ms) likewise.
      type: float
      returned: always
      sample: 10.2
    mean_tpot_ms:
      description: Mean time per output token after the first. C(median_tpot_ms), C(p99_tpot_ms) likewise.
      type: float
      returned: always
      sample: 16.2
    mean_e2e_latency_ms:
      description: Mean request latency. C(median_e2e_latency_ms), C(p99_e2e_latency_ms) likewise.
      type: float
      returned: always
      sample: 536.0
    accept_length:
      description:
        - Accepted tokens per verify step of the run's own requests, the sum of their C(completion_tokens) over the
          sum of their C(spec_verify_ct) (final C(meta_info)), over the completed requests that carry it; null
          when none does (no speculative decoding, or the sglang harness, whose client keeps no per-request count).
      type: float
      returned: always
      sample: 3.53
    accept_length_source:
      description: V(requests) when RV(result.accept_length) has a value, else null.
      type: str
      returned: always
      sample: requests
    accept_length_server_info:
      description: C(/server_info)'s C(avg_spec_accept_length) after the run (since the cache flush, warm-up included), the cross-check.
      type: float
      returned: always
      sample: 3.51
    accept_length_disagreement:
      description:
        - Relative gap C(|accept_length - accept_length_server_info| / accept_length_server_info); null without both.
        - C(/server_info) counts only the tokens of verify steps, not each request's first token (made by prefill), so
          even an exact server is lower, by about 1 / the mean output length; short runs are flagged for that alone.
      type: float
      returned: always
      sample: 0.0057
    accept_length_flag:
      description: True when RV(result.accept_length_disagreement) is over 0.02.
      type: bool
      returned: always
      sample: false
    accept_length_p10:
      description:
        - 10th percentile of the requests' own acceptance lengths (C(completion_tokens / spec_verify_ct)).
        - C(accept_length_median) and C(accept_length_p90) likewise.
      type: float
      returned: always
      sample: 2.9
    accept_rate:
      description:
        - The sum of the requests' C(spec_num_correct_drafts) over the sum of their C(spec_num_proposed_drafts)
          (SGLang's final C(meta_info)), pooled; null when no request carries them (no speculative decoding, or the
          sglang harness).
      type: float
      returned: always
      sample: 0.62
    accept_length_mean_of_means:
      description:
        - The mean over the requests with C(spec_verify_ct > 0) of their own C(completion_tokens / spec_verify_ct)
          (DDTree's and dflash's mean acceptance).
      type: float
      returned: always
      sample: 3.41
    accept_length_token_weighted:
      description: C(sum_i tokens_i * tau_i / sum_i tokens_i) over the same requests, C(tau_i = tokens_i / spec_verify_ct_i).
      type: float
      returned: always
      sample: 3.55
    accept_histogram:
      description:
        - The requests' C(spec_correct_drafts_histogram) summed element-wise; index the number of correct drafts in
          a verify step, value the verify steps. Null when no request carries one.
      type: list
      elements: int
      returned: always
      sample: [120, 80, 60, 40]
    accept_by_position:
      description:
        - "For draft position C(i = 1 .. len(accept_histogram) - 1), entry C(i - 1) is C(sum_{j >= i} hist[j] / sum(hist)),
          the chance the i-th draft token is accepted in a verify step."
      type: list
      elements: float
      returned: always
      sample: [0.6, 0.333, 0.133]
    decode_tpot_sd_ms:
      description:
        - The sample standard deviation (n - 1) of the requests' TPOT (RV(result.mean_tpot_ms) is their mean), over
          the RV(result.decode_tpot_n) requests with more than one output token; null for fewer than two.
      type: float
      returned: always
      sample: 1.7
    decode_tpot_n:
      description: The number of requests with a TPOT (more than one output token).
      type: int
      returned: always
      sample: 64
    decode_time_s:
      description: The sum over those requests of their decode time, latency less TTFT (the first token excluded).
      type: float
      returned: always
      sample: 212.4
    decode_tokens:
      description: The sum over those requests of their output tokens less one.
      type: int
      returned: always
      sample: 16320
    decode_steps:
      description:
        - The sum over those requests of C(spec_verify_ct) when every one carries it (a speculative server), their
          RV(result.decode_tokens) when none does (autoregressive, one token per forward step), null when mixed.
      type: int
      returned: always
      sample: 4620
    step_time_ms:
      description: RV(result.decode_time_s) / RV(result.decode_steps) * 1000, a request's time per decode step.
      type: float
      returned: always
      sample: 45.97
    request_tokens_per_s_mean:
      description: The mean over the completed requests of output tokens / E2E latency (Spec-Bench's per-request speed).
      type: float
      returned: always
      sample: 74.2
    cached_tokens:
      description: The sum of the requests' C(cached_tokens) (prompt tokens the server's radix cache served); null when none carries it.
      type: int
      returned: always
      sample: 2048
    cache_hit_rate:
      description: RV(result.cached_tokens) over the sum of the same requests' C(prompt_tokens).
      type: float
      returned: always
      sample: 0.31
    cache_hit_rate_by_turn:
      description: The same ratio per turn of the conversations (index the turn, from 0; null for a turn without data).
      type: list
      elements: float
      returned: always
      sample: [0.02, 0.71]
    metrics_file:
      description:
        - The name, in O(output_dir), of the file holding the server's C(/metrics) text scraped right before and right
          after the measured run (see O(metrics)).
        - 'Its JSON: C({"before": {"t": <unix time>, "text": <the /metrics text>}, "after": {...}}).'
        - Null when not scraped (RV(result.metrics_note) says why).
      type: str
      returned: always
      sample: raw-random-t0-c4-r1.metrics.json
    metrics_note:
      description:
        - Why there is no RV(result.metrics_file) (O(metrics) off, the server serves no C(/metrics), the sglang harness,
          a scrape too large); null otherwise.
      type: str
      returned: always
      sample: null
    mean_client_lag_ms:
      description:
        - Builtin harness; mean delay from when a request was meant to start to when it did. C(p99_client_lag_ms)
          and C(max_client_lag_ms) likewise. Null for the sglang harness.
      type: float
      returned: always
      sample: 0.08
    errors:
      description: The first few distinct errors of failed requests.
      type: list
      elements: str
      returned: always
      sample: ["ConnectionRefusedError: [Errno 111] Connection refused"]
    raw_file:
      description: The harness's raw output beside the result.
      type: str
      returned: always
      sample: /root/bench_results/ct200-main/tp1-dflash/raw-random-t0-c4-r1.jsonl
    energy_j:
      description:
        - Joules the GPUs of O(gpus) drew together during the measured run (see O(telemetry)); null when not
          measured (RV(result.energy_note) says why).
      type: float
      returned: always
      sample: 9264.1
    avg_power_w:
      description: RV(result.energy_j) over the sampled run's seconds, all of O(gpus) together.
      type: float
      returned: always
      sample: 612.4
    idle_power_w:
      description: Mean power of O(gpus) together over 0.5 s after the cache flush, just before the run.
      type: float
      returned: always
      sample: 121.9
    output_tokens_per_j:
      description: RV(result.total_output_tokens) over RV(result.energy_j).
      type: float
      returned: always
      sample: 1.77
    j_per_output_token:
      description: RV(result.energy_j) over RV(result.total_output_tokens).
      type: float
      returned: always
      sample: 0.565
    energy_method:
      description: V(counter) (NVML's energy counter on every GPU) or V(samples) (instant power samples integrated).
      type: str
      returned: always
      sample: counter
    energy_backend:
      description: V(pynvml), V(ctypes) or V(nvidia-smi).
      type: str
      returned: always
      sample: pynvml
    energy_samples:
      description: Samples taken during the run, per GPU (the fewest of any GPU).
      type: int
      returned: always
      sample: 124
    power_source:
      description: V(instant) (the instant power reading) or V(average) (a 1-second average, where a driver offers nothing else).
      type: str
      returned: always
      sample: instant
    gpu_throttled:
      description: Clock event reasons other than C(gpu_idle) seen on any GPU during the run (C(sw_power_cap), C(hw_slowdown), ...); empty when none.
      type: list
      elements: str
      returned: always
      sample: []
    telemetry_file:
      description:
        - The telemetry series file's name, in O(output_dir).
        - Its columns are C(t_s), C(uuid), C(power_w), C(sm_util), C(mem_used_mib), C(sm_clock), C(mem_clock),
          C(temp_c) and C(reasons).
      type: str
      returned: always
      sample: telemetry-random-t0-c4-r1.csv
    energy_note:
      description:
        - Why there is no energy (telemetry off, no O(gpus), the backend's error), or what to know about it (such as
          the non-finite readings dropped); null otherwise.
      type: str
      returned: always
      sample: null
limits:
  description: The limits the run had, in seconds, given or derived from the workload (see O(request_timeout), O(request_deadline), O(run_deadline)).
  returned: unless in check mode or the options are invalid
  type: dict
  contains:
    request_timeout:
      description: O(request_timeout).
      type: float
      returned: always
      sample: 60.5
    request_deadline:
      description: O(request_deadline).
      type: float
      returned: always
      sample: 188.5
    run_deadline:
      description: O(run_deadline).
      type: float
      returned: always
      sample: 3016.0
  sample: {"request_timeout": 60.5, "request_deadline": 188.5, "run_deadline": 3016.0}
result_file:
  description: The result file of the last repeat of RV(results).
  returned: unless in check mode
  type: str
  sample: /root/bench_results/ct200-main/tp1-dflash/result-random-t0-c4-r1.json
arrivals_file:
  description: With O(name_rate) and the builtin harness, the run's arrivals file (see O(name_rate)).
  returned: when O(name_rate) is set and O(harness=builtin), unless in check mode
  type: str
  sample: /root/bench_results/ct200-main/tp1-dflash/arrivals-gsm8k-t0-c64-q2.json
elapsed_s:
  description: Wall seconds of the whole module on the host, warm-up and cache flushes included (RV(result.duration_s) is one measured run only).
  returned: unless in check mode or the options are invalid
  type: float
  sample: 12.7
warmup_s:
  description:
    - Wall seconds of the cell's warm-up pass in this call, from its start to its last request's end (read from its
      records at the head of the first repeat's raw file); V(0) when no repeat was run or O(warmup_requests=0).
    - Null for O(harness=sglang), whose client runs its warm-up inside its own process (with its start-up and the
      cache flush), and when the records cannot be read.
    - With RV(measure_s), RV(idle_s) and RV(elapsed_s), where the call's time went (the report's time breakdown,
      C(docs/report.md)); the rest of RV(elapsed_s) is the cache flushes, reading C(/server_info) and the files.
  returned: unless in check mode or the options are invalid
  type: float
  sample: 1.9
measure_s:
  description: Seconds of the measured runs of the repeats run in this call, the sum of their RV(result.duration_s) (reused repeats not counted).
  returned: unless in check mode or the options are invalid
  type: float
  sample: 9.8
idle_s:
  description: Seconds spent sampling the GPUs' idle power before the measured runs of this call (0.5 s per repeat that has an idle power).
  returned: unless in check mode or the options are invalid
  type: float
  sample: 1.0
cmd:
  description: The SGLang client's command line (of the first repeat run, the one with the warm-up).
  returned: when O(harness=sglang) and a repeat was run
  type: list
  elements: str
  sample: ["/opt/sglang/bin/python", "-m", "sglang.benchmark.serving", "--backend", "sglang"]
skipped:
  description: True in check mode, where nothing ran.
  returned: check mode
  type: bool
  sample: true
"""

from ansible.module_utils.basic import AnsibleModule

# the engine and the names tests use live in module_utils (specdec.bench.stage_run runs it as a step)
from ansible_collections.specdec.bench.plugins.module_utils._stage.errors import StageError
from ansible_collections.specdec.bench.plugins.module_utils._stage.bench_run import (  # noqa: F401  pylint: disable=unused-import
    ARGUMENT_SPEC,
    MAX_REPEATS,
    bench_run,
    call_timings,
    warmup_seconds,
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        result = bench_run(module, module.params)
    except StageError as exc:
        module.fail_json(msg=exc.reason, **exc.evidence)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
