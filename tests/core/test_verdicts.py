"""Every checker's verdict is recorded as data for `labkit submit` (labkit.core.verdicts), an
untouched cell is no attempt, and neither a checker nor recording ever raises at the learner."""

import json

import pytest

from labkit.core.check import Check
from labkit.core.verdicts import exercise, load_progress, progress_path, record


class Unprintable:
    def __repr__(self):
        raise RuntimeError("no repr")

    __str__ = __repr__


@exercise("02", "probe", payload=lambda answer: {"answer": answer})
def _checker(answer):
    if answer == "boom":
        raise RuntimeError("the checker itself broke")
    if answer == "not a check":
        return "yes"
    if answer == "noisy":
        print("a learner's debug line\n" * 3000, end="")
    return Check(answer == "right", "ok")


def test_each_attempt_is_recorded_with_the_first_passing_one_and_its_payload():
    for answer in ("wrong", "right", "right"):
        _checker(answer)
    entry = load_progress("02")["exercises"]["probe"]
    assert (entry["attempts"], entry["first_passed_attempt"], entry["passed"]) == (3, 2, True)
    assert entry["payload"] == {"answer": "right"}


def test_a_checker_that_breaks_answers_with_a_sentence_and_output_is_kept_out_of_the_way():
    broken = _checker("boom")
    assert not broken.passed
    assert "could not be checked (RuntimeError: the checker itself broke)" in broken.message
    assert not _checker("not a check").passed
    noisy = _checker("noisy")
    assert noisy.printed.startswith("(your code printed 69,000 characters")
    assert len(repr(noisy).splitlines()) <= 8


def test_an_untouched_answer_or_the_shipped_starting_point_is_not_an_attempt():
    def starting_point(task): ...

    assert not _checker(None).passed and not _checker(...).passed
    assert "still holds the `...` placeholder (line" in _checker(starting_point).message
    assert "probe" not in load_progress("02")["exercises"]
    _checker("wrong")
    assert load_progress("02")["exercises"]["probe"]["attempts"] == 1


@exercise("02", "probe_fn")
def _function_checker(fn):
    return Check(fn(2) == 4, "ok")


def test_a_bare_ellipsis_left_in_a_function_that_works_is_no_placeholder():
    def doubles(x):
        if x < 0:
            ...  # left from the starting point: a no-op
        return 2 * x

    def half_done(x):
        ...
        return x

    assert _function_checker(doubles).passed  # it was "not attempted yet"
    left = _function_checker(half_done)
    assert not left.passed and "still holds the `...` placeholder (line" in left.message
    assert load_progress("02")["exercises"]["probe_fn"]["attempts"] == 1  # the failing one is no attempt


def test_a_payload_that_is_not_json_data_is_saved_as_its_short_repr():
    for answer, saved in (
        (Unprintable(), "<Unprintable instance at"),
        (10**5000, "a dict"),
        ({1: 2, "a": 3}, "{"),
    ):
        assert not _checker(answer).passed
        payload = load_progress("02")["exercises"]["probe"]["payload"]
        assert str(payload.get("answer", payload) if isinstance(payload, dict) else payload).startswith(saved)
    assert load_progress("02")["exercises"]["probe"]["attempts"] == 3


def test_a_corrupt_progress_file_is_replaced_not_fatal():
    path = progress_path("02")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    record("02", "run", Check(False, "x"))
    assert json.loads(path.read_text())["exercises"]["run"]["attempts"] == 1


@pytest.mark.parametrize(
    "entry",
    [
        ["a", "list"],
        "text",
        {"attempts": "3"},
        {"attempts": -2},
        {"attempts": True},
        {"attempts": 2.5},
        {"attempts": 2, "first_passed_attempt": "x"},
    ],
)
def test_a_hand_edited_entry_starts_again_and_never_breaks_the_checker(entry):
    path = progress_path("02")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"lab": "02", "exercises": {"probe": entry, "other": {"attempts": 4}}}))
    assert _checker("right").passed
    exercises = load_progress("02")["exercises"]
    assert (exercises["probe"]["attempts"], exercises["probe"]["first_passed_attempt"]) == (1, 1)
    assert exercises["other"] == {"attempts": 4}  # what was not touched is kept


def test_an_unwritable_runs_folder_warns_and_keeps_the_verdict(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("LABKIT_RUNS", str(blocker))
    assert _checker("right").passed
    assert "progress not saved" in capsys.readouterr().err
