"""A learner's written prediction, compared with the computed result in one sentence: ``predict(my_prediction,
actual)`` -> "you predicted 15; the result is 17: 2 more than that.".
Never graded, never kept, never raising; None or `...` is no prediction.
(serves: learner — an odd prediction still gets its sentence)"""

import math
import numbers
import textwrap
from dataclasses import dataclass
from typing import Any

from labkit.core.answers import shown
from labkit.core.check import WIDTH, unanswered
from labkit.core.text import shorten


@dataclass(frozen=True)
class Prediction:
    """How a prediction compares with the result: `matched` is None when nothing was predicted."""

    matched: bool | None
    message: str

    def __repr__(self) -> str:
        return textwrap.fill(self.message, WIDTH)


def _quoted(value: Any) -> str:
    """A value as the sentence quotes it: a str as it reads, anything else by `shown`."""
    return shorten(" ".join(value.split()), 60) if type(value) is str else shown(value, 60)


def _number(value: Any) -> float | None:
    """`value` as a finite number (int, float, numpy; not a bool), or None; a huge int: OverflowError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _names(value: Any) -> set[str] | None:
    """A choice or a collection of names, case-folded, or None if `value` is neither."""
    if isinstance(value, str):
        value = [value]
    items = list(value)[:100] if isinstance(value, list | tuple | set | frozenset) else [None]
    if not all(isinstance(item, str) for item in items):
        return None
    return {" ".join(item.casefold().split()) for item in items}


def _count(n: float) -> str:
    return f"{int(n)}" if abs(n) < 1e15 and n == int(n) else f"{n:.6g}"


def _compare(value: Any, actual: Any) -> tuple[bool | None, str]:
    """(matched, the sentence); matched is None when the two cannot be compared."""
    said = f"you predicted {_quoted(value)}; the result is {_quoted(actual)}"
    if isinstance(actual, bool) or isinstance(value, bool):
        if type(value) is not bool or type(actual) is not bool:
            return None, f"{said} (a yes/no: True or False)."
        return value == actual, f"{said}: {'right' if value == actual else 'not this time'}."
    want, got = _number(actual), _number(value)
    if want is not None:
        if got is None:
            return None, f"{said} (a number)."
        said = f"you predicted {_count(got)}; the result is {_quoted(actual)}"
        if got == want:
            return True, f"{said}: right."
        return False, f"{said}: {_count(abs(want - got))} {'more' if want > got else 'fewer'} than that."
    expected, named = _names(actual), _names(value)
    if expected is None:
        right = bool(value == actual)  # an == that raises: predict's own fallback sentence
        return right, said + (": right." if right else ".")
    if named is None:
        return None, f"{said}."
    if named == expected:
        return True, f"{said}: right."
    hit, missed, extra = named & expected, expected - named, named - expected
    parts = [f"you had {', '.join(sorted(hit))}" if hit else "none of yours is in it"]
    if missed:
        parts.append(f"you missed {', '.join(sorted(missed))}")
    if extra:
        parts.append(f"not {', '.join(sorted(extra))}")
    return False, shorten(f"{said}: {'; '.join(parts)}", 379) + "."  # a sentence even when cut


def predict(value: Any, actual: Any) -> Prediction:
    """The learner's prediction `value` compared with the computed
    `actual`, in one sentence: a number with a number (how many more or fewer), a str or list of
    strs with names (case and spacing ignored), True/False with a bool; else shown beside it."""
    if unanswered(value):
        return Prediction(None, f"no prediction written; the result is {_quoted(actual)}.")
    try:
        return Prediction(*_compare(value, actual))
    except Exception:  # noqa: BLE001 - a prediction never fails a cell
        return Prediction(None, f"you predicted {_quoted(value)}; the result is {_quoted(actual)}.")
