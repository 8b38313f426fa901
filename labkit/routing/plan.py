"""What a graph turns into once validated (Plan), and what a job's function receives (Context)."""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from labkit.routing.clock import Clock
from labkit.routing.retry import RetryPolicy
from labkit.routing.route import Route

JobFn = Callable[..., Any]  # fn(ctx) returning the job's result, or an awaitable of it


@dataclass(frozen=True)
class Job:
    """One declared job: its id, `fn(ctx)` returning its result (or an awaitable of it), the ids it depends
    on, and its RetryPolicy (None: its first failure is final)."""

    id: str
    fn: JobFn
    deps: tuple[str, ...] = ()
    retry: RetryPolicy | None = None


@dataclass(frozen=True)
class Plan:
    """A validated graph: `jobs` in declaration order, each job's `deps` and `dependents` (ids in
    declaration order, each once), and the Route of each routed job."""

    jobs: tuple[Job, ...]
    deps: Mapping[str, tuple[str, ...]]
    dependents: Mapping[str, tuple[str, ...]]
    routes: Mapping[str, Route]


def reach(root: str, edges: Mapping[str, Sequence[str]]) -> list[str]:
    """`root` and every job reached from it along `edges` (deps: upstream; dependents: downstream),
    breadth first, each once."""
    order, seen = [root], {root}
    for job in order:  # grows while it is walked
        for other in edges[job]:
            if other not in seen:
                seen.add(other)
                order.append(other)
    return order


class Context(NamedTuple):
    """What a job's function receives: each dependency's result in this visit, the run number and the
    try within it (both from 1); on a visit started by a Goto naming this job, its feedback and the
    job's last output."""

    job: str
    inputs: Mapping[str, Any]
    visit: int
    attempt: int
    feedback: str | None
    previous: Any
    clock: Clock

    @property
    def input(self) -> Any:
        """The result of the job's only dependency; ValueError if it has none or several (serves: user)."""
        if len(self.inputs) != 1:
            raise ValueError(f"job {self.job!r} has {len(self.inputs)} inputs; use ctx.inputs[job_id]")
        return next(iter(self.inputs.values()))
