# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""Let plain pytest, run from the repository root, import the collection as ansible_collections.specdec.bench.

The repository root is the collection root, so a symlink tree <tmp>/ansible_collections/specdec/bench -> repo
is made outside the repository (a link inside it would make a loop for every tool that walks the tree).
Under ansible-test the collection is already importable and the tree is not needed.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import sys
import tempfile

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _collection_tree():
    digest = hashlib.sha256(REPO_ROOT.encode()).hexdigest()[:12]
    base = os.path.join(tempfile.gettempdir(), 'specdec-bench-unit-%s-%s' % (getpass.getuser(), digest))
    link = os.path.join(base, 'ansible_collections', 'specdec', 'bench')
    if os.path.realpath(link) != REPO_ROOT:
        os.makedirs(os.path.dirname(link), exist_ok=True)
        tmp_link = '%s.%d' % (link, os.getpid())
        os.symlink(REPO_ROOT, tmp_link)
        os.replace(tmp_link, link)  # atomic, so parallel test runs never see a half-made link
    return base


def _install():
    try:
        import ansible_collections.specdec.bench.plugins.module_utils  # noqa: F401  pylint: disable=unused-import
        return
    except ImportError:
        pass
    sys.path.insert(0, _collection_tree())
    # ansible_collections is a namespace package that may already be imported from site-packages
    # (the ansible package ships one); extend its search path rather than shadow it.
    package = sys.modules.get('ansible_collections')
    if package is not None and hasattr(package, '__path__'):
        path = os.path.join(sys.path[0], 'ansible_collections')
        if path not in list(package.__path__):
            package.__path__.append(path)


_install()


# ---------------------------------------------------------------------------------------------------------------
# Shared test doubles. Imported after _install() so the collection is importable.

import fnmatch  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import types  # noqa: E402

import pytest  # noqa: E402

from ansible.module_utils.common import warnings as _warnings  # noqa: E402
from ansible.module_utils.testing import patch_module_args  # noqa: E402

FIXTURES = os.path.join(REPO_ROOT, 'tests', 'fixtures')
# The field order of every captured or hand-written apps file (see tests/fixtures/nvidia-smi/h200-1gpu/README.md).
APPS_FILE_FIELDS = ('pid', 'process_name', 'gpu_uuid', 'gpu_bus_id', 'used_memory')
APPS_ALIASES = {'name': 'process_name', 'used_gpu_memory': 'used_memory'}


def fixture_text(*parts):
    with open(os.path.join(FIXTURES, *parts), encoding='utf-8') as handle:
        return handle.read()


class FakeNvidiaSmi:
    """Answers nvidia-smi command lines from one fixture directory, as a driver would.

    The driver knows the fields named in the header of query_gpu_csv.txt; the values come from query_gpu_nh.txt.
    A query for any field list is answered with those columns in that order, and a field the driver does not
    know fails the whole query with exit code 2, as the real tool does. responses overrides whole answers:
    {'query-gpu' | 'query-compute-apps' | 'topo' | 'banner': (rc, stdout, stderr)}.
    """

    def __init__(self, fixture, apps='apps.txt', query='query_gpu_nh.txt', overlay=None, responses=None):
        self.dir = os.path.join(FIXTURES, 'nvidia-smi', fixture)
        header = fixture_text('nvidia-smi', fixture, 'query_gpu_csv.txt').splitlines()[0]
        self.gpu_fields = [re.sub(r'\s*\[[^]]*\]$', '', cell.strip()) for cell in header.split(',')]
        self.gpu_rows = [[cell.strip() for cell in line.split(',')] for line in self._read(query).splitlines() if line.strip()]
        if overlay:  # (fields, file): values of a later, partial capture laid over the full one
            fields, name = overlay
            for row, line in zip(self.gpu_rows, self._read(name).splitlines()):
                for field, cell in zip(fields, line.split(',')):
                    row[self.gpu_fields.index(field)] = cell.strip()
        self.apps = [[cell.strip() for cell in line.split(',', len(APPS_FILE_FIELDS) - 1)] for line in self._read(apps).splitlines() if line.strip()]
        self.responses = dict(responses or {})
        self.calls = []

    def _read(self, name):
        path = os.path.join(self.dir, name)
        if not os.path.exists(path):
            return ''
        with open(path, encoding='utf-8') as handle:
            return handle.read()

    def run(self, args):
        """(rc, stdout, stderr) for one argument list."""
        assert isinstance(args, list), 'commands must be argument lists, got %r' % (args,)
        self.calls.append(list(args))
        options = args[1:]
        if not options:
            return self.responses.get('banner') or (0, self._read('smi.txt'), '')
        if options[0].startswith('--query-gpu='):
            assert '--format=csv,noheader,nounits' in options
            if 'query-gpu' in self.responses:
                return self.responses['query-gpu']
            fields = options[0].split('=', 1)[1].split(',')
            for field in fields:
                if field not in self.gpu_fields:
                    return 2, 'Field "%s" is not a valid field to query.\n\n' % field, ''
            rows = [', '.join(row[self.gpu_fields.index(field)] for field in fields) for row in self.gpu_rows]
            return 0, ''.join(row + '\n' for row in rows), ''
        if options[0].startswith('--query-compute-apps='):
            assert '--format=csv,noheader,nounits' in options
            if 'query-compute-apps' in self.responses:
                return self.responses['query-compute-apps']
            fields = [APPS_ALIASES.get(field, field) for field in options[0].split('=', 1)[1].split(',')]
            rows = [', '.join(app[APPS_FILE_FIELDS.index(field)] for field in fields) for app in self.apps]
            return 0, ''.join(row + '\n' for row in rows), ''
        if options == ['topo', '-m']:
            return self.responses.get('topo') or (0, self._read('topo.txt'), '')
        raise AssertionError('unexpected nvidia-smi command: %r' % (args,))


@pytest.fixture
def fake_smi():
    """The FakeNvidiaSmi class, to build one per fixture directory."""
    return FakeNvidiaSmi


def warning_texts(result):
    """Warning messages of a module result (ansible-core 2.19 reports them as structured events)."""
    texts = []
    for warning in result.get('warnings', []):
        if isinstance(warning, dict):
            warning = warning.get('event', warning).get('msg', str(warning))
        texts.append(warning)
    return texts


@pytest.fixture
def run_module(capsys, monkeypatch):
    """Run a module's main() with the given arguments; return its JSON result with 'failed' and 'warnings' as text."""
    # Importing controller code (filters, action plugins) flips ansible into controller mode for the whole process;
    # a module runs on a target, where warnings go into its result.
    from ansible.module_utils import _internal  # pylint: disable=import-outside-toplevel
    monkeypatch.setattr(_internal, 'is_controller', False)

    def run(module, args=None):
        # warnings are module-global and outlive one run in a test process (a real module runs once per process)
        _warnings._global_warnings.clear()  # pylint: disable=protected-access
        with patch_module_args(args or {}):
            with pytest.raises(SystemExit) as exit_info:
                module.main()
        result = json.loads(capsys.readouterr().out)
        result['exit_code'] = exit_info.value.code
        result['warning_texts'] = warning_texts(result)
        return result
    return run


class FakeSystemctl:
    """systemctl replaying the real systemd 252 captures (tests/fixtures/systemd/bookworm-252): listings filtered by
    the patterns, show blocks by unit name.

    A unit show.txt does not hold is answered as systemd answers for a missing one (the nosuch.service block).
    responses overrides whole answers: {verb: (rc, stdout, stderr)}.
    """

    PATH = '/usr/bin/systemctl'
    PROPERTIES = '--property=Id,Description,LoadState,ActiveState,SubState,MainPID,UnitFileState,FragmentPath,Result,NRestarts'

    def __init__(self, responses=None):
        self.blocks = dict((block.split('Id=', 1)[1].split('\n', 1)[0], block.strip('\n')) for block in self._read('show.txt').split('\n\n'))
        self.listings = {'list-units': self._read('list_units.txt'), 'list-unit-files': self._read('list_unit_files.txt')}
        self.responses = dict(responses or {})
        self.calls = []

    @staticmethod
    def _read(name):
        return fixture_text('systemd', 'bookworm-252', name)

    def run(self, args):
        assert isinstance(args, list) and args[0] == self.PATH
        self.calls.append(list(args))
        verb = args[1]
        names = args[args.index('--') + 1:]
        if verb in self.responses:
            return self.responses[verb]
        if verb in self.listings:
            lines = [line for line in self.listings[verb].splitlines()
                     if any(fnmatch.fnmatchcase(line.split()[0], pattern) for pattern in names)]
            if not lines and verb == 'list-unit-files':
                return 1, '', ''  # what systemd 252 does when no unit file matches (list_unit_files_nomatch.txt)
            return 0, ''.join(line + '\n' for line in lines), ''
        if verb == 'show':
            assert args[2] == self.PROPERTIES
            missing = self.blocks['nosuch.service']
            return 0, '\n\n'.join(self.blocks.get(name) or missing.replace('nosuch.service', name) for name in names) + '\n', ''
        raise AssertionError('unexpected systemctl command %r' % (args,))


@pytest.fixture
def fake_systemctl():
    """The FakeSystemctl class, to build one per test."""
    return FakeSystemctl


class NVMLError(Exception):
    """pynvml's error base class."""


# NVML calls the real capture (pynvml.txt) has no value for answer with these (values of the same H200).
NVML_EXTRA = {
    'nvmlDeviceGetCudaComputeCapability': lambda _handle: (9, 0),
    'nvmlDeviceGetMigMode': lambda _handle: [0, 0],
    'nvmlDeviceGetPciInfo': lambda _handle: types.SimpleNamespace(busId=b'00000000:00:06.0'),
    'nvmlDeviceGetPerformanceState': lambda _handle: 0,
    'nvmlDeviceGetPowerUsage': lambda _handle: 129140,
    'nvmlDeviceGetComputeMode': lambda _handle: 0,
    'nvmlSystemGetProcessName': lambda _pid: 'python3',
}
NVML_UNSUPPORTED = ('nvmlDeviceGetUtilizationRates', 'nvmlDeviceGetTemperature', 'nvmlDeviceGetEccMode', 'nvmlDeviceGetPersistenceMode')


def make_fake_pynvml(memory_v2=True, supported=tuple(NVML_EXTRA)):
    """A pynvml module with the real H200 values of pynvml.txt; NVML_EXTRA calls outside `supported` raise NVMLError."""
    data = json.loads(fixture_text('nvidia-smi', 'h200-1gpu', 'pynvml.txt'))
    mib = 1024 * 1024
    reserved = (143771 - 143156) * mib  # total - free - used on the idle GPU (query_gpu_nh.txt): the driver's reserve

    def unsupported(*_args, **_kwargs):
        raise NVMLError('Not Supported')

    def memory_info(_handle, version=None):
        free = data['mem_total'] - data['mem_used']
        if version is None:
            return types.SimpleNamespace(total=data['mem_total'], used=data['mem_used'], free=free)
        if not memory_v2:
            raise TypeError("nvmlDeviceGetMemoryInfo() got an unexpected keyword argument 'version'")
        return types.SimpleNamespace(total=data['mem_total'], reserved=reserved, used=data['mem_used'] - reserved, free=free)

    module = types.ModuleType('pynvml')
    module.NVMLError = NVMLError
    module.nvmlMemory_v2 = 0x02000028
    module.calls = []
    module.nvmlInit = lambda: module.calls.append('init')
    module.nvmlShutdown = lambda: module.calls.append('shutdown')
    module.nvmlSystemGetDriverVersion = lambda: data['driver']
    module.nvmlSystemGetCudaDriverVersion_v2 = lambda: data['cuda']
    module.nvmlDeviceGetCount = lambda: data['count']
    module.nvmlDeviceGetHandleByIndex = lambda index: ('handle', index)
    module.nvmlDeviceGetName = lambda _handle: data['name'].encode()  # bytes, as old pynvml releases return
    module.nvmlDeviceGetUUID = lambda _handle: data['uuid']
    module.nvmlDeviceGetMemoryInfo = memory_info
    module.nvmlDeviceGetComputeRunningProcesses = lambda _handle: [
        types.SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in data['procs']]
    for name, function in NVML_EXTRA.items():
        setattr(module, name, function if name in supported else unsupported)
    for name in NVML_UNSUPPORTED:
        setattr(module, name, unsupported)
    return module


@pytest.fixture
def fake_pynvml():
    return make_fake_pynvml
