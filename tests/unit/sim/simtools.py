"""What the simulated-host tests share: waiting on a condition with a deadline, a process's argv, and a fake tool's
Python file loaded as a module of its own."""

import importlib.util
import sys
from pathlib import Path

import testhelpers  # pylint: disable=import-error

DEADLINE_S = 10.0


def wait_until(predicate, what, timeout=DEADLINE_S, interval=0.005):
    """predicate()'s first true value, polled until timeout seconds have passed (testhelpers', polled faster)."""
    return testhelpers.wait_until(predicate, what, timeout=timeout, interval=interval)


def cmdline(pid):
    """The argv of a live process, [] once it is gone."""
    try:
        return Path("/proc/%d/cmdline" % pid).read_bytes().split(b"\0")
    except OSError:
        return []


def load_module(name, path):
    """path's module under name (a real module of the same file name elsewhere on the path stays untouched); each
    name is a module object of its own, with its own state."""
    spec = importlib.util.spec_from_file_location(name, str(path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
