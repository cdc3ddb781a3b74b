"""The SGLang emulator's answers (tests/sim/answers, SIM_SGLANG_ANSWERS) and its lossy fault (SIM_SGLANG_FAULT=lossy).

The answer tokens, the lossy ids and the answers file are checked as pure functions; the demo prompt files' grading
fields and the generated answers.json against plain python3 and make_answers.py; the behaviour end to end against
emulator processes on 127.0.0.1, started as tests/unit/sim/test_sglang_emulator.py starts them.
"""

import json
import queue
import re
import subprocess
import sys
from pathlib import Path

import pytest

from test_sglang_emulator import Emulator, generate  # noqa: E402  pylint: disable=import-error
from sglang import _sim_engine as sim_engine  # noqa: E402  (test_sglang_emulator put the emulator on sys.path)
from sglang import _sim_model as sim_model  # noqa: E402
from sglang import _sim_server as sim_server  # noqa: E402
from simtools import load_module  # noqa: E402  pylint: disable=import-error

from ansible_collections.specdec.bench.plugins.plugin_utils import datasets  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
PROMPTS = REPO / "campaigns" / "prompts"
ANSWERS_JSON = REPO / "tests" / "sim" / "answers" / "answers.json"
make_answers = load_module("sim_make_answers", REPO / "tests" / "sim" / "answers" / "make_answers.py")
DFLASH = ["--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", "z-lab/Qwen3.6-27B-DFlash",
          "--speculative-num-draft-tokens", "16"]
EOS = 151645  # Qwen's <|im_end|>: the emulator's EOS for a Qwen name with no model folder
LOSSY_AFTER = 12


def records(name):
    return make_answers.read_jsonl(PROMPTS / ("demo-%s.jsonl" % name))


def run_python(source):
    """python3's exit status on a program read from stdin (the demo's own code only: no sandbox needed)."""
    return subprocess.run([sys.executable, "-I", "-"], input=source.encode(), capture_output=True, timeout=60, check=False).returncode


def code_of(text):
    return re.search(r"```python\n(.*?)```", text, re.S).group(1)


# --------------------------------------------------------------------------------------------
# the demo prompt files and answers.json
# --------------------------------------------------------------------------------------------

def humaneval_program(record, code):
    """openai/human-eval's check_program: the completed prompt, the test, check(entry_point)."""
    return code + "\n" + record["test"] + "\n" + "check(%s)" % record["entry_point"]


def mbpp_program(record, code):
    """google-research mbpp's evaluation: the setup, the code, then the asserts of test_list."""
    return record["test_setup_code"] + "\n" + code + "\n" + "\n".join(record["test_list"])


@pytest.mark.parametrize("record", records("humaneval"), ids=lambda r: r["task_id"])
def test_the_demo_humaneval_solutions_pass_their_tests(record):
    assert record["test"].lstrip().startswith("METADATA = {}") and "def check(candidate):" in record["test"]
    assert run_python(humaneval_program(record, record["prompt"] + record["canonical_solution"])) == 0
    assert run_python(humaneval_program(record, record["prompt"] + "    return None\n")) != 0  # the tests can fail


@pytest.mark.parametrize("record", records("mbpp"), ids=lambda r: r["task_id"])
def test_the_demo_mbpp_code_passes_its_tests(record):
    assert record["test_setup_code"] == "" and record["challenge_test_list"] == [] and len(record["test_list"]) == 3
    assert run_python(mbpp_program(record, record["code"])) == 0


def test_the_demo_prompts_sent_are_unchanged_by_the_grading_fields():
    """Only the fields the prompt is made of go into it: the records with their grading fields removed normalize to
    the same prompts."""
    for name, extra in (("humaneval", ("canonical_solution", "test")),
                        ("mbpp", ("code", "test_setup_code", "challenge_test_list"))):
        full = (PROMPTS / ("demo-%s.jsonl" % name)).read_text()
        bare = "".join(json.dumps({k: v for k, v in json.loads(line).items() if k not in extra}) + "\n"
                       for line in full.splitlines())
        records_full, fmt = datasets.parse(full.encode(), name)
        records_bare, _fmt = datasets.parse(bare.encode(), name)
        assert fmt == name and [r["turns"] for r in records_full] == [r["turns"] for r in records_bare]
        assert all(r["reference"] is not None for r in records_full)  # graded as the upstream set is


def test_answers_json_is_current():
    assert ANSWERS_JSON.read_text(encoding="utf-8") == make_answers.render(make_answers.build())
    assert make_answers.main(["--check"]) == 0


def test_answers_json_holds_a_right_and_a_wrong_answer_per_graded_demo_prompt():
    doc = json.loads(ANSWERS_JSON.read_text(encoding="utf-8"))
    assert doc["note"].startswith("TEST-ONLY") and doc["accuracy"] == {"default": 1.0}
    entries = {entry["needle"]: entry for entry in doc["answers"]}
    for record in records("gsm8k"):
        entry, number = entries[record["question"]], record["answer"].split("####")[1].strip()
        assert entry["right"].endswith("The final answer is \\boxed{%s}." % number)
        assert entry["wrong"].endswith("The final answer is \\boxed{%d}." % (int(number) + 1))
    for record in records("math500"):
        entry = entries[record["problem"]]
        assert "\\boxed{%s}" % record["answer"] in entry["right"] and "\\boxed{%s}" % record["answer"] not in entry["wrong"]
    for record in records("humaneval"):
        entry = entries[record["prompt"]]
        assert run_python(humaneval_program(record, code_of(entry["right"]))) == 0
        assert run_python(humaneval_program(record, code_of(entry["wrong"]))) != 0
    for record in records("mbpp"):
        entry = entries[record["text"]]
        assert run_python(mbpp_program(record, code_of(entry["right"]))) == 0
        assert run_python(mbpp_program(record, code_of(entry["wrong"]))) != 0
    assert len(entries) == sum(len(records(name)) for name in make_answers.SETS)


# --------------------------------------------------------------------------------------------
# answer tokens, lossy ids, the answers file (pure)
# --------------------------------------------------------------------------------------------

TEXTS = ["The final answer is \\boxed{25}.", 'def f():\n    """Doc "quoted"."""\n\treturn 1\n', "é", "25\\pi ≈ 78.5",
         "emoji 🎲 x", "a\x00b", "abc", ""]


@pytest.mark.parametrize("text", TEXTS)
def test_answer_tokens_carry_up_to_four_bytes_each_and_detokenize_prefix_stably(text):
    ids = sim_engine.answer_tokens(text)
    assert sim_engine.detokenize(ids) == text
    assert all(sim_engine.ANSWER_ID_MIN <= t < sim_engine.ANSWER_ID_END <= 2 ** 31 for t in ids)
    assert all(1 <= len(sim_engine.answer_text(t).encode("utf-8")) <= sim_engine.TOKEN_BYTES for t in ids)
    assert len(ids) >= len(text.encode("utf-8")) / sim_engine.TOKEN_BYTES
    for cut in range(len(ids) + 1):
        assert text.startswith(sim_engine.detokenize(ids[:cut]))


def test_ascii_answer_tokens_are_four_characters_and_other_characters_go_alone():
    assert [sim_engine.answer_text(t) for t in sim_engine.answer_tokens("abcdefé12")] == ["abcd", "ef", "é", "12"]
    assert sim_engine.detokenize(sim_engine.answer_tokens("ab") + [EOS, 5000]) == "ab " + sim_engine.WORDS[5000 % len(sim_engine.WORDS)]


def test_streamed_json_text_is_escaped_a_step_at_a_time():
    text = TEXTS[1] + "\\ end"
    sink = queue.Queue()
    req = sim_engine.GenRequest("r", 4, 40, 7, sim_model.Workload(), sink, answer_ids=sim_engine.answer_tokens(text))
    for step in (1, 3, 2, 5, 4, 25):
        req.emit(step)
        shown, ids = req.text_and_ids_json(len(req.output_ids))
        assert json.loads('"%s"' % shown) == sim_engine.detokenize(req.output_ids)
        assert json.loads("[%s]" % ids) == req.output_ids
    assert json.loads('"%s"' % req.text_and_ids_json(5)[0]) == sim_engine.detokenize(req.output_ids[:5])


def test_lossy_ids_keep_the_first_k_and_change_the_text_of_every_later_token_but_the_eos():
    planned = sim_engine.answer_tokens("The final answer is \\boxed{25}.") + sim_model.token_ids(3, 40) + [EOS]
    lossy = sim_engine.lossy_ids(planned, 10, seed=3, keep=EOS)
    assert len(lossy) == len(planned) and lossy[:10] == planned[:10] and lossy[-1] == EOS
    for before, after in zip(planned[10:-1], lossy[10:-1]):
        assert sim_engine.WORD_ID_MIN <= after < sim_engine.WORD_ID_END
        assert sim_engine.detokenize([after]) != sim_engine.detokenize([before])
    assert lossy == sim_engine.lossy_ids(planned, 10, seed=3, keep=EOS)  # deterministic


def answers_doc(accuracy=None, **extra):
    doc = {"note": "TEST-ONLY", "accuracy": accuracy or {"default": 1.0},
           "answers": [{"needle": "two plus two", "right": "4", "wrong": "5"},
                       {"needle": "what is two plus two?", "right": "four", "wrong": "five"}]}
    doc.update(extra)
    return doc


def test_the_longest_needle_wins_and_accuracy_falls_back_to_default():
    answers = sim_server.Answers(answers_doc({"default": 0.25, "DFlash": 0.5}))
    needle, right, _wrong = answers.find("Q: what is two plus two? A:")
    assert needle == "what is two plus two?" and sim_engine.detokenize(right) == "four"
    assert answers.find("two plus two!")[0] == "two plus two" and answers.find("three") is None
    assert answers.find(None) is None
    assert answers.accuracy_of("DFLASH") == 0.5 and answers.accuracy_of("DDTREE") == 0.25
    assert sim_server.Answers(answers_doc({})).accuracy_of(sim_model.AUTOREGRESSIVE) == 1.0
    assert sim_server.method_key(sim_model.AUTOREGRESSIVE) == "autoregressive"


@pytest.mark.parametrize("doc, message", [
    ([], "expected"),
    (answers_doc({"default": 1.5}), "accuracy.default"),
    (answers_doc({"default": True}), "accuracy.default"),
    (answers_doc(answers=[{"needle": "", "right": "a", "wrong": "b"}]), r"answers\[0\]"),
    (answers_doc(answers=[{"needle": "x", "right": "a"}]), r"answers\[0\]"),
    (answers_doc(answers=[{"needle": "x", "right": "\ud800", "wrong": "b"}]), "surrogate"),
])
def test_a_malformed_answers_file_is_refused(doc, message):
    with pytest.raises(ValueError, match=message):
        sim_server.Answers(doc, "answers.json")


def test_the_answers_file_comes_from_the_environment_then_the_hosts_file(monkeypatch, tmp_path):
    host_file = tmp_path / "answers.json"
    monkeypatch.setattr(sim_server, "ANSWERS_FILE", str(host_file))
    monkeypatch.delenv("SIM_SGLANG_ANSWERS", raising=False)
    assert sim_server.load_answers() is None  # no file: no answers
    host_file.write_text(json.dumps(answers_doc()))
    assert len(sim_server.load_answers().entries) == 2
    monkeypatch.setenv("SIM_SGLANG_ANSWERS", "none")
    assert sim_server.load_answers() is None
    monkeypatch.setenv("SIM_SGLANG_ANSWERS", str(tmp_path / "missing.json"))
    with pytest.raises(ValueError, match="missing.json"):
        sim_server.load_answers()
    host_file.write_text("{not json")
    monkeypatch.delenv("SIM_SGLANG_ANSWERS")
    with pytest.raises(ValueError, match="answers file"):
        sim_server.load_answers()


def test_the_lossy_position_is_a_whole_number(monkeypatch):
    monkeypatch.delenv("SIM_SGLANG_LOSSY_AFTER", raising=False)
    assert sim_server.lossy_after_setting() == sim_server.DEFAULT_LOSSY_AFTER == 16
    monkeypatch.setenv("SIM_SGLANG_LOSSY_AFTER", "0")
    assert sim_server.lossy_after_setting() == 0
    monkeypatch.setenv("SIM_SGLANG_LOSSY_AFTER", "-3")
    with pytest.raises(ValueError, match="whole number"):
        sim_server.lossy_after_setting()


def test_the_answer_draw_is_the_needles_alone_when_greedy_and_the_seeds_when_sampling():
    assert sim_server.answer_uniform("q") == sim_server.answer_uniform("q")
    draws = [sim_server.answer_uniform("q", seed) for seed in range(400)]
    assert all(0.0 <= d < 1.0 for d in draws) and 0.4 < sum(d < 0.5 for d in draws) / 400 < 0.6


# --------------------------------------------------------------------------------------------
# the emulator end to end
# --------------------------------------------------------------------------------------------

GSM8K = records("gsm8k")[0]
GSM8K_RIGHT = make_answers.gsm8k_entry(GSM8K)
HUMANEVAL = records("humaneval")[1]
HUMANEVAL_RIGHT = make_answers.humaneval_entry(HUMANEVAL)


def chat_prompt(content):
    """The text the harness sends to /generate: the user turn in the chat template, thinking off."""
    return sim_server.render_chat([{"role": "user", "content": content}], {"enable_thinking": False})


GSM8K_PROMPT = chat_prompt(GSM8K["question"] + datasets.REASON_SUFFIX)
HUMANEVAL_PROMPT = chat_prompt(datasets.HUMANEVAL_WRAP % HUMANEVAL["prompt"])
PLAIN_PROMPT = chat_prompt("Write a short note about the weather in the mountains.")


def start(factory, name, args=(), env=None):
    emu = Emulator(factory.mktemp(name), args, dict({"SIM_SGLANG_BUILD": "sglang-0.5.23"}, **(env or {})))
    emu.wait_ready()
    return emu


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """The servers the tests compare, all on the demo's answers.json but two."""
    zero = tmp_path_factory.mktemp("zero") / "answers.json"
    doc = make_answers.build()
    doc["accuracy"] = {"default": 1.0, "dflash": 0.0}
    zero.write_text(json.dumps(doc))
    half = tmp_path_factory.mktemp("half") / "answers.json"
    doc["accuracy"] = {"default": 0.5}
    half.write_text(json.dumps(doc))
    answers = {"SIM_SGLANG_ANSWERS": str(ANSWERS_JSON)}
    lossy = dict(answers, SIM_SGLANG_FAULT="lossy", SIM_SGLANG_LOSSY_AFTER=str(LOSSY_AFTER))
    specs = {
        "ar": ([], answers), "dflash": (DFLASH, answers),
        "dflash_zero": (DFLASH, {"SIM_SGLANG_ANSWERS": str(zero)}),
        "dflash_half": (DFLASH, {"SIM_SGLANG_ANSWERS": str(half)}),
        "dflash_lossy": (DFLASH, lossy), "ar_lossy": ([], lossy),
        "dflash_none": (DFLASH, {"SIM_SGLANG_ANSWERS": "none"}),
    }
    started = {}
    try:
        for name, (args, env) in specs.items():
            started[name] = start(tmp_path_factory, name, args, env)
        yield started
    finally:
        for emu in started.values():
            emu.stop()


def greedy(emu, prompt, **params):
    return generate(emu, prompt, **dict({"max_new_tokens": 600, "temperature": 0}, **params))


def test_a_gsm8k_prompt_gets_its_right_answer_then_filler_then_eos(servers):
    out = greedy(servers["dflash"], GSM8K_PROMPT)
    right = GSM8K_RIGHT["right"]
    assert out["text"].startswith(right)
    assert out["output_ids"][:len(sim_engine.answer_tokens(right))] == sim_engine.answer_tokens(right)
    assert re.fullmatch(r"( [a-z]+)*", out["text"][len(right):])  # the filler words follow
    assert out["meta_info"]["finish_reason"] == {"type": "stop", "matched": EOS} and out["output_ids"][-1] == EOS
    assert "answers file (test-only): 15 answers, accuracy of dflash 1" in servers["dflash"].stdout()


def test_a_code_answer_streams_as_valid_json_and_runs(servers):
    events = servers["dflash"].stream("/generate", {"text": HUMANEVAL_PROMPT, "stream": True,
                                                    "sampling_params": {"max_new_tokens": 600, "temperature": 0}})
    chunks = events[:-1]
    assert events[-1] == "[DONE]" and len(chunks) > 3
    for chunk in chunks:  # cumulative in every chunk
        assert chunk["text"] == sim_engine.detokenize(chunk["output_ids"])
    assert chunks[-1]["text"].startswith(HUMANEVAL_RIGHT["right"])
    assert run_python(humaneval_program(HUMANEVAL, code_of(chunks[-1]["text"]))) == 0
    assert chunks[-1]["output_ids"] == greedy(servers["dflash"], HUMANEVAL_PROMPT)["output_ids"]


def test_chat_completions_begin_with_the_answer(servers):
    body = {"messages": [{"role": "user", "content": GSM8K["question"] + datasets.REASON_SUFFIX}], "temperature": 0,
            "max_tokens": 600}
    status, raw = servers["dflash"].post("/v1/chat/completions", body)
    assert status == 200
    assert json.loads(raw)["choices"][0]["message"]["content"].startswith(GSM8K_RIGHT["right"])


def test_autoregressive_and_a_lossless_method_give_identical_ids_at_temperature_0(servers):
    for prompt in (GSM8K_PROMPT, HUMANEVAL_PROMPT):
        ar, spec = greedy(servers["ar"], prompt), greedy(servers["dflash"], prompt)
        assert ar["output_ids"] == spec["output_ids"] and ar["text"] == spec["text"]
        assert ar["meta_info"]["completion_tokens"] == spec["meta_info"]["completion_tokens"]


def test_accuracy_0_for_a_method_gives_the_wrong_answer(servers):
    out = greedy(servers["dflash_zero"], GSM8K_PROMPT)
    assert out["text"].startswith(GSM8K_RIGHT["wrong"]) and not out["text"].startswith(GSM8K_RIGHT["right"])
    assert "accuracy of dflash 0" in servers["dflash_zero"].stdout()


def test_sampling_draws_the_answer_per_seed_and_greedy_decoding_does_not(servers):
    emu = servers["dflash_half"]
    sampled = [generate(emu, GSM8K_PROMPT, max_new_tokens=600, temperature=1.0, sampling_seed=seed)["text"]
               for seed in range(12)]
    kinds = {text.startswith(GSM8K_RIGHT["right"]) for text in sampled}
    assert kinds == {True, False}  # 12 draws at 0.5: both answers (a 1 in 2048 chance of failing at random)
    assert all(text.startswith((GSM8K_RIGHT["right"], GSM8K_RIGHT["wrong"])) for text in sampled)
    again = generate(emu, GSM8K_PROMPT, max_new_tokens=600, temperature=1.0, sampling_seed=5)["text"]
    assert again == sampled[5]
    greedy_texts = {greedy(emu, GSM8K_PROMPT, sampling_seed=seed)["text"] for seed in range(4)}
    assert len(greedy_texts) == 1


def test_lossy_keeps_the_first_k_tokens_and_changes_every_later_one(servers):
    reference = greedy(servers["ar"], GSM8K_PROMPT)
    lossy = greedy(servers["dflash_lossy"], GSM8K_PROMPT)
    ref_ids, ids = reference["output_ids"], lossy["output_ids"]
    assert len(ids) == len(ref_ids) > LOSSY_AFTER + 10 and ids[-1] == ref_ids[-1] == EOS
    assert ids[:LOSSY_AFTER] == ref_ids[:LOSSY_AFTER]
    assert all(a != b for a, b in zip(ids[LOSSY_AFTER:-1], ref_ids[LOSSY_AFTER:-1]))
    assert lossy["text"].startswith(sim_engine.detokenize(ref_ids[:LOSSY_AFTER]))
    assert "\\boxed{" not in lossy["text"]  # the answer past k is destroyed
    assert "fault lossy: at temperature 0 every output token from position %d on" % LOSSY_AFTER \
        in servers["dflash_lossy"].stdout()
    # sampling is left as it is
    sampled = [generate(servers[name], GSM8K_PROMPT, max_new_tokens=600, temperature=1.0, sampling_seed=1)
               for name in ("dflash_lossy", "dflash")]
    assert sampled[0]["output_ids"] == sampled[1]["output_ids"]


def test_an_autoregressive_server_ignores_lossy(servers):
    for prompt in (GSM8K_PROMPT, PLAIN_PROMPT):
        assert greedy(servers["ar_lossy"], prompt)["output_ids"] == greedy(servers["ar"], prompt)["output_ids"]
    assert "fault lossy ignored" in servers["ar_lossy"].stdout()


def test_a_prompt_without_a_needle_gets_todays_output(servers):
    for params in ({"temperature": 0}, {"temperature": 1.0, "ignore_eos": True}):
        with_answers = generate(servers["dflash"], PLAIN_PROMPT, max_new_tokens=300, **params)
        without = generate(servers["dflash_none"], PLAIN_PROMPT, max_new_tokens=300, **params)
        assert with_answers["output_ids"] == without["output_ids"] and with_answers["text"] == without["text"]
        for key in ("completion_tokens", "spec_verify_ct", "spec_accept_length", "finish_reason"):
            assert with_answers["meta_info"][key] == without["meta_info"][key]
    # today's output: filler words from the request's seed, EOS where the content places it
    out = generate(servers["dflash"], PLAIN_PROMPT, max_new_tokens=600, temperature=0)
    seed = sim_model.request_seed(PLAIN_PROMPT, 600)
    eos_at = sim_model.eos_position(sim_model.content_category(PLAIN_PROMPT),
                                    sim_model.request_seed("content", PLAIN_PROMPT))
    assert out["output_ids"] == sim_model.token_ids(seed, eos_at)[:eos_at - 1] + [EOS]
    # token ids are never searched for a needle
    ids = list(range(2000, 2040))
    assert generate(servers["dflash"], ids, max_new_tokens=50)["output_ids"] == \
        generate(servers["dflash_none"], ids, max_new_tokens=50)["output_ids"]


def demo_records():
    """(prompt turn, grading reference) of every graded demo record, as the campaign normalizes them."""
    found = []
    for name in make_answers.SETS:
        parsed, _fmt = datasets.parse((PROMPTS / ("demo-%s.jsonl" % name)).read_bytes(), name)
        found.extend((record["turns"][0], record["reference"]) for record in parsed)
    return found


def test_the_controllers_graders_take_the_right_answers_and_refuse_the_wrong_ones(servers):
    """End to end: each graded demo prompt as the campaign sends it, the emulator's whole output (answer, filler
    words, EOS) graded by plugins/plugin_utils/answers.py (code run by plain python3 here, not the sandbox)."""
    from ansible_collections.specdec.bench.plugins.plugin_utils import answers  # pylint: disable=import-outside-toplevel

    def execute(program):
        return run_python(program) == 0

    graded = demo_records()
    assert len(graded) == 15
    for turn, reference in graded:
        right = greedy(servers["dflash"], chat_prompt(turn), max_new_tokens=1024)["text"]
        wrong = greedy(servers["dflash_zero"], chat_prompt(turn), max_new_tokens=1024)["text"]
        assert answers.grade(reference, right, execute) is True, (reference, right)
        assert answers.grade(reference, wrong, execute) is False, (reference, wrong)


def test_a_malformed_answers_file_stops_the_server_at_start(tmp_path):
    bad = tmp_path / "answers.json"
    bad.write_text(json.dumps({"answers": [{"needle": "x"}]}))
    emu = Emulator(tmp_path, DFLASH, {"SIM_SGLANG_ANSWERS": str(bad), "SIM_SGLANG_BUILD": "sglang-0.5.23"})
    try:
        assert emu.wait_exit() == 1
        assert "answers[0] must have a non-empty needle" in emu.stdout()
    finally:
        emu.stop()
