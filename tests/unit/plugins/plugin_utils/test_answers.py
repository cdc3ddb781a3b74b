# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""plugin_utils/answers.py: extraction, the four graders on real upstream records, and the Wilson/Newcombe intervals.

The records are upstream lines kept in tests/fixtures/answers (its README says where each came from); the generated
texts are written here the way chat models answer the DFlash/DDTree prompts (boxed, unboxed, several numbers, LaTeX
variants, fenced code, wrong answers). The check programs of the code sets run here with this interpreter: they hold
only the upstream canonical solutions and the hand-written answers below, never model output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from ansible_collections.specdec.bench.plugins.plugin_utils import answers

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'answers')


def _lines(name):
    with open(os.path.join(FIXTURES, name), encoding='utf-8') as handle:
        return [json.loads(line) for line in handle if line.strip()]


GSM8K = [{'id': 'gsm8k-%d' % i, 'kind': 'gsm8k', 'answer': r['answer']} for i, r in enumerate(_lines('gsm8k-test.jsonl'))]
MATH500 = [{'id': 'math500-%d' % i, 'kind': 'math500', 'answer': r['answer']} for i, r in enumerate(_lines('math500.jsonl'))]
HUMANEVAL = {r['task_id']: r for r in _lines('HumanEval.jsonl')}
MBPP = {r['task_id']: r for r in _lines('mbpp.jsonl')}


def _humaneval_reference(task_id):
    record = HUMANEVAL[task_id]
    return {'id': task_id, 'kind': 'humaneval', 'prompt': record['prompt'], 'test': record['test'], 'entry_point': record['entry_point']}


def _mbpp_reference(task_id):
    record = MBPP[task_id]
    return {'id': 'mbpp-%d' % task_id, 'kind': 'mbpp', 'test_list': record['test_list'], 'test_setup_code': record['test_setup_code'],
            'challenge_test_list': record['challenge_test_list']}


def _runs(program):
    """True when the (trusted) program exits 0 under this interpreter."""
    done = subprocess.run([sys.executable, '-I', '-'], input=program.encode(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60, check=False)
    return done.returncode == 0


# --- extraction -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('text, expected', [
    (r'so the answer is $\boxed{18}$.', '18'),
    (r'\boxed{\frac{1}{2}}', r'\frac{1}{2}'),
    (r'first \boxed{3} then \fbox{ 4 }', '4'),
    (r'\boxed{\left( 3, \frac{\pi}{2} \right)}', r'\left( 3, \frac{\pi}{2} \right)'),
    (r'the set \boxed{\{1, 2\}}', r'\{1, 2\}'),
    (r'\boxed{5} and a cut one \boxed{\frac{1}{', '5'),
    ('no box here: 42', None),
    ('', None),
    (None, None),
    (17, None),
])
def test_extract_boxed_takes_the_last_closed_box_with_its_nested_braces(text, expected):
    assert answers.extract_boxed(text) == expected


@pytest.mark.parametrize('text, expected', [
    ('He made $1,234 in total', '1234'),
    ('a loss of -3.50 dollars', '-3.50'),
    ('So the answer is 18.', '18'),
    ('3 apples, 4 pears and 12,000,000 ants', '12000000'),
    ('no digits', None),
    (None, None),
])
def test_last_number(text, expected):
    assert answers.last_number(text) == expected


def test_extract_code_takes_the_last_python_fence_else_the_whole_text():
    two = "First try:\n```python\ndef f():\n    return 1\n```\nBetter:\n```py\ndef f():\n    return 2\n```\nDone."
    assert answers.extract_code(two) == 'def f():\n    return 2'
    bare = "```\nx = 1\n```"
    assert answers.extract_code(bare) == 'x = 1'
    shell_after = "```python\nx = 1\n```\nRun it with\n```bash\npython x.py\n```"
    assert answers.extract_code(shell_after) == 'x = 1'
    assert answers.extract_code("```python\nx = 1\ny = 2") == 'x = 1\ny = 2'  # cut before the closing fence
    assert answers.extract_code('    return a + b\n') == '    return a + b\n'
    assert answers.extract_code(None) == ''


# --- gsm8k ------------------------------------------------------------------------------------------------------

def test_gsm8k_reference_reads_the_number_after_the_hashes_of_the_upstream_answers():
    assert [answers.gsm8k_reference(r['answer']) for r in GSM8K] == ['18', '3', '70000']
    assert answers.gsm8k_reference('blah\n#### 1,234') == '1234'
    for bad in ('no hashes 12', '#### none', None):
        with pytest.raises(ValueError):
            answers.gsm8k_reference(bad)


@pytest.mark.parametrize('text, right', [
    ('Janet sells 16 - 3 - 4 = 9 eggs and makes 9 * 2 = 18 dollars.\nThe final answer is $\\boxed{18}$.', True),
    ('She makes $18 every day.', True),
    ('Eggs: 16 - 3 - 4 = 9. Each is $2, so 9 * 2 = 18. \\boxed{18} (that is 2 dollars per egg)', True),
    ('\\boxed{18.00}', True),
    ('\\boxed{\\$18}', True),
    ('\\boxed{18 \\text{ dollars}}', True),
    ('9 * 2 = 18, so the answer is 19.', False),
    ('\\boxed{19}', False),
    ('', False),
    (None, False),
])
def test_gsm8k_correct_on_model_like_outputs(text, right):
    assert answers.gsm8k_correct(text, GSM8K[0]['answer']) is right


def test_gsm8k_thousands_commas_and_the_reference_with_commas_in_its_working():
    josh = GSM8K[2]['answer']
    assert answers.gsm8k_correct('The profit is $\\boxed{70,000}$.', josh)
    assert answers.gsm8k_correct('So he made a profit of 200,000-130,000 = $70,000.', josh)
    assert answers.gsm8k_correct('\\boxed{70000}', josh)
    assert not answers.gsm8k_correct('\\boxed{7,000}', josh)
    assert answers.gsm8k_extract('1,000 of them, so \\boxed{1,000}') == '1000'
    assert answers.gsm8k_extract('\\boxed{\\frac{1}{2}}') == '0.5'


# --- math500 ----------------------------------------------------------------------------------------------------

MATH_CASES = [
    (0, 'The point is at distance $r = 3$ and angle $\\frac{\\pi}{2}$, so $\\boxed{\\left(3, \\frac{\\pi}{2}\\right)}$.', True),
    (0, '$\\boxed{(3,\\pi/2)}$', True),
    (0, '$\\boxed{(3, \\pi)}$', False),
    (1, 'Counting pairs gives $\\boxed{p - q}$.', True),
    (1, '$\\boxed{q - p}$', False),
    (2, 'So $f(-2)+f(-1)+f(0) = \\boxed{\\dfrac{14}{3}}$.', True),
    (2, 'The answer is 14/3', True),
    (2, '$\\boxed{4}$', False),
    (3, 'There are 3 * 3 = 9 divisors, so \\boxed{9}.', True),
    (3, '$196 = 2^2 \\cdot 7^2$, giving $\\boxed{6}$', False),
    (3, '', False),
    (3, None, False),
]


@pytest.mark.parametrize('index, text, right', MATH_CASES)
def test_math_correct_on_the_math500_answers(index, text, right):
    assert answers.math_correct(text, MATH500[index]['answer']) is right


def test_the_upstream_math500_solution_grades_right_against_its_own_answer():
    upstream = _lines('math500-prm800k-first.jsonl')[0]
    assert upstream['answer'] == MATH500[0]['answer'] and upstream['unique_id'] == 'test/precalculus/807.json'
    assert answers.extract_boxed(upstream['solution']) == upstream['answer']
    assert answers.math_correct(upstream['solution'], upstream['answer'])
    assert not answers.math_correct(upstream['solution'], MATH500[2]['answer'])


def test_math_correct_fraction_against_decimal():
    # A constructed reference (MATH-500 has \frac{1}{2}-style answers): \frac vs 0.5 vs \dfrac, and a wrong value.
    assert answers.math_correct('\\boxed{0.5}', '\\frac{1}{2}')
    assert answers.math_correct('\\boxed{\\dfrac12}', '\\frac{1}{2}')
    assert not answers.math_correct('\\boxed{0.6}', '\\frac{1}{2}')


def test_math_correct_gives_the_same_answers_in_another_thread():
    # math-verify's timeouts use signal.alarm, which raises outside the main thread: there they are off.
    expected = [answers.math_correct(text, MATH500[index]['answer']) for index, text, _right in MATH_CASES]
    got = []
    worker = threading.Thread(target=lambda: got.append([answers.math_correct(text, MATH500[index]['answer']) for index, text, _right in MATH_CASES]))
    worker.start()
    worker.join(120)
    assert got == [expected]
    assert expected == [case[2] for case in MATH_CASES]


def test_math_correct_reads_a_bounded_window_ending_at_the_last_box():
    filler = ' the' * answers.MAX_MATH_CHARS  # an output that goes on after its answer (ignore_eos)
    assert answers.math_correct('So the answer is $\\boxed{9}$.' + filler, '9')
    assert not answers.math_correct('$\\boxed{7}$' + filler + ' so it is $\\boxed{8}$', '7')
    assert answers.math_correct('$\\boxed{7}$' + filler + ' so it is $\\boxed{8}$', '8')
    assert not answers.math_correct('9 ' + 'x' * answers.MAX_MATH_CHARS, '9')  # no box: only the tail is read


def test_extraction_is_linear_and_a_huge_number_costs_nothing():
    started = time.monotonic()
    assert answers.extract_boxed('\\boxed{' * 200000) is None
    assert answers.gsm8k_correct('\\boxed{' * 200000, GSM8K[0]['answer']) is False
    assert time.monotonic() - started < 5
    assert answers.gsm8k_extract('\\boxed{1e999999999}') == '1E+999999999'
    assert answers.gsm8k_correct('\\boxed{1e999999999}', GSM8K[0]['answer']) is False
    assert answers.gsm8k_correct('\\boxed{1.8e1}', GSM8K[0]['answer']) is True


def test_math_correct_is_false_when_math_verify_raises(monkeypatch):
    import math_verify  # pylint: disable=import-outside-toplevel

    def boom(*_args, **_kwargs):
        raise RuntimeError('checker failure')
    monkeypatch.setattr(math_verify, 'verify', boom)
    assert answers.math_correct('\\boxed{9}', '9') is False


def test_math_correct_on_garbage_never_raises():
    for text in ('\\boxed{', '$$$$\\frac{', '}' * 50 + '{' * 50, '\\boxed{\\sqrt{\\sqrt{\\sqrt{}}}}', '\x00\xff'):
        assert answers.math_correct(text, '9') is False


# --- code -------------------------------------------------------------------------------------------------------

def test_humaneval_program_is_the_upstream_check_program_for_a_completion():
    ref = _humaneval_reference('HumanEval/2')
    body = HUMANEVAL['HumanEval/2']['canonical_solution']
    program = answers.humaneval_program(ref, body)
    # openai/human-eval execution.py: problem["prompt"] + completion + "\n" + problem["test"] + "\n" + f"check({entry_point})"
    assert program == ref['prompt'] + body + '\n' + ref['test'] + '\n' + 'check(truncate_number)'
    assert _runs(program)


@pytest.mark.parametrize('task_id', sorted(HUMANEVAL))
def test_humaneval_whole_function_in_a_fence_passes_and_a_wrong_one_fails(task_id):
    record = HUMANEVAL[task_id]
    ref = _humaneval_reference(task_id)
    right = 'Here is the solution:\n```python\n%s%s```\nIt loops over the input.' % (record['prompt'], record['canonical_solution'])
    program = answers.humaneval_program(ref, right)
    assert program.startswith(ref['prompt']) and program.count('def %s(' % ref['entry_point']) == 2  # the stub, then the model's
    assert _runs(program)
    wrong = '```python\n%s    return None\n```' % record['prompt']
    assert not _runs(answers.humaneval_program(ref, wrong))


@pytest.mark.parametrize('task_id', sorted(MBPP))
def test_mbpp_program_runs_the_test_list_after_the_code(task_id):
    record = MBPP[task_id]
    ref = _mbpp_reference(task_id)
    program = answers.mbpp_program(ref, '```python\n%s\n```' % record['code'])
    assert program.endswith('\n'.join(record['test_list']))
    for challenge in record['challenge_test_list']:
        assert challenge not in program
    assert _runs(program)
    name = record['test_list'][0].split('assert ', 1)[1].split('(', 1)[0].strip()
    assert not _runs(answers.mbpp_program(ref, '```python\ndef %s(*args):\n    return None\n```' % name))


# --- intervals --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('successes, n, low, high', [
    # Newcombe (1998a), Statistics in Medicine 17:857, Table I, method 3 (Wilson score, no continuity correction).
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0000, 0.1611),
    (1, 29, 0.0061, 0.1718),
    (0, 10, 0.0000, 0.2775),
])
def test_wilson_matches_newcombe_table_one(successes, n, low, high):
    got = answers.wilson(successes, n)
    assert got == (pytest.approx(low, abs=5e-5), pytest.approx(high, abs=5e-5))


def test_wilson_edges():
    assert answers.wilson(0, 0) == (None, None)
    low, high = answers.wilson(10, 10)
    assert high == 1.0 and 0 < low < 1
    low, high = answers.wilson(50, 100)
    assert low < 0.5 < high and low == pytest.approx(1 - high)
    wide = answers.wilson(50, 100, z=2.5758293035489)
    assert wide[0] < low and wide[1] > high
    for bad in ((3, 2), (-1, 5), (1.0, 2), (True, 2)):
        with pytest.raises(ValueError):
            answers.wilson(*bad)


@pytest.mark.parametrize('counts, low, high', [
    # Newcombe (1998b), Statistics in Medicine 17:873, Table II, method 10 (hybrid score, no continuity correction).
    ((56, 70, 48, 80), 0.0524, 0.3339),
    ((9, 10, 3, 10), 0.1705, 0.8090),
    ((5, 56, 0, 29), -0.0381, 0.1926),
    ((0, 10, 0, 20), -0.1611, 0.2775),
    ((0, 10, 0, 10), -0.2775, 0.2775),
    ((10, 10, 0, 20), 0.6791, 1.0000),
])
def test_newcombe_difference_matches_newcombe_table_two(counts, low, high):
    diff, got_low, got_high = answers.newcombe_difference(*counts)
    assert diff == pytest.approx(counts[0] / counts[1] - counts[2] / counts[3])
    assert (got_low, got_high) == (pytest.approx(low, abs=5e-5), pytest.approx(high, abs=5e-5))


def test_newcombe_difference_edges():
    assert answers.newcombe_difference(0, 0, 3, 5) == (None, None, None)
    assert answers.newcombe_difference(3, 5, 0, 0) == (None, None, None)
    diff, low, high = answers.newcombe_difference(64, 128, 64, 128)
    assert diff == 0 and low == pytest.approx(-high) and low < 0 < high
    with pytest.raises(ValueError):
        answers.newcombe_difference(6, 5, 1, 5)


# --- grade ------------------------------------------------------------------------------------------------------

def test_grade_dispatches_on_the_kind():
    assert answers.grade(GSM8K[1], 'It takes 2 + 1 = \\boxed{3} bolts.') is True
    assert answers.grade(GSM8K[1], 'It takes \\boxed{4} bolts.') is False
    assert answers.grade(MATH500[2], '\\boxed{\\frac{14}{3}}') is True
    assert answers.grade(MATH500[2], None) is False
    humaneval = _humaneval_reference('HumanEval/13')
    mbpp = _mbpp_reference(2)
    assert answers.grade(humaneval, 'anything') is None
    assert answers.grade(mbpp, 'anything') is None
    seen = []

    def execute(program):
        seen.append(program)
        return program.endswith('check(greatest_common_divisor)')
    assert answers.grade(humaneval, '    return 1\n', execute=execute) is True
    assert answers.grade(mbpp, 'x', execute=execute) is False
    assert seen[0].startswith(humaneval['prompt'] + '    return 1\n') and seen[1].endswith(mbpp['test_list'][-1])
    assert answers.grade(mbpp, 'x', execute=lambda program: {'passed': True, 'returncode': 0}) is True
    with pytest.raises(ValueError):
        answers.grade({'kind': 'mt-bench'}, 'text')
