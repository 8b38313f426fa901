"""A learner's written predictions, compared with the computed result and kept.

A lab asks for a prediction before a "Try it" cell or a headline table; the next cell calls
``predict("01", "workflow_passes", my_prediction, actual)``, which answers in one sentence
("you predicted 15; the result is 17: 2 more than that."). Never graded, never raising: None or
`...` is "no prediction written" and records nothing. Kept in
`runs/progress/predictions/labNN.json` (not read by `labkit submit`): per name the first
prediction (made before the result was seen), the latest, and how many were written.
"""

from __future__ import annotations

import json
import math
import sys
import textwrap
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from labkit.core.answers import shown
from labkit.core.check import WIDTH, unanswered
from labkit.core.paths import runs_dir, write_whole
from labkit.core.text import shorten
from labkit.core.verdicts import LABS


@dataclass(frozen=True)
class Prediction:
    """How a prediction compares with the result: `matched` is None when nothing was predicted."""

    name: str
    value: Any
    actual: Any
    matched: bool | None
    message: str

    def __repr__(self) -> str:
        return textwrap.fill(self.message, WIDTH)


def predictions_path(lab: str) -> Path:
    return runs_dir() / "progress" / "predictions" / f"lab{lab}.json"


def load_predictions(lab: str) -> dict[str, Any]:
    """The recorded predictions for `lab`, by name (empty when none or unreadable)."""
    try:
        data = json.loads(predictions_path(lab).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict) or not isinstance(data.get("predictions"), dict):
        return {}
    return data["predictions"]


def _shown(value: Any) -> str:
    """A value as the sentence quotes it: a str as it reads, anything else by `shown`."""
    return shorten(" ".join(value.split()), 60) if type(value) is str else shown(value, 60)


def _number(value: Any) -> float | None:
    """`value` as a finite number (an int, float or numpy scalar; not a bool), or None."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return None
    if not isinstance(value, int | float) and not (hasattr(value, "__float__") and hasattr(value, "dtype")):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _names(value: Any) -> set[str] | None:
    """A choice or a collection of names, case-folded, or None if `value` is neither."""
    if isinstance(value, str):
        return {" ".join(value.casefold().split())}
    if isinstance(value, list | tuple | set | frozenset):
        items = list(value)[:100]
        if all(isinstance(item, str) for item in items):
            return {" ".join(item.casefold().split()) for item in items}
    return None


def _count(n: float) -> str:
    """A count as a whole number where it is one."""
    return f"{int(n)}" if abs(n) < 1e15 and n == int(n) else f"{n:.6g}"


def _compare(value: Any, actual: Any) -> tuple[bool | None, str]:
    """(matched, the sentence); matched is None when the two cannot be compared."""
    result = _shown(actual)
    said = f"you predicted {_shown(value)}; the result is {result}"
    if isinstance(actual, bool) or isinstance(value, bool):
        if type(value) is bool and type(actual) is bool:
            right = value == actual
            return (
                right,
                f"you predicted {value}; the result is {actual}: {'right' if right else 'not this time'}.",
            )
        return None, f"{said} (a yes/no: True or False)."
    want, got = _number(actual), _number(value)
    if want is not None:
        if got is None:
            return None, f"{said} (a number)."
        head = f"you predicted {_count(got)}; the result is {result}"
        if got == want:
            return True, f"{head}: right."
        return False, f"{head}: {_count(abs(want - got))} {'more' if want > got else 'fewer'} than that."
    expected, named = _names(actual), _names(value)
    if expected is None:
        right = bool(value == actual)  # an == that raises: predict's own fallback sentence
        return right, said + (": right." if right else ".")
    if named is None or named == expected:
        return (None, f"{said}.") if named is None else (True, f"{said}: right.")
    hit, missed, extra = named & expected, expected - named, named - expected
    parts = [f"you had {', '.join(sorted(hit))}" if hit else "none of yours is in it"]
    parts += [f"you missed {', '.join(sorted(missed))}"] * bool(missed) + [
        f"not {', '.join(sorted(extra))}"
    ] * bool(extra)
    return False, shorten(f"{said}: {'; '.join(parts)}.", 380)


def _jsonable(value: Any) -> Any:
    """`value` itself when it is short JSON data, else its `shown` text."""
    try:
        return value if len(json.dumps(value)) <= 200 else _shown(value)
    except (TypeError, ValueError, RecursionError):
        return _shown(value)


def _record(lab: str, name: str, value: Any, actual: Any, matched: bool | None) -> None:
    """Keep this prediction as the latest (and the first, if none was); warn in one line on failure."""
    predictions = load_predictions(lab)
    entry = predictions.get(name)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    latest = {"value": _jsonable(value), "actual": _jsonable(actual), "matched": matched, "at": now}
    if not isinstance(entry, dict) or not isinstance(entry.get("first"), dict):
        entry = {"first": latest, "count": 0}
    count = entry.get("count")
    entry["count"] = (count if type(count) is int and count >= 0 else 0) + 1
    entry["latest"] = latest
    predictions[name] = entry
    data = {"lab": lab, "predictions": predictions}
    try:
        write_whole(predictions_path(lab), json.dumps(data, indent=1, sort_keys=True))
    except OSError as error:
        print(f"labkit: prediction not saved ({error})", file=sys.stderr)


def predict(lab: str, name: str, value: Any, actual: Any) -> Prediction:
    """The learner's prediction `value` compared with the computed `actual`, in one sentence.

    A number is compared with a number (how many more or fewer), a str or list of strs with
    names (case and spacing ignored), True/False with a bool; anything else is shown beside the
    result. `lab` and `name` are labkit's own: ValueError if they are not a lab and an identifier.
    """
    if lab not in LABS:
        raise ValueError(f"lab must be one of {LABS}, not {lab!r}")
    if type(name) is not str or not name.isidentifier():
        raise ValueError(f"name must be an identifier, not {name!r}")
    if unanswered(value):
        return Prediction(name, None, actual, None, f"no prediction written; the result is {_shown(actual)}.")
    try:
        matched, message = _compare(value, actual)
    except Exception:  # noqa: BLE001 - a prediction never fails a cell
        matched, message = None, f"you predicted {_shown(value)}; the result is {_shown(actual)}."
    _record(lab, name, value, actual, matched)
    return Prediction(name, value, actual, matched, message)
