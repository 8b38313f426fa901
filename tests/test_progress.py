"""Checker outcomes are recorded as data for `labkit submit`, and recording never breaks a verdict."""

import json

from labkit.baseline import checks as lab01
from labkit.core.check import Check
from labkit.core.verdicts import load_progress, progress_path, record
from labkit.routing import checks as lab04


def test_each_attempt_is_recorded_with_the_first_passing_one(tmp_path):
    lab01.check_failure_stage("rollback-restore", "control", "wrong page")
    lab01.check_failure_stage("rollback-restore", "retrieval", "the right page lost a tie in search")
    lab01.check_failure_stage("rollback-restore", "retrieval", "the right page lost a tie in search")
    entry = load_progress("01")["exercises"]["failure_stage"]
    assert entry["attempts"] == 3
    assert entry["first_passed_attempt"] == 2
    assert entry["passed"] is True
    assert entry["payload"] == {
        "case_id": "rollback-restore",
        "stage": "retrieval",
        "reason": "the right page lost a tie in search",
    }


def test_an_unanswered_cell_is_not_an_attempt():
    # An untouched student copy runs every checker on None or `...`: that is no work done, so
    # nothing is recorded and `labkit submit` counts no attempt.
    for untouched in (None, ...):
        verdict = lab04.check_router(untouched)
        assert not verdict.passed and "not attempted yet" in verdict.message
    assert lab01.check_failure_stage(None, None, None).message == lab04.check_router(None).message
    assert load_progress("04")["exercises"] == {} and load_progress("01")["exercises"] == {}
    lab04.check_router(lambda verdict: None)
    assert load_progress("04")["exercises"]["router"]["attempts"] == 1


def test_a_corrupt_progress_file_is_replaced_not_fatal():
    path = progress_path("02")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    record("02", "run", Check(False, "x"))
    assert json.loads(path.read_text())["exercises"]["run"]["attempts"] == 1


def test_an_unwritable_runs_folder_warns_and_keeps_the_verdict(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("LABKIT_RUNS", str(blocker))
    verdict = lab04.check_router(lambda verdict: None)
    assert not verdict.passed
    assert "progress not saved" in capsys.readouterr().err


def test_a_long_verdict_is_wrapped_for_a_projector():
    verdict = Check(False, "word " * 60)
    lines = repr(verdict).splitlines()
    assert len(lines) > 1 and max(map(len, lines)) <= 110
