# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Work on what a host or a server sent, run in a forked child process with bounds (controller side).

A chat template read from a GPU host, or a download from a server, must not hang or exhaust the controller, and a
thread cannot be stopped: so run(work, ...) forks, the child runs work() and sends back its bytes through a pipe, and
- past ``deadline`` seconds of wall clock the child is killed (SIGKILL), whatever it is doing;
- RLIMIT_CPU ends it past ``cpu_seconds`` of CPU (SIGXCPU; core dumps off);
- RLIMIT_AS, its address space at the fork plus ``memory_bytes``, makes its allocations fail past that (MemoryError;
  on Linux, where /proc/self/statm gives the address space);
- a result longer than ``max_bytes`` is refused, and the child killed.
Every failure is one ChildError, whose ``reason`` says which: deadline, cpu, memory, size, exception (work() raised;
``kind`` and ``detail`` are the exception's class name and message) or died (it ended without a result).

A fork costs a few milliseconds and imports nothing in the child, so callers put a whole batch of work into one child
(every prompt of a set, one download) and never pay it per item.
"""

from __future__ import annotations

import math
import os
import resource
import selectors
import signal
import time

_OK = b'+'
_FAILED = b'!'
_READ = 1 << 20
# after the child closed its end of the pipe, how often to look whether it has exited
_EXIT_POLL_S = 0.005


class ChildError(Exception):
    """Work that did not finish in its child; ``reason`` says why (see the module docstring)."""

    def __init__(self, reason, message, kind=None, detail=None):
        super().__init__(message)
        self.reason = reason
        self.kind = kind
        self.detail = message if detail is None else detail


def _limit(which, soft, hard):
    """Lower a resource limit to (soft, hard), never above the hard limit the process already has."""
    _soft, current = resource.getrlimit(which)
    if current != resource.RLIM_INFINITY:
        soft, hard = min(soft, current), min(hard, current)
    resource.setrlimit(which, (soft, hard))


def _address_space():
    with open('/proc/self/statm', encoding='ascii') as handle:
        return int(handle.read().split()[0]) * os.sysconf('SC_PAGE_SIZE')


def _describe(exc):
    try:
        return type(exc).__name__, str(exc)
    except Exception:  # pylint: disable=broad-except
        return type(exc).__name__, '(its message cannot be shown)'


def _child(write_fd, work, cpu_seconds, memory_bytes):
    """In the child: set the limits, run work(), write the status byte and the result (or the error)."""
    try:
        signal.signal(signal.SIGXCPU, signal.SIG_DFL)
        _limit(resource.RLIMIT_CORE, 0, 0)
        if cpu_seconds is not None:
            seconds = max(1, int(math.ceil(cpu_seconds)))
            _limit(resource.RLIMIT_CPU, seconds, seconds + 1)
        if memory_bytes is not None:
            try:
                size = _address_space() + memory_bytes
            except (OSError, ValueError):
                size = None  # no /proc: no memory bound here
            if size is not None:
                _limit(resource.RLIMIT_AS, size, size)
        result = work()
        if not isinstance(result, bytes):
            raise TypeError('work() returned %s, not bytes' % type(result).__name__)
        out = _OK + result
    except BaseException as exc:  # pylint: disable=broad-except
        kind, detail = _describe(exc)
        out = _FAILED + ('%s\n%s' % (kind, detail)).encode('utf-8', 'backslashreplace')
    view = memoryview(out)
    while view:
        view = view[os.write(write_fd, view[:_READ]):]


def _read(read_fd, end, max_bytes):
    """The child's output, and None or why reading stopped early (deadline, size)."""
    chunks, size = [], 0
    with selectors.DefaultSelector() as selector:
        selector.register(read_fd, selectors.EVENT_READ)
        while True:
            remaining = end - time.monotonic()
            if remaining <= 0:
                return chunks, 'deadline'
            if not selector.select(remaining):
                continue
            chunk = os.read(read_fd, _READ)
            if not chunk:
                return chunks, None
            size += len(chunk)
            if max_bytes is not None and size > max_bytes + len(_OK):
                return chunks, 'size'
            chunks.append(chunk)


def _wait(pid, end):
    """The child's exit status once it has exited (it closed the pipe, so it is about to); killed at the deadline."""
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(_EXIT_POLL_S)
    os.kill(pid, signal.SIGKILL)
    return os.waitpid(pid, 0)[1]


def _signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:
        return 'signal %d' % number


def run(work, deadline, cpu_seconds=None, memory_bytes=None, max_bytes=None):
    """The bytes work() returns, computed in a forked child within the bounds; ChildError otherwise."""
    read_fd, write_fd = os.pipe()
    try:
        pid = os.fork()
    except OSError as exc:
        os.close(read_fd)
        os.close(write_fd)
        raise ChildError('died', 'cannot start a child process: %s' % exc)
    if pid == 0:  # pragma: no cover - the child; coverage does not follow it
        try:
            os.close(read_fd)
            _child(write_fd, work, cpu_seconds, memory_bytes)
        finally:
            os._exit(0)  # pylint: disable=protected-access
    os.close(write_fd)
    status = None
    try:
        chunks, stopped = _read(read_fd, time.monotonic() + deadline, max_bytes)
        if stopped is None:
            status = _wait(pid, time.monotonic() + deadline)
    finally:
        os.close(read_fd)
        if status is None:
            os.kill(pid, signal.SIGKILL)
            status = os.waitpid(pid, 0)[1]
    if stopped == 'deadline':
        raise ChildError('deadline', 'took longer than %g s' % deadline)
    if stopped == 'size':
        raise ChildError('size', 'returned more than %d bytes' % max_bytes)
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU:
        raise ChildError('cpu', 'used more than %g s of CPU' % cpu_seconds)
    data = b''.join(chunks)
    if data[:1] == _OK:
        return data[1:]
    if data[:1] == _FAILED:
        kind, _newline, detail = data[1:].decode('utf-8', 'replace').partition('\n')
        if kind == 'MemoryError' and memory_bytes is not None:
            raise ChildError('memory', 'needed more than %d MiB of memory' % (memory_bytes >> 20), kind, detail)
        raise ChildError('exception', '%s: %s' % (kind, detail) if detail else kind, kind, detail)
    if os.WIFSIGNALED(status):
        how = 'killed by %s' % _signal_name(os.WTERMSIG(status))
        if os.WTERMSIG(status) == signal.SIGKILL and cpu_seconds is not None:
            how += ' (past its CPU limit of %g s, or out of memory)' % cpu_seconds
    else:
        how = 'exit status %d' % os.waitstatus_to_exitcode(status)
    raise ChildError('died', 'ended without a result (%s)' % how)
