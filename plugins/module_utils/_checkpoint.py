# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Drafter checkpoints: their names and steps, which of them a checkpoint set picks, and (on the host) their files.

Pure functions first (step_of, select), used by the plan on the controller and by the modules on the hosts; then the
host side (standard library only: modules run on the host's bare Python 3.9+).

A checkpoint is a folder holding config.json and at least one weights file (*.safetensors or *.bin), named by its
training step: checkpoint-4000, checkpoint_4000, step-4000, step_4000, step4000, or 4000 (speculators' epoch folders
are numbers too). Other folders (final, latest, best) are not steps and are not listed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type  # pylint: disable=invalid-name

import re

# checkpoint-4000, checkpoint_4000, step-4000, step_4000, step4000, 4000
STEP_RE = re.compile(r'^(?:checkpoint[-_]?|step[-_]?|ckpt[-_]?|global_step[-_]?)?([0-9]+)$')
# what the install writes into a checkpoint folder it completed: where the files came from and their sha256
INSTALLED_MANIFEST = '.specdec-checkpoint.json'
# where a copy is assembled on the benchmark host before it is verified and renamed into place
STAGING_PREFIX = '.incoming-'
WEIGHT_SUFFIXES = ('.safetensors', '.bin')


def step_of(name):
    """The training step a checkpoint folder's name gives (checkpoint-4000 -> 4000), or None."""
    match = STEP_RE.match(name or '')
    return int(match.group(1)) if match else None


def select(checkpoints, every=None, last=None):
    """The checkpoints a set picks: steps that are multiples of `every` (all when None), then the `last` of them.

    checkpoints: records with a 'step' (int); the result is sorted by step, each step once (the first record wins).
    """
    seen, ordered = set(), []
    for record in sorted(checkpoints, key=lambda item: item['step']):
        if record['step'] in seen:
            continue
        seen.add(record['step'])
        if every and record['step'] % every:
            continue
        ordered.append(record)
    if last:
        ordered = ordered[-last:]
    return ordered
