"""Every lab 03 and lab 04 checker, handed what a learner can hand it, answers with a verdict.

Hypothesis draws answers of every kind a notebook cell can produce — None, ints (huge ones
too), floats (NaN, infinities), strings, bytes, lists, dicts, numpy values and arrays — and
functions that return any of those, raise (labkit's own LabError included) or sleep past the
time limit. Each checker must return a Check whose message is one short sentence or two,
written by the checker itself: never a traceback, never an exception out of the cell, and
never the safety net's "this answer could not be checked" (`labkit.core.progress._judged`),
which is there for answers nobody foresaw, not for these. The time limit is lowered to 0.05 s
so that a sleeping answer costs the suite little.
"""

from __future__ import annotations

import time
from typing import Any

import numpy
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from verdicts import own_verdict

from labkit.core import check as core_check
from labkit.core.errors import LabError
from labkit.routing import RetryPolicy
from labkit.routing import checks as lab04

LIMIT = 0.05


@pytest.fixture(autouse=True)
def _short_limit(monkeypatch):
    monkeypatch.setattr(core_check, "LIMIT_S", LIMIT)


def fast(examples: int) -> settings:
    return settings(max_examples=examples, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


# -- what a learner can hand in ---------------------------------------------------------------------

values = st.one_of(
    st.none(),
    st.just(...),
    st.booleans(),
    st.integers(),
    st.sampled_from([10**20, -(10**30), 10**400, 2**53 + 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.binary(max_size=8),
    st.lists(st.integers(-3, 30), max_size=5),
    st.lists(st.text(max_size=6), max_size=4),
    st.dictionaries(st.text(max_size=8), st.integers(-3, 30), max_size=4),
    st.builds(numpy.array, st.lists(st.integers(-5, 40), max_size=4)),
    st.sampled_from([numpy.float64("nan"), numpy.int64(12), numpy.bool_(True), numpy.zeros((2, 2))]),
)


def returning(value: Any):
    def answer(*args: Any, **kwargs: Any) -> Any:
        return value

    answer.__qualname__ = f"returning {type(value).__name__}"
    return answer


def raising(kind: type[BaseException]):
    def answer(*args: Any, **kwargs: Any) -> Any:
        raise kind("a learner's mistake")

    answer.__qualname__ = f"raising {kind.__name__}"
    return answer


def sleeping(*args: Any, **kwargs: Any) -> Any:
    time.sleep(LIMIT * 6)


functions = st.one_of(
    values.map(returning),
    st.sampled_from([ValueError, KeyError, TypeError, ZeroDivisionError, LabError, OSError,
                     RecursionError]).map(raising),
    st.just(sleeping),
)
answers = st.one_of(values, functions)


def assert_a_verdict(result: Any) -> None:
    """The checker's own verdict (`own_verdict`), ending as a sentence does: lab 03's and lab 04's
    checkers write whole sentences, where lab 01's and lab 02's may end on a schema's words."""
    own_verdict(result)
    message = result.message
    assert message.startswith("not attempted yet") or message.rstrip()[-1] in ".!?", message


# -- lab 04 -----------------------------------------------------------------------------------------

@fast(40)
@given(answers)
@example(returning(None))
def test_check_ready_answers_everything(answer):
    assert_a_verdict(lab04.check_ready(answer))


@fast(40)
@given(answers)
@example(returning(numpy.array([1, 2])))
def test_check_router_answers_everything(answer):
    assert_a_verdict(lab04.check_router(answer))


policies = st.one_of(
    answers,
    st.builds(lambda retry_on: RetryPolicy(max_attempts=4, initial_interval=0.2, retry_on=retry_on),
              functions),
    st.builds(lambda cap: RetryPolicy(max_attempts=4, initial_interval=0.2, max_interval=cap),
              st.floats(0.2, 10)),
)


@fast(40)
@given(policies)
@example(RetryPolicy(max_attempts=4, initial_interval=0.2, retry_on=raising(LabError)))
def test_check_retry_policy_lab04_answers_everything(policy):
    assert_a_verdict(lab04.check_retry_policy(policy))


RUNS = {"fetch": 1, "parse": 2, "audit": 1, "summarize": 2, "index": 2, "check": 2, "publish": 1}


@fast(60)
@given(st.one_of(answers, st.dictionaries(st.sampled_from(sorted(RUNS)), values, max_size=7)
                 .map(lambda d: {**RUNS, **d})))
@example({**RUNS, "fetch": 10**5000})
def test_check_goto_runs_answers_everything(runs):
    assert_a_verdict(lab04.check_goto_runs(runs))


@fast(60)
@given(answers)
def test_check_worst_case_answers_everything(calls):
    assert_a_verdict(lab04.check_worst_case(calls))


# -- every checker of both labs is covered above -----------------------------------------------------

def test_every_checker_of_labs_03_and_04_is_fuzzed_here():
    covered = {"lab04": {"check_ready", "check_router", "check_retry_policy", "check_goto_runs",
                         "check_worst_case"}}
    for module, names in (("lab04", lab04),):
        assert {name for name in names.__all__ if name.startswith("check_")} == covered[module]
