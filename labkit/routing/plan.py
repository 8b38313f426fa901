"""What a graph turns into once validated, and what a job's function receives.

These types sit between graph.py (which builds a Plan) and scheduler.py (which runs one),
so that neither imports the other's internals: graph -> plan <- scheduler, and graph ->
scheduler for `Graph.run`, never the other way round.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from labkit.routing.clock import Clock
from labkit.routing.retry import RetryPolicy
from labkit.routing.route import Route

JobFn = Callable[..., Any]
"""A job: `fn(ctx)` returning its result, or a coroutine that does (see Context)."""


@dataclass(frozen=True)
class Job:
    """One unit of work: an id, the jobs it needs first, its function, its retry policy."""

    id: str
    fn: JobFn
    deps: tuple[str, ...] = ()
    retry: RetryPolicy | None = None


@dataclass(frozen=True)
class Plan:
    """A validated graph in the scheduler's terms: jobs by position, edges both ways.

    `deps[i]` and `dependents[i]` hold positions in declaration order, each at most once;
    `routes` maps a routed job's position to its Route; `index` maps an id to its position.
    """

    jobs: tuple[Job, ...]
    index: Mapping[str, int]
    deps: tuple[tuple[int, ...], ...]
    dependents: tuple[tuple[int, ...], ...]
    routes: Mapping[int, Route]


class Context(NamedTuple):
    """What a job's function receives.

    `inputs` maps each dependency's id to its result in the current visit. `visit` is the
    job's run number (1 first), `attempt` the try within the visit (1 first). `feedback`
    and `previous` are set only on a visit started by a Goto naming this job: the Goto's
    feedback (None for `Next.back_to`) and this job's output from its previous visit.
    `clock` is the run's clock: `await ctx.clock.sleep(s)` waits in run time.

    Immutable, like Event: a job reads its context, it cannot change what others see.
    """

    job: str
    inputs: Mapping[str, Any]
    visit: int
    attempt: int
    feedback: str | None
    previous: Any
    clock: Clock

    @property
    def input(self) -> Any:
        """The result of the job's only dependency; ValueError if it has none or several."""
        if len(self.inputs) != 1:
            raise ValueError(f"job {self.job!r} has {len(self.inputs)} inputs; use ctx.inputs[job_id]")
        return next(iter(self.inputs.values()))
