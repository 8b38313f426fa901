"""Differential check: this scheduler against the one committed at REV, on random graphs.

    .venv/bin/python benchmarks/scheduler_equivalence.py --against main [--examples 1000]

A change made for speed must not change what a run does. This generates random graphs with
the property test's strategy (tests/test_orchestrator_properties.py: random DAGs, declaration
orders, transient and invalid faults, retry policies, routers answering Continue, Goto, Stop
or nonsense, concurrency and visit caps), gives each async job a random pattern of awaits,
some `asyncio.sleep(0)` and some sleeps on the run's FakeClock (which move its time), runs
every graph under both schedulers, and compares everything a run returns: status, reason,
states, visits, attempts, results, errors, and every event with its FakeClock time, plus how
often each job's function was called. Prints the number of scenarios and of differences,
and the first differing event of the first two; exit status 1 if any differ.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labkit.routing import Context, FakeClock, Graph, InvalidInput, Next, RetryPolicy
from labkit.routing import scheduler as current

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks")]
from orchestrator import scheduler_at  # noqa: E402 - benchmarks/ is on the path only now
from test_orchestrator_properties import scenarios  # noqa: E402 - so is tests/

SLEEPS = st.lists(st.lists(st.sampled_from([0, 0, 0.25, 0.5, 1.0]), min_size=1, max_size=3),
                  min_size=1, max_size=4)


def build(scenario: dict, sleeps: list[list[float]]) -> tuple[Graph, Counter[str]]:
    """The property test's graph, its async jobs awaiting per `sleeps` (0: asyncio.sleep(0))."""
    calls: Counter[str] = Counter()
    jobs, graph = scenario["jobs"], Graph()

    def make_job(name: str, spec: dict, pattern: list[float]) -> Any:
        def outcome(ctx: Context) -> tuple[str, int]:
            fault = spec["faults"][calls[name] % len(spec["faults"])]
            calls[name] += 1
            if fault == "transient":
                raise ConnectionError("transient")
            if fault == "invalid":
                raise InvalidInput("invalid")
            return name, ctx.visit

        if not spec["async"]:
            return outcome

        async def job(ctx: Context) -> tuple[str, int]:
            for k in range(spec["yields"]):
                wait = pattern[k % len(pattern)]
                await (ctx.clock.sleep(wait) if wait else asyncio.sleep(0))
            return outcome(ctx)

        return job

    def make_router(route: dict) -> Any:
        seen = [0]
        names = [f"j{t}" for t in route["targets"]]
        outside = [f"j{k}" for k in range(len(jobs)) if f"j{k}" not in names]

        def router(result: object) -> object:
            n = seen[0]
            seen[0] += 1
            kind = route["script"][n % len(route["script"])]
            pick = route["picks"][n % len(route["picks"])]
            if kind in ("continue", "stop", "none"):
                return {"continue": Next.Continue, "stop": Next.Stop, "none": None}[kind]
            if kind == "undeclared":
                return Next.back_to(outside[pick % len(outside)]) if outside else Next.Continue
            target = names[pick % len(names)]
            return Next.back_to_with(target, "again") if kind == "goto+" else Next.back_to(target)

        return router

    for i in scenario["order"]:
        spec = jobs[i]
        retry = spec["attempts"] and RetryPolicy(max_attempts=spec["attempts"], initial_interval=0.1)
        graph.job(f"j{i}", make_job(f"j{i}", spec, sleeps[i % len(sleeps)]),
                  deps=[f"j{d}" for d in spec["deps"]], retry=retry)
    for i, route in scenario["routes"].items():
        graph.route(f"j{i}", make_router(route), targets=[f"j{t}" for t in route["targets"]])
    return graph, calls


def everything(module: Any, scenario: dict, sleeps: list[list[float]]) -> tuple:
    graph, calls = build(scenario, sleeps)
    result = module.run_plan_sync(graph.validate(), max_concurrency=scenario["max_concurrency"],
                                  max_visits=scenario["max_visits"], clock=FakeClock())
    events = [(e.time, e.job, e.old, e.new, e.visit, e.attempt, e.note) for e in result.events]
    return (result.status, result.reason, dict(result.states), dict(result.visits), dict(result.attempts),
            dict(result.results), dict(result.errors), result.stopped_by, dict(calls), events)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", required=True, metavar="REV", help="git revision to compare with")
    parser.add_argument("--examples", type=int, default=1000, metavar="N", help="random scenarios (1000)")
    args = parser.parse_args(argv)
    other = scheduler_at(args.against)
    differ: list[tuple[tuple, tuple]] = []
    count = [0]

    @settings(max_examples=args.examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(scenarios(), SLEEPS)
    def compare(scenario: dict, sleeps: list[list[float]]) -> None:
        count[0] += 1
        theirs, ours = everything(other, scenario, sleeps), everything(current, scenario, sleeps)
        if theirs != ours:
            differ.append((theirs, ours))

    compare()
    print(f"{count[0]} random scenarios, {len(differ)} differ from {args.against}")
    for theirs, ours in differ[:2]:
        for k, (a, b) in enumerate(zip(theirs[-1], ours[-1], strict=False)):
            if a != b:
                print(f"  first differing event, #{k}:\n    {args.against}: {a}\n    this: {b}")
                break
        else:
            print(f"  {args.against}: {theirs[:2]}\n  this: {ours[:2]}")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
