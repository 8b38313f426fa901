"""Lab 04's build-it cells and exercises are solvable: each intended solution passes its
checker, and plausible wrong attempts fail with a sentence that says what to fix."""

import functools
import time

import numpy
import pytest
from verdicts import verdict

from labkit.core.errors import LabError
from labkit.routing import Graph, Next, RetryPolicy
from labkit.routing import checks as lab04
from labkit.routing.experiments import feedback_experiment, parallel_experiment, within_limit

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


# -- answers that used to pass or end in no verdict (issues 20 and 21) -----------------------------


def test_ready_steps_that_return_no_list_get_a_verdict():
    verdict(lab04.check_ready(lambda deps, states: None), False, "returned None", "not a list of jobs")
    verdict(lab04.check_ready(lambda deps, states: numpy.array(["a", "c"])), False, "(ndarray)", "not a list")
    verdict(lab04.check_ready(lambda deps, states: {"a", "c"}), False, "(set)", "declaration order")
    verdict(lab04.check_ready(lambda deps, states: [0, 2]), False, "holds 0 (int)", "not a job")


def test_a_memorised_copy_of_the_printed_cases_does_not_pass():
    """The cases in the module, and every state the printed graphs pass through, looked up."""
    remembered = {repr((deps, states)): want for _, deps, states, want in lab04.READY_CASES}
    for name, deps in lab04.GRAPHS.items():
        states = dict.fromkeys(deps, "pending")
        for started in lab04.ROUNDS[name]:
            remembered[repr((deps, dict(states)))] = started
            states.update(dict.fromkeys(started, "completed"))

    def memorised(deps, states):
        return remembered.get(repr((deps, states)), [])

    check_ = lab04.check_ready(memorised)
    verdict(check_, False, "On a graph the checker made up", "may start")


def test_ready_and_router_hang_raise_labkits_error_or_are_labkits_own(short_limit):
    verdict(lab04.check_ready(lambda deps, states: time.sleep(1.5)), False, "did not return within 0.2 s",
            "when nothing has run yet")

    def lab_error(*args):
        raise LabError("a lab mistake")

    verdict(lab04.check_ready(lab_error), False, "raised LabError: a lab mistake", "at line")
    verdict(lab04.check_router(lambda verdict: time.sleep(1.5)), False, "did not return within 0.2 s",
            "12 characters")
    verdict(lab04.check_router(lab_error), False, "raised LabError")
    verdict(lab04.check_router(lambda verdict: numpy.array([1])), False, "not a Next")
    for labkits in (within_limit, functools.partial(within_limit, limit=26), lambda v: within_limit(v)):
        verdict(lab04.check_router(labkits), False, "that is labkit's version", "write your own")


def test_router_feedback_must_hold_both_numbers_and_is_told_so():
    def overshoot(verdict):
        if verdict["chars"] <= 26:
            return Next.Continue
        return Next.back_to_with("revise", f"{verdict['chars'] - 26} characters too long (limit 26)")

    verdict(lab04.check_router(overshoot), False, "must hold both numbers as digits", "27", "26")

    def remembered(verdict):  # the four lengths the lab mentions, answered by heart
        answers = {12: Next.Continue, 26: Next.Continue,
                   27: Next.back_to_with("revise", "27 characters, limit 26"),
                   45: Next.back_to_with("revise", "45 characters, limit 26")}
        return answers.get(verdict["chars"], Next.Continue)

    verdict(lab04.check_router(remembered), False, "over the limit")


def test_retry_policy_blames_the_cap_and_bounds_retry_on(short_limit):
    capped = RetryPolicy(max_attempts=4, initial_interval=0.2, max_interval=0.5)
    check_ = lab04.check_retry_policy(capped)
    verdict(check_, False, "max_interval=0.5 caps every wait", "Raise max_interval")
    assert "set initial_interval" not in check_.message
    verdict(lab04.check_retry_policy(RetryPolicy(max_attempts=4, initial_interval=0.2, max_interval=0.8)),
            True)

    def raises(error):
        raise LabError("no")

    for retry_on, phrase in ((raises, "raised LabError"), (lambda error: time.sleep(1.5), "within 0.2 s"),
                             (lambda error: numpy.array([True, False]), "raised ValueError")):
        policy = RetryPolicy(max_attempts=4, initial_interval=0.2, retry_on=retry_on)
        verdict(lab04.check_retry_policy(policy), False, phrase, "retry_on was asked about")


@pytest.mark.parametrize("count, phrase", [
    ("1", "whole number (an int), not '1' (str)"), (1.0, "not 1.0 (float)"), (True, "(bool)"),
    (numpy.int64(1), "(int64)"), (10**400, "count from 0 to 1000"), (-1, "count from 0 to 1000"),
], ids=["str", "float", "bool", "numpy", "huge", "negative"])
def test_goto_counts_that_are_not_ints_are_refused_in_a_sentence(count, phrase):
    check_ = lab04.check_goto_runs({**RUNS, "fetch": count})
    verdict(check_, False, "the count for fetch", phrase)
    assert "ran 1 time(s)" not in check_.message


@pytest.mark.parametrize("answer, phrase", [
    (lambda: 10**400, "about 401 digits"), (lambda: 10**5000, "about 5,001 digits"),
    (lambda: -3, "is not it"),
    (lambda: numpy.arange(10**5), "whole number"), (lambda: "x" * 10**6, "whole number"),
], ids=["10**400", "10**5000", "negative", "numpy", "huge-str"])
def test_huge_or_odd_worst_cases_get_a_short_verdict(answer, phrase):
    verdict(lab04.check_worst_case(answer()), False, phrase)
