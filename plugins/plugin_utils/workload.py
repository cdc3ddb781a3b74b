# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A host's workload made ready on the controller: each prompt set prepared (datasets.py) and templated with the
target's own chat template (chat_template.py) into the host prompts file the builtin harness sends.

API (all raise WorkloadError):
- prepare_workload(datasets, files, chat_template_kwargs, cache, base_dir, url_base, model_path) -> [prepared]
- model_template(files, model_path) -> (template, tokens, origin): the template transformers would pick, from the
  texts of chat_template.jinja and tokenizer_config.json as read from the model folder.
- segments(turns, template, tokens, kwargs) -> [str]: one conversation's segments, checked (see below).

What comes from the host is bounded: chat_template.jinja and tokenizer_config.json past chat_template.MAX_TEMPLATE_BYTES
(8 MiB) or nested past datasets.MAX_JSON_DEPTH are refused, naming the file; all prompts of a set are rendered in one
child process within chat_template's bounds (RENDER_TIMEOUT 120 s, RENDER_CPU_SECONDS 60, RENDER_MEMORY_BYTES 1 GiB),
and any failure there is a WorkloadError naming the set, the record when one failed, and the template's file.

Host prompts file (one JSON object per line, keys sorted, compact, UTF-8; named by its sha256 in
<cache>/prompts/): {"id", "category", "segments": [str, ...], "turns": [str, ...]}. For turn i the harness sends
segments[0] + answer_0 + segments[1] + ... + answer_{i-1} + segments[i]. segments[0] is the first turn rendered alone
with the generation prompt; segments[i] is what follows assistant answer i-1 when the conversation up to user turn i
is rendered with unique placeholders as the assistant's answers: the conversation as the model saw it. Every
multi-turn record is checked with a sample answer: the concatenation must equal the template's own rendering of the
conversation, with one allowance: a template whose generation prompt ends in text that it leaves out of earlier
assistant turns (kept_prompt(); Qwen3's empty think block with enable_thinking=false) keeps that text in the earlier
turns, as the model saw it, and the notes say so. A template that differs otherwise is refused, naming it and the
first difference (send `turns: first` instead).
"""

from __future__ import annotations

import hashlib
import json
import os

from ansible_collections.specdec.bench.plugins.module_utils._common import atomic_write
from ansible_collections.specdec.bench.plugins.plugin_utils import chat_template, datasets

PROMPTS_DIR = 'prompts'
TEMPLATE_FILE = chat_template.TEMPLATE_FILE
CONFIG_FILE = chat_template.CONFIG_FILE
# the keys of a prepared dataset, in the order the contract names them; random entries carry them as null
PREPARED_KEYS = ('name', 'kind', 'source', 'source_sha256', 'pinned', 'format', 'count', 'categories', 'turns',
                 'max_new_tokens', 'num_prompts', 'normalized_sha256', 'template_sha256', 'chat_template_kwargs',
                 'prompts_path', 'prompts_sha256', 'references_path', 'references_sha256', 'references_count', 'notes')
SAMPLE_ANSWER = 'A sample answer, with two sentences. It ends here.'


class WorkloadError(ValueError):
    """A workload that cannot be prepared: a dataset, a missing or unfit chat template; the message says which."""


def _sha256(text):
    return hashlib.sha256(text.encode('utf-8')).hexdigest()


def model_template(files, model_path=None):
    """(template text, special tokens, origin) from {file name: text} of a model folder.

    chat_template.jinja wins over tokenizer_config.json's chat_template, as transformers loads them; of several named
    templates, pick_template's choice. WorkloadError naming the folder and the files when there is none.
    """
    files = files or {}
    where = model_path or 'the model folder'
    for name, text in sorted(files.items()):
        size = len(text.encode('utf-8', 'surrogatepass')) if isinstance(text, str) else 0
        if size > chat_template.MAX_TEMPLATE_BYTES:
            raise WorkloadError('%s/%s is %d bytes; allowed: at most %d (chat_template.MAX_TEMPLATE_BYTES)'
                                % (where, name, size, chat_template.MAX_TEMPLATE_BYTES))
    config = {}
    if files.get(CONFIG_FILE) is not None:
        try:
            config = datasets.load_json(files[CONFIG_FILE])
        except datasets.JSONDepthError as exc:
            raise WorkloadError('%s/%s is %s' % (where, CONFIG_FILE, exc)) from exc
        except ValueError as exc:
            raise WorkloadError('%s/%s is not valid JSON: %s' % (where, CONFIG_FILE, exc)) from exc
        if not isinstance(config, dict):
            raise WorkloadError('%s/%s is not a JSON object' % (where, CONFIG_FILE))
    try:
        if files.get(TEMPLATE_FILE) is not None:
            templates, origin = files[TEMPLATE_FILE], '%s/%s' % (where, TEMPLATE_FILE)
        elif config.get('chat_template') is not None:
            templates = chat_template.named_templates(config['chat_template'])
            origin = '%s/%s chat_template' % (where, CONFIG_FILE)
        else:
            raise WorkloadError(
                '%s has no chat template (looked for %s and the chat_template key of %s), so the prompts cannot be '
                'sent as the model expects them; add the template to the model folder, or measure random prompts only'
                % (where, TEMPLATE_FILE, CONFIG_FILE))
        template = chat_template.pick_template(templates)
    except chat_template.ChatTemplateError as exc:
        raise WorkloadError('%s: %s' % (where, exc)) from exc
    if isinstance(templates, dict):
        origin += ' (%s)' % next(name for name, text in templates.items() if text is template)
    return template, chat_template.special_tokens(config), origin


def _conversation(turns, answers, add_generation_prompt=True):
    messages = []
    for i, turn in enumerate(turns):
        if i:
            messages.append({'role': 'assistant', 'content': answers[i - 1]})
        messages.append({'role': 'user', 'content': turn})
    return {'messages': messages, 'add_generation_prompt': add_generation_prompt}


def _first_difference(left, right):
    at = next((i for i, (a, b) in enumerate(zip(left, right)) if a != b), min(len(left), len(right)))
    return at, left[max(0, at - 30):at + 40], right[max(0, at - 30):at + 40]


def _kept_conversations(turn):
    """What kept_prompt() renders: the turn with the generation prompt, then turn, answer, turn without it."""
    return [_conversation([turn], []), _conversation([turn, turn], [SAMPLE_ANSWER], add_generation_prompt=False)]


def _kept(prompt, history):
    common = next((i for i, (a, b) in enumerate(zip(prompt, history)) if a != b), min(len(prompt), len(history)))
    kept = prompt[common:]
    return kept if history[common:].startswith(SAMPLE_ANSWER) else ''


def kept_prompt(template, tokens=None, kwargs=None, turn='Hello'):
    """The end of the generation prompt that the template leaves out of an earlier assistant turn ('' for most).

    The first turn's prompt with the generation prompt, against the same turn followed by an answer and a second
    turn (an answer before the last user turn is history): what the former has after their common prefix when the
    latter goes on with the answer there (Qwen3 with enable_thinking=false: its empty think block).
    """
    return _kept(*chat_template.render_many(template, _kept_conversations(turn), tokens, kwargs))


def _answers(turns):
    """The placeholders (unique, none in a turn, the same for the same turns, so the prompts file is reproducible)
    and the sample answers of a multi-turn conversation."""
    nonce = _sha256('\n'.join(turns))[:16]
    holders = ['SPECDECANSWER%d%s' % (i, nonce) for i in range(len(turns) - 1)]
    sample = ['%s (%d)' % (SAMPLE_ANSWER, i + 1) for i in range(len(turns) - 1)]
    return holders, sample


def _conversations(turns):
    """Every conversation segments() renders for one record's turns, in the order _segments() reads them: the first
    turn; each later turn with placeholders as answers; kept_prompt()'s history; each later turn with sample answers."""
    if len(turns) == 1:
        return [_conversation(turns, [])]
    holders, sample = _answers(turns)
    return ([_conversation(turns[:1], [])] + [_conversation(turns[:i + 1], holders) for i in range(1, len(turns))]
            + _kept_conversations(turns[0])[1:] + [_conversation(turns[:i + 1], sample) for i in range(1, len(turns))])


def _segments(turns, texts, origin):
    """One conversation's segments from the texts of its _conversations(), checked (see the module docstring)."""
    result = [texts[0]]
    if len(turns) == 1:
        return result
    count = len(turns)
    holders, sample = _answers(turns)
    for i in range(1, count):
        text, holder = texts[i], holders[i - 1]
        if text.count(holder) != 1:
            raise WorkloadError('%s does not render an assistant answer as written (turn %d: the answer appears %d '
                                'times in the prompt); multi-turn prompts cannot be built from it: set turns: first'
                                % (origin, i + 1, text.count(holder)))
        result.append(text.split(holder, 1)[1])
    kept = _kept(texts[0], texts[count])
    for i in range(1, count):
        rendered = texts[count + i]
        joined = result[0] + ''.join(sample[j] + result[j + 1] for j in range(i))
        if kept and rendered != joined:
            # the earlier turns as the model saw them: the kept text before each earlier answer
            for answer in sample[:i]:
                rendered = rendered.replace(answer, kept + answer, 1)
        if rendered != joined:
            at, found, sent = _first_difference(rendered, joined)
            raise WorkloadError(
                '%s renders an earlier answer differently from how the model saw it after its generation prompt, so '
                'turn %d cannot be sent as the earlier prompt plus answer plus a segment: at character %d the '
                'template renders %s where the concatenation has %s; set turns: first for multi-turn sets with this '
                'template (or other chat_template_kwargs)' % (origin, i + 1, at, json.dumps(found), json.dumps(sent)))
    return result


def segments(turns, template, tokens=None, kwargs=None, origin='the chat template'):
    """The segments of one conversation's user turns (see the module docstring), checked with a sample answer."""
    return _segments(turns, chat_template.render_many(template, _conversations(turns), tokens, kwargs), origin)


def prompts_file(normalized_path, template, tokens, kwargs, origin, label):
    """(the bytes of the host prompts file of a normalized JSONL, kept_prompt() of the template), every prompt
    rendered in one bounded child; WorkloadError naming the record that failed, or the bound passed."""
    records, conversations, spans = [], [], []
    with open(normalized_path, encoding='utf-8') as handle:
        for raw in handle:
            if raw.strip():
                record = json.loads(raw)
                records.append(record)
                start = len(conversations)
                conversations.extend(_conversations(record['turns']))
                spans.append((start, len(conversations)))
    conversations.extend(_kept_conversations('Hello'))
    try:
        texts = chat_template.render_many(template, conversations, tokens, kwargs)
    except chat_template.ChatTemplateError as exc:
        failed = next((record for record, (start, end) in zip(records, spans)
                       if exc.index is not None and start <= exc.index < end), None)
        if failed is None:
            raise WorkloadError('%s: %s (%s)' % (label, exc, origin)) from exc
        raise WorkloadError('%s: record %s: %s (%s)' % (label, failed['id'], exc, origin)) from exc
    lines = []
    for record, (start, end) in zip(records, spans):
        try:
            parts = _segments(record['turns'], texts[start:end], origin)
        except WorkloadError as exc:
            raise WorkloadError('%s: record %s: %s' % (label, record['id'], exc)) from exc
        lines.append(json.dumps({'id': record['id'], 'category': record['category'], 'segments': parts,
                                 'turns': record['turns']}, ensure_ascii=False, sort_keys=True, separators=(',', ':')))
    return ('\n'.join(lines) + '\n').encode('utf-8'), _kept(*texts[-2:])


def _turn_counts(data):
    return [json.loads(line)['turns'] for line in data.decode('utf-8').splitlines() if line.strip()]


def _random(entry):
    prepared = dict.fromkeys(PREPARED_KEYS)
    prepared.update(entry, name=datasets.RANDOM, kind='random', notes=[])
    return prepared


def _entries(entries):
    """Validated entries as given (the plan's stage.workload.datasets), or raw spec entries validated here."""
    if entries is None:
        return [{'name': datasets.RANDOM, 'kind': 'random', 'num_prompts': None, 'input_len': None, 'output_len': None}]
    if isinstance(entries, list) and entries and all(isinstance(e, dict) and 'kind' in e for e in entries):
        for i, entry in enumerate(entries):
            if entry['kind'] not in ('builtin', 'file', 'random') or not isinstance(entry.get('name'), str):
                raise WorkloadError('datasets[%d] is %r; allowed: an entry of the plan\'s workload.datasets' % (i, entry))
        return entries
    return datasets.validate_datasets(entries)


def prepare_workload(entries, files=None, chat_template_kwargs=None, cache=None, base_dir=None, url_base=None,
                     model_path=None):
    """Every dataset of a host's workload prepared, in order; a real set's prompts templated into its prompts file.

    Writes only under the controller cache (datasets.cache_dir(cache)): the normalized files and prompts/<sha256>.jsonl.
    """
    kwargs = dict(chat_template_kwargs or {})
    try:
        entries = _entries(entries)
    except datasets.DatasetError as exc:
        raise WorkloadError(str(exc)) from exc
    real = [entry['name'] for entry in entries if entry['kind'] != 'random']
    template = tokens = origin = None
    if real:
        try:
            template, tokens, origin = model_template(files, model_path)
        except WorkloadError as exc:
            raise WorkloadError('workload.datasets asks for %s: %s' % (', '.join(real), exc)) from exc
    folder = os.path.join(datasets.cache_dir(cache), PROMPTS_DIR)
    result = []
    for entry in entries:
        if entry['kind'] == 'random':
            result.append(_random(entry))
            continue
        try:
            made = datasets.prepare(entry, cache=cache, url_base=url_base, base_dir=base_dir)
        except datasets.DatasetError as exc:
            raise WorkloadError(str(exc)) from exc
        data, kept = prompts_file(made['path'], template, tokens, kwargs, origin, entry['name'])
        sha256 = hashlib.sha256(data).hexdigest()
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, sha256 + '.jsonl')
        atomic_write(path, data, unchanged_ok=True)
        notes = list(made.get('notes') or [])
        notes.append('%s: %d prompts (%s turns) templated with %s%s' % (
            entry['name'], made['count'], made['turns'], origin,
            ' and %s' % json.dumps(kwargs, sort_keys=True) if kwargs else ''))
        if kept and made['turns'] == 'all' and max(len(turns) for turns in _turn_counts(data)) > 1:
            notes.append('%s: the template leaves %s of its generation prompt out of earlier assistant turns; later '
                         'turns keep it there, as the model saw it (the chat endpoint would render them without it)'
                         % (entry['name'], json.dumps(kept)))
        prepared = {key: made.get(key) for key in PREPARED_KEYS}
        prepared.update(normalized_sha256=made['sha256'], template_sha256=_sha256(template),
                        chat_template_kwargs=kwargs, prompts_path=path, prompts_sha256=sha256, notes=notes)
        result.append(prepared)
    return result
