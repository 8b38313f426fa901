"""A learner's answer as labkit's machinery handles it: quoted short and safe (`shown`: a 5,000-digit
int, a 10**6-element array, a raising `__repr__`), its errors kept (`Recorded`), taken in any honest
form: `whole` and `real` numbers (numpy's, a Fraction; never a bool), names as `named` reads them.
(serves: learner — a learner's code is buggy, not hostile)"""

import decimal
import math
import numbers
import reprlib
from collections.abc import Callable, Iterable
from typing import Any

from labkit.core import check as _check
from labkit.core.text import shorten

_SHOWN = reprlib.Repr()
_SHOWN.maxstring, _SHOWN.maxother, _SHOWN.maxlist, _SHOWN.maxdict, _SHOWN.maxlong = 60, 60, 8, 4, 20


def shown(value: Any, limit: int = 80) -> str:
    """A short, safe repr of `value` (at most `limit` characters, whitespace runs as one space)."""
    if isinstance(value, int) and abs(value) > 10**18:  # str() of a 5,000-digit int raises
        return f"a number of about {int(value.bit_length() * 0.30103) + 1:,} digits"
    try:
        return shorten(" ".join(_SHOWN.repr(value).split()), limit)
    except Exception:  # noqa: BLE001 - a repr that raises is shown by its type
        return f"a {type(value).__name__}"


def whole(value: Any) -> bool:
    """Whether `value` is an integer: any `numbers.Integral`, numpy's int64 too, an exact Fraction(2), a
    float with nothing after the point (12.0, as a pandas sum or mean times n gives it), a Decimal('12'),
    but not a bool, and not nan or an infinity."""
    if isinstance(value, decimal.Decimal):  # not a numbers.Real, yet an honest way to write a count
        return value.is_finite() and value == value.to_integral_value()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    if isinstance(value, numbers.Rational):
        return value.denominator == 1
    return math.isfinite(value) and float(value).is_integer()


def real(value: Any) -> bool:
    """Whether `value` is a real number: an int, a float, a Fraction, a Decimal, numpy's, but not a bool."""
    return isinstance(value, numbers.Real | decimal.Decimal) and not isinstance(value, bool)


# A name's last word saying what kind of thing it is, which a learner may leave out ("spell-correct-first",
# "the unread_citation rule").
_KINDS = ("rule", "reason", "stage", "workflow", "loop", "route", "controller")


def _name_keys(text: str) -> set[str]:
    """The ways `text` names something: case, spacing, hyphens and underscores aside, without a leading
    "the", a closing full stop or quotes (a name written as a sentence or a quotation), with or without
    its kind's word at the end."""
    cleaned = (
        text.casefold().replace("-", " ").replace("_", " ").strip().strip(".\"'\u201c\u201d\u2018\u2019")
    )
    words = cleaned.split()
    if words[:1] == ["the"]:
        words = words[1:]
    keys = {" ".join(words)}
    if len(words) > 1 and words[-1] in _KINDS:
        keys.add(" ".join(words[:-1]))
    return keys


def name_in(answer: Any, names: Iterable[str]) -> str | None:
    """Which of `names` the learner's `answer` names, whatever its case, spacing, hyphens or underscores,
    with or without a leading "the", a closing full stop and quotes, and the kind's word at the end
    ('"The spell-correct-first workflow."', "spell correct first", "the unread citation rule"); None if
    it names none, or more than one (or is not a str)."""
    if not isinstance(answer, str):
        return None
    said = _name_keys(answer)
    found = [name for name in names if said & _name_keys(name)]
    return found[0] if len(found) == 1 else None


def limit_s() -> float:
    """Seconds a learner's code gets for one case (read at each check: tests lower it)."""
    return _check.LIMIT_S


class Recorded:
    """A learner's function as labkit's machinery (a runtime) calls it: its first exception is kept in `error`
    and a plain RuntimeError raised instead, so the caller's handling applies, the checker names the line.
    `last`: the arguments of its latest call (a runtime hands each call its own copy), so a checker can
    ask again from where an episode stopped."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn: Callable[..., Any] = fn
        self.error: BaseException | None = None
        self.last: tuple[Any, ...] = ()

    def __call__(self, *args: Any) -> Any:
        self.last = args
        try:
            return self.fn(*args)
        except _check.CRASHES as error:  # the verdict reports it, a sys.exit() too
            if self.error is None:
                self.error = error
            raise RuntimeError("the learner's function raised") from None
