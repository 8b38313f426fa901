"""A learner's checker verdicts (`@exercise(lab, name)` wraps every public checker), kept as data for
`labkit submit` in `runs/progress/labNN.json`, written whole: {"lab": "03", "exercises": {name: {"passed",
"message", "attempts", "first_passed_attempt", "updated", "payload"}}}. Recording never changes the
verdict and never raises: a file that cannot be written costs one warning line.
(serves: learner — an odd answer, a blank or a print still gets a verdict)"""

import contextlib
import dataclasses
import functools
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ParamSpec

from labkit.core.answers import shown
from labkit.core.check import (
    CRASHES,
    NOT_ATTEMPTED,
    Check,
    TimedOut,
    captured,
    not_attempted,
    placeholder_left,
)
from labkit.core.paths import runs_dir, write_whole
from labkit.core.text import shorten

P = ParamSpec("P")
LABS = ("01", "02", "03", "04")
_UNCHECKABLE = "this answer could not be checked{why}; check that it has the shape the exercise asks for."


def progress_path(lab: str) -> Path:
    return runs_dir() / "progress" / f"lab{lab}.json"


def load_progress(lab: str) -> dict[str, Any]:
    """The recorded progress for `lab` (an empty record when none or unreadable).
    (serves: untrusted file — runs/progress/ is on the learner's disk)"""
    # RecursionError: nested 100,000 deep
    with contextlib.suppress(OSError, ValueError, RecursionError, TypeError, KeyError):
        data = json.loads(progress_path(lab).read_text(encoding="utf-8"))
        if isinstance(data["exercises"], dict):
            return data
    return {"lab": lab, "exercises": {}}


def _plain(payload: Any) -> Any:
    """`payload` as JSON data; a learner's object in it as its `shown` text, or all of it if need be."""
    try:
        return json.loads(json.dumps(payload, default=shown))
    except (TypeError, ValueError, RecursionError):  # a huge int, a cycle
        return shown(payload)


def _entry(data: dict[str, Any], name: str) -> dict[str, Any]:
    """The recorded entry for `name`, or an empty one when it is not as `record` writes it: a mapping
    whose attempts, and first passed attempt unless it is None, are whole numbers, 0 or more.
    (serves: untrusted file — a hand-edited entry starts the count again rather than break the checker)"""
    entry = data["exercises"].get(name)
    if not isinstance(entry, dict):
        return {}
    first = entry.get("first_passed_attempt")
    counts = (entry.get("attempts", 0), 0 if first is None else first)
    return entry if all(type(count) is int and count >= 0 for count in counts) else {}


def record(lab: str, name: str, verdict: Check, payload: Any = None) -> None:
    """Add one attempt at `name` to the lab's progress file; warn in one line on failure. An entry
    that is not as this function writes it (a list, a count that is text) starts again at attempt 1."""
    data = load_progress(lab)
    entry = _entry(data, name)
    attempts = entry.get("attempts", 0) + 1
    first = entry.get("first_passed_attempt")
    plain = _plain(payload)  # what the checker was handed, as a progress file keeps it
    data["exercises"][name] = {
        "passed": verdict.passed,
        "message": verdict.message,
        "attempts": attempts,
        "first_passed_attempt": attempts if first is None and verdict.passed else first,
        "updated": datetime.now(UTC).isoformat(timespec="seconds"),
        "payload": plain,
        "passed_payload": plain if verdict.passed else entry.get("passed_payload"),  # what `submit` hands in
    }
    try:
        write_whole(progress_path(lab), json.dumps(data, indent=1, sort_keys=True))
    except OSError as error:  # serves: environment — a folder that cannot be written: one warning line
        print(f"labkit: progress not saved ({error})", file=sys.stderr)


def exercise(
    lab: str, name: str, payload: Callable[..., Any] | None = None
) -> Callable[[Callable[P, Check]], Callable[P, Check]]:
    """Record every verdict of the wrapped checker under (`lab`, `name`), with what
    `payload(*args, **kwargs)` returns (None if it raises), e.g. the attack record a learner wrote."""

    def wrap(check: Callable[P, Check]) -> Callable[P, Check]:
        @functools.wraps(check)
        def checked(*args: P.args, **kwargs: P.kwargs) -> Check:
            if (blank := not_attempted([*args, *kwargs.values()])) is not None:
                return blank  # not an attempt, not recorded
            with captured() as printed:
                verdict = _judged(check, args, kwargs)
            if not verdict.passed and (left := placeholder_left([*args, *kwargs.values()])) is not None:
                return left  # the starting point, still there: no attempt (serves: learner)
            if verdict.message.startswith(NOT_ATTEMPTED):  # a blank the checker found: no attempt
                return verdict
            if printed.count:
                verdict = dataclasses.replace(verdict, printed=printed.summary())
            try:
                data = None if payload is None else payload(*args, **kwargs)
            except CRASHES:  # a payload is optional evidence, never a failure
                data = None
            record(lab, name, verdict, data)
            return verdict

        checked.exercise = (lab, name)  # type: ignore[attr-defined]
        return checked

    return wrap


def _judged(check: Callable[..., Check], args: tuple, kwargs: dict) -> Check:
    """The checker's verdict; if the checker itself fails on an answer, a verdict saying so."""
    try:
        verdict = check(*args, **kwargs)
    except (*CRASHES, TimedOut) as error:  # a traceback is never the answer
        return Check(False, _UNCHECKABLE.format(why=f" ({type(error).__name__}: {shorten(str(error), 200)})"))
    return verdict if isinstance(verdict, Check) else Check(False, _UNCHECKABLE.format(why=""))
