# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""datasets: format detection, normalization, the refusals with their line numbers, entry validation, the table.

The fixture files (tests/fixtures/datasets) are upstream-format files of a few lines written for these tests; the
download, the pinning and the cache are in test_datasets_fetch.py.
"""
import gzip
import hashlib
import json
import os
import re

import pytest

from ansible_collections.specdec.bench.plugins.plugin_utils import datasets
from ansible_collections.specdec.bench.plugins.plugin_utils.datasets import DatasetError, normalize, validate_datasets

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'datasets')


def fixture(*parts):
    with open(os.path.join(FIXTURES, *parts), 'rb') as handle:
        return handle.read()


def rows(made):
    return [json.loads(line) for line in made['data'].decode('utf-8').splitlines()]


def jsonl(*records):
    return ''.join((r if isinstance(r, str) else json.dumps(r)) + '\n' for r in records).encode('utf-8')


# ---- formats ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('path, fmt, expected', [
    (('formats', 'prompt.jsonl'), 'prompt', [
        {'id': '1', 'category': 'f', 'turns': ['Summarize: the meeting moved to Thursday because the room was booked.']},
        {'id': 'p2', 'category': 'f', 'turns': ['List three prime numbers.']}]),
    (('formats', 'conversations.jsonl'), 'conversations', [
        {'id': 'c1', 'category': 'f', 'turns': ['Name a blue fruit.', 'And a red one?']},
        {'id': 'c2', 'category': 'f', 'turns': ['Say hello in French.']}]),
    (('formats', 'messages.jsonl'), 'messages', [
        {'id': '1', 'category': 'f', 'turns': ['Capital of Peru?']},
        {'id': '2', 'category': 'f', 'turns': ['Count to three, in Spanish.', 'Now in German.']}]),
    (('formats', 'turns.jsonl'), 'turns', [
        {'id': '1', 'category': 'speed-bench-demo',
         'turns': ['Explain a hash table in two sentences.', 'Now explain it to a ten-year-old.']},
        {'id': '2', 'category': 'f', 'turns': ['Write a haiku about rain.']}]),
])
def test_generic_formats_are_detected_and_normalized(path, fmt, expected):
    made = normalize(fixture(*path), 'x.jsonl', category='f')
    assert made['format'] == fmt
    records = rows(made)
    if fmt == 'prompt':
        expected[0]['category'] = 'summarization'  # a record's own category wins over the entry's
    assert records == expected
    assert made['count'] == len(expected)


@pytest.mark.parametrize('path, fmt, first', [
    (('gsm8k', 'test.jsonl'), 'gsm8k',
     {'id': '1', 'category': 'c', 'turns': ['Ana has 3 boxes of 12 pencils and gives away 5 pencils. How many pencils '
                                            'does she have left?\nPlease reason step by step, and put your final '
                                            'answer within \\boxed{}.']}),
    (('math500', 'test.jsonl'), 'math500',
     {'id': 'test/prealgebra/1.json', 'category': 'c',
      'turns': ['What is the value of $2^5 - 5^2$?\nPlease reason step by step, and put your final answer within '
                '\\boxed{}.']}),
    (('humaneval', 'HumanEval.jsonl.gz'), 'humaneval',
     {'id': 'HumanEval/0', 'category': 'c',
      'turns': ['Write a solution to the following problem and make sure that it passes the tests:\n```python\n'
                'def double(x: int) -> int:\n    """ Return twice x.\n    >>> double(2)\n    4\n    """\n\n```']}),
    (('mbpp', 'mbpp.jsonl'), 'mbpp', {'id': '10', 'category': 'c', 'turns': ['Write a function to add two numbers.']}),
    (('spec-bench', 'question.jsonl'), 'turns',
     {'id': '81', 'category': 'writing',
      'turns': ['Write a short note inviting a neighbour to a garden party.', 'Rewrite the note as a limerick.']}),
])
def test_upstream_formats_are_detected_and_built_as_dflash_prompts_them(path, fmt, first):
    made = normalize(fixture(*path), 'x', category='c')
    assert made['format'] == fmt
    assert rows(made)[0] == first


def test_a_builtin_format_is_read_as_the_table_says_not_detected():
    # a gsm8k-shaped line in a set declared as math500 is refused, naming the set's format
    with pytest.raises(DatasetError, match=r'^x: line 1: is in the gsm8k format, but the set is math500; one format per file$'):
        normalize(fixture('gsm8k', 'test.jsonl'), 'x', fmt='math500')


def test_normalized_bytes_are_sorted_compact_utf8_and_their_sha256_is_returned():
    made = normalize(fixture('gsm8k', 'test.jsonl'), 'x', category='math')
    line = made['data'].decode('utf-8').splitlines()[2]
    assert line.startswith('{"category":"math","id":"3","turns":["Tom\u2019s garden')  # UTF-8, not \u escapes
    assert made['data'].endswith(b'\n') and made['data'].count(b'\n') == 3
    assert made['sha256'] == hashlib.sha256(made['data']).hexdigest()
    assert made['categories'] == {'math': 3}
    # the same prompts from a differently spaced file: the same bytes
    spaced = b'\r\n\n'.join(json.dumps(json.loads(raw), indent=None, separators=(', ', ' : ')).encode()
                            for raw in fixture('gsm8k', 'test.jsonl').splitlines()) + b'\n\n'
    assert normalize(spaced, 'y', category='math')['sha256'] == made['sha256']


def test_turns_first_keeps_the_first_user_turn():
    made = normalize(fixture('spec-bench', 'question.jsonl'), 'x', turns='first')
    assert [len(r['turns']) for r in rows(made)] == [1] * 5
    assert rows(made)[0]['turns'] == ['Write a short note inviting a neighbour to a garden party.']
    assert [len(r['turns']) for r in rows(normalize(fixture('spec-bench', 'question.jsonl'), 'x'))] == [2, 2, 1, 1, 1]


def test_num_prompts_takes_the_first_records_in_file_order():
    made = normalize(fixture('spec-bench', 'question.jsonl'), 'x', num_prompts=3)
    assert [r['id'] for r in rows(made)] == ['81', '82', '161']
    assert made['count'] == 3 and made['available'] == 5
    assert normalize(fixture('spec-bench', 'question.jsonl'), 'x', num_prompts=3)['data'] == made['data']
    with pytest.raises(DatasetError, match=r'^x: num_prompts is 6, but it holds 5 prompts$'):
        normalize(fixture('spec-bench', 'question.jsonl'), 'x', num_prompts=6)


def test_categories_filter_before_num_prompts_and_refuse_unknown_ones_naming_the_found_ones():
    made = normalize(fixture('spec-bench', 'question.jsonl'), 'x', categories=['rag', 'qa'])
    assert [(r['id'], r['category']) for r in rows(made)] == [('241', 'qa'), ('401', 'rag')]
    assert made['categories'] == {'qa': 1, 'rag': 1}
    with pytest.raises(DatasetError, match=r'^x: categories poetry are not in it; allowed: math, qa, rag, '
                                           r'translation, writing$'):
        normalize(fixture('spec-bench', 'question.jsonl'), 'x', categories=['qa', 'poetry'])
    with pytest.raises(DatasetError, match=r'^x: num_prompts is 3, but it holds 2 prompts in categories rag, qa$'):
        normalize(fixture('spec-bench', 'question.jsonl'), 'x', categories=['rag', 'qa'], num_prompts=3)


def test_id_range_keeps_a_split_and_records_pins_the_line_count():
    made = normalize(fixture('mbpp', 'mbpp.jsonl'), 'x', fmt='mbpp', id_range=[11, 510], records=4)
    assert [r['id'] for r in rows(made)] == ['11', '12']
    with pytest.raises(DatasetError, match=r'^x: 4 records; the source table expects 974$'):
        normalize(fixture('mbpp', 'mbpp.jsonl'), 'x', fmt='mbpp', records=974)


# ---- refusals, each with its line number -----------------------------------------------------------------------

GOOD = {'prompt': 'fine'}


@pytest.mark.parametrize('data, message', [
    (b'', r'x: no records \(an empty file\); allowed: one JSON object per line'),
    (b'\n  \n', r'x: no records \(an empty file\)'),
    (jsonl(GOOD, '{"prompt": "no end'), r'x: line 2: not JSON: '),
    (jsonl(GOOD, GOOD) + b'{"prompt": "\xff"}\n', r'x: line 3: not UTF-8 \(byte 13\)'),
    (jsonl(GOOD, '["prompt"]'), r'x: line 2: is a list; allowed: one JSON object per line'),
    (jsonl('"prompt"'), r'x: line 1: is a string; allowed: one JSON object per line'),
    (jsonl({'text': 'no tests'}), r'x: line 1: has none of the fields of a known format \(keys: text\); allowed: one of: '),
    (jsonl({}), r'x: line 1: has none of the fields of a known format \(keys: none\)'),
    (jsonl(GOOD, {'turns': ['a']}), r'x: line 2: is in the turns format, but line 1 is in the prompt format; one format per file'),
    (jsonl(GOOD, {'prompt': ''}), r'x: line 2: prompt is empty'),
    (jsonl(GOOD, {'prompt': '  \n'}), r'x: line 2: prompt is empty'),
    (jsonl(GOOD, {'prompt': 7}), r'x: line 2: prompt is a number; allowed: a string'),
    (jsonl(GOOD, {'prompt': '\ud800'}), r'x: line 2: prompt holds a lone surrogate'),
    (jsonl({'turns': []}), r'x: line 1: turns is an empty list'),
    (jsonl({'turns': 'one'}), r'x: line 1: turns is a string; allowed: a list'),
    (jsonl({'turns': ['a', '']}), r'x: line 1: turns\[1\] is empty'),
    (jsonl({'turns': ['a', None]}), r'x: line 1: turns\[1\] is null; allowed: a string'),
    (jsonl({'turns': ['a'], 'category': 3}), r'x: line 1: category is a number; allowed: a string'),
    (jsonl({'turns': ['a'], 'id': True}), r'x: line 1: id is True; allowed: a non-empty string or an integer'),
    (jsonl({'turns': ['a'], 'question_id': 5}, {'turns': ['b'], 'question_id': '5'}), r"x: line 2: id 5 repeats line 1's"),
    (jsonl({'conversations': [{'from': 'gpt', 'value': 'hi'}]}), r'x: line 1: conversations has no user turn \(from or role human or user\)'),
    (jsonl({'conversations': ['hi']}), r'x: line 1: conversations\[0\] is a string; allowed: a mapping with from'),
    (jsonl({'conversations': [{'value': 'hi'}]}), r'x: line 1: conversations\[0\]\.role is null; allowed: a string'),
    (jsonl({'conversations': [{'from': 'human', 'value': ''}]}), r'x: line 1: conversations\[0\]\.value is empty'),
    (jsonl({'conversations': [{'from': 'human', 'value': 'a'}, {'from': 'gpt'}]}), r'x: line 1: conversations\[1\]\.content is null'),
    (jsonl({'messages': [{'role': 'assistant', 'content': 'hi'}]}), r'x: line 1: messages has no message of role user'),
    (jsonl({'messages': [{'content': 'hi'}]}), r"x: line 1: messages\[0\] is \{'content': 'hi'\}; allowed: a mapping with role and content"),
    (jsonl({'messages': [{'role': 'user', 'content': [{'type': 'image_url', 'image_url': {}}]}]}),
     r"x: line 1: messages\[0\]\.content\[0\] is 'image_url'; allowed: \{\"type\": \"text\", \"text\": \.\.\.\}"),
    (jsonl({'messages': [{'role': 'user', 'content': []}]}), r'x: line 1: messages\[0\]\.content is an empty list'),
    (jsonl({'question': 'q?', 'answer': 4}, {'question': None, 'answer': 'x'}), r'x: line 2: question is null; allowed: a string'),
    (b'\x1f\x8bnot gzip', r'x: not a readable gzip file'),
])
def test_malformed_files_are_refused_with_the_line_and_what_is_wrong(data, message):
    with pytest.raises(DatasetError, match='^' + message):
        normalize(data, 'x')


@pytest.mark.parametrize('line', [
    '[' * 200000,  # json raises RecursionError
    '{"messages": %s}' % ('[' * 150 + ']' * 150),  # parses, but a repr of it in a message could not be made
    '{"turns": ["a"], "meta": %s1%s}' % ('{"k": ' * 101, '}' * 101),
])
def test_json_nested_too_deep_is_refused_with_its_line(line):
    with pytest.raises(DatasetError, match=r'^x: line 2: JSON nested more than 100 levels deep$'):
        normalize(jsonl(GOOD) + line.encode() + b'\n', 'x')
    # a hundred levels are fine, and brackets in strings are not nesting
    deep = '{"prompt": "%s", "meta": %s1%s}' % ('[' * 500, '[' * 99, ']' * 99)
    assert normalize(jsonl(GOOD) + deep.encode() + b'\n', 'x')['count'] == 2


def test_a_gzip_that_unpacks_past_the_bound_is_refused(monkeypatch):
    monkeypatch.setattr(datasets, 'MAX_UNPACKED_BYTES', 100)
    with pytest.raises(DatasetError, match=r'^x: unpacks to more than 100 bytes$'):
        normalize(gzip.compress(jsonl(*[GOOD] * 20)), 'x')
    assert normalize(gzip.compress(jsonl(GOOD)), 'x')['count'] == 1


def test_a_bad_line_after_the_prompts_taken_still_refuses_the_file():
    with pytest.raises(DatasetError, match=r'^x: line 3: prompt is empty$'):
        normalize(jsonl(GOOD, GOOD, {'prompt': ''}), 'x', num_prompts=1)


def test_detect_format_prefers_the_richer_format():
    assert datasets.detect_format({'prompt': 'p', 'task_id': 't', 'entry_point': 'f'}) == 'humaneval'
    assert datasets.detect_format({'prompt': 'p', 'task_id': 't'}) == 'prompt'
    assert datasets.detect_format({'turns': [], 'prompt': 'p'}) == 'turns'
    assert datasets.detect_format({'question': 'q'}) is None  # gsm8k needs its answer too
    assert datasets.detect_format({'text': 't', 'test_list': []}) == 'mbpp'


# ---- entries ---------------------------------------------------------------------------------------------------

def test_entries_get_their_defaults():
    checked = validate_datasets(['gsm8k', {'name': 'spec-bench', 'categories': ['qa', 'rag'], 'turns': 'first'},
                                 {'name': 'mt-bench', 'num_prompts': 8, 'max_new_tokens': 512},
                                 {'name': 'mine', 'file': 'prompts/mine.jsonl'}, {'name': 'random', 'input_len': 512}])
    assert checked == [
        {'name': 'gsm8k', 'kind': 'builtin', 'num_prompts': 128, 'max_new_tokens': 2048, 'turns': 'all', 'categories': None},
        {'name': 'spec-bench', 'kind': 'builtin', 'num_prompts': None, 'max_new_tokens': 2048, 'turns': 'first',
         'categories': ['qa', 'rag']},
        {'name': 'mt-bench', 'kind': 'builtin', 'num_prompts': 8, 'max_new_tokens': 512, 'turns': 'all', 'categories': None},
        {'name': 'mine', 'kind': 'file', 'file': 'prompts/mine.jsonl', 'num_prompts': None, 'max_new_tokens': 2048,
         'turns': 'all', 'categories': None},
        {'name': 'random', 'kind': 'random', 'num_prompts': None, 'input_len': 512, 'output_len': None},
    ]
    # a categories filter on a set with a default count takes all of those categories
    assert validate_datasets([{'name': 'mt-bench', 'categories': ['math']}])[0]['num_prompts'] is None


ALLOWED_SETS = 'gsm8k, humaneval, math500, mbpp, mt-bench, spec-bench, random'


@pytest.mark.parametrize('entries, message', [
    (None, r'workload\.datasets is None; allowed: a non-empty list of built-in names'),
    ([], r'workload\.datasets is \[\]; allowed: a non-empty list'),
    ('gsm8k', r"workload\.datasets is 'gsm8k'; allowed: a non-empty list"),
    (['gsm8k', 'alpaca'], r"workload\.datasets\[1\]\.name is 'alpaca'; allowed: %s, or \{name, file\}" % ALLOWED_SETS),
    ([7], r'workload\.datasets\[0\] is 7; allowed: a built-in name \(%s\), or a mapping' % ALLOWED_SETS),
    ([{'file': 'a.jsonl'}], r'workload\.datasets\[0\]\.name is None; allowed: a built-in name'),
    ([{'name': 'gsm8k', 'num_prompts': 0}], r'workload\.datasets\[0\]\.num_prompts is 0; allowed: a positive integer'),
    ([{'name': 'gsm8k', 'num_prompts': '8'}], r"workload\.datasets\[0\]\.num_prompts is '8'; allowed: a positive integer"),
    ([{'name': 'gsm8k', 'num_prompts': True}], r'workload\.datasets\[0\]\.num_prompts is True; allowed: a positive integer'),
    ([{'name': 'gsm8k', 'num_prompts': None}], r'workload\.datasets\[0\]\.num_prompts is None; allowed: a positive integer'),
    ([{'name': 'gsm8k', 'max_new_tokens': -1}], r'workload\.datasets\[0\]\.max_new_tokens is -1; allowed: a positive integer'),
    ([{'name': 'gsm8k', 'max_new_tokens': 2.5}], r'workload\.datasets\[0\]\.max_new_tokens is 2\.5; allowed: a positive integer'),
    ([{'name': 'mt-bench', 'turns': 'last'}], r"workload\.datasets\[0\]\.turns is 'last'; allowed: first, all"),
    ([{'name': 'gsm8k', 'temperature': 0}], r'workload\.datasets\[0\] has key temperature; allowed keys for a prompt set: '
                                            r'name, file, num_prompts, max_new_tokens, turns, categories'),
    ([{'name': 'gsm8k', 'zz': 1, 'aa': 2}], r'workload\.datasets\[0\] has keys aa, zz; allowed keys'),
    ([{'name': 'random', 'file': 'a.jsonl'}], r'workload\.datasets\[0\] has key file; allowed keys for random: name, '
                                              r'num_prompts, input_len, output_len'),
    ([{'name': 'random', 'output_len': 0}], r'workload\.datasets\[0\]\.output_len is 0; allowed: a positive integer'),
    ([{'name': 'gsm8k', 'categories': ['math']}], r'workload\.datasets\[0\]\.categories: gsm8k has no categories; '
                                                  r'allowed on: mt-bench, spec-bench, or a file whose records carry them'),
    ([{'name': 'spec-bench', 'categories': ['qa', 'poetry', 'code']}],
     r'workload\.datasets\[0\]\.categories: poetry, code are not in spec-bench; allowed: writing, roleplay, reasoning, '
     r'math, coding, extraction, stem, humanities, translation, summarization, qa, math_reasoning, rag'),
    ([{'name': 'mt-bench', 'categories': ['qa']}], r'workload\.datasets\[0\]\.categories: qa is not in mt-bench; allowed: writing'),
    ([{'name': 'spec-bench', 'categories': 'qa'}], r"workload\.datasets\[0\]\.categories is 'qa'; allowed: a non-empty list "
                                                   r'of category names of writing'),
    ([{'name': 'spec-bench', 'categories': []}], r'workload\.datasets\[0\]\.categories is \[\]; allowed: a non-empty list'),
    ([{'name': 'spec-bench', 'categories': ['qa', 'qa']}], r"workload\.datasets\[0\]\.categories is \['qa', 'qa'\]; allowed: each category once"),
    ([{'name': 'mine', 'file': 'a.jsonl', 'categories': [3]}], r'workload\.datasets\[0\]\.categories is \[3\]; allowed: a non-empty list of category names$'),
    ([{'name': 'gsm8k', 'file': 'a.jsonl'}], r"workload\.datasets\[0\]\.name is 'gsm8k', a built-in set; a file entry needs a name of its own"),
    ([{'name': 'My Set', 'file': 'a.jsonl'}], r"workload\.datasets\[0\]\.name is 'My Set'; allowed: a name matching \[a-z0-9\]"),
    ([{'name': 'mine', 'file': ''}], r"workload\.datasets\[0\]\.file is ''; allowed: the path of a JSONL file on the controller"),
    (['gsm8k', {'name': 'gsm8k', 'num_prompts': 4}], r"workload\.datasets\[1\]\.name is 'gsm8k', as workload\.datasets\[0\]'s; each dataset once"),
])
def test_bad_entries_are_refused_naming_the_field_and_the_allowed_values(entries, message):
    with pytest.raises(DatasetError, match='^' + message):
        validate_datasets(entries)


def test_dataset_error_is_a_value_error_and_validation_reads_no_file(tmp_path, monkeypatch):
    assert issubclass(DatasetError, ValueError)
    monkeypatch.chdir(tmp_path)
    # the file does not exist: validation does not look; prepare does
    assert validate_datasets([{'name': 'mine', 'file': 'missing.jsonl'}])[0]['file'] == 'missing.jsonl'


# ---- the table -------------------------------------------------------------------------------------------------

def test_the_table_pins_every_builtin_set():
    sources = datasets.load_sources()
    assert sorted(sources) == ['gsm8k', 'humaneval', 'math500', 'mbpp', 'mt-bench', 'spec-bench']
    for name, source in sources.items():
        assert source['url'].startswith('https://'), name
        # a commit in the URL: the pin does not move when the upstream branch does
        assert re.search(r'/[0-9a-f]{40}/', source['url']), name
        assert source['format'] in datasets.FORMATS
        assert source['num_prompts'] is None or source['num_prompts'] <= source['records'], name
    unpinned = sorted(name for name, source in sources.items() if source['sha256'] is None)
    assert unpinned == ['mbpp']  # the one file that could not be read when the table was written
    assert sources['spec-bench']['records'] == 480 and len(sources['spec-bench']['categories']) == 13
    assert sources['gsm8k']['records'] == 1319
    # load_sources hands out copies
    sources['gsm8k']['sha256'] = None
    assert datasets.load_sources()['gsm8k']['sha256'] is not None


def test_the_table_comments_name_the_source_of_every_default_count():
    with open(datasets.SOURCES_FILE, encoding='utf-8') as handle:
        lines = [line for line in handle if line.startswith('  num_prompts:')]
    assert len(lines) == 6
    assert all('#' in line for line in lines)


@pytest.mark.parametrize('change, message', [
    ({'url': 'ftp://example.org/x.jsonl'}, r"gsm8k\.url is 'ftp://example\.org/x\.jsonl'; allowed: an http\(s\) URL of a file"),
    ({'sha256': 'ABC'}, r"gsm8k\.sha256 is 'ABC'; allowed: 64 lower-case hex digits, or null"),
    ({'format': 'csv'}, r"gsm8k\.format is 'csv'; allowed: turns, conversations"),
    ({'records': 0}, r'gsm8k\.records is 0; allowed: a positive integer or null'),
    ({'id_range': [5, 1]}, r'gsm8k\.id_range is \[5, 1\]; allowed: \[first, last\], integers'),
    ({'categories': []}, r'gsm8k\.categories is \[\]; allowed: a list of category names'),
    ({'mirror': 'x'}, r'gsm8k is .*; allowed keys: description, url'),
])
def test_a_bad_table_is_refused(tmp_path, change, message):
    import yaml
    with open(datasets.SOURCES_FILE, encoding='utf-8') as handle:
        table = yaml.safe_load(handle)
    table['gsm8k'].update(change)
    path = tmp_path / 'sources.yml'
    path.write_text(yaml.safe_dump(table))
    with pytest.raises(DatasetError, match=r'^sources\.yml: ' + message):
        datasets.load_sources(str(path))


# ---- the demo prompts ------------------------------------------------------------------------------------------

DEMO = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'campaigns', 'prompts')


@pytest.mark.parametrize('name, fmt, categories', [
    ('mt-bench', 'turns', ['coding', 'extraction', 'humanities', 'math', 'reasoning', 'roleplay', 'stem', 'writing']),
    ('spec-bench', 'turns', ['coding', 'extraction', 'humanities', 'math', 'math_reasoning', 'qa', 'rag', 'reasoning',
                             'roleplay', 'stem', 'summarization', 'translation', 'writing']),
    ('gsm8k', 'gsm8k', ['math']), ('math500', 'math500', ['math']), ('humaneval', 'humaneval', ['code']),
    ('mbpp', 'mbpp', ['code']),
])
def test_the_demo_prompts_are_in_their_sets_format_labelled_and_cover_the_categories(name, fmt, categories):
    source = datasets.load_sources()[name]
    with open(os.path.join(DEMO, 'demo-%s.jsonl' % name), 'rb') as handle:
        data = handle.read()
    made = normalize(data, name, fmt=source['format'], category=source.get('category'))
    assert made['format'] == fmt
    assert sorted(made['categories']) == categories
    assert all(record['id'].startswith('demo-') for record in rows(made))
    assert all(json.loads(line)['source'].startswith('demo prompt written by the specdec.bench project')
               for line in data.splitlines())
