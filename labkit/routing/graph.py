"""A graph of jobs: declare jobs and routes; `validate()` (which `run` calls first) raises the first
problem as one GraphError: an id declared twice, an unknown dependency, a cycle, a route on an unknown
job, twice on one job, or to a target that is unknown or not upstream of the routed job.
(serves: lesson — lab 04's graph validation, what the lab teaches)"""

from __future__ import annotations

import difflib
import graphlib
from collections.abc import Iterable

from labkit.routing.clock import Clock
from labkit.routing.errors import GraphError
from labkit.routing.plan import Job, JobFn, Plan, reach
from labkit.routing.result import RunResult
from labkit.routing.retry import RetryPolicy
from labkit.routing.route import Route, Router
from labkit.routing.scheduler import run_plan_sync


def _check_id(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip() or value != value.strip():
        raise GraphError(f"{what} must be a non-empty string without surrounding spaces, got {value!r}")
    return value


def _check_ids(values: object, what: str) -> tuple[str, ...]:
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise GraphError(f"{what} must be a list of job ids, not {values!r}")
    return tuple(_check_id(value, f"each of {what}") for value in values)


def _suggest(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


class Graph:
    """Jobs and routes, recorded in declaration order; `validate()` checks them together."""

    def __init__(self) -> None:
        self.jobs: list[Job] = []
        self.routes: list[Route] = []

    def job(self, id: str, fn: JobFn, *, deps: Iterable[str] = (), retry: RetryPolicy | None = None) -> Graph:
        """Declare job `id` running `fn(ctx)` after every job in `deps`, retried as `retry` says (no retry
        when None). Returns the graph; GraphError (one line) for an id that is not a non-empty str, an
        `fn` that is not callable, deps that are not ids, or a `retry` that is not a RetryPolicy. That a
        dep names a declared job is checked by `validate`."""
        _check_id(id, "a job id")
        if not callable(fn):
            raise GraphError(f"job {id!r}: fn must be callable, got {fn!r}")
        deps = _check_ids(deps, f"job {id!r}: deps")
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise GraphError(f"job {id!r}: retry must be a RetryPolicy or None, got {retry!r}")
        self.jobs.append(Job(id, fn, deps, retry))
        return self

    def route(self, job: str, router: Router, *, targets: Iterable[str] = ()) -> Graph:
        """Attach `router` to `job`; `targets` lists every job its Gotos may name. Returns the graph;
        GraphError for a job id or targets that are not ids, or a router that is not callable (that the
        job and the targets are declared, and one route a job, `validate` checks)."""
        _check_id(job, "a routed job id")
        if not callable(router):
            raise GraphError(f"route on {job!r}: router must be callable, got {router!r}")
        self.routes.append(Route(job, router, _check_ids(targets, f"route on {job!r}: targets")))
        return self

    def validate(self) -> Plan:
        """Check the whole graph (see the module docstring); return the plan the scheduler runs, or
        raise GraphError naming the first problem (a job declared twice, an unknown dep, a dependency
        cycle, a route on an unknown job, two routes on one job, a target that is not a declared job
        upstream of its router's job)."""
        ids: dict[str, None] = {}
        for job in self.jobs:
            if job.id in ids:
                raise GraphError(f"job {job.id!r} is declared twice")
            ids[job.id] = None
        deps = {job.id: tuple(dict.fromkeys(job.deps)) for job in self.jobs}  # a repeat counted once
        dependents: dict[str, list[str]] = {job: [] for job in ids}
        for job, needs in deps.items():
            for dep in needs:
                if dep not in ids:
                    raise GraphError(f"job {job!r} depends on unknown job {dep!r}{_suggest(dep, ids)}")
                dependents[dep].append(job)
        try:
            graphlib.TopologicalSorter(deps).prepare()
        except graphlib.CycleError as error:  # its path reads in running order
            path = " -> ".join(error.args[1])
            raise GraphError(f"dependency cycle: {path} (declare a loop as a route, not as deps)") from None
        routes: dict[str, Route] = {}
        for route in self.routes:
            if route.job not in ids:
                raise GraphError(f"route on unknown job {route.job!r}{_suggest(route.job, ids)}")
            if route.job in routes:
                raise GraphError(f"job {route.job!r} has two routes; a job has at most one router")
            upstream = reach(route.job, deps)
            for target in route.targets:
                if target not in ids:
                    raise GraphError(
                        f"route on {route.job!r} names unknown target {target!r}{_suggest(target, ids)}"
                    )
                if target not in upstream:
                    raise GraphError(
                        f"route on {route.job!r}: target {target!r} is not {route.job!r} "
                        f"or upstream of it (a Goto goes back to a job it depends on)"
                    )
            routes[route.job] = route
        return Plan(tuple(self.jobs), deps, {job: tuple(d) for job, d in dependents.items()}, routes)

    def run(self, *, max_concurrency: int = 4, max_visits: int = 5, clock: Clock | None = None) -> RunResult:
        """Validate, then run the graph to the end (see labkit.routing.scheduler) and return its
        RunResult (every job's state, attempts and visits, the run's status); GraphError from `validate`
        or for settings out of range. Works inside a running event loop too (in async code, `await
        scheduler.run_plan(graph.validate())`)."""
        return run_plan_sync(
            self.validate(), max_concurrency=max_concurrency, max_visits=max_visits, clock=clock
        )

    def __repr__(self) -> str:
        return f"Graph({len(self.jobs)} jobs, {len(self.routes)} routes)"
