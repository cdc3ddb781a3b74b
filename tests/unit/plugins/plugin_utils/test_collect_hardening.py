# SPDX-License-Identifier: GPL-3.0-or-later
"""results_unpack against hostile or damaged input: sizes checked while streaming, links on the destination path
refused, a destination that cannot take the archive refused before anything moves, a failed merge undone."""
import hashlib
import io
import os
import tarfile

import pytest

from ansible_collections.specdec.bench.plugins.modules import results_archive
from ansible_collections.specdec.bench.plugins.plugin_utils import collect
from ansible_collections.specdec.bench.plugins.plugin_utils.collect import CollectError, unpack

FILES = {
    'campaign.json': '{"campaign": "c", "stages": []}\n',
    'tp1-autoregressive/status.json': '{"status": "ok"}\n',
    'tp1-autoregressive/result-random-t0-c1.json': '{"output_throughput": 50.5}\n',
}


def make_host(tmp_path, files=None):
    root = tmp_path / 'host' / 'c'
    for path, text in (files or FILES).items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return root


def pack(campaign_dir, tmp_path):
    files, _skipped = results_archive.campaign_files(str(campaign_dir))
    archive = str(tmp_path / ('archive-%d.tar.gz' % len(list(tmp_path.glob('archive-*')))))
    return archive, results_archive.pack(str(campaign_dir), files, archive)


def tree(folder):
    """{relative path: bytes or '->target'} of everything under folder, links not followed."""
    found = {}
    for current, dirs, names in os.walk(str(folder)):
        for name in dirs + names:
            path = os.path.join(current, name)
            relative = os.path.relpath(path, str(folder))
            if os.path.islink(path):
                found[relative] = '->' + os.readlink(path)
            elif os.path.isfile(path):
                with open(path, 'rb') as handle:
                    found[relative] = handle.read()
    return found


def bomb(tmp_path, size):
    """A small archive with one member of `size` zero bytes, and a manifest that says it is 10 bytes."""
    archive = str(tmp_path / 'bomb.tar.gz')
    with tarfile.open(archive, 'w:gz') as tar:
        member = tarfile.TarInfo('tp1-autoregressive/raw-random-t0-c1.jsonl')
        member.size = size
        tar.addfile(member, io.BytesIO(bytes(size)))
    return archive, [{'path': 'tp1-autoregressive/raw-random-t0-c1.jsonl', 'size': 10, 'sha256': hashlib.sha256(bytes(10)).hexdigest()}]


def test_a_member_larger_than_its_manifest_size_is_refused_before_it_is_read(tmp_path, monkeypatch):
    archive, manifest = bomb(tmp_path, 8 * 1024 * 1024)
    assert os.path.getsize(archive) < 64 * 1024
    read = []
    real_extractfile = tarfile.TarFile.extractfile

    def counting_extractfile(self, member):
        source = real_extractfile(self, member)
        real_read = source.read

        def counted(*args):
            data = real_read(*args)
            read.append(len(data))
            return data
        source.read = counted
        return source
    monkeypatch.setattr(tarfile.TarFile, 'extractfile', counting_extractfile)
    dest = tmp_path / 'results' / 'ct200' / 'c'
    with pytest.raises(CollectError, match=r'tp1-autoregressive/raw-random-t0-c1.jsonl is 8388608 bytes in the archive; the manifest says 10'):
        unpack(archive, manifest, str(dest), 't1')
    assert sum(read) <= 10 + 1
    assert not dest.exists()


def test_reading_stops_once_a_member_exceeds_its_declared_size():
    source = io.BytesIO(bytes(5 * collect.CHUNK))
    digest = hashlib.sha256()
    with pytest.raises(CollectError, match='more than the 10 bytes'):
        collect.copy_member(source, io.BytesIO(), digest, 10, 'x')
    assert source.tell() <= 11


@pytest.mark.parametrize('entry', [
    {'path': 'a', 'sha256': '0' * 64},
    {'path': 'a', 'size': -1, 'sha256': '0' * 64},
    {'path': 'a', 'size': True, 'sha256': '0' * 64},
    {'path': 'a', 'size': '10', 'sha256': '0' * 64},
])
def test_a_manifest_entry_without_a_size_is_refused(entry):
    with pytest.raises(CollectError, match='allowed: {path, size, sha256}'):
        collect.check_manifest([entry])


def test_a_manifest_path_that_is_also_a_folder_of_another_is_refused():
    entries = [{'path': 'a', 'size': 1, 'sha256': '0' * 64}, {'path': 'a/b', 'size': 1, 'sha256': '0' * 64}]
    with pytest.raises(CollectError, match='lists a as a file and as a folder'):
        collect.check_manifest(entries)


def test_a_stage_folder_that_is_a_link_is_refused_and_nothing_lands_outside(tmp_path):
    archive, manifest = pack(make_host(tmp_path), tmp_path)
    dest = tmp_path / 'results' / 'ct200' / 'c'
    outside = tmp_path / 'outside'
    outside.mkdir()
    dest.mkdir(parents=True)
    os.symlink(str(outside), str(dest / 'tp1-autoregressive'))
    before = tree(tmp_path / 'results')
    with pytest.raises(CollectError, match=r'%s is a symbolic link' % (dest / 'tp1-autoregressive')):
        unpack(archive, manifest, str(dest), 't1')
    assert list(outside.iterdir()) == []
    assert tree(tmp_path / 'results') == before
    with pytest.raises(CollectError, match='is a symbolic link'):  # check mode says so too
        unpack(None, manifest, str(dest), 't1', check=True)


@pytest.mark.parametrize('link', ['ct200', 'ct200/c', 'ct200/c/.collect', 'ct200/c/campaign.json'])
def test_a_link_anywhere_below_dest_is_refused(tmp_path, link):
    archive, manifest = pack(make_host(tmp_path), tmp_path)
    results = tmp_path / 'results'
    outside = tmp_path / 'outside'
    outside.mkdir()
    (results / link).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(str(outside), str(results / link))
    with pytest.raises(CollectError, match=r'%s is a symbolic link' % (results / link)):
        unpack(archive, manifest, str(results / 'ct200' / 'c'), 't1', root=str(results))
    assert list(outside.iterdir()) == []


def test_a_file_where_a_folder_is_needed_is_refused_before_anything_is_merged(tmp_path):
    archive, manifest = pack(make_host(tmp_path), tmp_path)
    dest = tmp_path / 'results' / 'ct200' / 'c'
    dest.mkdir(parents=True)
    (dest / 'tp1-autoregressive').write_text('not a folder\n')
    with pytest.raises(CollectError, match=r'%s is a file where the archive needs a folder' % (dest / 'tp1-autoregressive')):
        unpack(archive, manifest, str(dest), 't1')
    assert tree(dest) == {'tp1-autoregressive': b'not a folder\n'}  # campaign.json was not merged first
    assert sorted(os.listdir(str(dest.parent))) == ['c']


def test_a_folder_where_a_file_is_needed_is_refused(tmp_path):
    archive, manifest = pack(make_host(tmp_path), tmp_path)
    dest = tmp_path / 'results' / 'ct200' / 'c'
    (dest / 'campaign.json').mkdir(parents=True)
    with pytest.raises(CollectError, match=r'%s is a folder where the archive has a file' % (dest / 'campaign.json')):
        unpack(archive, manifest, str(dest), 't1')


def test_a_merge_that_fails_halfway_is_undone(tmp_path, monkeypatch):
    host = make_host(tmp_path)
    dest = tmp_path / 'results' / 'ct200' / 'c'
    unpack(*pack(host, tmp_path), str(dest), 't1')
    collected = tree(dest)
    (host / 'campaign.json').write_text('{"campaign": "c", "stages": [], "changed": true}\n')
    (host / 'tp1-autoregressive' / 'status.json').write_text('{"status": "failed"}\n')
    (host / 'tp1-dflash-n16').mkdir()
    (host / 'tp1-dflash-n16' / 'status.json').write_text('{"status": "ok"}\n')
    archive, manifest = pack(host, tmp_path)
    real_replace, failed = os.replace, []

    def failing_replace(src, dst):
        """The new status.json cannot be moved into place, after the old one went to evidence."""
        if not failed and str(dst).endswith(os.path.join('c', 'tp1-autoregressive', 'status.json')):
            failed.append(dst)
            raise OSError(28, 'No space left on device')
        return real_replace(src, dst)
    monkeypatch.setattr(collect.os, 'replace', failing_replace)
    with pytest.raises(CollectError, match='No space left on device.*undone'):
        unpack(archive, manifest, str(dest), 't2')
    monkeypatch.setattr(collect.os, 'replace', real_replace)
    assert failed
    assert tree(dest) == collected
    assert sorted(os.listdir(str(dest.parent))) == ['c']


def test_a_first_collect_moves_the_verified_folder_into_place(tmp_path):
    host = make_host(tmp_path)
    dest = tmp_path / 'results' / 'ct200' / 'c'
    result = unpack(*pack(host, tmp_path), str(dest), 't1')
    assert result['added'] == sorted(FILES)
    files = {path: data for path, data in tree(dest).items() if not path.startswith('.collect')}
    assert files == {path: text.encode() for path, text in FILES.items()}
    assert oct(os.stat(str(dest)).st_mode & 0o777) != '0o700'  # not the private mode of a temporary folder
    assert sorted(os.listdir(str(dest.parent))) == ['c']
