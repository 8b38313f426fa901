"""Recognising what a lab 02 answer really is: labkit's own implementation handed in, and a value
that can be shown in a verdict.

`handed_in(answer)` sees through `functools.partial`, `__wrapped__` and bound methods;
`Watch().wrap(fn)` notes a call into labkit's code while the learner's function runs (with
`sys.setprofile`), so a function that only delegates is recognised too. `shown(value)` is a
repr that never raises and never floods a verdict.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from types import CodeType
from typing import Any

from labkit.core.check import Check, fail
from labkit.core.runtime import run
from labkit.core.text import shorten
from labkit.decision_loop.tables import pass_hat_k


@functools.cache
def reference_codes() -> dict[CodeType, str]:
    """The code of labkit's implementations an answer may not hand in or delegate to."""
    return {run.__code__: "labkit's run", pass_hat_k.__code__: "labkit's pass_hat_k"}


def handed_in(answer: Any) -> str | None:
    """Which labkit implementation `answer` is (itself, wrapped, a partial or a bound method), or None."""
    codes, seen, fn = reference_codes(), set(), answer
    while fn is not None and id(fn) not in seen:
        seen.add(id(fn))
        try:
            code = getattr(fn, "__code__", None)
            if isinstance(code, CodeType) and code in codes:
                return codes[code]
            fn = fn.func if isinstance(fn, functools.partial) else (
                getattr(fn, "__wrapped__", None) or getattr(fn, "__func__", None)
            )
        except Exception:  # noqa: BLE001 - a hostile attribute is no delegation
            return None
    return None


class Watch:
    """Notes whether a learner's function calls one of labkit's implementations while it runs.

    `wrap(fn)` returns a function that runs `fn` under `sys.setprofile`; a call into one of
    `reference_codes()` sets `seen` to its name. Installed inside the wrapper, so it holds in
    whichever thread `call` runs it, and the previous profile function is put back after.
    """

    def __init__(self) -> None:
        self.seen: str | None = None
        self.codes = reference_codes()

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def watched(*args: Any, **kwargs: Any) -> Any:
            previous = sys.getprofile()

            def note(frame: Any, event: str, arg: Any) -> None:
                if event == "call" and self.seen is None:
                    self.seen = self.codes.get(frame.f_code)

            sys.setprofile(note)
            try:
                return fn(*args, **kwargs)
            finally:
                sys.setprofile(previous)

        return watched


def labkits_version(name: str, yours: str) -> Check:
    return fail(f"that is {name}, handed in or called from your function; write your own {yours}: "
                "labkit's is there to compare with once yours passes.")


def shown(value: Any, limit: int = 80) -> str:
    """`repr(value)`, cut to `limit` characters; one whose repr fails (or is too big) is named by its type."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a hostile __repr__, or an int past Python's digit limit
        return f"a {type(value).__name__}"
    return shorten(text, limit)
