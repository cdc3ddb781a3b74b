#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: checkpoint_facts
short_description: List a host's drafter checkpoint folders with their steps, files, sizes and (optionally) sha256
version_added: 0.4.0
description:
  - A checkpoint is a folder holding C(config.json) and at least one weights file (C(*.safetensors) or C(*.bin)) at
    its top, whose name gives the training step (C(checkpoint-4000), C(checkpoint_4000), C(step-4000), C(step4000),
    C(ckpt-4000), C(global_step4000) or C(4000)), matched whole (a name with a trailing newline gives no step).
  - A folder a trainer is still writing is not listed; it is complete only when no weights file is empty, every
    C(*.safetensors) file holds at least the 8 bytes of its header length and the header they declare, every file
    the C(weight_map) of its index (C(*.index.json)) names is there and whole, and every shard a shard's name
    calls for (C(model-00001-of-00002.safetensors)) is there. Otherwise it is named in RV(problems), with what is
    missing or short.
  - A folder that vanishes while it is listed (the trainer's rotation deletes old checkpoints, also while their
    sha256 are read) or changes so that it is no longer complete is named in RV(problems), never a failure.
  - Lists the direct subfolders of O(root), the folders O(paths) names, or the folders O(pattern) matches on the host,
    as records sorted by step. Hidden folders (a copy in progress, C(.incoming-*); the trainer's save in progress,
    C(.checkpoint-<step>.tmp)) are never listed. Under O(root) or O(pattern), folders whose name gives no step
    (C(final), C(latest)) are passed over; a folder without C(config.json) or weights is passed over and named in
    RV(problems). Each folder of O(paths) must be a checkpoint, else it is named in RV(problems).
  - The files of a checkpoint are every file under its folder (walked without following links to folders; a link to
    a file is listed and read through), except the C(.specdec-checkpoint.json) that
    M(specdec.bench.checkpoint_install) writes; that one is returned parsed as C(installed).
  - Only reads. A missing O(root) is no error; it lists nothing and RV(root_exists) is false.
author:
  - specdec.bench developers (!UNKNOWN)
options:
  root:
    description: A folder of checkpoints, e.g. C(<train_run_root>/<run>/checkpoints). One of O(root), O(paths), O(pattern).
    type: path
  paths:
    description: Checkpoint folders, each of which must be one (a draft given as a list of paths).
    type: list
    elements: path
  pattern:
    description: A shell-style pattern (Python C(glob.glob), on the host); the folders it matches are listed.
    type: str
  checksums:
    description: Also return the sha256 of every file (read 1 MiB at a time; a large checkpoint takes a while).
    type: bool
    default: false
  names:
    description:
      - With O(checksums), only the checkpoints of these names get sha256 (those about to be copied). A name not
        listed is named in RV(problems).
      - Needs O(checksums=true).
    type: list
    elements: str
  space_path:
    description: Also return the free bytes of the filesystem of this path (of its nearest existing parent folder).
    type: path
extends_documentation_fragment:
  - specdec.bench.attributes
attributes:
  check_mode:
    support: full
    details:
      - Only reads; the same in check mode.
  diff_mode:
    support: none
seealso:
  - module: specdec.bench.checkpoint_install
"""

EXAMPLES = r"""
- name: The checkpoints of a training run, with the sha256 of the two about to be copied
  specdec.bench.checkpoint_facts:
    root: /root/train_runs/dflash-demo/checkpoints
    checksums: true
    names: [checkpoint-400, checkpoint-800]
  register: trained

- name: The space left where the benchmark host keeps shipped checkpoints
  specdec.bench.checkpoint_facts:
    pattern: /root/checkpoints/dflash-demo/checkpoint-*
    space_path: /root/checkpoints/dflash-demo
  register: shipped

- name: Say the steps
  ansible.builtin.debug:
    msg: "{{ trained.checkpoints | map(attribute='step') | list }}; {{ shipped.space.free_bytes }} bytes free"
"""

RETURN = r"""
checkpoints:
  description: The checkpoints, sorted by step (then name).
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The folder name.
      type: str
    step:
      description: The training step its name gives.
      type: int
    path:
      description: The folder.
      type: str
    bytes:
      description: Total bytes of its files.
      type: int
    mtime:
      description: The newest modification time of its files (seconds since the epoch).
      type: float
    files:
      description: Its files, relative paths sorted, with C(bytes) and (with O(checksums)) C(sha256).
      type: list
      elements: dict
    installed:
      description: The parsed C(.specdec-checkpoint.json) when M(specdec.bench.checkpoint_install) put it there, else null.
      type: dict
  sample:
    - name: checkpoint-400
      step: 400
      path: /root/train_runs/dflash-demo/checkpoints/checkpoint-400
      bytes: 263056
      mtime: 1780000000.5
      files: [{path: config.json, bytes: 912}, {path: model.safetensors, bytes: 262144}]
      installed: null
problems:
  description:
    - Folders not listed and why (incomplete, not a checkpoint, missing, vanished or changed while listed), and names
      of O(names) not found.
  returned: always
  type: list
  elements: dict
  sample: [{path: /root/train_runs/dflash-demo/checkpoints/checkpoint-1200, reason: 'has no config.json: not a checkpoint (or not written completely)'}]
root_exists:
  description: Whether O(root) is a folder; null when O(paths) or O(pattern) was given.
  returned: always
  type: bool
  sample: true
space:
  description: With O(space_path), the folder measured (its nearest existing parent) and the bytes free there; else null.
  returned: always
  type: dict
  sample: {path: /root/checkpoints, free_bytes: 512000000000}
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.specdec.bench.plugins.module_utils._checkpoint import free_bytes, list_checkpoints


def main():
    module = AnsibleModule(
        argument_spec=dict(
            root=dict(type='path'),
            paths=dict(type='list', elements='path'),
            pattern=dict(type='str'),
            checksums=dict(type='bool', default=False),
            names=dict(type='list', elements='str'),
            space_path=dict(type='path'),
        ),
        mutually_exclusive=[('root', 'paths', 'pattern')],
        required_one_of=[('root', 'paths', 'pattern')],
        supports_check_mode=True,
    )
    params = module.params
    if params['names'] is not None and not params['checksums']:
        module.fail_json(msg='names picks the checkpoints whose files get sha256; it needs checksums: true')
    try:
        checkpoints, problems = list_checkpoints(params['root'], params['paths'], params['pattern'], params['checksums'],
                                                 params['names'])
        space = None
        if params['space_path']:
            path, free = free_bytes(params['space_path'])
            space = {'path': path, 'free_bytes': free}
    except OSError as exc:
        module.fail_json(msg='could not list the checkpoints: %s' % exc)
    root_exists = os.path.isdir(params['root']) if params['root'] else None
    module.exit_json(changed=False, checkpoints=checkpoints, problems=problems, root_exists=root_exists, space=space)


if __name__ == '__main__':
    main()
