# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The preflight of a campaign's stages: SGLang's own parser, run in the servers' interpreter, and what it said.

PARSE_SCRIPT runs in that interpreter (one process for every stage of a host): it imports SGLang's server parser
as sglang.srt.server_args.prepare_server_args builds it (argparse.ArgumentParser(prog='sglang serve') plus
ServerArgs.add_cli_args), parses each stage's exact argv, starts nothing and touches no GPU. The rest are pure
functions over its output, kept apart from I/O so they are tested on captured output.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

MARKER = '@@specdec-preflight@@'

PARSE_SCRIPT = r'''
import argparse, contextlib, io, json, sys
request = json.loads(sys.stdin.read())
out = {"sglang_version": None, "error": None, "stages": {}}
try:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        import sglang
        from sglang.srt.server_args import ServerArgs
    out["sglang_version"] = str(getattr(sglang, "__version__", "") or "") or None
    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
except BaseException as exc:
    out["error"] = "%s: %s" % (type(exc).__name__, exc)
else:
    for stage_id, argv in request["stages"]:
        err = io.StringIO()
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                parser.parse_args(argv)
            out["stages"][stage_id] = {"ok": True}
        except SystemExit as exc:
            out["stages"][stage_id] = {"ok": False, "status": exc.code, "stderr": err.getvalue()[-8000:]}
sys.stdout.write("\n%s%s\n" % (MARKER, json.dumps(out)))
'''.replace('MARKER', repr(MARKER))

_ERROR_RE = re.compile(r'^(?:[^:\n]*): error: (?P<message>.*)$', re.MULTILINE)
_FLAG_RE = re.compile(r'(--?[A-Za-z0-9][A-Za-z0-9_-]*)')


def parse_output(stdout):
    """The script's JSON result from its stdout (whatever SGLang printed before it); ValueError when absent."""
    for line in reversed((stdout or '').splitlines()):
        if line.startswith(MARKER):
            data = json.loads(line[len(MARKER):])
            if not isinstance(data, dict) or not isinstance(data.get('stages'), dict):
                raise ValueError('the preflight printed %r, not its result' % line[:200])
            return data
    raise ValueError('the preflight printed no result')


def refusal(stderr):
    """(flag, reason) from argparse's error on stderr: 'unrecognized arguments', 'invalid choice: ...', ..."""
    matches = list(_ERROR_RE.finditer(stderr or ''))
    if not matches:
        lines = (stderr or '').strip().splitlines()
        return None, lines[-1] if lines else 'refused with no message'
    message = matches[-1].group('message').strip()
    if message.startswith('unrecognized arguments:'):
        flag = _FLAG_RE.search(message[len('unrecognized arguments:'):])
        return (flag.group(1) if flag else message[len('unrecognized arguments:'):].strip()), 'unrecognized arguments'
    if message.startswith('argument '):
        head, _sep, reason = message[len('argument '):].partition(': ')
        return head.split('/')[0], reason or message
    if message.startswith('ambiguous option:'):
        flag = _FLAG_RE.search(message)
        return (flag.group(1) if flag else None), message
    if message.startswith('the following arguments are required:'):
        return message.split(':', 1)[1].strip().split('/')[0].split(',')[0], 'required'
    return None, message


def refusal_line(stage_id, version, python, flag, reason):
    """stage tp1-dflash-n16: SGLang 0.5.23 (/opt/sglang/bin/python) refuses --mamba-scheduler-strategy: unrecognized arguments"""
    return 'stage %s: SGLang %s (%s) refuses %s: %s' % (stage_id, version or '(version unknown)', python,
                                                        flag or 'its command line', reason)
