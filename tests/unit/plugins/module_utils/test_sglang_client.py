# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""_sglang_client: the SGLang client's command line, its deadline, and the stopper against a real process.
The whole driver runs in tests/unit/plugins/modules/test_bench_run.py."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from ansible_collections.specdec.bench.plugins.module_utils._stage import sglang_client as _sglang_client
from ansible_collections.specdec.bench.plugins.module_utils._stage.sglang_client import ClientStopper, client_deadline, sglang_command

PARAMS = dict(base_url='http://127.0.0.1:30001', input_len=1024, output_len=256, num_prompts=64, concurrency=4,
              request_rate=None, seed=7, warmup_requests=2, flush_cache=True, tokenizer=None, extra_args=[])


def test_the_command_mirrors_the_builtin_workload():
    command = sglang_command('/opt/sglang/bin/python', 'sglang.benchmark.serving', PARAMS, '/tmp/out.partial')
    assert command == [
        '/opt/sglang/bin/python', '-m', 'sglang.benchmark.serving', '--backend', 'sglang', '--base-url', 'http://127.0.0.1:30001',
        '--dataset-name', 'random-ids', '--random-input-len', '1024', '--random-output-len', '256', '--random-range-ratio', '1.0',
        '--num-prompts', '64', '--max-concurrency', '4', '--request-rate', 'inf', '--seed', '7', '--warmup-requests', '2',
        '--output-file', '/tmp/out.partial', '--flush-cache']


def test_the_command_takes_the_rate_tokenizer_and_extra_arguments_last():
    params = dict(PARAMS, request_rate=float('inf'), flush_cache=False, tokenizer='/models/tok', extra_args=['--disable-tqdm'])
    command = sglang_command('python3', 'sglang.bench_serving', params, 'out')
    assert command[command.index('--request-rate') + 1] == 'inf' and '--flush-cache' not in command
    assert command[-3:] == ['--tokenizer', '/models/tok', '--disable-tqdm']
    paced = sglang_command('python3', 'sglang.bench_serving', dict(PARAMS, request_rate=2.5), 'out')
    assert paced[paced.index('--request-rate') + 1] == '2.5'


def test_the_clients_deadline_counts_its_setup_and_its_warm_up_only_when_it_has_one():
    limits = dict(request_timeout=5.0, request_deadline=20.0, run_deadline=100.0)
    assert client_deadline(PARAMS, limits) == _sglang_client.CLIENT_SETUP_S + 20.0 + 100.0
    assert client_deadline(dict(PARAMS, warmup_requests=0), limits) == _sglang_client.CLIENT_SETUP_S + 100.0


def test_the_stopper_ends_a_client_that_runs_past_its_deadline():
    process = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])
    stopper = ClientStopper(0.05)
    started = time.monotonic()
    stopper(process)
    assert process.wait(30) == -15  # SIGTERM
    assert stopper.stopped and time.monotonic() - started < 30


def test_the_stopper_kills_a_client_that_ignores_sigterm(monkeypatch):
    monkeypatch.setattr(_sglang_client, 'STOP_GRACE_S', 0.2)
    ready = 'import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(1, flush=True); time.sleep(60)'
    process = subprocess.Popen([sys.executable, '-c', ready], stdout=subprocess.PIPE)
    assert process.stdout.readline() == b'1\n'  # its handler is in place
    stopper = ClientStopper(0.01)
    stopper(process)
    assert process.wait(30) == -9  # SIGKILL
    process.stdout.close()
    assert stopper.stopped


def test_a_cancelled_stopper_leaves_the_client_alone():
    process = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(0.5)'])
    stopper = ClientStopper(0.1)
    stopper(process)
    stopper.cancel()
    assert process.wait(30) == 0 and not stopper.stopped


def test_the_custom_dataset_holds_each_records_templated_first_turn():
    records = [{'id': 'a', 'category': 'math', 'segments': ['<u>one "q"\n</u><a>', '<u>two</u><a>']},
               {'id': 'b', 'category': 'code', 'segments': ['<u>def f():</u><a>']}]
    lines = [json.loads(line) for line in _sglang_client.custom_dataset(records).splitlines()]
    assert [line['conversations'][0] for line in lines] == [
        {'role': 'user', 'content': '<u>one "q"\n</u><a>'}, {'role': 'user', 'content': '<u>def f():</u><a>'}]
    # the client drops a record without an assistant turn it can read; --sharegpt-output-len overrides its length
    assert all(line['conversations'][1] == {'role': 'assistant', 'content': _sglang_client.PLACEHOLDER_ANSWER} for line in lines)


def test_the_prompts_command_runs_the_custom_dataset_with_the_sampling_params():
    params = dict(PARAMS, max_new_tokens=2048, temperature=0.7, top_p=0.95, ignore_eos=False)
    command = sglang_command('python3', 'sglang.benchmark.serving', params, 'out', '/r/raw.input.jsonl', 12)
    assert command[command.index('--dataset-name') + 1:command.index('--max-concurrency')] == [
        'custom', '--dataset-path', '/r/raw.input.jsonl', '--sharegpt-output-len', '2048', '--num-prompts', '12']
    assert '--random-input-len' not in command and '--apply-chat-template' not in command
    assert command[command.index('--temperature') + 1] == '0.7' and command[command.index('--top-p') + 1] == '0.95'
    assert '--disable-ignore-eos' in command
    greedy = sglang_command('python3', 'sglang.benchmark.serving', dict(params, temperature=0.0, top_p=1.0, ignore_eos=True),
                            'out', '/r/raw.input.jsonl', 12)
    assert '--temperature' not in greedy and '--top-p' not in greedy and '--disable-ignore-eos' not in greedy
    # random prompts ignore EOS whatever the option says, as the builtin harness
    assert '--disable-ignore-eos' not in sglang_command('python3', 'sglang.benchmark.serving', params, 'out')
