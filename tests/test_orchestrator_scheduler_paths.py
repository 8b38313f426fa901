"""The scheduler on the event loop: the records it hands out, cancelling a run, batches, tasks.

benchmarks/orchestrator.py measures the speed; these check only behaviour. Cancelling the
run must reach the job in flight and end the run, even when the job swallows the
cancellation; outcomes are settled in the batches the event loop delivers them in.
"""

from __future__ import annotations

import asyncio

import pytest

from labkit.routing import Context, Event, FakeClock, Graph, State


def test_events_and_contexts_are_immutable_records():
    clock, seen = FakeClock(), []

    def record(ctx: Context) -> str:
        seen.append(ctx)
        return "x"

    result = Graph().job("a", record).job("b", record, deps=["a"]).run(clock=clock)
    assert seen == [Context("a", {}, 1, 1, None, None, clock),
                    Context("b", {"a": "x"}, 1, 1, None, None, clock)]
    event = result.events[0]
    assert event == Event(0.0, "a", State.PENDING, State.RUNNING, 1, 1, "")
    assert event == (0.0, "a", "pending", "running", 1, 1, "")  # a tuple: compares with a plain one
    assert hash(event) == hash(Event(0.0, "a", State.PENDING, State.RUNNING, 1, 1, ""))
    with pytest.raises(AttributeError):
        event.note = "changed"  # frozen
    with pytest.raises(AttributeError):
        seen[1].feedback = "changed"


def _cancel_after_start(graph: Graph) -> None:
    async def main() -> None:
        run = asyncio.ensure_future(graph.run_async())
        await asyncio.sleep(0.05)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(main())


def test_cancelling_a_run_with_one_job_in_flight_cancels_that_job():
    seen = []

    async def slow(ctx: Context) -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            seen.append(ctx.job)
            raise

    _cancel_after_start(Graph().job("slow", slow).job("after", slow, deps=["slow"]))
    assert seen == ["slow"]


def test_cancelling_a_run_is_not_lost_when_its_only_job_swallows_it():
    started = []

    async def stubborn(ctx: Context) -> str:
        started.append(ctx.job)
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            return "kept going"
        return "done"

    _cancel_after_start(Graph().job("a", stubborn).job("b", stubborn, deps=["a"]))
    assert started == ["a"]  # the run ended: b never started


def test_a_chain_runs_each_job_once_in_order_with_two_events_each():
    order = []

    async def step(ctx: Context) -> int:
        order.append(ctx.job)
        return (ctx.input if ctx.inputs else 0) + 1

    graph = Graph().job("j0", step)
    for i in range(1, 50):
        graph.job(f"j{i}", step, deps=[f"j{i - 1}"])
    result = graph.run(clock=FakeClock())
    assert order == [f"j{i}" for i in range(50)] and result.results["j49"] == 50
    assert [(e.job, e.new) for e in result.events] == [
        (f"j{i}", new) for i in range(50) for new in (State.RUNNING, State.COMPLETED)]


async def _yield_once(ctx: Context) -> str:
    await asyncio.sleep(0)
    return ctx.job


def _at_once(ctx: Context) -> str:
    return ctx.job


class _AsyncCallable:
    async def __call__(self, ctx: Context) -> str:
        await asyncio.sleep(0)
        return "called"


def test_every_visit_runs_in_a_task_of_its_own_whatever_the_function():
    from labkit.routing import RetryPolicy

    tasks: dict[str, asyncio.Task | None] = {}

    def plain(ctx: Context) -> str:
        tasks[ctx.job] = asyncio.current_task()
        return ctx.job

    async def coroutine(ctx: Context) -> str:
        return plain(ctx)

    async def main() -> None:
        graph = (Graph().job("plain", plain).job("coroutine", coroutine).job("lambda", lambda ctx: plain(ctx))
                 .job("retried", plain, retry=RetryPolicy()).job("after", plain, deps=["plain"]))
        assert (await graph.run_async(clock=FakeClock())).ok
        run = asyncio.current_task()
        assert set(tasks) == {"plain", "coroutine", "lambda", "retried", "after"}
        assert all(task is not None and task is not run for task in tasks.values())
        assert len({id(task) for task in tasks.values()}) == 5

    asyncio.run(main())


def test_a_plain_function_that_returns_a_coroutine_has_it_awaited():
    graph = Graph().job("a", lambda ctx: _yield_once(ctx)).job("b", lambda ctx: ctx.input + "!", deps=["a"])
    graph.job("c", _AsyncCallable(), deps=["a"])
    result = graph.run(clock=FakeClock())
    assert result.ok and result.results == {"a": "a", "b": "a!", "c": "called"}


@pytest.mark.parametrize("concurrency", [1, 4])
def test_inline_jobs_fail_cancel_and_raise_as_jobs_in_tasks_do(concurrency):
    from labkit.core.errors import LabError

    def cancels(ctx: Context) -> None:
        raise asyncio.CancelledError

    def fails(ctx: Context) -> None:
        raise KeyError("missing")

    graph = Graph().job("cancels", cancels).job("fails", fails).job("after", _at_once, deps=["fails"])
    result = graph.run(max_concurrency=concurrency, clock=FakeClock())
    assert (result.status, dict(result.errors)) == ("failed", {
        "cancels": "CancelledError: the job cancelled its own task",
        "fails": "KeyError: 'missing' (no retry policy)"})
    assert result.states["after"] == State.CANCELLED

    def broken(ctx: Context) -> None:
        raise LabError("the lab is broken")

    with pytest.raises(LabError, match="the lab is broken"):
        Graph().job("broken", broken).job("other", _yield_once).run(max_concurrency=concurrency)


class _Ready:
    """An awaitable that is not a coroutine: `await` gives 42."""

    def __await__(self):
        return (yield from asyncio.sleep(0, 42).__await__())


@pytest.mark.parametrize("retry", [None, "policy"])
def test_any_awaitable_a_job_returns_is_awaited_and_plain_data_is_kept(retry):
    from labkit.routing import RetryPolicy

    policy = RetryPolicy() if retry else None
    graph = Graph().job("awaitable", lambda ctx: _Ready(), retry=policy)
    graph.job("data", lambda ctx: {"n": (1, 2.5, "x", None, [b"y"])}, retry=policy)
    result = graph.run(clock=FakeClock())
    assert result.results == {"awaitable": 42, "data": {"n": (1, 2.5, "x", None, [b"y"])}}
