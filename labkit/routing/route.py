"""Routers: after a job succeeds, a plain function of its result says what happens next.

A dependency graph says what may run in parallel; it cannot say "if the review fails, go
back and revise". A router can, without putting a cycle into the dependencies (validation
would refuse it): it returns one of

- ``Next.Continue``                     the job's dependents run once their other deps are done
                                        (what every job without a router does);
- ``Next.back_to(job)``                 re-run `job` and every job downstream of it;
- ``Next.back_to_with(job, feedback)``  the same, and `job` is told why;
- ``Next.Stop``                         end the run here as a success; what has not run is
                                        cancelled.

Prefer `back_to_with`. Seed 002 measured what a loop without feedback does: a reviser
sent back five times wrote 33, 33, 33, 31 and 33 characters against a limit of 26 — it
saw the same draft each lap and no word of why it had been rejected.

Put the acceptance criterion in the router, in code: a model asked whether its own
answer meets a rule tends to agree with itself (the same seed: "LGTM" for a 30-character
answer against a limit of 15). A length check is exact and costs nothing.

Every target a router may return is declared with the route, up front (LangGraph's
`path_map`), so validation can check it before anything runs; a router that returns an
undeclared target at run time fails its job with that message instead of continuing.

Job ids are compared as written, so two ids that look the same must be the same string:
an id with an invisible character (zero-width space, no-break space, bidi control, ...)
or not in Unicode NFC form ('re\u0301vise' for 'révise') is refused (`id_problem`), with
the id shown escaped, rather than becoming a second job that looks like the first.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from labkit.routing.errors import GraphError

Kind = Literal["continue", "goto", "stop"]
# Control, format (zero-width, bidi), private-use, surrogate and unassigned characters, and
# separators other than the plain space: none of them can be told apart by looking.
_INVISIBLE = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"})


def id_problem(value: str) -> str | None:
    """Why job id `value` could be mistaken for another, or None: see the module docstring."""
    if value.isascii() and value.isprintable():
        return None  # the common case, decided without a look at each character
    for char in value:
        category = unicodedata.category(char)
        if category in _INVISIBLE or (category == "Zs" and char != " "):
            name = unicodedata.name(char, "unnamed")
            return f"{ascii(value)} contains the invisible character U+{ord(char):04X} ({name})"
    if not unicodedata.is_normalized("NFC", value):
        nfc = unicodedata.normalize("NFC", value)
        return f"{ascii(value)} is not in Unicode NFC form: write it as {nfc!r} ({ascii(nfc)})"
    return None


@dataclass(frozen=True)
class Next:
    """What happens after a job succeeds. Build it with the names below, not directly."""

    kind: Kind
    job: str | None = None
    feedback: str | None = None

    Continue: ClassVar[Next]
    Stop: ClassVar[Next]

    def __post_init__(self) -> None:
        if self.kind not in ("continue", "goto", "stop"):
            raise GraphError(f"Next kind must be 'continue', 'goto' or 'stop', got {self.kind!r}")
        if self.kind == "goto":
            if not isinstance(self.job, str) or not self.job:
                raise GraphError(f"Next.back_to needs a job id (a non-empty string), got {self.job!r}")
            if problem := id_problem(self.job):
                raise GraphError(f"Next.back_to: job id {problem}")
            blank = not isinstance(self.feedback, str) or not self.feedback.strip()
            if self.feedback is not None and blank:
                raise GraphError(f"feedback for {self.job!r} must be a non-blank string, "
                                 f"got {self.feedback!r}")
        elif self.job is not None or self.feedback is not None:
            raise GraphError(f"Next.{self.kind.capitalize()} takes no job or feedback")

    @classmethod
    def back_to(cls, job: str) -> Next:
        """Re-run `job` and everything downstream of it. It is not told why: prefer back_to_with."""
        return cls("goto", job)

    @classmethod
    def back_to_with(cls, job: str, feedback: str) -> Next:
        """Re-run `job` and everything downstream of it; `job` receives `feedback` and its last output."""
        if feedback is None:
            raise GraphError(f"Next.back_to_with({job!r}, ...) needs feedback; use Next.back_to for none")
        return cls("goto", job, feedback)

    def __repr__(self) -> str:
        if self.kind == "goto":
            if self.feedback is None:
                return f"Next.back_to({self.job!r})"
            return f"Next.back_to_with({self.job!r}, {self.feedback!r})"
        return f"Next.{self.kind.capitalize()}"


Next.Continue = Next("continue")
Next.Stop = Next("stop")

Router = Callable[[Any], Next]
"""A router: the finished job's result in, a Next out. Any function or lambda will do."""


@dataclass(frozen=True)
class Route:
    """A router attached to `job`, with every job its Gotos may name declared in `targets`."""

    job: str
    router: Router
    targets: tuple[str, ...] = ()

    def check(self, decision: object) -> str | None:
        """Why `decision` cannot be acted on, or None if it can (run-time check of a router's answer)."""
        if not isinstance(decision, Next):
            return (f"router on {self.job!r} returned {decision!r}, not a Next (Next.Continue, "
                    "Next.back_to(job), Next.back_to_with(job, feedback) or Next.Stop)")
        if decision.kind == "goto" and decision.job not in self.targets:
            declared = ", ".join(self.targets) or "none"
            written = "" if decision.job.isascii() else f" (written {ascii(decision.job)})"
            return (f"router on {self.job!r} returned {decision!r}{written}, a target its route did "
                    f"not declare (declared: {declared})")
        return None
