"""Lab 04's build-it cells and exercises are solvable: each intended solution passes its checker, and
plausible wrong answers (each boundary of the rule, a crash, a hang, None) get a sentence saying
what to fix, never a traceback."""

import sys
import time
from functools import partial

import numpy
import pytest
from hangs import hangs, limited
from verdicts import own_verdict, verdict

from labkit.core.errors import LabError
from labkit.routing import Next, RetryPolicy
from labkit.routing import checks as lab04
from labkit.routing.experiments import within_limit
from labkit.routing.scheduler import ready_after

my_ready, my_router = ready_after, within_limit  # the intended answers are labkit's own, as shown


def test_the_intended_ready_step_passes_and_drives_labkits_scheduler():
    check = lab04.check_ready(my_ready)
    verdict(check, True, "exactly as ready_after does")
    assert check.table.loc["review loop", "starts"] == 8  # three visits of revise and review, one of publish


def rescans(finished, dependents, waiting, states):  # counts, then returns every job at 0
    for job in dependents[finished]:
        waiting[job] -= 1
    return [job for job in waiting if waiting[job] == 0 and states[job] == "pending"]


def counting_down(ready_if):
    """A step that counts `finished` off each dependent and returns those where `ready_if(count, state)`."""

    def step(finished, dependents, waiting, states):
        ready = []
        for job in dependents[finished]:
            waiting[job] -= 1
            if ready_if(waiting[job], states[job]):
                ready.append(job)
        return ready

    return step


ignores_state = counting_down(lambda count, state: count == 0)
off_by_one = counting_down(lambda count, state: count <= 1 and state == "pending")
starts_retrying = counting_down(lambda count, state: count == 0 and state in ("pending", "retrying"))


def never_counts(finished, dependents, waiting, states):
    return [job for job in dependents[finished] if waiting[job] == 1 and states[job] == "pending"]


def counts_everyone(finished, dependents, waiting, states):
    for job in waiting:
        waiting[job] -= 1
    return [job for job in dependents[finished] if waiting[job] == 0 and states[job] == "pending"]


def done_when(*states_done):
    """A step that, past the count, takes a dependency in one of `states_done` for done."""

    def step(finished, dependents, waiting, states):
        ready = []
        for job in dependents[finished]:
            waiting[job] -= 1
            needs = [dep for dep, after in dependents.items() if job in after and dep != finished]
            if states[job] == "pending" and all(states[dep] in states_done for dep in needs):
                ready.append(job)
        return ready

    return step


def alphabetical(finished, dependents, waiting, states):
    return sorted(my_ready(finished, dependents, waiting, states))


def in_waiting_order(finished, dependents, waiting, states):
    ready = my_ready(finished, dependents, waiting, states)
    return [job for job in waiting if job in ready]


@pytest.mark.parametrize(
    "answer, phrases",
    [
        (rescans, ["c needs a and b", "'b' does not depend on a"]),
        (ignores_state, ["but b is running", "only a pending job may start"]),
        (never_counts, ["waiting['b'] is 1, not 0", "subtract 1"]),
        (counts_everyone, ["waiting['a'] changed", "does not depend on a"]),
        (off_by_one, ["c still waits for 1", "count is 0"]),
        (alphabetical, ["declared z, m, a", "order of dependents['root']"]),
        (done_when("completed", "dead_letter"), ["b is dead_letter", "c still waits for 1"]),
        (done_when("completed", "retrying", "failed", "dead_letter"), ["b is retrying", "c still waits"]),
        (starts_retrying, ["but b is retrying", "only a pending job may start"]),
        # found only by the drawn cases: the ready jobs in the order of `waiting`, not of dependents
        (in_waiting_order, ["(a drawn case)", "order of dependents"]),
        (lambda f, d, w, s: my_ready(f, {**d, f: d.pop(f)}, w, s), ["your step changed dependents"]),
        (lambda f, d, w, s: None, ["returned None", "list of job ids"]),
        (lambda f, d, w, s: {"b"}, ["returned {'b'}", "list of job ids"]),
        (lambda f, d, w, s: s["missing"], ["raised KeyError", "at line"]),
        (lambda *args: (_ for _ in ()).throw(LabError("a lab mistake")), ["raised LabError: a lab mistake"]),
        # round 10: sys.exit() was "could not be checked ... the shape the exercise asks for"
        (lambda *args: sys.exit("b is running"), ["raised SystemExit: b is running", "at line"]),
        (hangs, ["did not return within 0.2 s", "when a completed"]),
        ("a, c", ["must be a function"]),
        (None, ["not attempted"]),
    ],
)
def test_wrong_ready_steps_say_what_to_fix(answer, phrases, request):
    verdict(lab04.check_ready(limited(answer, request)), False, *phrases)


def test_a_step_right_on_the_cases_but_wrong_in_a_run_is_caught_by_the_scheduler():
    calls = []

    def breaks_later(finished, dependents, waiting, states):  # right on the cases, drops jobs in runs
        calls.append(finished)
        ready = my_ready(finished, dependents, waiting, states)
        cases = len(lab04._cases()["ready_cases"]) + len(list(lab04.drawn_ready_cases()))
        return ready if len(calls) <= cases else ready[:1]

    check = lab04.check_ready(breaks_later)
    verdict(
        check, False, "Running the diamond graph with your step", "did not release one whose dependencies"
    )
    assert "scheduler bug" not in check.message  # the scheduler's invariant, but the learner's step broke it


def test_the_intended_router_passes():
    check = lab04.check_router(my_router)
    verdict(check, True, "converges")
    assert check.table.loc["scripted", "published"] == "Search faster everywhere"
    assert check.table.loc["never improves", "status"] == "dead_letter"


@pytest.mark.parametrize(
    "feedback",
    [
        "limit exceeded by {over}: {chars} characters vs 26",
        "26 max, you have {chars}",
        "Over the limit by {over} characters ({chars} chars, limit 26)",
        "maximum exceeded: {chars} characters; max 26",
        "{chars} characters, at most 26",
        "{chars} chars; the limit is 26",
    ],
)
def test_feedback_stating_both_numbers_in_any_order_of_words_passes(feedback):
    def router(v):
        said = feedback.format(chars=v["chars"], over=v["chars"] - 26)
        return Next.Continue if v["chars"] <= 26 else Next.back_to_with("revise", said)

    verdict(lab04.check_router(router), True, "converges")


def remembered(verdict):  # the four lengths the lab mentions, answered by heart
    return {
        27: Next.back_to_with("revise", "27 characters, limit 26"),
        45: Next.back_to_with("revise", "45 characters, limit 26"),
    }.get(verdict["chars"], Next.Continue)


def counts(length):
    """A router that measures the text with `length` instead of len()."""

    def router(verdict):
        n = length(verdict["text"])
        return Next.Continue if n <= 26 else Next.back_to_with("revise", f"{n} characters, limit is 26")

    return router


def routes_back(feedback, limit=26):
    """Continue within `limit` characters, else back to revise told `feedback(verdict)`."""
    return lambda v: Next.Continue if v["chars"] <= limit else Next.back_to_with("revise", feedback(v))


@pytest.mark.parametrize(
    "answer, phrases",
    [
        (lambda v: Next.Continue if v["chars"] <= 26 else Next.back_to("revise"), ["without feedback"]),
        (routes_back(lambda v: "no", limit=25), ["26 characters is within the limit"]),
        (routes_back(lambda v: "shorter"), ["should state the count (27) and the limit (26)"]),
        (routes_back(lambda v: f"{v['chars'] - 26} too many"), ["should state the count (27)"]),
        (routes_back(lambda v: f"26 characters, limit is {v['chars']}"), ["count (27) and the limit (26)"]),
        (routes_back(lambda v: f"26 characters, max: {v['chars']}"), ["count (27) and the limit (26)"]),
        (routes_back(lambda v: f"allowed: {v['chars']} characters; you wrote 26"), ["the limit (26)"]),
        (routes_back(lambda v: f"maximum length {v['chars']} characters, yours is 26"), ["the limit (26)"]),
        (lambda v: Next.Stop if v["chars"] > 26 else Next.Continue, ["send it back to 'revise'"]),
        (remembered, ["over the limit"]),
        # found only by asking at every length: an empty text sent back
        (
            lambda v: my_router(v) if v["chars"] else Next.back_to_with("revise", "0 characters"),
            ["0 characters is within"],
        ),
        # found only by a text with spaces at its ends: the limit counts every character
        (
            lambda v: my_router({"chars": len(v["text"].strip())}) if v["chars"] <= 28 else my_router(v),
            ["27 characters is over the limit"],
        ),
        # found only by texts of other characters: bytes counted, closing punctuation not
        (counts(lambda text: len(text.encode())), ["14 characters is within the limit"]),
        (counts(lambda text: len(text.rstrip(".!"))), ["27 characters is over the limit"]),
        (lambda v: numpy.array([1]), ["not a Next"]),
        (lambda v: v["words"], ["raised KeyError"]),
        (hangs, ["did not return within 0.2 s", "12 characters"]),
        (None, ["not attempted"]),
    ],
)
def test_wrong_routers_say_what_to_fix(answer, phrases, request):
    verdict(lab04.check_router(limited(answer, request)), False, *phrases)


def test_the_intended_retry_policy_passes():
    check = lab04.check_retry_policy(RetryPolicy(max_attempts=4, initial_interval=0.2))
    verdict(check, True, "4 attempts")
    assert check.table.loc["fetch", "waits"] == "0.2, 0.4, 0.8"


def raises_lab_error(error):
    raise LabError("no")


near = partial(RetryPolicy, max_attempts=4, initial_interval=0.2)  # right but for what each case sets


@pytest.mark.parametrize(
    "policy, phrases",
    [
        (near(max_attempts=3), ["max_attempts=3 allows 2 retries"]),
        (near(backoff_factor=3), ["the waits were [0.2, 0.6, 1.8]"]),
        (RetryPolicy(max_attempts=4), ["the waits were [0.5, 1.0, 2.0]"]),
        (near(max_interval=0.5), ["max_interval=0.5 caps every wait"]),
        (near(retry_on=(Exception,)), ["a ValueError is retried"]),
        (near(retry_on=(ConnectionError,)), ["a TimeoutError is not"]),
        (near(retry_on=(OSError,)), ["a FileNotFoundError is retried"]),  # TimeoutError is an OSError too
        (near(retry_on=(TimeoutError, ConnectionResetError)), ["a ConnectionRefusedError is not retried"]),
        (
            near(retry_on=lambda e: isinstance(e, TimeoutError | ConnectionError) and "peer" not in str(e)),
            ["ConnectionResetError('reset by peer') was retried 0 time(s), not 3", "whatever its message"],
        ),
        # found only by asking about every built-in exception
        (
            near(retry_on=(TimeoutError, ConnectionResetError, ConnectionRefusedError)),
            ["a ConnectionError is not"],
        ),
        (
            near(
                retry_on=lambda e: (
                    isinstance(e, OSError) and not isinstance(e, FileNotFoundError | PermissionError)
                )
            ),
            ["an OSError is retried"],
        ),
        # right on the type, but reading the message too: asked with the other side's words
        (
            near(retry_on=lambda e: isinstance(e, TimeoutError | ConnectionError) or "timed out" in str(e)),
            ["a ValueError is retried"],
        ),
        (
            near(retry_on=lambda e: isinstance(e, TimeoutError | ConnectionError) and "bad" not in str(e)),
            ["a TimeoutError is not retried"],
        ),
        (near(retry_on=raises_lab_error), ["raised LabError"]),
        (near(retry_on=hangs), ["within 0.2 s"]),
        ("four", ["expected a RetryPolicy"]),
        (None, ["not attempted"]),
    ],
)
def test_wrong_retry_policies_say_what_to_fix(policy, phrases, request):
    limited(getattr(policy, "retry_on", None), request)  # a hanging retry_on: short_limit, else 3 s
    verdict(lab04.check_retry_policy(policy), False, *phrases)


RUNS = {"fetch": 1, "parse": 2, "audit": 1, "summarize": 2, "index": 2, "check": 2, "publish": 1}


def test_the_goto_runs_answer_passes_and_is_what_the_scheduler_does():
    verdict(lab04.check_goto_runs(dict(RUNS)), True, "re-ran it and all that depends on it")
    assert lab04.goto_graph().run().visits == RUNS  # the real clock gives the same counts


@pytest.mark.parametrize(
    "answer, phrases",
    [
        ({**RUNS, "index": 1}, ["1 is not how often index runs: it depends on parse"]),
        ({**RUNS, "fetch": 2}, ["2 is not how often fetch runs: it is not parse and does not depend on it"]),
        ({**RUNS, "publish": 2}, ["2 is not how often publish runs: it waits for check"]),
        ({**RUNS, "parse": 1}, ["it is the Goto's target"]),
        ({**RUNS, "fetch": "1"}, ["whole number (an int), not '1' (str)"]),
        ({**RUNS, "fetch": 10**400}, ["count from 0 to 1000"]),
        ({"fetch": 1}, ["one count per job"]),
        ({job.capitalize(): n for job, n in RUNS.items()}, ["no job is named 'Fetch', 'Parse', 'Audit'"]),
        (dict.fromkeys(RUNS), ["not attempted"]),
        # round 10: three counts given and four None read "not attempted yet", as the cell as shipped
        ({**dict.fromkeys(RUNS), "fetch": 1, "parse": 2}, ["no count yet for audit,", "replace each None"]),
    ],
)
def test_wrong_goto_runs_say_what_to_fix(answer, phrases):
    verdict(lab04.check_goto_runs(answer), False, *phrases)


def test_the_worst_case_answer_passes_and_is_computed():
    for right in (12, numpy.int64(12), 12.0):  # a count as pandas gives it, with nothing after the point
        verdict(lab04.check_worst_case(right), True, "called 12 times", "dead_letter")
    for visits, attempts in ((1, 1), (3, 2), (5, 4)):
        assert lab04.worst_case_run(visits, attempts).attempts["revise"] == visits * attempts


@pytest.mark.parametrize(
    "answer, phrase",
    [
        (4, "counts the visits only"),
        (3, "tries of one visit"),
        (7, "not added"),
        (15, "counts runs with the first included"),
        (99, "count the runs"),
        (12.5, "whole number"),
        (None, "not attempted"),
    ],
)
def test_wrong_worst_cases_say_what_to_fix(answer, phrase):
    verdict(lab04.check_worst_case(answer), False, phrase)


ODD = [None, ..., 12, 10**5000, float("nan"), "x" * 10**5, b"y", [1, "a"], {"a": 1}, numpy.zeros((2, 2))]
ODD_FUNCTIONS = [
    lambda *a: None,
    lambda *a: numpy.array([1, 2]),
    lambda *a: 1 / 0,
    lambda *a: time.sleep(1.5),
]


@pytest.mark.parametrize("name", [name for name in lab04.__all__ if name.startswith("check_")])
def test_every_checker_answers_odd_answers_with_its_own_verdict(short_limit, name):
    for answer in [*ODD, *ODD_FUNCTIONS]:
        own_verdict(getattr(lab04, name)(answer))


def test_every_shipped_ready_case_is_what_ready_after_returns():
    for index, case in enumerate(lab04._cases()["ready_cases"]):
        assert ready_after(*lab04._arguments(case)) == case["ready"], f"ready case {index}"
