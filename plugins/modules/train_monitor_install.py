#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: train_monitor_install
short_description: Install the collection's Python modules that the training monitor imports beside its program
version_added: 0.4.0
description:
  - The training monitor (C(specdec_train_monitor.py) of P(specdec.bench.train_monitor#role)) imports the collection's
    log parser C(_train_log.py), the supervisor's state reader C(_supervisor.py) and the GPU sampler
    C(_telemetry.py) (with C(_nvml.py) and C(_nvidia_smi.py), which it imports) as plain modules from its own
    folder. This module writes their source into O(dest), exactly as the collection holds them.
  - The sources travel inside this module's own payload (Ansible ships the module_utils a module imports), so no role
    reads collection files by path and the result does not depend on where the collection is installed.
  - A file is written only when its content differs; C(changed) is true when a file was (or, in check mode, would be)
    written or its owner, group or mode changed. Nothing is compiled, so no C(__pycache__) appears in O(dest).
author:
  - specdec.bench developers (!UNKNOWN)
options:
  dest:
    description: The monitor's folder, where its program is. It must exist (outside check mode).
    type: path
    required: true
extends_documentation_fragment:
  - ansible.builtin.files
  - specdec.bench.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reports which files would be written; writes nothing. A missing O(dest) counts as every file to write.
  diff_mode:
    support: none
notes:
  - Requires Python 3.9 or later on the host; standard library only.
seealso:
  - module: specdec.bench.service
"""

EXAMPLES = r"""
- name: Install the log parser and the supervisor's state reader beside the monitor
  specdec.bench.train_monitor_install:
    dest: /opt/specdec/train-monitor
    owner: root
    group: root
    mode: "0644"
"""

RETURN = r"""
files:
  description: The names of the files this module installs in O(dest), sorted.
  returned: always
  type: list
  elements: str
  sample: [_nvidia_smi.py, _nvml.py, _supervisor.py, _telemetry.py, _train_log.py]
written:
  description: The files whose content was written (in check mode, would be), sorted; empty when all were current.
  returned: always
  type: list
  elements: str
  sample: [_train_log.py]
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.specdec.bench.plugins.module_utils import _nvidia_smi, _nvml, _supervisor, _telemetry, _train_log
from ansible_collections.specdec.bench.plugins.module_utils._common import atomic_write

# What specdec_train_monitor.py imports from its own folder.
# _telemetry samples the run's GPUs, through _nvml or _nvidia_smi
MONITOR_LIBRARIES = (_train_log, _supervisor, _telemetry, _nvml, _nvidia_smi)


def library_sources(libraries=MONITOR_LIBRARIES):
    """{file name: source bytes} of the given modules, read through their loaders (a file, or this module's zip)."""
    sources = {}
    for library in libraries:
        origin = library.__spec__.origin
        sources[os.path.basename(origin)] = library.__spec__.loader.get_data(origin)
    return sources


def read_current(path):
    """The bytes of the file at path, or None when there is none."""
    try:
        with open(path, 'rb') as handle:
            return handle.read()
    except (FileNotFoundError, NotADirectoryError):
        return None


def stale_files(dest, sources):
    """The names, sorted, whose file in dest is missing or differs from its source."""
    return sorted(name for name, data in sources.items() if read_current(os.path.join(dest, name)) != data)


def main():
    module = AnsibleModule(
        argument_spec=dict(dest=dict(type='path', required=True)),
        add_file_common_args=True,
        supports_check_mode=True,
    )
    dest = module.params['dest']
    if not os.path.isdir(dest) and not module.check_mode:
        module.fail_json(msg='dest %s is not a folder; allowed: the monitor folder, made first' % dest)
    sources = library_sources()
    written = stale_files(dest, sources)
    changed = bool(written)
    if not module.check_mode:
        for name in written:
            try:
                atomic_write(os.path.join(dest, name), sources[name])
            except OSError as exc:
                module.fail_json(msg='could not write %s in %s: %s' % (name, dest, exc), written=written)
    if os.path.isdir(dest):
        for name in sorted(sources):
            path = os.path.join(dest, name)
            if os.path.exists(path):
                changed = module.set_fs_attributes_if_different(
                    module.load_file_common_arguments(module.params, path=path), changed)
    module.exit_json(changed=changed, files=sorted(sources), written=written)


if __name__ == '__main__':
    main()
