# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""datasets: download, pinning, trust on first use, the offline cache and prepare(), against a local HTTP server.

Nothing leaves 127.0.0.1: a ThreadingHTTPServer serves a copy of tests/fixtures/datasets (laid out as
<set>/<upstream file name>, as a mirror is) and the tests point the sets at it through url_base, or through a table
whose URLs name the server. The table's sha256 are replaced by the fixtures' own; everything else (format, category,
id_range) is the shipped table's.
"""
import functools
import hashlib
import http.server
import json
import os
import re
import shutil
import threading
import time

import pytest

from ansible_collections.specdec.bench.plugins.plugin_utils import datasets
from ansible_collections.specdec.bench.plugins.plugin_utils.datasets import DatasetError, prepare, prepare_datasets

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'datasets')
COUNTS = {'mt-bench': 3, 'gsm8k': 3, 'humaneval': 2, 'mbpp': 4, 'math500': 2, 'spec-bench': 5}


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        self.server.requests.append(self.path)


@pytest.fixture(name='upstream')
def upstream_fixture(tmp_path):
    """A local 'upstream': a copy of the fixtures served over HTTP; .root, .url, .requests (paths asked for)."""
    root = tmp_path / 'upstream'
    shutil.copytree(FIXTURES, str(root))
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), functools.partial(_Handler, directory=str(root)))
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, kwargs={'poll_interval': 0.05}, daemon=True)
    thread.start()
    server.root, server.url = root, 'http://127.0.0.1:%d' % server.server_address[1]
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture(autouse=True)
def _no_proxy_no_env(monkeypatch):
    for name in ('http_proxy', 'https_proxy', 'HTTP_PROXY', 'HTTPS_PROXY', 'all_proxy', 'ALL_PROXY'):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv(datasets.CACHE_ENV, raising=False)
    monkeypatch.delenv(datasets.MIRROR_ENV, raising=False)


def fixture_sha256(name):
    source = datasets.load_sources()[name]
    with open(os.path.join(FIXTURES, name, source['file_name']), 'rb') as handle:
        return hashlib.sha256(handle.read()).hexdigest()


@pytest.fixture(name='sources')
def sources_fixture(upstream):
    """The shipped table, its URLs on the local server, pinned to the fixtures (mbpp stays unpinned, as shipped)."""
    sources = datasets.load_sources()
    for name, source in sources.items():
        source['url'] = '%s/%s/%s' % (upstream.url, name, source['file_name'])
        source['records'] = COUNTS[name]
        source['num_prompts'] = None
        if source['sha256'] is not None:
            source['sha256'] = fixture_sha256(name)
    return sources


def entry(name, **fields):
    """A checked entry; without num_prompts, all records (the fixtures hold fewer than the table's counts)."""
    checked = datasets.validate_entry(dict(fields, name=name), datasets.load_sources(), 'e')
    return dict(checked, num_prompts=fields.get('num_prompts'))


def read_jsonl(path):
    with open(path, encoding='utf-8') as handle:
        return [json.loads(line) for line in handle]


def test_a_pinned_set_is_downloaded_once_verified_normalized_and_described(tmp_path, upstream, sources):
    cache = str(tmp_path / 'cache')
    got = prepare(entry('spec-bench', categories=['qa', 'rag', 'writing']), cache=cache, sources=sources)
    path = os.path.join(cache, 'normalized', got['sha256'] + '.jsonl')
    assert got == {
        'name': 'spec-bench', 'kind': 'builtin', 'num_prompts': None,
        'source': '%s/spec-bench/question.jsonl' % upstream.url, 'source_sha256': fixture_sha256('spec-bench'),
        'pinned': 'table', 'format': 'turns', 'count': 3, 'categories': {'writing': 1, 'qa': 1, 'rag': 1},
        'turns': 'all', 'max_new_tokens': 2048, 'sha256': got['sha256'], 'path': path, 'notes': [],
        'references_path': None, 'references_sha256': None, 'references_count': 0}
    with open(path, 'rb') as handle:
        assert hashlib.sha256(handle.read()).hexdigest() == got['sha256']
    assert [r['id'] for r in read_jsonl(path)] == ['81', '241', '401']
    assert upstream.requests == ['/spec-bench/question.jsonl']
    with open(os.path.join(cache, 'spec-bench', 'question.jsonl'), 'rb') as handle:
        assert handle.read() == (upstream.root / 'spec-bench' / 'question.jsonl').read_bytes()
    # again: from the cache, no request, the same normalized file
    assert prepare(entry('spec-bench', categories=['qa', 'rag', 'writing']), cache=cache, sources=sources) == got
    assert upstream.requests == ['/spec-bench/question.jsonl']


@pytest.mark.parametrize('name, fmt, category, count', [
    ('mt-bench', 'turns', 'writing', 3), ('gsm8k', 'gsm8k', 'math', 3), ('humaneval', 'humaneval', 'code', 2),
    ('mbpp', 'mbpp', 'code', 2), ('math500', 'math500', 'math', 2), ('spec-bench', 'turns', 'writing', 5),
])
def test_every_builtin_set_prepares_from_its_upstream_format(tmp_path, sources, name, fmt, category, count):
    got = prepare(entry(name, turns='first'), cache=str(tmp_path / 'c'), sources=sources)
    assert (got['format'], got['count']) == (fmt, count)
    records = read_jsonl(got['path'])
    assert records[0]['category'] == category
    assert all(len(record['turns']) == 1 for record in records)


def test_a_changed_upstream_file_is_refused_naming_both_sha256_and_the_cache_keeps_nothing(tmp_path, upstream, sources):
    expected = sources['gsm8k']['sha256']
    changed = (upstream.root / 'gsm8k' / 'test.jsonl')
    changed.write_bytes(changed.read_bytes().replace(b'Ana has 3', b'Ana has 4'))
    found = hashlib.sha256(changed.read_bytes()).hexdigest()
    cache = tmp_path / 'cache'
    with pytest.raises(DatasetError) as error:
        prepare(entry('gsm8k'), cache=str(cache), sources=sources)
    assert str(error.value) == (
        'gsm8k: %s/gsm8k/test.jsonl changed upstream: its sha256 is %s, expected %s (pinned in dataset_sources.yml); '
        'refused, the cache keeps what it had' % (upstream.url, found, expected))
    assert not (cache / 'gsm8k' / 'test.jsonl').exists()


def test_a_corrupted_cached_file_is_downloaded_again_and_said_so(tmp_path, upstream, sources):
    cache = tmp_path / 'cache'
    prepare(entry('gsm8k'), cache=str(cache), sources=sources)
    cached = cache / 'gsm8k' / 'test.jsonl'
    cached.write_bytes(b'{"question": "half a file')
    bad = hashlib.sha256(cached.read_bytes()).hexdigest()
    got = prepare(entry('gsm8k'), cache=str(cache), sources=sources)
    assert got['notes'] == ['gsm8k: the cached %s has sha256 %s, expected %s; downloading it again'
                            % (cached, bad, sources['gsm8k']['sha256'])]
    assert cached.read_bytes() == (upstream.root / 'gsm8k' / 'test.jsonl').read_bytes()
    assert upstream.requests == ['/gsm8k/test.jsonl'] * 2


def test_trust_on_first_use_records_the_sha256_and_refuses_a_later_change(tmp_path, upstream, sources):
    cache = tmp_path / 'cache'
    assert sources['mbpp']['sha256'] is None
    first = prepare(entry('mbpp'), cache=str(cache), sources=sources)
    record_path = cache / 'mbpp' / 'mbpp.jsonl.sha256'
    sha = fixture_sha256('mbpp')
    assert first['pinned'] == 'first-use' and first['source_sha256'] == sha
    assert first['notes'] == ['mbpp: %s/mbpp/mbpp.jsonl has no sha256 in dataset_sources.yml: recorded %s on first use '
                              'in %s (trust on first use); every later download must match it'
                              % (upstream.url, sha, record_path)]
    assert json.loads(record_path.read_text()) == {'sha256': sha, 'url': '%s/mbpp/mbpp.jsonl' % upstream.url}
    # the test split only (task ids 11-510)
    assert [r['id'] for r in read_jsonl(first['path'])] == ['11', '12']
    # later: the cached file matches the record
    again = prepare(entry('mbpp'), cache=str(cache), sources=sources)
    assert (again['pinned'], again['notes'], again['sha256']) == ('recorded', [], first['sha256'])
    # the cache is lost but the record kept, and upstream changed: refused, naming the record
    (cache / 'mbpp' / 'mbpp.jsonl').unlink()
    changed = upstream.root / 'mbpp' / 'mbpp.jsonl'
    changed.write_bytes(changed.read_bytes().replace(b'add two', b'add three'))
    with pytest.raises(DatasetError, match=r'^mbpp: .*/mbpp/mbpp\.jsonl changed upstream: its sha256 is %s, expected %s '
                                           r'\(recorded on first download in %s\)'
                       % (hashlib.sha256(changed.read_bytes()).hexdigest(), sha, record_path)):
        prepare(entry('mbpp'), cache=str(cache), sources=sources)


def test_a_record_for_another_url_is_recorded_anew(tmp_path, sources):
    cache = tmp_path / 'cache'
    (cache / 'mbpp').mkdir(parents=True)
    record_path = cache / 'mbpp' / 'mbpp.jsonl.sha256'
    record_path.write_text(json.dumps({'sha256': '0' * 64, 'url': 'https://example.org/old/mbpp.jsonl'}))
    got = prepare(entry('mbpp'), cache=str(cache), sources=sources)
    assert got['pinned'] == 'first-use'
    assert got['notes'][0].startswith('mbpp: the sha256 recorded in %s is for https://example.org/old/mbpp.jsonl, not ' % record_path)
    assert json.loads(record_path.read_text())['sha256'] == fixture_sha256('mbpp')


def test_a_broken_record_is_refused(tmp_path, sources):
    (tmp_path / 'mbpp').mkdir()
    (tmp_path / 'mbpp' / 'mbpp.jsonl.sha256').write_text('{"sha256": "nope"}')
    with pytest.raises(DatasetError, match=r'mbpp\.jsonl\.sha256 holds .*; allowed: \{"sha256": \.\.\., "url": \.\.\.\} '
                                           r'\(remove it to record anew\)$'):
        prepare(entry('mbpp'), cache=str(tmp_path), sources=sources)


def test_a_prefilled_cache_works_with_no_network_and_the_shipped_table(tmp_path, monkeypatch):
    # the shipped table's real upstream URL, which must not be contacted; the cache is pre-filled with the fixture,
    # whose sha256 the table's copy pins
    sources = datasets.load_sources()
    cache = tmp_path / 'cache'
    (cache / 'spec-bench').mkdir(parents=True)
    shutil.copy(os.path.join(FIXTURES, 'spec-bench', 'question.jsonl'), str(cache / 'spec-bench' / 'question.jsonl'))
    sources['spec-bench'].update(sha256=fixture_sha256('spec-bench'), records=5)

    def no_network(*args, **kwargs):
        raise AssertionError('a download was attempted: %r' % (args,))
    monkeypatch.setattr(datasets, 'open_url', no_network)
    monkeypatch.setenv(datasets.CACHE_ENV, str(cache))
    got = prepare(entry('spec-bench'), sources=sources)
    assert got['source'] == datasets.load_sources()['spec-bench']['url']  # the result names the real upstream
    assert (got['count'], got['pinned'], got['path']) == (5, 'table', os.path.join(str(cache), 'normalized', got['sha256'] + '.jsonl'))


def test_offline_with_no_cached_file_says_where_to_put_it(tmp_path):
    sources = datasets.load_sources()
    sources['gsm8k']['url'] = 'http://127.0.0.1:9/gsm8k/test.jsonl'  # the discard port: nothing listens
    with pytest.raises(DatasetError, match=r'^gsm8k: cannot download http://127\.0\.0\.1:9/gsm8k/test\.jsonl: .* \(offline: '
                                           r'put the file, sha256 3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14, '
                                           r'at %s\)$' % os.path.join(str(tmp_path), 'gsm8k', 'test.jsonl')):
        prepare(entry('gsm8k'), cache=str(tmp_path), sources=sources, timeout=5)


def test_url_base_fetches_from_a_mirror_laid_out_as_the_cache(tmp_path, upstream, monkeypatch):
    sources = datasets.load_sources()  # real URLs: only the mirror can answer
    sources['humaneval'].update(sha256=fixture_sha256('humaneval'), records=2)
    got = prepare(entry('humaneval'), cache=str(tmp_path / 'a'), sources=sources, url_base=upstream.url + '/')
    assert (got['count'], got['source'], got['format']) == (2, sources['humaneval']['url'], 'humaneval')
    monkeypatch.setenv(datasets.MIRROR_ENV, upstream.url)
    assert prepare(entry('humaneval'), cache=str(tmp_path / 'b'), sources=sources)['sha256'] == got['sha256']
    assert upstream.requests == ['/humaneval/HumanEval.jsonl.gz'] * 2


def test_a_download_past_the_size_bound_or_missing_is_refused(tmp_path, upstream, sources):
    with pytest.raises(DatasetError, match=r'^gsm8k: cannot download .*/gsm8k/test\.jsonl: larger than 100 bytes'):
        prepare(entry('gsm8k'), cache=str(tmp_path), sources=sources, max_bytes=100)
    (upstream.root / 'math500' / 'test.jsonl').unlink()
    with pytest.raises(DatasetError, match=r'^math500: cannot download .*/math500/test\.jsonl: (HTTP Error 404|File not found)'):
        prepare(entry('math500'), cache=str(tmp_path), sources=sources)
    assert not os.path.exists(os.path.join(str(tmp_path), 'gsm8k', 'test.jsonl'))


def test_only_http_urls_are_downloaded():
    with pytest.raises(DatasetError, match=r'^cannot download file:///etc/passwd: allowed: http or https URLs$'):
        datasets.download('file:///etc/passwd')


def test_a_changed_record_count_is_refused_even_when_unpinned(tmp_path, upstream, sources):
    sources['mbpp']['records'] = 974
    with pytest.raises(DatasetError, match=r'^mbpp \(.*/mbpp/mbpp\.jsonl\): 4 records; the source table expects 974$'):
        prepare(entry('mbpp'), cache=str(tmp_path), sources=sources)


def test_a_file_entry_is_read_relative_to_base_dir(tmp_path):
    (tmp_path / 'prompts').mkdir()
    shutil.copy(os.path.join(FIXTURES, 'formats', 'conversations.jsonl'), str(tmp_path / 'prompts' / 'chat.jsonl'))
    got = prepare(datasets.validate_entry({'name': 'chat', 'file': 'prompts/chat.jsonl', 'turns': 'first'}, {}, 'e'),
                  cache=str(tmp_path / 'cache'), base_dir=str(tmp_path))
    source = str(tmp_path / 'prompts' / 'chat.jsonl')
    assert {key: got[key] for key in ('source', 'pinned', 'format', 'count', 'categories', 'turns')} == {
        'source': source, 'pinned': 'none', 'format': 'conversations', 'count': 2, 'categories': {'chat': 2},
        'turns': 'first'}
    assert got['source_sha256'] == hashlib.sha256((tmp_path / 'prompts' / 'chat.jsonl').read_bytes()).hexdigest()
    assert read_jsonl(got['path'])[0] == {'id': 'c1', 'category': 'chat', 'turns': ['Name a blue fruit.']}


def test_a_malformed_or_missing_file_entry_is_refused_with_its_path_and_line(tmp_path):
    bad = tmp_path / 'bad.jsonl'
    bad.write_text('{"prompt": "a"}\n{"prompt": "b"}\n{"messages": []}\n')
    with pytest.raises(DatasetError, match=r'^%s: line 3: is in the messages format, but line 1 is in the prompt format'
                       % str(bad).replace('.', r'\.')):
        prepare(datasets.validate_entry({'name': 'bad', 'file': str(bad)}, {}, 'e'), cache=str(tmp_path / 'c'))
    with pytest.raises(DatasetError, match=r'^gone: cannot read the file %s: No such file or directory$' % str(tmp_path / 'gone.jsonl')):
        prepare(datasets.validate_entry({'name': 'gone', 'file': 'gone.jsonl'}, {}, 'e'), cache=str(tmp_path / 'c'),
                base_dir=str(tmp_path))


def test_a_file_entry_categories_are_checked_against_the_file(tmp_path):
    path = os.path.join(FIXTURES, 'spec-bench', 'question.jsonl')
    with pytest.raises(DatasetError, match=r'categories poetry are not in it; allowed: math, qa, rag, translation, writing$'):
        prepare(datasets.validate_entry({'name': 'mine', 'file': path, 'categories': ['poetry']}, {}, 'e'), cache=str(tmp_path))


def test_random_needs_no_file():
    assert prepare(entry('random', num_prompts=64)) == {'name': 'random', 'kind': 'random', 'num_prompts': 64,
                                                        'input_len': None, 'output_len': None, 'notes': []}


def test_prepare_datasets_validates_first_and_prepares_each(tmp_path, upstream, sources):
    with pytest.raises(DatasetError, match=r"workload\.datasets\[1\]\.turns is 'both'"):
        prepare_datasets(['gsm8k', {'name': 'mt-bench', 'turns': 'both'}], cache=str(tmp_path), sources=sources)
    assert upstream.requests == []  # nothing fetched before every entry is checked
    got = prepare_datasets(['gsm8k', {'name': 'mt-bench', 'num_prompts': 2}, 'random'], cache=str(tmp_path), sources=sources)
    assert [(item['name'], item.get('count')) for item in got] == [('gsm8k', 3), ('mt-bench', 2), ('random', None)]


def test_cache_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv('HOME', str(tmp_path))
    assert datasets.cache_dir() == str(tmp_path / '.cache' / 'specdec' / 'datasets')
    monkeypatch.setenv(datasets.CACHE_ENV, '/srv/datasets')
    assert datasets.cache_dir() == '/srv/datasets'
    assert datasets.cache_dir('~/mine') == str(tmp_path / 'mine')


class _Trickle(http.server.BaseHTTPRequestHandler):
    """A byte every 0.5 s, for 12 s at most: of the body (after complete headers), or of the headers themselves."""

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        pass

    def do_GET(self):  # pylint: disable=invalid-name
        head = b'HTTP/1.0 200 OK\r\nContent-Length: 24\r\nContent-Type: application/jsonl\r\n\r\n'
        body = b'{"prompt": "slowly..."}\n'
        try:
            if self.path == '/headers':
                for i in range(len(head)):
                    self.wfile.write(head[i:i + 1])
                    self.wfile.flush()
                    time.sleep(12.0 / len(head))
                self.wfile.write(body[:24])
                return
            self.wfile.write(head)
            for i in range(24):
                self.wfile.write(body[i:i + 1])
                self.wfile.flush()
                time.sleep(0.5)
        except OSError:
            pass  # the client went away: the download was stopped


@pytest.fixture(name='trickle')
def trickle_fixture():
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Trickle)
    thread = threading.Thread(target=server.serve_forever, kwargs={'poll_interval': 0.05}, daemon=True)
    thread.start()
    yield 'http://127.0.0.1:%d' % server.server_address[1]
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.mark.parametrize('path', ['/body', '/headers'])
def test_a_server_that_trickles_bytes_cannot_hold_a_download_past_its_deadline(trickle, monkeypatch, path):
    """timeout bounds each wait for bytes, which a byte every 0.5 s never passes: the deadline bounds all of it."""
    monkeypatch.setattr(datasets, 'DOWNLOAD_DEADLINE', 3, raising=False)
    url = trickle + path
    started = time.monotonic()
    with pytest.raises(DatasetError, match=r'^cannot download %s: not done within its deadline of 3 s' % re.escape(url)):
        datasets.download(url, timeout=2)
    assert time.monotonic() - started < 3 + 2


def test_a_download_within_its_deadline_is_whole(upstream):
    data = datasets.download(upstream.url + '/gsm8k/test.jsonl', timeout=5, deadline=30)
    with open(os.path.join(FIXTURES, 'gsm8k', 'test.jsonl'), 'rb') as handle:
        assert data == handle.read()


def test_a_graded_set_keeps_its_references_beside_the_prompts_whose_bytes_do_not_change(tmp_path, upstream, sources):
    cache = str(tmp_path / 'cache')
    got = prepare(entry('gsm8k', num_prompts=2), cache=cache, sources=sources)
    refs = read_jsonl(got['references_path'])
    assert got['references_path'] == os.path.join(cache, 'normalized', got['sha256'] + datasets.REFERENCES_SUFFIX)
    with open(got['references_path'], 'rb') as handle:
        assert hashlib.sha256(handle.read()).hexdigest() == got['references_sha256']
    prompts = read_jsonl(got['path'])
    assert [r['id'] for r in refs] == [p['id'] for p in prompts] and got['references_count'] == 2
    assert all(r['kind'] == 'gsm8k' and '####' in r['answer'] for r in refs)
    assert all(set(p) == {'id', 'category', 'turns'} for p in prompts)  # nothing of the answer in the prompts
    # the prompts' sha256 is what normalize gives without references: the same bytes
    data = (upstream.root / 'gsm8k' / 'test.jsonl').read_bytes()
    assert datasets.normalize(data, 'x', fmt='gsm8k', category='math', num_prompts=2)['sha256'] == got['sha256']
