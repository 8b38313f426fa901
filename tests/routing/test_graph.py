"""Validation of a graph before anything runs, and the Next values a router returns."""

from __future__ import annotations

import pytest

from labkit.core.errors import LabError
from labkit.routing import Context, FakeClock, Graph, GraphError, Next


def noop(ctx: Context) -> None:
    return None


def error_of(graph: Graph) -> str:
    with pytest.raises(GraphError) as caught:
        graph.validate()
    return str(caught.value)


def base() -> Graph:
    return (
        Graph()
        .job("draft", noop)
        .job("revise", noop, deps=["draft"])
        .job("review", noop, deps=["revise"])
        .job("publish", noop, deps=["review"])
        .job("audit", noop)
    )


def test_duplicate_ids_and_unknown_dependencies_are_refused_with_a_close_match():
    assert error_of(Graph().job("a", noop).job("b", noop).job("a", noop)) == "job 'a' is declared twice"
    graph = Graph().job("revise", noop).job("review", noop, deps=["revize"])
    assert error_of(graph) == "job 'review' depends on unknown job 'revize' (did you mean 'revise'?)"
    assert error_of(Graph().job("a", noop, deps=["zzz"])) == "job 'a' depends on unknown job 'zzz'"


def test_a_cycle_is_reported_with_its_path_in_running_order():
    graph = Graph().job("draft", noop).job("review", noop, deps=["draft", "revise"])
    message = error_of(graph.job("revise", noop, deps=["review"]))
    assert message == "dependency cycle: review -> revise -> review (declare a loop as a route, not as deps)"
    three = Graph().job("a", noop, deps=["c"]).job("b", noop, deps=["a"]).job("c", noop, deps=["b"])
    assert error_of(three).startswith("dependency cycle: a -> b -> c -> a ")
    assert error_of(Graph().job("a", noop, deps=["a"])).startswith("dependency cycle: a -> a ")


def test_a_deep_chain_validates_without_recursion_and_order_of_declaration_is_free():
    graph = Graph().job("j0", noop)
    for i in range(1, 5000):
        graph.job(f"j{i}", noop, deps=[f"j{i - 1}"])
    assert len(graph.validate().jobs) == 5000
    backwards = Graph().job("b", lambda ctx: ctx.input + 1, deps=["a"]).job("a", lambda ctx: 1)
    assert backwards.run(clock=FakeClock()).results == {"b": 2, "a": 1}


UPSTREAM = "is not 'review' or upstream of it (a Goto goes back to a job it depends on)"


@pytest.mark.parametrize(
    "job, targets, message",
    [
        ("reviw", ["revise"], "route on unknown job 'reviw' (did you mean 'review'?)"),
        ("review", ["revize"], "route on 'review' names unknown target 'revize' (did you mean 'revise'?)"),
        ("review", ["publish"], f"route on 'review': target 'publish' {UPSTREAM}"),
        ("review", ["audit"], f"route on 'review': target 'audit' {UPSTREAM}"),
    ],
)
def test_route_errors(job, targets, message):
    assert error_of(base().route(job, lambda r: Next.Continue, targets=targets)) == message


def test_a_job_has_one_route_at_most_which_may_target_itself_and_any_ancestor():
    graph = base().route("review", lambda r: Next.Continue).route("review", lambda r: Next.Stop)
    assert error_of(graph) == "job 'review' has two routes; a job has at most one router"
    plan = base().route("review", lambda r: Next.Continue, targets=["review", "revise", "draft"]).validate()
    assert plan.routes["review"].targets == ("review", "revise", "draft")


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: Graph().job("", noop), "a job id must be a non-empty string without surrounding spaces"),
        (lambda: Graph().job("a", "noop"), "job 'a': fn must be callable, got 'noop'"),
        (lambda: Graph().job("b", noop, deps="a"), "job 'b': deps must be a list of job ids, not 'a'"),
        (lambda: Graph().job("b", noop, deps=[1]), "each of job 'b': deps must be a non-empty string"),
        (lambda: Graph().job("b", noop, retry=3), "job 'b': retry must be a RetryPolicy or None, got 3"),
        (lambda: Graph().route("a", None), "route on 'a': router must be callable, got None"),
        (lambda: Graph().run(max_concurrency=0), "max_concurrency must be an int >= 1, got 0"),
        (lambda: Graph().run(max_visits=True), "max_visits must be an int >= 1, got True"),
        (lambda: Graph().run(clock=object()), "clock must have now() and async sleep(seconds), got <object"),
        (lambda: Next.back_to_with("revise", "  "), "Next.back_to_with('revise', feedback) needs"),
        (lambda: Next.back_to_with("revise", None), "Next.back_to_with('revise', feedback) needs"),
    ],
)
def test_a_malformed_job_route_setting_or_next_is_refused_at_once(make, message):
    with pytest.raises(GraphError) as caught:
        make()
    assert str(caught.value).startswith(message)


def test_nothing_runs_when_validation_fails_and_the_error_is_a_lab_error():
    calls = []
    graph = Graph().job("a", lambda ctx: calls.append("a")).job("b", noop, deps=["nope"])
    with pytest.raises(LabError):
        graph.run(clock=FakeClock())
    assert calls == []
