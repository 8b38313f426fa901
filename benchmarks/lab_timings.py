"""Per-section timings of a lab, for the instructor's 90-minute plan (notebooks/INSTRUCTOR.md).

    .venv/bin/python benchmarks/lab_timings.py notebooks/01_*.ipynb [--wpm 150]

Executes a copy of each notebook top to bottom in a fresh `python3` kernel (nbclient, which
records when each cell started and finished) and prints its Run All time (kernel start to last
reply, the figure a learner waits for), its slowest code cells, and one row per `##` section: its code
cells, the seconds they took to execute (measured), its words of markdown and code, and the
minutes to read them at `--wpm` words a minute (estimated: 150 is a careful reading pace for
technical text with code; set your room's). Thinking, predicting and writing the build-it
cells are not in these figures: the plan in INSTRUCTOR.md adds them.
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import re
import time
from pathlib import Path

import nbformat
import pandas as pd
from nbclient import NotebookClient


def _seconds(cell: dict) -> float:
    timing = cell.get("metadata", {}).get("execution", {})
    start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
    if not (start and end):
        return 0.0
    return (
        dt.datetime.fromisoformat(end.replace("Z", "+00:00"))
        - dt.datetime.fromisoformat(start.replace("Z", "+00:00"))
    ).total_seconds()


def execute(path: Path) -> tuple[nbformat.NotebookNode, float]:
    """A copy of the notebook at `path` run top to bottom in a fresh kernel, and its wall seconds."""
    run = copy.deepcopy(nbformat.read(path, as_version=4))
    started = time.perf_counter()
    NotebookClient(
        run,
        kernel_name="python3",
        timeout=1200,
        record_timing=True,
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()
    return run, time.perf_counter() - started


def slowest(run: nbformat.NotebookNode, n: int = 3) -> str:
    """The `n` slowest code cells of an executed notebook: index, seconds and first line."""
    cells = [
        (i, _seconds(c), (c.source.splitlines() or [""])[0][:60])  # an empty cell has no line
        for i, c in enumerate(run.cells)
        if c.cell_type == "code"
    ]
    cells = sorted(cells, key=lambda c: -c[1])[:n]
    return "; ".join(f"cell {i} {s:.1f} s ({line})" for i, s, line in cells)


def sections(run: nbformat.NotebookNode, wpm: int) -> pd.DataFrame:
    """One row per `##` section of an executed notebook: code cells, seconds, words, minutes to read."""
    rows: list[dict] = []
    title = "(before the first section)"
    for cell in run.cells:
        heading = re.match(r"^#{1,2}\s+(.+)", cell.source) if cell.cell_type == "markdown" else None
        if heading:
            title = heading.group(1).strip()
        if not rows or rows[-1]["section"] != title:
            rows.append({"section": title, "code_cells": 0, "execute_s": 0.0, "words": 0})
        row = rows[-1]
        row["words"] += len(cell.source.split())
        if cell.cell_type == "code":
            row["code_cells"] += 1
            row["execute_s"] += _seconds(cell)
    table = pd.DataFrame(rows)
    table["read_min"] = (table["words"] / wpm).round(1)
    table["execute_s"] = table["execute_s"].round(1)
    return table.set_index("section")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--wpm", type=int, default=150, help="reading pace, words a minute (150)")
    args = parser.parse_args(argv)
    with pd.option_context("display.width", 160, "display.max_colwidth", 70, "display.max_rows", 200):
        for path in args.notebooks:
            run, wall = execute(path)
            table = sections(run, args.wpm)
            print(
                f"\n{path.name}: Run All {wall:.1f} s (kernel start included; cells "
                f"{table['execute_s'].sum():.1f} s), read {table['read_min'].sum():.0f} min"
                f" at {args.wpm} words/min"
            )
            print(f"  slowest: {slowest(run)}")
            print(table.to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
