"""Run a validated Plan on one event loop (`run_plan`; `run_plan_sync` from plain code or Jupyter).

Start order: the ready queue is first-in first-out. It starts with the jobs that have no dependencies,
in declaration order; the ready step (`ready_after`, replaceable as `ready=`) counts a completed job off
each of its dependents (O(jobs + edges) a run) and queues those whose count reaches zero, in declaration
order. At most `max_concurrency` jobs are in flight (a job in backoff keeps its slot); outcomes that
arrive together are settled in start order.

Failure: a job fails for good when its retry is refused (no RetryPolicy, an error it does not retry,
InvalidInput, its attempts used up), when its router raises or returns what its route refuses, or when
it cancels its own task. That cancels every job downstream of it, directly or not, still pending,
running or retrying; other branches run on, and the run's status is "failed". A LabError from a job is
no outcome: it ends the run, every task withdrawn, and propagates.

Goto: when router job R returns `Next.back_to(T)` (T declared, and R or upstream of it), T and every job
downstream of T that is completed, running or retrying go back to pending (running tasks are withdrawn,
their work discarded), and each re-runs once its dependencies have completed again; T's next visit gets
the feedback and its own last result (`ctx.feedback`, `ctx.previous`). Jobs outside T's downstream are
untouched, and a cancelled one stays cancelled. `Next.Stop` cancels every job not finished.

Caps: a Goto that would start a job's visit past `max_visits` is not followed: the loop's completed
jobs (from T to R) become dead letters, what is live from T downstream is cancelled, and the status is
"dead_letter" (over "failed"). So a job runs at most max_visits × max_attempts times. GraphError, before
anything runs, unless both caps are ints >= 1 and `clock` is a Clock.

Blocking: a job's function is called on the event loop's thread. A plain (non-async) function runs to
its end before anything else happens, so a blocking call in it (time.sleep, a synchronous HTTP request)
blocks the whole run: no other job moves, and no Goto, Stop or failure can withdraw it meanwhile. Only
an awaiting (async) job overlaps with others.
"""

import asyncio
import inspect
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from labkit.core.check import copied
from labkit.core.errors import LabError
from labkit.routing.clock import Clock, RealClock
from labkit.routing.errors import GraphError
from labkit.routing.plan import Context, Plan, reach
from labkit.routing.result import RunResult
from labkit.routing.route import Next
from labkit.routing.states import (
    CANCELLED,
    COMPLETED,
    DEAD_LETTER,
    FAILED,
    FINAL_STATES,
    PENDING,
    RETRYING,
    RUNNING,
    TRANSITIONS,
    Event,
    State,
)

_LIVE = (PENDING, RUNNING, RETRYING)  # what a Goto, a Stop or a failure upstream can still change
_LISTED = 5  # jobs named in a reason before "… (+N more)"


def ready_after(finished, dependents, waiting, states):
    """`finished` just completed: count it off each job that depends on it, and return those
    whose count reached zero and that are still pending, in the order of `dependents`."""
    ready = []
    for job in dependents[finished]:
        waiting[job] -= 1
        if waiting[job] == 0 and states[job] == "pending":
            ready.append(job)
    return ready


_ReadyStep = Callable[[str, Mapping[str, Sequence[str]], dict[str, int], Mapping[str, State]], list[str]]


def _listed(ids: Iterable[str]) -> str:
    ids = list(ids)
    more = f" … (+{len(ids) - _LISTED} more)" if len(ids) > _LISTED else ""
    return ", ".join(ids[:_LISTED]) + more if ids else "none"


async def run_plan(
    plan: Plan,
    *,
    max_concurrency: int = 4,
    max_visits: int = 5,
    clock: Clock | None = None,
    ready: _ReadyStep = ready_after,
) -> RunResult:
    """Run a validated plan on the running event loop and return its RunResult; `ready` is the ready step
    (see the module doc). GraphError for max_concurrency or max_visits that is not an int >= 1, or a
    clock without now() and sleep()."""
    # serves: user — a setting out of range is one line
    for name, value in (("max_concurrency", max_concurrency), ("max_visits", max_visits)):
        if type(value) is not int or value < 1:
            raise GraphError(f"{name} must be an int >= 1, got {value!r}")
    if clock is not None and not isinstance(clock, Clock):
        raise GraphError(f"clock must have now() and async sleep(seconds), got {clock!r}")
    return await _Run(plan, max_visits, clock or RealClock(), ready).run(max_concurrency)


def run_plan_sync(plan: Plan, **settings: Any) -> RunResult:
    """`run_plan` from synchronous code, including code already inside an event loop (Jupyter): the
    same RunResult, the same GraphError."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run_plan(plan, **settings))
    # asyncio.run refuses to nest: give the run its own loop on a worker thread.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="labkit-run") as pool:
        return pool.submit(lambda: asyncio.run(run_plan(plan, **settings))).result()


class _Run:
    """One run: every job's state, counts and result, the event log, and the tasks in flight."""

    def __init__(self, plan: Plan, max_visits: int, clock: Clock, ready_step: _ReadyStep) -> None:
        self.plan, self.max_visits, self.clock, self.ready_step = plan, max_visits, clock, ready_step
        ids = [job.id for job in plan.jobs]
        self.jobs = {job.id: job for job in plan.jobs}
        self.states: dict[str, State] = dict.fromkeys(ids, PENDING)
        self.waiting = {job: len(plan.deps[job]) for job in ids}  # dependencies not completed this visit
        self.visits = dict.fromkeys(ids, 0)  # runs of each job, the first included
        self.attempts = dict.fromkeys(ids, 0)  # tries of each job, over all its visits
        self.attempt = dict.fromkeys(ids, 0)  # the try within the current visit
        self.results: dict[str, Any] = dict.fromkeys(ids)
        self.errors: dict[str, str] = {}
        self.carry: dict[str, tuple[str | None, Any]] = {}  # a Goto target's feedback and last output
        self.ready = deque(job for job in ids if not self.waiting[job])
        self.running: dict[asyncio.Task[tuple[str, Any]], str] = {}
        self.events: list[Event] = []
        self.failures: list[str] = []
        self.dead_letters: list[str] = []
        self.stop_note: str | None = None
        self.stopped_by: str | None = None
        self.start = clock.now()

    async def run(self, max_concurrency: int) -> RunResult:
        """Start what is ready, wait for the first outcome, settle it; until nothing is left."""
        try:
            while self.ready or self.running:
                while self.ready and len(self.running) < max_concurrency:
                    job = self.ready.popleft()
                    # serves: ours — a job a Goto reset after it was queued is not started
                    if self.states[job] == PENDING and self.waiting[job] == 0:  # not reset meanwhile
                        self.running[self.begin(job)] = job
                if not self.running:
                    continue
                done, _ = await asyncio.wait(self.running, return_when=asyncio.FIRST_COMPLETED)
                for task in [task for task in self.running if task in done]:  # in start order
                    if task in self.running:  # else withdrawn by an outcome settled just before
                        await self.withdraw(self.settle(self.running.pop(task), task))
        finally:  # a LabError, or the run itself cancelled: no job outlives its run
            await self.withdraw(list(self.running.values()))
        return self.result()

    def log(self, job: str, new: State, note: str = "") -> None:
        """Move `job` to `new`, checked against TRANSITIONS, and record the Event."""
        old = self.states[job]
        if new not in TRANSITIONS[old]:
            raise RuntimeError(f"scheduler bug: illegal transition {job}: {old} -> {new}")
        self.states[job] = new
        self.events.append(
            Event(self.clock.now() - self.start, job, old, new, self.visits[job], self.attempt[job], note)
        )

    def begin(self, job: str) -> asyncio.Task[tuple[str, Any]]:
        """Log a new visit of `job` as running and start it in a task of its own."""
        feedback, previous = self.carry.pop(job, (None, None))
        self.visits[job] += 1
        self.attempts[job] += 1
        self.attempt[job] = 1
        self.log(job, RUNNING, f"feedback: {feedback}" if feedback else "")
        inputs = {dep: self.results[dep] for dep in self.plan.deps[job]}
        return asyncio.create_task(self.visit(job, inputs, feedback, previous))

    async def visit(
        self, job: str, inputs: dict[str, Any], feedback: str | None, previous: Any
    ) -> tuple[str, Any]:
        """Attempts of one visit until success or a refusal to retry: ("ok", result) or ("failed", note)."""
        spec = self.jobs[job]
        while True:
            try:
                ctx = Context(
                    job, inputs, self.visits[job], self.attempt[job], feedback, previous, self.clock
                )
                value = spec.fn(ctx)
                if inspect.isawaitable(value):
                    value = await value
                return ("ok", value)
            except LabError:  # serves: user — the lab set up wrong ends the run
                raise
            except Exception as error:  # noqa: BLE001 - any job failure is a counted outcome
                if self.states[job] is not RUNNING:
                    return ("failed", "withdrawn")  # the run moved on: this outcome is ignored
                message = f"{type(error).__name__}: {error}"
                refusal = "no retry policy" if spec.retry is None else spec.retry.refusal(error, ctx.attempt)
                if refusal is not None:
                    return ("failed", f"{message} ({refusal})")
                delay = spec.retry.delay(ctx.attempt)
                self.log(job, FAILED, message)
                self.log(job, RETRYING, f"attempt {ctx.attempt + 1} after {delay:g} s")
            await self.clock.sleep(delay)
            self.attempt[job] += 1
            self.attempts[job] += 1
            self.log(job, RUNNING)

    async def withdraw(self, jobs: Iterable[str]) -> None:
        """Cancel the tasks of `jobs` and wait for them, so that none completes on stale inputs."""
        jobs = set(jobs)
        tasks = [task for task, job in self.running.items() if job in jobs]
        for task in tasks:
            del self.running[task]
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    # -- what a finished visit leads to; each returns the jobs whose tasks must be withdrawn --

    def settle(self, job: str, task: asyncio.Task[tuple[str, Any]]) -> list[str]:
        """Act on `job`'s finished visit: fail it (it cancelled its own task, its retry was refused, or its
        router raised or returned what its route refuses), else record its result and follow the router's
        Next; a LabError from the job is re-raised. Returns the jobs whose tasks must be withdrawn.
        (serves: learner — a job or router that fails, fails its job, visibly)"""
        if task.cancelled():  # only the job's own code cancels a task the run still counts on
            return self.fail(job, "CancelledError: the job cancelled its own task")
        if task.exception() is not None:
            raise task.exception()  # a LabError: the lab is broken (serves: user)
        kind, value = task.result()
        if kind == "failed":
            return self.fail(job, value)
        route, decision = self.plan.routes.get(job), Next.Continue
        if route is not None:
            try:  # the router reads a copy: the run's record of the result stays what the job returned
                decision = route.router(copied(value))
                problem = route.check(decision)
            except Exception as error:  # noqa: BLE001 - a broken router fails its job, visibly
                problem = f"router on {job!r} raised {type(error).__name__}: {error}"
            if problem:
                return self.fail(job, problem)
        self.results[job] = value
        self.log(job, COMPLETED, "" if route is None else repr(decision))
        if decision.kind == "goto":
            return self.goto(job, decision.job, decision.feedback)
        if decision.kind == "stop":
            return self.stop(job)
        self.ready.extend(self.ready_step(job, self.plan.dependents, self.waiting, self.states))
        return []

    def cancel(self, jobs: Iterable[str], note: str) -> list[str]:
        """Log as cancelled, with `note`, those of `jobs` still pending, running or retrying; returns them."""
        live = [job for job in jobs if self.states[job] in _LIVE]
        for job in live:
            self.log(job, CANCELLED, note)
        return live

    def fail(self, job: str, note: str) -> list[str]:
        """`job` failed for good: cancel what depends on it, directly or not, and is still live."""
        self.errors[job] = note
        self.log(job, FAILED if self.states[job] is RUNNING else CANCELLED, note)
        cancelled = self.cancel(reach(job, self.plan.dependents)[1:], f"{job} failed")
        self.failures.append(f"{job} failed: {note}; cancelled: {_listed(cancelled)}")
        return cancelled

    def goto(self, router: str, target: str, feedback: str | None) -> list[str]:
        """`router` sent the run back to `target`: re-run it and everything downstream of it."""
        rerun = reach(target, self.plan.dependents)
        if any(
            self.visits[job] >= self.max_visits for job in rerun if self.states[job] in (*_LIVE, COMPLETED)
        ):
            return self.dead_letter(router, target, feedback, rerun)
        previous = self.results[target]
        reset = [job for job in rerun if self.states[job] in (COMPLETED, RUNNING, RETRYING)]
        for job in reset:
            self.log(job, PENDING, f"reset by {router} -> {target}")
            self.results[job] = None
        for job in rerun:
            self.carry.pop(job, None)
        self.carry[target] = (feedback, previous)
        for job in rerun:
            if self.states[job] is PENDING:
                self.waiting[job] = sum(self.states[dep] is not COMPLETED for dep in self.plan.deps[job])
                if self.waiting[job] == 0:
                    self.ready.append(job)
        return reset

    def dead_letter(self, router: str, target: str, feedback: str | None, rerun: list[str]) -> list[str]:
        """The Goto would run a job past max_visits: the loop's jobs become dead letters."""
        looping = set(rerun).intersection(reach(router, self.plan.deps))  # the router's job and its loop
        loop = [job for job in self.states if job in looping]
        for job in loop:
            if self.states[job] is COMPLETED:
                self.log(job, DEAD_LETTER, f"max_visits={self.max_visits} reached")
        cancelled = self.cancel(rerun, f"dead letter upstream: {router} -> {target}")
        runs = _listed(f"{job} {self.visits[job]} runs" for job in loop)
        told = f"; last feedback: {feedback!r}" if feedback is not None else "; no feedback given"
        self.dead_letters.append(
            f"loop {router} -> {target} hit max_visits={self.max_visits} ({runs}){told}; "
            f"cancelled: {_listed(cancelled)}"
        )
        return cancelled

    def stop(self, router: str) -> list[str]:
        """`router` said Next.Stop: cancel everything unfinished."""
        self.stopped_by = router
        cancelled = self.cancel(self.states, f"Next.Stop from {router}")
        self.ready.clear()
        self.stop_note = f"stopped by {router} (Next.Stop); cancelled: {_listed(cancelled)}"
        return cancelled

    def result(self) -> RunResult:
        """The RunResult; RuntimeError (a scheduler bug) if a job is not in a final state."""
        unfinished = [f"{job} ({state})" for job, state in self.states.items() if state not in FINAL_STATES]
        if unfinished:
            raise RuntimeError(f"scheduler bug: run ended with unfinished jobs: {_listed(unfinished)}")
        if self.dead_letters:
            status, reason = "dead_letter", "; ".join(self.dead_letters + self.failures)
        elif self.failures:
            status, reason = "failed", "; ".join(self.failures)
        else:
            status, reason = "completed", self.stop_note or f"all {len(self.states)} jobs completed"
        kept = {
            job: self.results[job] for job, state in self.states.items() if state in (COMPLETED, DEAD_LETTER)
        }
        errors = {job: self.errors[job] for job in self.states if job in self.errors}
        counts = dict(self.states), dict(self.visits), dict(self.attempts)
        elapsed = self.clock.now() - self.start
        return RunResult(status, reason, *counts, kept, errors, tuple(self.events), elapsed, self.stopped_by)
