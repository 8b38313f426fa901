"""A learner's checker verdicts, kept as data in `runs/progress/labNN.json` for `labkit submit`.

Every public checker is wrapped with `@exercise(lab, name)`: after it answers, the verdict is
recorded (latest message, attempts, the attempt that first passed, an optional JSON `payload`).
Recording never changes the verdict and never raises: a file that cannot be written costs one
warning line. File shape: {"lab": "03", "exercises": {name: {"passed", "message", "attempts",
"first_passed_attempt", "updated", "payload"}}}, written whole (`paths.write_whole`).
"""

from __future__ import annotations

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
    NOT_ATTEMPTED,
    NOT_YET,
    STARTING_POINT,
    Check,
    TimedOut,
    captured,
    placeholder_line,
    unanswered,
)
from labkit.core.paths import runs_dir, write_whole
from labkit.core.text import shorten

P = ParamSpec("P")
LABS = ("01", "02", "03", "04")


def progress_path(lab: str) -> Path:
    return runs_dir() / "progress" / f"lab{lab}.json"


def load_progress(lab: str) -> dict[str, Any]:
    """The recorded progress for `lab` (an empty record when none or unreadable)."""
    empty: dict[str, Any] = {"lab": lab, "exercises": {}}
    try:
        data = json.loads(progress_path(lab).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # RecursionError: a file nested 100,000 deep
        return empty
    if not isinstance(data, dict) or not isinstance(data.get("exercises"), dict):
        return empty
    return data


def record(lab: str, name: str, verdict: Check, payload: Any = None) -> None:
    """Add one attempt at `name` to the lab's progress file; warn in one line on failure."""
    data = load_progress(lab)
    entry = data["exercises"].get(name)
    entry = entry if isinstance(entry, dict) else {}
    attempts = int(entry.get("attempts", 0)) + 1 if isinstance(entry.get("attempts", 0), int) else 1
    first = entry.get("first_passed_attempt")
    if first is None and verdict.passed:
        first = attempts
    data["exercises"][name] = {
        "passed": verdict.passed,
        "message": verdict.message,
        "attempts": attempts,
        "first_passed_attempt": first,
        "updated": datetime.now(UTC).isoformat(timespec="seconds"),
        "payload": payload,
    }
    try:
        write_whole(progress_path(lab), _json(data))
    except OSError as error:
        print(f"labkit: progress not saved ({error})", file=sys.stderr)


def _json(data: dict[str, Any]) -> str:
    """`data` as JSON text; a payload that is not JSON data (a learner's object) is kept as `shown`."""
    try:
        return json.dumps(data, indent=1, sort_keys=True, default=shown)
    except (TypeError, ValueError, RecursionError):  # mixed key types, a huge int, a cycle
        for entry in data["exercises"].values():
            entry["payload"] = shown(entry.get("payload")) if isinstance(entry, dict) else None
        return json.dumps(data, indent=1, sort_keys=True, default=shown)


def exercise(
    lab: str, name: str, payload: Callable[..., Any] | None = None
) -> Callable[[Callable[P, Check]], Callable[P, Check]]:
    """Record every verdict of the wrapped checker under (`lab`, `name`), with what
    `payload(*args, **kwargs)` returns (None if it raises), e.g. the attack record a learner wrote."""
    if lab not in LABS:
        raise ValueError(f"lab must be one of {LABS}, not {lab!r}")

    def wrap(check: Callable[P, Check]) -> Callable[P, Check]:
        @functools.wraps(check)
        def checked(*args: P.args, **kwargs: P.kwargs) -> Check:
            answers = [*args, *kwargs.values()]
            if not answers or all(unanswered(answer) for answer in answers):
                return Check(False, NOT_YET)  # nothing written yet: not an attempt, not recorded
            for answer in answers:
                if (line := placeholder_line(answer)) is not None:  # the shipped starting point
                    return Check(False, STARTING_POINT.format(line=line))
            with captured() as printed:
                verdict = _judged(check, args, kwargs)
            if verdict.message.startswith(NOT_ATTEMPTED):  # a blank the checker found: no attempt
                return verdict
            if printed.count:
                verdict = dataclasses.replace(verdict, printed=printed.summary())
            data = None
            if payload is not None:
                try:
                    data = payload(*args, **kwargs)
                except Exception:  # noqa: BLE001 - a payload is optional evidence, never a failure
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
    except (Exception, TimedOut) as error:  # noqa: BLE001 - a traceback is never the answer
        return Check(
            False,
            f"this answer could not be checked ({type(error).__name__}: "
            f"{shorten(str(error), 200)}); check that it has the shape the "
            "exercise asks for.",
        )
    if not isinstance(verdict, Check):
        return Check(
            False, "this answer could not be checked; check that it has the shape the exercise asks for."
        )
    return verdict
