# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A stage's lease and lock files on the host: the one place that renews, watches and holds them.

The controller renews a stage's lease by touching its lease file (each poll of stage_progress, and the controller's
lease keeper, stage_lease). The stage watches it with its own monotonic clock: a renewal is a change of the file
(inode, mtime in ns, size), seen at the stage's next check, and the lease runs out when no change was seen for
`timeout` seconds of time.monotonic(). A step of the host's wall clock neither extends nor cuts it.

Lease and lock files live in a folder root owns; they are opened without following symbolic links, so a link planted
at their path is refused (an error here) and never makes the stage truncate or touch the file it points to.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import threading
import time

NOFOLLOW = getattr(os, 'O_NOFOLLOW', 0)
CLOEXEC = getattr(os, 'O_CLOEXEC', 0)


def stamp(path):
    """What a renewal changes of the lease file: (inode, mtime in ns, size), or None when it is missing."""
    try:
        st = os.lstat(path)
    except (OSError, TypeError):
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def open_regular(path, flags, mode=0o600):
    """A descriptor of the regular file at path, opened without following a symbolic link. Raises OSError (ELOOP for a
    link, EINVAL for anything but a regular file)."""
    fd = os.open(path, flags | NOFOLLOW | CLOEXEC, mode)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, 'not a regular file', path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def renew(path, create=True):
    """Touch the lease file (made when missing and `create`). True when renewed; False when it is missing (and not
    made), is not a regular file, or cannot be written: a stage folder that is gone is not an error here."""
    try:
        fd = open_regular(path, os.O_WRONLY | os.O_APPEND | (os.O_CREAT if create else 0))
    except OSError:
        return False
    try:
        os.utime(fd, None)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def held(lock_path):
    """Whether a process holds the stage's lock (a running stage_run), tested without taking it for longer than the
    test and without making the file. False when there is no lock file."""
    try:
        fd = open_regular(lock_path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        return exc.errno in (errno.EAGAIN, errno.EACCES)
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


class Lease:
    """The controller's lease on a stage. Off without a file or with timeout 0.

    age() is the time, on the stage's monotonic clock, since the last renewal it saw (a change of the lease file), or
    since the lease began. Safe to call from the lease-watch thread and the stage's own."""

    def __init__(self, path, timeout, clock=time.monotonic):
        self.path = path
        self.timeout = timeout
        self.clock = clock
        self._lock = threading.Lock()
        self.renewed = clock()
        self.stamp = stamp(path) if path else None

    def age(self):
        with self._lock:
            now = self.clock()
            current = stamp(self.path)
            if current is not None and current != self.stamp:
                self.renewed = now
            self.stamp = current
            return now - self.renewed

    def expired(self):
        """Why the stage must stop, or None."""
        if not self.path or self.timeout <= 0:
            return None
        age = self.age()
        if age > self.timeout:
            return 'no controller polled this stage for %d s (the campaign was interrupted): stopped' % age
        return None
