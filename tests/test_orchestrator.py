"""Lab 04's orchestrator: validation, the state machine, scheduling, retries, routers, caps.

Every run here uses a FakeClock or no clock at all; nothing asserts a duration in wall time.
"""

from __future__ import annotations

import asyncio

import pytest

from labkit.core.errors import LabError
from labkit.routing import (
    FINAL_STATES as FINAL,
    Context,
    FakeClock,
    Graph,
    GraphError,
    InvalidInput,
    Next,
    RetryPolicy,
    RunResult,
    State,
    legal,
    plot_timeline,
    spans,
)
from labkit.routing.experiments import DRAFT, Reviser, loop_graph


def noop(ctx: Context) -> None:
    return None


def transitions(result: RunResult, job: str) -> list[str]:
    return [str(e.new) for e in result.events if e.job == job]


def started(result: RunResult) -> list[str]:
    return [e.job for e in result.events if e.new == State.RUNNING and e.old == State.PENDING]


def headline(limit: int = 26, feedback: bool = True):
    """draft → revise → review → publish, recording every Context revise and review see."""
    seen: dict[str, list[Context]] = {"revise": [], "review": []}
    reviser = Reviser()

    def revise(ctx: Context) -> str:
        seen["revise"].append(ctx)
        return reviser(ctx)

    def review(ctx: Context) -> dict:
        seen["review"].append(ctx)
        return {"text": ctx.input, "chars": len(ctx.input)}

    def route(verdict: dict) -> Next:
        if verdict["chars"] <= limit:
            return Next.Continue
        why = f"{verdict['chars']} characters, limit is {limit}"
        return Next.back_to_with("revise", why) if feedback else Next.back_to("revise")

    graph = (Graph().job("draft", lambda ctx: DRAFT).job("revise", revise, deps=["draft"])
             .job("review", review, deps=["revise"])
             .job("publish", lambda ctx: ctx.input["text"], deps=["review"]))
    graph.route("review", route, targets=["revise"])
    return graph, seen, reviser


# -- validation ----------------------------------------------------------------------------

def error_of(graph: Graph) -> str:
    with pytest.raises(GraphError) as caught:
        graph.validate()
    return str(caught.value)


def test_duplicate_id_is_refused():
    assert error_of(Graph().job("a", noop).job("b", noop).job("a", noop)) == "job 'a' is declared twice"


def test_unknown_dependency_names_the_job_and_a_close_match():
    graph = Graph().job("revise", noop).job("review", noop, deps=["revize"])
    assert error_of(graph) == "job 'review' depends on unknown job 'revize' (did you mean 'revise'?)"
    assert error_of(Graph().job("a", noop, deps=["zzz"])) == "job 'a' depends on unknown job 'zzz'"


def test_cycle_is_reported_with_its_path_in_running_order():
    graph = Graph().job("draft", noop).job("review", noop, deps=["draft", "revise"]).job(
        "revise", noop, deps=["review"])
    assert error_of(graph) == ("dependency cycle: review -> revise -> review "
                               "(declare a loop as a route, not as deps)")


def test_longer_cycles_and_self_dependency():
    three = Graph().job("a", noop, deps=["c"]).job("b", noop, deps=["a"]).job("c", noop, deps=["b"])
    assert error_of(three).startswith("dependency cycle: a -> b -> c -> a ")
    assert error_of(Graph().job("a", noop, deps=["a"])).startswith("dependency cycle: a -> a ")


def test_deep_chain_validates_without_recursion():
    graph = Graph().job("j0", noop)
    for i in range(1, 5000):
        graph.job(f"j{i}", noop, deps=[f"j{i - 1}"])
    assert len(graph.validate().jobs) == 5000


def test_a_job_may_be_declared_before_its_dependency():
    graph = Graph().job("b", lambda ctx: ctx.input + 1, deps=["a"]).job("a", lambda ctx: 1)
    result = graph.run(clock=FakeClock())
    assert result.results == {"b": 2, "a": 1}


def base() -> Graph:
    return (Graph().job("draft", noop).job("revise", noop, deps=["draft"])
            .job("review", noop, deps=["revise"]).job("publish", noop, deps=["review"])
            .job("audit", noop))


@pytest.mark.parametrize("route, message", [
    (("reviw", ["revise"]), "route on unknown job 'reviw' (did you mean 'review'?)"),
    (("review", ["revize"]), "route on 'review' names unknown target 'revize' (did you mean 'revise'?)"),
    (("review", ["publish"]), "route on 'review': target 'publish' is not 'review' or upstream of it "
                              "(a Goto goes back to a job it depends on)"),
    (("review", ["audit"]), "route on 'review': target 'audit' is not 'review' or upstream of it "
                            "(a Goto goes back to a job it depends on)"),
])
def test_route_errors(route, message):
    job, targets = route
    assert error_of(base().route(job, lambda r: Next.Continue, targets=targets)) == message


def test_a_job_has_at_most_one_route():
    graph = base().route("review", lambda r: Next.Continue).route("review", lambda r: Next.Stop)
    assert error_of(graph) == "job 'review' has two routes; a job has at most one router"


def test_a_route_may_target_its_own_job_and_any_ancestor():
    plan = base().route("review", lambda r: Next.Continue, targets=["review", "revise", "draft"]).validate()
    assert plan.routes["review"].targets == ("review", "revise", "draft")


@pytest.mark.parametrize("call, message", [
    (lambda g: g.job("", noop), "a job id must be a non-empty string without surrounding spaces, got ''"),
    (lambda g: g.job(" a", noop), "a job id must be a non-empty string without surrounding spaces, got ' a'"),
    (lambda g: g.job("a", "noop"), "job 'a': fn must be callable, got 'noop'"),
    (lambda g: g.job("b", noop, deps="a"), "job 'b': deps must be a list of job ids, not 'a'"),
    (lambda g: g.job("b", noop, deps=[1]),
     "each of job 'b': deps must be a non-empty string without surrounding spaces, got 1"),
    (lambda g: g.job("b", noop, retry=3), "job 'b': retry must be a RetryPolicy or None, got 3"),
    (lambda g: g.route("a", None), "route on 'a': router must be callable, got None"),
    (lambda g: g.route("a", noop, targets="b"), "route on 'a': targets must be a list of job ids, not 'b'"),
])
def test_declaration_errors_are_raised_at_once(call, message):
    with pytest.raises(GraphError) as caught:
        call(Graph())
    assert str(caught.value) == message


def test_nothing_runs_when_validation_fails():
    calls = []
    graph = Graph().job("a", lambda ctx: calls.append("a")).job("b", noop, deps=["nope"])
    with pytest.raises(GraphError):
        graph.run(clock=FakeClock())
    assert calls == []


@pytest.mark.parametrize("settings, message", [
    ({"max_concurrency": 0}, "max_concurrency must be an int >= 1, got 0"),
    ({"max_visits": True}, "max_visits must be an int >= 1, got True"),
    ({"max_visits": 2.0}, "max_visits must be an int >= 1, got 2.0"),
    ({"clock": object()}, "clock must have now() and async sleep(seconds), got <object"),
])
def test_run_settings_are_checked(settings, message):
    with pytest.raises(GraphError) as caught:
        Graph().job("a", noop).run(**settings)
    assert str(caught.value).startswith(message)


def test_graph_error_is_a_lab_error_and_a_value_error():
    assert issubclass(GraphError, LabError) and issubclass(GraphError, ValueError)


# -- Next ------------------------------------------------------------------------------

def test_next_reads_like_its_call_site():
    assert repr(Next.Continue) == "Next.Continue" and repr(Next.Stop) == "Next.Stop"
    assert repr(Next.back_to("revise")) == "Next.back_to('revise')"
    assert repr(Next.back_to_with("revise", "too long")) == "Next.back_to_with('revise', 'too long')"
    assert Next.back_to_with("revise", "x") == Next("goto", "revise", "x")


@pytest.mark.parametrize("make, message", [
    (lambda: Next.back_to(""), "Next.back_to needs a job id (a non-empty string), got ''"),
    (lambda: Next.back_to_with("revise", "  "), "feedback for 'revise' must be a non-blank string, got '  '"),
    (lambda: Next.back_to_with("revise", None),
     "Next.back_to_with('revise', ...) needs feedback; use Next.back_to for none"),
    (lambda: Next("jump"), "Next kind must be 'continue', 'goto' or 'stop', got 'jump'"),
    (lambda: Next("stop", "x"), "Next.Stop takes no job or feedback"),
])
def test_next_refuses_malformed_values(make, message):
    with pytest.raises(GraphError) as caught:
        make()
    assert str(caught.value) == message


# -- the state machine -----------------------------------------------------------------------

def test_transition_table():
    assert legal(State.PENDING, State.RUNNING) and legal(State.FAILED, State.RETRYING)
    assert legal(State.COMPLETED, State.DEAD_LETTER) and legal(State.COMPLETED, State.PENDING)
    assert not legal(State.PENDING, State.COMPLETED)
    assert not legal(State.FAILED, State.RUNNING)  # only through retrying
    assert not any(legal(State.DEAD_LETTER, s) or legal(State.CANCELLED, s) for s in State)
    assert FINAL == {State.COMPLETED, State.FAILED, State.DEAD_LETTER, State.CANCELLED}


def test_a_plain_run_logs_pending_running_completed_per_job_with_times():
    result = Graph().job("a", noop).job("b", noop, deps=["a"]).run(clock=FakeClock())
    assert [(e.job, str(e.old), str(e.new)) for e in result.events] == [
        ("a", "pending", "running"), ("a", "running", "completed"),
        ("b", "pending", "running"), ("b", "running", "completed")]
    assert [e.time for e in result.events] == [0.0] * 4
    assert result.status == "completed" and result.reason == "all 2 jobs completed" and result.ok


def test_an_empty_graph_completes():
    result = Graph().run()
    assert (result.status, result.reason, result.events) == ("completed", "all 0 jobs completed", ())


# -- scheduling -----------------------------------------------------------------------------

def test_independent_jobs_start_in_declaration_order():
    graph = Graph().job("c", noop).job("a", noop).job("b", noop)
    assert started(graph.run(max_concurrency=1, clock=FakeClock())) == ["c", "a", "b"]


def test_jobs_that_become_ready_together_start_in_declaration_order():
    graph = (Graph().job("root", noop).job("z", noop, deps=["root"]).job("x", noop, deps=["root"])
             .job("y", noop, deps=["root"]))
    assert started(graph.run(max_concurrency=1, clock=FakeClock())) == ["root", "z", "x", "y"]


@pytest.mark.parametrize("limit", [1, 3, 10])
def test_never_more_than_max_concurrency_jobs_in_flight(limit):
    live, peak = [0], [0]

    async def job(ctx: Context) -> None:
        live[0] += 1
        peak[0] = max(peak[0], live[0])
        for _ in range(3):
            await asyncio.sleep(0)
        live[0] -= 1

    graph = Graph()
    for i in range(10):
        graph.job(f"j{i}", job)
    assert graph.run(max_concurrency=limit).ok
    assert peak[0] == limit


def test_independent_async_jobs_really_overlap():
    # Each job waits until the other has started: both complete only if both are in flight.
    async def main() -> RunResult:
        began = {"a": asyncio.Event(), "b": asyncio.Event()}

        def waits_for(other: str):
            async def job(ctx: Context) -> str:
                began[ctx.job].set()
                await asyncio.wait_for(began[other].wait(), timeout=5)
                return ctx.job
            return job

        graph = Graph().job("a", waits_for("b")).job("b", waits_for("a"))
        return await graph.run_async(max_concurrency=2)

    assert asyncio.run(main()).results == {"a": "a", "b": "b"}


def test_inputs_are_the_dependencies_results():
    graph = (Graph().job("a", lambda ctx: 2).job("b", lambda ctx: 3)
             .job("sum", lambda ctx: ctx.inputs["a"] + ctx.inputs["b"], deps=["a", "b"]))
    assert graph.run(clock=FakeClock()).results["sum"] == 5


def test_ctx_input_needs_exactly_one_dependency():
    graph = Graph().job("a", noop).job("b", noop).job("c", lambda ctx: ctx.input, deps=["a", "b"])
    result = graph.run(clock=FakeClock())
    assert result.errors["c"] == ("ValueError: job 'c' has 2 inputs; use ctx.inputs[job_id] "
                                  "(no retry policy)")


def test_run_works_inside_a_running_event_loop():
    async def inside() -> RunResult:  # what a Jupyter cell is
        return Graph().job("a", lambda ctx: "ok").run()

    assert asyncio.run(inside()).results == {"a": "ok"}


# -- failures ------------------------------------------------------------------------------

def boom(ctx: Context) -> None:
    raise ValueError("boom")


def test_a_failure_cancels_its_dependents_only():
    graph = (Graph().job("a", noop).job("b", boom, deps=["a"]).job("c", noop, deps=["b"])
             .job("d", noop, deps=["a"]).job("e", noop, deps=["c", "d"]).job("x", noop))
    result = graph.run(clock=FakeClock())
    assert {job: str(s) for job, s in result.states.items()} == {
        "a": "completed", "b": "failed", "c": "cancelled", "d": "completed", "e": "cancelled",
        "x": "completed"}
    assert result.status == "failed"
    assert result.reason == "b failed: ValueError: boom (no retry policy); cancelled: c, e"
    assert transitions(result, "c") == ["cancelled"]


def test_long_cancel_lists_are_shortened_in_the_reason():
    graph = Graph().job("src", boom)
    for i in range(8):
        graph.job(f"m{i}", noop, deps=["src"])
    result = graph.run(clock=FakeClock())
    assert result.reason.endswith("cancelled: m0, m1, m2, m3, m4 … (+3 more)")


def test_a_lab_error_in_a_job_ends_the_run_and_cancels_jobs_in_flight():
    cleaned = []

    async def slow(ctx: Context) -> None:
        try:
            await asyncio.sleep(10)
        finally:
            cleaned.append(ctx.job)

    def broken(ctx: Context) -> None:
        raise LabError("fixture missing")

    graph = Graph().job("slow", slow).job("broken", broken)
    with pytest.raises(LabError, match="fixture missing"):
        graph.run(max_concurrency=2)
    assert cleaned == ["slow"]


def test_a_job_that_cancels_itself_fails_and_cancels_its_dependents():
    async def self_cancel(ctx: Context) -> None:
        raise asyncio.CancelledError

    result = Graph().job("a", self_cancel).job("b", noop, deps=["a"]).run(clock=FakeClock())
    assert result.states == {"a": State.FAILED, "b": State.CANCELLED}
    assert result.errors == {"a": "CancelledError: the job cancelled its own task"}


# -- retries ------------------------------------------------------------------------------

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
    assert calls == [(1, 1), (1, 2), (1, 3)]
    assert clock.sleeps == [0.5, 1.0]
    assert transitions(result, "fetch") == ["running", "failed", "retrying", "running", "failed",
                                            "retrying", "running", "completed"]
    assert [e.time for e in result.events if e.new == State.RUNNING] == [0.0, 0.5, 1.5]
    assert [e.note for e in result.events if e.new == State.RETRYING] == [
        "attempt 2 after 0.5 s", "attempt 3 after 1 s"]


def test_max_attempts_counts_the_first_try():
    job, calls = failing(99, ConnectionError("down"))
    clock = FakeClock()
    result = Graph().job("fetch", job, retry=RetryPolicy(max_attempts=3)).run(clock=clock)
    assert len(calls) == 3 and result.attempts == {"fetch": 3} and clock.sleeps == [0.5, 1.0]
    assert result.errors == {"fetch": "ConnectionError: down (attempt 3 of 3)"}


def test_an_invalid_input_is_never_retried():
    for retry_on in ((Exception,), (ValueError,), lambda error: True):
        job, calls = failing(99, InvalidInput("no page 'x'"))
        clock = FakeClock()
        policy = RetryPolicy(max_attempts=5, retry_on=retry_on)
        result = Graph().job("fetch", job, retry=policy).run(clock=clock)
        assert len(calls) == 1 and clock.sleeps == []
        assert result.errors == {"fetch": "InvalidInput: no page 'x' (invalid input is never retried)"}


def test_errors_outside_retry_on_are_not_retried():
    job, calls = failing(99, KeyError("k"))
    result = Graph().job("fetch", job, retry=RetryPolicy()).run(clock=FakeClock())
    assert len(calls) == 1 and result.errors == {"fetch": "KeyError: 'k' (KeyError is not retryable)"}


def test_retry_on_matches_subclasses_and_predicates():
    policy = RetryPolicy()
    assert policy.retryable(ConnectionResetError()) and policy.retryable(TimeoutError())
    assert not policy.retryable(ValueError())
    by_message = RetryPolicy(retry_on=lambda error: "429" in str(error))
    assert by_message.retryable(RuntimeError("HTTP 429")) and not by_message.retryable(RuntimeError("404"))
    assert RetryPolicy(retry_on=KeyError).retry_on == (KeyError,)  # a lone class, not a predicate
    assert not RetryPolicy(retry_on=KeyError).retryable(ValueError())
    assert RetryPolicy(retry_on=[KeyError, OSError]).retry_on == (KeyError, OSError)


def test_backoff_grows_and_is_capped():
    assert RetryPolicy(max_attempts=5).delays() == [0.5, 1.0, 2.0, 4.0]
    assert RetryPolicy(max_attempts=5, initial_interval=1, backoff_factor=10, max_interval=50).delays() == [
        1, 10, 50, 50]
    assert RetryPolicy(max_attempts=1).delays() == []
    assert RetryPolicy().delay(5000) == 128.0  # no OverflowError


@pytest.mark.parametrize("kwargs, message", [
    ({"max_attempts": 0}, "max_attempts must be an int >= 1 (it counts the first try), got 0"),
    ({"max_attempts": 2.5}, "max_attempts must be an int >= 1 (it counts the first try), got 2.5"),
    ({"initial_interval": -1}, "initial_interval must be a finite number >= 0, got -1"),
    ({"max_interval": float("inf")}, "max_interval must be a finite number >= 0, got inf"),
    ({"backoff_factor": 0.5}, "backoff_factor must be >= 1 (waits never shrink), got 0.5"),
    ({"initial_interval": 5, "max_interval": 1}, "max_interval (1) must be >= initial_interval (5)"),
    ({"retry_on": (ValueError, "KeyError")}, "retry_on must hold exception types, got 'KeyError'"),
    ({"retry_on": 3}, "retry_on must be a tuple of exception types or a function error -> bool, got 3"),
])
def test_retry_policy_validation(kwargs, message):
    with pytest.raises(GraphError) as caught:
        RetryPolicy(**kwargs)
    assert str(caught.value) == message


# -- routers and loops -----------------------------------------------------------------------

def test_a_loop_with_feedback_converges_and_publishes():
    graph, seen, reviser = headline()
    result = graph.run(max_visits=5, clock=FakeClock())
    assert result.status == "completed"
    assert result.visits == {"draft": 1, "revise": 3, "review": 3, "publish": 1}
    assert [len(text) for text in reviser.history] == [33, 28, 24]
    assert result.results["publish"] == "Search faster everywhere"


def test_the_goto_target_gets_feedback_and_its_previous_output_and_no_one_else_does():
    graph, seen, reviser = headline()
    graph.run(max_visits=5, clock=FakeClock())
    revise, review = seen["revise"], seen["review"]
    assert [(c.visit, c.feedback) for c in revise] == [
        (1, None), (2, "33 characters, limit is 26"), (3, "28 characters, limit is 26")]
    assert [c.previous for c in revise] == [None, reviser.history[0], reviser.history[1]]
    assert [(c.visit, c.feedback, c.previous) for c in review] == [(1, None, None), (2, None, None),
                                                                   (3, None, None)]
    assert [c.input for c in review] == reviser.history  # each review saw the latest revision


def test_back_to_without_feedback_still_hands_back_the_previous_output():
    graph, seen, reviser = headline(feedback=False)
    graph.run(max_visits=2, clock=FakeClock())
    assert [(c.feedback, c.previous) for c in seen["revise"]] == [(None, None), (None, reviser.history[0])]


@pytest.mark.parametrize("cap", [1, 2, 3, 4])
def test_max_visits_counts_runs_exactly_and_dead_letters_the_loop(cap):
    graph, seen, reviser = headline(feedback=False)
    result = graph.run(max_visits=cap, clock=FakeClock())
    assert result.status == "dead_letter"
    assert result.visits == {"draft": 1, "revise": cap, "review": cap, "publish": 0}
    assert len(reviser.history) == cap and len(seen["review"]) == cap
    assert {job: str(s) for job, s in result.states.items()} == {
        "draft": "completed", "revise": "dead_letter", "review": "dead_letter", "publish": "cancelled"}
    assert result.reason == (f"loop review -> revise hit max_visits={cap} (revise {cap} runs, "
                             f"review {cap} runs); no feedback given; cancelled: publish")


def test_the_dead_letter_reason_quotes_the_last_feedback():
    graph, _, _ = headline(limit=10)
    result = graph.run(max_visits=3, clock=FakeClock())
    assert result.reason == ("loop review -> revise hit max_visits=3 (revise 3 runs, review 3 runs); "
                             "last feedback: '24 characters, limit is 10'; cancelled: publish")
    assert result.results["revise"] == "Search faster everywhere"  # the unapproved draft is kept...
    assert "publish" not in result.results  # ...and never published


def test_a_dead_letter_blocks_everything_downstream_and_nothing_else():
    graph, _, _ = headline(feedback=False)
    graph.job("archive", noop, deps=["publish"]).job("notify", noop, deps=["review"]).job("audit", noop)
    result = graph.run(max_visits=2, clock=FakeClock())
    assert {job: str(result.states[job]) for job in ("publish", "archive", "notify", "audit")} == {
        "publish": "cancelled", "archive": "cancelled", "notify": "cancelled", "audit": "completed"}
    assert all(transitions(result, job) == ["cancelled"] for job in ("publish", "archive", "notify"))


def test_worst_case_calls_are_visits_times_attempts():
    calls = []

    def flaky(ctx: Context) -> int:
        calls.append((ctx.visit, ctx.attempt))
        if ctx.attempt < 3:
            raise TimeoutError("slow")
        return ctx.visit

    graph = Graph().job("work", flaky, retry=RetryPolicy(max_attempts=3, initial_interval=0.1))
    graph.route("work", lambda visit: Next.back_to_with("work", "again"), targets=["work"])
    result = graph.run(max_visits=3, clock=FakeClock())
    assert result.status == "dead_letter"
    assert result.visits == {"work": 3} and result.attempts == {"work": 9} and len(calls) == 9
    assert calls == [(v, a) for v in (1, 2, 3) for a in (1, 2, 3)]


def test_goto_reruns_finished_jobs_downstream_of_the_target():
    graph = (Graph().job("a", lambda ctx: ctx.visit).job("side", lambda ctx: ("side", ctx.input), deps=["a"])
             .job("b", lambda ctx: ctx.input, deps=["a"]).job("c", noop, deps=["b"]))
    graph.route("b", lambda visit: Next.back_to("a") if visit < 2 else Next.Continue, targets=["a"])
    result = graph.run(max_concurrency=1, clock=FakeClock())
    assert result.status == "completed"
    assert result.visits == {"a": 2, "side": 2, "b": 2, "c": 1}
    assert result.results["side"] == ("side", 2)


def test_goto_cancels_stale_jobs_still_running_before_rerunning():
    seen_by_side = []

    async def side(ctx: Context) -> str:
        for _ in range(20):
            await asyncio.sleep(0)
        seen_by_side.append(ctx.input)
        return ctx.input

    graph = (Graph().job("target", lambda ctx: f"v{ctx.visit}").job("side", side, deps=["target"])
             .job("router", lambda ctx: ctx.input, deps=["target"]))
    graph.route("router", lambda text: Next.back_to("target") if text == "v1" else Next.Continue,
                targets=["target"])
    result = graph.run(max_concurrency=4, clock=FakeClock())
    assert result.status == "completed"
    assert seen_by_side == ["v2"]  # the run on v1 was cancelled before it could complete
    assert transitions(result, "side") == ["running", "pending", "running", "completed"]
    assert [e.note for e in result.events if e.job == "side" and e.new == State.PENDING] == [
        "reset by router -> target"]


def test_goto_holds_back_a_reset_job_that_was_waiting_for_a_slot():
    # With one slot, `side` is ready but queued when `router` sends the run back to `target`:
    # it must wait for the new `target`, not start on the old one.
    inputs = []
    graph = (Graph().job("target", lambda ctx: f"v{ctx.visit}")
             .job("router", lambda ctx: ctx.input, deps=["target"])
             .job("side", lambda ctx: inputs.append(ctx.input), deps=["target"]))
    graph.route("router", lambda text: Next.back_to("target") if text == "v1" else Next.Continue,
                targets=["target"])
    result = graph.run(max_concurrency=1, clock=FakeClock())
    assert inputs == ["v2"] and result.visits == {"target": 2, "router": 2, "side": 1}


def test_stop_cancels_what_has_not_finished_and_reports_success():
    async def warm(ctx: Context) -> None:
        for _ in range(50):
            await asyncio.sleep(0)

    graph = (Graph().job("lookup", lambda ctx: "cached").job("check", lambda ctx: True, deps=["lookup"])
             .job("compute", noop, deps=["check"]).job("store", noop, deps=["compute"]).job("warm", warm))
    graph.route("check", lambda hit: Next.Stop if hit else Next.Continue)
    result = graph.run(max_concurrency=2, clock=FakeClock())
    assert result.status == "completed" and result.ok and result.stopped_by == "check"
    assert result.reason == "stopped by check (Next.Stop); cancelled: compute, store, warm"
    assert transitions(result, "warm") == ["running", "cancelled"]
    assert result.visits["compute"] == 0


def test_a_goto_to_an_undeclared_target_fails_the_job_never_continues():
    graph = base().route("review", lambda r: Next.back_to("draft"), targets=["revise"])
    result = graph.run(clock=FakeClock())
    message = ("router on 'review' returned Next.back_to('draft'), a target its route did not declare "
               "(declared: revise)")
    assert result.status == "failed" and result.errors == {"review": message}
    assert result.reason == f"review failed: {message}; cancelled: publish"
    assert result.visits["publish"] == 0 and result.visits["draft"] == 1


def test_a_router_that_returns_no_next_or_raises_fails_its_job():
    forgot = base().route("review", lambda r: None).run(clock=FakeClock())
    assert forgot.errors["review"] == ("router on 'review' returned None, not a Next (Next.Continue, "
                                       "Next.back_to(job), Next.back_to_with(job, feedback) or Next.Stop)")
    raising = base().route("review", lambda r: r["chars"]).run(clock=FakeClock())
    assert raising.errors["review"] == ("router on 'review' raised TypeError: "
                                        "'NoneType' object is not subscriptable")
    assert forgot.states["publish"] == raising.states["publish"] == State.CANCELLED


def test_a_self_loop_reruns_the_job_with_feedback():
    feedback = []

    def ask(ctx: Context) -> int:
        feedback.append(ctx.feedback)
        return ctx.visit

    graph = Graph().job("ask", ask).job("use", noop, deps=["ask"])
    graph.route("ask", lambda visit: Next.Continue if visit == 3
                else Next.back_to_with("ask", f"try {visit + 1}"), targets=["ask"])
    result = graph.run(clock=FakeClock())
    assert result.visits == {"ask": 3, "use": 1} and feedback == [None, "try 2", "try 3"]


# -- results and timeline ---------------------------------------------------------------------

def test_result_tables_and_summary():
    graph, _, _ = headline(feedback=False)
    result = graph.run(max_visits=2, clock=FakeClock())
    assert list(result.table().columns) == ["state", "visits", "attempts"]
    assert list(result.event_table(times=False).columns) == ["job", "old", "new", "visit", "attempt", "note"]
    assert result.summary().splitlines()[2:] == [
        "  draft    completed    visits=1  attempts=1",
        "  revise   dead_letter  visits=2  attempts=2",
        "  review   dead_letter  visits=2  attempts=2",
        "  publish  cancelled    visits=0  attempts=0"]
    failed = Graph().job("a", boom).run(clock=FakeClock())
    assert failed.table().loc["a", "error"] == "ValueError: boom (no retry policy)"


def test_spans_rebuild_attempts_and_backoffs_from_events():
    job, _ = failing(1, ConnectionError("down"))
    result = Graph().job("fetch", job, retry=RetryPolicy(initial_interval=0.25)).run(clock=FakeClock())
    assert [(s.kind, s.attempt, s.outcome, s.duration) for s in spans(result)] == [
        ("running", 1, "failed", 0.0), ("retrying", 1, "running", 0.25), ("running", 2, "completed", 0.0)]


def test_plot_timeline_draws_one_bar_per_span():
    import matplotlib

    matplotlib.use("Agg")
    graph, _ = loop_graph(feedback=True, seconds={"draft": 1, "revise": 0.5, "review": 0.1, "publish": 0.2})
    result = graph.run(clock=FakeClock())
    ax = plot_timeline(result)
    assert len(ax.patches) == len(spans(result)) == 8
    assert [t.get_text() for t in ax.get_yticklabels()] == ["draft", "revise", "review", "publish"]
    import matplotlib.pyplot as plt

    plt.close("all")
