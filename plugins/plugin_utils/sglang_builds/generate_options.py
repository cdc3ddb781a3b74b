# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Write the option list of an installed SGLang's server parser as JSON (the sglang-<version>.options.json here).

Run it with the interpreter of a venv that has real SGLang (no GPU needed; see README.md beside this file):

    /path/to/sglang-venv/bin/python plugins/plugin_utils/sglang_builds/generate_options.py \
        > plugins/plugin_utils/sglang_builds/sglang-$(/path/to/sglang-venv/bin/python -c 'import sglang; print(sglang.__version__)').options.json

It builds the parser exactly as sglang.srt.server_args.prepare_server_args does (argparse.ArgumentParser plus
ServerArgs.add_cli_args) and records, per option: its flags (aliases included), dest, action, nargs, type, choices
and default. The plan reads it to refuse an extra flag that is an alias or abbreviation of one it sets; the
emulator builds its parser from it, so it refuses what SGLang refuses.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys

ACTIONS = {
    '_StoreAction': 'store', '_StoreTrueAction': 'store_true', '_StoreFalseAction': 'store_false',
    '_StoreConstAction': 'store_const', '_AppendAction': 'append', '_CountAction': 'count', '_HelpAction': 'help',
    '_VersionAction': 'version', 'BooleanOptionalAction': 'boolean_optional',
}
TYPES = {'int': 'int', 'float': 'float', 'str': 'str', 'loads': 'json'}


def _plain(value):
    """A default as JSON, or None when it is not plain data."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(item, (bool, int, float, str)) for item in value):
        return list(value)
    return None


def _choices(choices):
    """The choices in their order; a set's (one option in 0.5.23) sorted, so the file is the same on every run."""
    if choices is None:
        return None
    if isinstance(choices, (set, frozenset)):
        choices = sorted(choices, key=str)
    return [_plain(choice) for choice in choices]


def describe(parser):
    options = []
    for action in parser._actions:  # pylint: disable=protected-access
        if not action.option_strings:
            continue
        kind = type(action).__name__
        # SGLang's own action classes (DeprecatedStoreTrueAction, LoRAPathAction, ...) keep their base's behaviour
        base = next((ACTIONS[cls.__name__] for cls in type(action).__mro__ if cls.__name__ in ACTIONS), 'store')
        if base == 'store' and action.nargs == 0:
            base = 'store_const'  # e.g. SGLang's DeprecatedStoreTrueAction: a flag with no value
        type_name = getattr(action.type, '__name__', None) if action.type is not None else None
        options.append({
            'flags': list(action.option_strings),
            'dest': action.dest,
            'action': base,
            'class': kind,
            'nargs': action.nargs,
            'type': TYPES.get(type_name, type_name),
            'choices': _choices(action.choices),
            'default': _plain(action.default),
            'const': _plain(getattr(action, 'const', None)),
            'required': bool(action.required),
        })
    return sorted(options, key=lambda option: option['flags'][-1] if option['action'] == 'help' else option['flags'][0])


def main():
    import sglang  # noqa: the installed SGLang whose parser is described
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser(prog='sglang serve')
    ServerArgs.add_cli_args(parser)
    json.dump({
        'sglang_version': sglang.__version__,
        'python': platform.python_version(),
        'generated_by': 'python plugins/plugin_utils/sglang_builds/generate_options.py (in a venv with real SGLang)',
        'allow_abbrev': parser.allow_abbrev,
        'options': describe(parser),
    }, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write('\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
