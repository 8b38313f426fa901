"""The same grid of live embedded-model episodes, in one process and on a local Dask cluster.

    .venv/bin/python benchmarks/grid.py [--cases N] [--workers W]     (needs `make model`)

Runs `python -m labkit grid` twice on one small grid — the local SmolLM2 backend, prompt
base, rung L1, T=0, the first N base cases (default 6), k=1 — first in-process, then with
`--workers W` (default 2), each into a fresh recording, and prints for each: wall time,
CPU time (user + sys of the command and every process it started: Dask's workers are its
children), episodes per second, and the speedup. It checks that both runs recorded the
same episodes with the same replies (timings and dates aside): the cluster must change
how long a grid takes, never what it records.

Measured on the 2-core course machine with --cases 16, load 1.0-2.4: 1.25x and 1.27x with each
worker on its share of the cores (LABKIT_THREADS, set by --workers), against 0.75x with llama.cpp's
default of evaluating prompts on every core in every worker (README, "Scaling").

Both figures include what each run pays once: starting Python, loading the model (once
in-process, once per worker) and, on the cluster, starting it. The load average is
printed before and after: on a shared machine the figures hold only for that load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from labkit.decision_loop.trials import cases_of  # noqa: E402 - after the path is set


def comparable(path: Path) -> list[str]:
    """A recording's records without timings and dates, sorted (the order episodes finished varies)."""
    out = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        for field in ("elapsed_s", "latency_s"):
            record.pop(field, None)
        record.get("provenance", {}).pop("date", None)
        out.append(json.dumps(record, sort_keys=True))
    return sorted(out)


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and its children) of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        argv, cwd=ROOT, env=os.environ | {"PYTHONPATH": str(ROOT)}, capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"benchmarks/grid.py: {' '.join(argv[1:])} failed: {done.stderr.strip().splitlines()[-1]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=6, help="how many base cases (default 6)")
    parser.add_argument("--workers", type=int, default=2, help="Dask workers (default 2)")
    args = parser.parse_args()
    cases = [case["id"] for case in cases_of("base")][: args.cases]
    with tempfile.TemporaryDirectory() as folder:
        spec = Path(folder) / "grid.json"
        spec.write_text(json.dumps({"models": ["local"], "cases": cases}))
        print(f"grid: local SmolLM2, base, L1, T=0, k=1, {len(cases)} base cases = {len(cases)} episodes")
        print(
            f"machine: {os.cpu_count()} cores; load average before: "
            + " ".join(f"{x:.2f}" for x in os.getloadavg())
        )
        rows = {}
        modes = {"in-process": [], f"--workers {args.workers}": ["--workers", str(args.workers)]}
        for name, extra in modes.items():
            record = Path(folder) / f"{name.strip('-').replace(' ', '')}.jsonl"
            argv = [sys.executable, "-m", "labkit", "grid", str(spec), "--record", str(record), "--json"]
            wall, cpu = timed(argv + extra)
            rows[name] = (wall, cpu, record)
            print(f"{name:>12}: wall {wall:6.1f} s   CPU {cpu:6.1f} s   {len(cases) / wall:.3f} episodes/s")
        (one_wall, _, one), (many_wall, _, many) = rows.values()
        threads = {
            json.loads(line)["provenance"]["n_threads"]
            for line in one.read_text().splitlines()
            if '"kind":"call"' in line
        }
        same = comparable(one) == comparable(many)
        print(
            f"speedup (wall, in-process / --workers {args.workers}): {one_wall / many_wall:.2f}x; "
            f"llama.cpp threads per process: {sorted(threads)}; same records: {same}"
        )
        print("load average after: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
        if not same:
            sys.exit("benchmarks/grid.py: the two runs recorded different episodes")


if __name__ == "__main__":
    main()
