# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""SGLang build profiles (sglang_builds/builds.yml) and the option lists of SGLang's own parser.

Pure functions over the shipped data: load the profiles, pick one by name or by SGLang version, and resolve a flag
as SGLang's argparse parser does (aliases, and abbreviations, which its parser allows). The plan uses them; the
simulated host's emulator reads the merged option lists that write_option_lists() makes.
"""

from __future__ import annotations

import copy
import fnmatch
import json
import os
import re

import yaml

from ansible_collections.specdec.bench.plugins.module_utils._common import ID_PATTERN, ID_RE

BUILDS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'sglang_builds')
BUILDS_FILE = 'builds.yml'
PROFILE_KEYS = ('description', 'versions', 'options', 'extra_options', 'metrics', 'methods')
METRIC_TYPES = ('counter', 'gauge', 'histogram', 'summary')
OPTION_KEYS = ('flags', 'dest', 'action', 'type', 'nargs', 'choices', 'default', 'const', 'required', 'class')
ACTIONS = ('store', 'store_true', 'store_false', 'store_const', 'append', 'count', 'help', 'version', 'boolean_optional')
_FLAG_RE = re.compile(r'--?[A-Za-z0-9][A-Za-z0-9_-]*\Z')
_CACHE = {}


class BuildError(ValueError):
    """A profile file that is not as documented, or a build that cannot be chosen."""


def _read_json(path):
    try:
        with open(path, encoding='utf-8') as handle:
            return json.load(handle)
    except (OSError, ValueError) as exc:
        raise BuildError('cannot read the SGLang option list %s: %s' % (path, exc))


def _check_option(option, where):
    if not isinstance(option, dict) or any(key not in OPTION_KEYS for key in option):
        raise BuildError('%s is %r; allowed: a mapping with keys %s' % (where, option, ', '.join(OPTION_KEYS)))
    flags = option.get('flags')
    if not isinstance(flags, list) or not flags or not all(isinstance(flag, str) and _FLAG_RE.match(flag) for flag in flags):
        raise BuildError('%s.flags is %r; allowed: a non-empty list of --flags' % (where, flags))
    if not isinstance(option.get('dest'), str):
        raise BuildError('%s.dest is %r; allowed: the option\'s argparse dest' % (where, option.get('dest')))
    if option.get('action', 'store') not in ACTIONS:
        raise BuildError('%s.action is %r; allowed: %s' % (where, option.get('action'), ', '.join(ACTIONS)))
    return dict(option, action=option.get('action', 'store'))


def _metric_names(directory, metrics_file, where):
    """The metric names (as the server writes them: counters with _total) of a build's metrics list, the file its
    profile's `metrics` names beside BUILDS_FILE ({metrics: [{name, type, help, labels, ...}]}, written from SGLang's
    metrics collector; sglang_builds/README.md)."""
    if not isinstance(metrics_file, str) or os.path.basename(metrics_file) != metrics_file:
        raise BuildError('%s.metrics is %r; allowed: the name of a metrics list beside %s' % (where, metrics_file, BUILDS_FILE))
    doc = _read_json(os.path.join(directory, metrics_file))
    entries = doc.get('metrics') if isinstance(doc, dict) else None
    if not isinstance(entries, list) or not entries:
        raise BuildError('%s: metrics is %r; allowed: a list of {name, type, help, labels}' % (metrics_file, entries))
    names = []
    for position, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get('name'), str) or entry.get('type') not in METRIC_TYPES:
            raise BuildError('%s: metrics[%d] is %r; allowed: {name, type (%s), help, labels}'
                             % (metrics_file, position, entry, ', '.join(METRIC_TYPES)))
        names.append(entry['name'])
    return names


def load_builds(directory=BUILDS_DIR):
    """name -> profile, each with its merged option list under 'options' and the release's version."""
    directory = os.path.abspath(directory)
    if directory in _CACHE:
        return copy.deepcopy(_CACHE[directory])
    path = os.path.join(directory, BUILDS_FILE)
    try:
        with open(path, encoding='utf-8') as handle:
            data = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError) as exc:
        raise BuildError('cannot read the SGLang build profiles %s: %s' % (path, exc))
    if not isinstance(data, dict) or not data:
        raise BuildError('%s holds %r; allowed: a mapping of build name to profile' % (path, data))
    builds, lists = {}, {}
    for name, profile in data.items():
        where = '%s: %s' % (BUILDS_FILE, name)
        if not isinstance(name, str) or not ID_RE.match(name):
            raise BuildError('%s: build name %r; allowed: a name matching %s' % (BUILDS_FILE, name, ID_PATTERN))
        if not isinstance(profile, dict) or any(key not in PROFILE_KEYS for key in profile):
            raise BuildError('%s is %r; allowed keys: %s' % (where, profile, ', '.join(PROFILE_KEYS)))
        versions = profile.get('versions') or []
        if not isinstance(versions, list) or not all(isinstance(version, str) for version in versions):
            raise BuildError('%s.versions is %r; allowed: a list of version strings or patterns' % (where, versions))
        if not isinstance(profile.get('methods'), dict) or not profile['methods']:
            raise BuildError('%s.methods is %r; allowed: a mapping of method name to {args, env, params}' % (where, profile.get('methods')))
        options_file = profile.get('options')
        if not isinstance(options_file, str) or os.path.basename(options_file) != options_file:
            raise BuildError('%s.options is %r; allowed: the name of an option list beside %s' % (where, options_file, BUILDS_FILE))
        if options_file not in lists:
            lists[options_file] = _read_json(os.path.join(directory, options_file))
        release = lists[options_file]
        options = [_check_option(option, '%s options[%d]' % (options_file, i)) for i, option in enumerate(release.get('options') or [])]
        extra = profile.get('extra_options') or []
        if not isinstance(extra, list):
            raise BuildError('%s.extra_options is %r; allowed: a list of options' % (where, extra))
        known = set(flag for option in options for flag in option['flags'])
        for position, option in enumerate(extra):
            option = _check_option(option, '%s.extra_options[%d]' % (where, position))
            clash = [flag for flag in option['flags'] if flag in known]
            if clash:
                raise BuildError('%s.extra_options[%d] repeats %s of the release' % (where, position, ', '.join(clash)))
            options.append(option)
        metrics_file, metrics = profile.get('metrics'), []
        if metrics_file is not None:
            metrics = _metric_names(directory, metrics_file, where)
        builds[name] = {
            'name': name,
            'description': str(profile.get('description') or ''),
            'versions': list(versions),
            'sglang_version': release.get('sglang_version'),
            'options_file': options_file,
            'extra_flags': sorted(flag for option in extra for flag in option['flags']),
            'options': options,
            'metrics_file': metrics_file,
            'metrics': metrics,
            'methods': profile['methods'],
        }
    _CACHE[directory] = builds
    return copy.deepcopy(builds)


def release_version(version):
    """'0.5.23+cu130' -> '0.5.23': the public version, which the profiles match."""
    return str(version).strip().split('+', 1)[0] if version is not None else None


def select(builds, name=None, version=None, python=None):
    """The profile named, else the one whose versions match; BuildError naming what was found and what is known."""
    known = ', '.join('%s (%s)' % (build, ', '.join(builds[build]['versions']) or 'by name only') for build in sorted(builds))
    if name:
        if name not in builds:
            raise BuildError('specdec_sglang_build is %r; allowed: %s' % (name, known))
        return builds[name]
    where = ' in %s' % python if python else ''
    if not version:
        raise BuildError('no SGLang version was found%s (is SGLang installed in the launcher\'s interpreter?) and no '
                         'specdec_sglang_build is set; set specdec_sglang_build to one of: %s, or give your own method table (plan_methods)'
                         % (where, known))
    public = release_version(version)
    matches = sorted(build for build, profile in builds.items()
                     if any(fnmatch.fnmatchcase(public, pattern) for pattern in profile['versions']))
    if not matches:
        raise BuildError('no SGLang build profile matches SGLang %s found%s; set specdec_sglang_build to one of: %s, or give '
                         'your own method table (plan_methods)' % (version, where, known))
    if len(matches) > 1:
        raise BuildError('SGLang %s found%s matches the profiles %s; set specdec_sglang_build to one of them'
                         % (version, where, ', '.join(matches)))
    return builds[matches[0]]


def resolve_flag(options, flag):
    """What SGLang's parser makes of a flag: ('exact' | 'abbreviation', option), ('ambiguous', [flags]) or ('unknown', None).

    As argparse does with allow_abbrev (SGLang's default): an exact option string first, else every long option
    string the flag is a prefix of ('--flag=value' is matched by its flag part).
    """
    flag = flag.split('=', 1)[0]
    by_flag = dict((string, option) for option in options for string in option['flags'])
    if flag in by_flag:
        return 'exact', by_flag[flag]
    if not flag.startswith('--'):
        return 'unknown', None
    matches = sorted(string for string in by_flag if string.startswith(flag))
    dests = set(by_flag[string]['dest'] for string in matches)
    if not matches:
        return 'unknown', None
    if len(dests) > 1:
        return 'ambiguous', matches
    return 'abbreviation', by_flag[matches[0]]


def write_option_lists(out_dir, directory=BUILDS_DIR):
    """<out_dir>/<build>.json for every profile: {build, sglang_version, options (release + the build's own)}."""
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for name, profile in sorted(load_builds(directory).items()):
        path = os.path.join(out_dir, name + '.json')
        with open(path, 'w', encoding='utf-8') as handle:
            json.dump({'build': name, 'sglang_version': profile['sglang_version'], 'options': profile['options']},
                      handle, sort_keys=True)
            handle.write('\n')
        written.append(path)
    return written
