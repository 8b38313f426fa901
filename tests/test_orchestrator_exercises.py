"""Lab 04's exercise checkers: right answers pass, each kind of wrong answer is named."""

from labkit.orchestrator import Graph, Next, RetryPolicy
from labkit.orchestrator.exercises import check_loop_graph, check_retry_policy, check_router, check_worst_case
from labkit.orchestrator.experiments import DRAFT, loop_graph


def verdict(capsys, passed: bool) -> list[str]:
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(line.startswith("✓" if passed else "✗ not yet:") for line in lines)
    return lines


def test_retry_policy_answers(capsys):
    right = RetryPolicy(max_attempts=4, initial_interval=0.2)
    assert check_retry_policy(right) is True
    verdict(capsys, True)
    assert check_retry_policy(RetryPolicy(max_attempts=3, initial_interval=0.2)) is False
    assert verdict(capsys, False) == ["✗ not yet: max_attempts=3 allows 2 retries; max_attempts counts the "
                                      "first try, so 3 retries need 4"]
    assert check_retry_policy(RetryPolicy(max_attempts=4, initial_interval=0.2, backoff_factor=3)) is False
    assert verdict(capsys, False) == ["✗ not yet: the waits were [0.2, 0.6, 1.8]; expected 0.2, 0.4, 0.8 "
                                      "(initial_interval, backoff_factor)"]
    everything = RetryPolicy(max_attempts=4, initial_interval=0.2, retry_on=(Exception,))
    assert check_retry_policy(everything) is False
    assert verdict(capsys, False) == [
        "✗ not yet: ValueError is retried: repeating a bad call will not fix it",
        "✗ not yet: KeyError is retried: repeating a bad call will not fix it"]
    timeouts_only = RetryPolicy(max_attempts=4, initial_interval=0.2, retry_on=(TimeoutError,))
    assert check_retry_policy(timeouts_only) is False
    assert "ConnectionError should be retried" in "\n".join(verdict(capsys, False))
    assert check_retry_policy("four") is False
    verdict(capsys, False)


def test_router_answers(capsys):
    def right(verdict):
        n = verdict["words"]
        return Next.Continue if n <= 40 else Next.back_to_with("summarize", f"{n} words, limit 40")

    assert check_router(right) is True
    verdict(capsys, True)
    assert check_router(lambda v: Next.Continue if v["words"] <= 40 else Next.back_to("summarize")) is False
    assert len(verdict(capsys, False)) == 2
    off_by_one = lambda v: Next.Continue if v["words"] < 40 else Next.back_to_with("summarize", "x")  # noqa: E731
    assert check_router(off_by_one) is False
    assert verdict(capsys, False)[0] == ("✗ not yet: 40 words (within 40) returned "
                                         "Next.back_to_with('summarize', 'x'), expected Next.Continue")
    assert check_router(lambda v: "ok") is False
    verdict(capsys, False)


def test_loop_graph_answers(capsys):
    assert check_loop_graph(lambda reviser: loop_graph(feedback=True, reviser=reviser)[0]) is True
    verdict(capsys, True)

    def cyclic(reviser):
        return (Graph().job("draft", lambda ctx: DRAFT).job("revise", reviser, deps=["draft", "review"])
                .job("review", lambda ctx: {"chars": len(ctx.input)}, deps=["revise"])
                .job("publish", lambda ctx: ctx.input, deps=["review"]))

    assert check_loop_graph(cyclic) is False
    assert verdict(capsys, False)[0].startswith("✗ not yet: validate() refused the graph: dependency cycle:")

    def no_loop(reviser):  # validates, but publishes whatever the reviser wrote
        return (Graph().job("draft", lambda ctx: DRAFT).job("revise", reviser, deps=["draft"])
                .job("review", lambda ctx: ctx.input, deps=["revise"])
                .job("publish", lambda ctx: ctx.input, deps=["review"]))

    assert check_loop_graph(no_loop) is False
    assert verdict(capsys, False) == [
        "✗ not yet: published 'Search now much faster everywhere', over 26 characters",
        "✗ not yet: with a reviser that never improves the run ended completed; expected dead_letter",
        "✗ not yet: publish ran on a draft the review never accepted"]


def test_worst_case_answers(capsys):
    assert check_worst_case(12) is True
    verdict(capsys, True)
    for wrong in (4, 7, 12.0, "12"):
        assert check_worst_case(wrong) is False
        verdict(capsys, False)
