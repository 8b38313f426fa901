"""The model as the judge (lab 04 §6): replayed from fixtures/trials/routing-smollm2-judge.jsonl."""

from __future__ import annotations

import json

import pytest

from labkit.model import ReplayBackend, Reply
from labkit.routing import Next
from labkit.routing.experiments import LIMIT
from labkit.routing.model_reviser import (
    JUDGE_FEEDBACK,
    ModelJudge,
    judge_experiment,
    judge_table,
    judged_texts,
)


class Says:
    """A backend that answers every request with the final answer `answer`."""

    name = "fake"

    def __init__(self, answer: str):
        self.answer = answer
        self.requests = []

    def complete(self, request):
        self.requests.append(request)
        return Reply(json.dumps({"action": "final", "answer": self.answer, "citation": "none"}))

    def provenance(self):
        return {"backend": self.name}


def test_the_judge_is_held_to_yes_or_no_and_routes_on_it():
    yes, no = ModelJudge("t", backend=Says("yes")), ModelJudge("t", backend=Says("no"))
    assert yes({"text": "x" * 40, "chars": 40}) == Next.Continue
    assert no({"text": "short", "chars": 5}) == Next.back_to_with("revise", JUDGE_FEEDBACK)
    request = yes.policy.backend.requests[0]
    assert request.case == "judge+t+1"
    assert request.rung == "L2"
    assert request.schema["anyOf"][0]["properties"]["answer"]["enum"] == ["yes", "no"]
    assert yes.calls[0]["characters"] == 40 and yes.calls[0]["the model says"] == "yes"


def test_a_judge_reply_that_is_not_yes_or_no_fails_the_review():
    with pytest.raises(ValueError, match="not yes or no"):
        ModelJudge("t", backend=Says("maybe")).judge("text")


def test_recorded_judge_says_yes_to_every_text_len_refuses_three():
    table = judge_table(ReplayBackend())
    assert list(table.index) == judged_texts()
    assert list(table["characters"]) == [45, 33, 28, 24]
    assert list(table[f"len(text) <= {LIMIT}"]) == [False, False, False, True]
    assert set(table["the model says"]) == {"yes"}


def test_recorded_judge_publishes_the_unchanged_draft_that_len_dead_letters():
    table, runs, judge = judge_experiment(ReplayBackend())
    code, model = table.index
    assert table.loc[code, "status"] == "dead_letter" and table.loc[code, "published"] == "-"
    assert table.loc[model, "status"] == "completed"
    assert table.loc[model, "published characters"] == 45 > LIMIT
    assert table.loc[model, "revise runs"] == 1
    assert [call["the model says"] for call in judge.calls] == ["yes"]
