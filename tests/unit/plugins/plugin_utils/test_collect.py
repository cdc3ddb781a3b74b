# SPDX-License-Identifier: GPL-3.0-or-later
"""Collect: results_archive packs on the host, results_unpack verifies and merges on the controller.

The host side is the real module code on a real folder; the controller side the real unpack; only the transfer
(a fetch) is left out.
"""
import hashlib
import io
import json
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
    'tp1-autoregressive/raw-random-t0-c1.jsonl': '{"index": 0}\n' * 100,
    'tp1-ddtree-b32-k4/status.json': '{"status": "failed", "reason": "CUDA out of memory"}\n',
}


@pytest.fixture(name='host_dir')
def host_dir_fixture(tmp_path):
    root = tmp_path / 'host' / 'bench_results'
    for path, text in FILES.items():
        target = root / 'c' / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return root


def pack(root, tmp_path):
    """What the module does on the host: (archive path, manifest)."""
    campaign_dir = str(root / 'c')
    files, skipped = results_archive.campaign_files(campaign_dir)
    assert skipped == []
    archive = str(tmp_path / ('archive-%d.tar.gz' % len(list(tmp_path.glob('archive-*')))))
    return archive, results_archive.pack(campaign_dir, files, archive)


def controller(tmp_path):
    return tmp_path / 'controller' / 'results' / 'ct200' / 'c'


def collected(campaign_dir):
    return {path: (campaign_dir / path).read_text() for path in collect.collected_files(str(campaign_dir))}


def test_manifest_is_what_is_in_the_archive(host_dir, tmp_path):
    archive, manifest = pack(host_dir, tmp_path)
    assert [entry['path'] for entry in manifest] == sorted(FILES)
    with tarfile.open(archive) as tar:
        for entry in manifest:
            data = tar.extractfile(entry['path']).read()
            assert hashlib.sha256(data).hexdigest() == entry['sha256'] and len(data) == entry['size']


def test_collect_then_collect_again_changes_nothing(host_dir, tmp_path):
    dest = controller(tmp_path)
    archive, manifest = pack(host_dir, tmp_path)
    first = unpack(archive, manifest, str(dest), '20261202T150000Z', source='ct200:c')
    assert first['added'] == sorted(FILES) and first['superseded'] == [] and first['superseded_dir'] is None
    assert collected(dest) == FILES
    mtime = (dest / 'campaign.json').stat().st_mtime
    assert mtime == pytest.approx((host_dir / 'c' / 'campaign.json').stat().st_mtime, abs=1)  # the host's time is kept
    archive, manifest = pack(host_dir, tmp_path)
    second = unpack(archive, manifest, str(dest), '20261202T150100Z', source='ct200:c')
    assert second['added'] == [] and second['superseded'] == [] and second['unchanged'] == sorted(FILES)
    assert collected(dest) == FILES
    assert not (dest / '.collect' / 'superseded').exists()
    saved = json.loads((dest / '.collect' / 'manifest.json').read_text())
    assert saved == {'source': 'ct200:c', 'files': manifest}
    assert sorted(os.listdir(dest.parent)) == ['c']  # no staging folder left behind


def test_a_changed_file_replaces_the_collected_one_which_is_kept_as_evidence(host_dir, tmp_path):
    dest = controller(tmp_path)
    unpack(*pack(host_dir, tmp_path), str(dest), '20261202T150000Z')
    (host_dir / 'c' / 'tp1-ddtree-b32-k4' / 'status.json').write_text('{"status": "ok"}\n')
    (host_dir / 'c' / 'tp1-ddtree-b32-k4' / 'result-random-t0-c1.json').write_text('{"output_throughput": 120.0}\n')
    result = unpack(*pack(host_dir, tmp_path), str(dest), '20261202T150500Z')
    assert result['superseded'] == ['tp1-ddtree-b32-k4/status.json'] and result['added'] == ['tp1-ddtree-b32-k4/result-random-t0-c1.json']
    evidence = dest / '.collect' / 'superseded' / '20261202T150500Z'
    assert result['superseded_dir'] == str(evidence)
    assert (evidence / 'tp1-ddtree-b32-k4' / 'status.json').read_text() == FILES['tp1-ddtree-b32-k4/status.json']
    assert (dest / 'tp1-ddtree-b32-k4' / 'status.json').read_text() == '{"status": "ok"}\n'
    # a second change in the same second gets its own evidence folder
    (host_dir / 'c' / 'tp1-ddtree-b32-k4' / 'status.json').write_text('{"status": "failed"}\n')
    again = unpack(*pack(host_dir, tmp_path), str(dest), '20261202T150500Z')
    assert again['superseded_dir'] == str(evidence) + '-2'
    assert (evidence.parent / '20261202T150500Z-2' / 'tp1-ddtree-b32-k4' / 'status.json').read_text() == '{"status": "ok"}\n'


def test_a_file_gone_from_the_host_is_set_aside_on_the_controller(host_dir, tmp_path):
    # a rerun on the host moved a stage's earlier files to attempt-<n>/: the collected folder follows, so the report
    # never reads a result the host set aside, and the controller's copy is kept as evidence
    dest = controller(tmp_path)
    unpack(*pack(host_dir, tmp_path), str(dest), 't1')
    gone = 'tp1-autoregressive/raw-random-t0-c1.jsonl'
    (host_dir / 'c' / gone).unlink()
    result = unpack(*pack(host_dir, tmp_path), str(dest), 't2')
    assert result['only_on_controller'] == [gone]
    assert result['superseded_dir'] == str(dest / '.collect' / 'superseded' / 't2')
    assert (dest / '.collect' / 'superseded' / 't2' / gone).read_text() == FILES[gone]
    assert collected(dest) == {path: text for path, text in FILES.items() if path != gone}
    # collecting again changes nothing
    again = unpack(*pack(host_dir, tmp_path), str(dest), 't3')
    assert again['only_on_controller'] == [] and again['superseded_dir'] is None


def tampered(archive, name, data):
    """A copy of the archive with one member's bytes replaced."""
    out = archive + '.bad.tar.gz'
    with tarfile.open(archive) as src, tarfile.open(out, 'w:gz') as dst:
        for member in src:
            content = src.extractfile(member).read()
            if member.name == name:
                content = data
                member.size = len(data)
            dst.addfile(member, io.BytesIO(content))
    return out


def test_an_archive_that_does_not_match_the_manifest_writes_nothing(host_dir, tmp_path):
    dest = controller(tmp_path)
    archive, manifest = pack(host_dir, tmp_path)
    bad = tampered(archive, 'tp1-autoregressive/result-random-t0-c1.json', b'{"output_throughput": 9999}\n')
    with pytest.raises(CollectError, match='tp1-autoregressive/result-random-t0-c1.json does not match the host'):
        unpack(bad, manifest, str(dest), 't1')
    assert not dest.exists() or collected(dest) == {}
    with pytest.raises(CollectError, match='lacks 1 file'):
        unpack(archive, manifest + [{'path': 'extra.json', 'size': 1, 'sha256': '0' * 64}], str(dest), 't1')
    with pytest.raises(CollectError, match='which the manifest does not list'):
        unpack(archive, manifest[1:], str(dest), 't1')
    truncated = str(tmp_path / 'cut.tar.gz')
    with open(archive, 'rb') as src, open(truncated, 'wb') as dst:
        dst.write(src.read()[:200])
    with pytest.raises(CollectError, match='not a readable archive'):
        unpack(truncated, manifest, str(dest), 't1')
    assert not dest.exists() or collected(dest) == {}
    assert [name for name in os.listdir(dest.parent) if name.startswith('.collect-')] == []


@pytest.mark.parametrize('path', ['/etc/passwd', '../escape', 'a/../../b', '.collect/manifest.json', './x'])
def test_manifest_paths_outside_the_campaign_are_refused(path):
    with pytest.raises(CollectError, match='allowed: a normalized path inside the campaign folder'):
        collect.check_manifest([{'path': path, 'size': 1, 'sha256': '0' * 64}])


def test_check_mode_reports_and_writes_nothing(host_dir, tmp_path):
    dest = controller(tmp_path)
    _archive, manifest = pack(host_dir, tmp_path)
    result = unpack(None, manifest, str(dest), 't1', check=True)
    assert result['added'] == sorted(FILES)
    assert not dest.exists()


def test_links_are_not_packed(host_dir):
    os.symlink('/etc/passwd', str(host_dir / 'c' / 'tp1-autoregressive' / 'link'))
    files, skipped = results_archive.campaign_files(str(host_dir / 'c'))
    assert skipped == ['tp1-autoregressive/link'] and 'tp1-autoregressive/link' not in files


def test_module_packs_and_check_mode_does_not(host_dir, tmp_path, run_module):
    result = run_module(results_archive, {'root': str(host_dir), 'campaign': 'c', 'archive_dir': str(tmp_path)})
    assert result['changed'] is False and result['bytes'] == sum(len(text) for text in FILES.values())
    assert os.path.isfile(result['archive']) and oct(os.stat(result['archive']).st_mode & 0o777) == '0o600'
    assert [entry['path'] for entry in result['manifest']] == sorted(FILES)
    checked = run_module(results_archive, {'root': str(host_dir), 'campaign': 'c', 'archive_dir': str(tmp_path / 'none'),
                                           '_ansible_check_mode': True})
    assert checked['archive'] is None and checked['manifest'] == result['manifest']


@pytest.mark.parametrize(('campaign', 'message'), [
    ('Bad Id', "campaign is 'Bad Id'; allowed: an id matching"),
    ('nosuch', 'no results of campaign nosuch on this host'),
])
def test_module_refuses_bad_input(host_dir, tmp_path, run_module, campaign, message):
    result = run_module(results_archive, {'root': str(host_dir), 'campaign': campaign, 'archive_dir': str(tmp_path)})
    assert result['failed'] and message in result['msg']
    assert list(tmp_path.glob('specdec-collect-*')) == []
