#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: service
short_description: Start, stop and read a long-lived process as a systemd unit or under specdec's own supervisor
version_added: 0.3.0
description:
  - One interface for whatever the collection runs for a long time (a stage's SGLang server, a training run, the
    monitoring page), with two backends.
  - V(systemd) where PID 1 is systemd; the unit file is rendered by the role that owns it.
  - V(supervisor) where PID 1 is not systemd (a Docker container whose entrypoint is a shell, C(sleep), sshd or tini).
    The definition (O(definition)) is kept in C(<state_dir>/<name>/service.json). Starting it runs a small supervisor
    process in a session of its own, which outlives the SSH connection and the controller. The supervisor starts the
    program in a process group of its own, with its output appended to C(<state_dir>/<name>/log). It records the pid
    and start time in C(run.json), and the exit status, or why the program could not start, in C(exit.json) when it ends.
  - Starting a running service does nothing ("never twice"). Stopping sends SIGTERM to the process group, then SIGKILL
    after O(timeout) seconds; systemd stops a unit as the unit says.
  - A program that exits at once is not a failure of this module; RV(service.state) says what became of it (with the
    supervisor, a program that could not be executed at all is already V(failed) with its RV(service.error)).
author:
  - specdec.bench developers (!UNKNOWN)
options:
  name:
    description: The service's name; a systemd unit name (C(specdec-<campaign>-<stage>.service)) on both backends.
    type: str
    required: true
  backend:
    description: V(systemd) or V(supervisor); the probe's C(ansible_facts.specdec_host.init.service_backend) tells which.
    type: str
    required: true
    choices: [systemd, supervisor]
  state:
    description:
      - V(defined) writes O(definition) (supervisor only); V(started) starts the service unless it runs; V(stopped)
        stops it; V(absent) stops it and removes its state folder (supervisor only); V(status) only reads.
    type: str
    default: status
    choices: [defined, started, stopped, absent, status]
  definition:
    description:
      - The program to run, for O(backend=supervisor) and O(state=defined).
      - C(argv) (the program by absolute path first; the words after it are passed as they are, empty ones too),
        C(env) (name to value), C(env_files) (C(NAME=value) files; a leading C(-) allows the file to be absent),
        C(cwd), C(description), C(timeout_stop_sec), C(cpu_affinity) (the CPUs the program runs on, a cpulist such as
        C(0-47,96-143) or a list of numbers, set with sched_setaffinity before it is executed; null runs it on every
        CPU; no memory policy is applied).
      - C(inherit_env) - true (the default) gives the program the supervisor's own environment, then C(env_files) and
        C(env); false gives it those two only.
      - C(uid), C(gid) and C(groups) - numeric ids, all three or none, C(groups) the complete list of supplementary
        groups (V([]) for none) - are the ids the program runs as. Before it is executed the supervisor's child sets
        the groups, the gid and the uid, in that order, then checks that they took and, for a uid other than 0, that
        no capability is left; it enters the working directory after that, as them. Without them the program runs as
        the supervisor does.
    type: dict
  state_dir:
    description: Where the supervisor keeps each service's folder.
    type: path
    default: /var/lib/specdec/services
  timeout:
    description: Seconds between SIGTERM and SIGKILL when stopping (supervisor).
    type: int
    default: 60
  log_lines:
    description: Return the service's last lines of output (the journal, or the supervisor's log); 0 returns none.
    type: int
    default: 0
extends_documentation_fragment:
  - specdec.bench.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reports what it would start, stop or write and changes nothing.
  diff_mode:
    support: none
seealso:
  - module: ansible.builtin.systemd_service
"""

EXAMPLES = r"""
- name: Define and start the training run where PID 1 is not systemd
  specdec.bench.service:
    name: specdec-train-dflash.service
    backend: supervisor
    state: started
    definition:
      argv: [/usr/bin/python3, /root/train_runs/dflash/run.py]
      env: {CUDA_VISIBLE_DEVICES: GPU-0c2a...}
      cwd: /root/train_runs/dflash

- name: Read a stage server's state and last log lines
  specdec.bench.service:
    name: specdec-qwen36-tp1-dflash-n16.service
    backend: "{{ ansible_facts.specdec_host.init.service_backend }}"
    log_lines: 50
  register: server
"""

RETURN = r"""
service:
  description: The service's state after the task.
  returned: always
  type: dict
  contains:
    state:
      description: V(running), V(exited) (status 0), V(failed) (non-zero status, a signal, could not start), V(inactive)
        (defined, not running) or V(not-found).
      type: str
      sample: running
    pid:
      description: The main pid (the last one when it ended).
      type: int
    pids:
      description: Every live pid of the service (its process group and the main pid's descendants).
      type: list
      elements: int
    exit_code:
      description: The exit status once it ended; null while running or when killed by a signal.
      type: int
    signal:
      description: The signal that ended it.
      type: int
    error:
      description: Why it could not be started, or why its end was not recorded.
      type: str
  sample: {"state": "running", "pid": 4242, "pids": [4242, 4250], "exit_code": null, "signal": null, "error": null}
log:
  description: The last O(log_lines) lines of output.
  returned: when O(log_lines) > 0
  type: list
  elements: str
log_error:
  description: Why the output could not be read.
  returned: when O(log_lines) > 0
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

# the logic lives in module_utils (specdec.bench.stage_run runs it as a step)
from ansible_collections.specdec.bench.plugins.module_utils._step_service import ARGUMENT_SPEC, run


def main():
    run(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True))


if __name__ == '__main__':
    main()
