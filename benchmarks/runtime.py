"""The runtime's overhead per validated step, against a bare loop doing the same calls.

    python benchmarks/runtime.py [--episodes N]

Runs N episodes (default 100,000) of a scripted search → read → final policy through
`labkit.run` with tools that do no work, and the same policy and tools in a bare loop that
validates nothing, checks no limit and records nothing. The difference per step is what
the runtime costs: validation, limits, the trace, the stop record. Both loops run in the
same process, interleaved in rounds, and the best round of each is reported.
"""

from __future__ import annotations

import argparse
import gc
import time

from labkit import Task, Tool, run

TASK = Task("bench", "deploy", "How do I deploy the current build?", "v2")
HITS = [{"id": "deploy-v2", "title": "Deploy a build"}]
PAGE = {"id": "deploy-v2", "command": "docuctl ship --env staging"}
TOOLS = {
    "search": Tool("search", {"query": "str"}, lambda query: HITS),
    "read": Tool("read", {"id": "str"}, lambda id: PAGE, source=True),
}
STEPS = 3  # search, read, final


def policy(task: Task, observations: list) -> dict:
    if not observations:
        return {"action": "search", "query": task.question}
    if observations[-1]["action"] == "search":
        return {"action": "read", "id": observations[-1]["result"][0]["id"]}
    page = observations[-1]["result"]
    return {"action": "final", "answer": page["command"], "citation": page["id"]}


def bare(task: Task) -> dict:
    """The same calls with nothing around them: the floor the runtime is measured against."""
    observations: list = []
    while True:
        decision = policy(task, observations)
        action = decision["action"]
        if action == "final":
            return decision
        args = {k: v for k, v in decision.items() if k != "action"}
        observations.append({"action": action, "result": TOOLS[action].call(**args)})


def through_runtime(task: Task) -> dict:
    return run(task, policy, tools=TOOLS, max_turns=3, max_tools=2)


def timed(episode, n: int) -> float:
    gc.collect()
    start = time.perf_counter()
    for _ in range(n):
        episode(TASK)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    result = through_runtime(TASK)
    assert (result["stop"], result["turns"], result["tool_calls"]) == ("final", 3, 2), result
    per_round = args.episodes // args.rounds
    runtime_best, bare_best = float("inf"), float("inf")
    for _ in range(args.rounds):
        runtime_best = min(runtime_best, timed(through_runtime, per_round))
        bare_best = min(bare_best, timed(bare, per_round))
    steps = per_round * STEPS
    runtime_us, bare_us = runtime_best / steps * 1e6, bare_best / steps * 1e6
    print(
        f"{args.episodes:,} episodes of {STEPS} validated steps "
        f"(best of {args.rounds} rounds of {per_round:,})"
    )
    print(f"bare loop (no validation, limits or trace): {bare_us:6.2f} µs per step")
    print(f"labkit.run:                                 {runtime_us:6.2f} µs per step")
    print(
        f"runtime overhead: {runtime_us - bare_us:.2f} µs per validated step (goal <= 20 µs); "
        f"ratio {runtime_us / bare_us:.1f}x the bare loop"
    )


if __name__ == "__main__":
    main()
