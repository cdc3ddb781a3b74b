# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""A simulated drafter trainer: stands in for speculators' train.py in tests (Python 3 standard library only).

It logs as real trainers do, so that the monitor reads it like the real thing: start-up lines, a tqdm bar on stderr
rewritten with carriage returns, and a JSON metrics line on stdout every --log-every steps, at a set pace, with a loss
that falls. It saves a small checkpoint in $SPECDEC_RUN_DIR/checkpoints at the end and exits 0.

It fails midway (a CUDA out-of-memory traceback on stderr, exit 1) at step --fail-at, or as soon as the file
--fail-file exists, so a test can make a running trainer fail when it wants. SIGTERM stops it like torchrun: a line
and exit 143.

Every option also reads an environment variable (SIM_TRAINER_<OPTION>), so one unit template serves both; with
SPECDEC_RUN_MODE=smoke (what train_run sets for a smoke run) the run is --smoke-steps long.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import signal
import sys
import time

BAR_WIDTH = 20


def _env(name, default):
    return os.environ.get('SIM_TRAINER_' + name, default)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog='sim_trainer', description=__doc__.splitlines()[0])
    parser.add_argument('--steps', type=int, default=int(_env('STEPS', '200')), help='steps of a full run')
    parser.add_argument('--smoke-steps', type=int, default=int(_env('SMOKE_STEPS', '20')), help='steps of a smoke run')
    parser.add_argument('--pace', type=float, default=float(_env('PACE', '0.2')), help='seconds per step')
    parser.add_argument('--load-seconds', type=float, default=float(_env('LOAD_SECONDS', '0.5')))
    parser.add_argument('--log-every', type=int, default=int(_env('LOG_EVERY', '5')), help='steps between JSON lines')
    parser.add_argument('--epochs', type=int, default=int(_env('EPOCHS', '1')))
    parser.add_argument('--format', choices=['both', 'tqdm', 'json'], default=_env('FORMAT', 'both'))
    parser.add_argument('--fail-at', type=int, default=int(_env('FAIL_AT', '0')), help='fail at this step (0: never)')
    parser.add_argument('--fail-file', default=_env('FAIL_FILE', ''), help='fail as soon as this file exists')
    parser.add_argument('--seed', type=int, default=int(_env('SEED', '0')))
    parser.add_argument('--say', action='append', default=[],
                        help='a line to log at start, verbatim (SIM_TRAINER_SAY: a JSON list of them)')
    parser.add_argument('--say-every', type=int, default=int(_env('SAY_EVERY', '0')),
                        help='log the --say lines again every this many steps (0: only at start)')
    parser.add_argument('--run-dir', default=os.environ.get('SPECDEC_RUN_DIR', '.'))
    args = parser.parse_args(argv)
    extra = json.loads(_env('SAY', '[]'))
    if not isinstance(extra, list) or not all(isinstance(line, str) for line in extra):
        parser.error('SIM_TRAINER_SAY must be a JSON list of strings')
    args.say = args.say + extra
    if os.environ.get('SPECDEC_RUN_MODE') == 'smoke':
        args.steps = args.smoke_steps
    if args.steps < 1 or args.pace < 0 or args.log_every < 1 or args.epochs < 1:
        parser.error('--steps, --log-every and --epochs must be positive and --pace not negative')
    return args


def loss_at(step, total, seed):
    """A falling loss with a little seeded noise: 10.4 at the start towards 2.2."""
    noise = random.Random(seed * 100003 + step).uniform(-0.08, 0.08)
    return round(2.2 + 8.2 * math.exp(-4.0 * step / max(total, 1)) + noise, 4)


def fmt_duration(seconds):
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return ('%d:%02d:%02d' % (hours, rest // 60, rest % 60)) if hours else ('%02d:%02d' % divmod(rest, 60))


def tqdm_line(desc, step, total, elapsed, rate, postfix):
    """The bar as tqdm draws it: '{desc}: {pct:3.0f}%|{bar}| {n}/{total} [{elapsed}<{remaining}, {rate}{postfix}]'."""
    fraction = step / total
    filled = int(fraction * BAR_WIDTH)
    drawn = '\u2588' * filled + (' ' * (BAR_WIDTH - filled))
    remaining = fmt_duration((total - step) / rate) if rate else '?'
    rate_text = ('%.2fit/s' % rate) if rate and rate >= 1 else (('%.2fs/it' % (1 / rate)) if rate else '?it/s')
    extra = ''.join(', %s=%s' % item for item in postfix.items())
    return '%s: %3.0f%%|%s| %d/%d [%s<%s, %s%s]' % (
        desc, fraction * 100, drawn, step, total, fmt_duration(elapsed), remaining, rate_text, extra)


def say(text, stream=None):
    stream = stream or sys.stdout
    stream.write(text + '\n')
    stream.flush()


def fail(step):
    sys.stdout.flush()
    sys.stderr.write('\n')
    say('Traceback (most recent call last):', sys.stderr)
    say('  File "scripts/train.py", line 212, in <module>', sys.stderr)
    say('    trainer.run_training()', sys.stderr)
    say('torch.OutOfMemoryError: CUDA out of memory at step %d. Tried to allocate 2.00 GiB. '
        'GPU 0 has a total capacity of 39.38 GiB of which 1.21 GiB is free.' % step, sys.stderr)
    return 1


def run(args):
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(say('Received SIGTERM, stopping training') or 143))
    for line in args.say:
        say(line)
    gpus = os.environ.get('CUDA_VISIBLE_DEVICES', '')
    say('Loading verifier config and draft model (dflash, 5 layers) on GPUs %s' % (gpus or 'none'))
    time.sleep(args.load_seconds)
    total = args.steps * args.epochs
    say('Starting training: %d epoch(s), %d steps per epoch, %d steps' % (args.epochs, args.steps, total))
    start = time.time()
    load = power_publisher()
    try:
        return train(args, total, start, load)
    finally:
        if load is not None:
            load.set(0.0)


# The GPUs' load while training (0..1 from idle to peak board power), for the simulated power.
TRAIN_LOAD = 0.85


def power_publisher():
    """Publishes the training load on the visible GPUs (sim_gpu_power, on the sim image's path), or None."""
    try:
        import sim_gpu_power
    except ImportError:
        return None
    keys = sim_gpu_power.visible_keys()
    return sim_gpu_power.Publisher('%d.0' % os.getpid(), keys) if keys else None


def train(args, total, start, load):
    step = 0
    for epoch in range(args.epochs):
        for _epoch_step in range(args.steps):
            if load is not None:
                load.set(TRAIN_LOAD, busy_for_s=args.pace)
            if args.pace:
                time.sleep(args.pace)
            step += 1
            if step == args.fail_at or (args.fail_file and os.path.exists(args.fail_file)):
                return fail(step)
            if args.say_every and step % args.say_every == 0 and args.say:
                sys.stderr.write('\r\n')
                for line in args.say:
                    say(line)
            loss = loss_at(step, total, args.seed)
            elapsed = time.time() - start
            rate = step / elapsed if elapsed > 0 else None
            if args.format in ('both', 'tqdm'):
                sys.stderr.write('\r' + tqdm_line('Epoch %d' % epoch, step, total, elapsed, rate, {'loss': loss}))
                sys.stderr.flush()
            if args.format in ('both', 'json') and (step % args.log_every == 0 or step == total):
                if args.format == 'both':
                    # as tqdm.write does: leave the bar's line before printing, so no line holds both
                    sys.stderr.write('\r\n')
                    sys.stderr.flush()
                say(json.dumps({'step': step, 'total_steps': total, 'epoch': epoch, 'loss': loss,
                                'lr': round(3e-4 * (1 - step / total), 8), 'time': round(time.time(), 3)}))
    sys.stderr.write('\n')
    checkpoints = os.path.join(args.run_dir, 'checkpoints', 'final')
    os.makedirs(checkpoints, exist_ok=True)
    with open(os.path.join(checkpoints, 'config.json'), 'w', encoding='utf-8') as handle:
        json.dump({'speculators_model_type': 'dflash', 'simulated': True, 'steps': total}, handle)
    say('Saved checkpoint to %s' % checkpoints)
    say('Training complete: %d steps in %.1f s' % (total, time.time() - start))
    return 0


def main(argv=None):
    return run(parse_args(argv))


if __name__ == '__main__':
    sys.exit(main())
