"""Lab 04's build-it cells (`check_ready`, `check_router`) and exercises (`check_retry_policy`,
`check_goto_runs`, `check_worst_case`), each checked on hidden cases and in labkit's scheduler.
(serves: learner — a learner's code is buggy, not hostile)
"""

import builtins
import random
import re
from collections.abc import Callable, Iterator, Mapping
from functools import cache, partial
from http.client import RemoteDisconnected
from typing import Any

import pandas as pd

from labkit.core.answers import Recorded, shown, whole
from labkit.core.check import (
    CRASHES,
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
from labkit.core.fixtures import FIXTURES, load_json, read_json
from labkit.core.verdicts import exercise
from labkit.routing.clock import FakeClock
from labkit.routing.experiments import DRAFT, LIMIT, Reviser, flaky, loop_graph, retry_graph
from labkit.routing.graph import Graph
from labkit.routing.plan import Context, reach
from labkit.routing.result import RunResult
from labkit.routing.retry import RetryPolicy
from labkit.routing.route import Next
from labkit.routing.scheduler import ready_after, run_plan_sync
from labkit.routing.states import State

__all__ = [
    "check_goto_runs",
    "check_ready",
    "check_retry_policy",
    "check_router",
    "check_worst_case",
    "goto_graph",
    "worst_case_run",
]

# The hidden cases and the hints live in fixtures/routing/checks.json: each ready case states
# the jobs `ready_after` returns first (tests/routing checks that it does).
_CASES_FILE = FIXTURES / "routing" / "checks.json"
_SCHEMA = read_json(FIXTURES / "routing" / "checks_schema.json")  # what checks.json holds, by JSON Schema
_SCHEMA["$defs"]["state"]["enum"] = [state.value for state in State]  # the scheduler's states, defined once


@cache
def _cases() -> dict[str, Any]:
    """checks.json, validated by schema (serves: ours — shipped data). That each ready case is what
    `ready_after` returns is the course's own consistency, checked by tests/routing, not in every kernel."""
    return load_json(_CASES_FILE, _SCHEMA)


def _hint(part: str, name: str, **values: Any) -> str:
    return _cases()["hints"][part][name].format(**values)


# -- Build it, part 1: the ready step ------------------------------------------------------------


def _arguments(case: Mapping[str, Any]) -> tuple[Any, ...]:
    """The ready step's arguments in a case: `finished` completed, not yet counted off its dependents."""
    finished, deps = case["finished"], case["deps"]
    states = dict.fromkeys(deps, "pending") | {finished: "completed"} | case["states"]
    dependents = {job: [j for j, needs in deps.items() if job in needs] for job in deps}
    if "order" in case:  # a drawn case lists the finished job's dependents in an order of its own
        random.Random(case["order"]).shuffle(dependents[finished])
    waiting = {j: sum(states[d] != "completed" or d == finished for d in needs) for j, needs in deps.items()}
    return finished, dependents, waiting, states


def drawn_ready_cases(count: int = 150, seed: str = "ready") -> Iterator[dict[str, Any]]:
    """`count` ready cases over made-up graphs, the same on every machine: 2-7 jobs with names in no
    order, each needing some earlier ones, the finished job's dependents listed in an order of their own
    (not their declaration's), every other job in some state. A step that passes checks.json's named
    cases but breaks the rule elsewhere answers one of these differently from `ready_after`."""
    rng = random.Random(seed)
    for _ in range(count):
        jobs = rng.sample("abcdefghmnpqrsxyz", rng.randint(2, 7))
        deps = {job: rng.sample(jobs[:at], rng.randint(0, at)) for at, job in enumerate(jobs)}
        finished = rng.choice(jobs[:2])  # an early job, which more jobs need
        # A released job is pending, and any other job completed, two times in three (any state else):
        # a job is ready only then, so states drawn uniformly would seldom release two jobs at once.
        likely = {job: "pending" if finished in deps[job] else "completed" for job in jobs}  # ready if so
        others = [job for job in jobs if job != finished]
        states = {
            job: likely[job] if rng.random() < 2 / 3 else rng.choice(list(State)).value for job in others
        }
        when = f"the graph needs {deps}, {finished} completed and the others are {states} (a drawn case)"
        yield {"when": when, "finished": finished, "deps": deps, "states": states, "order": rng.random()}


def _ready_problem(case: Mapping[str, Any], got: Any, given: tuple[Any, ...]) -> str | None:
    """What is wrong with one answer of the ready step (its list, the counts it left, what else it
    changed of the arguments `given`), or None."""
    finished, dependents, want_waiting, states = _arguments(case)
    want = ready_after(finished, dependents, want_waiting, states)  # case["ready"]; counts want_waiting down
    hint = partial(_hint, "ready", finished=finished)
    _, given_dependents, waiting, given_states = given
    for name, value, was in (("dependents", given_dependents, dependents), ("states", given_states, states)):
        if value != was:
            return hint("changed", argument=name)
    if not isinstance(got, list | tuple) or any(type(job) is not str for job in got):
        return hint("not a list", got=shown(got))
    releases = dependents[finished]
    for job, count in want_waiting.items():
        if waiting.get(job) != count:
            if job not in releases:
                return hint("counted another job", job=job)
            return hint("miscounted", job=job, got=shown(waiting.get(job)), count=count)
    for job in got:
        if job not in releases:
            return hint("not released", got=shown(job))
        if want_waiting[job]:
            return hint("still waits", job=job, count=want_waiting[job])
        if states[job] != "pending":
            return hint("not pending", job=job, state=states[job])
    if missing := [job for job in want if job not in got]:
        return hint("missing", job=missing[0])
    if list(got) != want:
        return hint("order", want=want)
    return None


def _ready_graphs() -> dict[str, Graph]:
    """checks.json's graphs and the review loop (its Gotos reset the counts)."""
    graphs = {}
    for name, deps in _cases()["ready_graphs"].items():
        graphs[name] = Graph()
        for job, needs in deps.items():
            graphs[name].job(job, lambda ctx: ctx.job, deps=needs)
    return graphs | {"review loop": loop_graph()[0]}


def _starts(result: RunResult) -> list[str]:
    return [e.job for e in result.events if e.new == "running" and e.old == "pending"]


@exercise("04", "ready")
def check_ready(my_ready: Callable[..., Any] | None) -> Check:
    """Build it: `my_ready(finished, dependents, waiting, states)` answers as `ready_after` on each
    named boundary of the rule (checks.json) and on `drawn_ready_cases()`, changing only `waiting`; then
    it drives labkit's scheduler in its place over graphs shown and made up.
    Returns a Check: passed, with what held; else what to fix in a sentence or two (None: not attempted
    yet)."""
    shape = "my_ready must be a function (finished, dependents, waiting, states) -> list of jobs"
    if (refused := not_a_function(my_ready, shape)) is not None:
        return refused
    for case in (*_cases()["ready_cases"], *drawn_ready_cases()):
        given = _arguments(case)
        try:
            with time_limit():
                got = my_ready(*given)
        except (*CRASHES, TimedOut) as error:  # the verdict names the learner's error, a sys.exit() too
            return crashed(error, f"when {case['when']}")
        if (problem := _ready_problem(case, got, given)) is not None:
            return fail(f"When {case['when']}, {problem}")
    rows = []
    for name, graph in _ready_graphs().items():
        plan, yours = graph.validate(), Recorded(my_ready)
        want = run_plan_sync(plan, max_concurrency=2, clock=FakeClock())
        try:
            with time_limit():
                got = run_plan_sync(plan, max_concurrency=2, clock=FakeClock(), ready=yours)
        except (*CRASHES, TimedOut) as error:  # the verdict says what went wrong
            if yours.error is not None or isinstance(error, TimedOut):
                return crashed(yours.error or error, f"while labkit's scheduler ran the {name} graph")
            # The scheduler's own invariant fired, but the step it was handed is what broke it.
            said = str(error).removeprefix("scheduler bug: ")
            return fail(
                f"Running the {name} graph with your step, the scheduler stopped ({said}): your step "
                "released a job it should not have, or did not release one whose dependencies completed."
            )
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


def _states(feedback: str, chars: int) -> bool:
    """Whether `feedback` states the count and LIMIT as numbers of their own (27 in "27 chars", not in
    "127"), and the limit where it names one: a number that "limit", "max…", "at most", "up to" or
    "allowed" introduces ("limit 26", "limit is 26", "max: 26", "maximum length 26") is LIMIT ("26
    characters, limit is 45" swaps them), while a number that only follows such a word ("limit exceeded
    by 1", "26 max, you have 27") is not named."""
    numbers = {int(number) for number in re.findall(r"(?<!\d)\d+(?!\d)", feedback)}
    introduced = r"(?:limit|max\w*|at most|up to|allowed)(?:\s|:|=|\bis\b|\bof\b|\blength\b)*(\d+)"
    named = re.findall(introduced, feedback, re.IGNORECASE)
    return {chars, LIMIT} <= numbers and all(int(number) == LIMIT for number in named)


def _router_problem(decision: Any, chars: int) -> str | None:
    """What is wrong with the router's answer to a verdict of `chars` characters, or None."""
    hint = partial(_hint, "router", chars=chars, limit=LIMIT, got=shown(decision))
    if type(decision) is not Next:
        return hint("not a Next")
    if chars <= LIMIT:
        return None if decision.kind == "continue" else hint("within")
    if decision.kind != "goto" or decision.job != "revise":
        return hint("over")
    if decision.feedback is None:
        return hint("no feedback")
    if not _states(decision.feedback, chars):
        return hint("no digits", got=shown(decision.feedback))
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
    feedback)` stating the count and the limit, at every length from 0 to 3 * LIMIT; then, in the review
    loop, the scripted reviser must publish and one that never improves must end as a dead letter.
    Returns a Check: passed, with what held; else what to fix in a sentence or two (None: not attempted
    yet)."""
    if (refused := not_a_function(my_router, "a router is a function verdict -> Next")) is not None:
        return refused
    # Those the text mentions first, then some it does not, then every length up to three times LIMIT,
    # each also as texts of other characters the limit counts as one each: a space at both ends, an
    # accented letter (two bytes in UTF-8) and closing punctuation.
    plain = [(chars, "x" * chars) for chars in (*_cases()["router_chars"], *range(3 * LIMIT + 1))]
    other = [
        (chars, text)
        for chars in range(2, 3 * LIMIT + 1)
        for text in (f" {'x' * (chars - 2)} ", f"{'é' * (chars - 1)}!")
    ]
    for chars, text in (*plain, *other):
        try:
            decision = call(my_router, {"text": text, "chars": chars})
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
# Asked of retry_on in this order: the two the run raises, bad calls, then OSErrors that are no network fault.
_ERRORS = (
    TimeoutError("slow"),
    ConnectionResetError("reset"),
    ValueError("bad"),
    KeyError("missing"),
    ConnectionRefusedError("refused"),
    FileNotFoundError("gone"),
    PermissionError("denied"),
)
# Then every other built-in exception that takes a message (warnings, the Unicode errors and groups
# aside), and http.client's RemoteDisconnected: a ConnectionResetError by another name.
_ERRORS += tuple(
    kind("drawn")
    for kind in (*vars(builtins).values(), RemoteDisconnected)
    if isinstance(kind, type) and issubclass(kind, Exception) and kind not in {type(e) for e in _ERRORS}
    if not issubclass(kind, Warning | UnicodeError | ExceptionGroup)
)
# Then each again with the other side's words: only the type says whether an error is transient, so a
# retry_on that reads the message ("timed out", "reset") is asked about a ValueError that says them.
_ERRORS += tuple(
    type(error)("bad request" if isinstance(error, _TRANSIENT) else "timed out: connection reset, refused")
    for error in _ERRORS
)


@exercise("04", "retry_policy")
def check_retry_policy(policy: Any) -> Check:
    """Exercise 1: 3 retries after the first try, waits 0.2, 0.4, 0.8 s, transient errors only (asked of
    every built-in exception: a TimeoutError or ConnectionError, subclasses included, is transient).
    Wrong waits are blamed on the setting that causes them (max_interval when only the cap is off).
    Returns a Check: passed, with what held; else what to fix in a sentence or two (None: not attempted
    yet)."""
    if unanswered(policy):
        return fail("not attempted yet: replace the None with a RetryPolicy(...) and run the cell again")
    if type(policy) is not RetryPolicy:
        return fail(f"expected a RetryPolicy(...), not {type(policy).__name__}.")
    hint = partial(_hint, "retry_policy")
    if policy.max_attempts != 4:
        return fail(hint("attempts", attempts=policy.max_attempts, retries=policy.max_attempts - 1))
    for error in _ERRORS:
        kind = type(error).__name__
        article = "an" if kind[0] in "AEIOU" else "a"
        try:
            retried = bool(call(policy.retryable, error))
        except Raised as raised:
            return crashed(raised.error, f"when retry_on was asked about {article} {kind}")
        if retried != isinstance(error, _TRANSIENT):
            return fail(
                hint("retries a bad call" if retried else "skips a transient error", kind=kind, a=article)
            )
    clock = FakeClock()
    try:
        with time_limit():
            result = retry_graph(flaky(3, ConnectionResetError("reset by peer")), policy).run(clock=clock)
    except TimedOut as error:
        return crashed(error, "while the retried job ran")
    waits = [round(s, 6) for s in clock.sleeps]
    if len(waits) < len(_WANT_WAITS):  # retries stopped early: max_attempts is 4, so retry_on said no
        return fail(hint("stopped", retries=len(waits)))
    if waits != _WANT_WAITS:
        uncapped = [round(policy.initial_interval * policy.backoff_factor**n, 6) for n in range(3)]
        capped = uncapped == _WANT_WAITS  # only max_interval is off
        values = {"waits": waits, "want": _WANT_WAITS, "cap": policy.max_interval, "last": _WANT_WAITS[-1]}
        return fail(hint("capped" if capped else "waits", **values))
    table = result.table().loc[["fetch"]].assign(waits=", ".join(f"{s:g}" for s in waits))
    return Check(True, "4 attempts, waits 0.2, 0.4, 0.8 s, and only transient errors retried.", table)


# -- Exercise 2: what a Goto re-runs --------------------------------------------------------------

_GOTO_TARGET = "parse"
_MAX_COUNT = 1000  # no job of these graphs runs anywhere near this often


# Each job before check, with its result and what it needs.
_GOTO_JOBS = (
    ("fetch", "page", []),
    ("parse", "sections", ["fetch"]),
    ("audit", "logged", ["fetch"]),
    ("summarize", "summary", ["parse"]),
    ("index", "index", ["parse"]),
)


def goto_graph() -> Graph:
    """fetch → parse → (summarize, index) → check → publish, and audit beside parse; `check` sends
    the work back to `parse` on its first visit and continues on its second."""
    graph = Graph()
    for job, result, deps in _GOTO_JOBS:
        graph.job(job, lambda ctx, result=result: result, deps=deps)
    graph.job("check", lambda ctx: ctx.visit, deps=["summarize", "index"])
    graph.route(
        "check",
        lambda visit: Next.back_to_with(_GOTO_TARGET, "summary too long") if visit == 1 else Next.Continue,
        targets=[_GOTO_TARGET],
    )
    graph.job("publish", lambda ctx: "published", deps=["check"])
    return graph


def _why(job: str, said: Any, runs: int, loop: set[str]) -> str:
    """The hint for a wrong count of `job`: outside the Goto's `loop`, publish, its target or downstream."""
    reason = (
        "outside"
        if job not in loop
        else {"publish": "publish", _GOTO_TARGET: "target"}.get(job, "downstream")
    )
    return _hint("goto_runs", reason, job=job, said=said, runs=runs, target=_GOTO_TARGET)


def _count_problem(value: Any, what: str) -> str | None:
    """Why `value` is not a count to compare (an integer from 0 to _MAX_COUNT, numpy's too), or None."""
    if not whole(value):
        return f"{what} must be a whole number (an int), not {shown(value)} ({type(value).__name__})."
    if not 0 <= value <= _MAX_COUNT:
        return f"{what} must be a count from 0 to {_MAX_COUNT}, not {shown(value)}."
    return None


def _runs_problem(runs: Any, jobs: list[str]) -> str | None:
    """Why `runs` is not one count per job of `jobs`, or None."""
    if not isinstance(runs, dict) or set(runs) != set(jobs):
        unknown = [shown(key, 20) for key in runs if key not in jobs] if isinstance(runs, dict) else []
        named = f" (no job is named {', '.join(unknown[:3])})" if unknown else ""
        return f"give a dict with one count per job, named as declared: {', '.join(jobs)}{named}."
    return next(filter(None, (_count_problem(runs[job], f"the count for {job}") for job in jobs)), None)


def _goto_payload(runs: Any) -> dict[str, int] | None:
    """The learner's counts as JSON data for `labkit submit`, or None if they are not counts per job."""
    jobs = [job.id for job in goto_graph().jobs]
    return None if _runs_problem(runs, jobs) else {job: int(runs[job]) for job in jobs}


@exercise("04", "goto_runs", payload=_goto_payload)
def check_goto_runs(runs: Any) -> Check:
    """Exercise 2: `runs` maps each job of `goto_graph()` to how many times it runs (exact ints).
    Returns a Check: passed, with what held; else what to fix in a sentence or two (None: not attempted
    yet)."""
    graph = goto_graph()
    deps = {job.id: list(job.deps) for job in graph.jobs}
    left = [job for job, value in runs.items() if unanswered(value)] if isinstance(runs, dict) else []
    if unanswered(runs) or (left and len(left) == len(runs)):  # the cell as shipped
        return fail("not attempted yet: replace each None with a number of runs and run the cell again")
    if left:  # some counts given: say which are still to come
        return fail(
            f"no count yet for {', '.join(map(str, left))}: replace each None with its number of runs."
        )
    if (problem := _runs_problem(runs, list(deps))) is not None:
        return fail(problem)
    runs = {job: int(runs[job]) for job in deps}  # numpy's int64 as the int it is
    result, loop = graph.run(clock=FakeClock()), set(reach(_GOTO_TARGET, graph.validate().dependents))
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


@exercise("04", "worst_case")
def check_worst_case(calls: Any) -> Check:
    """Exercise 3: with max_visits=4 and max_attempts=3, the most calls of one job in one run.
    Returns a Check: passed, with what held; else what to fix in a sentence or two (None: not attempted
    yet)."""
    if unanswered(calls):
        return fail("not attempted yet: replace the None with a number and run the cell again")
    if (problem := _count_problem(calls, "your answer")) is not None:
        return fail(problem)
    calls = int(calls)  # numpy's int64 as the int it is
    result = worst_case_run(4, 3)
    most = result.attempts["revise"]
    if calls != most:
        hints = _cases()["hints"]["worst_case"]
        return fail(hints.get(str(calls), hints["other"]).format(calls=calls))
    return Check(
        True,
        f"{most} = max_visits × max_attempts: revise was called {most} times, then the loop "
        f"ended as {result.status}.",
        result.table().loc[["revise", "review"]],
    )
