"""Lab 02's rewrite cases: each solvable by a rewritten query, none by a rule written in advance."""

import pytest
from scipy.stats import binom

from labkit.baseline.controllers import adaptive_policy, revise_query, scripted
from labkit.baseline.corpus import docuctl
from labkit.baseline.grading import outcome
from labkit.core.fixtures import FIXTURES
from labkit.core.text import words
from labkit.course.grid.run import execute, plan
from labkit.course.grid.spec import load_spec
from labkit.decision_loop.baselines import KINDS, expected_pass
from labkit.decision_loop.trials import ENDED, cases_of, known_cases, limits_for, run_case
from labkit.model.constraints import RUNGS
from labkit.model.record import read_records
from labkit.model.replay import TRIALS

CORPUS = docuctl()
REWRITE = cases_of("rewrite", CORPUS)
GRIDS = FIXTURES / "grids"


def hits(query, case):
    """The ids the lab's search tool (glossary on, two hits) returns for `query` in the case's version."""
    return [hit["id"] for hit in CORPUS.docs.search(query, case["version"], expand=True, top_k=2)]


def test_forty_cases_give_the_power_to_detect_a_gain_of_020_over_the_scripted_loop():
    # The scripted loop passes none, so every case the model passes is discordant: exact McNemar
    # rejects at 0.05 from 6 of 6 (p = 2 / 2**6), and a model passing 0.20 of them reaches 6 with 0.84.
    assert len(REWRITE) == 40 and len({case["id"] for case in REWRITE}) == 40
    assert 2 * 0.5**6 < 0.05 < 2 * 0.5**5
    assert binom.sf(5, len(REWRITE), 0.20) == pytest.approx(0.8387, abs=1e-4)
    assert binom.sf(5, 38, 0.20) < 0.80 < binom.sf(5, 39, 0.20)
    assert set(known_cases(CORPUS)) == {c["id"] for c in cases_of("all", CORPUS) + REWRITE}
    assert len(cases_of("all", CORPUS)) == 24  # "all" stays lab 01's 24


def test_the_set_mixes_unknown_words_and_words_that_point_at_another_page():
    empty = [case["id"] for case in REWRITE if not hits(case["question"], case)]
    misleading = [case["id"] for case in REWRITE if hits(case["question"], case)]
    assert len(empty) >= 15 and len(misleading) >= 20
    # every page a staging question can be answered from (not production only, not deprecated)
    answerable = {p["id"] for p in CORPUS.docs.pages if not {"production", "deprecated"} & words(p["text"])}
    assert {case["expected_doc"] for case in REWRITE} == answerable and len(answerable) == 18


@pytest.mark.parametrize("case", REWRITE, ids=[case["id"] for case in REWRITE])
def test_a_rewritten_query_finds_the_page_and_no_rule_written_in_advance_does(case):
    page = case["expected_doc"]
    assert limits_for(case, CORPUS) == {"max_turns": 4, "max_tools": 3}
    # No rule reaches the page: not the question's search, nor lab 01's spelling revision of it.
    assert page not in hits(case["question"], case)
    revised = revise_query(case["question"], CORPUS.docs.vocabulary(case["version"]))
    assert not revised or hits(case["question"], case) or page not in hits(revised, case)
    for policy in (scripted, adaptive_policy(CORPUS.docs)):
        assert not outcome(case, run_case(case, policy, limits=limits_for(case))), policy
    for kind in KINDS:
        assert [expected_pass(kind, rung, case) for rung in RUNGS] == [0.0] * 4, kind

    def rewriter(task, observations):  # the question's search, then the topic's (its family), read, answer
        if len(observations) < 2:
            return {"action": "search", "query": [task.question, task.family][len(observations)]}
        if observations[-1]["action"] == "search":
            return {"action": "read", "id": page}
        found = observations[-1]["result"]
        return {"action": "final", "answer": found["command"], "citation": found["id"]}

    assert page in hits(case["family"], case)
    result = run_case(case, rewriter, limits=limits_for(case))
    assert outcome(case, result), result["detail"]


@pytest.mark.parametrize("name", ["base-l3-t0", "example-l3-t0", "example-l3-t07"])
def test_each_rewrite_recording_holds_every_episode_of_its_grid_once(tmp_path, name):
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes((TRIALS / f"rewrite-smollm2-{name}.jsonl").read_bytes())
    work = plan(load_spec(GRIDS / f"rewrite-smollm2-{name}.toml"), copy)
    assert work.todo == [] and work.cut == 0 and work.done == work.total


def test_a_grid_replaying_a_rewrite_recording_ends_every_episode_as_recorded(tmp_path):
    source, spec = TRIALS / "rewrite-smollm2-example-l3-t0.jsonl", tmp_path / "replay.toml"
    spec.write_text(
        (GRIDS / source.name).with_suffix(".toml").read_text().replace('"local"', f'"replay:{source}"')
    )
    execute(plan(load_spec(spec), tmp_path / "replayed.jsonl"))

    def ended(path):
        return {(r["case"], *(r[k] for k in ENDED)) for _, r in read_records(path) if r["kind"] == "episode"}

    assert ended(tmp_path / "replayed.jsonl") == ended(source) and len(ended(source)) == 40
