#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: workload_prepare
short_description: Make a host's prompt sets ready on the controller, templated with the target's chat template
version_added: 0.4.0
description:
  - Runs on the controller only (an action plugin; nothing runs on a host). The campaign role runs it per host before
    the host's campaign lock, in check mode too.
  - Each built-in set is fetched once into the controller's dataset cache and checked against its pinned sha256; each
    C(file) entry is read from the controller; both are normalized to C({id, category, turns}) (the collection's
    C(plugin_utils/datasets.py) documents the formats, the pinning and the cache).
  - Every prompt is rendered with the target's own chat template exactly as its tokenizer renders it
    (C(add_generation_prompt) and O(chat_template_kwargs)), and written into the host prompts file
    C(<cache>/prompts/<sha256>.jsonl), one JSON object per line C({id, category, segments, turns}). For user turn i
    the harness sends C(segments[0] + answer_0 + segments[1] + ... + answer_{i-1} + segments[i]), the earlier answers
    being what the server generated. The harness templates the prompt itself (SGLang's C(/generate)) rather than
    sending messages to the chat endpoint so that every turn's text is the one recorded here, with its sha256.
  - The segments come from rendering the conversation with unique placeholders as the assistant's answers. For every
    multi-turn record the concatenation is checked against the template's own rendering with a sample answer. One
    difference is allowed and said in the notes - a generation prompt that ends in text the template leaves out of
    earlier assistant turns (Qwen3's empty think block with C(enable_thinking=false)) stays in the earlier turns, as
    the model saw it. A template that differs otherwise is refused, naming it and the first difference; send that set
    with C(turns=first).
  - A C(random) entry needs no file and no template and is passed through.
  - A real set asked of a model folder without a chat template is refused before anything on the host changes.
  - What the host and the network send is bounded. A chat template file larger than 8 MiB (C(MAX_TEMPLATE_BYTES) of
    C(plugin_utils/chat_template.py)), or JSON nested more than 100 levels deep in C(tokenizer_config.json) or in a
    dataset line, is refused, naming the file (and the line). All prompts of a set are rendered in one child process,
    killed past 120 seconds and ended past 60 seconds of CPU or 1 GiB more memory; any failure of the template there
    (those bounds, C(OverflowError), C(TypeError), C(RecursionError), any other exception) refuses the set, naming
    the record and the template's file. A download must finish within 300 seconds, however slowly the server sends.
author:
  - specdec.bench developers (!UNKNOWN)
options:
  datasets:
    description:
      - The entries of the stage's C(workload.datasets) as the plan validated them (or as written in the spec).
        Null means C([random]), today's random prompts.
    type: list
    elements: raw
  chat_template:
    description:
      - The target's chat template files as read from the host's model folder.
    type: dict
    suboptions:
      path:
        description: The model folder, named in messages.
        type: str
      files:
        description:
          - File name to text, of C(chat_template.jinja) and C(tokenizer_config.json); a missing file is left out.
            C(chat_template.jinja) wins over the config's C(chat_template), as transformers loads them.
        type: dict
  chat_template_kwargs:
    description: "Variables the template sees besides the messages, e.g. C({enable_thinking: false}) for Qwen3 targets."
    type: dict
    default: {}
  cache:
    description: The controller's dataset cache; default C($SPECDEC_DATASET_CACHE), else C(~/.cache/specdec/datasets).
    type: path
  base_dir:
    description: The folder a relative C(file) entry is read from (the campaign file's folder); default the current one.
    type: path
  url_base:
    description:
      - A mirror laid out as the cache (C(<url_base>/<set>/<upstream file name>)) to fetch built-in sets from instead of
        their upstream URLs; the sha256 pins still apply. Default C($SPECDEC_DATASET_MIRROR), else upstream.
    type: str
extends_documentation_fragment:
  - specdec.bench.attributes
attributes:
  check_mode:
    support: full
    details:
      - Runs as usual; it changes nothing on the host, only the controller's dataset cache.
  diff_mode:
    support: none
notes:
  - C(changed) is always false; the cache on the controller is not the host's state.
seealso:
  - module: specdec.bench.bench_run
"""

EXAMPLES = r"""
- name: Read the model's chat template files
  ansible.builtin.slurp:
    src: "/models/Qwen3.6-27B/{{ item }}"
  loop: [chat_template.jinja, tokenizer_config.json]
  register: template_files
  failed_when: false

- name: Prepare the host's prompt sets
  specdec.bench.workload_prepare:
    datasets: [mt-bench, {name: gsm8k, num_prompts: 64}]
    chat_template:
      path: /models/Qwen3.6-27B
      files: "{{ dict(template_files.results | selectattr('content', 'defined') | map(attribute='item')
                 | zip(template_files.results | selectattr('content', 'defined') | map(attribute='content')
                       | map('b64decode'))) }}"
    chat_template_kwargs: {enable_thinking: true}
  register: workload
"""

RETURN = r"""
prepared:
  description:
    - One entry per dataset, in the order of O(datasets). A C(random) entry has C(name), C(kind), C(num_prompts),
      C(input_len), C(output_len) and null for the keys of a prompt set.
  returned: success
  type: list
  elements: dict
  contains:
    name: {description: The dataset's id in the results., type: str}
    kind: {description: "V(builtin), V(file) or V(random).", type: str}
    source: {description: The upstream URL or the controller path read., type: str}
    source_sha256: {description: The sha256 of the source file as read., type: str}
    pinned: {description: "How the source is pinned: V(table), V(first-use), V(recorded), V(none) for a local file.", type: str}
    format: {description: The source format detected or declared., type: str}
    count: {description: Records in the normalized set., type: int}
    categories: {description: Category to record count., type: dict}
    turns: {description: "V(first) or V(all).", type: str}
    max_new_tokens: {description: The generation limit per request., type: int}
    num_prompts: {description: The count asked for (null for all)., type: int}
    normalized_sha256: {description: "The sha256 of the normalized JSONL (C({id, category, turns})).", type: str}
    template_sha256: {description: The sha256 of the chat template text used; null for random., type: str}
    chat_template_kwargs: {description: The variables the template was rendered with., type: dict}
    prompts_path: {description: The host prompts file on the controller; null for random., type: str}
    prompts_sha256: {description: "Its sha256, which names it on the host too; null for random.", type: str}
    references_path:
      description: "The set's grading references on the controller (gsm8k and math500 answers, humaneval and mbpp tests), beside the
        normalized prompts; null when its format has none."
      type: str
    references_sha256: {description: "Their sha256, which names their copy in the host's campaign results folder; null without.", type: str}
    references_count: {description: The records that carry a reference., type: int}
    notes: {description: "Lines for the output (trust on first use, a download again, the template used).", type: list, elements: str}
  sample:
    - {name: gsm8k, kind: builtin, source: "https://raw.githubusercontent.com/openai/grade-school-math/.../test.jsonl",
       source_sha256: 3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14, pinned: table, format: gsm8k,
       count: 128, categories: {math: 128}, turns: all, max_new_tokens: 2048, num_prompts: 128,
       normalized_sha256: 9f2c..., template_sha256: 1b7e..., chat_template_kwargs: {enable_thinking: false},
       prompts_path: /home/me/.cache/specdec/datasets/prompts/77aa....jsonl, prompts_sha256: 77aa..., notes: []}
notes:
  description: Every entry's notes, in order.
  returned: success
  type: list
  elements: str
  sample: ["gsm8k: 128 prompts (all turns) templated with /models/Qwen3.6-27B/tokenizer_config.json chat_template"]
"""
