"""Declared questions: a verdict only for what a question declares, the same whatever else a cell or
a command computed beside it, and a malformed questions file refused in one line."""

from __future__ import annotations

import json

import pytest

from labkit.core import questions
from labkit.core.errors import FixtureError, LabError
from labkit.core.stats import compare_rows


def _pair(name, wins, n=50, losses=0):
    """A paired comparison of `n` trials where a alone passes `wins` and b alone `losses`."""
    a = {f"t{i}": float(i < wins) for i in range(n)}
    b = {f"t{i}": float(wins <= i < wins + losses) for i in range(n)}
    return compare_rows(name, a, b)


def test_a_declared_verdict_does_not_depend_on_what_else_is_printed():
    l1, l2 = _pair("L1: feedback - none", 9), _pair("L2: feedback - none", 2)
    extra = [_pair("L2+cut1: feedback - none", 0), _pair("feedback: L2+cut1 - L2", 40)]
    alone = questions.answer("lab04-feedback", [l1])
    together = questions.answer("lab04-feedback", [l2, *extra, l1])
    assert alone[0].name == together[0].name == "L1: feedback - none"  # declared first, in order
    assert alone[0].verdict == together[0].verdict == "a difference"
    assert alone[0].p_adjusted == together[0].p_adjusted == pytest.approx(2 * l1.p)  # Bonferroni over 2
    assert together[1].verdict.startswith("not distinguishable (MDE")
    assert [c.verdict for c in together[2:]] == ["exploratory: no verdict"] * 2


def test_a_comparison_on_other_units_than_declared_is_exploratory():
    shorter = questions.answer("lab04-feedback", [_pair("L1: feedback - none", 9, n=20)])
    assert shorter[0].exploratory and shorter[0].verdict == "exploratory: no verdict"


def test_a_model_name_before_a_declared_name_still_matches():
    ladder = questions.question("lab02-ladder")
    named = _pair("SmolLM2-135M example L3 T=0 − scripted loop", 10, n=ladder.units)
    assert not questions.answer("lab02-ladder", [named])[0].exploratory
    assert questions.answer("lab02-ladder", [_pair("example L3 T=0.7 − scripted loop", 10, n=24)])[
        0
    ].exploratory


def test_a_ceiling_leaves_no_room_for_the_declared_gain():
    a = {f"t{i}": 1.0 for i in range(50)}
    top = questions.answer("lab04-feedback", [compare_rows("L2: feedback - none", a, a)])[0]
    assert top.room == 0.0 and "no detectable gain fits: b leaves 0.00" in top.verdict


def test_the_declared_mde_is_the_declared_tests_at_its_level():
    feedback = questions.question("lab04-feedback")
    answered = questions.answer("lab04-feedback", [_pair("L1: feedback - none", 1)])[0]
    assert answered.mde == feedback.mde() == pytest.approx(0.18)  # 50 trials, 0.025 each, nothing behind
    rewrite = questions.question("lab02-rewrite")
    assert rewrite.test == "sign-flip permutation" and rewrite.mde() == pytest.approx(
        0.14
    )  # 40 cases, sd 0.3, one comparison
    # 38 requests weighed by their episodes are 22.7 effective units (Kish): the power and the MDE are
    # computed on those, not on 38 (power 0.64 on 38 equal units); 0.80 for 0.20 is out of reach.
    model = questions.question("lab03-model")
    assert (model.size, model.mde(), round(model.power(), 2)) == (22.7, pytest.approx(0.32), 0.39)
    assert (model.mde(0.62), round(model.power(sd=0.62), 2)) == (pytest.approx(0.43), 0.21)
    assert questions.question("lab02-rewrite").size == 40  # equal units: the declared number


def test_two_rows_of_one_declared_name_are_refused_in_one_line():
    with pytest.raises(LabError, match="two runs give the comparison 'L1: feedback - none'"):
        questions.answer("lab04-feedback", [_pair("L1: feedback - none", 3), _pair("L1: feedback - none", 4)])


def test_another_models_run_is_exploratory_whatever_its_label():
    ladder = questions.question("lab02-ladder")
    other = _pair("OtherModel example L3 T=0 − scripted loop", 10, n=ladder.units)
    assert questions.answer("lab02-ladder", [other])[0].exploratory


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda q: q["lab04-feedback"].pop("unit"), "'unit' is a required property"),
        (lambda q: q["lab04-feedback"].update(level=2), "key 'lab04-feedback': field 'level'"),
        (lambda q: q["lab04-feedback"].update(test="t-test"), "key 'lab04-feedback': field 'test'"),
    ],
)
def test_a_malformed_questions_file_is_one_line(tmp_path, monkeypatch, change, named):
    data = json.loads(questions.QUESTIONS.read_text(encoding="utf-8"))
    change(data)
    broken = tmp_path / "questions.json"
    broken.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setattr(questions, "QUESTIONS", broken)
    questions.questions.cache_clear()
    try:
        with pytest.raises(FixtureError, match=named) as raised:
            questions.questions()
        assert "\n" not in str(raised.value)
    finally:
        questions.questions.cache_clear()


def test_an_unknown_question_names_the_known_ones():
    with pytest.raises(FixtureError, match="no declared question 'nope' \\(known: lab02-ladder, "):
        questions.question("nope")
