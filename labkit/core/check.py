"""The verdict every checker returns, and running a learner's code, which is buggy, not hostile: `call`
(on copies, within a time limit, what goes wrong in `Raised`), `crashed` (a sentence naming the exception
and the learner's line), `captured` (what their code prints, out of the verdict's way)."""

from __future__ import annotations

import ast
import contextlib
import copy
import inspect
import io
import linecache
import signal
import textwrap
import threading
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labkit.core.text import shorten
from labkit.core.timeouts import TIMED_OUT, call_within

if TYPE_CHECKING:
    import pandas as pd

# A verdict for an answer not written yet starts with these words and is not recorded as an attempt.
NOT_ATTEMPTED = "not attempted yet"
NOT_YET = "not attempted yet: replace the `...` or None with your code and run the cell again"
_STARTING_POINT = (
    "not attempted yet: your function still holds the `...` placeholder (line {line}); "
    "replace it with your code and run the cell again"
)
WIDTH = 110  # JupyterLab breaks a text output at ~120 columns, mid-word included: wrap before
# Seconds a learner's function gets for one call: the slowest correct answer (lab 03's guard
# over a whole episode suite) takes 0.4 s, so 3 s is only ever reached by a hang or a sleep.
LIMIT_S = 3.0


@dataclass(frozen=True)
class Check:
    """A checker's verdict: `passed`, what to fix or holds, a table, what the learner's code printed."""

    passed: bool
    message: str
    table: pd.DataFrame | None = None
    printed: str = ""

    def __repr__(self) -> str:
        head = textwrap.fill(("PASSED: " if self.passed else "NOT YET: ") + self.message, WIDTH)
        body = head if self.table is None else f"{head}\n{self.table.to_string()}"
        return f"{body}\n{self.printed}" if self.printed else body

    def __bool__(self) -> bool:
        return self.passed


def fail(message: str, table: pd.DataFrame | None = None) -> Check:
    return Check(False, message, table)


def crashed(error: BaseException, where: str) -> Check:
    """A learner's function raised or overran: name the exception, where, and their line."""
    if isinstance(error, TimedOut):
        return fail(
            f"your function did not return within {error.seconds:g} s {where}; "
            "look for a loop that never ends or a long sleep, and run the check again."
        )
    text = shorten(str(error), 300)
    shown = f"{type(error).__name__}: {text}" if text else type(error).__name__
    line = learner_line(error)
    return fail(f"your function raised {shown} {where}{f' at {line}' if line else ''}; fix that first.")


# How a learner's code may end other than by returning: any Exception, and SystemExit, for a sys.exit()
# in their function ends that function badly, never the kernel (serves: learner).
CRASHES = (Exception, SystemExit)


class Raised(Exception):
    """Carries a learner's exception (or a `TimedOut`) out of a checker's loop (see `call`)."""

    def __init__(self, error: BaseException):
        super().__init__(str(error))
        self.error = error


class TimedOut(BaseException):
    """Past its time limit: a BaseException, which no `except Exception:` (learner's, runtime's) swallows."""

    def __init__(self, seconds: float):
        super().__init__(f"did not return within {seconds:g} s")
        self.seconds = seconds


def _signals_usable() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def time_limit(seconds: float | None = None) -> Iterator[None]:
    """Raise TimedOut if the block runs past `seconds` (LIMIT_S by default), again every 50 ms until it ends;
    only in the main thread (SIGALRM), else not limited; inside another limit, only the outer one applies."""
    seconds = LIMIT_S if seconds is None else seconds  # read at the call: a changed LIMIT_S applies
    if not _signals_usable() or signal.getitimer(signal.ITIMER_REAL)[0]:
        yield  # not limited here, or an enclosing limit is armed and will fire
        return

    def expire(signum: int, frame: Any) -> None:
        raise TimedOut(seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds, 0.05)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def copied(value: Any) -> Any:
    """A deep copy of what a learner's function is handed (an uncopyable value as it is)."""
    try:
        return copy.deepcopy(value)
    except Exception:  # noqa: BLE001 - uncopyable values are passed through
        return value


def call(fn: Callable[..., Any], *args: Any, limit: float | None = None, **kwargs: Any) -> Any:
    """The learner's `fn` called on copies of its arguments within `limit` seconds (a signal in
    the main thread, else a daemon thread); what it raises, and TimedOut, comes out in Raised."""
    args, kwargs = copied(args), copied(kwargs)
    limit = LIMIT_S if limit is None else limit
    try:
        if _signals_usable():
            with time_limit(limit):
                return fn(*args, **kwargs)
        value = call_within(lambda: fn(*args, **kwargs), (), limit)
        if value is TIMED_OUT:
            raise TimedOut(limit)
        return value
    except (*CRASHES, TimedOut) as error:  # the verdict names the learner's error
        raise Raised(error) from None


_LABKIT = str(Path(__file__).resolve().parents[1])
_STDLIB = str(Path(contextlib.__file__).resolve().parent)


def learner_line(error: BaseException) -> str:
    """The innermost frame of `error` in the learner's code: "line 3: `return hits + [x]`", or ""."""
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        where = str(Path(frame.filename).resolve()) if not frame.filename.startswith("<") else ""
        if where.startswith((_LABKIT, _STDLIB)) or "site-packages" in where:
            continue
        code = (frame.line or linecache.getline(frame.filename, frame.lineno or 0)).strip()
        return f"line {frame.lineno}: `{shorten(code, 100)}`" if code else f"line {frame.lineno}"
    return ""


class _Kept(io.StringIO):
    """A text stream that keeps the first `limit` characters written to it and counts them all."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit, self.count = limit, 0

    def write(self, text: str) -> int:
        super().write(text[: max(self.limit - self.count, 0)])
        self.count += len(text)
        return len(text)

    def summary(self, lines: int = 5) -> str:
        """One note for the verdict: how much was printed, and its first few lines."""
        head = self.getvalue().splitlines()[:lines]
        shown = "\n".join(f"  | {shorten(line, WIDTH - 4)}" for line in head)
        return (
            f"(your code printed {self.count:,} characters while it was checked; "
            f"the first {len(head)} line(s):)\n{shown}"
        )


@contextlib.contextmanager
def captured(limit: int = 2000) -> Iterator[_Kept]:
    """What the block prints (stdout, stderr), its first `limit` characters kept: no print() floods a cell."""
    kept = _Kept(limit)
    with contextlib.redirect_stdout(kept), contextlib.redirect_stderr(kept):
        yield kept


def unanswered(answer: Any) -> bool:
    """True for an answer not written yet (None or `...`)."""
    return answer is None or answer is Ellipsis


def _placeholder_line(answer: Any) -> int | None:
    """The line of a bare `...` left in a learner's function (the cell's starting point), else None."""
    if not callable(answer) or getattr(answer, "__code__", None) is None:
        return None
    try:
        lines, first = inspect.getsourcelines(answer)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and node.value.value is ...:
            return first + node.lineno - 1
    return None


def not_attempted(answers: list[Any]) -> Check | None:
    """The verdict for answers not written yet (None or `...`), or None."""
    return fail(NOT_YET) if all(unanswered(answer) for answer in answers) else None


def placeholder_left(answers: list[Any]) -> Check | None:
    """The verdict for a function that still holds a bare `...` (the cell's starting point), naming its
    line, or None. Asked only of an answer that failed: a bare `...` is a no-op, so a function that
    passes with one left in is right."""
    for answer in answers:
        if (line := _placeholder_line(answer)) is not None:
            return fail(_STARTING_POINT.format(line=line))
    return None


def not_a_function(answer: Any, shape: str) -> Check | None:
    """The verdict for an answer that is not yet a function (`shape` says what it should be), or None."""
    if unanswered(answer):
        return fail(NOT_YET)
    if not callable(answer):
        return fail(f"{shape}, not {type(answer).__name__}.")
    return None
