#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: page_cache_warm
short_description: Read a model's and its drafts' weight files once into the host's page cache, when the free RAM allows it
version_added: 0.4.0
description:
  - Lists the files of O(paths) (a model folder, draft folders, or single files), adds up their bytes and, when they
    fit in O(max_fraction) of the host's C(MemAvailable) (C(/proc/meminfo)), reads each of them once from start to end,
    so that every later load of the model (each stage's server) reads them from memory instead of the disk. How long
    the reading took is returned (RV(seconds), RV(gib_per_s)).
  - >-
    When they do not fit, nothing is read and RV(note) says why, for example
    C(the weights take 51.2 GiB, MemAvailable 40.0 GiB x 0.8 = 32.0 GiB: not warmed, each stage loads from disk).
    The same happens, with its own note, when C(MemAvailable) cannot be read (no C(/proc/meminfo), a kernel before 3.14).
    Neither is an error.
  - In a folder, the files whose names match one of O(patterns) are taken from its top level and from its direct
    subfolders (one level down; model folders are flat, a few keep a tokenizer or an C(original/) folder one level
    down). Deeper files and hidden entries (names starting with C(.), such as the C(.cache) folder that
    C(huggingface-cli download --local-dir) leaves) are passed over. Links are followed. A file named in O(paths) is
    taken whatever its name.
  - A file reached twice (the same folder named twice, a draft inside the model folder, links, hard links) is listed
    once, by its real path and by its device and inode.
  - Without C(mincore) (not in Python's standard library) the module cannot tell which pages are cached already, so
    the whole listing is compared with C(MemAvailable). Cached file pages count as available memory, so weights that
    are already cached still fit when they fitted the first time; reading them again costs only a memory copy.
  - Each file is read sequentially (C(posix_fadvise) with C(POSIX_FADV_SEQUENTIAL) where the platform has it) in chunks of
    O(chunk_bytes) into one reused buffer; nothing read is kept in the module's memory.
  - Never reports a change. The page cache is the kernel's, not host state that a playbook manages; reading files
    changes nothing on the host that a later run must undo or can rely on (the kernel may drop the pages at any time).
author:
  - specdec.bench developers (!UNKNOWN)
options:
  paths:
    description:
      - The folders and files to read, for example the model folder and the draft folders of a campaign.
      - Each must exist; a missing one fails the task, naming it and what its nearest existing parent folder holds.
    type: list
    elements: path
    required: true
  patterns:
    description:
      - Shell-style patterns (Python C(fnmatch), case-sensitive) matched against the file names of a folder; a file
        matching any of them is read. They do not apply to files named directly in O(paths).
    type: list
    elements: str
    default: ['*.safetensors', '*.bin', '*.pt', '*.json', '*.model', '*.tiktoken', 'tokenizer*']
  max_fraction:
    description:
      - Read only if the files' total bytes are at most this fraction of C(MemAvailable). More than 0, at most 1.
      - The rest leaves room for the server's own host memory (CUDA graphs, pinned buffers, the tokenizer).
    type: float
    default: 0.8
  chunk_bytes:
    description: Bytes read at a time, from 4096 (4 KiB) to 1073741824 (1 GiB).
    type: int
    default: 16777216
  timeout:
    description:
      - Seconds the reading may take; when they pass, the reading stops after the current chunk and the module returns
        what it read, with RV(timed_out) true and RV(warmed) false (not an error). V(0) means no limit.
    type: float
    default: 1800
extends_documentation_fragment:
  - specdec.bench.attributes
attributes:
  check_mode:
    support: full
    details:
      - Lists the files, reads C(MemAvailable) and decides (RV(fits)), but reads no file.
  diff_mode:
    support: none
seealso:
  - module: specdec.bench.sglang_preflight
"""

EXAMPLES = r"""
- name: Read the model and its drafts into the page cache before the first stage
  specdec.bench.page_cache_warm:
    paths:
      - /root/models/Qwen3.6-27B
      - /root/models/Qwen3.6-27B-DFlash
      - /root/models/Qwen3.6-27B-EAGLE3
  register: warm

- name: Say what it did
  ansible.builtin.debug:
    msg: "{{ warm.note }}"

- name: Only the safetensors of a checkpoint, with a 10 minute limit
  specdec.bench.page_cache_warm:
    paths: [/root/checkpoints/dflash-demo/checkpoint-4000]
    patterns: ['*.safetensors']
    timeout: 600
"""

RETURN = r"""
warmed:
  description: Whether every listed file was read to its end (false when they did not fit, in check mode, and on a timeout).
  returned: always
  type: bool
  sample: true
fits:
  description: Whether the listed files fit in O(max_fraction) of C(MemAvailable); false when C(MemAvailable) is unknown.
  returned: always
  type: bool
  sample: true
bytes:
  description: Bytes read (0 when nothing was read; less than RV(total_bytes) on a timeout).
  returned: always
  type: int
  sample: 54975581388
files:
  description: Files read to their end.
  returned: always
  type: int
  sample: 17
total_bytes:
  description: Bytes of all listed files.
  returned: always
  type: int
  sample: 54975581388
total_files:
  description: Number of listed files.
  returned: always
  type: int
  sample: 17
listed:
  description: The listed files (real paths, in reading order) and their sizes.
  returned: always
  type: list
  elements: dict
  sample: [{path: /root/models/Qwen3.6-27B/config.json, bytes: 1532}]
seconds:
  description: Seconds the reading took (0 when nothing was read).
  returned: always
  type: float
  sample: 36.412
gib_per_s:
  description: RV(bytes) over RV(seconds), in GiB/s; null when nothing was read.
  returned: always
  type: float
  sample: 1.406
timed_out:
  description: Whether the reading stopped at O(timeout).
  returned: always
  type: bool
  sample: false
mem_available_bytes:
  description: C(MemAvailable) from C(/proc/meminfo) before reading; null when it cannot be read.
  returned: always
  type: int
  sample: 1500000000000
note:
  description: One line saying what was done and why.
  returned: always
  type: str
  sample: 'read 51.2 GiB (17 files) in 36.4 s, 1.41 GiB/s: each stage loads the weights from memory'
"""

import errno
import fnmatch
import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.specdec.bench.plugins.module_utils._proc import parse_meminfo

MEMINFO = '/proc/meminfo'
GIB = 1024 ** 3
MIB = 1024 ** 2
MIN_CHUNK = 4096
MAX_CHUNK = GIB
SHOWN_ENTRIES = 10


class WarmError(Exception):
    """A path that cannot be listed or read; the message names it."""


def format_bytes(count):
    """'51.2 GiB', or '3.0 MiB' below a tenth of a GiB (the notes of small test folders stay readable)."""
    if count >= GIB // 10:
        return '%.1f GiB' % (count / GIB)
    return '%.1f MiB' % (count / MIB)


def mem_available(text):
    """MemAvailable in bytes from the text of /proc/meminfo; None when the kernel does not give it (before 3.14)."""
    return parse_meminfo(text).get('MemAvailable')


def read_mem_available(path=None):
    """MemAvailable of this host, or None when it cannot be read (no /proc/meminfo, an old kernel, a text not understood)."""
    try:
        with open(path or MEMINFO, encoding='utf-8') as handle:
            return mem_available(handle.read())
    except (OSError, ValueError):
        return None


def decide(total, available, fraction):
    """(fits, note): whether `total` bytes fit in `fraction` of `available` bytes (None: unknown), and the note if not."""
    if available is None:
        return False, ('the weights take %s, MemAvailable is unknown (no %s, or a kernel before 3.14): not warmed, each stage loads '
                       'from disk' % (format_bytes(total), MEMINFO))
    room = fraction * available
    if total <= room:
        return True, ''
    return False, ('the weights take %s, MemAvailable %s x %g = %s: not warmed, each stage loads from disk'
                   % (format_bytes(total), format_bytes(available), fraction, format_bytes(int(room))))


def _missing(path):
    """The error for a path that does not exist, naming what its nearest existing parent folder holds."""
    parent = os.path.dirname(os.path.abspath(path))
    while parent and not os.path.isdir(parent) and parent != os.path.dirname(parent):
        parent = os.path.dirname(parent)
    try:
        entries = sorted(os.listdir(parent))
    except OSError:
        entries = []
    shown = ', '.join(entries[:SHOWN_ENTRIES]) + (', ... (%d in all)' % len(entries) if len(entries) > SHOWN_ENTRIES else '')
    return WarmError('paths: %s does not exist; %s holds: %s' % (path, parent, shown or 'nothing'))


def _folder_files(folder, patterns):
    """The matching files of a folder's top level and of its direct subfolders, hidden entries passed over."""
    def entries(path):
        try:
            return sorted((entry for entry in os.scandir(path) if not entry.name.startswith('.')), key=lambda entry: entry.name)
        except OSError as exc:
            raise WarmError('paths: cannot list %s: %s' % (path, exc.strerror or exc)) from None

    def matches(name):
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)

    found, subfolders = [], []
    for entry in entries(folder):
        if entry.is_dir():
            subfolders.append(entry.path)
        elif entry.is_file() and matches(entry.name):
            found.append(entry.path)
    for subfolder in subfolders:
        found.extend(entry.path for entry in entries(subfolder) if entry.is_file() and matches(entry.name))
    return found


def list_files(paths, patterns):
    """([{path, bytes}], [folders with no matching file]): the files of `paths`, each once (by real path, device and inode)."""
    listed, empty, seen_paths, seen_inodes = [], [], set(), set()
    for path in paths:
        if not os.path.exists(path):
            raise _missing(path)
        if not os.path.isdir(path) and not os.path.isfile(path):
            raise WarmError('paths: %s is neither a folder nor a regular file' % path)
        candidates = _folder_files(path, patterns) if os.path.isdir(path) else [path]
        if os.path.isdir(path) and not candidates:
            empty.append(path)
        for candidate in candidates:
            real = os.path.realpath(candidate)
            if real in seen_paths:
                continue
            seen_paths.add(real)
            try:
                info = os.stat(real)
            except OSError as exc:
                raise WarmError('paths: cannot read %s: %s' % (candidate, exc.strerror or exc)) from None
            if (info.st_dev, info.st_ino) in seen_inodes:
                continue
            seen_inodes.add((info.st_dev, info.st_ino))
            listed.append({'path': real, 'bytes': info.st_size})
    return listed, empty


def read_files(listed, chunk_bytes, timeout, clock=time.monotonic):
    """Read each file to its end into one reused buffer; stop after the chunk in which `timeout` seconds (0: none) pass.

    Returns (bytes read, files read to their end, seconds, timed out).
    """
    buffer = bytearray(chunk_bytes)
    view = memoryview(buffer)
    advise = getattr(os, 'posix_fadvise', None)
    sequential = getattr(os, 'POSIX_FADV_SEQUENTIAL', None)
    start = clock()
    deadline = start + timeout if timeout else None
    total = files = 0
    for item in listed:
        try:
            with open(item['path'], 'rb', buffering=0) as handle:
                if advise is not None and sequential is not None:
                    try:
                        advise(handle.fileno(), 0, 0, sequential)
                    except OSError:
                        pass  # a hint only (some filesystems refuse it)
                while True:
                    count = handle.readinto(view)
                    if not count:
                        break
                    total += count
                    if deadline is not None and clock() >= deadline:
                        return total, files, clock() - start, True
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                raise WarmError('paths: %s disappeared while the weights were read' % item['path']) from None
            raise WarmError('paths: cannot read %s: %s' % (item['path'], exc.strerror or exc)) from None
        files += 1
    return total, files, clock() - start, False


def check_params(params):
    """The first option error as a message naming the option and the allowed values, or None."""
    if not params['paths']:
        return 'paths must name at least one folder or file (the model folder, the draft folders)'
    if not params['patterns']:
        return "patterns must hold at least one file name pattern, e.g. ['*.safetensors', '*.json']"
    fraction = params['max_fraction']
    if not 0 < fraction <= 1:  # also refuses NaN
        return 'max_fraction is %r; it must be more than 0 and at most 1 (of MemAvailable)' % fraction
    if not MIN_CHUNK <= params['chunk_bytes'] <= MAX_CHUNK:
        return 'chunk_bytes is %d; it must be from %d (4 KiB) to %d (1 GiB)' % (params['chunk_bytes'], MIN_CHUNK, MAX_CHUNK)
    timeout = params['timeout']
    if not 0 <= timeout < float('inf'):
        return 'timeout is %r; it must be 0 (no limit) or a finite number of seconds more than 0' % timeout
    return None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            paths=dict(type='list', elements='path', required=True),
            patterns=dict(type='list', elements='str',
                          default=['*.safetensors', '*.bin', '*.pt', '*.json', '*.model', '*.tiktoken', 'tokenizer*']),
            max_fraction=dict(type='float', default=0.8),
            chunk_bytes=dict(type='int', default=16 * MIB),
            timeout=dict(type='float', default=1800),
        ),
        supports_check_mode=True,
    )
    params = module.params
    error = check_params(params)
    if error:
        module.fail_json(msg=error)
    try:
        listed, empty = list_files(params['paths'], params['patterns'])
    except WarmError as exc:
        module.fail_json(msg=str(exc))
    for folder in empty:
        module.warn('no file of %s matches the patterns (%s); nothing of it is read' % (folder, ', '.join(params['patterns'])))
    total = sum(item['bytes'] for item in listed)
    available = read_mem_available()
    fits, note = decide(total, available, params['max_fraction'])
    result = dict(changed=False, warmed=False, fits=fits, bytes=0, files=0, total_bytes=total, total_files=len(listed),
                  listed=listed, seconds=0.0, gib_per_s=None, timed_out=False, mem_available_bytes=available, note=note)
    if fits and module.check_mode:
        result['note'] = 'check mode: would read %s (%d files)' % (format_bytes(total), len(listed))
    elif fits:
        try:
            done, files, seconds, timed_out = read_files(listed, params['chunk_bytes'], params['timeout'])
        except WarmError as exc:
            module.fail_json(msg=str(exc))
        rate = done / GIB / seconds if done and seconds > 0 else None
        result.update(warmed=not timed_out, bytes=done, files=files, seconds=round(seconds, 3), timed_out=timed_out,
                      gib_per_s=round(rate, 3) if rate is not None else None)
        speed = ', %.2f GiB/s' % rate if rate is not None else ''
        if timed_out:
            result['note'] = ('stopped at the timeout of %g s after reading %s of %s (%d of %d files)%s: the rest loads from disk'
                              % (params['timeout'], format_bytes(done), format_bytes(total), files, len(listed), speed))
        else:
            result['note'] = ('read %s (%d files) in %.1f s%s: each stage loads the weights from memory'
                              % (format_bytes(done), files, seconds, speed))
    module.exit_json(**result)


if __name__ == '__main__':
    main()
