"""The scheduler's contract (labkit/routing/scheduler.py): order, concurrency, failures, retries,
routers, caps, the event log. Every run uses a FakeClock or no clock; no wall time is asserted."""

from __future__ import annotations

import asyncio
from functools import partial

import pytest

from labkit.core.errors import LabError
from labkit.routing import Context, FakeClock, Graph, InvalidInput, Next, RetryPolicy, RunResult, State
from labkit.routing.experiments import LOOP_SECONDS, Reviser, loop_graph, within_limit, without_feedback
from labkit.routing.scheduler import run_plan
from labkit.routing.states import Event
from labkit.routing.timeline import plot_timeline, spans


def noop(ctx: Context) -> None:
    return None


def boom(ctx: Context) -> None:
    raise ValueError("boom")


def graph_of(**jobs) -> Graph:
    """A Graph of `name=[deps]` (a no-op job), `name=fn` or `name=(fn, [deps])`, in that order."""
    graph = Graph()
    for name, spec in jobs.items():
        fn, deps = (noop, spec) if isinstance(spec, list) else spec if isinstance(spec, tuple) else (spec, [])
        graph.job(name, fn, deps=deps)
    return graph


def transitions(result: RunResult, job: str) -> list[str]:
    return [str(e.new) for e in result.events if e.job == job]


def started(result: RunResult) -> list[str]:
    return [e.job for e in result.events if e.new == State.RUNNING and e.old == State.PENDING]


def headline(limit: int = 26, feedback: bool = True):
    """The review loop (`experiments.loop_graph`), recording every Context its reviser sees."""
    seen, reviser = [], Reviser()

    def revise(ctx: Context) -> str:
        seen.append(ctx)
        return reviser(ctx)

    router = partial(within_limit if feedback else without_feedback, limit=limit)
    graph, _ = loop_graph(router=router, reviser=revise)
    return graph, seen, reviser


def test_a_plain_run_logs_its_events_and_hands_each_job_its_context():
    clock, seen = FakeClock(), []

    def record(ctx: Context) -> str:
        seen.append(ctx)
        return "x"

    result = graph_of(a=record, b=(record, ["a"])).run(clock=clock)
    assert result.events == tuple(
        Event(0.0, job, old, new, 1, 1)
        for job in "ab"
        for old, new in ((State.PENDING, State.RUNNING), (State.RUNNING, State.COMPLETED))
    )
    assert seen == [
        Context("a", {}, 1, 1, None, None, clock),
        Context("b", {"a": "x"}, 1, 1, None, None, clock),
    ]
    assert (result.status, result.reason) == ("completed", "all 2 jobs completed")
    assert Graph().run().reason == "all 0 jobs completed"


def test_ready_jobs_start_in_declaration_order():
    assert started(graph_of(c=[], a=[], b=[]).run(max_concurrency=1)) == ["c", "a", "b"]
    fan = graph_of(root=[], z=["root"], x=["root"], y=["root"])
    assert started(fan.run(max_concurrency=1, clock=FakeClock())) == ["root", "z", "x", "y"]


@pytest.mark.parametrize("limit", [1, 3])
def test_never_more_than_max_concurrency_jobs_in_flight(limit):
    live, peak = [0], [0]

    async def job(ctx: Context) -> None:
        live[0] += 1
        peak[0] = max(peak[0], live[0])
        for _ in range(3):
            await asyncio.sleep(0)
        live[0] -= 1

    result = graph_of(**{f"j{i}": job for i in range(10)}).run(max_concurrency=limit)
    assert result.status == "completed" and peak[0] == limit


def test_a_run_works_inside_a_running_event_loop():
    async def cell() -> RunResult:  # what a Jupyter cell is
        return graph_of(x=lambda ctx: "ok").run()

    assert asyncio.run(cell()).results == {"x": "ok"}


class _Ready:
    def __await__(self):
        return (yield from asyncio.sleep(0, 42).__await__())


def test_inputs_and_whatever_awaitable_a_job_returns():
    total = (lambda ctx: ctx.inputs["a"] + ctx.inputs["b"], ["a", "b"])
    result = graph_of(
        a=lambda ctx: 2, b=lambda ctx: _Ready(), sum=total, one=(lambda ctx: ctx.input, ["a", "b"])
    ).run(clock=FakeClock())
    assert result.results["sum"] == 44
    assert result.errors["one"].startswith("ValueError: job 'one' has 2 inputs; use ctx.inputs[job_id]")


# -- failures --------------------------------------------------------------------------------


def test_a_failure_cancels_its_dependents_only():
    result = graph_of(a=[], b=(boom, ["a"]), c=["b"], d=["a"], e=["c", "d"], x=[]).run(clock=FakeClock())
    assert "".join(str(s)[:2] for s in result.states.values()) == "cofacacocaco"  # b failed; c, e cancelled
    assert result.reason == "b failed: ValueError: boom (no retry policy); cancelled: c, e"
    assert transitions(result, "c") == ["cancelled"]
    wide = graph_of(src=boom, **{f"m{i}": ["src"] for i in range(8)})
    assert wide.run(clock=FakeClock()).reason.endswith("cancelled: m0, m1, m2, m3, m4 … (+3 more)")


def test_a_lab_error_ends_the_run_and_cancels_jobs_in_flight():
    cleaned = []

    async def slow(ctx: Context) -> None:
        try:
            await asyncio.sleep(10)
        finally:
            cleaned.append(ctx.job)

    def broken(ctx: Context) -> None:
        raise LabError("fixture missing")

    with pytest.raises(LabError, match="fixture missing"):
        graph_of(slow=slow, broken=broken).run(max_concurrency=2)
    assert cleaned == ["slow"]


def test_a_job_that_cancels_itself_fails_and_cancels_its_dependents():
    async def self_cancel(ctx: Context) -> None:
        raise asyncio.CancelledError

    result = graph_of(a=self_cancel, b=["a"]).run(clock=FakeClock())
    assert result.states == {"a": State.FAILED, "b": State.CANCELLED}
    assert result.errors == {"a": "CancelledError: the job cancelled its own task"}


def test_cancelling_a_run_cancels_its_job_in_flight_even_one_that_swallows_it():
    started_jobs = []

    async def stubborn(ctx: Context) -> str:
        started_jobs.append(ctx.job)
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            return "kept going"
        return "done"

    async def main() -> None:
        run = asyncio.ensure_future(run_plan(graph_of(a=stubborn, b=(stubborn, ["a"])).validate()))
        await asyncio.sleep(0.05)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(main())
    assert started_jobs == ["a"]  # the run ended: b never started


# -- retries in a run -------------------------------------------------------------------------


def failing(times: int, error: BaseException):
    calls = []

    def job(ctx: Context) -> str:
        calls.append((ctx.visit, ctx.attempt))
        if len(calls) <= times:
            raise error
        return "page"

    return job, calls


def test_a_transient_fault_is_retried_with_backoff_on_the_clock():
    job, calls = failing(2, ConnectionError("down"))
    clock = FakeClock()
    result = Graph().job("fetch", job, retry=RetryPolicy(max_attempts=3)).run(clock=clock)
    assert result.status == "completed" and result.attempts == {"fetch": 3} and result.visits == {"fetch": 1}
    assert calls == [(1, 1), (1, 2), (1, 3)] and clock.sleeps == [0.5, 1.0]
    assert transitions(result, "fetch") == ["running", "failed", "retrying"] * 2 + ["running", "completed"]
    assert [e.time for e in result.events if e.new == State.RUNNING] == [0.0, 0.5, 1.5]


ANYTHING, BROKEN = RetryPolicy(retry_on=lambda e: True), RetryPolicy(retry_on=lambda e: {}["kind"])


@pytest.mark.parametrize(
    "error, policy, calls_made, message",
    [
        (ConnectionError("down"), RetryPolicy(max_attempts=3), 3, "ConnectionError: down (attempt 3 of 3)"),
        (KeyError("k"), RetryPolicy(), 1, "KeyError: 'k' (KeyError is not retryable)"),
        (InvalidInput("no page"), ANYTHING, 1, "(invalid input is never retried)"),
        (ValueError("boom"), BROKEN, 1, "(retry_on raised KeyError: 'kind'"),
    ],
)
def test_what_is_not_retried_fails_its_job_and_says_why(error, policy, calls_made, message):
    job, calls = failing(99, error)
    graph = Graph().job("fetch", job, retry=policy).job("use", noop, deps=["fetch"]).job("other", noop)
    result = graph.run(clock=FakeClock())
    assert len(calls) == calls_made and list(result.errors) == ["fetch"] and message in result.errors["fetch"]
    assert (result.states["use"], result.states["other"]) == (State.CANCELLED, State.COMPLETED)


# -- routers, loops and the cap ---------------------------------------------------------------


def test_a_loop_with_feedback_converges_and_only_the_target_is_told_why():
    graph, seen, reviser = headline()
    result = graph.run(max_visits=5, clock=FakeClock())
    assert result.status == "completed" and result.results["publish"] == "Search faster everywhere"
    assert result.visits == {"draft": 1, "revise": 3, "review": 3, "publish": 1}
    told = [(c.visit, c.feedback) for c in seen]
    assert told == [(1, None), (2, "33 characters, limit is 26"), (3, "28 characters, limit is 26")]
    assert [c.previous for c in seen] == [None, *reviser.history[:2]]
    assert [e.note for e in result.events if e.job == "review" and e.new == "running"] == [""] * 3


@pytest.mark.parametrize("cap", [1, 2, 4])
def test_max_visits_counts_runs_and_dead_letters_the_loop_without_publishing(cap):
    graph, seen, reviser = headline(feedback=False)
    result = graph.run(max_visits=cap, clock=FakeClock())
    assert result.visits == {"draft": 1, "revise": cap, "review": cap, "publish": 0}
    assert len(reviser.history) == cap
    assert list(map(str, result.states.values())) == ["completed", "dead_letter", "dead_letter", "cancelled"]
    loop = f"loop review -> revise hit max_visits={cap} (revise {cap} runs, review {cap} runs)"
    assert result.reason == f"{loop}; no feedback given; cancelled: publish"
    assert [c.previous for c in seen] == [None, *reviser.history[: cap - 1]]  # told nothing else


def test_a_dead_letter_keeps_the_last_text_and_blocks_only_what_is_downstream():
    graph, _, _ = headline(limit=10)
    graph.job("archive", noop, deps=["publish"]).job("notify", noop, deps=["review"]).job("audit", noop)
    result = graph.run(max_visits=3, clock=FakeClock())
    assert "last feedback: '24 characters, limit is 10'; cancelled: publish, notify, archive" in result.reason
    assert result.results["revise"] == "Search faster everywhere" and "publish" not in result.results
    assert all(transitions(result, job) == ["cancelled"] for job in ("publish", "archive", "notify"))
    assert result.states["audit"] == State.COMPLETED


def test_a_job_still_running_during_a_goto_never_completes_on_stale_inputs():
    seen_by_side = []

    async def side(ctx: Context) -> str:
        for _ in range(20):
            await asyncio.sleep(0)
        seen_by_side.append(ctx.input)
        return ctx.input

    graph = graph_of(
        target=lambda ctx: f"v{ctx.visit}",
        side=(side, ["target"]),
        router=(lambda ctx: ctx.input, ["target"]),
    )
    graph.route(
        "router", lambda text: Next.back_to("target") if text == "v1" else Next.Continue, targets=["target"]
    )
    result = graph.run(max_concurrency=4, clock=FakeClock())
    assert result.status == "completed" and seen_by_side == ["v2"]
    assert transitions(result, "side") == ["running", "pending", "running", "completed"]


def test_a_goto_holds_back_a_reset_job_that_was_waiting_for_a_slot():
    inputs = []
    side = (lambda ctx: inputs.append(ctx.input), ["target"])
    graph = graph_of(
        target=lambda ctx: f"v{ctx.visit}", router=(lambda ctx: ctx.input, ["target"]), side=side
    )
    graph.route(
        "router", lambda text: Next.back_to("target") if text == "v1" else Next.Continue, targets=["target"]
    )
    result = graph.run(max_concurrency=1, clock=FakeClock())
    assert inputs == ["v2"] and result.visits == {"target": 2, "router": 2, "side": 1}


def test_stop_cancels_what_has_not_finished_and_reports_success():
    async def warm(ctx: Context) -> None:
        for _ in range(50):
            await asyncio.sleep(0)

    graph = graph_of(
        lookup=noop, check=(lambda ctx: True, ["lookup"]), compute=["check"], store=["compute"], warm=warm
    )
    graph.route("check", lambda hit: Next.Stop if hit else Next.Continue)
    result = graph.run(max_concurrency=2, clock=FakeClock())
    assert result.status == "completed" and result.stopped_by == "check" and result.visits["compute"] == 0
    assert result.reason == "stopped by check (Next.Stop); cancelled: compute, store, warm"


@pytest.mark.parametrize(
    "router, error",
    [
        (
            lambda r: Next.back_to("draft"),
            "returned Next.back_to('draft'), a target its route did not declare",
        ),
        (lambda r: None, "returned None, not a Next (Next.Continue, Next.back_to(job), "),
        (lambda r: r["chars"], "raised TypeError: 'NoneType' object is not subscriptable"),
    ],
)
def test_a_router_with_an_undeclared_target_no_next_or_an_error_fails_its_job(router, error):
    graph = graph_of(draft=[], revise=["draft"], review=["revise"], publish=["review"])
    result = graph.route("review", router, targets=["revise"]).run(clock=FakeClock())
    assert list(result.errors) == ["review"] and result.errors["review"].startswith(
        f"router on 'review' {error}"
    )
    assert result.reason == f"review failed: {result.errors['review']}; cancelled: publish"


def test_a_router_that_changes_the_verdict_it_reads_leaves_the_runs_record_as_the_job_returned_it():
    def pops(verdict):
        verdict.pop("chars")
        return Next.Continue

    graph = graph_of(check=lambda ctx: {"text": "ok", "chars": 2}, publish=["check"])
    result = graph.route("check", pops).run(clock=FakeClock())
    assert result.status == "completed" and result.results["check"] == {"text": "ok", "chars": 2}


def test_result_summary_table_and_timeline():
    import matplotlib

    matplotlib.use("Agg")
    graph, _, _ = headline(feedback=False)
    lines = graph.run(max_visits=2, clock=FakeClock()).summary().splitlines()
    assert lines[2:4] == [
        "  draft    completed    visits=1  attempts=1",
        "  revise   dead_letter  visits=2  attempts=2",
    ]
    assert Graph().job("a", boom).run().table().loc["a", "error"] == "ValueError: boom (no retry policy)"
    job, _ = failing(1, ConnectionError("down"))
    retried = Graph().job("fetch", job, retry=RetryPolicy(initial_interval=0.25)).run(clock=FakeClock())
    assert [(s.kind, s.attempt, s.outcome, s.end - s.start) for s in spans(retried)] == [
        ("running", 1, "failed", 0.0),
        ("retrying", 1, "running", 0.25),
        ("running", 2, "completed", 0.0),
    ]
    timed = loop_graph(seconds=LOOP_SECONDS)[0].run(clock=FakeClock())
    ax = plot_timeline(timed)
    assert sum(len(bars.get_paths()) for bars in ax.collections) == len(spans(timed)) == 8
    assert [t.get_text() for t in ax.get_yticklabels()] == ["draft", "revise", "review", "publish"]
    matplotlib.pyplot.close("all")
