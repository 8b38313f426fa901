"""Issue 36: a right answer passes in any honest form (numpy's integers from a pandas sum, an exact
Fraction, a name with "the" in front or in another case), a wrong one is still refused, and a
refusal says what to reconsider without the figure it asks for."""

import math
import re
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from verdicts import verdict

from labkit.baseline.controllers import scripted
from labkit.core.answers import name_in, real, whole
from labkit.core.verdicts import load_progress
from labkit.exercises import lab01, lab02, lab04
from labkit.routing import Next, RetryPolicy

RUNS = {"fetch": 1, "parse": 2, "audit": 1, "summarize": 2, "index": 2, "check": 2, "publish": 1}


def says(message: str, number: int) -> bool:
    """Whether `message` states `number` as digits of its own (2 in "2 runs", not in "24")."""
    return re.search(rf"(?<!\d){number}(?!\d)", message) is not None


# -- what counts as an integer, a number, a name -------------------------------------------------


@pytest.mark.parametrize(
    ("value", "is_whole", "is_real"),
    [
        (3, True, True),
        (1, True, True),
        (np.int64(992), True, True),
        (np.int64(1), True, True),
        (np.int32(-1), True, True),
        (np.uint8(7), True, True),
        (10**40, True, True),
        (2.0, True, True),  # a count a pandas sum gives as a float
        (np.float64(12.0), True, True),
        (float("inf"), False, True),
        (float("nan"), False, True),
        (0.5, False, True),
        (np.float64(0.25), False, True),
        (Fraction(1, 2), False, True),
        (Fraction(1, 3), False, True),
        (Fraction(4, 2), True, True),  # exact and integral: lab 01's rank 2 as Fraction(2)
        (Decimal("12"), True, True),  # round 9: a count written as a Decimal (no numbers.Real)
        (Decimal("12.00"), True, True),
        (Decimal("12.5"), False, True),  # round 10: an exact chance as a Decimal is a number
        (Decimal("NaN"), False, True),
        (Decimal("Infinity"), False, True),
        (True, False, False),
        (False, False, False),
        (np.bool_(True), False, False),
        (np.bool_(False), False, False),
        ("3", False, False),
        ("0.5", False, False),
        (1j, False, False),
        (None, False, False),
    ],
    ids=repr,
)
def test_integers_are_whole_and_real_other_reals_only_real_bools_strings_and_complex_neither(
    value, is_whole, is_real
):
    assert (whole(value), real(value)) == (is_whole, is_real)


@pytest.mark.parametrize(
    ("answer", "named"),
    [
        ("adaptive loop", "adaptive loop"),
        ("the adaptive loop", "adaptive loop"),
        ("  The Adaptive   LOOP ", "adaptive loop"),
        ("THE adaptive loop\n", "adaptive loop"),
        ("The adaptive loop. ", "adaptive loop"),  # written as a sentence
        ("\u201cthe adaptive loop.\u201d", "adaptive loop"),  # quoted
        ("adaptive loop!", None),
        ("the", None),
        ("a adaptive loop", None),
        ("adaptive", "adaptive loop"),  # the kind's word left out
        ("Adaptive-Loop", "adaptive loop"),
        ("search read", None),
        ("search/read", "search/read workflow"),
        ("loop", None),  # the kind alone names nothing
        ("theadaptive loop", None),
        (3, None),
        (None, None),
    ],
    ids=repr,
)
def test_a_name_matches_with_or_without_the_and_anything_else_names_nothing(answer, named):
    assert name_in(answer, ["search/read workflow", "adaptive loop"]) == named


def test_a_name_shared_by_two_names_nothing():
    assert name_in("scripted", ["scripted loop", "scripted workflow"]) is None
    assert name_in("the unread citation rule", ["final", "unread_citation"]) == "unread_citation"


# -- lab 01 --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "passed", "phrase"),
    [
        ("the spell-correct-first workflow", True, "the spell-correct-first workflow passes 3 of 6"),
        (" The Spell-Correct-First Workflow ", True, "the spell-correct-first workflow passes 3 of 6"),
        ("spell-correct-first workflow", True, "the spell-correct-first workflow passes 3 of 6"),
        ("the adaptive loop", False, "the adaptive loop passes 0 of 6"),  # a wrong one is still refused
        ("the best one", False, "name one of the controllers"),
    ],
)
def test_the_two_tool_winner_passes_with_the_and_a_wrong_one_is_still_refused(name, passed, phrase):
    verdict(lab01.check_two_tool_winner(name), passed, phrase)


# -- lab 02 --------------------------------------------------------------------------------------


@pytest.fixture
def replayed(monkeypatch):
    monkeypatch.setenv("LABKIT_MODEL", "ollama:nothing-here")  # replayed, whatever the live backend


def test_a_budget_summed_by_pandas_passes(replayed):
    verdict(lab02.check_budget(np.int64(992)), True, "992 tokens")
    assert load_progress("02")["exercises"]["budget"]["payload"] == {"tokens": 992}
    verdict(lab02.check_budget(np.int64(991)), False, "too small")
    verdict(lab02.check_budget(np.int64(993)), False, "more than this episode needs")
    verdict(lab02.check_budget(np.bool_(True)), False, "positive int")


@pytest.mark.parametrize("stop", ["tool_limit", "final", "invalid_decision", "the turn_limit"])
def test_a_wrong_rule_is_refused_without_the_rule_or_its_figure(stop):
    check = lab02.check_missing_rule(stop, 23)
    verdict(check, False, "Which rule refused the answers the model did give?")
    assert "unread_citation" not in check.message
    message = check.message.replace("at L1", "")  # the prompt's rung is no figure
    assert not any(says(message, n) for n in (1, 22, 23, 24)), check.message


def exact_pass_hat_k(c, n, k):
    return Fraction(math.comb(c, k), math.comb(n, k))


@pytest.mark.parametrize(
    ("checker", "args", "passed", "phrases"),
    [
        pytest.param(
            lab02.check_missing_rule,
            ("unread_citation", np.int64(23)),
            True,
            ["23 of these 24 episodes"],
            id="missing rule, a numpy figure",
        ),
        pytest.param(
            lab02.check_missing_rule,
            (" The Unread_Citation ", 23),
            True,
            ["23 of these 24 episodes"],
            id="missing rule, any spelling of its name",
        ),
        pytest.param(
            lab02.check_missing_rule,
            ("unread_citation", np.int64(22)),
            False,
            ["not 22", "replay_trials"],
            id="missing rule, a wrong numpy figure",
        ),
        pytest.param(
            lab02.check_missing_rule,
            ("unread_citation", 23.0),
            True,
            ["23 of these 24 episodes"],
            id="missing rule, a float with nothing after the point",
        ),
        pytest.param(
            lab02.check_pass_hat_k,
            (exact_pass_hat_k,),
            True,
            ["C(c,k)/C(n,k)"],
            id="pass^k, an exact Fraction",
        ),
        pytest.param(
            lab02.check_pass_hat_k,
            (lambda c, n, k: np.float64(exact_pass_hat_k(c, n, k)),),
            True,
            [],
            id="pass^k, a numpy float",
        ),
        pytest.param(
            lab02.check_pass_hat_k,
            (lambda c, n, k: Fraction(c, n) ** k,),
            False,
            ["without replacement"],
            id="pass^k, a Fraction drawn with replacement",
        ),
        pytest.param(
            lab02.check_pass_hat_k,
            (lambda c, n, k: Fraction(3, 2),),
            False,
            ["between 0 and 1"],
            id="pass^k, a Fraction above 1",
        ),
        pytest.param(
            lab02.check_pass_hat_k,
            (lambda c, n, k: np.bool_(True),),
            False,
            ["return a number"],
            id="pass^k, a numpy bool",
        ),
        pytest.param(
            lab02.check_stop_policy,
            (" The FINAL ", scripted),
            True,
            ["stop=final"],
            id="a stop reason named in any case",
        ),
    ],
)
def test_lab02s_checkers_take_an_honest_form_and_still_refuse_a_wrong_answer(checker, args, passed, phrases):
    verdict(checker(*args), passed, *phrases)


# -- lab 04 --------------------------------------------------------------------------------------


def test_goto_runs_counted_with_numpy_pass_and_are_recorded_as_ints():
    verdict(lab04.check_goto_runs({job: np.int64(n) for job, n in RUNS.items()}), True, "re-ran it")
    payload = load_progress("04")["exercises"]["goto_runs"]["payload"]
    assert payload == RUNS and all(type(n) is int for n in payload.values())


@pytest.mark.parametrize("job", list(RUNS))
@pytest.mark.parametrize("off", [-1, 1])
def test_a_wrong_goto_count_is_refused_without_the_true_count(job, off):
    said = RUNS[job] + off  # every job runs at least once: 0 at the least
    check = lab04.check_goto_runs(RUNS | {job: np.int64(said)})
    verdict(check, False, f"{said} is not how often {job} runs")
    assert not says(check.message, RUNS[job]), check.message


@pytest.mark.parametrize(
    ("answer", "passed", "phrase"),
    [
        (np.int64(12), True, "12 = max_visits × max_attempts"),
        (np.int64(7), False, "the tries are not added to the visits"),
        (np.int64(13), False, "13 is not it"),
        (True, False, "whole number"),
    ],
)
def test_the_worst_case_passes_as_a_numpy_int(answer, passed, phrase):
    verdict(lab04.check_worst_case(answer), passed, phrase)


@pytest.mark.parametrize("attempts", [1, 2, 3, 5, 6])
def test_a_wrong_number_of_attempts_is_refused_without_the_right_one(attempts):
    check = lab04.check_retry_policy(RetryPolicy(max_attempts=attempts, initial_interval=0.2))
    verdict(check, False, f"max_attempts={attempts} allows {attempts - 1} retries", "counts the first try")
    rest = check.message.replace(f"max_attempts={attempts} allows {attempts - 1} retries", "")
    assert "need" not in rest and not says(rest, 4), check.message


def test_the_router_hint_states_the_count_then_the_limit():
    def vague(verdict):
        return Next.Continue if verdict["chars"] <= 26 else Next.back_to_with("revise", "too long")

    check = lab04.check_router(vague)
    verdict(check, False, "should state the count (27) and the limit (26)", "'27 characters, limit 26'")
