"""Lab 04's scripted experiments, shared by the notebook and `labkit routing`: graphs with one mistake
each that validation refuses, the fan-out graph at several max_concurrency (real sleeps), flaky jobs to
retry, the review loop with and without feedback, and Next.Stop on a cache hit. The reviser is a rule,
not a model (see `model_reviser`).
"""

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pandas as pd

from labkit.routing.clock import FakeClock
from labkit.routing.errors import GraphError, InvalidInput
from labkit.routing.graph import Graph
from labkit.routing.plan import Context
from labkit.routing.result import RunResult
from labkit.routing.retry import RetryPolicy
from labkit.routing.route import Next

LIMIT = 26  # characters: the limit of harness-rs's route.rs example, so figures compare
DRAFT = "Search is now much faster everywhere you look"
_FILLER = ("is", "you", "look")  # what the reviser always drops: 45 -> 33 characters
_EXPENDABLE = ("much", "now", "faster")  # what it cuts next, one word per revision, when told to
LOOP_SECONDS = {"draft": 1.0, "revise": 0.6, "review": 0.1, "publish": 0.3}  # virtual, for the chart


# -- validation ---------------------------------------------------------------------------------

# The broken graphs of notebook 04, one mistake each: the jobs (id, deps) and a route (job, targets).
_PIPELINE = [("draft", []), ("revise", ["draft"]), ("review", ["revise"]), ("publish", ["review"])]
_BROKEN = {
    "duplicate id": ([("draft", []), ("draft", [])], None),
    "unknown dependency": ([("draft", []), ("revise", ["draft"]), ("review", ["revize"])], None),
    "dependency cycle": ([("draft", []), ("review", ["draft", "revise"]), ("revise", ["review"])], None),
    "route on an unknown job": (_PIPELINE, ("reviw", ["revise"])),
    "route to an unknown target": (_PIPELINE, ("review", ["revize"])),
    "route forward, not back": (_PIPELINE, ("review", ["publish"])),
}


def validation_experiment() -> dict[str, str]:
    """Each of notebook 04's broken graphs (its mistake: the message `validate()` raises), built from
    jobs that do nothing and a router that always continues: the refusal is the graph's, not a job's.
    A graph `validate()` accepts would have no entry."""
    errors = {}
    for mistake, (jobs, route) in _BROKEN.items():
        graph = Graph()
        for job, deps in jobs:
            graph.job(job, lambda ctx: None, deps=deps)
        if route is not None:
            graph.route(route[0], lambda verdict: Next.Continue, targets=route[1])
        try:
            graph.validate()
        except GraphError as error:
            errors[mistake] = str(error)
    return errors


# -- sequential against parallel ------------------------------------------------------------

FETCH_SECONDS = {"fetch_a": 0.04, "fetch_b": 0.08, "fetch_c": 0.12, "fetch_d": 0.16}
_EDGE_SECONDS = {"plan": 0.02, "merge": 0.02}


def fan_graph() -> Graph:
    """plan → fetch_* (independent) → merge; each job waits its seconds with asyncio.sleep."""

    def waits(seconds: float) -> Callable[[Context], Any]:
        async def job(ctx: Context) -> float:
            await asyncio.sleep(seconds)
            return seconds

        return job

    graph = Graph().job("plan", waits(_EDGE_SECONDS["plan"]))
    for name, seconds in FETCH_SECONDS.items():
        graph.job(name, waits(seconds), deps=["plan"])
    return graph.job("merge", waits(_EDGE_SECONDS["merge"]), deps=list(FETCH_SECONDS))


def parallel_experiment(max_concurrency: int | None = None) -> tuple[pd.DataFrame, dict[str, RunResult]]:
    """`fan_graph` one job at a time, then with every fetch in flight at once, and, given
    `max_concurrency`, with that many slots. Expected: the fetches packed greedily into the slots;
    overhead is the measured wall time minus the expected one (real time, so it varies)."""
    modes = {"sequential": 1, "parallel": len(FETCH_SECONDS)}
    if max_concurrency is not None:
        modes[f"max_concurrency={max_concurrency}"] = max_concurrency
    graph, rows, runs = fan_graph(), [], {}
    for mode, limit in modes.items():
        runs[mode] = run = graph.run(max_concurrency=limit)  # refuses a limit that is not an int >= 1
        slots = [0.0] * limit
        for seconds in FETCH_SECONDS.values():  # declaration order, each to the slot that frees first
            slots[slots.index(min(slots))] += seconds
        expected = max(slots) + sum(_EDGE_SECONDS.values())
        overhead = (run.elapsed - expected) * 1000
        rows.append((mode, limit, round(expected, 3), round(run.elapsed, 3), round(overhead, 1)))
    columns = ["mode", "max_concurrency", "expected_s", "wall_s", "overhead_ms"]
    return pd.DataFrame(rows, columns=columns).set_index("mode"), runs


# -- retries ----------------------------------------------------------------------------------


def flaky(failures: int, error: BaseException) -> Callable[[Context], str]:
    """A job that raises `error` on its first `failures` attempts, then returns 'page'."""

    def job(ctx: Context) -> str:
        if ctx.attempt <= failures:
            raise error
        return "page"

    return job


RETRY_CASES: dict[str, tuple[int, BaseException]] = {
    "transient (fails twice)": (2, ConnectionError("provider unreachable")),
    "persistent (fails always)": (99, ConnectionError("provider unreachable")),
    "invalid input": (99, InvalidInput("no page named 'stagin'")),
}


def retry_graph(job: Callable[[Context], Any], policy: RetryPolicy) -> Graph:
    """fetch (with `policy`) → summarize, and an independent audit job beside them."""
    return (
        Graph()
        .job("fetch", job, retry=policy)
        .job("summarize", lambda ctx: f"summary of {ctx.input}", deps=["fetch"])
        .job("audit", lambda ctx: "logged")
    )


def retry_experiment() -> pd.DataFrame:
    """Each of RETRY_CASES in `retry_graph` under 3 attempts, 0.5 s doubling, every Exception retryable
    (so the invalid input shows the rule, not the filter), on a FakeClock, as notebook 04 runs them: a row
    per case with the run's status, fetch's attempts, the waits slept and the other jobs' states."""
    policy, rows = RetryPolicy(max_attempts=3, initial_interval=0.5, retry_on=(Exception,)), {}
    for case, (failures, error) in RETRY_CASES.items():
        clock = FakeClock()
        run = retry_graph(flaky(failures, error), policy).run(clock=clock)
        waits = ", ".join(f"{s:g}" for s in clock.sleeps) or "-"
        rows[case] = [
            run.status,
            run.attempts["fetch"],
            waits,
            *(str(run.states[j]) for j in ("summarize", "audit")),
        ]
    columns = ["status", "fetch attempts", "waits (s)", "summarize", "audit"]
    return pd.DataFrame.from_dict(rows, orient="index", columns=columns).rename_axis("case")


# -- the review loop --------------------------------------------------------------------------


@dataclass
class Reviser:
    """The scripted reviser: told nothing, it drops _FILLER from the draft (33 characters, every
    time); told why, it cuts one more _EXPENDABLE word from its previous version."""

    history: list[str] = field(default_factory=list)

    def __call__(self, ctx: Context) -> str:
        if ctx.feedback is None or ctx.previous is None:
            text = " ".join(w for w in ctx.inputs["draft"].split() if w not in _FILLER)
        else:
            words = ctx.previous.split()
            cut = next((w for w in _EXPENDABLE if w in words), None)
            text = " ".join(w for w in words if w != cut)
        self.history.append(text)
        return text


@dataclass
class WordCutter:
    """The model reviser's scripted baseline: cut the last word every visit, whatever it is told
    (a deletion with a word cut: admissible at the model's tightest control, L2 with min_cut=1)."""

    history: list[str] = field(default_factory=list)

    def __call__(self, ctx: Context) -> str:
        words = (ctx.previous if ctx.visit > 1 and ctx.previous else ctx.inputs["draft"]).split()
        text = " ".join(words[:-1]) if len(words) > 1 else " ".join(words)
        self.history.append(text)
        return text


def cutter_experiment(max_visits: int = 5, limit: int = LIMIT) -> tuple[pd.DataFrame, dict[str, WordCutter]]:
    """The loop with a `WordCutter`, without and with feedback: a summary row each, and the cutters."""
    cutters = {name: WordCutter() for name in FEEDBACK_ROUTERS}
    return compare_revisers(cutters, max_visits, limit)[1], cutters


def within_limit(verdict, limit=LIMIT):
    """Continue within `limit` characters; otherwise back to revise, saying why."""
    if verdict["chars"] <= limit:
        return Next.Continue
    return Next.back_to_with("revise", f"{verdict['chars']} characters, limit is {limit}")


def without_feedback(verdict, limit=LIMIT):
    """The same criterion, sent back without a reason."""
    return Next.Continue if verdict["chars"] <= limit else Next.back_to("revise")


# Told nothing, or why.
FEEDBACK_ROUTERS = {"without feedback": without_feedback, "with feedback": within_limit}


def _timed(fn: Callable[[Context], Any], seconds: float | None) -> Callable[[Context], Any]:
    if not seconds:
        return fn

    async def job(ctx: Context) -> Any:
        await ctx.clock.sleep(seconds)  # virtual seconds on a FakeClock: a picture of the loop
        return fn(ctx)

    return job


def loop_graph(
    *,
    router: Callable[[Any], Any] = within_limit,
    reviser: Callable[[Context], str] | None = None,
    seconds: Mapping[str, float] | None = None,
) -> tuple[Graph, Callable[[Context], str]]:
    """draft → revise → review → publish, `router` routing review back to revise; `reviser` defaults
    to a fresh Reviser, `seconds` gives jobs virtual durations (a FakeClock timeline). Returns the
    graph and the reviser."""
    seconds = seconds or {}
    reviser = Reviser() if reviser is None else reviser
    measure = lambda ctx: {"text": ctx.input, "chars": len(ctx.input)}  # noqa: E731
    graph = (
        Graph()
        .job("draft", _timed(lambda ctx: DRAFT, seconds.get("draft")))
        .job("revise", _timed(reviser, seconds.get("revise")), deps=["draft"])
        .job("review", _timed(measure, seconds.get("review")), deps=["revise"])
        .route("review", router, targets=["revise"])
        .job("publish", _timed(lambda ctx: ctx.input["text"], seconds.get("publish")), deps=["review"])
    )
    return graph, reviser


def compare_revisers(
    revisers: Mapping[str, Callable[[Context], str]], max_visits: int = 5, limit: int = LIMIT
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, RunResult]]:
    """The review loop once per router of FEEDBACK_ROUTERS, each with its reviser (one with a `history`):
    the characters of each revision (`visit_table`), a summary row each (`summary_row`), the runs."""
    lengths, rows, runs = {}, [], {}
    for name, reviser in revisers.items():
        graph, _ = loop_graph(router=partial(FEEDBACK_ROUTERS[name], limit=limit), reviser=reviser)
        runs[name] = result = graph.run(max_visits=max_visits, clock=FakeClock())
        lengths[name] = [len(text) for text in reviser.history]
        rows.append(summary_row(name, result))
    return visit_table(lengths), pd.DataFrame(rows).set_index("variant"), runs


def summary_row(variant: str, result: RunResult) -> dict[str, Any]:
    """One variant of a loop run: status, runs of revise and review, publish's state and output."""
    return {
        "variant": variant,
        "status": result.status,
        "revise runs": result.visits["revise"],
        "review runs": result.visits["review"],
        "publish": str(result.states["publish"]),
        "published": result.results.get("publish", "-"),
    }


def visit_table(lengths: Mapping[str, list[int]]) -> pd.DataFrame:
    """Characters per revise visit, one column per variant, "-" where a variant stopped earlier
    (strings, so a shorter column prints "-", not NaN)."""
    table = pd.DataFrame({name: pd.Series(map(str, v), dtype=object) for name, v in lengths.items()})
    return table.fillna("-").set_axis(pd.RangeIndex(1, len(table) + 1, name="revise visit"))


# -- Next.Stop ----------------------------------------------------------------------------


def cache_stop_experiment(hit: bool = True) -> RunResult:
    """lookup → check (Stop on a cache hit) → compute → store: a hit skips the expensive half."""
    graph = (
        Graph()
        .job("lookup", lambda ctx: "cached answer" if hit else None)
        .job("check", lambda ctx: ctx.input is not None, deps=["lookup"])
        .job("compute", lambda ctx: "fresh answer", deps=["check"])
        .job("store", lambda ctx: None, deps=["compute"])
    )
    graph.route("check", lambda found: Next.Stop if found else Next.Continue)
    return graph.run(clock=FakeClock())
