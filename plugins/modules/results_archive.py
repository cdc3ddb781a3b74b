#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: results_archive
short_description: Pack a campaign's results on a host into one archive with a sha256 manifest
version_added: 0.1.0
description:
  - Packs every regular file under O(root)C(/<campaign>/) into one gzip'd tar in O(archive_dir), so the controller fetches
    a campaign in one transfer, and returns the manifest (path, size, sha256 of every file).
  - Each file is read once, and the bytes that are hashed are the bytes that are packed, so the manifest describes the
    archive exactly even while a stage is still writing; M(specdec.bench.results_unpack) verifies it on the controller
    and reads no member past the size the manifest gives it.
  - The results are only read. The archive is the caller's to remove (the C(collect) role removes it after the fetch).
  - In check mode the manifest is made and no archive is written.
author:
  - specdec.bench developers (!UNKNOWN)
options:
  root:
    description: The folder of all campaigns on the host (C(results_dir_root) of the C(results_dir) role).
    type: path
    default: /root/bench_results
  campaign:
    description: The campaign id, C([a-z0-9][a-z0-9._-]*).
    type: str
    required: true
  archive_dir:
    description: Where the archive is written (a new file with a random name, mode 0600).
    type: path
    default: /var/tmp
notes:
  - Symbolic links and other non-regular files are not packed; they are listed in RV(skipped).
seealso:
  - module: specdec.bench.results_unpack
"""

EXAMPLES = r"""
- name: Pack the campaign's results
  specdec.bench.results_archive:
    root: /root/bench_results
    campaign: qwen36-ct200
  register: packed
"""

RETURN = r"""
archive:
  description: Path of the archive on the host; null in check mode.
  returned: success
  type: str
  sample: /var/tmp/specdec-collect-qwen36-ct200-k2j3h4.tar.gz
archive_sha256:
  description: sha256 of the archive; null in check mode.
  returned: success
  type: str
  sample: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
campaign_dir:
  description: The folder that was packed.
  returned: success
  type: str
  sample: /root/bench_results/qwen36-ct200
manifest:
  description: Every packed file, relative to the campaign folder, in archive order.
  returned: success
  type: list
  elements: dict
  contains:
    path:
      description: Relative path (C(<stage>/<file>) or C(campaign.json)).
      type: str
    size:
      description: Bytes; M(specdec.bench.results_unpack) refuses an entry without it.
      type: int
    sha256:
      description: Hex digest.
      type: str
  sample: [{path: tp1-autoregressive/status.json, size: 321, sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08}]
bytes:
  description: Total bytes of the packed files.
  returned: success
  type: int
  sample: 1048576
skipped:
  description: Entries that are not regular files and were not packed.
  returned: success
  type: list
  elements: str
  sample: [tp1-autoregressive/latest]
"""

import hashlib
import io
import os
import tarfile
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.specdec.bench.plugins.module_utils._common import ID_PATTERN, ID_RE, file_sha256


def campaign_files(campaign_dir):
    """(relative paths of regular files, sorted; relative paths of other entries), walking without following links."""
    files, skipped = [], []
    for current, dirs, names in os.walk(campaign_dir):
        dirs.sort()
        for name in list(dirs):
            if os.path.islink(os.path.join(current, name)):
                skipped.append(os.path.relpath(os.path.join(current, name), campaign_dir))
                dirs.remove(name)
        for name in names:
            path = os.path.join(current, name)
            relative = os.path.relpath(path, campaign_dir)
            if os.path.islink(path) or not os.path.isfile(path):
                skipped.append(relative)
            else:
                files.append(relative)
    return sorted(files), sorted(skipped)


def read_file(path):
    """(bytes, sha256 hex, stat) of one file, read once."""
    with open(path, 'rb') as handle:
        info = os.fstat(handle.fileno())
        data = handle.read()
    return data, hashlib.sha256(data).hexdigest(), info


def pack(campaign_dir, files, archive_path):
    """Write the archive; return the manifest of exactly the bytes packed."""
    manifest = []
    with tarfile.open(archive_path, 'w:gz', format=tarfile.PAX_FORMAT) as tar:
        for relative in files:
            data, digest, info = read_file(os.path.join(campaign_dir, relative))
            member = tarfile.TarInfo(relative)
            member.size = len(data)
            member.mtime = int(info.st_mtime)
            member.mode = info.st_mode & 0o777
            tar.addfile(member, io.BytesIO(data))
            manifest.append({'path': relative, 'size': len(data), 'sha256': digest})
    return manifest


def describe(campaign_dir, files):
    """The manifest without packing (check mode)."""
    manifest = []
    for relative in files:
        data, digest, _info = read_file(os.path.join(campaign_dir, relative))
        manifest.append({'path': relative, 'size': len(data), 'sha256': digest})
    return manifest


def main():
    module = AnsibleModule(
        argument_spec=dict(
            root=dict(type='path', default='/root/bench_results'),
            campaign=dict(type='str', required=True),
            archive_dir=dict(type='path', default='/var/tmp'),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if not ID_RE.match(params['campaign']):
        module.fail_json(msg='campaign is %r; allowed: an id matching %s' % (params['campaign'], ID_PATTERN))
    campaign_dir = os.path.join(params['root'], params['campaign'])
    if not os.path.isdir(campaign_dir):
        module.fail_json(msg='no results of campaign %s on this host: %s is not a folder' % (params['campaign'], campaign_dir),
                         campaign_dir=campaign_dir)
    files, skipped = campaign_files(campaign_dir)
    result = dict(changed=False, campaign_dir=campaign_dir, skipped=skipped, archive=None, archive_sha256=None)
    if module.check_mode:
        manifest = describe(campaign_dir, files)
    else:
        fd, archive = tempfile.mkstemp(prefix='specdec-collect-%s-' % params['campaign'], suffix='.tar.gz', dir=params['archive_dir'])
        os.close(fd)
        try:
            manifest = pack(campaign_dir, files, archive)
        except (OSError, tarfile.TarError) as exc:
            os.unlink(archive)
            module.fail_json(msg='cannot pack %s into %s: %s' % (campaign_dir, archive, exc))
        result.update(archive=archive, archive_sha256=file_sha256(archive))
    result.update(manifest=manifest, bytes=sum(entry['size'] for entry in manifest))
    module.exit_json(**result)


if __name__ == '__main__':
    main()
