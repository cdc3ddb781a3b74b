# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Why the speedup is what it is, measured end to end on the SGLang emulator: per setting the report's figures.

    .venv/bin/python tests/perf/bench_why.py [--budgets 16,32,64,128] [--concurrency 1,8] [--num-prompts 8]
                                             [--input-len 256] [--output-len 128] [--time-scale 0.25]

For each setting (autoregressive, DFlash n=16, DDTree B=<budget> k=4 of the sglang-ddtree-pr29907 build) one emulator
(tests/sim/sglang_emulator, the simulated CT200's GPU 1, --enable-metrics) on 127.0.0.1, and bench_run (the module, as
a process: the builtin harness, real HTTP) at each concurrency on the same seeded random prompts, one warm-up request.
Then the report's own functions (plugins/plugin_utils/report/why.py: run_figures, decomposition, server_figures) on
the result rows: the three tau, accept rate, serving speedup (output throughput ratio), the papers' decode speedup
(AR mean TPOT / the setting's, Fieller 95%), Spec-Bench's per-request speed ratio, the verify-cost factor, the
residual, and the server's tau over its verify calls from the /metrics scrapes. One run per setting and concurrency
(figures of one run, not medians: the emulator's timing model is deterministic up to the scheduler's sleeps; rerun
to see the spread). SIM_SGLANG_TIME_SCALE scales every modelled delay alike, so ratios hold at any scale.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(REPO, '.cache', 'collections')
sys.path.insert(0, COLLECTIONS)

from ansible_collections.specdec.bench.plugins.plugin_utils import sglang_build  # noqa: E402 pylint: disable=wrong-import-position
from ansible_collections.specdec.bench.plugins.plugin_utils.report import read, why  # noqa: E402 pylint: disable=wrong-import-position

EMULATOR = os.path.join(REPO, 'tests', 'sim', 'sglang_emulator')
LAYOUT = os.path.join(REPO, 'tests', 'sim', 'layouts', 'ct200.json')
DRAFT = ('--speculative-draft-model-path', 'z-lab/Qwen3.6-27B-DFlash')


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def settings(budgets):
    out = [('AR', (), {}), ('DFlash n=16', ('--speculative-algorithm', 'DFLASH') + DRAFT + ('--speculative-num-draft-tokens', '16'), {})]
    for budget in budgets:
        out.append(('DDTree B=%d k=4' % budget, ('--speculative-algorithm', 'DDTREE') + DRAFT +
                    ('--speculative-ddtree-budget', str(budget), '--page-size', '1'), {'SGLANG_DDTREE_MAX_TOPK': '4'}))
    return out


def start(work, options, args, env, time_scale):
    port = free_port()
    environ = dict((k, v) for k, v in os.environ.items() if not k.startswith(('SIM_', 'SGLANG_')))
    environ.update({'PYTHONPATH': EMULATOR, 'SIM_GPU_STATE_DIR': os.path.join(work, 'state-%d' % port), 'SIM_GPU_LAYOUT': LAYOUT,
                    'SIM_SGLANG_LOAD_SECONDS': '0.2', 'SIM_SGLANG_TIME_SCALE': str(time_scale), 'SIM_SGLANG_CHECK_MEMORY': '0',
                    'SIM_SGLANG_OPTIONS_DIR': options, 'SIM_SGLANG_BUILD': 'sglang-ddtree-pr29907', 'CUDA_VISIBLE_DEVICES': '1'})
    environ.update(env)
    log = open(os.path.join(work, 'emulator-%d.log' % port), 'w', encoding='utf-8')  # pylint: disable=consider-using-with
    proc = subprocess.Popen([sys.executable, '-m', 'sglang.launch_server', '--model-path', 'Qwen/Qwen3.6-27B', '--host', '127.0.0.1',
                             '--port', str(port), '--enable-metrics'] + list(args), env=environ, stdout=log, stderr=subprocess.STDOUT, cwd=work)
    base = 'http://127.0.0.1:%d' % port
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + 30.0
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with opener.open(base + '/health', timeout=2) as response:
                if response.status == 200:
                    return proc, base
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    proc.kill()
    raise SystemExit('the emulator did not become ready: %s' % ' '.join(args))


def bench(base, out_dir, concurrency, opts):
    args = {'ANSIBLE_MODULE_ARGS': dict(base_url=base, concurrency=concurrency, num_prompts=opts.num_prompts, input_len=opts.input_len,
                                        output_len=opts.output_len, seed=11, warmup_requests=1, output_dir=out_dir, stage='why')}
    path = os.path.join(out_dir, 'args.json')
    os.makedirs(out_dir, exist_ok=True)
    with open(path, 'w', encoding='utf-8') as handle:
        json.dump(args, handle)
    env = dict(os.environ, PYTHONPATH=COLLECTIONS)
    done = subprocess.run([sys.executable, '-m', 'ansible_collections.specdec.bench.plugins.modules.bench_run', path],
                          env=env, capture_output=True, text=True, check=False, timeout=1800)
    result = json.loads(done.stdout)
    if result.get('failed'):
        raise SystemExit('bench_run failed: %s' % result.get('msg'))
    row = result['result']
    scrape = read.read_metrics(os.path.join(out_dir, row['metrics_file'])) if row.get('metrics_file') else {'error': row.get('metrics_note')}
    return row, scrape


def fmt(value, digits=2):
    return '-' if value is None else '%.*f' % (digits, value)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('--budgets', default='16,32,64,128')
    parser.add_argument('--concurrency', default='1,8')
    parser.add_argument('--num-prompts', type=int, default=8)
    parser.add_argument('--input-len', type=int, default=256)
    parser.add_argument('--output-len', type=int, default=128)
    parser.add_argument('--time-scale', type=float, default=0.25)
    opts = parser.parse_args()
    work = tempfile.mkdtemp(prefix='specdec-why-')
    options = os.path.join(work, 'options')
    sglang_build.write_option_lists(options)
    concurrencies = [int(value) for value in opts.concurrency.split(',')]
    measured = {}
    for label, args, env in settings([int(value) for value in opts.budgets.split(',')]):
        proc, base = start(work, options, args, env, opts.time_scale)
        try:
            for concurrency in concurrencies:
                out_dir = os.path.join(work, '%s-c%d' % (label.replace(' ', '_').replace('=', ''), concurrency))
                measured[(label, concurrency)] = bench(base, out_dir, concurrency, opts)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print('| c | setting | tau* | tau mean | tau tok-w | accept rate | serving | decode [95%] | Spec-Bench | verify cost | residual '
          '| server tau (verify) | tau (decode) |')
    print('| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |')
    for concurrency in concurrencies:
        base_row = measured[('AR', concurrency)][0]
        base = why.run_figures([base_row])[0]
        for label, _args, _env in settings([int(value) for value in opts.budgets.split(',')]):
            row, scrape = measured[(label, concurrency)]
            mine = why.run_figures([row])[0]
            parts = why.decomposition(mine, base, same=label == 'AR')
            server = why.server_figures([scrape])
            interval = '%s [%s, %s]' % (fmt(parts['speedup_decode']), fmt(parts['speedup_decode_ci_low']), fmt(parts['speedup_decode_ci_high']))
            print('| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
                concurrency, label, fmt(row['accept_length']), fmt(mine['accept_length_mean_of_means']),
                fmt(mine['accept_length_token_weighted']), fmt(mine['accept_rate'], 3),
                fmt(row['output_throughput'] / base_row['output_throughput']), interval, fmt(parts['speedup_specbench']),
                fmt(parts['verify_cost_factor']), fmt(parts['residual']), fmt(server['server_accept_length']), fmt(mine['tau_decode'])))
    print('\none run per setting and concurrency; %d random prompts of %d tokens, %d new tokens each; emulator time scale %s'
          % (opts.num_prompts, opts.input_len, opts.output_len, opts.time_scale))


if __name__ == '__main__':
    main()
