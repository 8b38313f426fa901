"""Lab 04's feedback experiment with a model reviser: replay, the code criterion, replay misses."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("labkit.model")

from labkit.core.errors import LabError  # noqa: E402
from labkit.model import ReplayBackend, ReplayMiss, Reply, read_records, trial_files  # noqa: E402
from labkit.routing import FakeClock  # noqa: E402
from labkit.routing import model_reviser as model  # noqa: E402
from labkit.routing import reviser_trials as trials  # noqa: E402
from labkit.routing.experiments import DRAFT, loop_graph  # noqa: E402

DRAFT_CHARS = len(DRAFT)  # 45: SmolLM2 returned the draft unchanged on every visit


class Shortener:
    """A backend that 'revises' by dropping the last word of the previous text, and counts asks."""

    name = "shortener"

    def __init__(self) -> None:
        self.requests = []

    def provenance(self) -> dict:
        return {"backend": self.name}

    def complete(self, request) -> Reply:
        self.requests.append(request)
        words = DRAFT.split()[: len(DRAFT.split()) - request.turn]
        text = json.dumps({"action": "final", "answer": " ".join(words), "citation": "none"})
        return Reply(text=text, prompt_tokens=10, completion_tokens=5)


@pytest.fixture
def replay(monkeypatch):
    monkeypatch.delenv("LABKIT_MODEL", raising=False)
    monkeypatch.delenv("LABKIT_RECORD", raising=False)


recorded = pytest.mark.skipif(not model.recorded(), reason="no recorded routing trials")


@recorded
def test_replay_reproduces_the_recorded_smollm2_run_exactly(replay):
    chars, summary, runs, revisers = model.model_feedback_experiment()
    assert {name: [len(text) for text in r.history] for name, r in revisers.items()} == {
        "without feedback": [DRAFT_CHARS] * 5, "with feedback": [DRAFT_CHARS] * 5}
    assert {name: run.status for name, run in runs.items()} == {
        "without feedback": "dead_letter", "with feedback": "dead_letter"}
    assert set(revisers["with feedback"].history) == {DRAFT}  # it copied the draft, told or not
    assert runs["with feedback"].reason.endswith(
        "last feedback: '45 characters, limit is 26'; cancelled: publish")
    assert list(summary["publish"]) == ["cancelled", "cancelled"]
    assert chars.to_dict(orient="list") == {name: ["45"] * 5 for name in model.VARIANTS}
    assert model.source(revisers["with feedback"]) == (
        "replayed from routing-smollm2.jsonl (local SmolLM2-135M-Instruct.Q4_1.gguf, temperature 0)")


@recorded
def test_the_recording_is_live_smollm2_at_temperature_0_one_call_per_visit():
    by_file = {path.name: [record for _, record in read_records(path) if record["kind"] == "call"]
               for path in trial_files(model.LAB)}
    # L1 (any text) and L2 (deletions, the draft allowed): five visits per variant, dead letters;
    # L2 made to cut a word per visit: three visits per variant, converged.
    expected = {"routing-smollm2.jsonl": ("", "L1", 5), "routing-smollm2-l2.jsonl": ("", "L2", 5),
                "routing-smollm2-l2cut.jsonl": ("+cut1", "L2", 3)}
    # The model as judge (lab 04 §6): one revise visit, then its judge's four texts and one loop verdict.
    judge = by_file.pop("routing-smollm2-judge.jsonl")
    assert sorted((c["case"], c["turn"], c["rung"]) for c in judge) == sorted(
        [("announcement+judged", 1, "L1"), ("judge+loop+1", 1, "L2")]
        + [(f"judge+texts+{n}", 1, "L2") for n in range(1, 5)])
    # ... and the sampled trials (k=5 at T=0 and T=0.7, every control), tested further below.
    assert set(by_file) == set(expected) | {"routing-trials-smollm2-k5.jsonl"}
    sampled_calls = by_file.pop("routing-trials-smollm2-k5.jsonl")
    assert {c["options"]["temperature"] for c in sampled_calls} == {0.0, 0.7}
    assert {(c["provenance"]["backend"], c["provenance"]["model"]) for c in sampled_calls} == {
        ("local", "SmolLM2-135M-Instruct.Q4_1.gguf")}
    for name, (cut, rung, visits) in expected.items():
        assert sorted((c["case"], c["turn"]) for c in by_file[name]) == sorted(
            (f"announcement+{suffix}{cut}", turn) for suffix in model.VARIANTS.values()
            for turn in range(1, visits + 1))
        assert {c.get("rung", "L1") for c in by_file[name]} == {rung}
    calls = [call for found in by_file.values() for call in found] + judge
    assert {c["options"]["temperature"] for c in calls} == {0.0}
    assert {(c["provenance"]["backend"], c["provenance"]["model"]) for c in calls} == {
        ("local", "SmolLM2-135M-Instruct.Q4_1.gguf")}


def test_the_review_is_code_and_the_model_is_only_asked_to_revise():
    backend = Shortener()
    chars, summary, runs, revisers = model.model_feedback_experiment(backend=backend)
    # Each lap drops one word; the review (len, in code) accepts the first text within 26.
    assert revisers["with feedback"].history == ["Search is now much faster everywhere you",
                                                 "Search is now much faster everywhere",
                                                 "Search is now much faster"]
    assert runs["with feedback"].results["publish"] == "Search is now much faster"  # 25 characters
    # One model call per revise visit, keyed by the variant's task and the visit: no call
    # came from the review, and none asked the model to judge anything.
    asked = [(r.case, r.turn) for r in backend.requests]
    assert asked == [("announcement+no-feedback", n) for n in range(1, 4)] + [
        ("announcement+feedback", n) for n in range(1, 4)]
    assert all(runs[name].visits["revise"] == runs[name].visits["review"] == 3 for name in runs)
    assert not any("review" in m["content"].lower() or "judge" in m["content"].lower()
                   for r in backend.requests for m in r.messages)


def test_only_the_feedback_variant_is_told_why():
    backend = Shortener()
    model.model_feedback_experiment(backend=backend, max_visits=2)
    told = {r.case: r.messages[-1]["content"] for r in backend.requests if r.turn == 2}
    assert told == {"announcement+no-feedback": "Revise it again.",
                    "announcement+feedback": "40 characters, limit is 26. Revise it again."}
    # both see their own previous reply, verbatim, as the assistant's turn
    assert all(r.messages[2]["role"] == "assistant" for r in backend.requests if r.turn == 2)


@recorded
def test_an_unrecorded_request_is_a_clear_replay_miss(replay):
    with pytest.raises(ReplayMiss, match=r"case 'announcement\+no-feedback', trial 0, turn 1 was asked "
                                         r"something else: message 1 \(user\) differs"):
        model.model_feedback_experiment(limit=30)  # the limit is part of what the model is shown
    reviser = model.ModelReviser("unrecorded", backend=ReplayBackend())
    graph, _ = loop_graph(feedback=True, reviser=reviser)
    with pytest.raises(LabError, match=r"no recorded reply for lab 'routing', "
                                       r"case 'announcement\+unrecorded', trial 0, turn 1 in "
                                       r"routing-smollm2-judge.jsonl, routing-smollm2-l2.jsonl, "
                                       r"routing-smollm2-l2cut.jsonl, routing-smollm2.jsonl"):
        graph.run(clock=FakeClock())


@recorded
def test_a_sixth_visit_was_never_recorded(replay):
    with pytest.raises(ReplayMiss, match="turn 6"):
        model.model_feedback_experiment(max_visits=6)


def test_a_decision_without_answer_text_fails_the_revise_job():
    class Silent(Shortener):
        def complete(self, request):
            return Reply(text=json.dumps({"action": "final", "answer": 3, "citation": "none"}))

    reviser = model.ModelReviser("with feedback", backend=Silent())
    graph, _ = loop_graph(feedback=True, reviser=reviser)
    result = graph.run(clock=FakeClock())
    assert result.status == "failed"
    assert "has no answer text" in result.errors["revise"]


@recorded
def test_the_control_table_has_each_level_and_variant_as_recorded(replay):
    table, revisers = model.control_table()
    assert list(table.index.get_level_values(0).unique()) == [label for label, _, _ in model.CONTROLS]
    free, deletions, cut = (table.xs(label)["characters per visit"].tolist()
                            for label, _, _ in model.CONTROLS)
    assert free == deletions == ["45 45 45 45 45"] * 2
    assert cut == ["40 36 25"] * 2
    assert table["same texts both variants"].all()
    published = table.xs("must cut a word (L2, min_cut=1)")["published"].tolist()
    assert published == ["Search is now much faster"] * 2
    assert revisers["any text (L1)"]["with feedback"].history == [DRAFT] * 5


def test_the_control_table_reaches_any_backend():
    table, _ = model.control_table(backend=Shortener())
    assert table.loc[("any text (L1)", "with feedback"), "characters per visit"] == "40 36 25"
    assert table.loc[("any text (L1)", "with feedback"), "status"] == "completed"


def test_the_control_tables_trials_sample_with_their_own_seed_and_the_asked_temperature():
    shortener = Shortener()
    table, revisers = model.control_table(backend=shortener, temperature=0.7, seed=5, k=2)
    assert table.index.names == ["reviser may write", "variant", "trial"] and len(table) == 12
    assert table.loc[("any text (L1)", "with feedback", 1), "characters per visit"] == "40 36 25"
    assert {(r.trial, r.seed) for r in shortener.requests} == {(0, 5), (1, 6)}
    assert {r.temperature for r in shortener.requests} == {0.7}
    with pytest.raises(LabError, match="k \\(trials per variant\\) must be a positive int"):
        model.control_table(backend=Shortener(), k=0)


# -- k trials, the scripted baseline, intervals ---------------------------------------------

SAMPLED = "routing-trials-smollm2-k5.jsonl"


def test_the_k5_recording_of_the_reviser_is_committed_where_replay_reads():
    assert SAMPLED in {path.name for path in trial_files(model.LAB)}


def test_the_word_cutter_baseline_cuts_one_word_per_visit_whatever_it_is_told():
    from labkit.routing.experiments import cutter_experiment

    summary, cutters = cutter_experiment()
    for cutter in cutters.values():
        assert cutter.history == ["Search is now much faster everywhere you",
                                  "Search is now much faster everywhere", "Search is now much faster"]
        # Each text is a deletion of the one before with one word cut: admissible at L2, min_cut=1.
        texts = [DRAFT, *cutter.history]
        assert all(new in model.deletions_of(old, 1) for old, new in zip(texts, texts[1:], strict=False))
    assert list(summary["published"]) == ["Search is now much faster"] * 2
    assert cutter_experiment()[0].equals(summary)  # reproducible: a rule written in advance


def test_the_reviser_table_reaches_any_backend_with_baseline_rows_and_intervals():
    table = trials.reviser_table(backend=Shortener(), k=2)
    assert table.index.names == ["reviser", "control", "variant", "T"]
    assert list(table.index.get_level_values("reviser").unique()) == ["model", "word cutter (scripted)"]
    assert len(table.loc["model"]) == len(trials.GRID_CONTROLS) * len(model.VARIANTS) * 2
    assert table["published_ci"].str.fullmatch(r"\[\d\.\d\d, \d\.\d\d\]").all()
    assert table["final chars_ci"].str.fullmatch(r"\[\d+\.\d, \d+\.\d\]").all()
    row = table.loc[("model", "L1", "feedback", 0.7)]
    assert (row["trials"], row["published"], row["published_ci"]) == (2, 1.0, "[0.34, 1.00]")  # Wilson 2/2
    assert table.loc[("word cutter (scripted)", "L2+cut1", "feedback", "-"), "final chars"] == 25


def test_the_feedback_comparison_is_paired_by_trial_and_says_when_it_cannot_tell():
    table = trials.reviser_comparisons(backend=Shortener(), k=3)
    assert list(table.index.get_level_values("control")) == list(trials.GRID_CONTROLS)
    # The shortener ignores the feedback: the same texts either way, no difference to find.
    assert set(table["difference"]) == {0.0} and set(table["verdict"]) == {"not distinguishable"}
    assert set(table["mcnemar_p"]) == {"1.000"}


def test_the_recorded_reviser_table_has_k5_at_t07_and_one_greedy_trial(replay):
    table = trials.reviser_table()
    sampled_rows = table.xs(0.7, level="T")
    assert set(sampled_rows["trials"]) == {5} and len(sampled_rows) == 6
    assert set(table.xs(0.0, level="T")["trials"]) == {1}
    assert "word cutter (scripted)" in table.index.get_level_values("reviser")


def test_the_greedy_trials_repeat_one_another(replay):
    from labkit.model.replay import TRIALS

    episodes = [r for _, r in read_records(TRIALS / SAMPLED) if r["kind"] == "episode"]
    assert len(episodes) == 60  # 3 controls x 2 variants x (T=0, T=0.7) x 5 trials
    greedy: dict = {}
    for e in episodes:
        if e["temperature"] == 0.0:
            greedy.setdefault((e["control"], e["variant"]), []).append(e["texts"])
    assert len(greedy) == 6
    assert all(len(runs) == 5 and all(texts == runs[0] for texts in runs) for runs in greedy.values())
