# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Grade a generated answer against a set's reference (controller side), and the intervals of the accuracies.

Why: a speculative method is lossless when it answers as autoregressive decoding does; its accuracy on the sets
with checkable answers (gsm8k, math500, humaneval, mbpp) is the measurable part of that claim.

Every grader is total on model output: a missing, empty or malformed text gives None or False, never an exception
(a reference that is not one of the set's is a data error and raises ValueError).

- extract_boxed(text) -> str | None: the content of the last closed \\boxed{...} (or \\fbox{...}), nested braces kept.
- last_number(text) -> str | None: the last number of the text, thousands commas removed.
- gsm8k_reference(answer) -> str, gsm8k_extract(text) -> str | None, gsm8k_correct(text, answer) -> bool.
  The DFlash/DDTree prompts ask for \\boxed{}; lm-evaluation-harness's gsm8k "flexible-extract" filter takes the last
  number of the text: so the boxed value where there is one, else the last number, compared as numbers.
- math_correct(text, answer) -> bool: HuggingFace math-verify (0.9.0), gold parse("$" + answer + "$"), pred parse(text)
  with its default extraction (LaTeX, \\boxed first, then plain expressions), verify(gold, pred).
- extract_code(text) -> str, humaneval_program(reference, text) -> str, mbpp_program(reference, text) -> str: the
  program that the sandbox (sandbox.run_program) runs, as openai/human-eval's check_correctness and google-research's
  mbpp README build it.
- wilson(successes, n, z) -> (low, high); newcombe_difference(s1, n1, s2, n2) -> (diff, low, high).
- grade(reference, text, execute=None) -> bool | None: dispatch on reference['kind'].

math_verify (and sympy under it) are imported inside math_correct only: ansible-test sanity imports this module in a
virtual environment without them.
"""

from __future__ import annotations

import logging
import math
import re
import threading
from decimal import Decimal, InvalidOperation

# 1.959963984540054 = the 0.975 quantile of the standard normal: a two-sided 95% interval.
Z95 = 1.959963984540054

# math-verify reads at most this many characters of a generated text: those ending at its last closed \\boxed{} (an
# output that goes on after its answer, as with ignore_eos, keeps it), else its last ones. Bounded because outside the
# main thread math-verify runs without its signal.alarm timeouts (see math_correct).
MAX_MATH_CHARS = 16384

# math-verify's own timeouts (seconds, its defaults), used where signal.alarm works: the main thread.
MATH_VERIFY_TIMEOUT_S = 5

KINDS = ('gsm8k', 'math500', 'humaneval', 'mbpp')

_BOXED_RE = re.compile(r'\\(?:boxed|fbox)\s*\{')
_NUMBER_RE = re.compile(r'-?\d+(?:,\d{3})*(?:\.\d+)?')
_FRAC_RE = re.compile(r'^(-?)\\[dt]?frac\{(-?\d+(?:\.\d+)?)\}\{(-?\d+(?:\.\d+)?)\}$')
_PLAIN_FRAC_RE = re.compile(r'^(-?\d+(?:\.\d+)?)/(-?\d+(?:\.\d+)?)$')
_CODE_LANGS = ('python', 'py', 'python3', '')


def _brace_pairs(text):
    """{index of '{': index of its closing '}'} for the closed groups of ``text``, in one pass (linear, so a text of
    many unclosed \\boxed{ costs no more than its length). A backslash escapes the next character: LaTeX's literal
    braces \\{ and \\} do not count.
    """
    pairs = {}
    opened = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == '\\':
            i += 2
            continue
        if char == '{':
            opened.append(i)
        elif char == '}' and opened:
            pairs[opened.pop()] = i
        i += 1
    return pairs


def _last_boxed_span(text):
    """(start, end) of the content of the last closed \\boxed{...} or \\fbox{...} of ``text`` (text[start:end]), or None."""
    matches = list(_BOXED_RE.finditer(text))
    if not matches:
        return None
    pairs = _brace_pairs(text)
    for match in reversed(matches):
        end = pairs.get(match.end() - 1)
        if end is not None:
            return (match.end(), end)
    return None


def extract_boxed(text):
    """The content (stripped) of the last closed \\boxed{...} or \\fbox{...} of ``text``; None if there is none.

    Braces inside are balanced (\\boxed{\\frac{1}{2}} gives \\frac{1}{2}). A last \\boxed{ that never closes (a cut
    output) is passed over for the one before it, which did close.
    """
    if not isinstance(text, str):
        return None
    span = _last_boxed_span(text)
    return text[span[0]:span[1]].strip() if span else None


def last_number(text):
    """The last number of ``text`` as a string ("1,234" -> "1234", "-3.50" -> "-3.50", "18." -> "18"); None if none.

    The same idea as lm-evaluation-harness's gsm8k "flexible-extract" filter (the last number of the output).
    """
    if not isinstance(text, str):
        return None
    numbers = _NUMBER_RE.findall(text)
    return numbers[-1].replace(',', '') if numbers else None


def _decimal(value):
    """``value`` (a string) as a Decimal, or None: a plain number, "1,234", "a/b" or \\frac{a}{b} (also \\dfrac)."""
    if not isinstance(value, str):
        return None
    cleaned = value.strip().strip('$').replace('\\$', '').replace('\\!', '').replace('\\,', '').replace(',', '')
    cleaned = cleaned.replace('\\%', '').replace('%', '').replace(' ', '')
    try:
        frac = _FRAC_RE.match(cleaned)
        if frac:
            result = Decimal(frac.group(2)) / Decimal(frac.group(3))
            return -result if frac.group(1) else result
        plain = _PLAIN_FRAC_RE.match(cleaned)
        if plain:
            return Decimal(plain.group(1)) / Decimal(plain.group(2))
        result = Decimal(cleaned)
    except (InvalidOperation, ZeroDivisionError, ArithmeticError):
        return None
    return result if result.is_finite() else None


def gsm8k_reference(answer):
    """The number after the last '#### ' of a GSM8K answer field (openai/grade-school-math), commas removed.

    Raises ValueError when there is none: the reference is data, not model output.
    """
    if not isinstance(answer, str) or '####' not in answer:
        raise ValueError('not a GSM8K answer (no "#### <number>"): %r' % (answer if not isinstance(answer, str) else answer[-80:]))
    number = last_number(answer.rsplit('####', 1)[1])
    if number is None:
        raise ValueError('GSM8K answer without a number after "####": %r' % answer[-80:])
    return number


def gsm8k_extract(text):
    """The answer of a generated GSM8K solution: the last \\boxed{} content if any (as a number where it reads as one,
    else the last number inside it, else as written), else the last number of the text; None if neither.
    """
    boxed = extract_boxed(text)
    if boxed is not None:
        value = _decimal(boxed)
        if value is not None:
            return _plain(value)
        inside = last_number(boxed)
        return inside if inside is not None else boxed
    return last_number(text)


def _plain(value):
    """A Decimal written without exponent or trailing zeros ("18.00" -> "18", "0.50" -> "0.5"); with its exponent
    where writing it out would be long (a model's "1e999999"), so a huge value costs no memory.
    """
    try:
        value = value.normalize()
    except ArithmeticError:
        return str(value)
    return format(value, 'f') if abs(value.adjusted()) <= 64 else str(value)


def gsm8k_correct(text, reference_answer):
    """True when the extracted answer of ``text`` equals the reference's '#### n' as a number (18 == 18.00).

    Raises ValueError only for a reference that is not a GSM8K answer field.
    """
    reference = _decimal(gsm8k_reference(reference_answer))
    predicted = _decimal(gsm8k_extract(text))
    if predicted is None or reference is None:
        return False
    return predicted == reference


class _DropTimeoutNotice(logging.Filter):
    """Drops math-verify's "Timeout is disabled" warning, logged on every call made without its timeouts."""

    def filter(self, record):
        return not str(record.msg).startswith('Timeout is disabled')


_QUIET = []


def _quiet_math_verify():
    """Install the filter once on math-verify's parser and grader loggers (a process-wide, idempotent change)."""
    if not _QUIET:
        for name in ('math_verify.parser', 'math_verify.grader'):
            logging.getLogger(name).addFilter(_DropTimeoutNotice())
        _QUIET.append(True)


def _math_window(text):
    """The part of ``text`` math-verify reads: all of it up to MAX_MATH_CHARS, else the MAX_MATH_CHARS characters
    ending at its last closed \\boxed{...}, else its last MAX_MATH_CHARS characters.
    """
    if len(text) <= MAX_MATH_CHARS:
        return text
    span = _last_boxed_span(text)
    if span is None:
        return text[-MAX_MATH_CHARS:]
    end = span[1] + 1
    return text[max(0, end - MAX_MATH_CHARS):end]


def math_correct(text, reference_answer):
    """True when math-verify (HuggingFace, 0.9.0) finds ``text``'s answer equal to the MATH-500 reference.

    gold = parse("$" + reference_answer + "$"), pred = parse(text) with math-verify's default extraction (LaTeX with
    \\boxed first, then plain expressions), verify(gold, pred). math-verify bounds its work with signal.alarm, which
    only the main thread may use: there its timeouts (MATH_VERIFY_TIMEOUT_S) stay on; in any other thread they are
    off (parsing_timeout=None, timeout_seconds=None), and in both cases at most MAX_MATH_CHARS characters of the text
    are read (_math_window), so a thread's work stays bounded by its input and the result does not depend on the
    thread; a caller that must bound the time too runs it in the main thread or a bounded child (bounded_child.py).
    Any exception from math-verify is False. ImportError (math-verify not installed) is raised: that is the controller's setup, not the
    answer.
    """
    if not isinstance(text, str) or not text.strip() or not isinstance(reference_answer, str) or not reference_answer.strip():
        return False
    try:
        from math_verify import parse, verify  # pylint: disable=import-outside-toplevel
    except ImportError as exc:
        raise ImportError('grading math500 needs math-verify 0.9.0 (pip install "math-verify==0.9.0"): %s' % exc) from exc
    main = threading.current_thread() is threading.main_thread()
    timeout = MATH_VERIFY_TIMEOUT_S if main else None
    if not main:
        _quiet_math_verify()
    try:
        gold = parse('$' + reference_answer + '$', parsing_timeout=timeout)
        pred = parse(_math_window(text), parsing_timeout=timeout)
        if not gold or not pred:
            return False
        return bool(verify(gold, pred, timeout_seconds=timeout))
    except Exception:  # pylint: disable=broad-except  # any failure of the checker is "not shown equal"
        return False


def _fenced_blocks(text):
    """[(language, content)] of the ``` fenced blocks of ``text``, in order; an unclosed last fence runs to the end."""
    blocks = []
    language = None
    lines = None
    for line in text.splitlines():
        stripped = line.strip()
        if lines is None:
            if stripped.startswith('```'):
                info = stripped[3:].strip().split()
                language = info[0].lower() if info else ''
                lines = []
        elif stripped.startswith('```'):
            blocks.append((language, '\n'.join(lines)))
            lines = None
        else:
            lines.append(line)
    if lines is not None:
        blocks.append((language, '\n'.join(lines)))
    return blocks


def extract_code(text):
    """The content of the last ```python (```py, ```python3 or bare ```) fenced block of ``text``; the whole text when
    it has no such block ('' for a missing text). Chat models answer the DFlash/DDTree code prompts in a fence.
    """
    if not isinstance(text, str):
        return ''
    blocks = [content for language, content in _fenced_blocks(text) if language in _CODE_LANGS]
    return blocks[-1] if blocks else text


def _defines(code, name):
    """True when ``code`` has a line defining function ``name`` (``def name(``, any indentation, async too)."""
    return re.search(r'^\s*(?:async\s+)?def\s+%s\s*\(' % re.escape(name), code, re.MULTILINE) is not None


def humaneval_program(reference, text):
    """The HumanEval check program of a generated text, after openai/human-eval human_eval/execution.py
    (check_correctness builds problem["prompt"] + completion + "\\n" + problem["test"] + "\\n" + "check(entry_point)").

    The prompt is always prepended: a completion-style body completes its stub, and a chat model's whole function
    (``def <entry_point>(``, after a blank line) redefines the stub, a valid function with its docstring alone, while
    the prompt's imports and helpers stay defined (HumanEval/10's is_palindrome); program = prompt + code + "\\n" +
    test + "\\n" + "check(<entry_point>)".
    """
    entry_point = reference['entry_point']
    code = extract_code(text)
    code = reference['prompt'] + ('\n' if _defines(code, entry_point) else '') + code
    return code + '\n' + reference['test'] + '\n' + 'check(%s)' % entry_point


def mbpp_program(reference, text):
    """The MBPP check program of a generated text, as google-research's mbpp/README.md evaluates: test_setup_code,
    the code, then the asserts of test_list (challenge_test_list is not run), one per line.
    """
    setup = reference.get('test_setup_code') or ''
    return setup + '\n' + extract_code(text) + '\n' + '\n'.join(reference['test_list'])


def _check_counts(successes, n):
    """ValueError unless 0 <= successes <= n are integers (bool excluded)."""
    for value in (successes, n):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError('counts must be integers: %r' % (value,))
    if n < 0 or successes < 0 or successes > n:
        raise ValueError('need 0 <= successes <= n: %r of %r' % (successes, n))


def wilson(successes, n, z=Z95):
    """The Wilson score interval (low, high) of a proportion successes/n (Wilson 1927, JASA 22:209; Newcombe 1998,
    Statistics in Medicine 17:857, method 3, no continuity correction); (None, None) when n == 0.

    (p + z^2/2n +- z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n): unlike the Wald interval it stays inside [0, 1] and
    is not empty at 0 or n successes, which matters for accuracies near 100%.
    """
    _check_counts(successes, n)
    if n == 0:
        return (None, None)
    p = successes / n
    z2 = z * z
    denominator = 1 + z2 / n
    center = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    low = 0.0 if successes == 0 else max(0.0, center - half)
    high = 1.0 if successes == n else min(1.0, center + half)
    return (low, high)


def newcombe_difference(s1, n1, s2, n2, z=Z95):
    """p1 - p2 of two independent proportions with Newcombe's hybrid score interval (Newcombe 1998, Statistics in
    Medicine 17:873, method 10): from the Wilson intervals (l1, u1), (l2, u2),
    low = d - sqrt((p1 - l1)^2 + (u2 - p2)^2), high = d + sqrt((u1 - p1)^2 + (p2 - l2)^2).
    (None, None, None) when n1 or n2 is 0.
    """
    _check_counts(s1, n1)
    _check_counts(s2, n2)
    if n1 == 0 or n2 == 0:
        return (None, None, None)
    p1 = s1 / n1
    p2 = s2 / n2
    l1, u1 = wilson(s1, n1, z)
    l2, u2 = wilson(s2, n2, z)
    diff = p1 - p2
    low = diff - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = diff + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return (diff, max(-1.0, low), min(1.0, high))


def grade(reference, text, execute=None):
    """Whether ``text`` answers ``reference`` (a references.jsonl record) correctly: dispatch on reference['kind'].

    gsm8k and math500 -> bool. humaneval and mbpp -> None when ``execute`` is None (the code was not run), else
    execute(program) -> bool; ``execute`` is the caller's sandbox runner (sandbox.run_program), whose result dict is
    also accepted (its 'passed'). ValueError for a reference of an unknown kind.
    """
    kind = reference.get('kind') if isinstance(reference, dict) else None
    if kind == 'gsm8k':
        return gsm8k_correct(text, reference['answer'])
    if kind == 'math500':
        return math_correct(text, reference['answer'])
    if kind in ('humaneval', 'mbpp'):
        if execute is None:
            return None
        program = humaneval_program(reference, text) if kind == 'humaneval' else mbpp_program(reference, text)
        result = execute(program)
        return bool(result.get('passed')) if isinstance(result, dict) else bool(result)
    raise ValueError('unknown reference kind %r (one of %s)' % (kind, ', '.join(KINDS)))
