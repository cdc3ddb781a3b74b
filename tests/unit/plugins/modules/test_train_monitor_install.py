# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""train_monitor_install: the monitor's imports written from the module's own payload, only when they differ."""

from __future__ import annotations

import importlib
import os
import stat
import zipfile
import zipimport

from ansible_collections.specdec.bench.plugins.modules import train_monitor_install

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
MODULE_UTILS = os.path.join(REPO, 'plugins', 'module_utils')
NAMES = ['_nvidia_smi.py', '_nvml.py', '_supervisor.py', '_telemetry.py', '_train_log.py']


def collection_source(name):
    with open(os.path.join(MODULE_UTILS, name), 'rb') as handle:
        return handle.read()


def test_the_sources_are_the_collections_files_as_they_are():
    sources = train_monitor_install.library_sources()
    assert sorted(sources) == NAMES
    for name in NAMES:
        assert sources[name] == collection_source(name)


def test_the_sources_are_read_from_a_zip_payload_too(tmp_path, monkeypatch):
    """As Ansible runs a module: its module_utils imported from a zip on sys.path (AnsiballZ), not from files."""
    payload = tmp_path / 'payload.zip'
    with zipfile.ZipFile(payload, 'w') as archive:
        archive.writestr('specdec_zipped_payload/__init__.py', '')
        archive.writestr('specdec_zipped_payload/_train_log.py', 'TEXT = "from the zip"\n')
    monkeypatch.syspath_prepend(str(payload))
    library = importlib.import_module('specdec_zipped_payload._train_log')
    assert isinstance(library.__spec__.loader, zipimport.zipimporter)
    assert train_monitor_install.library_sources([library]) == {'_train_log.py': b'TEXT = "from the zip"\n'}


def test_stale_files_are_the_missing_and_the_different(tmp_path):
    sources = {'a.py': b'same', 'b.py': b'new', 'c.py': b'absent'}
    (tmp_path / 'a.py').write_bytes(b'same')
    (tmp_path / 'b.py').write_bytes(b'old')
    assert train_monitor_install.stale_files(str(tmp_path), sources) == ['b.py', 'c.py']
    assert train_monitor_install.stale_files(str(tmp_path / 'missing'), sources) == ['a.py', 'b.py', 'c.py']


def test_installs_once_then_changes_nothing(run_module, tmp_path):
    result = run_module(train_monitor_install, dict(dest=str(tmp_path), mode='0644'))
    assert result['exit_code'] == 0 and result['changed']
    assert result['files'] == NAMES and result['written'] == NAMES
    assert sorted(os.listdir(tmp_path)) == NAMES
    for name in NAMES:
        assert (tmp_path / name).read_bytes() == collection_source(name)
        assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == 0o644
    again = run_module(train_monitor_install, dict(dest=str(tmp_path), mode='0644'))
    assert not again['changed'] and again['written'] == []


def test_a_changed_file_is_rewritten_and_a_changed_mode_restored(run_module, tmp_path):
    run_module(train_monitor_install, dict(dest=str(tmp_path), mode='0644'))
    (tmp_path / '_train_log.py').write_bytes(b'edited on the host\n')
    os.chmod(tmp_path / '_supervisor.py', 0o600)
    result = run_module(train_monitor_install, dict(dest=str(tmp_path), mode='0644'))
    assert result['changed'] and result['written'] == ['_train_log.py']
    assert (tmp_path / '_train_log.py').read_bytes() == collection_source('_train_log.py')
    assert stat.S_IMODE(os.stat(tmp_path / '_supervisor.py').st_mode) == 0o644
    assert sorted(os.listdir(tmp_path)) == NAMES


def test_only_a_mode_that_differs_is_a_change(run_module, tmp_path):
    run_module(train_monitor_install, dict(dest=str(tmp_path), mode='0644'))
    os.chmod(tmp_path / '_supervisor.py', 0o600)
    result = run_module(train_monitor_install, dict(dest=str(tmp_path), mode='0644'))
    assert result['changed'] and result['written'] == []


def test_check_mode_reports_and_writes_nothing(run_module, tmp_path):
    (tmp_path / '_train_log.py').write_bytes(b'old\n')
    result = run_module(train_monitor_install, dict(dest=str(tmp_path), _ansible_check_mode=True))
    assert result['changed'] and result['written'] == NAMES
    assert sorted(os.listdir(tmp_path)) == ['_train_log.py'] and (tmp_path / '_train_log.py').read_bytes() == b'old\n'
    # a folder the role has not made yet (a first run in check mode) is every file to write, not a failure
    missing = run_module(train_monitor_install, dict(dest=str(tmp_path / 'new'), _ansible_check_mode=True))
    assert missing['exit_code'] == 0 and missing['changed'] and missing['written'] == NAMES
    assert not (tmp_path / 'new').exists()


def test_a_missing_folder_is_refused(run_module, tmp_path):
    result = run_module(train_monitor_install, dict(dest=str(tmp_path / 'new')))
    assert result['failed'] and 'is not a folder' in result['msg'] and 'allowed:' in result['msg']
    assert not (tmp_path / 'new').exists()
