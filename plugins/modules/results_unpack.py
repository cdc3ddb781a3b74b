#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: results_unpack
short_description: Verify a fetched campaign archive against the host's manifest and merge it into the controller's results
version_added: 0.1.0
description:
  - Runs on the controller only (an action plugin). Takes the archive that M(specdec.bench.results_archive) made on a host,
    fetched to the controller, and the manifest it returned, and merges the files into O(dest)C(/<host>/<campaign>/).
  - Verifies first. Every file of the archive must be in the manifest with the same size and sha256, and every manifest
    entry in the archive; otherwise nothing is written and the task fails naming the file. Sizes are checked while the
    archive is read, so a member larger than the manifest says is refused before more than that size is read.
  - Checks the destination before anything moves. A symbolic link anywhere below O(dest) on the way to a file
    (C(<host>), C(<campaign>), a stage folder, C(.collect), the file itself), a file where a folder is needed and a
    folder where a file is are refused, naming the path; links are never followed.
  - The archive is extracted and verified in a temporary folder next to the campaign's. A new campaign folder is moved
    into place whole; into an existing one the files are moved one by one, and a merge that fails halfway (a full
    disk) is undone, so what was collected before is kept as it was.
  - A file already collected with the same content is left alone, so collecting again changes nothing.
  - A collected file whose content differs on the host (a stage run again there) is replaced, and the collected one is
    kept as evidence under C(<campaign>/.collect/superseded/<UTC time>/); a warning names that folder. Nothing is lost.
  - A collected file that the host no longer has (a rerun there moved it to the stage's C(attempt-<n>/), or it was
    removed) moves to the same evidence folder and is listed in RV(only_on_controller); so the campaign folder holds
    what the host holds, and a report never reads a result the host has set aside. Nothing is lost.
  - The last manifest is kept as C(<campaign>/.collect/manifest.json).
  - In check mode the manifest is compared with what is collected and what would change is reported; nothing is written.
author:
  - specdec.bench developers (!UNKNOWN)
options:
  archive:
    description: The fetched archive on the controller. Required unless in check mode.
    type: path
  manifest:
    description: The RV(specdec.bench.results_archive#module:manifest) of the same run.
    type: list
    elements: dict
    required: true
  dest:
    description:
      - The controller folder of collected results; files go to C(<dest>/<host>/<campaign>/).
      - O(dest) itself may be a link; nothing below it may be.
    type: path
    required: true
  host:
    description: The host the archive came from. Default C(inventory_hostname).
    type: str
  campaign:
    description: The campaign id, C([a-z0-9][a-z0-9._-]*).
    type: str
    required: true
  remove_archive:
    description: Remove O(archive) afterwards, also when the verification fails.
    type: bool
    default: true
seealso:
  - module: specdec.bench.results_archive
  - module: specdec.bench.report
"""

EXAMPLES = r"""
- name: Merge the fetched archive into results/<host>/<campaign>/
  specdec.bench.results_unpack:
    archive: "{{ playbook_dir }}/../results/.incoming/{{ inventory_hostname }}-qwen36-ct200.tar.gz"
    manifest: "{{ packed.manifest }}"
    dest: "{{ playbook_dir }}/../results"
    campaign: qwen36-ct200
"""

RETURN = r"""
campaign_dir:
  description: Where the campaign's files are on the controller.
  returned: success
  type: str
  sample: /work/results/ct200/qwen36-ct200
added:
  description: Files collected for the first time.
  returned: success
  type: list
  elements: str
  sample: [tp1-autoregressive/status.json]
superseded:
  description: Files whose collected copy differed from the host's; the old copies are in RV(superseded_dir).
  returned: success
  type: list
  elements: str
  sample: [tp1-dflash-n16/status.json]
superseded_dir:
  description: Where this run kept the superseded copies and the files the host no longer has; null when none.
  returned: success
  type: str
  sample: /work/results/ct200/qwen36-ct200/.collect/superseded/20261202T150000Z
unchanged:
  description: Files already collected with the same content.
  returned: success
  type: list
  elements: str
  sample: [campaign.json]
only_on_controller:
  description: Collected files the host no longer has (moved to the evidence folder, RV(superseded_dir)).
  returned: success
  type: list
  elements: str
  sample: []
files:
  description: How many files of the host's manifest are now collected.
  returned: success
  type: int
  sample: 42
"""
