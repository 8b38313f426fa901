"""Routers: after a job succeeds, a function of its result says what is next: ``Next.Continue``,
``Next.back_to(job)`` (re-run `job` and what is downstream of it), ``Next.back_to_with(job, feedback)``
or ``Next.Stop`` (end as a success). Targets are declared with the route (LangGraph's `path_map`) and
checked before anything runs; an undeclared target at run time fails the job."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from labkit.routing.errors import GraphError


@dataclass(frozen=True)
class Next:
    """What happens after a job succeeds. Build it with the names below, not directly."""

    kind: Literal["continue", "goto", "stop"]
    job: str | None = None
    feedback: str | None = None

    Continue: ClassVar[Next]
    Stop: ClassVar[Next]

    @classmethod
    def back_to(cls, job: str) -> Next:
        """A Goto: re-run `job` (a target the route declares) and everything downstream of it, no feedback."""
        return cls("goto", job)

    @classmethod
    def back_to_with(cls, job: str, feedback: str) -> Next:
        """As `back_to`, telling `job`'s next visit why (`ctx.feedback`); GraphError unless `feedback` is a
        non-blank string (serves: user)."""
        if not isinstance(feedback, str) or not feedback.strip():
            raise GraphError(
                f"Next.back_to_with({job!r}, feedback) needs a non-blank string as feedback, got {feedback!r}"
            )
        return cls("goto", job, feedback)

    def __repr__(self) -> str:
        if self.kind != "goto":
            return f"Next.{self.kind.capitalize()}"
        if self.feedback is None:
            return f"Next.back_to({self.job!r})"
        return f"Next.back_to_with({self.job!r}, {self.feedback!r})"


Next.Continue = Next("continue")
Next.Stop = Next("stop")

Router = Callable[[Any], Next]  # the finished job's result in, a Next out


@dataclass(frozen=True)
class Route:
    """A router attached to `job`, with every job its Gotos may name declared in `targets`."""

    job: str
    router: Router
    targets: tuple[str, ...] = ()

    def check(self, decision: object) -> str | None:
        """Why the router's `decision` cannot be acted on, or None if it can.
        (serves: lesson — lab 04's routing rules: an undeclared target fails the job)"""
        if not isinstance(decision, Next):
            return (
                f"router on {self.job!r} returned {decision!r}, not a Next (Next.Continue, "
                "Next.back_to(job), Next.back_to_with(job, feedback) or Next.Stop)"
            )
        if decision.kind == "goto" and decision.job not in self.targets:
            return (
                f"router on {self.job!r} returned {decision!r}, a target its route did not declare "
                f"(declared: {', '.join(self.targets) or 'none'})"
            )
        return None
