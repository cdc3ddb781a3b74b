# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A conversation rendered with the target's own chat template, as its tokenizer renders it (controller side).

What the prompt looks like to the server decides what a speculative drafter is measured on, so this follows
transformers 5.19's ``PreTrainedTokenizerBase.apply_chat_template(tokenize=False)`` step by step:

- where the template comes from (``tokenization_utils_base.py`` ``from_pretrained`` / ``__init__`` /
  ``get_chat_template``): ``chat_template.jinja`` in the model folder, which replaces ``tokenizer_config.json``'s
  ``chat_template`` (a string, or a list of ``{name, template}``); ``additional_chat_templates/*.jinja`` add named
  ones; of several, ``tool_use`` when tools are given and there is one, else ``default``;
- what the template sees (``apply_chat_template``): the named special tokens of the tokenizer config (bos_token,
  eos_token, ... as strings; an AddedToken's ``content``), overridden by the caller's keyword arguments (the
  ``chat_template_kwargs``, e.g. ``enable_thinking=False``), plus ``messages``, ``tools``, ``documents`` and
  ``add_generation_prompt``;
- how it is compiled (``utils/chat_template_utils.py`` ``_cached_compile_jinja_template``): jinja2's
  ``ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)`` with the ``loopcontrols`` extension and
  the ``{% generation %}`` tag (rendered as its body), a ``tojson`` filter that is plain ``json.dumps`` (no HTML
  escaping, ``ensure_ascii=False``), and the globals ``raise_exception`` and ``strftime_now``.
"""

from __future__ import annotations

import functools
import json
import os
from datetime import datetime

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

TEMPLATE_FILE = 'chat_template.jinja'
TEMPLATES_DIR = 'additional_chat_templates'
CONFIG_FILE = 'tokenizer_config.json'
# PreTrainedTokenizerBase.SPECIAL_TOKENS_ATTRIBUTES: what special_tokens_map passes to the template
SPECIAL_TOKEN_KEYS = ('bos_token', 'eos_token', 'unk_token', 'sep_token', 'pad_token', 'cls_token', 'mask_token')


class ChatTemplateError(ValueError):
    """A model folder without a usable chat template, or a template that refuses the conversation."""


class _Generation(jinja2.ext.Extension):
    """transformers' AssistantTracker without the tracking: ``{% generation %}...{% endgeneration %}`` renders its
    body (the tracker only records where, for return_assistant_tokens_mask)."""

    tags = {'generation'}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(['name:endgeneration'], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method('_body'), [], [], body).set_lineno(lineno)

    @staticmethod
    def _body(caller):
        return caller()


def _raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def _tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(fmt):
    return datetime.now().strftime(fmt)


@functools.lru_cache(maxsize=16)
def compile_template(source):
    """The jinja2 template transformers makes of ``source``, with its environment's options, filter and globals
    (compiled once per template, as transformers caches it too)."""
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[_Generation, jinja2.ext.loopcontrols])
    env.filters['tojson'] = _tojson
    env.globals['raise_exception'] = _raise_exception
    env.globals['strftime_now'] = _strftime_now
    return env.from_string(source)


def named_templates(value):
    """A tokenizer config's ``chat_template`` as transformers keeps it: a string, or {name: template} for a list of
    ``{name, template}`` entries (or a dict)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, (list, tuple)):
        try:
            return {entry['name']: entry['template'] for entry in value}
        except (KeyError, TypeError):
            raise ChatTemplateError('chat_template is a list whose entries are not {name, template} objects') from None
    raise ChatTemplateError('chat_template is neither a string nor a list of named templates')


def pick_template(templates, tools=None, name=None):
    """The template apply_chat_template uses (get_chat_template): a single one; of several, ``name`` when given,
    else ``tool_use`` when tools are given and it exists, else ``default``."""
    if isinstance(templates, str):
        return templates
    if name is not None and name in templates:
        return templates[name]
    if tools is not None and 'tool_use' in templates:
        return templates['tool_use']
    if 'default' in templates:
        return templates['default']
    raise ChatTemplateError('the model has several chat templates and none is named default: %s'
                            % ', '.join(sorted(templates)))


def special_tokens(config):
    """The named special tokens a tokenizer config gives the template, as strings (an AddedToken's content)."""
    tokens = {}
    for key in SPECIAL_TOKEN_KEYS:
        value = config.get(key)
        if isinstance(value, dict):
            value = value.get('content')
        if value is not None:
            tokens[key] = str(value)
    return tokens


def _read_text(path):
    with open(path, encoding='utf-8') as handle:
        return handle.read()


def load_model_template(model_dir):
    """(templates, special tokens) from a model folder, as from_pretrained loads them: chat_template.jinja and
    additional_chat_templates/*.jinja, else tokenizer_config.json's chat_template. Refuses a folder with none,
    naming the files it looked for."""
    config_path = os.path.join(model_dir, CONFIG_FILE)
    config = {}
    if os.path.isfile(config_path):
        try:
            config = json.loads(_read_text(config_path))
        except ValueError as exc:
            raise ChatTemplateError('%s is not valid JSON: %s' % (config_path, exc)) from exc
        if not isinstance(config, dict):
            raise ChatTemplateError('%s is not a JSON object' % config_path)
    files = {}
    template_path = os.path.join(model_dir, TEMPLATE_FILE)
    if os.path.isfile(template_path):
        files['default'] = _read_text(template_path)
    extra_dir = os.path.join(model_dir, TEMPLATES_DIR)
    if os.path.isdir(extra_dir):
        for entry in sorted(os.listdir(extra_dir)):
            if entry.endswith('.jinja'):
                files[entry[:-len('.jinja')]] = _read_text(os.path.join(extra_dir, entry))
    if files:
        templates = files['default'] if list(files) == ['default'] else files
    elif config.get('chat_template') is not None:
        templates = named_templates(config['chat_template'])
    else:
        raise ChatTemplateError('%s has no chat template: looked for %s, %s/*.jinja and the chat_template key of %s'
                                % (model_dir, TEMPLATE_FILE, TEMPLATES_DIR, CONFIG_FILE))
    return templates, special_tokens(config)


def render(template, messages, tokens=None, chat_template_kwargs=None, add_generation_prompt=True, tools=None,
           documents=None):
    """The prompt text of one conversation: ``template`` (a template string) rendered with the special tokens,
    then ``chat_template_kwargs`` over them, as apply_chat_template(tokenize=False) renders it."""
    if not messages:
        raise ChatTemplateError('Cannot apply chat template to an empty conversation. Provide at least one message.')
    variables = dict(tokens or {})
    variables.update(chat_template_kwargs or {})
    try:
        return compile_template(template).render(messages=messages, tools=tools, documents=documents,
                                                 add_generation_prompt=add_generation_prompt, **variables)
    except jinja2.exceptions.TemplateError as exc:
        raise ChatTemplateError('the chat template refused the conversation: %s' % exc) from exc


def render_for_model(model_dir, messages, chat_template_kwargs=None, add_generation_prompt=True, tools=None):
    """The prompt a conversation becomes with the model folder's own chat template."""
    templates, tokens = load_model_template(model_dir)
    return render(pick_template(templates, tools), messages, tokens, chat_template_kwargs, add_generation_prompt,
                  tools)
