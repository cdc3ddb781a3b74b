#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: checkpoint_install
short_description: Verify a copied drafter checkpoint against its source's sha256 and rename it into place, never over another
version_added: 0.4.0
description:
  - A checkpoint travels into a staging folder beside its destination (O(staging), named C(.incoming-*)); this module
    checks that the copy holds exactly the files of O(manifest) (no file missing, none extra, each with its size and
    sha256), writes C(.specdec-checkpoint.json) into it (the manifest, total bytes, and the UTC time of the install),
    and renames it to O(dest) in one step, so O(dest) is either absent or a whole, verified checkpoint.
  - A copy that does not verify is refused, naming the file and the expected and found size or sha256; the staging
    folder is removed and O(dest) is not touched.
  - When O(dest) exists and its C(.specdec-checkpoint.json) lists the same files (path, bytes, sha256), nothing changes
    (an earlier run installed it) and the staging folder, if any, is removed. An O(dest) with other content, or not
    installed by this module, is refused and never overwritten; the staging folder is removed.
  - Only a folder whose name starts with C(.incoming-) is ever removed. A copy must hold the files themselves, not
    symbolic links (ansible.posix.synchronize with C(copy_links=true) when the source links its files).
author:
  - specdec.bench developers (!UNKNOWN)
options:
  staging:
    description: The copy, a folder named C(.incoming-*) beside O(dest) (same parent folder, so the rename stays on one filesystem).
    type: path
    required: true
  dest:
    description: Where the checkpoint goes, an absolute path without C(..); its parent folder is made (mode 0755) if missing.
    type: path
    required: true
  manifest:
    description: What the copy must hold, as M(specdec.bench.checkpoint_facts) listed it on the source host with checksums.
    type: dict
    required: true
    suboptions:
      source_host:
        description: The host the checkpoint came from (recorded, and named in messages).
        type: str
      source_path:
        description: Its folder there (recorded).
        type: str
      name:
        description: The checkpoint's folder name, e.g. C(checkpoint-400).
        type: str
        required: true
      step:
        description: Its training step; must agree with O(manifest.name) when that gives one. Default is the step of the name.
        type: int
      run:
        description: The training run it belongs to (recorded).
        type: str
      files:
        description: Every file of the checkpoint, relative paths without C(..) or a leading C(/).
        type: list
        elements: dict
        required: true
        suboptions:
          path:
            description: Relative path in the checkpoint folder.
            type: str
            required: true
          bytes:
            description: Size in bytes (an int >= 0).
            type: int
            required: true
          sha256:
            description: sha256, 64 hex digits.
            type: str
            required: true
extends_documentation_fragment:
  - specdec.bench.attributes
attributes:
  check_mode:
    support: full
    details:
      - Verifies the copy when it exists (a copy that did not run in check mode is no error) and writes, renames and
        removes nothing.
  diff_mode:
    support: none
seealso:
  - module: specdec.bench.checkpoint_facts
"""

EXAMPLES = r"""
- name: Put the verified copy into place
  specdec.bench.checkpoint_install:
    staging: /root/checkpoints/dflash-demo/.incoming-checkpoint-400
    dest: /root/checkpoints/dflash-demo/checkpoint-400
    manifest:
      source_host: a100box
      source_path: /root/train_runs/dflash-demo/checkpoints/checkpoint-400
      name: checkpoint-400
      step: 400
      run: dflash-demo
      files: "{{ trained.checkpoints | selectattr('name', 'eq', 'checkpoint-400') | map(attribute='files') | first }}"
  register: installed
"""

RETURN = r"""
dest:
  description: The checkpoint folder.
  returned: success
  type: str
  sample: /root/checkpoints/dflash-demo/checkpoint-400
bytes:
  description: Total bytes of its files.
  returned: success
  type: int
  sample: 263056
files:
  description: How many files it has.
  returned: success
  type: int
  sample: 2
verify_seconds:
  description: Seconds spent reading the copy to verify it.
  returned: when the copy was verified
  type: float
  sample: 0.42
verified:
  description: Whether the copy was read and verified (false only in check mode when there was no copy).
  returned: when O(dest) did not exist
  type: bool
  sample: true
reason:
  description: Why nothing changed.
  returned: when O(dest) already held these files
  type: str
  sample: already installed
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.specdec.bench.plugins.module_utils._checkpoint import CheckpointError, install


def main():
    module = AnsibleModule(
        argument_spec=dict(
            staging=dict(type='path', required=True),
            dest=dict(type='path', required=True),
            manifest=dict(type='dict', required=True, options=dict(
                source_host=dict(type='str'),
                source_path=dict(type='str'),
                name=dict(type='str', required=True),
                step=dict(type='int'),
                run=dict(type='str'),
                files=dict(type='list', elements='dict', required=True, options=dict(
                    path=dict(type='str', required=True),
                    bytes=dict(type='int', required=True),
                    sha256=dict(type='str', required=True),
                )),
            )),
        ),
        supports_check_mode=True,
    )
    params = module.params
    try:
        result = install(params['staging'], params['dest'], params['manifest'], module.check_mode)
    except CheckpointError as exc:
        module.fail_json(msg=str(exc))
    except OSError as exc:
        module.fail_json(msg='could not install %s at %s: %s' % (params['staging'], params['dest'], exc))
    module.exit_json(**result)


if __name__ == '__main__':
    main()
