"""Lab 02's baselines (labkit.decision_loop.baselines) and the rewrite cases they are run on."""

import json
import shutil
from itertools import product

import pytest

from labkit.baseline.corpus import DOCUCTL, docuctl, load_corpus
from labkit.baseline.task import task_from
from labkit.core.errors import FixtureError
from labkit.decision_loop.baselines import (
    KINDS,
    RANDOM,
    SEARCH_FIRST,
    admissible_decisions,
    expected_pass,
    random_baseline,
)
from labkit.decision_loop.evaluation import SCRIPTED, episode_row, replay_trials, scripted_trials
from labkit.decision_loop.ladder import ladder_with_baselines
from labkit.decision_loop.tables import K_MAX
from labkit.decision_loop.trials import cases_of, limits_for, run_case
from labkit.model.constraints import RUNGS
from labkit.model.replay import TRIALS

CASE = next(case for case in docuctl().cases if case["id"] == "config-region")  # a v1 question
TASK = task_from(CASE)
HITS = [{"id": "config-v1", "title": "Configuration"}, {"id": "health-v1", "title": "Health checks"}]
SEARCHED = [{"action": "search", "result": HITS}]
PAGE = docuctl().docs.read("config-v1", "v1")
READ = [*SEARCHED, {"action": "read", "result": PAGE}]


def random_rows(kind: str, rung: str, cases, *, seeds=200, seed: int = 0):
    """The oracle the exact values are checked against: `seeds` episodes per case of baseline `kind` at
    `rung`; trial t of case c draws from `random.Random(f"{seed + t}:{c}")`, the same on any machine."""
    rows = []
    for case, trial in product(cases, range(seeds)):
        policy = random_baseline(rung, f"{seed + trial}:{case['id']}", kind)
        result = run_case(case, policy, limits=limits_for(case))
        rows.append(episode_row(f"{kind} {rung}", case, trial, result, baseline=kind, rung=rung))
    return rows


def test_before_any_observation_every_rung_admits_only_the_search_of_the_question():
    for rung in ("L0", "L1", "L2", "L3"):
        assert admissible_decisions(TASK, [], rung) == [{"action": "search", "query": CASE["question"]}]


def test_after_a_search_the_reads_of_its_hits_are_admissible():
    assert admissible_decisions(TASK, SEARCHED, "L3") == [
        {"action": "search", "query": CASE["question"]},
        {"action": "read", "id": "config-v1"},
        {"action": "read", "id": "health-v1"},
    ]


def test_l3_admits_one_final_per_page_read_and_l1_pairs_the_command_with_any_hit():
    final = {"action": "final", "answer": PAGE["command"], "citation": "config-v1"}
    assert [d for d in admissible_decisions(TASK, READ, "L3") if d["action"] == "final"] == [final]
    for rung in ("L0", "L1", "L2"):
        finals = [d for d in admissible_decisions(TASK, READ, rung) if d["action"] == "final"]
        assert finals == [final, final | {"citation": "health-v1"}]


def test_search_then_answer_answers_as_soon_as_a_final_is_admissible():
    policy = random_baseline("L3", 0, SEARCH_FIRST)
    assert policy(TASK, [])["action"] == "search"
    assert policy(TASK, READ) == {"action": "final", "answer": PAGE["command"], "citation": "config-v1"}


def passes(rows):
    return sum(row["passed"] for row in rows)


def decisions(rows):
    """Each episode's decisions (a trace also holds the times, which differ run to run)."""
    return [[entry.get("decision") for entry in row["result"]["trace"]] for row in rows]


def test_the_exact_expectation_of_one_case_by_hand():
    case = next(c for c in cases_of("all") if c["id"] == "deploy-build")  # hits: deploy-v2 (right), config-v2
    # a search, then one of 3 decisions reads the right page; then L3 admits 1 final of 4 decisions
    # (search, 2 reads, the final), L1 2 finals of 5 (its command citing either hit), 1 of them right
    exact = {
        (SEARCH_FIRST, "L3"): 1 / 3,
        (RANDOM, "L3"): 1 / 12,
        (SEARCH_FIRST, "L1"): 1 / 6,
        (RANDOM, "L1"): 1 / 15,
    }
    assert {key: expected_pass(*key, case) for key in exact} == pytest.approx(exact, abs=1e-15)


def test_the_exact_totals_on_lab_01s_24_cases():
    totals = {
        (kind, rung): sum(expected_pass(kind, rung, c) for c in cases_of("all"))
        for kind in KINDS
        for rung in RUNGS
    }
    for rung in ("L0", "L1", "L2"):
        assert totals[RANDOM, rung] == pytest.approx(1157 / 525, abs=1e-12)
        assert totals[SEARCH_FIRST, rung] == pytest.approx(17 / 3, abs=1e-12)
    assert totals[RANDOM, "L3"] == pytest.approx(307 / 120, abs=1e-12)  # 2.558
    assert totals[SEARCH_FIRST, "L3"] == pytest.approx(25 / 3, abs=1e-12)  # 8.333


@pytest.mark.parametrize("kind", KINDS)
def test_a_seeded_draw_agrees_with_the_exact_expectation_within_sampling_error(kind):
    cases = cases_of("all")
    rows = random_rows(kind, "L3", cases)  # 200 seeds a case
    for case in cases:
        p, drawn = expected_pass(kind, "L3", case), [r["passed"] for r in rows if r["case"] == case["id"]]
        assert abs(sum(drawn) / len(drawn) - p) <= 4 * (p * (1 - p) / len(drawn)) ** 0.5, case["id"]
    p = [expected_pass(kind, "L3", case) for case in cases]
    sd = sum(q * (1 - q) for q in p) ** 0.5 * 200**0.5
    assert abs(passes(rows) - 200 * sum(p)) <= 3 * sd  # 504 vs 511.7, 1734 vs 1666.7


def test_the_same_seed_gives_the_same_episodes_and_another_seed_others():
    cases = cases_of("adaptive")
    first = random_rows(RANDOM, "L3", cases, seeds=20)
    again = random_rows(RANDOM, "L3", cases, seeds=20)
    assert decisions(first) == decisions(again)
    other = random_rows(RANDOM, "L3", cases, seeds=20, seed=1000)
    assert decisions(first) != decisions(other)


def test_l0_to_l2_admit_the_same_draws_and_l3_only_the_extractive_final():
    cases = cases_of("base")
    traces = {
        rung: decisions(random_rows(RANDOM, rung, cases, seeds=10)) for rung in ("L0", "L1", "L2", "L3")
    }
    assert traces["L0"] == traces["L1"] == traces["L2"] != traces["L3"]
    l3 = random_rows(RANDOM, "L3", cases, seeds=10)
    assert not any(row["stop"] == "unread_citation" for row in l3)


def baseline_rows(cases="all", *, rungs=RUNGS, seeds=2):
    """Every baseline's rows on `cases`: both random ones at each of `rungs` (`seeds` draws a case), then
    the scripted and adaptive loops, run K_MAX times (deterministic: shown, not assumed)."""
    chosen = cases_of(cases)
    rows = [row for kind in KINDS for rung in rungs for row in random_rows(kind, rung, chosen, seeds=seeds)]
    for name in SCRIPTED:
        rows += [row | {"baseline": name} for row in scripted_trials(name, chosen, K_MAX)]
    return rows


def test_baseline_rows_put_the_scripted_loops_beside_the_random_ones():
    rows = baseline_rows("all", rungs=("L3",), seeds=2)
    by_policy = {}
    for row in rows:
        by_policy.setdefault(row["policy"], []).append(row)
    assert list(by_policy) == ["random L3", "search, then answer L3", "scripted loop", "adaptive loop"]
    assert passes(by_policy["scripted loop"]) == 17 * 5 and passes(by_policy["adaptive loop"]) == 23 * 5
    assert {row["baseline"] for row in by_policy["adaptive loop"]} == {"adaptive loop"}


def test_no_baseline_row_passes_a_rewrite_case():
    assert passes(baseline_rows("rewrite", seeds=5)) == 0  # scripted, adaptive, both random kinds, every rung


def test_a_rewrite_case_that_reuses_an_id_or_contradicts_its_page_is_refused(tmp_path):
    folder = tmp_path / "corpus"
    shutil.copytree(DOCUCTL, folder)
    path = folder / "rewrite_cases.json"
    cases = json.loads(path.read_text())
    path.write_text(json.dumps([*cases, cases[0] | {"id": "typo-health"}]))
    with pytest.raises(FixtureError, match="typo-health"):
        load_corpus(folder)
    path.write_text(json.dumps([cases[0] | {"expected_command": "docuctl nothing"}]))
    with pytest.raises(FixtureError, match="field 'expected_command'"):
        load_corpus(folder)
    path.unlink()
    assert load_corpus(folder).rewrite_cases == []


def test_the_committed_rewrite_recordings_replay_and_sit_beside_the_baselines():
    files = sorted(TRIALS.glob("rewrite-smollm2-*.jsonl"))
    assert len(files) == 3  # base and example at T=0, example at T=0.7
    rows = [row for path in files for row in replay_trials(path)]
    table = ladder_with_baselines(rows, baseline_rows("rewrite", rungs=("L3",), seeds=5))
    assert table.loc["scripted loop", "pass@1"] == 0.0 and table.loc["adaptive loop", "pass@1"] == 0.0
    assert table.loc["SmolLM2-135M example L3 T=0", "pass@1"] == 4 / 40
    assert table.loc["SmolLM2-135M base L3 T=0", "pass@1"] == 0.0
