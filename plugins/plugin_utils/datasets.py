# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The prompt sets of `workload.datasets`, on the controller: check the entries, fetch, pin, cache and normalize.

API (all raise DatasetError):
- validate_datasets(entries, sources=None) -> [entry]: pure; the plan filter calls it before anything changes.
- prepare_datasets(entries, cache=None, url_base=None, sources=None, base_dir=None) -> [prepared]: validate, then
  prepare() each; prepare(entry, ...) -> prepared: one checked entry fetched (or read) and normalized into the cache.
- normalize(data, label, fmt=None, ...) -> {data, sha256, format, count, categories, available}: pure, bytes in.
- parse(), detect_format(), load_sources(), fetch_source(), download(), cache_dir(): the steps, for tools and tests.
- load_json(text) -> value: json.loads refusing nesting deeper than MAX_JSON_DEPTH (JSONDepthError, a ValueError).

Entries (the campaign spec's `workload.datasets`, a list; validate_datasets() checks them all, touching nothing):
- a built-in name: one of dataset_sources.yml beside this file (mt-bench, gsm8k, humaneval, mbpp, math500,
  spec-bench), as a string or as {name, num_prompts, max_new_tokens, turns, categories};
- {name, file, num_prompts, max_new_tokens, turns, categories}: a JSONL (or .jsonl.gz) on the controller, its format
  detected (FORMATS); `name` is the dataset's id in the results, so it is an id and not a built-in name;
- `random` or {name: random, num_prompts, input_len, output_len}: today's seeded random prompts, no file; a key left
  out is the workload's own (input_len, output_len, num_prompts).
Per entry: num_prompts (a positive int: the first N records in file order, after `categories`; default the table's
count, or all), max_new_tokens (positive int, default 2048), turns (`first` | `all`, default all: multi-turn sets
send every user turn, as the references do), categories (a list, only on a set whose records carry categories;
built-in sets name theirs in the table, a file's are those found in it).
Bad values raise DatasetError (a ValueError; the plan filter maps it to AnsibleFilterError) naming the field, what it
is and what is allowed.

Normalized JSONL (normalize()): one JSON object per line, {"category": str, "id": str, "turns": [str, ...]}, keys
sorted, UTF-8, compact separators, so the same prompts always give the same bytes and sha256. `turns` are the user
turns only (system and assistant messages of a `messages`/`conversations` record are not sent; the target's chat
template is applied later). A record's id is its own (id, question_id, task_id or unique_id), else its 1-based position among the file's
records (blank lines do not count).

Formats (FORMATS, detected per file from the first record; every record must agree):
  turns          {"turns": [str, ...]} (MT-Bench, Spec-Bench, SGLang's speed-bench), with category, question_id
  conversations  {"conversations": [{"from"|"role": ..., "value"|"content": str}, ...]} (ShareGPT, SGLang custom):
                 the turns from human/user
  messages       {"messages": [{"role": ..., "content": str | [{"type": "text", "text": str}]}]} (OpenAI chat)
  humaneval      {"task_id", "prompt", "entry_point"}: dflash's "Write a solution to the following problem ..." wrap
  prompt         {"prompt": str} (vLLM/SGLang single prompt)
  gsm8k          {"question", "answer"}: dflash's "... Please reason step by step ..." suffix
  math500        {"problem"}: the same suffix
  mbpp           {"text", "test_list"}: the description alone, as dflash sends it
A malformed file is refused with its name, the 1-based line number and what is wrong: bad JSON, JSON nested deeper
than MAX_JSON_DEPTH (100) levels, not an object, no known format, a missing field, a wrong type, an empty turn, a format
other than line 1's, a repeated id, no records.

Cache (cache_dir(): argument, else $SPECDEC_DATASET_CACHE, else ~/.cache/specdec/datasets):
  <cache>/<name>/<upstream file name>           as downloaded (urllib, TIMEOUT, DOWNLOAD_DEADLINE, MAX_DOWNLOAD_BYTES),
                                                atomic
  <cache>/<name>/<upstream file name>.sha256    for a source with sha256: null, the sha256 recorded on first use
  <cache>/normalized/<sha256>.jsonl             every normalized file prepare() made, named by its sha256
  <cache>/normalized/<sha256>.references.jsonl  its records' grading references (gsm8k and math500 answers, humaneval
                                                and mbpp tests), when the format has them: kept beside the prompts, so
                                                the prompts' bytes and sha256 do not change
A cached file whose sha256 matches is used without any network, so a pre-filled cache folder works offline (copy it
from a connected machine). A download whose sha256 differs from the table's (or from the one recorded on first use)
is refused, naming the expected and the found sha256, and the cache keeps what it had. url_base (argument, else
$SPECDEC_DATASET_MIRROR) fetches <url_base>/<name>/<upstream file name> instead of the table's URL (a mirror laid out
as the cache is; the sha256 pins still apply): tests serve fixture files from 127.0.0.1 this way.
A download is bounded three ways: TIMEOUT (60 s) for each wait for bytes, DOWNLOAD_DEADLINE (300 s) for all of it,
from connecting to the last byte (so a server that trickles bytes, in its headers or its body, cannot hold it: it runs
in a child process that is killed then, bounded_child.py), and MAX_DOWNLOAD_BYTES (64 MiB) for its size.

prepare(entry) returns what a stage's results must record: name, kind (builtin | file | random), source (URL or
absolute path), source_sha256, pinned (table | first-use | recorded | none for a local file), format, count,
categories ({category: count}), turns, max_new_tokens, num_prompts, sha256 and path of the normalized file,
references_path, references_sha256 and references_count (the grading references beside it; None and 0 without), and
notes (lines for the output: trust on first use, a re-download).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import urllib.error
import urllib.parse
import zlib

import yaml
from ansible.module_utils.urls import ConnectionError, open_url  # pylint: disable=redefined-builtin

from ansible_collections.specdec.bench.plugins.module_utils._common import atomic_write, file_sha256, is_id
from ansible_collections.specdec.bench.plugins.plugin_utils import bounded_child

SOURCES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'dataset_sources.yml')
CACHE_ENV = 'SPECDEC_DATASET_CACHE'
MIRROR_ENV = 'SPECDEC_DATASET_MIRROR'
DEFAULT_CACHE = os.path.join('~', '.cache', 'specdec', 'datasets')
NORMALIZED_DIR = 'normalized'
RECORD_SUFFIX = '.sha256'
REFERENCES_SUFFIX = '.references.jsonl'

RANDOM = 'random'
TURNS = ('first', 'all')
DEFAULT_TURNS = 'all'
DEFAULT_MAX_NEW_TOKENS = 2048
ENTRY_KEYS = ('name', 'file', 'num_prompts', 'max_new_tokens', 'turns', 'categories')
RANDOM_KEYS = ('name', 'num_prompts', 'input_len', 'output_len')
SOURCE_KEYS = ('description', 'url', 'sha256', 'records', 'format', 'category', 'categories', 'id_range',
               'num_prompts', 'license', 'reference')

TIMEOUT = 60
DOWNLOAD_DEADLINE = 300
MAX_DOWNLOAD_BYTES = 64 << 20
# JSON from a file, a server or a host nested deeper than this is refused (a record or a tokenizer config has a few
# levels; Python's parser raises RecursionError near 1000)
MAX_JSON_DEPTH = 100
# a .gz is refused when it unpacks to more than this (the largest built-in set is under 1 MiB unpacked)
MAX_UNPACKED_BYTES = 256 << 20

# dflash's benchmark.py (and ddtree's model/utils.py) prompt formats, which our numbers are compared with
REASON_SUFFIX = '\nPlease reason step by step, and put your final answer within \\boxed{}.'
HUMANEVAL_WRAP = 'Write a solution to the following problem and make sure that it passes the tests:\n```python\n%s\n```'

USER_ROLES = ('human', 'user')
ID_FIELDS = ('id', 'question_id', 'task_id', 'unique_id')
_SHA256_RE = re.compile(r'[0-9a-f]{64}\Z')
_CACHE = {}


class DatasetError(ValueError):
    """A dataset entry, source table or file that is not as documented; the message names the field or the line."""


class JSONDepthError(ValueError):
    """JSON nested deeper than the depth allowed."""


class _Bad(Exception):
    """What is wrong with one record; _parse adds the file name and line number."""


def load_json(text, max_depth=MAX_JSON_DEPTH):
    """json.loads(text), refusing a value nested deeper than max_depth (JSONDepthError; json's own ValueError for
    bad JSON), which the parser, or later a repr of it, would otherwise meet as a RecursionError."""
    opening = text.count('[') + text.count('{') if isinstance(text, str) else text.count(b'[') + text.count(b'{')
    try:
        value = json.loads(text)
    except RecursionError:
        raise JSONDepthError('JSON nested more than %d levels deep' % max_depth) from None
    if opening > max_depth:
        # only a text with more brackets than max_depth can be nested deeper (brackets in strings count too)
        level = [(value, 1)]
        while level:
            item, depth = level.pop()
            if isinstance(item, (dict, list)):
                if depth > max_depth:
                    raise JSONDepthError('JSON nested more than %d levels deep' % max_depth)
                level.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return value


def _kind(value):
    return {dict: 'a mapping', list: 'a list', str: 'a string', bool: 'a boolean', type(None): 'null'}.get(
        type(value), 'a number' if isinstance(value, (int, float)) else type(value).__name__)


def _is_positive_int(value):
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


# ---- formats: each a detector and an extractor of the user turns -------------------------------------------------

def _text(value, field):
    if not isinstance(value, str):
        raise _Bad('%s is %s; allowed: a string' % (field, _kind(value)))
    if not value.strip():
        raise _Bad('%s is empty' % field)
    try:
        value.encode('utf-8')
    except UnicodeEncodeError:
        raise _Bad('%s holds a lone surrogate (\\ud800-\\udfff), which is not UTF-8' % field)
    return value


def _list(record, field):
    value = record.get(field)
    if not isinstance(value, list):
        raise _Bad('%s is %s; allowed: a list' % (field, _kind(value)) if field in record else 'has no %s' % field)
    if not value:
        raise _Bad('%s is an empty list' % field)
    return value


def _turns(record):
    return [_text(turn, 'turns[%d]' % i) for i, turn in enumerate(_list(record, 'turns'))]


def _conversations(record):
    turns = []
    for i, item in enumerate(_list(record, 'conversations')):
        where = 'conversations[%d]' % i
        if not isinstance(item, dict):
            raise _Bad('%s is %s; allowed: a mapping with from (or role) and value (or content)' % (where, _kind(item)))
        role_key = 'from' if 'from' in item else 'role'
        text_key = 'value' if 'value' in item else 'content'
        role = item.get(role_key)
        if not isinstance(role, str):
            raise _Bad('%s.%s is %s; allowed: a string such as human, gpt, user, assistant' % (where, role_key, _kind(role)))
        if role in USER_ROLES:
            turns.append(_text(item.get(text_key), '%s.%s' % (where, text_key)))
        elif not isinstance(item.get(text_key), str):
            raise _Bad('%s.%s is %s; allowed: a string' % (where, text_key, _kind(item.get(text_key))))
    if not turns:
        raise _Bad('conversations has no user turn (from or role %s)' % ' or '.join(USER_ROLES))
    return turns


def _content(content, where):
    if isinstance(content, list):
        parts = []
        for i, part in enumerate(content):
            if not isinstance(part, dict) or part.get('type') != 'text':
                found = part.get('type') if isinstance(part, dict) else _kind(part)
                raise _Bad('%s[%d] is %r; allowed: {"type": "text", "text": ...}' % (where, i, found))
            parts.append(_text(part.get('text'), '%s[%d].text' % (where, i)))
        if not parts:
            raise _Bad('%s is an empty list' % where)
        return ''.join(parts)
    return _text(content, where)


def _messages(record):
    turns = []
    for i, item in enumerate(_list(record, 'messages')):
        where = 'messages[%d]' % i
        if not isinstance(item, dict) or not isinstance(item.get('role'), str):
            raise _Bad('%s is %r; allowed: a mapping with role and content' % (where, item))
        if item['role'] == 'user':
            turns.append(_content(item.get('content'), where + '.content'))
    if not turns:
        raise _Bad('messages has no message of role user')
    return turns


def _field(record, field):
    if field not in record:
        raise _Bad('has no %s' % field)
    return _text(record[field], field)


FORMATS = {
    # name: (detector, extractor); detection tries them in FORMAT_ORDER
    'turns': (lambda r: 'turns' in r, _turns),
    'conversations': (lambda r: 'conversations' in r, _conversations),
    'messages': (lambda r: 'messages' in r, _messages),
    'humaneval': (lambda r: 'prompt' in r and 'task_id' in r and 'entry_point' in r,
                  lambda r: [HUMANEVAL_WRAP % _field(r, 'prompt')]),
    'prompt': (lambda r: 'prompt' in r, lambda r: [_field(r, 'prompt')]),
    'gsm8k': (lambda r: 'question' in r and 'answer' in r, lambda r: [_field(r, 'question') + REASON_SUFFIX]),
    'math500': (lambda r: 'problem' in r, lambda r: [_field(r, 'problem') + REASON_SUFFIX]),
    'mbpp': (lambda r: 'text' in r and 'test_list' in r, lambda r: [_field(r, 'text')]),
}
FORMAT_ORDER = ('turns', 'conversations', 'messages', 'humaneval', 'prompt', 'gsm8k', 'math500', 'mbpp')
FORMAT_HINT = ('one of: {"turns": [...]}, {"conversations": [...]}, {"messages": [...]}, {"prompt": "..."}, '
               'HumanEval {"task_id", "prompt", "entry_point"}, GSM8K {"question", "answer"}, MATH {"problem"}, '
               'MBPP {"text", "test_list"}')


# The formats whose records carry a reference to grade an answer against, and the fields kept of each (the task's
# reference: the answer, or the tests to run). They are written beside the normalized prompts (references()), never
# into them, so the prompts' bytes and sha256 are the same with or without them.
REFERENCE_FORMATS = ('gsm8k', 'math500', 'humaneval', 'mbpp')


def _string_list(value):
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _reference(fmt, record):
    """The grading reference of one upstream record (REFERENCE_FORMATS), or None when the record lacks it or a field has
    the wrong type (the prompt is still sent; the record is then not graded): gsm8k {answer} (the full answer, with its
    '#### n'), math500 {answer}, humaneval {prompt, test, entry_point} (openai/human-eval's problem), mbpp {test_list,
    test_setup_code, challenge_test_list} (google-research mbpp)."""
    if fmt == 'gsm8k':
        answer = record.get('answer')
        return {'kind': fmt, 'answer': answer} if isinstance(answer, str) and '####' in answer else None
    if fmt == 'math500':
        answer = record.get('answer')
        return {'kind': fmt, 'answer': answer} if isinstance(answer, str) and answer.strip() else None
    if fmt == 'humaneval':
        fields = [record.get(key) for key in ('prompt', 'test', 'entry_point')]
        if not all(isinstance(value, str) and value.strip() for value in fields):
            return None
        return {'kind': fmt, 'prompt': fields[0], 'test': fields[1], 'entry_point': fields[2]}
    if fmt == 'mbpp':
        tests, setup = record.get('test_list'), record.get('test_setup_code', '')
        challenge = record.get('challenge_test_list', [])
        if not _string_list(tests) or not tests or not isinstance(setup, str) or not _string_list(challenge):
            return None
        return {'kind': fmt, 'test_list': tests, 'test_setup_code': setup, 'challenge_test_list': challenge}
    return None


def detect_format(record):
    """The name of the first format in FORMAT_ORDER whose keys `record` (a dict) has, or None."""
    for name in FORMAT_ORDER:
        if FORMATS[name][0](record):
            return name
    return None


def _record_id(record):
    for field in ID_FIELDS:
        if field in record:
            value = record[field]
            if isinstance(value, bool) or not isinstance(value, (str, int)) or (isinstance(value, str) and not value.strip()):
                raise _Bad('%s is %r; allowed: a non-empty string or an integer' % (field, value))
            return str(value)
    return None


def _record_category(record):
    if 'category' not in record:
        return None
    return _text(record['category'], 'category')


def _lines(data, label):
    if data[:2] == b'\x1f\x8b':
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as handle:
                data = handle.read(MAX_UNPACKED_BYTES + 1)
        except (OSError, EOFError, zlib.error) as exc:
            raise DatasetError('%s: not a readable gzip file: %s' % (label, exc))
        if len(data) > MAX_UNPACKED_BYTES:
            raise DatasetError('%s: unpacks to more than %d bytes' % (label, MAX_UNPACKED_BYTES))
    return data.split(b'\n')


def parse(data, label, fmt=None, category=None):
    """The records of a JSONL file's bytes (gzip unpacked): [{'id', 'category', 'turns', 'line', 'reference'}], and
    its format ('reference': _reference(), None for a format without one).

    fmt: the format to read (a built-in's), else detected from the first record. category: for records without one.
    DatasetError '<label>: line <n>: <what is wrong>' on the first malformed line; blank lines are skipped.
    """
    if fmt is not None and fmt not in FORMATS:
        raise DatasetError('%s: format %r; allowed: %s' % (label, fmt, ', '.join(FORMAT_ORDER)))
    records, seen, first_line = [], {}, None
    for number, raw in enumerate(_lines(data, label), 1):
        raw = raw.rstrip(b'\r')
        if not raw.strip():
            continue
        try:
            record = load_json(raw.decode('utf-8'))
        except UnicodeDecodeError as exc:
            raise DatasetError('%s: line %d: not UTF-8 (byte %d)' % (label, number, exc.start + 1))
        except JSONDepthError as exc:
            raise DatasetError('%s: line %d: %s' % (label, number, exc))
        except ValueError as exc:
            raise DatasetError('%s: line %d: not JSON: %s' % (label, number, exc))
        try:
            if not isinstance(record, dict):
                raise _Bad('is %s; allowed: one JSON object per line' % _kind(record))
            found = detect_format(record)
            if found is None:
                raise _Bad('has none of the fields of a known format (keys: %s); allowed: %s'
                           % (', '.join(sorted(record)) or 'none', FORMAT_HINT))
            if fmt is None:
                fmt, first_line = found, number
            elif found != fmt:
                # a built-in set's format is the table's (no first line set it)
                expected = 'the set is %s' % fmt if first_line is None else 'line %s is in the %s format' % (first_line, fmt)
                raise _Bad('is in the %s format, but %s; one format per file' % (found, expected))
            turns = FORMATS[fmt][1](record)
            record_id = _record_id(record)
            record_category = _record_category(record)
        except _Bad as exc:
            raise DatasetError('%s: line %d: %s' % (label, number, exc))
        record_id = record_id if record_id is not None else str(len(records) + 1)
        if record_id in seen:
            raise DatasetError('%s: line %d: id %s repeats line %d\'s' % (label, number, record_id, seen[record_id]))
        seen[record_id] = number
        records.append({'id': record_id, 'category': record_category or category, 'turns': turns, 'line': number,
                        'reference': _reference(fmt, record)})
    if not records:
        raise DatasetError('%s: no records (an empty file); allowed: one JSON object per line' % label)
    return records, fmt


def normalize(data, label, fmt=None, category=None, turns=DEFAULT_TURNS, num_prompts=None, categories=None,
              id_range=None, records=None):
    """The normalized JSONL of a file's bytes, and what the results record about it.

    Returns {data (bytes), sha256, format, count, categories ({category: count}), available (records after
    id_range and categories), references (bytes: the kept records' references as JSONL, {"id", "kind", ...} sorted
    keys, in the prompts' order; None when no kept record has one), references_count}. `records` is the count the file
    must hold; id_range [first, last] keeps the records whose integer id lies in it; categories keeps those records;
    num_prompts takes the first N of what is left (DatasetError when fewer are left); turns 'first' keeps each record's
    first turn.
    """
    rows, fmt = parse(data, label, fmt, category)
    if records is not None and len(rows) != records:
        raise DatasetError('%s: %d records; the source table expects %d' % (label, len(rows), records))
    if id_range is not None:
        first, last = id_range
        rows = [row for row in rows if row['id'].lstrip('-').isdigit() and first <= int(row['id']) <= last]
    if categories:
        found = sorted(set(row['category'] for row in rows))
        unknown = [name for name in categories if name not in found]
        if unknown:
            raise DatasetError('%s: categories %s are not in it; allowed: %s' % (label, ', '.join(unknown), ', '.join(found)))
        rows = [row for row in rows if row['category'] in categories]
    available = len(rows)
    if num_prompts is not None:
        if num_prompts > available:
            raise DatasetError('%s: num_prompts is %d, but it holds %d prompts%s' % (
                label, num_prompts, available, ' in categories %s' % ', '.join(categories) if categories else ''))
        rows = rows[:num_prompts]
    if turns not in TURNS:
        raise DatasetError('turns is %r; allowed: %s' % (turns, ', '.join(TURNS)))
    lines, counts, refs = [], {}, []
    for row in rows:
        if row.get('reference'):
            refs.append(json.dumps(dict(row['reference'], id=row['id']), ensure_ascii=False, sort_keys=True,
                                   separators=(',', ':')))
        kept = row['turns'][:1] if turns == 'first' else row['turns']
        lines.append(json.dumps({'id': row['id'], 'category': row['category'], 'turns': kept},
                                ensure_ascii=False, sort_keys=True, separators=(',', ':')))
        counts[row['category']] = counts.get(row['category'], 0) + 1
    out = ('\n'.join(lines) + '\n').encode('utf-8')
    return {'data': out, 'sha256': hashlib.sha256(out).hexdigest(), 'format': fmt, 'count': len(rows),
            'categories': counts, 'available': available,
            'references': ('\n'.join(refs) + '\n').encode('utf-8') if refs else None, 'references_count': len(refs)}


# ---- the source table --------------------------------------------------------------------------------------------

def _check_source(name, source, where):
    if not isinstance(source, dict) or any(key not in SOURCE_KEYS for key in source):
        raise DatasetError('%s is %r; allowed keys: %s' % (where, source, ', '.join(SOURCE_KEYS)))
    url = source.get('url')
    parts = urllib.parse.urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ('http', 'https') or not parts.netloc or not os.path.basename(parts.path):
        raise DatasetError('%s.url is %r; allowed: an http(s) URL of a file' % (where, url))
    sha = source.get('sha256')
    if sha is not None and not (isinstance(sha, str) and _SHA256_RE.match(sha)):
        raise DatasetError('%s.sha256 is %r; allowed: 64 lower-case hex digits, or null (recorded on first download)' % (where, sha))
    if source.get('format') not in FORMATS:
        raise DatasetError('%s.format is %r; allowed: %s' % (where, source.get('format'), ', '.join(FORMAT_ORDER)))
    for key in ('records', 'num_prompts'):
        if source.get(key) is not None and not _is_positive_int(source[key]):
            raise DatasetError('%s.%s is %r; allowed: a positive integer or null' % (where, key, source[key]))
    categories = source.get('categories')
    if categories is not None and (not isinstance(categories, list) or not categories
                                   or not all(isinstance(c, str) and c for c in categories)):
        raise DatasetError('%s.categories is %r; allowed: a list of category names' % (where, categories))
    id_range = source.get('id_range')
    if id_range is not None and not (isinstance(id_range, list) and len(id_range) == 2
                                     and all(isinstance(i, int) and not isinstance(i, bool) for i in id_range)
                                     and id_range[0] <= id_range[1]):
        raise DatasetError('%s.id_range is %r; allowed: [first, last], integers' % (where, id_range))
    return dict(source, name=name, file_name=os.path.basename(parts.path))


def load_sources(path=SOURCES_FILE):
    """name -> source of the built-in sets, checked (a copy: callers may change it, as tests do)."""
    path = os.path.abspath(path)
    if path not in _CACHE:
        try:
            with open(path, encoding='utf-8') as handle:
                data = yaml.safe_load(handle)
        except (OSError, yaml.YAMLError) as exc:
            raise DatasetError('cannot read the dataset sources %s: %s' % (path, exc))
        if not isinstance(data, dict) or not data:
            raise DatasetError('%s holds %r; allowed: a mapping of set name to source' % (path, data))
        sources = {}
        for name, source in data.items():
            if not is_id(name) or name == RANDOM:
                raise DatasetError('%s: set name %r; allowed: an id, not %s' % (os.path.basename(path), name, RANDOM))
            sources[name] = _check_source(name, source, '%s: %s' % (os.path.basename(path), name))
        _CACHE[path] = sources
    return json.loads(json.dumps(_CACHE[path]))


# ---- entries -----------------------------------------------------------------------------------------------------

def _check_keys(entry, allowed, where, what):
    unknown = sorted(str(key) for key in entry if key not in allowed)
    if unknown:
        raise DatasetError('%s has %s %s; allowed keys for %s: %s' % (
            where, 'keys' if len(unknown) > 1 else 'key', ', '.join(unknown), what, ', '.join(allowed)))


def _positive(entry, key, where, default):
    """entry[key], a positive int, else the default when the key is left out (null is not left out)."""
    if key not in entry:
        return default
    if not _is_positive_int(entry[key]):
        raise DatasetError('%s.%s is %r; allowed: a positive integer' % (where, key, entry[key]))
    return entry[key]


def validate_entry(entry, sources, where):
    """One entry of workload.datasets, checked and with its defaults; see the module docstring."""
    known = ', '.join(sorted(sources) + [RANDOM])
    if isinstance(entry, str):
        entry = {'name': entry}
    if not isinstance(entry, dict):
        raise DatasetError('%s is %r; allowed: a built-in name (%s), or a mapping {name, file, num_prompts, '
                           'max_new_tokens, turns, categories}' % (where, entry, known))
    name = entry.get('name')
    if not isinstance(name, str) or not name:
        raise DatasetError('%s.name is %r; allowed: a built-in name (%s), or an id of your own with file' % (where, name, known))
    if name == RANDOM:
        _check_keys(entry, RANDOM_KEYS, where, 'random')
        return {'name': RANDOM, 'kind': 'random', 'num_prompts': _positive(entry, 'num_prompts', where, None),
                'input_len': _positive(entry, 'input_len', where, None),
                'output_len': _positive(entry, 'output_len', where, None)}
    _check_keys(entry, ENTRY_KEYS, where, 'a prompt set')
    if 'file' in entry:
        if name in sources:
            raise DatasetError('%s.name is %r, a built-in set; a file entry needs a name of its own' % (where, name))
        if not is_id(name):
            raise DatasetError('%s.name is %r; allowed: a name matching %s (it names results)' % (where, name, '[a-z0-9][a-z0-9._-]*'))
        if not isinstance(entry['file'], str) or not entry['file'].strip():
            raise DatasetError('%s.file is %r; allowed: the path of a JSONL file on the controller' % (where, entry['file']))
        source, kind = {}, 'file'
    elif name in sources:
        source, kind = sources[name], 'builtin'
    else:
        raise DatasetError('%s.name is %r; allowed: %s, or {name, file} for a file of your own' % (where, name, known))
    turns = entry.get('turns', DEFAULT_TURNS)
    if turns not in TURNS:
        raise DatasetError('%s.turns is %r; allowed: %s' % (where, turns, ', '.join(TURNS)))
    categories = entry.get('categories')
    if categories is not None:
        if kind == 'builtin' and not source.get('categories'):
            with_categories = sorted(other for other, item in sources.items() if item.get('categories'))
            raise DatasetError('%s.categories: %s has no categories; allowed on: %s, or a file whose records carry them'
                               % (where, name, ', '.join(with_categories)))
        if not isinstance(categories, list) or not categories or not all(isinstance(c, str) and c for c in categories):
            raise DatasetError('%s.categories is %r; allowed: a non-empty list of category names%s' % (
                where, categories, ' of ' + ', '.join(source['categories']) if kind == 'builtin' else ''))
        if len(set(categories)) != len(categories):
            raise DatasetError('%s.categories is %r; allowed: each category once' % (where, categories))
        unknown = [c for c in categories if kind == 'builtin' and c not in source['categories']]
        if unknown:
            raise DatasetError('%s.categories: %s %s not in %s; allowed: %s' % (
                where, ', '.join(unknown), 'is' if len(unknown) == 1 else 'are', name, ', '.join(source['categories'])))
    # the table's default count is for the whole set; a categories filter defaults to all of its records
    default_count = source.get('num_prompts') if categories is None else None
    result = {'name': name, 'kind': kind, 'num_prompts': _positive(entry, 'num_prompts', where, default_count),
              'max_new_tokens': _positive(entry, 'max_new_tokens', where, DEFAULT_MAX_NEW_TOKENS),
              'turns': turns, 'categories': list(categories) if categories else None}
    if kind == 'file':
        result['file'] = entry['file']
    return result


def validate_datasets(entries, sources=None, where='workload.datasets'):
    """The entries of workload.datasets checked, each with its defaults filled in; DatasetError on the first bad value.

    Pure: reads the source table (sources=None: dataset_sources.yml) and nothing else; files are read by prepare().
    """
    sources = load_sources() if sources is None else sources
    if not isinstance(entries, list) or not entries:
        raise DatasetError('%s is %r; allowed: a non-empty list of built-in names (%s), {name, file} entries or %s'
                           % (where, entries, ', '.join(sorted(sources)), RANDOM))
    result, seen = [], {}
    for position, entry in enumerate(entries):
        checked = validate_entry(entry, sources, '%s[%d]' % (where, position))
        if checked['name'] in seen:
            raise DatasetError('%s[%d].name is %r, as %s[%d]\'s; each dataset once (it names the results)'
                               % (where, position, checked['name'], where, seen[checked['name']]))
        seen[checked['name']] = position
        result.append(checked)
    return result


# ---- cache and download ------------------------------------------------------------------------------------------

def cache_dir(path=None):
    """The controller's dataset cache: path, else $SPECDEC_DATASET_CACHE, else ~/.cache/specdec/datasets."""
    return os.path.abspath(os.path.expanduser(path or os.environ.get(CACHE_ENV) or DEFAULT_CACHE))


def _download(url, timeout, max_bytes):
    """In download()'s child: the bytes at url, read as they come; DatasetError past max_bytes."""
    chunks, size = [], 0
    try:
        with open_url(url, timeout=timeout, http_agent='specdec.bench-datasets', follow_redirects='safe') as response:
            while True:
                chunk = response.read(1 << 16)
                if not chunk:
                    break
                size += len(chunk)
                if size > max_bytes:
                    raise DatasetError('cannot download %s: larger than %d bytes' % (url, max_bytes))
                chunks.append(chunk)
    except (urllib.error.URLError, OSError, ValueError, ConnectionError) as exc:
        if isinstance(exc, DatasetError):
            raise
        raise DatasetError('cannot download %s: %s' % (url, getattr(exc, 'reason', None) or exc))
    return b''.join(chunks)


def download(url, timeout=TIMEOUT, max_bytes=MAX_DOWNLOAD_BYTES, deadline=None):
    """The bytes at an http(s) URL; DatasetError on any failure, past max_bytes, or when it is not all there within
    deadline seconds (default DOWNLOAD_DEADLINE; in a child process, killed then: timeout bounds each wait only)."""
    deadline = DOWNLOAD_DEADLINE if deadline is None else deadline
    if urllib.parse.urlsplit(url).scheme not in ('http', 'https'):
        raise DatasetError('cannot download %s: allowed: http or https URLs' % url)
    try:
        return bounded_child.run(lambda: _download(url, timeout, max_bytes), deadline, max_bytes=max_bytes)
    except bounded_child.ChildError as exc:
        if exc.reason == 'deadline':
            raise DatasetError('cannot download %s: not done within its deadline of %g s (a download may take at most '
                               'that long, however slowly the server sends)' % (url, deadline))
        if exc.kind == 'DatasetError':
            raise DatasetError(exc.detail)
        raise DatasetError('cannot download %s: %s' % (url, exc))


def _read_record(path):
    try:
        with open(path, encoding='utf-8') as handle:
            record = load_json(handle.read())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise DatasetError('cannot read the recorded sha256 %s: %s (remove it to record anew)' % (path, exc))
    if not isinstance(record, dict) or not _SHA256_RE.match(str(record.get('sha256'))):
        raise DatasetError('%s holds %r; allowed: {"sha256": ..., "url": ...} (remove it to record anew)' % (path, record))
    return record


def fetch_source(source, cache=None, url_base=None, timeout=TIMEOUT, max_bytes=MAX_DOWNLOAD_BYTES, deadline=None):
    """A built-in set's upstream bytes, from the cache or downloaded once into it, checked against its sha256.

    Returns {data, sha256, url, pinned (table | first-use | recorded), path, notes}; see the module docstring.
    """
    name, url, file_name = source['name'], source['url'], source['file_name']
    folder = os.path.join(cache_dir(cache), name)
    path = os.path.join(folder, file_name)
    record_path = path + RECORD_SUFFIX
    url_base = url_base if url_base is not None else os.environ.get(MIRROR_ENV)
    fetch_url = '%s/%s/%s' % (url_base.rstrip('/'), name, file_name) if url_base else url
    notes, expected, pinned = [], source.get('sha256'), 'table'
    pin_origin = 'pinned in %s' % os.path.basename(SOURCES_FILE)
    if expected is None:
        record = _read_record(record_path)
        if record is not None and record.get('url') != url:
            notes.append('%s: the sha256 recorded in %s is for %s, not %s; recording anew'
                         % (name, record_path, record.get('url'), url))
            record = None
        expected = record['sha256'] if record else None
        pinned = 'recorded' if record else 'first-use'
        pin_origin = 'recorded on first download in %s' % record_path
    data = None
    if os.path.isfile(path):
        found = file_sha256(path)
        if expected is None or found == expected:
            with open(path, 'rb') as handle:
                data = handle.read()
        else:
            notes.append('%s: the cached %s has sha256 %s, expected %s; downloading it again' % (name, path, found, expected))
    if data is None:
        try:
            data = download(fetch_url, timeout, max_bytes, deadline)
        except DatasetError as exc:
            raise DatasetError('%s: %s (offline: put the file, sha256 %s, at %s)' % (name, exc, expected or 'any', path))
        found = hashlib.sha256(data).hexdigest()
        if expected is not None and found != expected:
            raise DatasetError('%s: %s changed upstream: its sha256 is %s, expected %s (%s); refused, the cache keeps '
                               'what it had' % (name, fetch_url, found, expected, pin_origin))
        os.makedirs(folder, exist_ok=True)
        atomic_write(path, data)
    found = hashlib.sha256(data).hexdigest()
    if expected is None:
        os.makedirs(folder, exist_ok=True)
        atomic_write(record_path, json.dumps({'sha256': found, 'url': url}, sort_keys=True) + '\n')
        notes.append('%s: %s has no sha256 in %s: recorded %s on first use in %s (trust on first use); every later '
                     'download must match it' % (name, url, os.path.basename(SOURCES_FILE), found, record_path))
    return {'data': data, 'sha256': found, 'url': url, 'pinned': pinned, 'path': path, 'notes': notes}


def prepare(entry, cache=None, url_base=None, sources=None, base_dir=None, timeout=TIMEOUT,
            max_bytes=MAX_DOWNLOAD_BYTES, deadline=None):
    """One validated entry (validate_datasets' output) made into its normalized JSONL in the cache; see the docstring.

    base_dir: where a relative `file` is (the campaign file's folder); default the current directory.
    """
    result = {'name': entry['name'], 'kind': entry['kind'], 'num_prompts': entry.get('num_prompts')}
    if entry['kind'] == 'random':
        return dict(result, input_len=entry.get('input_len'), output_len=entry.get('output_len'), notes=[])
    if entry['kind'] == 'builtin':
        sources = load_sources() if sources is None else sources
        source = sources[entry['name']]
        fetched = fetch_source(source, cache, url_base, timeout, max_bytes, deadline)
        data, label, notes = fetched['data'], '%s (%s)' % (entry['name'], fetched['url']), fetched['notes']
        result.update(source=fetched['url'], source_sha256=fetched['sha256'], pinned=fetched['pinned'])
    else:
        source = {}
        path = os.path.abspath(os.path.join(base_dir or os.getcwd(), os.path.expanduser(entry['file'])))
        try:
            size = os.path.getsize(path)
            if size > MAX_DOWNLOAD_BYTES:
                raise DatasetError('%s: %s is larger than %d bytes' % (entry['name'], path, MAX_DOWNLOAD_BYTES))
            with open(path, 'rb') as handle:
                data = handle.read()
        except OSError as exc:
            raise DatasetError('%s: cannot read the file %s: %s' % (entry['name'], path, exc.strerror or exc))
        label, notes = path, []
        result.update(source=path, source_sha256=hashlib.sha256(data).hexdigest(), pinned='none')
    made = normalize(data, label, fmt=source.get('format'), category=source.get('category') or entry['name'],
                     turns=entry['turns'], num_prompts=entry.get('num_prompts'), categories=entry.get('categories'),
                     id_range=source.get('id_range'), records=source.get('records'))
    folder = os.path.join(cache_dir(cache), NORMALIZED_DIR)
    os.makedirs(folder, exist_ok=True)
    out = os.path.join(folder, made['sha256'] + '.jsonl')
    atomic_write(out, made['data'], unchanged_ok=True)
    references = None
    if made['references'] is not None:
        references = os.path.join(folder, made['sha256'] + REFERENCES_SUFFIX)
        atomic_write(references, made['references'], unchanged_ok=True)
    result.update(format=made['format'], count=made['count'], categories=made['categories'], turns=entry['turns'],
                  max_new_tokens=entry['max_new_tokens'], sha256=made['sha256'], path=out, notes=notes,
                  references_path=references, references_count=made['references_count'],
                  references_sha256=None if references is None else hashlib.sha256(made['references']).hexdigest())
    return result


def prepare_datasets(entries, cache=None, url_base=None, sources=None, base_dir=None, timeout=TIMEOUT):
    """validate_datasets(entries), then prepare() each: the list of what every stage's results record."""
    sources = load_sources() if sources is None else sources
    return [prepare(entry, cache, url_base, sources, base_dir, timeout) for entry in validate_datasets(entries, sources)]
