"""Time to prepare 480 Spec-Bench-shaped and 1,319 GSM8K-shaped prompts on the controller (real workloads' benchmark).

    .venv/bin/python tests/perf/bench_datasets.py [--runs 5] [--keep DIR]

The files are synthetic, in the upstream formats and of the upstream sizes (Spec-Bench's question.jsonl: 480 lines,
80 MT-Bench two-turn questions then 5 x 80 single-turn ones, about 1,450 bytes a line; GSM8K's test.jsonl: 1,319
lines of question and answer, about 570 bytes a line), written into a temporary folder with a fixed seed.

  normalize  datasets.normalize() of the file's bytes: parse, check every line, build the normalized JSONL, sha256
  prepare    datasets.prepare() of a file entry: read the file, normalize, write the normalized file into a cache
  template   chat_template.render() of every normalized record's turns (as user messages) with the Qwen3 template
             fixture, enable_thinking false; the column is left out while plugins/plugin_utils/chat_template.py is
             absent

Medians of --runs runs, in-process (the imports are not counted), CPU time of the process (the machine is shared;
the work is single-threaded), with prompts per second.
"""
import argparse
import json
import os
import pathlib
import random
import statistics
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / 'tests' / 'unit'))
import conftest  # noqa: E402,F401  pylint: disable=unused-import,wrong-import-position  # makes the collection importable
from ansible_collections.specdec.bench.plugins.plugin_utils import datasets  # noqa: E402  pylint: disable=wrong-import-position

try:
    from ansible_collections.specdec.bench.plugins.plugin_utils import chat_template  # pylint: disable=wrong-import-position
except ImportError:
    chat_template = None

TEMPLATE_MODEL = REPO / 'tests' / 'fixtures' / 'chat-templates' / 'qwen3'
MT_BENCH = ('writing', 'roleplay', 'reasoning', 'math', 'coding', 'extraction', 'stem', 'humanities')
SPEC_ONLY = ('translation', 'summarization', 'qa', 'math_reasoning', 'rag')
WORDS = ('the of and to in a is that for it as was with be by on not he this are or his from at which but have an they '
         'you were her she there been one all we their has would when if so no what up out who them some could him '
         'into its then two more these time only new about also than very how many first did our most over such '
         'through after before where under while number sum train river bridge museum garden market').split()


def sentence(rng, words):
    return ' '.join(rng.choice(WORDS) for _index in range(words)).capitalize() + '.'


def spec_bench_file(path, rng):
    """480 lines as hemingkx/Spec-Bench data/spec_bench/question.jsonl lays them out."""
    with open(path, 'w', encoding='utf-8') as handle:
        question = 81
        for category in MT_BENCH:
            for _index in range(10):
                turns = [sentence(rng, rng.randint(20, 120)), sentence(rng, rng.randint(10, 40))]
                handle.write(json.dumps({'question_id': question, 'category': category, 'turns': turns}) + '\n')
                question += 1
        for category in SPEC_ONLY:
            for _index in range(80):
                turns = [sentence(rng, rng.randint(30, 600))]
                handle.write(json.dumps({'question_id': question, 'category': category, 'turns': turns,
                                         'reference': [sentence(rng, 20)]}) + '\n')
                question += 1


def gsm8k_file(path, rng):
    """1,319 lines as openai/grade-school-math grade_school_math/data/test.jsonl lays them out."""
    with open(path, 'w', encoding='utf-8') as handle:
        for _index in range(1319):
            answer = '\n'.join('%d * %d = <<%d*%d=%d>>%d' % ((a, b) * 2 + (a * b,) * 2)
                               for a, b in ((rng.randint(2, 99), rng.randint(2, 99)) for _index in range(3)))
            handle.write(json.dumps({'question': sentence(rng, rng.randint(25, 90)),
                                     'answer': answer + '\n#### %d' % rng.randint(1, 999)}) + '\n')


def median_time(runs, work):
    """The median CPU time of `work` over `runs` runs (CPU time: what other work on a shared machine does not inflate)."""
    times = []
    for _index in range(runs):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--runs', type=int, default=5)
    parser.add_argument('--keep', help='write the synthetic files and the cache here and keep them')
    args = parser.parse_args()
    folder = args.keep or tempfile.mkdtemp(prefix='bench-datasets-')
    os.makedirs(folder, exist_ok=True)
    rng = random.Random(15)
    files = {'spec-bench': os.path.join(folder, 'question.jsonl'), 'gsm8k': os.path.join(folder, 'test.jsonl')}
    spec_bench_file(files['spec-bench'], rng)
    gsm8k_file(files['gsm8k'], rng)
    sources = datasets.load_sources()
    template = tokens = None
    if chat_template is not None and TEMPLATE_MODEL.is_dir():
        templates, tokens = chat_template.load_model_template(str(TEMPLATE_MODEL))
        template = chat_template.pick_template(templates)

    rows = []
    for name in ('spec-bench', 'gsm8k'):
        with open(files[name], 'rb') as handle:
            data = handle.read()
        fmt = sources[name]['format']
        category = sources[name].get('category')
        made = datasets.normalize(data, name, fmt=fmt, category=category)
        entry = datasets.validate_entry({'name': name + '-file', 'file': files[name]}, {}, 'bench')
        cache = os.path.join(folder, 'cache')
        row = {'set': name, 'prompts': made['count'], 'bytes': len(data),
               'normalize': median_time(args.runs, lambda d=data, f=fmt, c=category: datasets.normalize(d, name, fmt=f, category=c)),
               'prepare': median_time(args.runs, lambda e=entry, c=cache: datasets.prepare(e, cache=c))}
        if template is not None:
            records = [json.loads(line) for line in made['data'].splitlines()]

            def render_all(records=records):
                for record in records:
                    chat_template.render(template, [{'role': 'user', 'content': turn} for turn in record['turns']],
                                         tokens, {'enable_thinking': False})
            render_all()  # the template is compiled once per process, as transformers caches it too
            row['template'] = median_time(args.runs, render_all)
        rows.append(row)
    total = {'set': 'both', 'prompts': sum(r['prompts'] for r in rows), 'bytes': sum(r['bytes'] for r in rows)}
    for column in ('normalize', 'prepare', 'template'):
        if all(column in r for r in rows):
            total[column] = sum(r[column] for r in rows)
    rows.append(total)

    columns = [c for c in ('normalize', 'prepare', 'template') if c in total]
    if template is not None:
        what = 'template: Qwen3 fixture, enable_thinking false'
    else:
        what = 'no template column: plugins/plugin_utils/chat_template.py is absent'
    print('CPU time, median of %d runs; %s' % (args.runs, what))
    header = '| set | prompts | MB |' + ''.join(' %s ms | %s prompts/s |' % (c, c) for c in columns)
    print(header)
    print('|' + '---|' * (3 + 2 * len(columns)))
    for row in rows:
        cells = ['%s' % row['set'], '%d' % row['prompts'], '%.2f' % (row['bytes'] / 1e6)]
        for column in columns:
            cells += ['%.1f' % (row[column] * 1e3), '{:,.0f}'.format(row['prompts'] / row[column])]
        print('| ' + ' | '.join(cells) + ' |')
    if not args.keep:
        import shutil
        shutil.rmtree(folder)


if __name__ == '__main__':
    main()
