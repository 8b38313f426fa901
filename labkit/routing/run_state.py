"""What one run knows, and what each outcome does to it: plain bookkeeping, no event loop.

`RunState` holds every job's state, counts and result and the event log, and applies
the rules of scheduler.py's contract: a completion releases dependents (dependency
counts), a failure cancels what depends on the job, a Goto resets its part of the graph
or, past max_visits, dead-letters the loop, a Stop cancels everything unfinished. Each
of those returns the jobs whose tasks the scheduler must withdraw; it never touches a
task itself. Every state change goes through `log`, checked against TRANSITIONS.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from labkit.routing.clock import Clock
from labkit.routing.plan import Plan
from labkit.routing.result import RunResult
from labkit.routing.route import Next
from labkit.routing.states import (
    CANCELLED,
    COMPLETED,
    DEAD_LETTER,
    FAILED,
    FINAL,
    PENDING,
    RETRYING,
    RUNNING,
    TRANSITIONS,
    Event,
    State,
)

Outcome = tuple[str, Any]
"""How a visit ended: ("ok", result), ("failed", note), ("cancelled", None) or ("raise", error)."""

LIVE = (PENDING, RUNNING, RETRYING)  # the states a Goto, a Stop or a failure upstream can still change
SHOWN = 5  # job names listed in a reason before "… (+N more)"


def names(ids: Iterable[str]) -> str:
    """`ids` for a reason: "a, b, c", at most SHOWN of them, or "none"."""
    ids = list(ids)
    more = f" … (+{len(ids) - SHOWN} more)" if len(ids) > SHOWN else ""
    return ", ".join(ids[:SHOWN]) + more if ids else "none"


class RunState:
    """The bookkeeping of one run. Positions (ints) stand for jobs throughout."""

    def __init__(self, plan: Plan, max_visits: int, clock: Clock) -> None:
        n = len(plan.jobs)
        self.plan, self.max_visits, self.clock = plan, max_visits, clock
        self.ids = [job.id for job in plan.jobs]
        self.state: list[State] = [PENDING] * n
        self.waiting = [len(deps) for deps in plan.deps]  # dependencies not completed in this visit
        self.visits = [0] * n  # runs of each job, the first included
        self.attempts = [0] * n  # tries of each job, over all its visits
        self.attempt = [0] * n  # the try within the current visit
        self.results: list[Any] = [None] * n
        self.errors: dict[int, str] = {}
        self.carry: dict[int, tuple[str | None, Any]] = {}  # a Goto target's feedback and previous output
        self.ready: deque[int] = deque(i for i in range(n) if not plan.deps[i])
        self.events: list[Event] = []
        self.failures: list[str] = []
        self.dead_letters: list[str] = []
        self.stop_note: str | None = None
        self.stopped_by: str | None = None
        self.start = clock.now()

    def names(self, jobs: Iterable[int]) -> str:
        return names(self.ids[j] for j in jobs)

    def log(self, i: int, new: State, note: str = "") -> None:
        """Move job `i` to `new`, checked against TRANSITIONS, and record the Event."""
        old = self.state[i]
        if new not in TRANSITIONS[old]:
            raise RuntimeError(f"scheduler bug: illegal transition {self.ids[i]}: {old} -> {new}")
        self.state[i] = new
        self.events.append(Event(self.clock.now() - self.start, self.ids[i], old, new,
                                 self.visits[i], self.attempt[i], note))

    # -- a visit: start, retries -----------------------------------------------------------

    def start_next(self) -> tuple[int, dict[str, Any], str | None, Any] | None:
        """Start the next ready job's visit: (job, its inputs, feedback, previous), or None."""
        while self.ready:
            i = self.ready.popleft()
            if self.state[i] is not PENDING or self.waiting[i]:
                continue  # reset or cancelled while it waited for a slot
            feedback, previous = self.carry.pop(i, (None, None))
            self.visits[i] += 1
            self.attempts[i] += 1
            self.attempt[i] = 1
            self.log(i, RUNNING, f"feedback: {feedback}" if feedback else "")
            return i, {self.ids[d]: self.results[d] for d in self.plan.deps[i]}, feedback, previous
        return None

    def retrying(self, i: int, message: str, delay: float) -> None:
        """Job `i`'s attempt failed with `message` and will be tried again after `delay` s."""
        self.log(i, FAILED, message)
        self.log(i, RETRYING, f"attempt {self.attempt[i] + 1} after {delay:g} s")

    def next_attempt(self, i: int) -> None:
        self.attempt[i] += 1
        self.attempts[i] += 1
        self.log(i, RUNNING)

    # -- what a finished visit leads to --------------------------------------------------

    def settle(self, i: int, outcome: Outcome) -> list[int]:
        """Act on the outcome of job `i`'s visit; return the jobs whose tasks must be withdrawn."""
        kind, value = outcome
        if kind == "failed":
            return self.fail(i, value)
        if kind == "cancelled":  # only the job's own code can cancel a task the run still counts on
            return self.fail(i, "CancelledError: the job cancelled its own task")
        if kind == "raise":
            raise value  # a LabError (a broken lab) or a scheduler bug ends the run
        route = self.plan.routes.get(i)
        decision = Next.Continue
        if route is not None:
            try:
                decision = route.router(value)
                problem = route.check(decision)
            except Exception as error:  # noqa: BLE001 - a broken router fails its job, visibly
                problem = f"router on {route.job!r} raised {type(error).__name__}: {error}"
            if problem:
                return self.fail(i, problem)
        self.results[i] = value
        self.log(i, COMPLETED, "" if route is None else repr(decision))
        if decision.kind == "goto":
            return self.goto(i, self.plan.index[decision.job], decision.feedback)
        if decision.kind == "stop":
            return self.stop(i)
        for dependent in self.plan.dependents[i]:
            self.waiting[dependent] -= 1
            if self.waiting[dependent] == 0 and self.state[dependent] is PENDING:
                self.ready.append(dependent)
        return []

    def cancel(self, jobs: Iterable[int], note: str) -> list[int]:
        """Cancel those of `jobs` still live; return them."""
        live = [i for i in jobs if self.state[i] in LIVE]
        for i in live:
            self.log(i, CANCELLED, note)
        return live

    def downstream(self, root: int) -> list[int]:
        """`root` and every job that depends on it, directly or not, breadth first."""
        seen, order = {root}, [root]
        for job in order:  # grows while it is walked
            for dependent in self.plan.dependents[job]:
                if dependent not in seen:
                    seen.add(dependent)
                    order.append(dependent)
        return order

    def fail(self, i: int, note: str) -> list[int]:
        """Job `i` failed for good: cancel its live dependents, reached through live jobs."""
        self.errors[i] = note
        self.log(i, FAILED if self.state[i] is RUNNING else CANCELLED, note)
        doomed, seen, queue = [], set(), deque(self.plan.dependents[i])
        while queue:
            d = queue.popleft()
            if d not in seen and self.state[d] in LIVE:
                seen.add(d)
                doomed.append(d)
                queue.extend(self.plan.dependents[d])
        cancelled = self.cancel(doomed, f"{self.ids[i]} failed")
        self.failures.append(f"{self.ids[i]} failed: {note}; cancelled: {self.names(cancelled)}")
        return cancelled

    def goto(self, r: int, target: int, feedback: str | None) -> list[int]:
        """Job `r`'s router sent the run back to `target`: re-run it and all downstream of it."""
        rerun = self.downstream(target)
        if any(self.visits[j] >= self.max_visits for j in rerun if self.state[j] in (*LIVE, COMPLETED)):
            return self.dead_letter(r, target, feedback, rerun)
        previous = self.results[target]
        reset = [j for j in rerun if self.state[j] in (COMPLETED, RUNNING, RETRYING)]
        for j in reset:
            self.log(j, PENDING, f"reset by {self.ids[r]} -> {self.ids[target]}")
            self.results[j] = None
        for j in rerun:
            self.carry.pop(j, None)
        self.carry[target] = (feedback, previous)
        for j in rerun:
            if self.state[j] is PENDING:
                self.waiting[j] = sum(self.state[d] is not COMPLETED for d in self.plan.deps[j])
                if self.waiting[j] == 0:
                    self.ready.append(j)
        return reset

    def dead_letter(self, r: int, target: int, feedback: str | None, rerun: list[int]) -> list[int]:
        """The Goto would run a job past max_visits: the loop's jobs become dead letters."""
        inside, looping, queue = set(rerun), {r}, deque([r])
        while queue:  # the loop: the jobs of `rerun` that r depends on, and r
            for dep in self.plan.deps[queue.popleft()]:
                if dep in inside and dep not in looping:
                    looping.add(dep)
                    queue.append(dep)
        looping_jobs = sorted(looping)
        for j in looping_jobs:
            if self.state[j] is COMPLETED:
                self.log(j, DEAD_LETTER, f"max_visits={self.max_visits} reached")
        cancelled = self.cancel(rerun, f"dead letter upstream: {self.ids[r]} -> {self.ids[target]}")
        runs = ", ".join(f"{self.ids[j]} {self.visits[j]} runs" for j in looping_jobs)
        told = f"; last feedback: {feedback!r}" if feedback is not None else "; no feedback given"
        self.dead_letters.append(
            f"loop {self.ids[r]} -> {self.ids[target]} hit max_visits={self.max_visits} ({runs}){told}; "
            f"cancelled: {self.names(cancelled)}")
        return cancelled

    def stop(self, r: int) -> list[int]:
        """Job `r`'s router said Next.Stop: cancel everything unfinished."""
        self.stopped_by = self.ids[r]
        cancelled = self.cancel(range(len(self.ids)), f"Next.Stop from {self.ids[r]}")
        self.ready.clear()
        self.stop_note = f"stopped by {self.ids[r]} (Next.Stop); cancelled: {self.names(cancelled)}"
        return cancelled

    # -- the end ---------------------------------------------------------------------------

    def result(self) -> RunResult:
        """The RunResult; RuntimeError (a scheduler bug) if a job is not in a final state."""
        unfinished = [f"{self.ids[i]} ({state})" for i, state in enumerate(self.state) if state not in FINAL]
        if unfinished:
            raise RuntimeError(f"scheduler bug: run ended with unfinished jobs: {names(unfinished)}")
        if self.dead_letters:
            status, reason = "dead_letter", "; ".join(self.dead_letters + self.failures)
        elif self.failures:
            status, reason = "failed", "; ".join(self.failures)
        else:
            status, reason = "completed", self.stop_note or f"all {len(self.ids)} jobs completed"
        return RunResult(
            status=status,
            reason=reason,
            states=dict(zip(self.ids, self.state, strict=True)),
            visits=dict(zip(self.ids, self.visits, strict=True)),
            attempts=dict(zip(self.ids, self.attempts, strict=True)),
            results={self.ids[i]: self.results[i] for i, state in enumerate(self.state)
                     if state in (COMPLETED, DEAD_LETTER)},
            errors={self.ids[i]: note for i, note in sorted(self.errors.items())},
            events=tuple(self.events),
            elapsed=self.clock.now() - self.start,
            stopped_by=self.stopped_by,
        )
