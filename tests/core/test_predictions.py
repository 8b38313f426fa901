"""A prediction cell: one sentence comparing what the learner wrote with the result, never a
traceback, never graded."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labkit.core.predictions import predict


def test_nothing_written_says_so():
    for untouched in (None, ...):
        said = predict(untouched, 17)
        assert said.matched is None and repr(said) == "no prediction written; the result is 17."


@pytest.mark.parametrize(
    "value, actual, matched, phrase",
    [
        (17, 17, True, "you predicted 17; the result is 17: right."),
        (15, 17, False, "2 more than that"),
        (np.int64(18), 17, False, "1 fewer than that"),
        (True, True, True, "right"),
        (False, True, False, "not this time"),
        ("Adaptive  loop", "adaptive loop", True, "right"),
        (
            ["two-rule workflow", "keyword route"],
            ["adaptive loop", "two-rule workflow"],
            False,
            "you had two-rule workflow; you missed adaptive loop; not keyword route",
        ),
        ("seventeen", 17, None, "(a number)"),
    ],
)
def test_a_prediction_is_compared_in_one_sentence(value, actual, matched, phrase):
    said = predict(value, actual)
    assert said.matched is matched and phrase in said.message and "\n" not in said.message


class Raising:
    def __eq__(self, other):
        raise RuntimeError("no")

    def __repr__(self):
        raise RuntimeError("no repr")

    __hash__ = None


ANSWERS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**300, max_value=10**4000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5000),
    st.lists(st.text(max_size=30), max_size=200),
    st.dictionaries(st.text(max_size=5), st.integers()),
    st.just(np.array([1, 2])),
    st.just(np.float64("nan")),
    st.just(Raising()),
    st.just(object()),
)


@settings(max_examples=150, deadline=None)
@given(value=ANSWERS, actual=st.sampled_from([17, "adaptive loop", ["a", "b"], True, 0.5]))
def test_any_prediction_gets_a_sentence(value, actual):
    said = predict(value, actual)
    assert said.message.endswith(".") and len(said.message) < 400
