"""The scheduler: run a validated Plan by dependency counts, with routers, retries and caps.

Contract of one run (`Graph.run` / `Graph.run_async`, which validate and call `run_plan`):

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
- **Job functions** receive one `Context` and return the job's result. Every visit runs
  in an asyncio task of its own; whatever the function returns that is awaitable (a
  coroutine function's coroutine, say) is awaited there. Only awaiting jobs overlap: a
  blocking call in a plain function blocks the whole run.
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
carries them all, in order. The rules above that decide states live in run_state.py, plain
bookkeeping; this module is the event-loop side: a task per visit, retries, withdrawal.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from labkit.core.errors import LabError
from labkit.routing.clock import Clock, RealClock
from labkit.routing.errors import GraphError
from labkit.routing.plan import Context, Plan
from labkit.routing.result import RunResult
from labkit.routing.run_state import Outcome, RunState

__all__ = ["Context", "check_settings", "run_plan", "run_plan_sync"]


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
    run = _Run(plan, max_concurrency, RunState(plan, max_visits, clock or RealClock()))
    return await run.execute()


def run_plan_sync(plan: Plan, *, max_concurrency: int = 4, max_visits: int = 5,
                  clock: Clock | None = None) -> RunResult:
    """`run_plan` from synchronous code, including code already inside an event loop."""
    check_settings(max_concurrency, max_visits, clock)
    run = partial(run_plan, plan, max_concurrency=max_concurrency, max_visits=max_visits, clock=clock)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run())
    # A Jupyter kernel already runs a loop in this thread, and asyncio.run refuses to nest:
    # give the run its own loop on a worker thread and wait for it.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="labkit-run") as pool:
        return pool.submit(lambda: asyncio.run(run())).result()


class _Run:
    """One run on the event loop: a task per visit, at most `max_concurrency` at once."""

    def __init__(self, plan: Plan, max_concurrency: int, state: RunState) -> None:
        self.plan, self.max_concurrency, self.state = plan, max_concurrency, state
        # The task each job's current visit runs in. Only its outcome counts: a task taken
        # out of here (by a Goto, a Stop or a failure upstream) is cancelled and then ignored.
        self.tasks: dict[int, asyncio.Task[Outcome]] = {}
        self.inbox: deque[tuple[int, asyncio.Task[Outcome], Outcome]] = deque()
        self.wakeup: asyncio.Future[None] | None = None  # set while the drive waits for an outcome

    async def execute(self) -> RunResult:
        self.loop = asyncio.get_running_loop()
        try:
            await self._drive()
        finally:  # a LabError, or the run itself cancelled: no job outlives its run
            leftovers = [task for task in self.tasks.values() if not task.done()]
            for task in leftovers:
                task.cancel()
            if leftovers:
                await asyncio.wait(leftovers)
        return self.state.result()

    async def _drive(self) -> None:
        """Start what is ready, wait for outcomes, settle them; until nothing is in flight.

        Outcomes arrive through each task's done callback (`_arrived`), so the drive settles,
        in one go, every outcome whose callback ran before it woke up, in that order.
        """
        while True:
            while len(self.tasks) < self.max_concurrency and (started := self.state.start_next()):
                i, inputs, feedback, previous = started
                task = self.loop.create_task(self._visit(i, inputs, feedback, previous))
                task.add_done_callback(partial(self._arrived, i))
                self.tasks[i] = task
            if not self.tasks:
                return
            if not self.inbox:
                self.wakeup = self.loop.create_future()
                await self.wakeup
                self.wakeup = None
            while self.inbox:
                i, task, outcome = self.inbox.popleft()
                if self.tasks.get(i) is task:  # else the job was reset or cancelled meanwhile
                    del self.tasks[i]
                    await self._withdraw(self.state.settle(i, outcome))

    def _arrived(self, i: int, task: asyncio.Task[Outcome]) -> None:
        """Done callback of job `i`'s task: its outcome goes to the inbox; wake the drive."""
        if task.cancelled():
            outcome: Outcome = ("cancelled", None)
        elif task.exception() is not None:
            return  # KeyboardInterrupt or SystemExit: already on its way out of the event loop
        else:
            outcome = task.result()
        self.inbox.append((i, task, outcome))
        if self.wakeup is not None and not self.wakeup.done():
            self.wakeup.set_result(None)

    async def _withdraw(self, jobs: Iterable[int]) -> None:
        """Take `jobs` away from their tasks; cancel the tasks still running and wait for them,
        so that none completes on stale inputs."""
        running = []
        for i in jobs:
            task = self.tasks.pop(i, None)
            if task is not None and not task.done():
                task.cancel()
                running.append(task)
        if running:
            await asyncio.wait(running)

    def _withdrawn(self, i: int) -> bool:
        """True inside a visit the scheduler has moved on from (see `tasks`)."""
        return self.tasks.get(i) is not asyncio.current_task()

    async def _visit(self, i: int, inputs: dict[str, Any], feedback: str | None, previous: Any) -> Outcome:
        """One visit of job `i`, the task's result: attempts until success, a refusal to retry,
        or cancellation. The failed -> retrying -> running steps in between are logged here,
        as they happen; the outcome is logged when the drive settles it.
        """
        job, state, attempt = self.plan.jobs[i], self.state, 1
        try:
            while True:
                try:
                    value = job.fn(Context(job.id, inputs, state.visits[i], attempt, feedback, previous,
                                           state.clock))
                    if inspect.isawaitable(value):
                        value = await value
                    return ("ok", value)
                except LabError:
                    raise
                except Exception as error:  # noqa: BLE001 - any job failure is a counted outcome
                    if self._withdrawn(i):
                        return ("failed", "withdrawn")  # ignored: the scheduler moved on
                    message = f"{type(error).__name__}: {error}"
                    refusal = "no retry policy" if job.retry is None else job.retry.refusal(error, attempt)
                    if refusal is not None:
                        return ("failed", f"{message} ({refusal})")
                    delay = job.retry.delay(attempt)
                    state.retrying(i, message, delay)
                await state.clock.sleep(delay)
                if self._withdrawn(i):
                    return ("failed", "withdrawn")
                attempt += 1
                state.next_attempt(i)
        except (asyncio.CancelledError, KeyboardInterrupt, SystemExit):
            raise  # the task ends cancelled (see `_arrived`), or the run ends at once
        except BaseException as error:  # noqa: BLE001 - a LabError or a scheduler bug: settled, then raised
            return ("raise", error)
