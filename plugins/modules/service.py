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
  - V(systemd) where PID 1 is systemd. O(state=defined) renders the definition's unit file here (every value checked
    for control characters and quoted for systemd), writes it into O(staging_dir), has C(systemd-analyze verify) check it
    there (skipped in check mode and where systemd-analyze is not installed), and only then installs it in O(unit_dir), so
    that a unit systemd rejects never reaches systemd. It changes only when the unit's bytes or mode change; systemd is
    reloaded before O(state=started), else by the caller (a handler).
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
      - V(defined) writes O(definition) (the supervisor's C(service.json), or systemd's unit); V(started) writes it
        too when given, then starts the service unless it runs; V(stopped) stops it; V(absent) stops it and removes its
        state folder (supervisor only); V(status) only reads.
    type: str
    default: status
    choices: [defined, started, stopped, absent, status]
  definition:
    description:
      - The program to run, the same for both backends, for O(state=defined) or O(state=started).
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
      - C(numa_nodes) (systemd only) - the NUMA nodes (a cpulist) the program's memory is bound to (C(NUMAPolicy=bind),
        C(NUMAMask=)); null binds none. C(cpu_affinity) becomes C(CPUAffinity=) there.
      - C(unit) (systemd only, required there) - the unit file's layout. C(comment) the comment lines at its top,
        C(exec_lines) (words on the C(ExecStart=) line, 0 for all, then words per continued line; default all on one
        line) and the sections C(Unit), C(Service) and C(Install), each a list of entries written in order - a comment
        line (C(# ...)); the name of a field of the definition (C(description), C(env) with C(CUDA_VISIBLE_DEVICES)
        first, C(env_files), C(cwd), C(argv) with each word single-quoted, C(timeout_stop_sec), C(cpu_affinity),
        C(numa_nodes)), which writes nothing when the field is empty; a mapping C(field) and C(comment), the comment
        lines written only when the field writes something; or a one-key mapping, written C(Key=value) with C(%)
        doubled. A layout that leaves out C(argv), or a field with an effect that the definition sets, is refused.
      - The supervisor keeps neither C(unit) nor C(numa_nodes) (it binds no memory).
    type: dict
  unit_dir:
    description: Where systemd units are installed (O(backend=systemd)).
    type: path
    default: /etc/systemd/system
  staging_dir:
    description: Where a systemd unit is written and verified before it is installed (O(backend=systemd)).
    type: path
    default: /var/lib/specdec/units
  secrets:
    description:
      - An environment file of secrets that must not be in the unit file or the definition (name it in the definition's
        C(env_files)), written with O(state=defined) or O(state=started) before the definition, mode 0600 in a folder
        made 0700. Its lines are C(NAME="value"), quoted as systemd's C(EnvironmentFile=) reads them; the supervisor
        reads them the same way.
    type: dict
    suboptions:
      path:
        description: The file.
        type: path
        required: true
      env:
        description: Names to one-line values; never logged.
        type: dict
        default: {}
      comment:
        description: Comment lines at the top of the file (each starting with C(#)).
        type: list
        elements: str
        default: []
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
      - Reports what it would start, stop or write and changes nothing (a systemd unit is not verified).
  diff_mode:
    support: none
seealso:
  - module: ansible.builtin.systemd_service
"""

EXAMPLES = r"""
- name: Render, verify and install a unit (systemd), with its secrets file
  specdec.bench.service:
    name: specdec-train-dflash.service
    backend: systemd
    state: defined
    definition:
      argv: [/bin/bash, /root/train_runs/dflash/run.sh]
      env: {CUDA_VISIBLE_DEVICES: GPU-0c2a...}
      env_files: [-/etc/specdec/train-dflash.env]
      cwd: /root/train_runs/dflash
      description: specdec training run dflash
      unit:
        Unit: [description, {After: network-online.target}]
        Service: [{Type: simple}, env, env_files, cwd, argv, {Restart: "no"}, {NoNewPrivileges: "true"}]
    secrets:
      path: /etc/specdec/train-dflash.env
      env: {HF_TOKEN: "{{ hf_token }}"}
  notify: Reload systemd

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

# the engine lives in module_utils (specdec.bench.stage_run runs it as a step)
from ansible_collections.specdec.bench.plugins.module_utils._service import ARGUMENT_SPEC, manage
from ansible_collections.specdec.bench.plugins.module_utils._stage.errors import StageError


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        result = manage(module, module.params)
    except StageError as exc:
        module.fail_json(msg=exc.reason, **exc.evidence)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
