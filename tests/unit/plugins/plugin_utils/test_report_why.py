# SPDX-License-Identifier: GPL-3.0-or-later
"""report why.py: the figures of "Why the speedup is what it is" against the arithmetic of the references they follow
(dflash's benchmark.py, Spec-Bench's evaluation/speed.py, transcribed below), the decomposition identity, the
histogram and per-position acceptance, the cache flag, and report.md's section on synthetic and old campaigns."""
import csv
import json
import math
import random
import re
import statistics
import sys
from itertools import chain
from pathlib import Path

import pytest

from ansible_collections.specdec.bench.plugins.plugin_utils.report import generate
from ansible_collections.specdec.bench.plugins.plugin_utils.report import markdown_why, why
from ansible_collections.specdec.bench.plugins.plugin_utils.report.markdown_why import compact_histogram, compact_positions
from ansible_collections.specdec.bench.plugins.plugin_utils.report.stats import fieller, fieller_moments

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synthetic_results as synth  # noqa: E402  pylint: disable=wrong-import-position


# Hand-made requests of one prompt set, each measured with AR and with a method (the same greedy text, so the same
# output length): output tokens N (long, as the papers' max_new_tokens of 2048 make them), AR decode time per token,
# the method's verify steps and time per verify step.
PREFILL_S = 0.12
HAND = [  # (N, AR seconds per decode token, method verify steps, method seconds per verify step)
    (1800, 0.0250, 350, 0.0330),
    (2048, 0.0252, 312, 0.0335),
    (1536, 0.0247, 401, 0.0328),
    (1950, 0.0255, 330, 0.0341),
    (1701, 0.0249, 298, 0.0331),
]


def _acceptance_lengths(tokens, steps):
    """dflash_generate's acceptance_lengths of a request: per verify step the tokens it produced (accepted + bonus),
    adding up to the tokens after the first (the first comes from the prefill)."""
    low, extra = divmod(tokens - 1, steps)
    return [low + 1] * extra + [low] * (steps - extra)


def _records(spec):
    """The builtin harness's records of the hand-made requests: AR (spec False) or the method."""
    out = []
    for index, (tokens, ar_step, steps, step) in enumerate(HAND):
        decode = steps * step if spec else (tokens - 1) * ar_step
        out.append({'index': index, 'warmup': False, 'success': True, 'ttft_s': PREFILL_S, 'latency_s': PREFILL_S + decode,
                    'output_tokens': tokens, 'completion_tokens': tokens, 'prompt_tokens': 500, 'cached_tokens': 100,
                    'spec_verify_ct': steps if spec else None})
    return out


def _result(records):
    """A result's keys from records: mean_tpot_ms as the harness's summarize makes it, the rest as the contract defines
    them (synthetic_results.why_keys)."""
    tpots = [(r['latency_s'] - r['ttft_s']) / (r['output_tokens'] - 1) for r in records]
    return dict(synth.why_keys(records), mean_tpot_ms=statistics.mean(tpots) * 1000.0)


def _figures(records):
    figures, _missing = why.run_figures([_result(records)])
    return figures


def dflash_decode_summary(responses, block_size):
    """z-lab/dflash dflash/benchmark.py _print_decode_summary, its arithmetic transcribed (np.mean as statistics.mean):
    the decoding speedup is the mean per-request time per output token of block size 1 over that of the block size,
    the average acceptance length the mean over the requests of each one's mean acceptance length."""
    baseline_tpot = statistics.mean(r[1]['time_per_output_token'] for r in responses)
    dflash_tpot = statistics.mean(r[block_size]['time_per_output_token'] for r in responses)
    speedup = baseline_tpot / dflash_tpot
    mean_accept = statistics.mean(statistics.mean(r[block_size]['acceptance_lengths']) for r in responses)
    acceptance_lengths = list(chain.from_iterable(r[block_size]['acceptance_lengths'] for r in responses))
    histogram = [acceptance_lengths.count(b) / len(acceptance_lengths) for b in range(block_size + 1)]
    return speedup, mean_accept, histogram


def dflash_responses(block_size):
    """Each request as dflash_generate returns it: time_per_output_token = total_decode_time / num_output_tokens, the
    decode time from after the first (prefill) token, num_output_tokens counting that first token."""
    responses = []
    for tokens, ar_step, steps, step in HAND:
        responses.append({1: {'time_per_output_token': (tokens - 1) * ar_step / tokens},
                          block_size: {'time_per_output_token': steps * step / tokens,
                                       'acceptance_lengths': _acceptance_lengths(tokens, steps)}})
    return responses


def test_the_decode_speedup_and_mean_acceptance_are_dflash_s_within_its_rounding():
    speedup, mean_accept, _histogram = dflash_decode_summary(dflash_responses(16), 16)
    ar, method = _figures(_records(False)), _figures(_records(True))
    figures = why.decomposition(method, ar)
    # dflash prints both with 2 decimals; ours divide by N - 1 decode tokens where dflash divides the same decode time
    # by N, and count the prefill token in tau (SGLang's completion_tokens / spec_verify_ct): both gaps shrink as 1/N
    assert abs(figures['speedup_decode'] - speedup) < 0.005
    assert abs(method['accept_length_mean_of_means'] - mean_accept) < 0.005
    assert '%.2f' % figures['speedup_decode'] == '%.2f' % speedup and '%.2f' % method['accept_length_mean_of_means'] == '%.2f' % mean_accept
    # the exact relation: ours less the mean of 1 / steps (the prefill token per request) is dflash's mean acceptance
    assert method['accept_length_mean_of_means'] - statistics.mean(1.0 / steps for _n, _a, steps, _s in HAND) == pytest.approx(mean_accept, rel=1e-12)
    # and with dflash's denominator (N) in place of ours (N - 1) the speedup is dflash's exactly
    scaled = [dict(r, output_tokens=r['output_tokens'] + 1) for r in _records(True)], [dict(r, output_tokens=r['output_tokens'] + 1) for r in _records(False)]
    exact = why.decomposition(_figures(scaled[0]), _figures(scaled[1]))
    assert exact['speedup_decode'] == pytest.approx(speedup, rel=1e-12)
    assert exact['speedup_decode_ci_low'] < exact['speedup_decode'] < exact['speedup_decode_ci_high']


def spec_bench_speed(method_answers, baseline_answers):
    """hemingkx/Spec-Bench evaluation/speed.py speed(), its arithmetic transcribed: per answer tokens / times with
    tokens = sum(new_tokens) and times = sum(wall_time) over its turns (the baseline's tokens re-tokenized, here the
    same count), the speedup the mean of the method's speeds over the mean of the baseline's."""
    speeds = [sum(answer['new_tokens']) / sum(answer['wall_time']) for answer in method_answers]
    speeds0 = [sum(answer['new_tokens']) / sum(answer['wall_time']) for answer in baseline_answers]
    return statistics.mean(speeds) / statistics.mean(speeds0)


def test_the_spec_bench_speedup_is_speed_py_s():
    def answers(records):  # one turn per answer: wall_time is the generate call, prefill included (our E2E latency)
        return [{'new_tokens': [r['output_tokens']], 'wall_time': [r['latency_s']]} for r in records]
    expected = spec_bench_speed(answers(_records(True)), answers(_records(False)))
    figures = why.decomposition(_figures(_records(True)), _figures(_records(False)))
    assert figures['speedup_specbench'] == pytest.approx(expected, rel=1e-12)
    assert '%.2f' % figures['speedup_specbench'] != '%.2f' % figures['speedup_decode']  # prefill counts here, not there


def test_the_residual_is_1_when_every_request_decodes_at_its_step_time_over_tau():
    def records(spec, taus):
        out = []
        for index, tau in enumerate(taus):
            tokens = 1 + int(tau * 100)  # 100 verify steps each
            steps = 100 if spec else tokens - 1
            out.append({'index': index, 'warmup': False, 'success': True, 'ttft_s': 0.2, 'output_tokens': tokens,
                        'latency_s': 0.2 + steps * (0.03 if spec else 0.02), 'spec_verify_ct': steps if spec else None})
        return out
    uniform = [4.0] * 4
    figures = why.decomposition(_figures(records(True, uniform)), _figures(records(False, uniform)))
    assert figures['verify_cost_factor'] == pytest.approx(0.02 / 0.03)
    assert figures['speedup_decode'] == pytest.approx(4.0 * 0.02 / 0.03)
    assert figures['residual'] == pytest.approx(1.0, rel=1e-12)
    # uneven requests: the mean of per-request TPOT is no longer step time over the pooled tau
    uneven = [2.0, 3.0, 6.0, 8.0]
    method = _figures(records(True, uneven))
    figures = why.decomposition(method, _figures(records(False, uneven)))
    assert method['tau_decode'] == pytest.approx(4.75)
    assert figures['residual'] < 0.9


def test_the_histogram_shares_and_the_per_position_acceptance():
    histogram = [2, 3, 5]  # 10 verify steps: 2 accepted no draft, 3 one, 5 two
    assert why.histogram_shares(histogram) == pytest.approx([0.2, 0.3, 0.5])
    # draft 1 accepted in the 8 steps that accepted 1 or 2; draft 2 in the 5 that accepted 2 (vLLM's per position)
    assert why.accept_by_position(histogram) == pytest.approx([0.8, 0.5])
    assert why.histogram_shares([0, 0]) is None and why.accept_by_position(None) is None and why.accept_by_position([1, 'x']) is None
    figures, _missing = why.run_figures([{'accept_histogram': [2, 3, 5]}, {'accept_histogram': [0, 1]}, {'accept_histogram': None}])
    assert figures['accept_histogram'] == [2, 4, 5]  # summed over the repeats that have one
    assert figures['accept_by_position'] == pytest.approx([9 / 11.0, 5 / 11.0])
    assert compact_histogram(why.histogram_shares([2, 3, 5, 0, 0])) == '0:20% 1:30% 2:50%'
    assert compact_histogram(why.histogram_shares([1] * 10)) == '0:10% 1:10% 2:10% 3:10% 4:10% 5:10% 6:10% 7:10% ≥8:20%'
    assert compact_positions([0.95, 0.5, 0.004]) == '1:.95 2:.50'
    assert compact_positions([1.0] * 10) == '1:1.00 2:1.00 3:1.00 4:1.00 5:1.00 6:1.00 7:1.00 8:1.00 …'


def test_fieller_from_moments_is_fieller_from_the_values():
    num, den = [30.1, 29.5, 31.2, 30.7, 29.9], [10.2, 9.8, 10.5, 10.1]
    got = fieller_moments(statistics.mean(num), statistics.stdev(num), len(num), statistics.mean(den), statistics.stdev(den), len(den))
    want = fieller(num, den)
    assert got['ratio'] == pytest.approx(want['ratio']) and got['low'] == pytest.approx(want['low']) and got['high'] == pytest.approx(want['high'])
    assert fieller_moments(1.0, None, 5, 1.0, 0.1, 5) is None and fieller_moments(1.0, 0.1, 1, 1.0, 0.1, 5) is None
    # the requests of several repeats as one sample
    mean, sd, count = why.pooled_moments([(statistics.mean(num[:2]), statistics.stdev(num[:2]), 2), (statistics.mean(num[2:]), statistics.stdev(num[2:]), 3)])
    assert (mean, sd, count) == (pytest.approx(statistics.mean(num)), pytest.approx(statistics.stdev(num)), 5)


def test_the_cache_flag_names_both_numbers():
    base = {'cache_hit_rate': 0.55, 'cache_hit_rate_by_turn': [0.2, 0.9]}
    assert why.cache_flag({'cache_hit_rate': 0.5, 'cache_hit_rate_by_turn': [0.2, 0.3]}, base) == (True, 'turn 2: 30% vs AR 90%')
    assert why.cache_flag({'cache_hit_rate': 0.3, 'cache_hit_rate_by_turn': None}, base) == (True, 'overall 30% vs AR 55%')
    assert why.cache_flag({'cache_hit_rate': 0.36, 'cache_hit_rate_by_turn': [0.2, 0.71]}, base) == (False, None)  # 0.19 apart: not flagged
    assert why.cache_flag({'cache_hit_rate': None, 'cache_hit_rate_by_turn': None}, base) == (None, None)
    assert why.CACHE_FLAG == 0.2


def _md_section(md, heading):
    return md.split(heading, 1)[1].split('\n## ', 1)[0]


@pytest.fixture(name='campaign', scope='module')
def fixture_campaign(tmp_path_factory):
    root = tmp_path_factory.mktemp('why') / 'results'
    synth.make_campaign(root, 'ct200', 'why', synth.ct200_matrix(tps=(1,), budgets=(16, 64, 256)), concurrency=(1, 4),
                        datasets=['mt-bench'], repeats=2, turns=2, lost_cache=('tp1-ddtree-b64-k4',))
    out = root.parent / 'out'
    made = generate(str(root), 'why', str(out))
    return {'made': made, 'md': (out / 'report.md').read_text(), 'out': out}


def test_report_md_of_a_synthetic_campaign_explains_the_speedup(campaign):
    section = _md_section(campaign['md'], '## Why the speedup is what it is')
    assert 'Decode speedup as the DFlash and DDTree papers define it: decode-only time per output token at batch 1' in section
    assert '`_print_decode_summary`' in section
    table = section.split('#### ct200 TP1, mt-bench, T=0, c=1')[1].split('\n\n')[1].splitlines()
    assert table[0].startswith('| setting | τ\\* | τ mean | τ tok-w | accept rate | drafts accepted')
    assert [line.split(' | ')[0] for line in table[2:]] == ['| AR', '| DFlash n=16', '| DDTree B=16 k=4', '| DDTree B=64 k=4', '| DDTree B=256 k=4']
    ddtree = table[3].split(' | ')
    assert re.match(r'0:\d+%', ddtree[5]) and ddtree[6].startswith('1:.') and re.match(r'\d\.\d\d× \[\d\.\d\d, \d\.\d\d\]', ddtree[8])
    assert '![speedup, τ and verify cost vs DDTree budget](why_vs_budget-ct200-tp1-mt-bench-t0.png)' in section
    assert 'why_vs_budget-ct200-tp1-mt-bench-t0.png' in campaign['made']['files']
    # the serving tables keep the serving speedup as their headline and say so
    assert 'serving speedup (output throughput over AR\'s)' in campaign['md'].split('## Why the speedup')[0]
    # the flagged row, both numbers
    flagged = [line for line in section.splitlines() if line.startswith('- ⚑ ')]
    assert len(flagged) == 2 and all(line.startswith('- ⚑ DDTree B=64 k=4, ct200 TP1, mt-bench, T=0, c=') for line in flagged)
    assert re.search(r'turn 2: \d+% vs AR \d+%', flagged[0]) and '| DDTree B=64 k=4 ⚑ |' in section
    assert all(line.startswith('- ⚑ DDTree B=64') for line in section.splitlines() if '⚑' in line and line.startswith('- '))


def test_the_csv_and_json_hold_the_lists_whole(campaign):
    with open(campaign['out'] / 'results-why.csv', newline='') as handle:
        rows = list(csv.DictReader(handle))
    assert tuple(rows[0]) == why.WHY_KEYS and len(rows) == 10
    ddtree = next(row for row in rows if row['setting'] == 'DDTree B=256 k=4' and row['concurrency'] == '1')
    assert len(ddtree['accept_by_position'].split()) == synth.MAX_DEPTH and len(ddtree['accept_histogram'].split()) == synth.MAX_DEPTH + 1
    doc = json.loads((campaign['out'] / 'results.json').read_text())
    item = next(item for item in doc['why'] if item['stage'] == 'tp1-ddtree-b64-k4' and item['concurrency'] == 1)
    assert item['cache_flag'] is True and item['cache_hit_rate_by_turn'][1] < item['baseline_cache_hit_rate_by_turn'][1] - why.CACHE_FLAG
    assert math.isclose(sum(item['accept_histogram_share']), 1.0)
    assert item['residual'] == pytest.approx(item['speedup_decode'] / (item['tau_decode'] * item['verify_cost_factor']))


def test_old_results_without_the_keys_render_with_a_note(tmp_path):
    root = tmp_path / 'results'
    synth.make_campaign(root, 'ct200', 'old', synth.ct200_matrix(tps=(1,), budgets=(16, 64)), concurrency=(1,), legacy=True)
    made = generate(str(root), 'old', str(tmp_path / 'out'), synth.LEGACY_LAYOUT, plots=False)
    section = _md_section((tmp_path / 'out' / 'report.md').read_text(), '## Why the speedup is what it is')
    assert 'The results hold none of the acceptance, decode-timing or cache-hit keys' in section
    rows = made['report']['why']
    assert rows and all(item['speedup_decode'] is None and item['accept_histogram'] is None for item in rows)
    assert all('no decode-only timing' in item['note'] for item in rows)


def test_a_stage_without_the_keys_beside_others_gets_dashes_and_a_note(tmp_path):
    root = tmp_path / 'results'
    synth.make_campaign(root, 'ct200', 'mixed', synth.ct200_matrix(tps=(1,), budgets=(16,)), concurrency=(1,))
    folder = root / 'ct200' / 'mixed' / 'tp1-dflash-n16'
    for path in folder.glob('result-*.json'):  # as the sglang client harness writes it: none of the new keys
        doc = json.loads(path.read_text())
        path.write_text(json.dumps(dict((key, value) for key, value in doc.items() if key not in synth.why_keys([]))))
    made = generate(str(root), 'mixed', str(tmp_path / 'out'), plots=False)
    section = _md_section((tmp_path / 'out' / 'report.md').read_text(), '## Why the speedup is what it is')
    line = next(line for line in section.splitlines() if line.startswith('| DFlash n=16 |'))
    assert line.split(' | ')[2:5] == ['–', '–', '–'] and '| – | – | – | – |' in line
    assert 'Note: DFlash n=16: no acceptance histogram' in section and 'sglang client harness' in section
    ddtree = next(item for item in made['report']['why'] if item['method'] == 'ddtree')
    assert ddtree['speedup_decode'] is not None and ddtree['note'] is None


def test_the_synthetic_keys_are_the_harness_s():
    """The synthetic campaign's results carry why_keys (the contract transcribed); the builtin harness's from_builtin
    computes the same keys from the same records, so the report reads in the tests what it reads from a real run."""
    from ansible_collections.specdec.bench.plugins.module_utils._stage.harness import from_builtin  # pylint: disable=import-outside-toplevel
    for method, params in (('ddtree', {'budget': 64, 'topk': 4}), ('dflash', {'num_draft_tokens': 16}), ('autoregressive', {})):
        records = synth.request_records(random.Random(3), method, params, 1, 2, 8, 64, 32, dataset='mt-bench', turns=2,
                                        lost_cache=method == 'ddtree')
        row = from_builtin(records, 10.0, 2, 8, 64, 32)
        for key, value in synth.why_keys(records).items():
            assert row[key] == (pytest.approx(value) if value is not None else None), key


def test_without_a_run_at_concurrency_1_the_papers_table_says_why(tmp_path):
    root = tmp_path / 'results'
    synth.make_campaign(root, 'ct200', 'busy', synth.ct200_matrix(tps=(1,), budgets=(16,)), concurrency=(4,))
    generate(str(root), 'busy', str(tmp_path / 'out'), plots=False)
    section = _md_section((tmp_path / 'out' / 'report.md').read_text(), '## Why the speedup is what it is')
    assert 'No speculative run at concurrency 1 has a decode speedup' in section and '#### ct200 TP1, random, T=0, c=4' in section
    assert 'decode-speedup' not in (tmp_path / 'out' / 'report.tex').read_text()


def test_the_server_metrics_table_shows_the_lowest_concurrency_beside_the_requests_figures():
    def item(concurrency, server_tau, note=None):
        row = dict.fromkeys(why.WHY_KEYS)
        row.update(host='ct200', tp=1, dataset='mt-bench', temperature=0.0, concurrency=concurrency, setting='DDTree B=64',
                   server_generation_tokens=1000.0, server_accept_length=server_tau, tau_decode=4.25,
                   server_cache_hit_rate=0.125, cache_hit_rate=0.5, server_queue_time_ms=3.0, server_note=note)
        return row

    assert markdown_why._server_lines({'why': [dict.fromkeys(why.WHY_KEYS)]}) == []
    lines = markdown_why._server_lines({'why': [item(4, 9.0), item(1, 4.25, 'a | b')]})
    assert lines[0] == '### Server metrics'
    rows = [line for line in lines if line.startswith('| ct200 ')]
    assert rows == ['| ct200 | 1 | mt-bench, T=0 | 1 | DDTree B=64 | 4.25 | 4.25 | 12% | 50% | 3.0 | a \\| b |']
