# SPDX-License-Identifier: GPL-3.0-or-later
"""The report's files of one synthetic campaign against committed golden files: any change to what the report writes
fails here, whichever module of plugins/plugin_utils/report/ made it.

The campaign (make_golden) has what most sections need: a DDTree budget sweep beside AR and DFlash, two datasets (one
of them Spec-Bench, with categories) at temperature 0.7, two concurrencies, three repeats with energy (one throttled),
a failed stage, and an earlier campaign to compare with. The text files are compared byte for byte with
golden/campaign/, the PNG plots by the sha256 of their bytes (golden/campaign/png.sha256; matplotlib draws them
the same way on every run with the same matplotlib).

After a deliberate change to the report, rewrite the golden files with
    SPECDEC_REPORT_GOLDEN=write python -m pytest tests/unit/plugins/plugin_utils/test_report_golden.py
and review their diff.
"""
import hashlib
import os
import sys
from pathlib import Path

import pytest

from ansible_collections.specdec.bench.plugins.plugin_utils.report import generate

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synthetic_results as synth  # noqa: E402  pylint: disable=wrong-import-position

GOLDEN = Path(__file__).resolve().parent / 'golden' / 'campaign'
PACKAGE = Path(__file__).resolve().parents[4] / 'plugins' / 'plugin_utils' / 'report'
PNG_SUMS = 'png.sha256'
MATRIX = synth.ct200_matrix(tps=(1,), budgets=(16, 64), topks=(4,)) + [(2, 'autoregressive', {}), (2, 'dflash', {'num_draft_tokens': 16})]
DATASETS = ['gsm8k', 'spec-bench']
TEMPERATURES = [0.7]
FAULTS = {'tp2-dflash-n16': ('failed', 'the server did not become ready within 600 s')}
THROTTLED = {'tp1-dflash-n16': [(1, 2)]}


def make_golden(root):
    """The campaign 'golden' on host ct200 and the earlier 'golden-before' (one repeat, no energy) it is compared with."""
    synth.make_campaign(root, 'ct200', 'golden', MATRIX, datasets=DATASETS, temperatures=TEMPERATURES, repeats=3,
                        energy=True, throttled=THROTTLED, faults=FAULTS)
    synth.make_campaign(root, 'ct200', 'golden-before', MATRIX, datasets=DATASETS, temperatures=TEMPERATURES, seed=1)


@pytest.fixture(name='outputs', scope='module')
def fixture_outputs(tmp_path_factory):
    pytest.importorskip('matplotlib')
    root = tmp_path_factory.mktemp('golden') / 'results'
    make_golden(root)
    out = root.parent / 'report'
    generate(str(root), 'golden', str(out), compare_to='golden-before')
    return {path.name: path.read_bytes() for path in sorted(out.iterdir()) if path.is_file() and not path.name.startswith('.')}


def png_sums(outputs):
    return ''.join('%s  %s\n' % (hashlib.sha256(data).hexdigest(), name) for name, data in sorted(outputs.items())
                   if name.endswith('.png'))


def test_the_golden_files_are_written_when_asked(outputs):
    if os.environ.get('SPECDEC_REPORT_GOLDEN') != 'write':
        pytest.skip('SPECDEC_REPORT_GOLDEN=write rewrites the golden files')
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for old in GOLDEN.iterdir():
        old.unlink()
    for name, data in outputs.items():
        if not name.endswith('.png'):
            (GOLDEN / name).write_bytes(data)
    (GOLDEN / PNG_SUMS).write_text(png_sums(outputs))


def test_the_campaign_has_what_the_sections_need(outputs):
    """The golden campaign exercises the sections: datasets, repeats, energy, categories, comparison, plots."""
    md = outputs['report.md'].decode()
    for needle in ('## Datasets', '## Per dataset, in the papers\' layout', 'per category', '### Energy', '‡',
                   '### Where the time went', '### Not measured', '†'):
        assert needle in md
    assert 'compare-golden-before.md' in outputs and 'compare-golden-before.csv' in outputs
    assert len([name for name in outputs if name.endswith('.png')]) >= 5


def test_the_text_files_are_the_golden_ones(outputs):
    expected = sorted(path.name for path in GOLDEN.iterdir() if path.name != PNG_SUMS)
    assert sorted(name for name in outputs if not name.endswith('.png')) == expected
    for name in expected:
        assert outputs[name] == (GOLDEN / name).read_bytes(), '%s differs from golden/campaign/%s' % (name, name)


def test_the_plots_are_the_golden_ones(outputs):
    assert png_sums(outputs) == (GOLDEN / PNG_SUMS).read_text()


def test_each_file_of_the_report_package_is_under_500_lines():
    sizes = {path.name: len(path.read_text(encoding='utf-8').splitlines()) for path in PACKAGE.glob('*.py')}
    assert len(sizes) > 10 and not {name: size for name, size in sizes.items() if size >= 500}
