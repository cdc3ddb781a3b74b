# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action for specdec.bench.results_unpack: verify a fetched campaign archive and merge it into the controller's results.

Nothing runs on the host. The rules are in plugin_utils/collect.py.
"""

from __future__ import annotations

import datetime
import os

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

from ansible_collections.specdec.bench.plugins.module_utils._common import ID_PATTERN, ID_RE
from ansible_collections.specdec.bench.plugins.plugin_utils.collect import CollectError, unpack

ARGS = ('archive', 'manifest', 'dest', 'host', 'campaign', 'remove_archive')


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGS)

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        args = self._task.args
        campaign = args.get('campaign')
        if not isinstance(campaign, str) or not ID_RE.match(campaign):
            raise AnsibleActionFail('campaign is %r; allowed: an id matching %s' % (campaign, ID_PATTERN))
        host = args.get('host') or task_vars.get('inventory_hostname')
        if not host or '/' in host or host in ('.', '..'):
            raise AnsibleActionFail('host is %r; allowed: an inventory host name without /' % (host,))
        if not args.get('dest'):
            raise AnsibleActionFail('dest is required: the controller folder of collected results')
        try:
            remove_archive = boolean(args.get('remove_archive', True), strict=True)
        except TypeError as exc:
            raise AnsibleActionFail('remove_archive is %r; allowed: true or false' % (args.get('remove_archive'),)) from exc
        check = bool(self._task.check_mode)
        archive = args.get('archive')
        if not check and not archive:
            raise AnsibleActionFail('archive is required: the fetched archive on the controller')
        archive = os.path.abspath(os.path.expanduser(to_text(archive))) if archive else None
        dest = os.path.abspath(os.path.expanduser(to_text(args['dest'])))
        campaign_dir = os.path.join(dest, host, campaign)
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime('%Y%m%dT%H%M%SZ')
        try:
            merged = unpack(archive, args.get('manifest'), campaign_dir, stamp,
                            source='%s:%s' % (host, campaign), check=check, root=dest)
        except CollectError as exc:
            raise AnsibleActionFail('%s: nothing was written to %s' % (exc, campaign_dir)) from exc
        except OSError as exc:
            raise AnsibleActionFail('cannot unpack into %s: %s' % (campaign_dir, exc)) from exc
        finally:
            if remove_archive and archive and not check and os.path.exists(archive):
                os.unlink(archive)
        result.update(merged)
        moved = merged['added'] or merged['superseded'] or merged['only_on_controller']
        result.update(changed=bool(moved), campaign_dir=campaign_dir,
                      files=len(merged['added']) + len(merged['superseded']) + len(merged['unchanged']))
        if merged['superseded']:
            self._display.warning('%s: %d collected file(s) differ on the host; the collected ones are kept in %s' % (
                host, len(merged['superseded']), merged['superseded_dir']))
        return result
