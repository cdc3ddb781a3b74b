# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Write tests/sim/answers/answers.json: what the SGLang emulator answers to the demo's graded prompts. TEST-ONLY.

    python3 tests/sim/answers/make_answers.py            # (re)write answers.json beside this file
    python3 tests/sim/answers/make_answers.py --check    # exit 1 when answers.json is not what this writes

From campaigns/prompts/demo-{gsm8k,math500,humaneval,mbpp}.jsonl (their upstream formats), one entry per record:
{"needle": the record's text as it appears in the prompt the campaign sends (gsm8k's question, math500's problem,
humaneval's prompt, mbpp's text: plugins/plugin_utils/datasets.py embeds each verbatim), "right": an answer its
grader accepts, "wrong": one it refuses}:
- gsm8k: the reference's steps (calculator annotations <<...>> dropped) and "The final answer is \\boxed{n}." with n
  the number after '#### ' (the DFlash/DDTree prompt asks for \\boxed{}); wrong: n + 1 in the box;
- math500: "The answer is $\\boxed{<answer>}$."; wrong: an integer answer + 1, another answer with "+1" appended;
- humaneval: "```python\\n<prompt + canonical_solution>\\n```" (openai/human-eval's completion of the prompt);
  wrong: the prompt with a body that returns None;
- mbpp: "```python\\n<code>\\n```" (google-research mbpp's reference code); wrong: its first def returning None.
"accuracy" is {"default": 1.0}: the emulated model answers every demo prompt right with every method, as a lossless
method answers what autoregressive decoding answers and the demo's prompts are easy. These are figures made up for
tests, not a model's: a test that wants errors writes its own accuracy (e.g. {"default": 1.0, "dflash": 0.0}).
Python 3 standard library only.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from decimal import Decimal, InvalidOperation
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
PROMPTS = REPO / "campaigns" / "prompts"
OUTPUT = HERE / "answers.json"
SETS = ("gsm8k", "math500", "humaneval", "mbpp")
NOTE = ("TEST-ONLY: what the SGLang emulator (tests/sim/sglang_emulator) answers to the demo prompts of "
        "campaigns/prompts, written by tests/sim/answers/make_answers.py. The texts and the accuracy are made up for "
        "tests, not any model's: accuracy[method] (else default) is the chance a method's output begins with the "
        "right text.")
_CALCULATOR = re.compile(r"<<[^>]*>>")


def read_jsonl(path: Path) -> list:
    """The records of a JSON Lines file (blank lines skipped)."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def fence(code: str) -> str:
    """A Python code block as a chat model writes one."""
    return "```python\n%s\n```" % code.rstrip("\n")


def plus_one(number: str) -> str:
    """number + 1, written as plainly as the number was (Decimal keeps "2.50" as 3.50)."""
    return str(Decimal(number) + 1)


def gsm8k_entry(record: dict) -> dict:
    """A GSM8K record's entry: its reference's steps, then the number after '#### ' boxed (n + 1 when wrong)."""
    steps, _sep, final = record["answer"].rpartition("####")
    number = final.strip().replace(",", "")
    work = _CALCULATOR.sub("", steps).strip()
    text = "%s\nThe final answer is \\boxed{%s}."
    return {"needle": record["question"], "right": text % (work, number), "wrong": text % (work, plus_one(number))}


def math_wrong(answer: str) -> str:
    """An answer math-verify does not take for ``answer``: the integer after it, else the answer plus one."""
    try:
        return plus_one(answer) if re.fullmatch(r"-?\d+", answer.strip()) else answer + "+1"
    except InvalidOperation:
        return answer + "+1"


def math500_entry(record: dict) -> dict:
    """A MATH-500 record's entry: its answer boxed (another one when wrong)."""
    text = "Working through the problem step by step gives the result.\nThe answer is $\\boxed{%s}$."
    return {"needle": record["problem"], "right": text % record["answer"], "wrong": text % math_wrong(record["answer"])}


def humaneval_entry(record: dict) -> dict:
    """A HumanEval record's entry: the prompt completed by its canonical solution (a body returning None when
    wrong), in a code block."""
    prompt = record["prompt"]
    return {"needle": prompt, "right": fence(prompt + record["canonical_solution"]),
            "wrong": fence(prompt + "    return None\n")}


def mbpp_entry(record: dict) -> dict:
    """An MBPP record's entry: its reference code (its first function returning None when wrong), in a code block."""
    code = record["code"].replace("\r\n", "\n")
    header = next(line for line in code.splitlines() if line.startswith("def "))
    return {"needle": record["text"], "right": fence(code), "wrong": fence(header + "\n    return None\n")}


ENTRY = {"gsm8k": gsm8k_entry, "math500": math500_entry, "humaneval": humaneval_entry, "mbpp": mbpp_entry}


def build(prompts: Path = PROMPTS) -> dict:
    """The answers file's content for the demo prompt files in ``prompts``."""
    answers = []
    for name in SETS:
        answers.extend(ENTRY[name](record) for record in read_jsonl(prompts / ("demo-%s.jsonl" % name)))
    return {"note": NOTE, "accuracy": {"default": 1.0}, "answers": answers}


def render(doc: dict) -> str:
    """The file's text: indented JSON, UTF-8 as it is, one final newline."""
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when answers.json is not current")
    args = parser.parse_args(argv)
    text = render(build())
    if args.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print("%s is not current: run %s" % (OUTPUT, Path(__file__).name), file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print("wrote %s (%d answers)" % (OUTPUT, len(json.loads(text)["answers"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
