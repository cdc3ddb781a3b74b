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

What differs, because the template comes from a GPU host and runs on the controller:

- a file is read only up to MAX_TEMPLATE_BYTES (8 MiB; Gemma 3's tokenizer_config.json, which lists every added
  token, is 1.2 MB) and tokenizer_config.json is refused past MAX_JSON_DEPTH levels of nesting (datasets.py);
- the template is compiled and rendered in a child process (bounded_child.py), never in the controller's own: all
  conversations of a batch (a prompt set) in one child, which is killed past RENDER_TIMEOUT seconds (120) and ends
  past RENDER_CPU_SECONDS of CPU (60) or RENDER_MEMORY_BYTES more memory (1 GiB). Jinja's sandbox bounds range() but
  not a loop's work, a power's size nor a string's repetition, and its compiler folds constant expressions
  (``{{ (10 ** 100000000) % 7 }}``) before anything renders;
- every failure is one ChatTemplateError: the template's own refusal (a TemplateError, raise_exception) as
  transformers raises it, anything else it raises (OverflowError, TypeError, RecursionError, ...) and every bound it
  passes, each saying which.
"""

from __future__ import annotations

import json
import os
from datetime import datetime

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

from ansible_collections.specdec.bench.plugins.plugin_utils import bounded_child
from ansible_collections.specdec.bench.plugins.plugin_utils.datasets import JSONDepthError, load_json

TEMPLATE_FILE = 'chat_template.jinja'
TEMPLATES_DIR = 'additional_chat_templates'
CONFIG_FILE = 'tokenizer_config.json'
# PreTrainedTokenizerBase.SPECIAL_TOKENS_ATTRIBUTES: what special_tokens_map passes to the template
SPECIAL_TOKEN_KEYS = ('bos_token', 'eos_token', 'unk_token', 'sep_token', 'pad_token', 'cls_token', 'mask_token')

# the bounds on what a host's model folder holds and on rendering it (see the module docstring)
MAX_TEMPLATE_BYTES = 8 << 20
RENDER_TIMEOUT = 120
RENDER_CPU_SECONDS = 60
RENDER_MEMORY_BYTES = 1 << 30


class ChatTemplateError(ValueError):
    """A model folder without a usable chat template, or a template that refuses or fails the conversation.

    ``index``: the position, in the batch render_many() rendered, of the conversation that failed; None when none
    did (the template does not compile, or rendering passed a bound).
    """

    def __init__(self, message, index=None):
        super().__init__(message)
        self.index = index


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


def compile_template(source):
    """The jinja2 template transformers makes of ``source``, with its environment's options, filter and globals.

    Compiling runs the template's constant expressions: only a bounded child (render_many) calls it."""
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
    """A model folder's file, refused past MAX_TEMPLATE_BYTES."""
    with open(path, 'rb') as handle:
        data = handle.read(MAX_TEMPLATE_BYTES + 1)
    if len(data) > MAX_TEMPLATE_BYTES:
        raise ChatTemplateError('%s is larger than %d bytes, the most a chat template file may have'
                                % (path, MAX_TEMPLATE_BYTES))
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError as exc:
        raise ChatTemplateError('%s is not UTF-8 (byte %d)' % (path, exc.start + 1)) from exc


def load_model_template(model_dir):
    """(templates, special tokens) from a model folder, as from_pretrained loads them: chat_template.jinja and
    additional_chat_templates/*.jinja, else tokenizer_config.json's chat_template. Refuses a folder with none,
    naming the files it looked for."""
    config_path = os.path.join(model_dir, CONFIG_FILE)
    config = {}
    if os.path.isfile(config_path):
        text = _read_text(config_path)
        try:
            config = load_json(text)
        except JSONDepthError as exc:
            raise ChatTemplateError('%s is %s' % (config_path, exc)) from exc
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


def _render_batch(template, conversations, variables):
    """In the child: the JSON of {"texts": [...]} or {"error": {"index", "message"}} (index null: compiling)."""
    try:
        compiled = compile_template(template)
    except MemoryError:
        raise
    except Exception as exc:  # pylint: disable=broad-except
        return _result(error={'index': None, 'message': 'the chat template does not compile: %s' % _what(exc)})
    texts = []
    for index, conversation in enumerate(conversations):
        try:
            text = compiled.render(messages=conversation['messages'], tools=conversation.get('tools'),
                                   documents=conversation.get('documents'),
                                   add_generation_prompt=conversation.get('add_generation_prompt', True), **variables)
            text.encode('utf-8')
        except MemoryError:
            raise
        except jinja2.exceptions.TemplateError as exc:
            return _result(error={'index': index, 'message': 'the chat template refused the conversation: %s' % exc})
        except Exception as exc:  # pylint: disable=broad-except
            return _result(error={'index': index, 'message': 'the chat template failed: %s' % _what(exc)})
        texts.append(text)
    return _result(texts=texts)


def _what(exc):
    return '%s: %s' % (type(exc).__name__, exc) if str(exc) else type(exc).__name__


def _result(**result):
    return json.dumps(result, ensure_ascii=False).encode('utf-8')


def render_many(template, conversations, tokens=None, chat_template_kwargs=None, timeout=None, cpu_seconds=None,
                memory_bytes=None):
    """The prompt text of each conversation, a dict {messages, add_generation_prompt (default true), tools,
    documents}, as render() makes it, all compiled and rendered in one bounded child process.

    The bounds default to RENDER_TIMEOUT, RENDER_CPU_SECONDS and RENDER_MEMORY_BYTES. ChatTemplateError on the first
    conversation that fails (its ``index`` says which) or when the batch passes a bound (index None).
    """
    timeout = RENDER_TIMEOUT if timeout is None else timeout
    cpu_seconds = RENDER_CPU_SECONDS if cpu_seconds is None else cpu_seconds
    memory_bytes = RENDER_MEMORY_BYTES if memory_bytes is None else memory_bytes
    for index, conversation in enumerate(conversations):
        if not conversation['messages']:
            raise ChatTemplateError('Cannot apply chat template to an empty conversation. Provide at least one '
                                    'message.', index)
    if not conversations:
        return []
    variables = dict(tokens or {})
    variables.update(chat_template_kwargs or {})
    try:
        data = bounded_child.run(lambda: _render_batch(template, conversations, variables), timeout,
                                 cpu_seconds=cpu_seconds, memory_bytes=memory_bytes, max_bytes=memory_bytes)
    except bounded_child.ChildError as exc:
        raise ChatTemplateError('rendering with the chat template %s%s (the bounds of one batch of prompts: %g s, %g s '
                                'of CPU, %d MiB of memory)' % ('failed: ' if exc.reason == 'exception' else '', exc,
                                                               timeout, cpu_seconds, memory_bytes >> 20)) from None
    result = json.loads(data.decode('utf-8'))
    if 'error' in result:
        raise ChatTemplateError(result['error']['message'], result['error']['index'])
    return result['texts']


def render(template, messages, tokens=None, chat_template_kwargs=None, add_generation_prompt=True, tools=None,
           documents=None):
    """The prompt text of one conversation: ``template`` (a template string) rendered with the special tokens,
    then ``chat_template_kwargs`` over them, as apply_chat_template(tokenize=False) renders it (in a bounded child:
    render_many() a batch instead of calling this for each)."""
    conversation = {'messages': messages, 'add_generation_prompt': add_generation_prompt, 'tools': tools,
                    'documents': documents}
    return render_many(template, [conversation], tokens, chat_template_kwargs)[0]


def render_for_model(model_dir, messages, chat_template_kwargs=None, add_generation_prompt=True, tools=None):
    """The prompt a conversation becomes with the model folder's own chat template."""
    templates, tokens = load_model_template(model_dir)
    return render(pick_template(templates, tools), messages, tokens, chat_template_kwargs, add_generation_prompt,
                  tools)
