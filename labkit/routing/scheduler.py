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
  overlap: a blocking call in a plain function blocks the whole run). A plain function
  without a retry policy runs from an event-loop callback rather than a task of its own
  (`Job.inline`): inside it `asyncio.current_task()` is None, and an awaitable it returns
  is awaited in a task started then.
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
import time
from asyncio import Future, Task
from collections import deque
from collections.abc import Coroutine, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from types import CoroutineType
from typing import Any, NamedTuple

from labkit.core.errors import LabError
from labkit.routing.clock import Clock, RealClock
from labkit.routing.errors import GraphError
from labkit.routing.graph import Plan
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

# What a job's value is checked against before `inspect.isawaitable` (0.4 µs: three isinstance
# checks, one against an ABC) is asked: a coroutine is awaited, these plain data types never
# are. Measured on the 10,000-job fan-out of plain functions: 0.4 µs a job less.
_DATA = frozenset({type(None), bool, int, float, str, bytes, tuple, list, dict})
_LIVE = (PENDING, RUNNING, RETRYING)  # states a Goto, a Stop or a failure upstream can still change
_SHOWN = 5  # job names listed in a reason before "… (+N more)"


class Context(NamedTuple):
    """What a job's function receives.

    `inputs` maps each dependency's id to its result in the current visit. `visit` is the
    job's run number (1 first), `attempt` the try within the visit (1 first). `feedback`
    and `previous` are set only on a visit started by a Goto naming this job: the Goto's
    feedback (None for `Next.back_to`) and this job's output from its previous visit.
    `clock` is the run's clock: `await ctx.clock.sleep(s)` waits in run time.

    Immutable. A named tuple, like Event, because a run builds one per attempt: 0.14 µs
    against 0.46 µs for a frozen dataclass (Python 3.11, the course machine).
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


# Both records are built with tuple.__new__ on the hot paths: the class's own __new__ is a
# Python function that only forwards its arguments (0.26 µs against 0.14 µs per record).
_tuple_new = tuple.__new__


def _event(time: float, job: str, old: State, new: State, visit: int, attempt: int, note: str) -> Event:
    """`Event(time, job, old, new, visit, attempt, note)`, built as the hot paths build it."""
    return _tuple_new(Event, (time, job, old, new, visit, attempt, note))


def _context(job: str, inputs: Mapping[str, Any], visit: int, attempt: int, feedback: str | None,
             previous: Any, clock: Clock) -> Context:
    """`Context(job, inputs, visit, attempt, feedback, previous, clock)`, built as the hot paths build it."""
    return _tuple_new(Context, (job, inputs, visit, attempt, feedback, previous, clock))


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
        return asyncio.run(_boxed(run_plan(plan, **settings))).value
    # A Jupyter kernel already runs a loop in this thread, and asyncio.run refuses to nest:
    # give the run its own loop on a worker thread and wait for it.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="labkit-run") as pool:
        return pool.submit(lambda: asyncio.run(run_plan(plan, **settings))).result()


class _Box:
    """A run's result on its way out of `asyncio.run`, behind a repr that does not show it.

    On Python 3.11, `asyncio.run` in the main thread formats repr() of its main task twice as
    it puts back the SIGINT handler (signal._int_to_enum formats a ValueError naming the
    handler, a partial holding the task), and a finished task's repr shows its result: a
    RunResult's repr is its summary, a line per job. Measured on the 10,000-job fan: about
    1 µs per job (benchmarks/orchestrator.py), for text nobody sees.
    """

    __slots__ = ("value",)


async def _boxed(run: Coroutine[Any, Any, RunResult]) -> _Box:
    box = _Box()
    box.value = await run
    return box


class _Call:
    """A visit run by one event-loop callback instead of a task: see `_Run._call`."""

    __slots__ = ("handle", "ran", "waiter")

    def __init__(self) -> None:
        self.ran = False
        self.waiter: asyncio.Future | None = None  # completed when the callback has run

    def done(self) -> bool:
        return self.ran

    def cancel(self) -> None:
        self.handle.cancel()


class _Run:
    """The mutable state of one run. Positions (ints) stand for jobs throughout."""

    def __init__(self, plan: Plan, max_concurrency: int, max_visits: int, clock: Clock) -> None:
        n = len(plan.jobs)
        self.plan, self.clock = plan, clock
        self.max_concurrency, self.max_visits = max_concurrency, max_visits
        self.ids = [job.id for job in plan.jobs]
        self.jobs, self.deps, self.dependents = plan.jobs, plan.deps, plan.dependents
        self.routes = plan.routes
        # RealClock.now is time.perf_counter behind a method call: read the counter directly.
        self.now = time.perf_counter if type(clock) is RealClock else clock.now
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
        self.inbox: deque[tuple[int, int, Outcome]] = deque()  # (job, its token then, outcome)
        self.wakeup: asyncio.Future | None = None
        self.batch: list[tuple[int, int, Outcome]] | None = None  # outcomes whose callback is queued
        self.batch_mark = 0  # drive_calls when that callback was queued
        self.drive_calls = 0  # times the drive's step was queued by what it awaits (see `_hand_over`)
        self.awaited: tuple[int, int] | None = None  # (job, token) the drive awaits directly, if any
        self.events: list[Event] = []
        self.failures: list[str] = []
        self.dead_letters: list[str] = []
        self.stop_note: str | None = None
        self.stopped_by: str | None = None
        self.start = clock.now()

    # -- bookkeeping -------------------------------------------------------------------

    def _log(self, i: int, new: State, note: str = "") -> None:
        state = self.state
        old = state[i]
        if new not in TRANSITIONS[old]:
            raise RuntimeError(f"scheduler bug: illegal transition {self.ids[i]}: {old} -> {new}")
        state[i] = new
        self.events.append(_event(self.now() - self.start, self.ids[i], old, new,
                                  self.visits[i], self.attempt[i], note))

    def _arrived(self, batch: list[tuple[int, int, Outcome]]) -> None:
        """Outcomes handed over together reach the inbox (see `_hand_over`); wake the drive."""
        if self.batch is batch:
            self.batch = None
        self.inbox.extend(batch)
        if self.wakeup is not None and not self.wakeup.done():
            self.wakeup.set_result(None)
            self.drive_calls += 1

    async def _withdraw(self, jobs: Iterable[int]) -> None:
        """Take `jobs` away from their tasks; cancel the tasks still running and wait for them."""
        running = []
        for i in jobs:
            task = self.tasks.pop(i, None)
            if task is None:
                continue
            self.token[i] += 1
            if type(task) is _Call:
                if not task.ran:  # it will see the token and complete this where its task would end
                    task.waiter = self.loop.create_future()
                    running.append(task.waiter)
            elif not task.done():
                task.cancel()
                running.append(task)
        if running:
            await self._all_done(running)

    async def _all_done(self, tasks: list[asyncio.Future]) -> None:
        """`await asyncio.wait(tasks)`, with the same callbacks in the same places, noting when
        the drive's wake-up is queued (see `_hand_over`)."""
        waiter, left = self.loop.create_future(), len(tasks)

        def finished(task: asyncio.Future) -> None:
            nonlocal left
            left -= 1
            if left <= 0 and not waiter.done():
                self.drive_calls += 1
                waiter.set_result(None)

        for task in tasks:
            task.add_done_callback(finished)
        try:
            await waiter
        finally:
            for task in tasks:
                task.remove_done_callback(finished)

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
        self.driver = asyncio.current_task()  # the task the drive runs in: whose cancellation ends the run
        try:
            await self._drive()
        finally:
            leftovers = [task for task in self.tasks.values() if not task.done()]
            for task in leftovers:
                task.cancel()
            leftovers = [task for task in leftovers if type(task) is not _Call]  # a _Call just never runs
            if leftovers:
                await asyncio.wait(leftovers)
        # Counted with list.count (C, identity first), not `in FINAL` per job: a State's hash is
        # Enum.__hash__, a Python call.
        everyone = len(self.state)  # the usual end: all completed, one pass that matches by identity
        if self.state.count(COMPLETED) != everyone and sum(map(self.state.count, FINAL)) != everyone:
            unfinished = [f"{self.ids[i]} ({state})" for i, state in enumerate(self.state)
                          if state not in FINAL]
            raise RuntimeError(f"scheduler bug: run ended with unfinished jobs: {_names(unfinished)}")
        return self._result()

    async def _drive(self) -> None:
        """Start, wait, settle, until nothing is in flight: the hot loop of a run, hence the
        locals, and the two common steps written out here rather than called.

        Starting (once per visit): ready jobs, in order, while slots are free: log `running`,
        create the task. `_log` is inlined: pending -> running is the one transition it would
        check, and it is checked here. Settling: a visit that completed, on a job without a
        router, is settled here (log `completed`, release the dependents); anything else goes
        to `_settle`. The clock is read once per batch of starts and once per batch of
        outcomes, and again after anything `_settle` did, so event times never go back.
        """
        inbox, tokens, tasks, state, results = self.inbox, self.token, self.tasks, self.state, self.results
        events, ids, visits, attempt, routes = self.events, self.ids, self.visits, self.attempt, self.routes
        dependents, remaining, ready, deps = self.dependents, self.remaining, self.ready, self.deps
        now, start, carry, attempts = self.now, self.start, self.carry, self.attempts
        cap = self.max_concurrency
        visit, loop, jobs, run_call = self._visit, self.loop, self.jobs, self._call
        # asyncio.Task(coro, loop=loop) is what loop.create_task does when the loop has no task
        # factory, without its Python-level wrapper (0.3 µs a job on the 10,000-job fan).
        plain = loop.get_task_factory() is None
        while True:
            if ready and len(tasks) < cap:
                time = now() - start
                while ready and len(tasks) < cap:
                    i = ready.popleft()
                    if state[i] is not PENDING or remaining[i]:
                        continue  # reset or cancelled while it waited for a slot
                    feedback, previous = carry.pop(i, (None, None)) if carry else (None, None)
                    visits[i] += 1
                    attempts[i] += 1
                    attempt[i] = 1
                    tokens[i] += 1
                    state[i] = RUNNING
                    events.append(_tuple_new(Event, (time, ids[i], PENDING, RUNNING, visits[i], 1,
                                                     f"feedback: {feedback}" if feedback else "")))
                    needs = deps[i]
                    if len(needs) == 1:  # a dict display: a comprehension is a function call in 3.11
                        inputs = {ids[needs[0]]: results[needs[0]]}
                    else:
                        inputs = {ids[d]: results[d] for d in needs} if needs else {}
                    if jobs[i].inline:  # a plain function without retries: no task (see `_call`)
                        tasks[i] = call = _Call()
                        call.handle = loop.call_soon(run_call, call, i, tokens[i], inputs, feedback, previous)
                    else:
                        coroutine = visit(i, tokens[i], inputs, feedback, previous)
                        tasks[i] = Task(coroutine, loop=loop) if plain else loop.create_task(coroutine)
            if not tasks:
                return
            if not inbox:
                only = next(iter(tasks.items())) if len(tasks) == 1 else None
                if only is not None and not only[1].done():
                    await self._await_only(*only)
                else:  # several in flight, or the one finished and its outcome is on its way
                    self.wakeup = Future(loop=loop)  # loop.create_future(), without the Python layer
                    await self.wakeup
                    self.wakeup = None
            time = now() - start
            while inbox:
                i, token, outcome = inbox.popleft()
                if token != tokens[i]:
                    continue  # the job was reset or cancelled after this task started
                del tasks[i]
                if outcome[0] == "ok" and i not in routes and state[i] is RUNNING:  # `_settle`, inlined
                    results[i] = outcome[1]
                    state[i] = COMPLETED
                    events.append(_tuple_new(Event, (time, ids[i], RUNNING, COMPLETED, visits[i], attempt[i],
                                                     "")))
                    for dependent in dependents[i]:
                        remaining[dependent] -= 1
                        if remaining[dependent] == 0 and state[dependent] is PENDING:
                            ready.append(dependent)
                    continue
                more = self._settle(i, outcome)
                if more is not None:  # a failure, Goto or Stop: it waits for the tasks it cancels
                    await more
                time = now() - start

    async def _await_only(self, i: int, task: asyncio.Task) -> None:
        """Wait for job `i`, the one in flight, by awaiting its task. The general way takes
        two callbacks in two trips through the event loop after the task ends (`_arrived`,
        then the drive's wake-up); this takes one (the wake-up), which on a chain, one job in
        flight at a time, cut the cost per job by a fifth (benchmarks/orchestrator.py).

        Nothing else of this run can happen meanwhile (no other job is in flight, and only
        the drive starts, settles or withdraws jobs), and the job's outcome is in the inbox
        when this returns (`_visit` puts it there itself as its last act, seeing `awaited`,
        and the drive wakes up after the task has finished), so the run settles exactly what
        it would have, in the same place in the event loop's queue.
        """
        driver = self.driver
        asked = driver.cancelling() if driver is not None else 0
        self.awaited = (i, self.token[i])
        if type(task) is _Call:  # its callback completes the waiter as its last act, as a task ends
            task.waiter = self.loop.create_future()
            try:
                await task.waiter
            finally:
                self.awaited = None
            return
        try:
            await task
        except asyncio.CancelledError:
            if not task.done() or (driver is not None and driver.cancelling() > asked):
                raise  # the run itself is being cancelled, not (only) the job
            return  # the job cancelled itself: its outcome says so
        finally:
            self.awaited = None
        # Cancelling the run cancels the task it awaits, and a job may swallow that and return;
        # the run's own cancellation must not be lost with it.
        if driver is not None and driver.cancelling() > asked:
            raise asyncio.CancelledError

    async def _visit(self, i: int, token: int, inputs: dict[str, Any], feedback: str | None,
                     previous: Any) -> None:
        """One visit of job `i`, in its own task: attempts until success, a refusal to retry,
        or cancellation. The failed → retrying → running steps in between are logged here, as
        they happen; the outcome goes to the scheduler's inbox, which logs it:
        ("ok", result), ("failed", note), ("cancelled", None) or ("raise", error).

        The outcome is handed over by `_hand_over`, as this task's last act (see there), or
        straight into the inbox when the drive awaits this task itself (`_await_only`).
        benchmarks/scheduler_equivalence.py checks that runs settle in the same batches and log
        the same events in the same order as a scheduler that handed each outcome over with a
        callback of its own (main's, when this was written).
        """
        job, visit, attempt = self.jobs[i], self.visits[i], 1
        clock, fn = self.clock, job.fn
        try:
            while True:
                try:
                    value = fn(_tuple_new(Context, (job.id, inputs, visit, attempt, feedback, previous,
                                                    clock)))
                    kind = type(value)
                    if kind is CoroutineType or (kind not in _DATA and inspect.isawaitable(value)):
                        value = await value
                    outcome: Outcome = ("ok", value)
                    break
                except LabError:
                    raise
                except Exception as error:  # noqa: BLE001 - any job failure is a counted outcome
                    message = f"{type(error).__name__}: {error}"
                    if self.token[i] != token:
                        outcome = ("failed", "withdrawn")  # ignored: the scheduler moved on
                        break
                    refusal = "no retry policy" if job.retry is None else job.retry.refusal(error, attempt)
                    if refusal is not None:
                        outcome = ("failed", f"{message} ({refusal})")
                        break
                    delay = job.retry.delay(attempt)
                    self._log(i, FAILED, message)
                    self._log(i, RETRYING, f"attempt {attempt + 1} after {delay:g} s")
                await clock.sleep(delay)
                if self.token[i] != token:
                    outcome = ("failed", "withdrawn")
                    break
                attempt += 1
                self.attempt[i] = attempt
                self.attempts[i] += 1
                self._log(i, RUNNING)
        except asyncio.CancelledError:
            self._hand_over(i, token, ("cancelled", None))
            raise
        except (KeyboardInterrupt, SystemExit):
            raise  # as asyncio lets them out of a task: they end the run at once
        except BaseException as error:  # noqa: BLE001 - a LabError or a scheduler bug: settled, then raised
            outcome = ("raise", error)
        # `_hand_over`, written out: this is once per visit, and the call costs 2% of a job's
        # scheduling on the 10,000-job fan.
        awaited = self.awaited
        if awaited is not None and awaited[0] == i and awaited[1] == token:
            self.inbox.append((i, token, outcome))
            self.drive_calls += 1
        elif self.batch is not None and self.batch_mark == self.drive_calls:
            self.batch.append((i, token, outcome))
        else:
            self.batch, self.batch_mark = [(i, token, outcome)], self.drive_calls
            self.loop.call_soon(self._arrived, self.batch)

    def _call(self, call: _Call, i: int, token: int, inputs: dict[str, Any], feedback: str | None,
              previous: Any) -> None:
        """One visit of job `i` whose function is plain and has no retry policy (`Job.inline`),
        run by a loop callback queued where its task's first step would have been queued.

        `_visit` in a task would run such a visit in that one step: call the function, hand
        the outcome over, end. So this does the same, in the same place in the event loop's
        queue, with the same handling of every exception, minus the task: 2 µs a job less
        (benchmarks/orchestrator.py, the fan-out of plain functions). Withdrawn before it ran,
        it calls nothing and completes `call.waiter`, where a task cancelled before its first
        step would have ended. The differences a job can see: `asyncio.current_task()` is
        None inside it, and a plain function that returns an awaitable (a lambda returning a
        coroutine) has it awaited in a task started then, one loop turn later than before.
        """
        call.ran = True
        waiter = call.waiter
        if self.token[i] != token:
            if waiter is not None and not waiter.done():
                waiter.cancel()
            return
        job = self.jobs[i]
        try:
            try:
                value = job.fn(_tuple_new(Context, (job.id, inputs, self.visits[i], 1, feedback, previous,
                                                    self.clock)))
                kind = type(value)
                if kind in _DATA or (kind is not CoroutineType and not inspect.isawaitable(value)):
                    outcome: Outcome = ("ok", value)
                else:  # it wants awaiting after all: carry on in a task, as `_visit` would
                    self.tasks[i] = task = Task(self._awaiting(i, token, value), loop=self.loop)
                    if waiter is not None:  # the drive waits for this visit: now for its task
                        task.add_done_callback(lambda _: waiter.done() or waiter.set_result(None))
                    return
            except LabError:
                raise
            except Exception as error:  # noqa: BLE001 - any job failure is a counted outcome
                message = f"{type(error).__name__}: {error}"
                outcome = ("failed", f"{message} (no retry policy)")
        except asyncio.CancelledError:
            outcome = ("cancelled", None)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as error:  # noqa: BLE001 - a LabError or a scheduler bug: settled, then raised
            outcome = ("raise", error)
        self._hand_over(i, token, outcome)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _awaiting(self, i: int, token: int, awaitable: Any) -> None:
        """The rest of a `_call` whose plain function returned an awaitable."""
        try:
            try:
                outcome: Outcome = ("ok", await awaitable)
            except LabError:
                raise
            except Exception as error:  # noqa: BLE001 - any job failure is a counted outcome
                message = f"{type(error).__name__}: {error}"
                withdrawn = self.token[i] != token
                outcome = ("failed", "withdrawn" if withdrawn else f"{message} (no retry policy)")
        except asyncio.CancelledError:
            self._hand_over(i, token, ("cancelled", None))
            raise
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as error:  # noqa: BLE001 - a LabError or a scheduler bug: settled, then raised
            outcome = ("raise", error)
        self._hand_over(i, token, outcome)

    def _hand_over(self, i: int, token: int, outcome: Outcome) -> None:
        """Give the scheduler job `i`'s outcome, from the job's task, as the task's last act.

        The scheduler used to put each outcome into the inbox with a callback of its own,
        `call_soon(_arrived)`, queued where a done callback on the task would go. What the
        drive sees when it wakes up is every outcome whose callback ran before the drive's own
        step. Outcomes handed over one after another share one callback now (`batch`), queued
        where the first one's was: moving a later outcome up to that place changes nothing
        the drive can see, unless the drive's step was queued in between. So an outcome joins
        the batch only if the drive's step has not been queued since the batch's callback was
        (`drive_calls` counts each time it is: the wake-up set, the tasks of `_all_done`
        finished, the awaited task finished). On the 10,000-job fan-out with 8 in flight:
        one callback instead of eight per round.
        """
        awaited = self.awaited
        if awaited is not None and awaited[0] == i and awaited[1] == token:  # the drive awaits this very
            self.inbox.append((i, token, outcome))                             # task: it wakes up next
            self.drive_calls += 1
        elif self.batch is not None and self.batch_mark == self.drive_calls:
            self.batch.append((i, token, outcome))
        else:  # where a done callback would go: see `_visit`
            self.batch, self.batch_mark = [(i, token, outcome)], self.drive_calls
            self.loop.call_soon(self._arrived, self.batch)

    # -- what a finished visit leads to --------------------------------------------------

    def _settle(self, i: int, outcome: Outcome) -> Coroutine[Any, Any, None] | None:
        """Act on the outcome of job `i`'s visit (see `_visit`). Returns the coroutine to await
        when acting means cancelling tasks (a failure, a Goto, a Stop); None when nothing
        needs waiting for, as in the common case: the job completed, its dependents may start.
        """
        kind, value = outcome
        if kind != "ok":
            if kind == "failed":
                return self._fail(i, value)
            if kind == "cancelled":  # only the job's own code can cancel a task the run still counts on
                return self._fail(i, "CancelledError: the job cancelled its own task")
            raise value  # "raise": a LabError (a broken lab) or a scheduler bug ends the run
        route = self.routes.get(i)
        decision = Next.Continue
        if route is not None:
            try:
                decision = route.router(value)
                problem = route.check(decision)
            except Exception as error:  # noqa: BLE001 - a broken router fails its job, visibly
                problem = f"router on {route.job!r} raised {type(error).__name__}: {error}"
            if problem:
                return self._fail(i, problem)
        self.results[i] = value
        self._log(i, COMPLETED, "" if route is None else repr(decision))
        if decision.kind == "continue":
            remaining, state, ready = self.remaining, self.state, self.ready
            for dependent in self.dependents[i]:
                remaining[dependent] -= 1
                if remaining[dependent] == 0 and state[dependent] is PENDING:
                    ready.append(dependent)
            return None
        if decision.kind == "goto":
            return self._goto(i, self.plan.index[decision.job], decision.feedback)
        return self._stop(i)

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
            results=(dict(zip(self.ids, self.results, strict=True))
                     if self.state.count(COMPLETED) == len(self.ids)  # the usual end: no filter
                     else {self.ids[i]: self.results[i] for i, state in enumerate(self.state)
                           if state in (COMPLETED, DEAD_LETTER)}),
            errors={self.ids[i]: note for i, note in sorted(self.errors.items())},
            events=tuple(self.events),
            elapsed=self.clock.now() - self.start,
            stopped_by=self.stopped_by,
        )
