# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action specdec.bench.stage_wait: wait for the stages of a wave started with `async`, printing their progress live.

Each poll is one round trip for the whole wave, and a long one: specdec.bench.stage_progress renews each stage's lease,
waits on the host until a job ends or a progress file changes (at most `poll` seconds), then returns every job's
results and progress. The action prints what changed (a server loading, ready, each finished harness run) as it
happens, not at the end of the task, and a stage's end is seen within a tick, not after a fixed interval.
"""

from __future__ import annotations

import os
import time

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.specdec.bench.plugins.plugin_utils import lease_keeper

display = Display()

ARGUMENT_SPEC = {
    'jobs': {'type': 'list', 'elements': 'dict', 'required': True},
    'poll': {'type': 'float', 'default': 5.0},
    'timeout': {'type': 'float', 'default': 0.0},
    'missing_after': {'type': 'float', 'default': 60.0},
    'keeper': {'type': 'dict'},
}


def job_of(entry, position):
    """(stage id, jid, progress file, lease file, launch failure) of one registered result of the async loop."""
    if not isinstance(entry, dict):
        raise AnsibleActionFail('stage_wait: jobs[%d] is %r; allowed: a result of the async loop that started stage_run' % (position, entry))
    item = entry.get('item') if isinstance(entry.get('item'), dict) else {}
    stage = (item.get('status') or {}).get('stage') or item.get('stage') or 'job %d' % position
    if entry.get('failed') or not entry.get('ansible_job_id'):
        return stage, None, None, None, to_text(entry.get('msg') or 'the stage was not started (no async job id)')
    return stage, entry['ansible_job_id'], item.get('progress_file'), item.get('lease_file'), None


def _number(value, digits=1, unit=''):
    return '?' if not isinstance(value, (int, float)) else '%.*f%s' % (digits, value, unit)


def progress_lines(stage, progress, seen):
    """The lines for what is new in a stage's progress since `seen` (phase, runs printed), which it updates."""
    lines = []
    if not isinstance(progress, dict):
        return lines
    phase = progress.get('phase')
    if phase != seen.get('phase'):
        if phase == 'loading':
            lines.append('%s: server started, loading' % stage)
        elif phase == 'running':
            lines.append('%s: ready after %s s, %s harness run(s) to go' % (
                stage, _number(progress.get('ready_s')), progress.get('runs_total', '?')))
        seen['phase'] = phase
    runs = progress.get('runs') if isinstance(progress.get('runs'), list) else []
    for position in range(seen.get('runs', 0), len(runs)):
        run = runs[position] if isinstance(runs[position], dict) else {}
        line = '%s: %s (%d of %s)' % (stage, run.get('label', '?'), position + 1, progress.get('runs_total', '?'))
        if run.get('failed'):
            line += ' failed'
        elif 'bound_by' in run:  # a capacity search: its capacity and why it stopped
            capacity = run.get('capacity')
            line += ' capacity %s (%s point(s), stopped by %s)' % (
                '%g' % capacity if isinstance(capacity, (int, float)) else 'none', run.get('points', '?'), run['bound_by'])
        else:
            line += ' %s tok/s' % _number(run.get('output_throughput'))
            if run.get('accept_length') is not None:
                line += ', tau %s' % _number(run.get('accept_length'), 2)
        lines.append(line + ' in %s s' % _number(run.get('elapsed_s')))
    seen['runs'] = len(runs)
    return lines


class ActionModule(ActionBase):

    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        if validation.error_messages:
            raise AnsibleActionFail("stage_wait: %s" % "; ".join(validation.error_messages))
        if args["poll"] <= 0:
            lease_keeper.release(args['keeper'])
            raise AnsibleActionFail('stage_wait: poll is %r; allowed: a number of seconds > 0' % args['poll'])
        try:
            self._wait(result, task_vars, args)
        finally:
            # the wave's lease keeper (specdec.bench.stage_lease) stops with the wait: what it did, for the record
            result['lease_keeper'] = lease_keeper.release(args['keeper'])
        return result

    def _wait(self, result, task_vars, args):
        host = (task_vars or {}).get('inventory_hostname', '?')
        jobs = [job_of(entry, position) for position, entry in enumerate(args['jobs'])]
        outcome = dict((position, {'stage': job[0], 'finished': job[4] is not None, 'result': None, 'msg': job[4]})
                       for position, job in enumerate(jobs))
        pending = [position for position, job in enumerate(jobs) if job[1]]
        async_dir = self._remote_expand_user(self.get_shell_option('async_dir', default='~/.ansible_async'))
        seen = dict((position, {}) for position in pending)
        stamps = {}  # what the last answer saw of each job's files: the next long poll answers at once when they changed
        started = time.monotonic()
        polls = 0
        # Ansible's worker runs in a session of its own: killing ansible-playbook's process group leaves it running. Its
        # parent changes when ansible-playbook is gone; it then stops polling, so the stages' leases run out.
        controller = os.getppid()
        while pending:
            if os.getppid() != controller:
                raise AnsibleActionFail('stage_wait: ansible-playbook (pid %d) is gone; the stages stop at the end of their '
                                        'leases' % controller)
            reply = self._execute_module(
                module_name='specdec.bench.stage_progress', task_vars=task_vars,
                module_args={'async_dir': async_dir, 'wait': args['poll'], 'jobs': [
                    dict((key, value) for key, value in (('jid', jobs[p][1]), ('progress_file', jobs[p][2]), ('lease_file', jobs[p][3]),
                                                         ('seen', stamps.get(p))) if value) for p in pending]})
            polls += 1
            if reply.get('failed'):
                raise AnsibleActionFail('stage_wait: cannot read the stages in flight on %s: %s' % (host, reply.get('msg')))
            waited = time.monotonic() - started
            still = []
            for position, state in zip(pending, reply.get('jobs') or []):
                stamps[position] = state.get('seen')
                for line in progress_lines(jobs[position][0], state.get('progress'), seen[position]):
                    display.display('  [%s] %s' % (host, line))
                if state.get('finished'):
                    outcome[position].update(finished=True, result=state.get('result'))
                elif not state.get('found') and waited > args['missing_after']:
                    outcome[position].update(finished=True, msg='the async job %s has no results file after %d s (it never started)'
                                             % (jobs[position][1], waited))
                else:
                    still.append(position)
            pending = still
            if pending and args['timeout'] and waited > args['timeout']:
                for position in pending:
                    outcome[position]['msg'] = 'still running after %d s (stage_wait timeout); no controller polls it any more' % waited
                break
        stages = []
        for position in range(len(jobs)):
            entry = outcome[position]
            job_result = entry['result'] if isinstance(entry['result'], dict) else {}
            status = job_result.get('status') if isinstance(job_result.get('status'), dict) else None
            msg = entry['msg'] or (None if status else to_text(job_result.get('msg') or 'the stage ended without a status'))
            stages.append({'stage': entry['stage'], 'jid': jobs[position][1], 'status': status, 'msg': msg,
                           'result': job_result or None})
        result.update(changed=any(isinstance(s['result'], dict) and s['result'].get('changed') for s in stages),
                      stages=stages, polls=polls, waited_s=round(time.monotonic() - started, 3))
        return result
