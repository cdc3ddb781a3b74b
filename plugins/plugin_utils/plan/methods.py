# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The method table (a build profile's methods, or plan_methods) checked, the SGLang build the stages are made for, and
the flags: every flag of the table one the build knows, and no extra flag that sets what the plan sets."""

from __future__ import annotations

import re
import string
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.specdec.bench.plugins.module_utils._common import ID_PATTERN, ID_RE as _ID_RE
from ansible_collections.specdec.bench.plugins.plugin_utils import sglang_build as builds
from .common import ENV_NAME_RE, ONE_LINE, POSITIVE_INT, fail, is_positive_int, one_line

_FLAG_RE = re.compile(r'--[A-Za-z0-9][A-Za-z0-9_-]*\Z')
METHOD_TABLE_KEYS = ('args', 'env', 'params', 'description')
PARAM_KEYS = ('type', 'required', 'default', 'short')
PARAM_TYPES = ('int',)
# What a method's args and env may refer to besides its own params.
STAGE_FIELDS = ('model', 'draft', 'tp', 'port')
COMMON_FLAGS = ('--model-path', '--tp-size', '--host', '--port', '--mem-fraction-static')
# spec.enable_metrics: SGLang's Prometheus /metrics, which the harness scrapes around each measured run; the flag every
# stage's server gets after COMMON_FLAGS where the build's option list has its dest.
METRICS_FLAG = '--enable-metrics'
METRICS_DEST = 'enable_metrics'


def arg_items(args, field):
    """A list of '--flag' strings and [flag, value] pairs, as lists of strings."""
    if not isinstance(args, (list, tuple)):
        fail(field, 'is %r' % (args,), "a list of '--flag' strings and [flag, value] pairs")
    items = []
    for position, item in enumerate(args):
        item_field = '%s[%d]' % (field, position)
        pair = isinstance(item, (list, tuple))
        flag = item[0] if pair and item else item
        if (pair and len(item) != 2) or not isinstance(flag, str) or not _FLAG_RE.match(flag):
            fail(item_field, 'is %r' % (item,), "'--flag' or [--flag, value], the flag matching %s" % _FLAG_RE.pattern[:-2])
        if pair:
            value = item[1]
            if isinstance(value, bool) or not isinstance(value, (str, int, float)) or not one_line(str(value)):
                fail(item_field + '[1]', 'is %r' % (value,), 'a string or number, ' + ONE_LINE)
            items.append([flag, str(value)])
        else:
            items.append(flag)
    return items


def env_items(env, field):
    if env is None:
        return {}
    if not isinstance(env, Mapping):
        fail(field, 'is %r' % (env,), 'a mapping of environment variable names to values')
    items = {}
    for name, value in env.items():
        if not isinstance(name, str) or not ENV_NAME_RE.match(name):
            fail('%s key %r' % (field, name), 'is not an environment variable name', ENV_NAME_RE.pattern[:-2])
        if isinstance(value, bool) or not isinstance(value, (str, int, float)) or not one_line(str(value)):
            fail('%s.%s' % (field, name), 'is %r' % (value,), 'a string or number, ' + ONE_LINE)
        items[name] = str(value)
    return items


def _template_fields(text, field, known):
    """The {names} a str.format template uses; all must be known."""
    try:
        names = [field[1] for field in string.Formatter().parse(text) if field[1] is not None]
    except ValueError as exc:
        raise AnsibleFilterError('campaign_plan: method table %s is %r: %s; allowed: str.format templates with '
                                 '{name} fields (double a literal brace)' % (field, text, exc))
    for name in names:
        if name not in known:
            raise AnsibleFilterError('campaign_plan: method table %s uses {%s}; allowed fields: %s'
                                     % (field, name, ', '.join('{%s}' % k for k in known)))
    return names


def method_table(methods):
    """Validated per-method table (a build profile's methods, or plan_methods): name -> {args, env, params}, and the fields each uses."""
    if not isinstance(methods, Mapping) or not methods:
        raise AnsibleFilterError('campaign_plan: methods (the per-method table: plan_methods or a build profile\'s) is %r; allowed: '
                                 'a mapping of method name to {args, env, params}' % (methods,))
    table = {}
    for name, entry in methods.items():
        where = 'method table %s' % name
        if not isinstance(name, str) or not _ID_RE.match(name):
            raise AnsibleFilterError('campaign_plan: method table key %r; allowed: a name matching %s' % (name, ID_PATTERN))
        entry = entry or {}
        if not isinstance(entry, Mapping) or any(key not in METHOD_TABLE_KEYS for key in entry):
            raise AnsibleFilterError('campaign_plan: %s is %r; allowed keys: %s' % (where, entry, ', '.join(METHOD_TABLE_KEYS)))
        params = {}
        for param, rule in (entry.get('params') or {}).items():
            rule = rule or {}
            if (not isinstance(param, str) or not ENV_NAME_RE.match(param) or param in STAGE_FIELDS
                    or not isinstance(rule, Mapping) or any(key not in PARAM_KEYS for key in rule)):
                raise AnsibleFilterError('campaign_plan: %s.params.%s is %r; allowed: a name other than %s with keys %s'
                                         % (where, param, rule, ', '.join(STAGE_FIELDS), ', '.join(PARAM_KEYS)))
            if rule.get('type', 'int') not in PARAM_TYPES:
                raise AnsibleFilterError('campaign_plan: %s.params.%s.type is %r; allowed: %s'
                                         % (where, param, rule.get('type'), ', '.join(PARAM_TYPES)))
            short = rule.get('short', param)
            if not isinstance(short, str) or not re.match(r'[a-z0-9_]+\Z', short):
                raise AnsibleFilterError('campaign_plan: %s.params.%s.short is %r; allowed: [a-z0-9_]+' % (where, param, short))
            default = rule.get('default')
            if default is not None and not is_positive_int(default):
                raise AnsibleFilterError('campaign_plan: %s.params.%s.default is %r; allowed: %s' % (where, param, default, POSITIVE_INT))
            # a parameter without a default must be given, whatever `required` says: its templates need a value
            params[param] = {'required': bool(rule.get('required')) or default is None, 'default': default, 'short': short}
        known = STAGE_FIELDS + tuple(params)
        args = arg_items(entry.get('args') or [], where + '.args')
        env = env_items(entry.get('env'), where + '.env')
        uses = set()
        for position, item in enumerate(args):
            if isinstance(item, list):
                uses.update(_template_fields(item[1], '%s.args[%d]' % (name, position), known))
        for var, value in env.items():
            uses.update(_template_fields(value, '%s.env.%s' % (name, var), known))
        table[name] = {'args': args, 'env': env, 'params': params, 'uses': uses}
    return table


def flag_name(item):
    return item[0] if isinstance(item, list) else item


def check_table_flags(table, build):
    """Every flag of the method table is one the build's SGLang parser knows by that exact name."""
    for method, entry in table.items():
        for position, item in enumerate(entry['args']):
            flag = flag_name(item)
            how, option = builds.resolve_flag(build['options'], flag)
            if how != 'exact':
                raise AnsibleFilterError(
                    'campaign_plan: method table %s.args[%d] is %s, which SGLang %s (build %s) does not know%s; allowed: '
                    'the options of that build (plugins/plugin_utils/sglang_builds/%s%s)' % (
                        method, position, flag, build['sglang_version'], build['name'],
                        ' by that name (it would be read as %s)' % option['flags'][0] if option else '',
                        build['options_file'], ' and ' + ', '.join(build['extra_flags']) if build['extra_flags'] else ''))


def check_extra_args(extra_args, planned, build):
    """No extra flag may set what the plan sets: not by its name, an alias or an abbreviation SGLang accepts."""
    planned_list = ', '.join(sorted(planned))
    for position, item in enumerate(extra_args):
        flag, field = flag_name(item), 'extra_args[%d]' % position
        if flag in planned:
            fail(field, 'repeats %s, which the plan sets' % flag, 'flags other than %s' % planned_list)
        if build is None:  # a method table of the user's own with no build: abbreviations of planned flags only
            prefixed = sorted(other for other in planned if other.startswith(flag))
            if prefixed:
                fail(field, 'is %s, an abbreviation of %s, which the plan sets (SGLang accepts abbreviations)'
                     % (flag, ', '.join(prefixed)), 'flags other than %s' % planned_list)
            continue
        how, option = builds.resolve_flag(build['options'], flag)
        where = 'SGLang %s (build %s)' % (build['sglang_version'], build['name'])
        if how == 'unknown':
            fail(field, 'is %s, which %s does not know (it would exit with "unrecognized arguments")' % (flag, where),
                 'an option of that build')
        if how == 'ambiguous':
            fail(field, 'is %s, which %s finds ambiguous (it could match %s)' % (flag, where, ', '.join(option)),
                 'an option of that build, spelled out')
        sets = [other for other in planned if (builds.resolve_flag(build['options'], other)[1] or {}).get('dest') == option['dest']]
        if sets:
            fail(field, 'is %s, which %s reads as %s (%s of it), which the plan sets' % (
                flag, where, option['flags'][0], 'an alias' if how == 'exact' else 'an abbreviation'),
                'flags other than %s and their aliases and abbreviations' % planned_list)


def server_metrics(requested, build):
    """spec.enable_metrics against the build: (whether every stage's server gets METRICS_FLAG, the plan's note when it
    does not). Unset means on where the build's option list has the dest enable_metrics and silently off elsewhere;
    true on a build without it fails naming both; a method table of the user's own with no build is on only when
    asked (nothing says its SGLang knows the flag)."""
    if requested is not None and not isinstance(requested, bool):
        fail('enable_metrics', 'is %r' % (requested,), 'true or false (SGLang\'s %s)' % METRICS_FLAG)
    if requested is False:
        return False, 'server metrics off (enable_metrics: false)'
    if build is None:
        if requested:
            return True, None
        return False, ('server metrics off: the method table given to the plan names no SGLang build to say it knows %s '
                       '(enable_metrics: true adds it)' % METRICS_FLAG)
    if any(option.get('dest') == METRICS_DEST for option in build['options']):
        return True, None
    where = 'SGLang %s (build %s)' % (build['sglang_version'], build['name'])
    if requested:
        fail('enable_metrics', 'is true, and %s has no %s' % (where, METRICS_FLAG),
             'false or unset, or a build whose option list (plugins/plugin_utils/sglang_builds/%s) has it' % build['options_file'])
    return False, 'server metrics off: %s has no %s' % (where, METRICS_FLAG)


def build_profile(build, methods, sglang_version, sglang_python):
    """The SGLang build profile the stages are made for (None: a user's own method table and no build named)."""
    if build is not None and not isinstance(build, str):
        fail('sglang_build', 'is %r' % (build,), 'the name of a build profile')
    if not build and methods:
        return None
    try:
        return builds.select(builds.load_builds(), name=build or None, version=sglang_version, python=sglang_python)
    except builds.BuildError as exc:
        raise AnsibleFilterError('campaign_plan: %s' % exc)
