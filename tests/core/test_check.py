"""A learner's code is buggy, not hostile (labkit.core.check): stopped when it hangs, handed copies,
its crash named by its own line, its output kept out of the verdict's way."""

import inspect
import sys
import threading
import time

import pytest

from labkit.core.check import (
    Check,
    Raised,
    TimedOut,
    call,
    captured,
    copied,
    crashed,
    learner_line,
    time_limit,
)
from labkit.exercises import lab01, lab02, lab03, lab04


def test_a_function_that_sleeps_is_stopped_at_the_limit():
    start = time.perf_counter()
    with pytest.raises(Raised) as raised:
        call(time.sleep, 60, limit=0.2)
    assert isinstance(raised.value.error, TimedOut)
    assert time.perf_counter() - start < 2
    verdict = crashed(raised.value.error, "on case deploy-build")
    assert verdict.message.startswith("your function did not return within 0.2 s on case deploy-build")


def test_a_loop_that_swallows_every_exception_is_still_stopped():
    def stubborn():
        while True:
            try:
                while True:
                    pass
            except Exception:  # noqa: BLE001 - what a learner might write
                continue

    start = time.perf_counter()
    with pytest.raises(Raised) as raised:
        call(stubborn, limit=0.2)
    assert isinstance(raised.value.error, TimedOut) and time.perf_counter() - start < 2


def test_outside_the_main_thread_the_limit_holds_through_a_daemon_thread():
    outcome = {}

    def checker():
        try:
            call(time.sleep, 60, limit=0.2)
        except Raised as raised:
            outcome["error"] = raised.error

    worker = threading.Thread(target=checker)
    worker.start()
    worker.join(5)
    assert isinstance(outcome.get("error"), TimedOut)


def test_a_limit_inside_a_shorter_one_keeps_the_earlier_deadline():
    start = time.perf_counter()
    with pytest.raises(TimedOut), time_limit(0.2), time_limit(30):
        time.sleep(10)
    assert time.perf_counter() - start < 2


def test_the_timer_is_off_after_the_block_and_an_inner_limit_keeps_the_outer_deadline():
    start = time.perf_counter()
    with time_limit(1.0):
        with time_limit(0.9):
            time.sleep(0.5)  # the outer deadline keeps running meanwhile
        with pytest.raises(TimedOut):
            time.sleep(2)  # the outer limit is still armed
    assert time.perf_counter() - start < 1.45  # at its own deadline (1 s), not 0.5 s later (1.5 s)
    time.sleep(0.4)  # nothing fires after the block


def test_the_learners_function_gets_copies_of_what_it_is_handed():
    shared = {"action": "final", "answer": "x", "citation": "y"}

    def mutating(decision):
        decision.pop("action")
        return len(decision)

    assert call(mutating, shared) == 2
    assert shared == {"action": "final", "answer": "x", "citation": "y"}
    lock = threading.Lock()
    assert copied(lock) is lock  # what cannot be copied is handed as it is


def test_a_crash_names_the_learners_own_line():
    def learners(hits):
        total = 0
        return hits + [total]

    with pytest.raises(Raised) as raised:
        call(learners, ("a", "b"))
    line = learner_line(raised.value.error)
    assert line.startswith("line ") and "return hits + [total]" in line
    message = crashed(raised.value.error, "on case x").message
    assert message.startswith(
        'your function raised TypeError: can only concatenate tuple (not "list") to tuple'
    )
    assert "on case x at line" in message and "`return hits + [total]`" in message


def test_a_crash_inside_labkit_or_the_standard_library_still_names_the_learners_line():
    import json

    def learners(value):
        return json.dumps(value)

    with pytest.raises(Raised) as raised:
        call(learners, {1, 2})
    assert "return json.dumps(value)" in learner_line(raised.value.error)


def test_output_is_kept_bounded_and_counted():
    with captured(limit=50) as kept:
        for i in range(1000):
            print(f"debug {i}")
    assert kept.count == sum(len(f"debug {i}\n") for i in range(1000))
    note = kept.summary(lines=3)
    assert note.startswith(f"(your code printed {kept.count:,} characters")
    assert note.splitlines()[1:] == ["  | debug 0", "  | debug 1", "  | debug 2"]


def test_a_long_verdict_is_wrapped_for_a_projector():
    lines = repr(Check(False, "word " * 60)).splitlines()
    assert len(lines) > 1 and max(map(len, lines)) <= 110


def _exits(*args, **kwargs):
    sys.exit("done")


@pytest.mark.parametrize(
    "checker",
    [
        getattr(module, name)
        for module in (lab01, lab02, lab03, lab04)
        for name in module.__all__
        if name.startswith("check_")
    ],
    ids=lambda checker: checker.__name__,
)
def test_a_learners_sys_exit_is_a_verdict_not_the_end_of_the_kernel(checker, monkeypatch):
    """sys.exit() in a learner's function raises SystemExit, which is not an Exception: caught as
    a crash it is a failing verdict; escaping, it would stop the notebook's cell with a traceback."""
    monkeypatch.setattr("labkit.core.check.LIMIT_S", 2.0)
    required = [
        parameter
        for parameter in inspect.signature(checker).parameters.values()
        if parameter.default is inspect.Parameter.empty and parameter.kind is parameter.POSITIONAL_OR_KEYWORD
    ]
    check = checker(*[_exits] * len(required))
    assert isinstance(check, Check) and check.passed is False, check
