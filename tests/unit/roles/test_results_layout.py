"""The results layout is named in the results_dir role's defaults; bench_run writes two of its files itself."""
from pathlib import Path

import pytest
import yaml

from ansible_collections.specdec.bench.plugins.module_utils._harness import raw_file_name, result_file_name

ROOT = Path(__file__).resolve().parents[3]
LAYOUT = yaml.safe_load((ROOT / 'roles/results_dir/defaults/main.yml').read_text())['results_dir_layout']
SPEC = yaml.safe_load((ROOT / 'roles/results_dir/meta/argument_specs.yml').read_text())


@pytest.mark.parametrize('concurrency', [1, 4, 64])
def test_bench_run_writes_the_layouts_names(concurrency):
    assert LAYOUT['result'].format(concurrency=concurrency) == result_file_name(concurrency)
    assert LAYOUT['raw'].format(concurrency=concurrency) == raw_file_name(concurrency)


def test_argument_spec_defaults_are_the_layout():
    options = SPEC['argument_specs']['main']['options']['results_dir_layout']['options']
    assert {name: option['default'] for name, option in options.items()} == LAYOUT
