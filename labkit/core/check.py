"""The verdict every checker returns, and running a learner's code without a traceback."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

NOT_YET = "not attempted yet: replace the `...` or None with your code and run the cell again"
# JupyterLab breaks a text output at ~120 columns wherever it falls, mid-word included
# (seen at 1400 px); wrapping here keeps a verdict readable on a projector.
WIDTH = 110


@dataclass(frozen=True)
class Check:
    """A checker's verdict: `passed`, what to fix or what holds, and an optional table."""

    passed: bool
    message: str
    table: pd.DataFrame | None = None

    def __repr__(self) -> str:
        head = textwrap.fill(("PASSED: " if self.passed else "NOT YET: ") + self.message, WIDTH)
        return head if self.table is None else f"{head}\n{self.table.to_string()}"

    def __bool__(self) -> bool:
        return self.passed


def fail(message: str, table: pd.DataFrame | None = None) -> Check:
    return Check(False, message, table)


def crashed(error: BaseException, where: str) -> Check:
    """A learner's function raised: name the exception and where, nothing more."""
    text = str(error)
    shown = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return Check(False, f"your function raised {shown} {where}; fix that first.")


class Raised(Exception):
    """Carries a learner's exception out of a checker's loop (see `call`)."""

    def __init__(self, error: BaseException):
        super().__init__(str(error))
        self.error = error


def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call the learner's `fn`, wrapping anything it raises in Raised (never a traceback)."""
    try:
        return fn(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 - the verdict names the learner's error
        raise Raised(error) from None


def unanswered(answer: Any) -> bool:
    return answer is None or answer is Ellipsis


def not_a_function(answer: Any, shape: str) -> Check | None:
    """The verdict for an answer that is not yet a function (`shape` says what it should be), or None."""
    if unanswered(answer):
        return fail(NOT_YET)
    if not callable(answer):
        return fail(f"{shape}, not {type(answer).__name__}.")
    return None
