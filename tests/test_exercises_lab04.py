"""Lab 04's build-it cells and exercises are solvable: each intended solution passes its
checker, and plausible wrong attempts fail with a sentence that says what to fix."""

import pytest
from verdicts import verdict

from labkit.core.errors import LabError
from labkit.routing import Graph, Next, RetryPolicy
from labkit.routing import checks as lab04
from labkit.routing.experiments import feedback_experiment, parallel_experiment

# -- build it: the ready-job step and the router ------------------------------------------------


def my_router(verdict):
    if verdict["chars"] <= 26:
        return Next.Continue
    return Next.back_to_with("revise", f"{verdict['chars']} characters, limit is 26")


def my_ready(deps, states):
    return [
        job
        for job, needs in deps.items()
        if states[job] == "pending" and all(states[dep] == "completed" for dep in needs)
    ]


def test_router_and_ready_step_solutions_pass():
    check = lab04.check_router(my_router)
    verdict(check, True, "converges")
    assert list(check.table["status"]) == ["completed", "dead_letter"]
    assert check.table.loc["scripted", "published"] == "Search faster everywhere"
    check = lab04.check_ready(my_ready)
    verdict(check, True, "fewest rounds")
    assert check.table["rounds"].to_dict() == {"diamond": 3, "chain": 4, "fan-out/fan-in": 3}


def test_wrong_routers_say_what_to_fix():
    no_feedback = lambda v: Next.Continue if v["chars"] <= 26 else Next.back_to("revise")  # noqa: E731
    verdict(lab04.check_router(no_feedback), False, "without feedback")
    off_by_one = lambda v: Next.Continue if v["chars"] < 26 else Next.back_to_with("revise", "no")  # noqa: E731
    verdict(lab04.check_router(off_by_one), False, "26 characters is within the limit")
    vague = lambda v: Next.Continue if v["chars"] <= 26 else Next.back_to_with("revise", "shorter")  # noqa: E731
    verdict(lab04.check_router(vague), False, "should state the count (27) and the limit (26)")
    verdict(lab04.check_router(lambda v: Next.Stop if v["chars"] > 26 else Next.Continue), False,
            "send it back to 'revise'")
    verdict(lab04.check_router(lambda v: v["words"]), False, "raised KeyError")
    verdict(lab04.check_router(None), False, "not attempted")


def test_wrong_ready_steps_say_what_to_fix():
    def started_when_not_pending(deps, states):
        return [j for j, needs in deps.items()
                if states[j] == "pending" and all(states[d] != "pending" for d in needs)]

    def alphabetical(deps, states):
        return sorted(my_ready(deps, states))

    def restarts_running(deps, states):
        return [j for j, needs in deps.items()
                if states[j] != "completed" and all(states[d] == "completed" for d in needs)]

    verdict(lab04.check_ready(started_when_not_pending), False, "which is running")
    verdict(lab04.check_ready(alphabetical), False, "declaration order")
    verdict(lab04.check_ready(restarts_running), False, "nothing is started again")
    verdict(lab04.check_ready(lambda deps, states: states["missing"]), False, "raised KeyError")
    verdict(lab04.check_ready("a, c"), False, "must be a function")


# -- exercise 1: a retry policy -------------------------------------------------------------------


def test_retry_policy_solution_passes():
    check = lab04.check_retry_policy(RetryPolicy(max_attempts=4, initial_interval=0.2))
    verdict(check, True, "4 attempts")
    assert check.table.loc["fetch", "attempts"] == 4 and check.table.loc["fetch", "waits"] == "0.2, 0.4, 0.8"


@pytest.mark.parametrize("policy, phrase", [
    (RetryPolicy(max_attempts=3, initial_interval=0.2), "max_attempts=3 allows 2 retries"),
    (RetryPolicy(max_attempts=4, initial_interval=0.2, backoff_factor=3), "the waits were [0.2, 0.6, 1.8]"),
    (RetryPolicy(max_attempts=4), "the waits were [0.5, 1.0, 2.0]"),
    (RetryPolicy(max_attempts=4, initial_interval=0.2, retry_on=(Exception,)), "a ValueError is retried"),
    (RetryPolicy(max_attempts=4, initial_interval=0.2, retry_on=(ConnectionError,)), "a TimeoutError is not"),
    ("four", "expected a RetryPolicy"),
    (None, "not attempted"),
])
def test_wrong_retry_policies_say_what_to_fix(policy, phrase):
    verdict(lab04.check_retry_policy(policy), False, phrase)


# -- exercise 2: what a Goto re-runs --------------------------------------------------------------

RUNS = {"fetch": 1, "parse": 2, "audit": 1, "summarize": 2, "index": 2, "check": 2, "publish": 1}


def test_goto_runs_solution_passes_and_matches_the_scheduler():
    check = lab04.check_goto_runs(dict(RUNS))
    verdict(check, True, "re-ran it and all that depends on it")
    assert check.table["runs"].to_dict() == RUNS
    assert lab04.goto_graph().run().visits == RUNS  # the real clock gives the same counts


@pytest.mark.parametrize("change, phrase", [
    ({"index": 1}, "index ran 2 time(s), not 1: it depends on parse"),
    ({"check": 1}, "check ran 2 time(s), not 1: it depends on parse through summarize and index"),
    ({"fetch": 2}, "fetch ran 1 time(s), not 2: it is not parse and does not depend on it"),
    ({"audit": 2}, "audit ran 1 time(s), not 2"),
    ({"publish": 2}, "publish ran 1 time(s), not 2: it waits for check"),
    ({"parse": 1}, "parse ran 2 time(s), not 1: it is the Goto's target"),
])
def test_wrong_goto_runs_say_what_to_fix(change, phrase):
    verdict(lab04.check_goto_runs({**RUNS, **change}), False, phrase)


@pytest.mark.parametrize("answer, phrase", [
    (None, "not attempted"),
    (dict.fromkeys(RUNS), "not attempted"),
    ({"fetch": 1}, "one count per job"),
    ([1, 2, 1, 2, 2, 2, 1], "one count per job"),
])
def test_unfinished_goto_answers(answer, phrase):
    verdict(lab04.check_goto_runs(answer), False, phrase)


# -- exercise 3: the worst case -----------------------------------------------------------------


def test_worst_case_solution_passes_and_is_computed():
    check = lab04.check_worst_case(12)
    verdict(check, True, "called 12 times", "dead_letter")
    assert check.table.loc["revise", "visits"] == 4 and check.table.loc["revise", "attempts"] == 12
    for visits, attempts in ((1, 1), (3, 2), (5, 4)):
        assert lab04.worst_case_run(visits, attempts).attempts["revise"] == visits * attempts


@pytest.mark.parametrize("answer, phrase", [
    (4, "counts the visits only"), (3, "tries of one visit"), (7, "not added"),
    (15, "counts runs with the first included"), (99, "count the runs"), (12.0, "whole number"),
    ("12", "whole number"), (None, "not attempted"),
])
def test_wrong_worst_cases_say_what_to_fix(answer, phrase):
    verdict(lab04.check_worst_case(answer), False, phrase)


def test_every_checker_is_recorded_for_submit():
    for name in lab04.__all__:
        if name.startswith("check_"):
            assert getattr(lab04, name).exercise[0] == "04"


# -- the two "Try it" knobs change the result offline ---------------------------------------------


def test_max_concurrency_knob_runs_at_most_that_many_at_once():
    table, runs = parallel_experiment(max_concurrency=2)
    assert list(table.index) == ["sequential", "parallel", "max_concurrency=2"]
    assert table.loc["max_concurrency=2", "expected_s"] == 0.28
    running = peak = 0
    for event in runs["max_concurrency=2"].events:
        if event.new == "running":
            running += 1
        elif event.old == "running":
            running -= 1
        peak = max(peak, running)
    assert peak == 2
    with pytest.raises(LabError, match="max_concurrency must be an int"):
        parallel_experiment(max_concurrency=0)


def test_max_visits_knob_changes_whether_the_loop_publishes():
    _, at_five, _ = feedback_experiment(max_visits=5)
    _, at_two, _ = feedback_experiment(max_visits=2)
    assert at_five.loc["with feedback", "status"] == "completed"
    assert at_two.loc["with feedback", "status"] == "dead_letter"
    assert at_two.loc["with feedback", "revise runs"] == 2


def test_a_graph_without_the_checker_is_untouched():
    assert isinstance(lab04.goto_graph(), Graph)
