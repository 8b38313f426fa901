"""The scheduler: run a validated graph by dependency counts, with routers, retries and caps.

Contract of one run (`Graph.run` / `Graph.run_async`):

- **Ready jobs** are those whose dependencies all completed in their current visit. They
  start in the order they became ready; jobs that become ready together (at the start,
  or when one job completes) start in declaration order. At most `max_concurrency` jobs
  are in flight at once; a job waiting out a retry's backoff keeps its slot.
- **Cost.** Each job keeps a count of unfinished dependencies; a completion decrements
  its dependents' counts, so a whole run without Gotos is O(jobs + edges); a Goto costs
  O(jobs + edges) of the part it re-runs. Seed 004 rescanned every job after every round
  instead: quadratic on a chain, 84 s for 10,000 jobs in the course notes' measurement
  (benchmarks/orchestrator.py compares the two).
- **Defaults.** max_concurrency=4 (seed 002's), max_visits=5 (seed 002's number, but
  counting runs: its cap counted re-entries and so allowed one run more).
- **Job functions** receive one `Context` and return the job's result; a coroutine
  function is awaited, a plain function runs on the event loop (so only async jobs
  overlap: a blocking call in a plain function blocks the whole run).
- **Failures.** An exception from a job fails the attempt; the job's RetryPolicy decides
  whether it is tried again (none: one attempt). A job that fails for good cancels the
  jobs that depend on it, directly or not, and nothing else: independent siblings carry
  on. A LabError from a job is a broken lab, not a job outcome: it ends the run and
  propagates, after every job still in flight has been cancelled.
- **Routers** run after a job succeeds (see route.py). `Next.Continue` releases its
  dependents. `Next.Stop` cancels every job that has not finished and ends the run as a
  success. A Goto to job T re-runs T and every job downstream of T: jobs of that set
  still in flight are cancelled first (and awaited, so none completes on stale inputs),
  finished ones go back to pending, and T's next visit receives the Goto's feedback and
  T's previous output; the others re-run as on a first visit, told nothing.
- **Caps.** `max_visits` counts runs of each job, the first included: with 3, no job runs
  a 4th time. A Goto that would run any job of its set past the cap is refused: the
  looping jobs (T, the routed job and those between) become `dead_letter`, everything
  downstream of them that has not finished is cancelled, and the run's status is
  `dead_letter`. A job's function is therefore called at most max_visits × max_attempts
  times in one run.

Every state change is an Event (states.py) with a time on the run's clock; the result
carries them all, in order.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any

from labkit.errors import LabError
from labkit.orchestrator.clock import Clock, RealClock
from labkit.orchestrator.errors import GraphError
from labkit.orchestrator.graph import Plan
from labkit.orchestrator.result import RunResult
from labkit.orchestrator.route import Next
from labkit.orchestrator.states import (
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

_LIVE = (PENDING, RUNNING, RETRYING)  # states a Goto, a Stop or a failure upstream can still change
_SHOWN = 5  # job names listed in a reason before "… (+N more)"


@dataclass(frozen=True, slots=True)
class Context:
    """What a job's function receives.

    `inputs` maps each dependency's id to its result in the current visit. `visit` is the
    job's run number (1 first), `attempt` the try within the visit (1 first). `feedback`
    and `previous` are set only on a visit started by a Goto naming this job: the Goto's
    feedback (None for `Next.back_to`) and this job's output from its previous visit.
    `clock` is the run's clock: `await ctx.clock.sleep(s)` waits in run time.
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


def _names(ids: Iterable[str]) -> str:
    ids = list(ids)
    shown = ", ".join(ids[:_SHOWN])
    return shown + (f" … (+{len(ids) - _SHOWN} more)" if len(ids) > _SHOWN else "") if ids else "none"


def check_settings(max_concurrency: object, max_visits: object, clock: object) -> None:
    """Raise GraphError unless the run settings are usable."""
    for name, value in (("max_concurrency", max_concurrency), ("max_visits", max_visits)):
        if type(value) is not int or value < 1:
            raise GraphError(f"{name} must be an int >= 1, got {value!r}")
    if clock is not None and not isinstance(clock, Clock):
        raise GraphError(f"clock must have now() and async sleep(seconds), got {clock!r}")


async def run_plan(plan: Plan, *, max_concurrency: int = 4, max_visits: int = 5,
                   clock: Clock | None = None) -> RunResult:
    """Run a validated plan on the running event loop; see the module docstring."""
    check_settings(max_concurrency, max_visits, clock)
    return await _Run(plan, max_concurrency, max_visits, clock or RealClock()).execute()


def run_plan_sync(plan: Plan, *, max_concurrency: int = 4, max_visits: int = 5,
                  clock: Clock | None = None) -> RunResult:
    """`run_plan` from synchronous code, including code already inside an event loop."""
    check_settings(max_concurrency, max_visits, clock)
    settings = {"max_concurrency": max_concurrency, "max_visits": max_visits, "clock": clock}
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run_plan(plan, **settings))
    # A Jupyter kernel already runs a loop in this thread, and asyncio.run refuses to nest:
    # give the run its own loop on a worker thread and wait for it.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="labkit-run") as pool:
        return pool.submit(lambda: asyncio.run(run_plan(plan, **settings))).result()


class _Run:
    """The mutable state of one run. Positions (ints) stand for jobs throughout."""

    def __init__(self, plan: Plan, max_concurrency: int, max_visits: int, clock: Clock) -> None:
        n = len(plan.jobs)
        self.plan, self.clock = plan, clock
        self.max_concurrency, self.max_visits = max_concurrency, max_visits
        self.ids = [job.id for job in plan.jobs]
        self.state: list[State] = [PENDING] * n
        self.remaining = [len(deps) for deps in plan.deps]  # dependencies not completed in this visit
        self.visits, self.attempts, self.attempt = [0] * n, [0] * n, [0] * n
        self.results: list[Any] = [None] * n
        self.errors: dict[int, str] = {}
        self.carry: dict[int, tuple[str | None, Any]] = {}  # a Goto target's feedback and previous output
        # A job's token changes whenever the scheduler takes it away from its task (reset,
        # cancel): whatever that task does afterwards is ignored, including its completion.
        self.token = [0] * n
        self.tasks: dict[int, asyncio.Task] = {}
        self.ready: deque[int] = deque(i for i in range(n) if not plan.deps[i])
        self.inbox: deque[tuple[int, int, asyncio.Task]] = deque()
        self.wakeup: asyncio.Future | None = None
        self.events: list[Event] = []
        self.failures: list[str] = []
        self.dead_letters: list[str] = []
        self.stop_note: str | None = None
        self.stopped_by: str | None = None
        self.start = clock.now()

    # -- bookkeeping -------------------------------------------------------------------

    def _log(self, i: int, new: State, note: str = "") -> None:
        old = self.state[i]
        if new not in TRANSITIONS[old]:
            raise RuntimeError(f"scheduler bug: illegal transition {self.ids[i]}: {old} -> {new}")
        self.state[i] = new
        self.events.append(Event(self.clock.now() - self.start, self.ids[i], old, new,
                                 self.visits[i], self.attempt[i], note))

    def _arrived(self, i: int, token: int, task: asyncio.Task) -> None:
        self.inbox.append((i, token, task))
        if self.wakeup is not None and not self.wakeup.done():
            self.wakeup.set_result(None)

    async def _withdraw(self, jobs: Iterable[int]) -> None:
        """Take `jobs` away from their tasks; cancel the tasks still running and wait for them."""
        running = []
        for i in jobs:
            task = self.tasks.pop(i, None)
            if task is None:
                continue
            self.token[i] += 1
            if not task.done():
                task.cancel()
                running.append(task)
        if running:
            await asyncio.wait(running)

    async def _cancel(self, jobs: Iterable[int], note: str) -> list[int]:
        live = [i for i in jobs if self.state[i] in _LIVE]
        for i in live:
            self._log(i, CANCELLED, note)
        await self._withdraw(live)
        return live

    def _downstream(self, root: int) -> list[int]:
        """`root` and every job that depends on it, directly or not."""
        seen, order, queue = {root}, [root], deque([root])
        while queue:
            for dependent in self.plan.dependents[queue.popleft()]:
                if dependent not in seen:
                    seen.add(dependent)
                    order.append(dependent)
                    queue.append(dependent)
        return order

    # -- the loop ----------------------------------------------------------------------

    async def execute(self) -> RunResult:
        self.loop = asyncio.get_running_loop()
        try:
            await self._drive()
        finally:
            leftovers = [task for task in self.tasks.values() if not task.done()]
            for task in leftovers:
                task.cancel()
            if leftovers:
                await asyncio.wait(leftovers)
        unfinished = [f"{self.ids[i]} ({state})" for i, state in enumerate(self.state) if state not in FINAL]
        if unfinished:
            raise RuntimeError(f"scheduler bug: run ended with unfinished jobs: {_names(unfinished)}")
        return self._result()

    async def _drive(self) -> None:
        while True:
            self._start_ready()
            if not self.tasks:
                return
            if not self.inbox:
                self.wakeup = self.loop.create_future()
                await self.wakeup
                self.wakeup = None
            while self.inbox:
                i, token, task = self.inbox.popleft()
                if token != self.token[i]:
                    continue  # the job was reset or cancelled after this task started
                del self.tasks[i]
                await self._settle(i, task)

    def _start_ready(self) -> None:
        while self.ready and len(self.tasks) < self.max_concurrency:
            i = self.ready.popleft()
            if self.state[i] is not PENDING or self.remaining[i]:
                continue  # reset or cancelled while it waited for a slot
            feedback, previous = self.carry.pop(i, (None, None))
            self.visits[i] += 1
            self.attempts[i] += 1
            self.attempt[i] = 1
            self.token[i] += 1
            self._log(i, RUNNING, f"feedback: {feedback}" if feedback else "")
            inputs = {self.ids[d]: self.results[d] for d in self.plan.deps[i]}
            task = self.loop.create_task(self._visit(i, self.token[i], inputs, feedback, previous))
            task.add_done_callback(partial(self._arrived, i, self.token[i]))
            self.tasks[i] = task

    async def _visit(self, i: int, token: int, inputs: dict[str, Any], feedback: str | None,
                     previous: Any) -> tuple[str, Any]:
        """One visit of job `i`: attempts until success, a refusal to retry, or cancellation.

        Returns ("ok", result) or ("failed", note); the scheduler logs either. The
        failed → retrying → running steps in between are logged here, as they happen.
        """
        job, visit, attempt = self.plan.jobs[i], self.visits[i], 1
        while True:
            context = Context(job.id, inputs, visit, attempt, feedback, previous, self.clock)
            try:
                value = job.fn(context)
                if inspect.isawaitable(value):
                    value = await value
            except LabError:
                raise
            except Exception as error:  # noqa: BLE001 - any job failure is a counted outcome
                message = f"{type(error).__name__}: {error}"
                if self.token[i] != token:
                    return "failed", "withdrawn"  # ignored: the scheduler moved on
                refusal = "no retry policy" if job.retry is None else job.retry.refusal(error, attempt)
                if refusal is not None:
                    return "failed", f"{message} ({refusal})"
                delay = job.retry.delay(attempt)
                self._log(i, FAILED, message)
                self._log(i, RETRYING, f"attempt {attempt + 1} after {delay:g} s")
                await self.clock.sleep(delay)
                if self.token[i] != token:
                    return "failed", "withdrawn"
                attempt += 1
                self.attempt[i] = attempt
                self.attempts[i] += 1
                self._log(i, RUNNING)
                continue
            return "ok", value

    # -- what a finished visit leads to --------------------------------------------------

    async def _settle(self, i: int, task: asyncio.Task) -> None:
        if task.cancelled():  # only the job's own code can cancel a task the run still counts on
            await self._fail(i, "CancelledError: the job cancelled its own task")
            return
        error = task.exception()
        if error is not None:
            raise error
        kind, value = task.result()
        if kind == "failed":
            await self._fail(i, value)
            return
        route = self.plan.routes.get(i)
        decision = Next.Continue
        if route is not None:
            try:
                decision = route.router(value)
                problem = route.check(decision)
            except Exception as error:  # noqa: BLE001 - a broken router fails its job, visibly
                problem = f"router on {route.job!r} raised {type(error).__name__}: {error}"
            if problem:
                await self._fail(i, problem)
                return
        self.results[i] = value
        self._log(i, COMPLETED, "" if route is None else repr(decision))
        if decision.kind == "continue":
            for dependent in self.plan.dependents[i]:
                self.remaining[dependent] -= 1
                if self.remaining[dependent] == 0 and self.state[dependent] is PENDING:
                    self.ready.append(dependent)
        elif decision.kind == "goto":
            await self._goto(i, self.plan.index[decision.job], decision.feedback)
        else:
            await self._stop(i)

    async def _fail(self, i: int, note: str) -> None:
        self.errors[i] = note
        self._log(i, FAILED if self.state[i] is RUNNING else CANCELLED, note)
        doomed, seen, queue = [], set(), deque(self.plan.dependents[i])
        while queue:
            d = queue.popleft()
            if d not in seen and self.state[d] in _LIVE:
                seen.add(d)
                doomed.append(d)
                queue.extend(self.plan.dependents[d])
        cancelled = await self._cancel(doomed, f"{self.ids[i]} failed")
        names = _names(self.ids[d] for d in cancelled)
        self.failures.append(f"{self.ids[i]} failed: {note}; cancelled: {names}")

    async def _goto(self, r: int, target: int, feedback: str | None) -> None:
        rerun = self._downstream(target)
        if any(self.visits[j] >= self.max_visits for j in rerun if self.state[j] in (*_LIVE, COMPLETED)):
            await self._dead_letter(r, target, feedback, rerun)
            return
        previous = self.results[target]
        reset = [j for j in rerun if self.state[j] in (COMPLETED, RUNNING, RETRYING)]
        for j in reset:
            self._log(j, PENDING, f"reset by {self.ids[r]} -> {self.ids[target]}")
            self.results[j] = None
        for j in rerun:
            self.carry.pop(j, None)
        await self._withdraw(reset)
        self.carry[target] = (feedback, previous)
        for j in rerun:
            if self.state[j] is PENDING:
                self.remaining[j] = sum(self.state[d] is not COMPLETED for d in self.plan.deps[j])
                if self.remaining[j] == 0:
                    self.ready.append(j)

    async def _dead_letter(self, r: int, target: int, feedback: str | None, rerun: list[int]) -> None:
        inside, looping, queue = set(rerun), {r}, deque([r])
        while queue:  # the loop: the jobs of `rerun` that r depends on, and r
            for dep in self.plan.deps[queue.popleft()]:
                if dep in inside and dep not in looping:
                    looping.add(dep)
                    queue.append(dep)
        looping_jobs = sorted(looping)
        for j in looping_jobs:
            if self.state[j] is COMPLETED:
                self._log(j, DEAD_LETTER, f"max_visits={self.max_visits} reached")
        cancelled = await self._cancel(rerun, f"dead letter upstream: {self.ids[r]} -> {self.ids[target]}")
        runs = ", ".join(f"{self.ids[j]} {self.visits[j]} runs" for j in looping_jobs)
        told = f"; last feedback: {feedback!r}" if feedback is not None else "; no feedback given"
        self.dead_letters.append(
            f"loop {self.ids[r]} -> {self.ids[target]} hit max_visits={self.max_visits} ({runs}){told}; "
            f"cancelled: {_names(self.ids[j] for j in cancelled)}")

    async def _stop(self, r: int) -> None:
        self.stopped_by = self.ids[r]
        cancelled = await self._cancel(range(len(self.ids)), f"Next.Stop from {self.ids[r]}")
        self.ready.clear()
        names = _names(self.ids[j] for j in cancelled)
        self.stop_note = f"stopped by {self.ids[r]} (Next.Stop); cancelled: {names}"

    def _result(self) -> RunResult:
        states = dict(zip(self.ids, self.state, strict=True))
        if self.dead_letters:
            status, reason = "dead_letter", "; ".join(self.dead_letters + self.failures)
        elif self.failures:
            status, reason = "failed", "; ".join(self.failures)
        else:
            status = "completed"
            reason = self.stop_note or f"all {len(self.ids)} jobs completed"
        return RunResult(
            status=status,
            reason=reason,
            states=states,
            visits=dict(zip(self.ids, self.visits, strict=True)),
            attempts=dict(zip(self.ids, self.attempts, strict=True)),
            results={self.ids[i]: self.results[i] for i, state in enumerate(self.state)
                     if state in (COMPLETED, DEAD_LETTER)},
            errors={self.ids[i]: note for i, note in sorted(self.errors.items())},
            events=tuple(self.events),
            elapsed=self.clock.now() - self.start,
            stopped_by=self.stopped_by,
        )
