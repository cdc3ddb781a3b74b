# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The stage engine's layout: each module that wraps an engine of module_utils/_stage/ has one name for the module, its
engine file and its test; an engine returns results and raises StageError, it never ends the module itself; and no
module_utils file defines a stand-in for AnsibleModule."""

from __future__ import annotations

import ast
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
MODULES = os.path.join(REPO, 'plugins', 'modules')
MODULE_UTILS = os.path.join(REPO, 'plugins', 'module_utils')
ENGINE_IMPORT = re.compile(r'^from ansible_collections\.specdec\.bench\.plugins\.module_utils\._stage\.(\w+) import', re.M)


def python_files(folder):
    for root, _dirs, names in os.walk(folder):
        for name in sorted(names):
            if name.endswith('.py'):
                yield os.path.join(root, name)


def read(path):
    with open(path, encoding='utf-8') as handle:
        return handle.read()


def test_a_module_its_engine_and_its_test_share_one_name():
    wrapped = {}
    for path in python_files(MODULES):
        name = os.path.basename(path)[:-3]
        engines = set(ENGINE_IMPORT.findall(read(path))) - {'errors'}
        if engines:
            wrapped[name] = engines
    assert set(wrapped) >= {'stage_attempt', 'sglang_ready', 'stage_record', 'bench_run', 'stage_run'}, wrapped
    for name, engines in wrapped.items():
        assert engines == {name}, (name, engines)
        assert os.path.isfile(os.path.join(REPO, 'tests', 'unit', 'plugins', 'modules', 'test_%s.py' % name)), name


def test_an_engine_never_ends_the_module_and_no_module_util_fakes_ansible_module():
    for path in python_files(MODULE_UTILS):
        tree = ast.parse(read(path), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                methods = {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
                assert not methods & {'fail_json', 'exit_json'}, (path, node.name)
            if os.path.dirname(path).endswith('_stage') and isinstance(node, ast.Attribute):
                assert node.attr not in ('fail_json', 'exit_json'), (path, node.lineno)
