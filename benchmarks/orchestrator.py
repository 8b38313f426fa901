"""Lab 04's scheduler stays linear where seed 004's rescan-every-step loop is quadratic.

    .venv/bin/python benchmarks/orchestrator.py [--repeat R] [--quick]

1. Chains of 1,000, 3,000 and 10,000 no-op async jobs (each needs the one before), run by
   `Graph.run` (validation included; dependency counts: a completion decrements its
   dependents' counts, O(jobs + edges) in all) and by *the seed loop*, written here from
   seed 004's description (7.11-7.15): rescan every task for "pending and all dependencies
   completed", run the ready ones, rescan again. On a chain each rescan finds one job, so
   the seed does n rescans of n tasks: n². Three times the jobs should cost ours about 3x
   the time and the seed about 9x; the line per size prints both growths and their ratio.
   The course notes measured 84 s for the seed's own classes on 10,000 jobs.
2. 8 independent jobs that each wait 0.1 s (asyncio.sleep), max_concurrency 8: wall time
   against the longest job, which is what parallel buys. Information, no goal.

A model decision costs about a second, so microseconds of scheduling per job are invisible
in the labs; what matters is the shape of the curve. Ours is the best of R runs (default 3),
the seed loop is run once per size (`--quick`: 500, 1,500 and 5,000 jobs). Times are CPU
seconds of this thread: everything runs on it, and unlike wall time CPU time does not grow
while the process waits for a core on a shared machine.
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


async def noop(ctx: Context | None) -> None:
    return None


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


def ours(graph: Graph) -> None:
    result = graph.run(max_concurrency=8)
    assert result.status == "completed" and len(result.events) == 2 * len(graph.jobs)


class Task:
    """A task as seed 004 kept it: an id, its dependencies' ids, a status string."""

    def __init__(self, task_id: str, deps: list[str]) -> None:
        self.id, self.deps, self.status = task_id, deps, "pending"


async def seed_loop(tasks: dict[str, Task]) -> None:
    """Seed 004's executor: rescan every task for the ready ones, run them, rescan again."""
    while ready := [t for t in tasks.values()
                    if t.status == "pending" and all(tasks[d].status == "completed" for d in t.deps)]:
        for task in ready:
            task.status = "running"
            await noop(None)  # the same no-op our jobs run
            task.status = "completed"


def seed(n: int) -> None:
    tasks = {f"j{i}": Task(f"j{i}", [f"j{i - 1}"] if i else []) for i in range(n)}
    asyncio.run(seed_loop(tasks))
    assert all(t.status == "completed" for t in tasks.values())


def chains(sizes: tuple[int, ...], repeat: int) -> None:
    print(f"\nchains of no-op async jobs: ours best of {repeat}, the seed loop once (CPU seconds)")
    print(f"  {'jobs':>6}  {'ours':>8}  {'growth':>6}  {'seed loop':>9}  {'growth':>6}  seed / ours")
    rows: list[tuple[float, float]] = []
    for n in sizes:
        graph = chain_graph(n)
        mine = min(cpu_seconds(lambda g=graph: ours(g)) for _ in range(repeat))
        theirs = cpu_seconds(lambda n=n: seed(n))
        growth = (f"x{mine / rows[-1][0]:.1f}", f"x{theirs / rows[-1][1]:.1f}") if rows else ("", "")
        print(f"  {n:>6,}  {mine:7.3f}s  {growth[0]:>6}  {theirs:8.3f}s  {growth[1]:>6}  "
              f"{theirs / mine:,.0f}x")
        rows.append((mine, theirs))
    scale = sizes[-1] / sizes[0]
    (mine_1, theirs_1), (mine_n, theirs_n) = rows[0], rows[-1]
    print(f"  {sizes[0]:,} -> {sizes[-1]:,} jobs (x{scale:.0f}): ours x{mine_n / mine_1:.1f}, the seed loop "
          f"x{theirs_n / theirs_1:.0f} (linear: x{scale:.0f}, quadratic: x{scale ** 2:.0f})")


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
    print(f"  {wall:.3f} s against the longest job's {seconds} s (x{wall / seconds:.2f}); "
          f"one at a time would take {jobs * seconds:.1f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3, metavar="R",
                        help="runs of ours per size, best kept (3)")
    parser.add_argument("--quick", action="store_true", help="chains of 500, 1,500 and 5,000 jobs")
    args = parser.parse_args(argv)
    print(f"Python {platform.python_version()} ({platform.python_implementation()}), {platform.machine()}, "
          f"{os.cpu_count()} CPUs")
    chains((500, 1_500, 5_000) if args.quick else (1_000, 3_000, 10_000), args.repeat)
    overlap(args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
