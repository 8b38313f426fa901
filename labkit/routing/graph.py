"""A graph of jobs: declare jobs and routes, then validate everything before anything runs.

::

    graph = Graph()
    graph.job("draft", write_draft)
    graph.job("revise", revise, deps=["draft"])
    graph.job("review", measure, deps=["revise"])
    graph.route("review", within_limit, targets=["revise"])
    graph.job("publish", publish, deps=["review"])
    result = graph.run(max_visits=3)

`job` and `route` only check their own arguments (an id is a non-empty string with no
invisible character, in Unicode NFC form — see route.id_problem —, a function is
callable, deps are a list of ids and not one string). Everything that relates jobs to
each other is checked by `validate()`, which `run` calls first, and raises the first
problem as one GraphError, in this order:

1. a job id declared twice:          ``job 'draft' is declared twice``
2. a dependency on an unknown job:   ``job 'review' depends on unknown job 'revize' (did you mean 'revise'?)``
3. a dependency cycle, with its path in running order:
   ``dependency cycle: review -> revise -> review (declare a loop as a route, not as deps)``
4. a route on an unknown job, a job with two routes, an unknown target, or a target that
   is not the routed job itself or upstream of it (a Goto goes back, never sideways).

A job declared before its dependencies is fine: order matters only as the tie-break
when several jobs become ready at once.
"""

from __future__ import annotations

import difflib
from collections import deque
from collections.abc import Iterable

from labkit.routing.clock import Clock
from labkit.routing.errors import GraphError
from labkit.routing.plan import Job, JobFn, Plan
from labkit.routing.result import RunResult
from labkit.routing.retry import RetryPolicy
from labkit.routing.route import Route, Router, id_problem
from labkit.routing.scheduler import run_plan, run_plan_sync


def _check_id(value: object, what: str) -> str:
    if isinstance(value, str):
        value = str.__str__(value)  # the exact str it holds: a subclass's __eq__ plays no part in lookups
        if problem := id_problem(value):
            raise GraphError(f"{what} {problem}")
    if not isinstance(value, str) or not value.strip() or value != value.strip():
        raise GraphError(f"{what} must be a non-empty string without surrounding spaces, got {value!r}")
    return value


def _check_ids(values: object, what: str) -> tuple[str, ...]:
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise GraphError(f"{what} must be a list of job ids, not {values!r}")
    return tuple(_check_id(value, f"each of {what}") for value in values)


def _suggest(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    # A suggestion that looks exactly like the name (another script's 'a') needs the escape.
    written = "" if name.isascii() else f"written {ascii(name)}"
    if close:
        return f" ({written + '; ' if written else ''}did you mean {close[0]!r}?)"
    return f" ({written})" if written else ""


class Graph:
    """Jobs and routes, recorded in declaration order; `validate()` checks them together."""

    def __init__(self) -> None:
        self._jobs: list[Job] = []
        self._routes: list[Route] = []

    @property
    def jobs(self) -> tuple[Job, ...]:
        return tuple(self._jobs)

    @property
    def routes(self) -> tuple[Route, ...]:
        return tuple(self._routes)

    def job(self, id: str, fn: JobFn, *, deps: Iterable[str] = (),
            retry: RetryPolicy | None = None) -> Graph:
        """Declare job `id` running `fn(ctx)` after every job in `deps`. Returns the graph."""
        _check_id(id, "a job id")
        if not callable(fn):
            raise GraphError(f"job {id!r}: fn must be callable, got {fn!r}")
        deps = _check_ids(deps, f"job {id!r}: deps")
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise GraphError(f"job {id!r}: retry must be a RetryPolicy or None, got {retry!r}")
        self._jobs.append(Job(id, fn, deps, retry))
        return self

    def route(self, job: str, router: Router, *, targets: Iterable[str] = ()) -> Graph:
        """Attach `router` to `job`; `targets` lists every job its Gotos may name. Returns the graph."""
        _check_id(job, "a routed job id")
        if not callable(router):
            raise GraphError(f"route on {job!r}: router must be callable, got {router!r}")
        self._routes.append(Route(job, router, _check_ids(targets, f"route on {job!r}: targets")))
        return self

    def validate(self) -> Plan:
        """Check the whole graph (see the module docstring); return the plan the scheduler runs."""
        jobs = self._jobs
        index = {job.id: position for position, job in enumerate(jobs)}
        if len(index) != len(jobs):  # then find the first id seen twice, in declaration order
            seen: set[str] = set()
            for job in jobs:
                if job.id in seen:
                    raise GraphError(f"job {job.id!r} is declared twice")
                seen.add(job.id)
        deps: list[tuple[int, ...]] = []  # positions of each job's dependencies, a repeat counted once
        dependents: list[list[int]] = [[] for _ in jobs]  # each in declaration order
        for position, job in enumerate(jobs):
            for dep in job.deps:
                if dep not in index:
                    raise GraphError(f"job {job.id!r} depends on unknown job {dep!r}{_suggest(dep, index)}")
            positions = tuple(dict.fromkeys(index[dep] for dep in job.deps))
            deps.append(positions)
            for dep in positions:
                dependents[dep].append(position)
        cycle = _find_cycle(dependents)
        if cycle:
            path = " -> ".join(self._jobs[i].id for i in cycle)
            raise GraphError(f"dependency cycle: {path} (declare a loop as a route, not as deps)")
        routes: dict[int, Route] = {}
        for route in self._routes:
            if route.job not in index:
                raise GraphError(f"route on unknown job {route.job!r}{_suggest(route.job, index)}")
            position = index[route.job]
            if position in routes:
                raise GraphError(f"job {route.job!r} has two routes; a job has at most one router")
            upstream = _upstream(position, deps)
            for target in route.targets:
                if target not in index:
                    raise GraphError(f"route on {route.job!r} names unknown target {target!r}"
                                     f"{_suggest(target, index)}")
                if index[target] not in upstream:
                    raise GraphError(f"route on {route.job!r}: target {target!r} is not {route.job!r} "
                                     f"or upstream of it (a Goto goes back to a job it depends on)")
            routes[position] = route
        return Plan(tuple(jobs), index, tuple(deps), tuple(map(tuple, dependents)), routes)

    def run(self, *, max_concurrency: int = 4, max_visits: int = 5,
            clock: Clock | None = None) -> RunResult:
        """Validate, then run the graph to the end; see labkit.routing.scheduler.

        Works inside a running event loop too (a Jupyter kernel): the run then gets its own
        loop on a worker thread. In async code, `await graph.run_async(...)` instead.
        """
        return run_plan_sync(self.validate(), max_concurrency=max_concurrency,
                             max_visits=max_visits, clock=clock)

    async def run_async(self, *, max_concurrency: int = 4, max_visits: int = 5,
                        clock: Clock | None = None) -> RunResult:
        """`run`, as a coroutine on the caller's event loop."""
        return await run_plan(self.validate(), max_concurrency=max_concurrency,
                              max_visits=max_visits, clock=clock)

    def __repr__(self) -> str:
        jobs, routes = len(self._jobs), len(self._routes)
        return f"Graph({jobs} job{'s' * (jobs != 1)}, {routes} route{'s' * (routes != 1)})"


def _find_cycle(dependents: list[list[int]]) -> list[int] | None:
    """The first dependency cycle in declaration order, as positions with the first repeated.

    Iterative depth-first search: a 10,000-job chain would overflow Python's recursion limit.
    """
    colour = [0] * len(dependents)  # 0 unseen, 1 on the current path, 2 finished
    for root in range(len(dependents)):
        if colour[root]:
            continue
        colour[root] = 1
        path, stack = [root], [iter(dependents[root])]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                colour[path.pop()] = 2
                stack.pop()
            elif colour[nxt] == 1:
                return path[path.index(nxt):] + [nxt]
            elif colour[nxt] == 0:
                colour[nxt] = 1
                path.append(nxt)
                stack.append(iter(dependents[nxt]))
    return None


def _upstream(position: int, deps: list[tuple[int, ...]]) -> set[int]:
    """`position` and every job it depends on, directly or not."""
    seen, queue = {position}, deque([position])
    while queue:
        for dep in deps[queue.popleft()]:
            if dep not in seen:
                seen.add(dep)
                queue.append(dep)
    return seen
