"""The review loop with a model as the reviser or the judge, through lab 02's seam: what the model is
asked, what replay refuses, and the tables over trials (on a scripted backend)."""

from __future__ import annotations

import json

import pytest

from labkit.core import questions
from labkit.core.fixtures import FIXTURES
from labkit.model import ReplayBackend, ReplayMiss, Reply
from labkit.routing import FakeClock, Next
from labkit.routing import model_reviser as model
from labkit.routing import reviser_trials as trials
from labkit.routing.experiments import DRAFT, LIMIT, loop_graph

recorded = pytest.mark.skipif(not model.recorded(), reason="no recorded routing trials")


class Shortener:
    """A backend that 'revises' by dropping one more word of the draft per turn; keeps the requests."""

    name = "shortener"

    def __init__(self, answer: str | None = None) -> None:
        self.requests, self.answer = [], answer

    def provenance(self) -> dict:
        return {"backend": self.name}

    def complete(self, request) -> Reply:
        self.requests.append(request)
        words = DRAFT.split()[: len(DRAFT.split()) - request.turn]
        answer = " ".join(words) if self.answer is None else self.answer
        return Reply(text=json.dumps({"action": "final", "answer": answer, "citation": "none"}))


@pytest.fixture
def replay(monkeypatch):
    monkeypatch.delenv("LABKIT_MODEL", raising=False)
    monkeypatch.delenv("LABKIT_RECORD", raising=False)


def test_the_review_is_code_and_only_the_feedback_variant_is_told_why():
    backend = Shortener()
    _, _, runs, revisers = model.model_feedback_experiment(backend=backend)
    assert [len(text) for text in revisers["with feedback"].history] == [40, 36, 25]  # a word cut per turn
    assert runs["with feedback"].results["publish"] == "Search is now much faster"
    cases = ("announcement+no-feedback", "announcement+feedback")
    assert [(r.case, r.turn) for r in backend.requests] == [(case, n) for case in cases for n in range(1, 4)]
    told = {r.case: r.messages[-1]["content"] for r in backend.requests if r.turn == 2}
    assert told == {
        "announcement+no-feedback": "Revise it again.",
        "announcement+feedback": "40 characters, limit is 26. Revise it again.",
    }
    assert all(r.messages[2]["role"] == "assistant" for r in backend.requests if r.turn == 2)


def test_a_decision_without_answer_text_fails_the_revise_job():
    reviser = model.ModelReviser("feedback", backend=Shortener(answer=3))
    result = loop_graph(reviser=reviser)[0].run(clock=FakeClock())
    assert result.status == "failed" and "has no answer text" in result.errors["revise"]


@recorded
def test_an_unrecorded_request_is_a_replay_miss_naming_case_and_turn(replay):
    with pytest.raises(
        ReplayMiss, match=r"case 'announcement\+no-feedback', trial 0, turn 1 was asked something else"
    ):
        model.model_feedback_experiment(limit=30)  # the limit is part of what the model is shown
    with pytest.raises(ReplayMiss, match="turn 6"):
        model.model_feedback_experiment(max_visits=6)


def test_the_control_tables_trials_sample_with_their_own_seed_and_temperature():
    shortener = Shortener()
    table, _ = model.control_table(backend=shortener, temperature=0.7, seed=5, k=2)
    assert table.index.names == ["reviser may write", "variant", "trial"] and len(table) == 12
    assert table.loc[("any text (L1)", "with feedback", 1), "characters per visit"] == "40 36 25"
    assert {(r.trial, r.seed) for r in shortener.requests} == {(0, 5), (1, 6)}
    assert {r.temperature for r in shortener.requests} == {0.7}


def test_the_reviser_table_has_rates_over_trials_and_deterministic_runs_without_intervals():
    table = trials.reviser_table(trials.sampled_runs(Shortener(), k=2))
    row = table.loc[("L1", "feedback")]
    assert (row["published"], row[trials.RATE]) == ("2 of 2", "1.000 [0.158, 1.000]")  # exact, 2 of 2
    assert (row["T=0, one run"], row["word cutter, one run"]) == ("yes", "yes")
    comparisons = trials.reviser_comparisons(
        trials.sampled_runs(Shortener(), k=3)
    )  # feedback changes nothing
    feedback = [c for c in comparisons if "feedback - none" in c.name]
    assert len(comparisons) == 7
    assert all(c.interval.low < 0 < c.interval.high for c in feedback)  # 3 of 3 on both sides
    answered = questions.answer(trials.FEEDBACK_QUESTION, comparisons)
    assert {c.verdict for c in answered} == {"exploratory: no verdict"}  # 3 trials are not the declared 50


@recorded
def test_the_recorded_trials_answer_the_declared_question(replay):
    runs = trials.sampled_runs(ReplayBackend())
    table = trials.reviser_table(runs)
    assert table["published"].tolist() == ["3 of 50"] * 2 + ["0 of 50"] * 2 + ["50 of 50"] * 2
    assert set(table[trials.RATE]) == {"0.060 [0.013, 0.165]", "0.000 [0.000, 0.071]", "1.000 [0.929, 1.000]"}
    assert table["T=0, one run"].tolist() == ["no"] * 4 + ["yes"] * 2
    answered = questions.answer(trials.FEEDBACK_QUESTION, trials.reviser_comparisons(runs))
    got = {c.name: (str(c.interval), c.p_adjusted, c.verdict) for c in answered}
    zero = "not distinguishable (MDE 0.18)"  # 50 trials at 0.025, nothing behind: 0.18
    assert got["L1: feedback - none"] == ("0.000 [-0.068, 0.068]", 1.0, zero)
    assert got["L2: feedback - none"] == ("0.000 [-0.075, 0.075]", 1.0, zero)
    assert got["feedback: L2+cut1 - L2"] == ("1.000 [0.894, 1.000]", None, "exploratory: no verdict")
    assert [c.exploratory for c in answered] == [False] * 2 + [True] * 5
    assert all(c.interval.low < c.interval.high for c in answered)
    greedy = trials.reviser_grid_table(FIXTURES / "trials" / "routing-trials-smollm2-t0.jsonl")
    assert set(greedy[trials.RATE]) == {trials.DETERMINISTIC}
    sampled = trials.reviser_grid_table(FIXTURES / "trials" / "routing-trials-smollm2-t07-k50.jsonl")
    assert sampled["published"].tolist() == table["published"].tolist()


def test_the_judge_is_held_to_yes_or_no_and_routes_on_it():
    yes, no = model.ModelJudge("t", backend=Shortener("yes")), model.ModelJudge("t", backend=Shortener("no"))
    assert yes({"text": "x" * 40, "chars": 40}) == Next.Continue
    assert no({"text": "short", "chars": 5}) == Next.back_to_with("revise", model.JUDGE_FEEDBACK)
    request = yes.policy.backend.requests[0]
    assert (request.case, request.rung) == ("judge+t+1", "L2")
    assert request.schema["anyOf"][0]["properties"]["answer"]["enum"] == ["yes", "no"]
    with pytest.raises(ValueError, match="not yes or no"):
        model.ModelJudge("t", backend=Shortener("maybe")).judge("text")


@recorded
def test_the_recorded_judge_publishes_the_unchanged_draft_that_len_dead_letters():
    table, _, judge = model.judge_experiment(ReplayBackend())
    code, judged = table.index
    assert table.loc[code, "status"] == "dead_letter" and table.loc[judged, "status"] == "completed"
    assert table.loc[judged, "published characters"] == 45 > LIMIT
    assert [call["the model says"] for call in judge.calls] == ["yes"]
