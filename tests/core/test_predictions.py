"""A prediction cell: one sentence comparing what the learner wrote with the result, never a
traceback, never graded; the first prediction is kept with their progress."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labkit.core.predictions import load_predictions, predict, predictions_path
from labkit.core.verdicts import load_progress


def test_nothing_written_says_so_and_records_nothing():
    for untouched in (None, ...):
        said = predict("01", "workflow_passes", untouched, 17)
        assert said.matched is None and repr(said) == "no prediction written; the result is 17."
    assert load_predictions("01") == {} and not predictions_path("01").exists()


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
    said = predict("01", "p", value, actual)
    assert said.matched is matched and phrase in said.message and "\n" not in said.message


def test_the_first_prediction_is_kept_beside_the_progress_and_submit_is_untouched():
    predict("01", "workflow_passes", 12, 17)
    predict("01", "workflow_passes", 17, 17)  # after seeing the table
    entry = load_predictions("01")["workflow_passes"]
    assert entry["first"]["value"] == 12 and entry["first"]["matched"] is False
    assert entry["latest"]["value"] == 17 and entry["latest"]["matched"] is True and entry["count"] == 2
    assert load_progress("01")["exercises"] == {}  # what `labkit submit` reads holds no prediction


def test_a_corrupt_predictions_file_is_replaced_and_an_unwritable_one_warns(capsys):
    path = predictions_path("02")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert predict("02", "p", 1, 1).matched is True
    assert json.loads(path.read_text())["predictions"]["p"]["count"] == 1
    path.unlink()
    path.mkdir()  # a folder where the file should be: cannot be replaced
    assert predict("02", "p", 1, 2).matched is False
    assert "prediction not saved" in capsys.readouterr().err


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
    said = predict("03", "p", value, actual)
    assert said.message.endswith(".") and len(said.message) < 400
