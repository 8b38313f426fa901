"""Lab 02's baselines (labkit.decision_loop.baselines) and the rewrite cases they are run on."""

import json
import shutil

import pytest

from labkit.baseline.corpus import DOCUCTL, docuctl, load_corpus
from labkit.baseline.task import task_from
from labkit.core.errors import FixtureError
from labkit.core.text import words
from labkit.decision_loop.baselines import (
    RANDOM,
    SEARCH_FIRST,
    admissible_decisions,
    baseline_rows,
    random_baseline,
    random_rows,
)
from labkit.decision_loop.evaluation import replay_trials
from labkit.decision_loop.ladder import ladder_with_baselines
from labkit.decision_loop.trials import cases_of, known_cases, limits_for, run_case
from labkit.model.replay import TRIALS

CASE = next(case for case in docuctl().cases if case["id"] == "config-region")  # a v1 question
TASK = task_from(CASE)
HITS = [{"id": "config-v1", "title": "Configuration"}, {"id": "health-v1", "title": "Health checks"}]
SEARCHED = [{"action": "search", "result": HITS}]
PAGE = docuctl().docs.read("config-v1", "v1")
READ = [*SEARCHED, {"action": "read", "result": PAGE}]


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


def test_the_random_baselines_pass_what_the_lab_quotes_over_200_seeds():
    # Totals over 24 cases x 200 seeds: 2.52 and 8.67 cases of 24 per seed at L3.
    for kind, total in ((RANDOM, 504), (SEARCH_FIRST, 1734)):
        rows = random_rows(kind, "L3", cases_of("all"))
        assert len(rows) == 24 * 200 and passes(rows) == total, kind


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


def test_baseline_rows_put_the_scripted_loops_beside_the_random_ones():
    rows = baseline_rows("all", rungs=("L3",), seeds=2)
    by_policy = {}
    for row in rows:
        by_policy.setdefault(row["policy"], []).append(row)
    assert list(by_policy) == ["random L3", "search, then answer L3", "scripted loop", "adaptive loop"]
    assert passes(by_policy["scripted loop"]) == 17 * 5 and passes(by_policy["adaptive loop"]) == 23 * 5
    assert {row["baseline"] for row in by_policy["adaptive loop"]} == {"adaptive loop"}


def test_the_rewrite_cases_share_no_word_with_their_version_or_the_glossary():
    corpus = docuctl()
    rewrite = cases_of("rewrite", corpus)
    assert len(rewrite) == 6 and len({case["family"] for case in rewrite}) == 6
    for case in rewrite:
        assert not words(case["question"]) & corpus.docs.vocabulary(case["version"]), case["id"]
        assert corpus.docs.search(case["question"], case["version"], expand=True, top_k=2) == []
        assert limits_for(case, corpus) == {"max_turns": 4, "max_tools": 3}
    assert set(known_cases(corpus)) == {c["id"] for c in cases_of("all", corpus) + rewrite}
    assert len(cases_of("all", corpus)) == 24  # "all" stays lab 01's 24


def test_no_rule_written_in_advance_finds_a_rewrite_case_but_a_rewritten_query_does():
    rows = baseline_rows("rewrite", seeds=5)
    assert passes(rows) == 0  # scripted, adaptive, random, search-then-answer: 0 of 6, every rung
    case = next(c for c in cases_of("rewrite") if c["id"] == "rewrite-config")

    def rewriter(task, observations):  # what a model with world knowledge would have to do
        if len(observations) < 2:
            return {"action": "search", "query": [task.question, "set the region"][len(observations)]}
        if observations[-1]["action"] == "search":
            return {"action": "read", "id": observations[-1]["result"][0]["id"]}
        page = observations[-1]["result"]
        return {"action": "final", "answer": page["command"], "citation": page["id"]}

    result = run_case(case, rewriter, limits=limits_for(case))
    assert (result["stop"], result["answer"]) == ("final", case["expected_command"])


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
    assert table.loc["SmolLM2-135M example L3 T=0", "pass@1"] == round(1 / 6, 3)
    assert table.loc["SmolLM2-135M base L3 T=0", "pass@1"] == 0.0
