"""A learner's answer as a checker handles it: shown short, and recognised when it is labkit's own.

`shown(value)` is a learner's value as a verdict may quote it: a short repr that never raises
and never runs long (a 5,000-digit int, a 10**6-element array, a 10 MB string). `is_labkits`
and `watching` (or a `References` table with its `Watch`) recognise labkit's own implementation
handed in as the answer: itself, wrapped
(functools.partial, a decorator's __wrapped__, a bound method), or called from inside the
learner's function (a sys.setprofile watch on its code object during the learner's call), so
a checker can answer "that is labkit's version; write your own". `limit_s()` is the time a
learner's function gets for one case, read at each check (tests lower it).
"""

from __future__ import annotations

import contextlib
import functools
import reprlib
import sys
from collections.abc import Callable, Iterator, Mapping
from types import CodeType
from typing import Any

from labkit.core import check as _check
from labkit.core.check import Check, fail
from labkit.core.text import shorten

_SHOWN = reprlib.Repr()
_SHOWN.maxstring, _SHOWN.maxother, _SHOWN.maxlist, _SHOWN.maxdict, _SHOWN.maxlong = 60, 60, 8, 4, 20


def shown(value: Any, limit: int = 80) -> str:
    """A short, safe repr of a learner's value for a verdict (never huge, never raising)."""
    if isinstance(value, int) and abs(value) > 10**18:  # str() of a 5,000-digit int raises
        return f"a number of about {int(value.bit_length() * 0.30103) + 1:,} digits"
    try:
        return shorten(" ".join(_SHOWN.repr(value).split()), limit)
    except Exception:  # noqa: BLE001 - a repr that raises is shown by its type
        return f"a {type(value).__name__}"


def limit_s() -> float:
    """Seconds a learner's code gets for one case (read at each check: tests lower it)."""
    return _check.LIMIT_S


def unwrapped(answer: Any) -> Iterator[Any]:
    """`answer` and what it wraps: functools.partial's func, __wrapped__, a bound method's __func__."""
    seen: set[int] = set()
    while answer is not None and id(answer) not in seen and len(seen) < 20:
        seen.add(id(answer))
        yield answer
        try:
            if isinstance(answer, functools.partial):
                answer = answer.func
            else:
                answer = getattr(answer, "__wrapped__", None) or getattr(answer, "__func__", None)
        except Exception:  # noqa: BLE001 - an attribute that raises ends the walk
            return


def is_labkits(answer: Any, original: Callable[..., Any]) -> bool:
    """True if `answer` is `original` (a Python function) itself, or wraps it (partial, decorator,
    method); `References.handed_in` for that one function."""
    return References(lambda: {original: original.__name__}).handed_in(answer) is not None


@contextlib.contextmanager
def _noting(codes: Mapping[CodeType, str]) -> Iterator[list[str]]:
    """The names of `codes` called in this thread inside the block, in order (`sys.setprofile`);
    the profile function installed before is put back after."""
    seen: list[str] = []
    previous = sys.getprofile()

    def note(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code in codes:
            seen.append(codes[frame.f_code])

    sys.setprofile(note)
    try:
        yield seen
    finally:
        sys.setprofile(previous)


@contextlib.contextmanager
def watching(*originals: Callable[..., Any]) -> Iterator[list[str]]:
    """Note (in the yielded list) every call of one of `originals` made in this thread inside the block.

    With sys.setprofile, so a learner's function that only delegates to labkit's is recognised
    whatever it is named.
    """
    with _noting({fn.__code__: fn.__name__ for fn in originals}) as seen:
        yield seen


class References:
    """labkit's own implementations that a checker refuses as an answer, each with the name a
    verdict gives it; built on first use (`named` may load a corpus).

    `handed_in(answer)` is the name of the one `answer` is (itself, wrapped, a partial, a bound
    method), or None; `watch()` gives a `Watch` that notes a call into one of them while the
    learner's function runs.
    """

    def __init__(self, named: Callable[[], Mapping[Callable[..., Any], str]]) -> None:
        self._named = named

    @functools.cached_property
    def codes(self) -> dict[CodeType, str]:
        return {fn.__code__: name for fn, name in self._named().items()}

    def handed_in(self, answer: Any) -> str | None:
        for inner in unwrapped(answer):
            try:
                code = getattr(inner, "__code__", None)
            except Exception:  # noqa: BLE001 - a hostile attribute is no delegation
                return None
            if isinstance(code, CodeType) and code in self.codes:
                return self.codes[code]
        return None

    def watch(self) -> Watch:
        return Watch(self.codes)


class Watch:
    """Notes (in `seen`) the first call into one of labkit's implementations while a learner's
    function runs: `wrap(fn)` returns `fn` run under `sys.setprofile`, installed inside the
    wrapper so it holds in whichever thread runs it, the previous profile function put back.
    """

    def __init__(self, codes: Mapping[CodeType, str]) -> None:
        self.codes, self.seen = codes, None

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def watched(*args: Any, **kwargs: Any) -> Any:
            with _noting(self.codes) as seen:
                try:
                    return fn(*args, **kwargs)
                finally:
                    self.seen = self.seen or (seen[0] if seen else None)

        return watched


def labkits_version(name: str, yours: str) -> Check:
    """The verdict for labkit's own implementation handed in as the answer, or called from it."""
    return fail(f"that is labkit's version ({name}), handed in or called from your function; write "
                f"your own {yours}: labkit's is there to compare with once yours passes.")


class Recorded:
    """A learner's function as labkit's own machinery calls it (a scheduler, a runtime): the first
    exception it raises is kept in `error`, and a plain RuntimeError goes on in its place.

    So the caller's own handling applies (a failed job, a counted stop) while the checker can
    still name the learner's exception and line, and a LabError raised by the learner's code
    is never re-raised as labkit's own mistake.
    """

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn: Callable[..., Any] = fn
        self.error: BaseException | None = None

    def __call__(self, *args: Any) -> Any:
        try:
            return self.fn(*args)
        except Exception as error:  # noqa: BLE001 - the verdict reports it
            if self.error is None:
                self.error = error
            raise RuntimeError("the learner's function raised") from None
