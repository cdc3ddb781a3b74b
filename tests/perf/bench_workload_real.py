"""What a campaign's workload_prepare costs on the real upstream files: Spec-Bench (480) and GSM8K (1,319) fetched from
a filled dataset cache, normalized, templated with the Qwen3 chat template fixture (enable_thinking false), every
multi-turn record checked, the host prompts files written.

    .venv/bin/python tests/perf/bench_workload_real.py --cache DIR [--runs 5]

DIR is a filled dataset cache (DIR/spec-bench/question.jsonl, DIR/gsm8k/test.jsonl as downloaded: their sha256 must
be the table's). Each run copies them into a fresh cache, so nothing is reused between runs. Wall time, median of
--runs runs; tests/perf/bench_datasets.py measures the steps one by one on synthetic files of the same sizes.
"""
import argparse
import pathlib
import shutil
import statistics
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / 'tests' / 'unit'))
import conftest  # noqa: E402,F401  pylint: disable=unused-import,wrong-import-position  # makes the collection importable
from ansible_collections.specdec.bench.plugins.plugin_utils import workload  # noqa: E402  pylint: disable=wrong-import-position

SETS = (('spec-bench', 480), ('gsm8k', 1319))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--cache', required=True, help='a filled dataset cache')
    parser.add_argument('--runs', type=int, default=5)
    args = parser.parse_args()
    template_dir = REPO / 'tests' / 'fixtures' / 'chat-templates' / 'qwen3'
    files = {path.name: path.read_text(encoding='utf-8') for path in template_dir.iterdir()
             if path.name in (workload.TEMPLATE_FILE, workload.CONFIG_FILE)}
    entries = [{'name': name, 'num_prompts': count} for name, count in SETS]
    times, prepared = [], []
    for _run in range(args.runs):
        cache = tempfile.mkdtemp(prefix='specdec-bench-workload-')
        try:
            for name, _count in SETS:
                shutil.copytree(pathlib.Path(args.cache) / name, pathlib.Path(cache) / name)
            start = time.perf_counter()
            prepared = workload.prepare_workload(entries, files=files, chat_template_kwargs={'enable_thinking': False},
                                                 cache=cache)
            times.append(time.perf_counter() - start)
        finally:
            shutil.rmtree(cache)
    count = sum(item['count'] for item in prepared)
    median = statistics.median(times)
    print('| sets | prompts | median wall s (%d runs) | prompts/s |' % args.runs)
    print('| --- | ---: | ---: | ---: |')
    print('| %s | %d | %.3f | %.0f |' % (' + '.join(name for name, _count in SETS), count, median, count / median))
    for item in prepared:
        print('%s: %d prompts, source sha256 %s, pinned %s' % (item['name'], item['count'], item['source_sha256'], item['pinned']))


if __name__ == '__main__':
    main()
