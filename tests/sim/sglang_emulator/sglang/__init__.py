"""An emulator of the SGLang server for tests with no GPU (see tests/sim/README.md).

Only ``python3 -m sglang.launch_server ...`` is provided, with the flags of the SGLang build the host
simulates (``sglang.srt.server_args``: the option list generated from real SGLang's parser, plus the build's
own; an unknown flag exits with status 2 and argparse's message, as in SGLang) and its HTTP API: /health, /health_generate, /model_info,
/server_info, /flush_cache, /v1/models, /generate, /v1/completions, /v1/chat/completions, and /metrics with
--enable-metrics (the build's <build>.metrics.json beside its option list: SGLang's metric names, types, help texts
and labels, in prometheus_client's multiprocess exposition format). The "+sim" version marks it as the emulator.

Each DP rank keeps a radix prefix cache as SGLang's (page size 1, LRU eviction within max_total_num_tokens, emptied by
/flush_cache, off with --disable-radix-cache): meta_info.cached_tokens, the prefill log's #cached-token and the
prefill time follow the hits. Text prompts are tokenized 4 UTF-8 bytes a token (prefix-stable: turn 2 of a
conversation hits turn 1's prompt and answer). See tests/sim/README.md.

What SGLang has no flag for comes from the environment:

    SIM_SGLANG_LOAD_SECONDS   2      start -> ready; every route answers 503 meanwhile
    SIM_SGLANG_BUILD          -      the build whose flags are accepted; else /etc/sim-sglang/build, else sglang-0.5.23
    SIM_SGLANG_OPTIONS_DIR    /usr/share/sim-sglang/builds   where <build>.json option lists are
    SIM_SGLANG_FAULT          ""     fail_start | crash | never_ready | lossy
    SIM_SGLANG_CRASH_AFTER    3      crash: generate requests served before the one that dies mid-stream
                                     (a streamed one dies only once its client was sent the tokens so far)
    SIM_SGLANG_LOSSY_AFTER    16     lossy: a speculative server at temperature 0 emits, from this output position
                                     on (0-based), a filler word other than the target model's token at every
                                     position but the EOS (same length and timing, other text: not lossless); an
                                     autoregressive server ignores the fault (and logs that it does)
    SIM_SGLANG_ANSWERS        -      the answers file (TEST-ONLY, no model's figures): a path, or "none"; else
                                     /etc/sim-sglang/answers.json where it exists, else none. A text prompt holding
                                     one of its needles (the longest) gets an output that begins with that needle's
                                     right text with probability accuracy[method] ("autoregressive", "dflash",
                                     "ddtree", ...; else "default", else 1), else its wrong text; the draw comes from
                                     the needle alone at temperature 0 (methods of equal accuracy answer alike), from
                                     the needle and the request's seed when sampling. Answer tokens carry up to 4
                                     UTF-8 bytes each (ids from 2**30, _sim_engine.answer_tokens); filler words
                                     follow, and the EOS comes no earlier than just after the answer.
                                     tests/sim/answers/make_answers.py writes the demo prompts' file
    SIM_SGLANG_TIME_SCALE     1      multiplies every modelled delay; 0 = zero delay: no sleeping, the
                                     scheduler runs ahead and each step's chunk goes out as fast as the
                                     server can write it (still one chunk per step, carrying that step's tokens)
    SIM_SGLANG_STEP_SECONDS   -      every scheduler step takes exactly this long, whatever the model and the
                                     time scale say: with c requests decoding, c chunks per step, so a fixed
                                     offered chunk rate of c / this (tests/perf/bench_harness.py sweeps it)
    SIM_SGLANG_MODEL_BYTES    -      weights size; else <model>/model.safetensors.index.json, else the name ("27B")
    SIM_SGLANG_DRAFT_BYTES    -      draft weights; else the draft's index, else 8% of the target
    SIM_SGLANG_CHECK_MEMORY   1      0: skip asking nvidia-smi what is free before "loading"
    SIM_SGLANG_HBM_GBPS, SIM_SGLANG_TFLOPS, SIM_SGLANG_COMM_MS, SIM_SGLANG_ACCEPT_ALPHA,
    SIM_SGLANG_KV_BYTES_PER_TOKEN        override the performance model (see _sim_model)
    SIM_GPU_LAYOUT, SIM_GPU_STATE_DIR    the simulated GPUs and where the memory claim is written
    SIM_GPU_MEMORY_MIB                   MiB claimed per GPU (default mem_fraction_static x total)
    SGLANG_DDTREE_MAX_TOPK    4      DDTree top-k, as the DDTree build reads it
    SIM_SGLANG_SPEC_PREFIX_CACHE  keep   keep | lose; else /etc/sim-sglang/spec-prefix-cache, else keep. lose: a
                                     speculative server loses its prefix-cache hits (cached_tokens 0, full prefill),
                                     as reported for hybrid Mamba/attention targets such as Qwen3.6
                                     (https://github.com/sgl-project/sglang/issues/20451,
                                     https://github.com/vllm-project/vllm/issues/51250); autoregressive servers keep them
    SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN   as in SGLang (checked against <model>/config.json)

Every chunk of a streamed native /generate carries meta_info.sim_sent_at, a sim-only key: the server's
time.perf_counter() (CLOCK_MONOTONIC on Linux, one clock for every process on the host) just before the
chunk was written, so a client on the same host can measure its own delivery delay. SGLang clients ignore
meta_info keys they do not know.

Where it differs from SGLang on purpose:
- the port is bound at once and answers 503 while loading (SGLang binds after loading);
- /server_info's avg_spec_accept_length counts every verify step (SGLang adds to it every
  --decode-log-interval steps, so a short run there may show none);
- /metrics sums the DP ranks into one series per family (SGLang labels the scheduler's by dp_rank).
"""

__version__ = "0.5.23+sim"
