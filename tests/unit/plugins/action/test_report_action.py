# SPDX-License-Identifier: GPL-3.0-or-later
"""The report and results_unpack actions: argument checks, the collection's results layout, results."""
import json
import sys
from pathlib import Path
from unittest import mock

import pytest
from ansible.errors import AnsibleActionFail
from ansible.playbook.task import Task

from ansible_collections.specdec.bench.plugins.action import report as report_action
from ansible_collections.specdec.bench.plugins.action import results_unpack as unpack_action
from ansible_collections.specdec.bench.plugins.module_utils._common import RESULTS_LAYOUT
from ansible_collections.specdec.bench.plugins.modules import results_archive

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'plugin_utils'))
import synthetic_results as synth  # noqa: E402  pylint: disable=wrong-import-position


def run(module, args, check_mode=False, host='ct200'):
    task = Task()
    task.args = args
    task.check_mode = check_mode
    action = module.ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=None, shared_loader_obj=None)
    return action.run(task_vars={'inventory_hostname': host})


def test_the_report_reads_the_collections_layout(tmp_path):
    """No layout option: the files read are the ones RESULTS_LAYOUT names (synth writes them so)."""
    synth.make_campaign(tmp_path / 'results', 'ct200', 'c', synth.ct200_matrix(tps=(1,), budgets=(16,)))
    assert synth.LAYOUT is RESULTS_LAYOUT and (tmp_path / 'results' / 'ct200' / 'c' / RESULTS_LAYOUT['campaign']).is_file()
    args = {'campaign': 'c', 'results_dir': str(tmp_path / 'results'), 'output_dir': str(tmp_path / 'out'), 'plots': False}
    assert run(report_action, args)['measured'] > 0
    with pytest.raises(AnsibleActionFail, match='Invalid options.*layout'):
        run(report_action, dict(args, layout={'status': 'other.json'}))


def test_report_action_writes_and_a_rerun_changes_nothing(tmp_path):
    synth.make_campaign(tmp_path / 'results', 'ct200', 'c', synth.ct200_matrix(tps=(1,), budgets=(16, 64)))
    args = {'campaign': 'c', 'results_dir': str(tmp_path / 'results'), 'output_dir': str(tmp_path / 'reports' / 'c'), 'plots': 'no'}
    first = run(report_action, args)
    assert first['changed'] is True and first['hosts'] == ['ct200'] and first['rows'] == 8 and first['measured'] == 8
    assert first['report_md'] == str(tmp_path / 'reports' / 'c' / 'report.md')
    assert sorted(first['written']) == [
        'report.md', 'report.tex', 'results-categories.csv', 'results-repeats.csv', 'results-why.csv', 'results.csv', 'results.json']
    assert first['plots_skipped'] == 'plots=false'
    assert first['summary_lines'][1].startswith('ct200 TP1 c=1: best DDTree B=64 k=4')
    again = run(report_action, args)
    assert again['changed'] is False and again['written'] == []


@pytest.mark.parametrize(('args', 'message'), [
    ({'results_dir': 'r', 'output_dir': 'o'}, 'campaign is required'),
    ({'campaign': 'c', 'results_dir': 'r', 'output_dir': 'o', 'hosts': 'ct200'}, "hosts is 'ct200'; allowed: a list"),
    ({'campaign': 'c', 'results_dir': 'r', 'output_dir': 'o', 'plots': 'maybe'}, "plots is 'maybe'; allowed: true or false"),
    ({'campaign': 'C!', 'results_dir': 'r', 'output_dir': 'o'}, "campaign is 'C!'; allowed"),
    ({'campaign': 'c', 'results_dir': 'r', 'output_dir': 'o', 'noisy_cv': 'high'}, "noisy_cv is 'high'; allowed: a coefficient of variation"),
    ({'campaign': 'c', 'results_dir': 'r', 'output_dir': 'o', 'noisy_cv': 0}, 'noisy_cv is 0; allowed: a coefficient of variation'),
    ({'campaign': 'c', 'results_dir': 'r', 'output_dir': 'o', 'noisy_cv': '1.5'}, 'noisy_cv is 1.5; allowed: a coefficient of variation'),
])
def test_report_action_refuses_bad_arguments(tmp_path, args, message):
    args = dict(args, results_dir=str(tmp_path), output_dir=str(tmp_path / 'out'))
    with pytest.raises(AnsibleActionFail, match=None) as error:
        run(report_action, args)
    assert message in str(error.value)
    assert not (tmp_path / 'out').exists()


def make_archive(tmp_path):
    campaign_dir = tmp_path / 'host' / 'c'
    (campaign_dir / 'tp1-autoregressive').mkdir(parents=True)
    (campaign_dir / 'tp1-autoregressive' / 'status.json').write_text('{"status": "ok"}\n')
    files, _skipped = results_archive.campaign_files(str(campaign_dir))
    archive = str(tmp_path / 'incoming.tar.gz')
    return archive, results_archive.pack(str(campaign_dir), files, archive)


def test_unpack_action_merges_under_the_host_and_removes_the_archive(tmp_path):
    archive, manifest = make_archive(tmp_path)
    result = run(unpack_action, {'archive': archive, 'manifest': manifest, 'dest': str(tmp_path / 'results'), 'campaign': 'c'})
    assert result['changed'] is True and result['added'] == ['tp1-autoregressive/status.json'] and result['files'] == 1
    assert (tmp_path / 'results' / 'ct200' / 'c' / 'tp1-autoregressive' / 'status.json').read_text() == '{"status": "ok"}\n'
    assert not Path(archive).exists()


def test_unpack_action_in_check_mode_needs_no_archive_and_writes_nothing(tmp_path):
    _archive, manifest = make_archive(tmp_path)
    result = run(unpack_action, {'manifest': manifest, 'dest': str(tmp_path / 'results'), 'campaign': 'c'}, check_mode=True)
    assert result['added'] == ['tp1-autoregressive/status.json'] and result['changed'] is True
    assert not (tmp_path / 'results').exists()


def test_unpack_action_failure_names_the_file_and_writes_nothing(tmp_path):
    archive, manifest = make_archive(tmp_path)
    manifest[0]['sha256'] = '0' * 64
    with pytest.raises(AnsibleActionFail, match='tp1-autoregressive/status.json does not match the host.*nothing was written'):
        run(unpack_action, {'archive': archive, 'manifest': manifest, 'dest': str(tmp_path / 'results'), 'campaign': 'c'})
    assert not (tmp_path / 'results' / 'ct200' / 'c').exists()
    assert not Path(archive).exists()  # removed also after a failure


@pytest.mark.parametrize(('args', 'host', 'message'), [
    ({'campaign': '../x'}, 'ct200', "campaign is '../x'"),
    ({'campaign': 'c'}, '../etc', "host is '../etc'"),
    ({'campaign': 'c', 'dest': ''}, 'ct200', 'dest is required'),
])
def test_unpack_action_refuses_bad_arguments(tmp_path, args, host, message):
    args = dict({'archive': 'a', 'manifest': [], 'dest': str(tmp_path)}, **args)
    with pytest.raises(AnsibleActionFail, match=None) as error:
        run(unpack_action, args, host=host)
    assert message in str(error.value)


def test_unpack_action_refuses_a_link_below_dest_naming_it(tmp_path):
    archive, manifest = make_archive(tmp_path)
    (tmp_path / 'results').mkdir()
    (tmp_path / 'elsewhere').mkdir()
    (tmp_path / 'results' / 'ct200').symlink_to(tmp_path / 'elsewhere')
    with pytest.raises(AnsibleActionFail, match=r'%s is a symbolic link.*nothing was written' % (tmp_path / 'results' / 'ct200')):
        run(unpack_action, {'archive': archive, 'manifest': manifest, 'dest': str(tmp_path / 'results'), 'campaign': 'c'})
    assert list((tmp_path / 'elsewhere').iterdir()) == []


def test_report_action_returns_and_warns_about_each_skipped_file(tmp_path, monkeypatch):
    synth.make_campaign(tmp_path / 'results', 'ct200', 'c', synth.ct200_matrix(tps=(1,), budgets=(16,)))
    status = tmp_path / 'results' / 'ct200' / 'c' / 'tp1-autoregressive' / 'status.json'
    status.write_text('[]')
    warnings = []
    monkeypatch.setattr(report_action.display, 'warning', warnings.append)
    args = {'campaign': 'c', 'results_dir': str(tmp_path / 'results'), 'output_dir': str(tmp_path / 'reports'), 'plots': False}
    result = run(report_action, args)
    assert result['skipped_files'] == [{'path': str(status), 'reason': 'the document is a list; allowed: an object'}]
    assert warnings == ['report: skipped %s: the document is a list; allowed: an object' % status]
    assert 'tp1-autoregressive' in [item['stage'] for item in result['not_measured'] if item['status'] == 'invalid']
    assert '`ct200/c/tp1-autoregressive/status.json`' in (tmp_path / 'reports' / 'report.md').read_text()


def test_report_action_passes_noisy_cv_as_a_template_gives_it(tmp_path):
    synth.make_campaign(tmp_path / 'results', 'ct200', 'c', synth.ct200_matrix(tps=(1,), budgets=(16,)), concurrency=(1,),
                        datasets=['gsm8k'], repeats=2)
    args = {'campaign': 'c', 'results_dir': str(tmp_path / 'results'), 'output_dir': str(tmp_path / 'out'), 'plots': False}
    run(report_action, dict(args, noisy_cv='0.000001'))
    rows = json.loads((tmp_path / 'out' / 'results.json').read_text())
    assert rows['noisy_cv'] == 1e-6 and all(row['noisy'] is True for row in rows['rows'])
    run(report_action, args)
    assert json.loads((tmp_path / 'out' / 'results.json').read_text())['noisy_cv'] == 0.05
