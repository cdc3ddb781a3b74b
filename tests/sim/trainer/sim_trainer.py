# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""A simulated drafter trainer: stands in for speculators' train.py in tests (Python 3 standard library only).

It logs as real trainers do, so that the monitor reads it like the real thing: start-up lines, a tqdm bar on stderr
rewritten with carriage returns, and a JSON metrics line on stdout every --log-every steps, at a set pace, with a loss
that falls. It saves a small checkpoint in $SPECDEC_RUN_DIR/checkpoints at the end and exits 0.

With --checkpoint-every N it also saves a draft checkpoint every N steps, checkpoints/checkpoint-<step>/ with a DFlash
draft's config.json and a small, valid model.safetensors, written in a hidden folder (.checkpoint-<step>.tmp) and
renamed into place, so that whoever lists the folder sees only complete checkpoints. Each config.json carries
"specdec_sim": {"step": <step>, "quality": <0..1>}, a quality that rises with the step and flattens (quality_at): the
SGLang emulator started with that checkpoint as its draft accepts as much as that quality says.

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
import shutil
import signal
import struct
import sys
import time

BAR_WIDTH = 20
# The draft checkpoints' config.json: a DFlash drafter of Qwen3.6-27B, as speculators saves one (sizes are nominal).
DRAFT_CONFIG = {
    'architectures': ['DFlashDraftModel'],
    'model_type': 'qwen3',
    'speculators_model_type': 'dflash',
    'hidden_size': 5120,
    'intermediate_size': 17408,
    'num_hidden_layers': 5,
    'num_attention_heads': 40,
    'num_key_value_heads': 8,
    'head_dim': 128,
    'vocab_size': 151936,
    'max_position_embeddings': 40960,
    'rms_norm_eps': 1e-06,
    'torch_dtype': 'bfloat16',
    'block_size': 16,
    'dflash_config': {'mask_token_id': 151669, 'target_layer_ids': [1, 16, 31, 46, 61]},
}
WEIGHTS_NAME = 'model.safetensors'
WEIGHTS_TENSOR = 'dflash.weight'
MIN_CHECKPOINT_BYTES = 128


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
    parser.add_argument('--checkpoint-every', type=int, default=int(_env('CHECKPOINT_EVERY', '0')),
                        help='save checkpoints/checkpoint-<step> every this many steps (0: only the final one)')
    parser.add_argument('--checkpoint-bytes', type=int, default=int(_env('CHECKPOINT_BYTES', '262144')),
                        help='size of a checkpoint\'s model.safetensors')
    parser.add_argument('--quality-floor', type=float, default=float(_env('QUALITY_FLOOR', '0.1')),
                        help='the draft quality at step 0')
    parser.add_argument('--quality-max', type=float, default=float(_env('QUALITY_MAX', '1.0')),
                        help='the draft quality it tends to')
    parser.add_argument('--quality-scale', type=float, default=float(_env('QUALITY_SCALE', '200')),
                        help='steps in which the quality covers 63%% of the way from the floor to the max')
    parser.add_argument('--start-step', type=int, default=int(_env('START_STEP', '0')),
                        help='resume after this global step (as a trainer resumed from its checkpoint): steps up to it are not run')
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
    if not 0 <= args.start_step < args.steps * args.epochs:
        parser.error('--start-step must be from 0 to the run\'s steps - 1 (%d), got %d' % (args.steps * args.epochs - 1, args.start_step))
    if args.checkpoint_every < 0:
        parser.error('--checkpoint-every must be 0 (no checkpoints but the final one) or a positive number of steps, '
                     'got %d' % args.checkpoint_every)
    if args.checkpoint_bytes < MIN_CHECKPOINT_BYTES:
        parser.error('--checkpoint-bytes must be at least %d, got %d' % (MIN_CHECKPOINT_BYTES, args.checkpoint_bytes))
    if not 0.0 <= args.quality_floor <= args.quality_max <= 1.0:
        parser.error('--quality-floor and --quality-max must satisfy 0 <= floor <= max <= 1, got %s and %s'
                     % (args.quality_floor, args.quality_max))
    if not args.quality_scale > 0:
        parser.error('--quality-scale must be a positive number of steps, got %s' % args.quality_scale)
    return args


def loss_at(step, total, seed):
    """A falling loss with a little seeded noise: 10.4 at the start towards 2.2."""
    noise = random.Random(seed * 100003 + step).uniform(-0.08, 0.08)
    return round(2.2 + 8.2 * math.exp(-4.0 * step / max(total, 1)) + noise, 4)


def quality_at(step, floor=0.1, top=1.0, scale=200.0):
    """The draft's quality at a step: floor at step 0, rising towards top and flattening (1 - exp(-step / scale))."""
    return round(floor + (top - floor) * (1.0 - math.exp(-max(0, step) / scale)), 4)


def safetensors_bytes(size, seed, step):
    """A valid safetensors file of exactly ``size`` bytes: one BF16 tensor whose data depends on (seed, step) alone.

    The layout: the header's length (8 bytes, little endian), the JSON header padded with spaces so that the data
    starts on an 8-byte boundary, then the data."""
    def header(count):
        return json.dumps({'__metadata__': {'format': 'pt', 'step': str(step)},
                           WEIGHTS_TENSOR: {'dtype': 'BF16', 'shape': [count // 2], 'data_offsets': [0, count]}},
                          separators=(',', ':')).encode('ascii')
    guess = header(size)
    padded = -(-len(guess) // 8) * 8
    count = size - 8 - padded
    if count % 2:
        padded, count = padded + 1, count - 1
    if count < 2:
        raise ValueError('%d bytes is too small for a safetensors file' % size)
    text = header(count)
    text += b' ' * (padded - len(text))
    rng = random.Random('sim-trainer-weights:%d:%d' % (seed, step))
    data = rng.getrandbits(count * 8).to_bytes(count, 'little')
    return struct.pack('<Q', len(text)) + text + data


def save_checkpoint(args, step):
    """checkpoints/checkpoint-<step>/ {config.json, model.safetensors}, written in a hidden folder then renamed."""
    root = os.path.join(args.run_dir, 'checkpoints')
    final = os.path.join(root, 'checkpoint-%d' % step)
    temp = os.path.join(root, '.checkpoint-%d.tmp' % step)
    os.makedirs(root, exist_ok=True)
    shutil.rmtree(temp, ignore_errors=True)
    os.makedirs(temp)
    config = dict(DRAFT_CONFIG, specdec_sim=sim_fields(args, step))
    _write_file(os.path.join(temp, 'config.json'), (json.dumps(config, indent=2) + '\n').encode('utf-8'))
    _write_file(os.path.join(temp, WEIGHTS_NAME), safetensors_bytes(args.checkpoint_bytes, args.seed, step))
    if os.path.exists(final):  # a run started again in the same folder saves the step again
        shutil.rmtree(final)
    os.rename(temp, final)
    return final


def sim_fields(args, step):
    return {'step': step, 'quality': quality_at(step, args.quality_floor, args.quality_max, args.quality_scale)}


def _write_file(path, data):
    with open(path, 'wb') as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


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
            if step < args.start_step:  # resumed: these steps ran before
                step += 1
                continue
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
            if args.checkpoint_every and step % args.checkpoint_every == 0:
                path = save_checkpoint(args, step)
                if args.format in ('both', 'tqdm'):
                    sys.stderr.write('\r\n')
                    sys.stderr.flush()
                say('Saved checkpoint to %s' % path)
    sys.stderr.write('\n')
    checkpoints = os.path.join(args.run_dir, 'checkpoints', 'final')
    os.makedirs(checkpoints, exist_ok=True)
    with open(os.path.join(checkpoints, 'config.json'), 'w', encoding='utf-8') as handle:
        json.dump({'speculators_model_type': 'dflash', 'simulated': True, 'steps': total,
                   'specdec_sim': sim_fields(args, total)}, handle)
    say('Saved checkpoint to %s' % checkpoints)
    say('Training complete: %d steps in %.1f s' % (total, time.time() - start))
    return 0


def main(argv=None):
    return run(parse_args(argv))


if __name__ == '__main__':
    sys.exit(main())
