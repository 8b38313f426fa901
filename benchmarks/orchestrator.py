"""Lab 04's ready step stays linear where a rescan is quadratic: both run in labkit's scheduler.

    .venv/bin/python benchmarks/orchestrator.py [--repeat R] [--quick]

1. Chains of 1,000, 3,000 and 10,000 no-op async jobs (each needs the one before), run by
   labkit's scheduler twice: with its ready step, `ready_after` (count the finished job off its
   dependents: O(jobs + edges) in a run), and with a rescan step that looks at every job after
   each completion, as a polling loop does (on a chain, n completions × n jobs). Three times
   the jobs should cost the first about 3x and the rescan about 9x; each line prints both and
   the ratio rescan / counting.
2. 8 independent jobs that each wait 0.1 s, max_concurrency 8: wall time against the longest job.

Times are CPU seconds of this thread, best of R runs (default 3; the rescan once per size).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import platform
import time
from collections.abc import Callable
from typing import Any

from labkit.routing import Context, Graph
from labkit.routing.scheduler import ready_after, run_plan_sync


async def noop(ctx: Context) -> None:
    return None


def rescan_ready(finished, dependents, waiting, states):
    """The polling baseline: count as ready_after does, then look at every job for one at zero."""
    for job in dependents[finished]:
        waiting[job] -= 1
    return [job for job in waiting if waiting[job] == 0 and states[job] == "pending"]


def chain_graph(n: int) -> Graph:
    graph = Graph().job("j0", noop)
    for i in range(1, n):
        graph.job(f"j{i}", noop, deps=[f"j{i - 1}"])
    return graph


def cpu_seconds(run: Callable[[], Any]) -> float:
    gc.collect()
    start = time.thread_time()
    run()
    return time.thread_time() - start


def run_chain(graph: Graph, step: Callable[..., list[str]]) -> None:
    result = run_plan_sync(graph.validate(), max_concurrency=8, ready=step)
    assert result.status == "completed" and len(result.events) == 2 * len(graph.jobs)


def chains(sizes: tuple[int, ...], repeat: int) -> None:
    print(f"\nchains of no-op async jobs in labkit's scheduler (CPU seconds; counting best of {repeat})")
    print(f"  {'jobs':>6}  {'counting':>9}  {'growth':>6}  {'rescan':>8}  {'growth':>6}  rescan / counting")
    rows: list[tuple[float, float]] = []
    for n in sizes:
        graph = chain_graph(n)
        mine = min(cpu_seconds(lambda g=graph: run_chain(g, ready_after)) for _ in range(repeat))
        theirs = cpu_seconds(lambda g=graph: run_chain(g, rescan_ready))
        growth = (f"x{mine / rows[-1][0]:.1f}", f"x{theirs / rows[-1][1]:.1f}") if rows else ("", "")
        print(
            f"  {n:>6,}  {mine:8.3f}s  {growth[0]:>6}  {theirs:7.3f}s  {growth[1]:>6}  {theirs / mine:,.1f}x"
        )
        rows.append((mine, theirs))
    scale = sizes[-1] / sizes[0]
    (mine_1, theirs_1), (mine_n, theirs_n) = rows[0], rows[-1]
    print(
        f"  {sizes[0]:,} -> {sizes[-1]:,} jobs (x{scale:.0f}): counting x{mine_n / mine_1:.1f}, rescan "
        f"x{theirs_n / theirs_1:.0f} (linear: x{scale:.0f}, quadratic: x{scale**2:.0f})"
    )


def overlap(repeat: int, jobs: int = 8, seconds: float = 0.1) -> None:
    async def wait(ctx: Context) -> None:
        await asyncio.sleep(seconds)

    graph = Graph()
    for i in range(jobs):
        graph.job(f"w{i}", wait)
    walls = []
    for _ in range(repeat):  # real sleeps: wall time is the measure here
        start = time.perf_counter()
        graph.run(max_concurrency=jobs)
        walls.append(time.perf_counter() - start)
    wall = min(walls)
    print(f"\n{jobs} independent jobs of {seconds} s each, max_concurrency {jobs} (wall, best of {repeat})")
    print(
        f"  {wall:.3f} s against the longest job's {seconds} s (x{wall / seconds:.2f}); "
        f"one at a time would take {jobs * seconds:.1f} s"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3, metavar="R", help="runs per size, best kept (3)")
    parser.add_argument("--quick", action="store_true", help="chains of 500, 1,500 and 5,000 jobs")
    args = parser.parse_args(argv)
    print(
        f"Python {platform.python_version()} ({platform.python_implementation()}), {platform.machine()}, "
        f"{os.cpu_count()} CPUs"
    )
    chains((500, 1_500, 5_000) if args.quick else (1_000, 3_000, 10_000), args.repeat)
    overlap(args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
