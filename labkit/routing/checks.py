"""Lab 04's build-it cells and exercises, each checked on hidden cases and in labkit's scheduler.

Build it: `check_ready(my_ready)`, the scheduler's ready step (`scheduler.ready_after`), and
`check_router(my_router)`, the review loop's router. Exercises, each answered by running the
real scheduler on a fake clock: `check_retry_policy`, `check_goto_runs`, `check_worst_case`.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from labkit.core.answers import Recorded, shown
from labkit.core.check import (
    Check,
    Raised,
    TimedOut,
    call,
    crashed,
    fail,
    not_a_function,
    time_limit,
    unanswered,
)
from labkit.core.verdicts import exercise
from labkit.routing.clock import FakeClock
from labkit.routing.experiments import DRAFT, LIMIT, Reviser, flaky, loop_graph, retry_graph
from labkit.routing.graph import Graph
from labkit.routing.plan import Context
from labkit.routing.result import RunResult
from labkit.routing.retry import RetryPolicy
from labkit.routing.route import Next
from labkit.routing.scheduler import ready_after, run_plan_sync

__all__ = [
    "check_goto_runs",
    "check_ready",
    "check_retry_policy",
    "check_router",
    "check_worst_case",
    "goto_graph",
    "worst_case_run",
]

# -- Build it, part 1: the ready step ------------------------------------------------------------

_CHAIN = {"a": [], "b": ["a"]}
_FAN_IN = {"a": [], "b": [], "c": ["a", "b"]}
_ZMA = {"root": [], "z": ["root"], "m": ["root"], "a": ["root"]}  # dependents declared z, m, a
_OTHER_STATES = ("running", "retrying", "failed", "dead_letter", "cancelled")  # not pending, not completed
# The graphs run on the scheduler with the learner's step: {job: deps}, in declaration order.
_GRAPHS = {
    "diamond": {"fetch": [], "parse": ["fetch"], "stats": ["fetch"], "report": ["parse", "stats"]},
    "chain": {"a": [], "b": ["a"], "c": ["b"], "d": ["c"]},
    "fan-out/fan-in": {"start": [], **dict.fromkeys("wxyz", ["start"]), "join": list("wxyz")},
}
# (when, the job that just completed, {job: deps}, the states that are not "pending").
_READY_CASES = [
    ("a completed and b needs only a", "a", _CHAIN, {}),
    ("fetch completed and parse, stats need only fetch (a diamond)", "fetch", _GRAPHS["diamond"], {}),
    ("its dependents are declared z, m, a", "root", _ZMA, {}),
    *(
        (f"c needs a and b, a completed and b is {s}", "a", _FAN_IN, {"b": s})
        for s in ("pending", *_OTHER_STATES)
    ),
    ("c needs a and b and b was counted already", "a", _FAN_IN, {"b": "completed"}),
    *(
        (f"b's last dependency completed but b is {s}", "a", _CHAIN, {"b": s})
        for s in (*_OTHER_STATES, "completed")
    ),
    ("c became ready earlier and waits for a slot", "a", {**_CHAIN, "c": []}, {}),
    ("the finished job has no dependents", "b", _CHAIN, {"a": "completed", "b": "completed"}),
]
_NAMES = "fetch parse load clean index score merge train report audit plot ship".split()  # for _made_up


def _arguments(finished: str, deps: Mapping[str, list[str]], others: Mapping[str, str]) -> tuple[Any, ...]:
    """The ready step's arguments in a case: `finished` completed, not yet counted off its dependents."""
    states = dict.fromkeys(deps, "pending") | {finished: "completed"} | dict(others)
    dependents = {job: [j for j, needs in deps.items() if job in needs] for job in deps}
    waiting = {j: sum(states[d] != "completed" or d == finished for d in needs) for j, needs in deps.items()}
    return finished, dependents, waiting, states


def _made_up(count: int, seed: int) -> list[dict[str, list[str]]]:
    """`count` graphs of 5 to 8 jobs drawn from `seed`, declared in a shuffled order."""
    rng = random.Random(seed)
    graphs = []
    for _ in range(count):
        names = rng.sample(_NAMES, rng.randint(5, 8))
        graphs.append({job: rng.sample(names[:i], rng.randint(0, min(3, i))) for i, job in enumerate(names)})
    return graphs


def _ready_problem(case: tuple[Any, ...], got: Any, waiting: dict[str, int]) -> str | None:
    """What is wrong with one answer of the ready step (its list and the counts it left), or None."""
    finished, dependents, want_waiting, states = _arguments(*case[1:])
    want = ready_after(finished, dependents, want_waiting, states)
    if not isinstance(got, list | tuple) or any(type(job) is not str for job in got):
        return f"your step returned {shown(got)}: return a list of job ids such as ['b', 'c']."
    releases = dependents[finished]
    for job, count in want_waiting.items():
        if waiting.get(job) != count:
            if job not in releases:
                return (
                    f"waiting[{job!r}] changed, but {job} does not depend on {finished}: count "
                    f"{finished} off dependents[{finished!r}] only."
                )
            return (
                f"waiting[{job!r}] is {shown(waiting.get(job))}, not {count}: {job} depends on "
                f"{finished}, so subtract 1 from its count."
            )
    for job in got:
        if job not in releases:
            return (
                f"{shown(job)} does not depend on {finished}: only a job that {finished} releases can "
                "become ready now (one whose count reached 0 earlier is queued already)."
            )
        if want_waiting[job]:
            return (
                f"{job} still waits for {want_waiting[job]} dependency(ies): it starts when its count is 0."
            )
        if states[job] != "pending":
            return f"{job} is {states[job]}: only a pending job may start (nothing starts twice)."
    if missing := [job for job in want if job not in got]:
        return f"{missing[0]} may start: its count reached 0 and it is pending."
    if list(got) != want:
        return f"return each ready job once, in the order of dependents[{finished!r}] ({want})."
    return None


def _ready_graphs() -> dict[str, Graph]:
    """_GRAPHS, three graphs made up here, and the review loop (its Gotos reset the counts)."""
    graphs = {}
    made_up = {f"made-up graph {n}": deps for n, deps in enumerate(_made_up(3, 4042), 1)}
    for name, deps in (_GRAPHS | made_up).items():
        graphs[name] = Graph()
        for job, needs in deps.items():
            graphs[name].job(job, lambda ctx: ctx.job, deps=needs)
    return graphs | {"review loop": loop_graph()[0]}


def _starts(result: RunResult) -> list[str]:
    return [e.job for e in result.events if e.new == "running" and e.old == "pending"]


@exercise("04", "ready")
def check_ready(my_ready: Callable[..., Any] | None) -> Check:
    """Build it: `my_ready(finished, dependents, waiting, states)` answers as `ready_after` on each
    boundary of the rule, then drives labkit's scheduler in its place over graphs shown and made up."""
    shape = "my_ready must be a function (finished, dependents, waiting, states) -> list of jobs"
    if (refused := not_a_function(my_ready, shape)) is not None:
        return refused
    for case in _READY_CASES:
        finished, dependents, waiting, states = _arguments(*case[1:])
        try:
            with time_limit():
                got = my_ready(finished, dependents, waiting, states)
        except (Exception, TimedOut) as error:  # noqa: BLE001 - the verdict names the learner's error
            return crashed(error, f"when {case[0]}")
        if (problem := _ready_problem(case, got, waiting)) is not None:
            return fail(f"When {case[0]}, {problem}")
    rows = []
    for name, graph in _ready_graphs().items():
        plan, yours = graph.validate(), Recorded(my_ready)
        want = run_plan_sync(plan, max_concurrency=2, clock=FakeClock())
        try:
            with time_limit():
                got = run_plan_sync(plan, max_concurrency=2, clock=FakeClock(), ready=yours)
        except (Exception, TimedOut) as error:  # noqa: BLE001 - the verdict says what went wrong
            if yours.error is not None or isinstance(error, TimedOut):
                return crashed(yours.error or error, f"while labkit's scheduler ran the {name} graph")
            return fail(f"Running the {name} graph with your step, the scheduler stopped: {error}.")
        if got.events != want.events:
            return fail(
                f"Running the {name} graph with your step, the scheduler started {shown(_starts(got))}; "
                f"with labkit's, {shown(_starts(want))}."
            )
        rows.append({"graph": name, "jobs": len(plan.jobs), "starts": len(_starts(got))})
    return Check(
        True,
        "your step drove labkit's scheduler through every graph exactly as ready_after does.",
        pd.DataFrame(rows).set_index("graph"),
    )


# -- Build it, part 2: the router ----------------------------------------------------------------


def _router_chars() -> list[int]:
    """The lengths the lab's text mentions, then lengths drawn here (printed nowhere)."""
    rng = random.Random(4026)
    return [12, LIMIT, LIMIT + 1, 45, *rng.sample(range(1, LIMIT), 3), *rng.sample(range(LIMIT + 2, 140), 4)]


def _says(feedback: str, number: int) -> bool:
    """Whether `feedback` states `number` as digits of its own (27 in "27 chars", not in "127")."""
    return re.search(rf"(?<!\d){number}(?!\d)", feedback) is not None


def _router_problem(decision: Any, chars: int) -> str | None:
    """What is wrong with the router's answer to a verdict of `chars` characters, or None."""
    if type(decision) is not Next:
        return (
            f"for a verdict of {chars} characters your router returned {shown(decision)}, not a Next: "
            "return Next.Continue or Next.back_to_with('revise', feedback)."
        )
    if chars <= LIMIT:
        if decision.kind != "continue":
            return (
                f"{chars} characters is within the limit of {LIMIT}, but your router returned "
                f"{shown(decision)}: it should be Next.Continue."
            )
        return None
    if decision.kind != "goto" or decision.job != "revise":
        return (
            f"{chars} characters is over the limit, but your router returned {shown(decision)}: "
            "send it back to 'revise'."
        )
    if decision.feedback is None:
        return (
            "over the limit your router goes back without feedback: a reviser not told why repeats "
            "itself. Use Next.back_to_with."
        )
    if not (_says(decision.feedback, chars) and _says(decision.feedback, LIMIT)):
        return (
            f"the feedback {shown(decision.feedback)} should state the count ({chars}) and the limit "
            f"({LIMIT}) as digits, e.g. '{chars} characters, limit {LIMIT}'."
        )
    return None


_STUBBORN = "Search now much faster everywhere"  # 33 characters, whatever it is told


def _loop(router: Callable[[Any], Any], reviser: Callable[..., str], which: str) -> RunResult | Check:
    """The review loop routed by the learner's router, within the time limit, or the verdict."""
    recorded = Recorded(router)
    where = f"while the review loop ran with the {which} reviser"
    try:
        with time_limit():
            result = loop_graph(router=recorded, reviser=reviser)[0].run(max_visits=5, clock=FakeClock())
    except TimedOut as error:
        return crashed(error, where)
    return crashed(recorded.error, where) if recorded.error is not None else result


@exercise("04", "router")
def check_router(my_router: Callable[[Any], Any] | None) -> Check:
    """Build it: `Next.Continue` within LIMIT characters, otherwise `Next.back_to_with("revise",
    feedback)` stating the count and the limit; then, in the review loop, the scripted reviser
    must publish and one that never improves must end as a dead letter."""
    if (refused := not_a_function(my_router, "a router is a function verdict -> Next")) is not None:
        return refused
    for chars in _router_chars():
        try:
            decision = call(my_router, {"text": "x" * chars, "chars": chars})
        except Raised as raised:
            return crashed(raised.error, f"on a verdict of {chars} characters")
        if (problem := _router_problem(decision, chars)) is not None:
            return fail(problem)
    runs = {}
    for which, reviser in (("scripted", Reviser()), ("never-improving", lambda ctx: _STUBBORN)):
        runs[which] = _loop(my_router, reviser, which)
        if isinstance(runs[which], Check):
            return runs[which]
    converging, stubborn = runs.values()
    if converging.status != "completed" or len(converging.results.get("publish", "")) > LIMIT:
        return fail(f"with the scripted reviser the loop ended {converging.status} ({converging.reason}).")
    if stubborn.status != "dead_letter" or stubborn.visits["publish"]:
        return fail(
            f"with a reviser that never improves the loop ended {stubborn.status}; it should end as a "
            "dead letter without publishing."
        )
    table = pd.DataFrame(
        {
            "status": [converging.status, stubborn.status],
            "revise runs": [converging.visits["revise"], stubborn.visits["revise"]],
            "published": [converging.results["publish"], "-"],
        },
        index=pd.Index(["scripted", "never improves"], name="reviser"),
    )
    return Check(
        True,
        "your router converges with the scripted reviser and dead-letters one that never improves.",
        table,
    )


# -- Exercise 1: a retry policy ------------------------------------------------------------------

_WANT_WAITS = [0.2, 0.4, 0.8]
_TRANSIENT = (TimeoutError, ConnectionError)
_ERRORS = (TimeoutError("slow"), ConnectionResetError("reset"), ValueError("bad"), KeyError("missing"))


@exercise("04", "retry_policy")
def check_retry_policy(policy: Any) -> Check:
    """Exercise 1: 3 retries after the first try, waits 0.2, 0.4, 0.8 s, transient errors only.
    Wrong waits are blamed on the setting that causes them (max_interval when only the cap is off)."""
    if unanswered(policy):
        return fail("not attempted yet: replace the None with a RetryPolicy(...) and run the cell again")
    if type(policy) is not RetryPolicy:
        return fail(f"expected a RetryPolicy(...), not {type(policy).__name__}.")
    if policy.max_attempts != 4:
        return fail(
            f"max_attempts={policy.max_attempts} allows {policy.max_attempts - 1} retries; it counts the "
            "first try, so 3 retries need 4."
        )
    for error in _ERRORS:
        kind = type(error).__name__
        try:
            retried = bool(call(policy.retryable, error))
        except Raised as raised:
            return crashed(raised.error, f"when retry_on was asked about a {kind}")
        if retried != isinstance(error, _TRANSIENT):
            if retried:
                return fail(
                    f"a {kind} is retried: repeating a bad call will not fix it. Keep retry_on to "
                    "connection errors and timeouts."
                )
            return fail(f"a {kind} is not retried, but it may pass on the next try.")
    clock = FakeClock()
    try:
        with time_limit():
            result = retry_graph(flaky(3, ConnectionResetError("reset by peer")), policy).run(clock=clock)
    except TimedOut as error:
        return crashed(error, "while the retried job ran")
    waits = [round(s, 6) for s in clock.sleeps]
    if waits != _WANT_WAITS:
        uncapped = [round(policy.initial_interval * policy.backoff_factor**n, 6) for n in range(3)]
        if uncapped == _WANT_WAITS:
            return fail(
                f"the waits were {waits}; expected {_WANT_WAITS}: max_interval={policy.max_interval:g} caps "
                f"every wait at {policy.max_interval:g} s, and the last must be {_WANT_WAITS[-1]:g}. Raise "
                "max_interval (or leave its default); initial_interval and backoff_factor are right."
            )
        return fail(
            f"the waits were {waits}; expected {_WANT_WAITS}: set initial_interval (the first wait) "
            "and backoff_factor (how each wait grows)."
        )
    table = result.table().loc[["fetch"]].assign(waits=", ".join(f"{s:g}" for s in waits))
    return Check(True, "4 attempts, waits 0.2, 0.4, 0.8 s, and only transient errors retried.", table)


# -- Exercise 2: what a Goto re-runs --------------------------------------------------------------

_GOTO_TARGET = "parse"
_MAX_COUNT = 1000  # no job of these graphs runs anywhere near this often


def goto_graph() -> Graph:
    """fetch → parse → (summarize, index) → check → publish, and audit beside parse; `check` sends
    the work back to `parse` on its first visit and continues on its second."""
    graph = Graph()
    graph.job("fetch", lambda ctx: "page")
    graph.job("parse", lambda ctx: "sections", deps=["fetch"])
    graph.job("audit", lambda ctx: "logged", deps=["fetch"])
    graph.job("summarize", lambda ctx: "summary", deps=["parse"])
    graph.job("index", lambda ctx: "index", deps=["parse"])
    graph.job("check", lambda ctx: ctx.visit, deps=["summarize", "index"])
    graph.route(
        "check",
        lambda visit: Next.back_to_with(_GOTO_TARGET, "summary too long") if visit == 1 else Next.Continue,
        targets=[_GOTO_TARGET],
    )
    graph.job("publish", lambda ctx: "published", deps=["check"])
    return graph


def _downstream(deps: Mapping[str, Sequence[str]], target: str) -> set[str]:
    found = {target}
    for job, needs in deps.items():  # declaration order lists a job after its dependencies
        if found.intersection(needs):
            found.add(job)
    return found


def _why(job: str, said: Any, runs: int, loop: set[str]) -> str:
    if job not in loop:
        reason = (
            f"it is not {_GOTO_TARGET} and does not depend on it, so a Goto to {_GOTO_TARGET} leaves it alone"
        )
    elif job == "publish":
        reason = "it waits for check, which sent the work back before publish could start, then continued"
    else:
        reason = "it is the Goto's target" if job == _GOTO_TARGET else f"it depends on {_GOTO_TARGET}"
        reason += ", and a Goto re-runs its target and what depends on it"
    return f"{job} ran {runs} time(s), not {said}: {reason}."


def _count_problem(value: Any, what: str) -> str | None:
    """Why `value` is not a count to compare (an exact int from 0 to _MAX_COUNT), or None."""
    if type(value) is not int:
        return f"{what} must be a whole number (an int), not {shown(value)} ({type(value).__name__})."
    if not 0 <= value <= _MAX_COUNT:
        return f"{what} must be a count from 0 to {_MAX_COUNT}, not {shown(value)}."
    return None


def _runs_problem(runs: Any, jobs: list[str]) -> str | None:
    """Why `runs` is not one count per job of `jobs`, or None."""
    if not isinstance(runs, dict) or set(runs) != set(jobs):
        return f"give a dict with one count per job: {', '.join(jobs)}."
    return next(filter(None, (_count_problem(runs[job], f"the count for {job}") for job in jobs)), None)


def _goto_payload(runs: Any) -> dict[str, int] | None:
    """The learner's counts as JSON data for `labkit submit`, or None if they are not counts per job."""
    jobs = [job.id for job in goto_graph().jobs]
    return None if _runs_problem(runs, jobs) else {job: runs[job] for job in jobs}


@exercise("04", "goto_runs", payload=_goto_payload)
def check_goto_runs(runs: Any) -> Check:
    """Exercise 2: `runs` maps each job of `goto_graph()` to how many times it runs (exact ints)."""
    graph = goto_graph()
    deps = {job.id: list(job.deps) for job in graph.jobs}
    if unanswered(runs) or (isinstance(runs, dict) and any(unanswered(v) for v in runs.values())):
        return fail("not attempted yet: replace each None with a number of runs and run the cell again")
    if (problem := _runs_problem(runs, list(deps))) is not None:
        return fail(problem)
    result, loop = graph.run(clock=FakeClock()), _downstream(deps, _GOTO_TARGET)
    for job in deps:
        if runs[job] != result.visits[job]:
            return fail(_why(job, runs[job], result.visits[job], loop))
    table = pd.DataFrame(
        {
            "you said": [runs[job] for job in deps],
            "runs": list(result.visits.values()),
            "downstream of parse": [job in loop for job in deps],
        },
        index=pd.Index(list(deps), name="job"),
    )
    return Check(True, "a Goto to parse re-ran it and all that depends on it; the rest ran once.", table)


# -- Exercise 3: the worst case ------------------------------------------------------------------


def worst_case_run(max_visits: int = 4, max_attempts: int = 3) -> RunResult:
    """A loop built to hit both caps: every visit of `revise` fails until its last attempt,
    and the review never accepts. `result.attempts["revise"]` counts every call of revise."""

    def revise(ctx: Context) -> str:
        if ctx.attempt < max_attempts:
            raise ConnectionError("provider unreachable")
        return DRAFT

    graph = Graph()
    graph.job("draft", lambda ctx: DRAFT)
    retry = RetryPolicy(max_attempts=max_attempts, initial_interval=0.1)
    graph.job("revise", revise, deps=["draft"], retry=retry)
    graph.job("review", lambda ctx: {"text": ctx.input, "chars": len(ctx.input)}, deps=["revise"])
    graph.route(
        "review",
        lambda verdict: Next.back_to_with("revise", f"{verdict['chars']} characters"),
        targets=["revise"],
    )
    graph.job("publish", lambda ctx: ctx.input["text"], deps=["review"])
    return graph.run(max_visits=max_visits, clock=FakeClock())


_WORST_CASE_HINTS = {
    4: "4 counts the visits only: each visit may make up to max_attempts tries.",
    3: "3 counts the tries of one visit: the loop may run the job up to max_visits times.",
    7: "the tries are not added to the visits: every visit gets its own max_attempts tries.",
    6: "the tries are not added to the visits: every visit gets its own max_attempts tries.",
    15: "max_visits counts runs with the first included, so 4 visits are 4 runs, not 5.",
}


@exercise("04", "worst_case")
def check_worst_case(calls: Any) -> Check:
    """Exercise 3: with max_visits=4 and max_attempts=3, the most calls of one job in one run."""
    if unanswered(calls):
        return fail("not attempted yet: replace the None with a number and run the cell again")
    if (problem := _count_problem(calls, "your answer")) is not None:
        return fail(problem)
    result = worst_case_run(4, 3)
    most = result.attempts["revise"]
    if calls != most:
        return fail(
            _WORST_CASE_HINTS.get(
                calls, f"{calls} is not it: count the runs of the job, then the tries in each run."
            )
        )
    return Check(
        True,
        f"{most} = max_visits × max_attempts: revise was called {most} times, then the loop "
        f"ended as {result.status}.",
        result.table().loc[["revise", "review"]],
    )
