# Copyright: (c) specdec.bench contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stage engine, plain functions: one file per module it serves, named as the module (stage_attempt, sglang_ready,
bench_run, stage_record, stage_run), each returning the module's result or raising errors.StageError(reason, evidence);
and the benchmark harness they run (harness: result schema; harness_run; builtin_harness and builtin_driver: the builtin
load generator; sglang_http: the HTTP/SSE reader; sglang_client: SGLang's own client). Relative imports inside."""
