# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action for specdec.bench.report: the campaign report, written on the controller from the collected results.

Nothing runs on a host. The logic is in the plugin_utils/report/ package; this file validates the arguments and returns.
"""

from __future__ import annotations

import json
import os

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.specdec.bench.plugins.plugin_utils.report import BASELINE_METHOD, ReportError, generate
from ansible_collections.specdec.bench.plugins.plugin_utils.report.checkpoints import evaluation
from ansible_collections.specdec.bench.plugins.plugin_utils.report.keys import DEFAULT_NOISY_CV
from ansible_collections.specdec.bench.plugins.plugin_utils.report.schedule_check import edge_line

display = Display()
# One warning per skipped file up to this many; all of them are in skipped_files and report.md.
MAX_SKIPPED_WARNINGS = 10
ARGS = ('campaign', 'results_dir', 'output_dir', 'hosts', 'compare_to', 'baseline_method', 'plots', 'noisy_cv', 'schedule_check')


def read_schedule(path):
    """An earlier report's schedule.json, checked to be a list of schedule entries; AnsibleActionFail naming the option."""
    try:
        with open(path, encoding='utf-8') as handle:
            schedule = json.load(handle)
    except (OSError, ValueError) as exc:
        raise AnsibleActionFail('schedule_check: cannot read %s (%s); allowed: the schedule.json a report wrote' % (path, exc)) from exc
    if not isinstance(schedule, list) or not all(isinstance(entry, dict) and isinstance(entry.get('bands'), list) for entry in schedule):
        raise AnsibleActionFail('schedule_check: %s is not a schedule; allowed: the schedule.json a report wrote (a list of '
                                '{host, tp, dataset, temperature, bands})' % path)
    return schedule


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGS)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self._task.args
        for name in ('campaign', 'results_dir', 'output_dir'):
            if not args.get(name):
                raise AnsibleActionFail('%s is required' % name)
        hosts = args.get('hosts')
        if hosts is not None and (not isinstance(hosts, list) or not all(isinstance(h, str) and h for h in hosts)):
            raise AnsibleActionFail('hosts is %r; allowed: a list of inventory host names' % (hosts,))
        try:
            plots = boolean(args.get('plots', True), strict=True)
        except TypeError as exc:
            raise AnsibleActionFail('plots is %r; allowed: true or false' % (args.get('plots'),)) from exc
        noisy_cv = args.get('noisy_cv', DEFAULT_NOISY_CV)
        if isinstance(noisy_cv, str):  # a templated value arrives as text
            try:
                noisy_cv = float(noisy_cv)
            except ValueError as exc:
                raise AnsibleActionFail('noisy_cv is %r; allowed: a coefficient of variation, a number above 0 and at most 1' % (noisy_cv,)) from exc
        output_dir = os.path.abspath(os.path.expanduser(to_text(args['output_dir'])))
        schedule, schedule_path = None, args.get('schedule_check') or None
        if schedule_path is not None:
            schedule = read_schedule(os.path.abspath(os.path.expanduser(to_text(schedule_path))))
        results_dir = os.path.abspath(os.path.expanduser(to_text(args['results_dir'])))
        try:
            made = generate(
                results_dir, args['campaign'], output_dir,
                hosts=hosts, compare_to=args.get('compare_to') or None,
                baseline_method=args.get('baseline_method') or BASELINE_METHOD, plots=plots, noisy_cv=noisy_cv,
                schedule_check=schedule, schedule_name=schedule_path)
        except (ReportError, ImportError) as exc:  # ImportError: numpy or scipy missing on the controller, named
            raise AnsibleActionFail(str(exc)) from exc
        except OSError as exc:
            raise AnsibleActionFail('cannot write the report to %s: %s' % (output_dir, exc)) from exc
        report = made['report']
        skipped = [{'path': os.path.join(results_dir, *item['path'].split('/')), 'reason': item['reason']}
                   for item in made['skipped_files']]
        for item in skipped[:MAX_SKIPPED_WARNINGS]:
            display.warning('report: skipped %s: %s' % (item['path'], item['reason']))
        if len(skipped) > MAX_SKIPPED_WARNINGS:
            display.warning('report: %d more file(s) skipped, listed in skipped_files and in %s' % (
                len(skipped) - MAX_SKIPPED_WARNINGS, made['files']['report.md']))
        result.update(
            changed=bool(made['changed']),
            files=made['files'],
            written=made['changed'],
            report_md=made['files']['report.md'],
            hosts=[host['host'] for host in report['hosts']],
            rows=len(report['rows']),
            measured=sum(1 for row in report['rows'] if row['status'] == 'ok'),
            not_measured=report['not_measured'],
            best=report['best'],
            summary_lines=made['lines'],
            skipped_files=skipped,
        )
        if made['evaluation']:  # a checkpoint sweep: its summary, for the training host
            result['evaluation'] = made['evaluation']
            result['best_checkpoint'] = evaluation(report)['best']
        check = report.get('schedule_check')
        if check is not None:
            result['schedule_check'] = check
            if not check['passed']:
                bad = [edge_line(edge) for edge in check['edges'] if edge['verdict'] in ('reversed', 'missing')]
                result.update(failed=True, msg='the schedule %s does not hold at its band edges (the report is written): %s'
                              % (schedule_path, '; '.join(bad)))
        if made['plots_skipped']:
            result['plots_skipped'] = made['plots_skipped']
            if plots:
                display.warning(made['plots_skipped'])
        return result
