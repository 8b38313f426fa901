"""Per-section timings of a lab, for the instructor's 90-minute plan (notebooks/INSTRUCTOR.md).

    .venv/bin/python benchmarks/lab_timings.py notebooks/01_*.ipynb [--wpm 150]

Executes a copy of each notebook top to bottom in a fresh `python3` kernel (nbclient, which
records when each cell started and finished) and prints one row per `##` section: its code
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


def sections(path: Path, wpm: int) -> pd.DataFrame:
    notebook = nbformat.read(path, as_version=4)
    run = copy.deepcopy(notebook)
    NotebookClient(
        run,
        kernel_name="python3",
        timeout=1200,
        record_timing=True,
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()
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
            table = sections(path, args.wpm)
            print(
                f"\n{path.name}: execute {table['execute_s'].sum():.1f} s in all, read "
                f"{table['read_min'].sum():.0f} min at {args.wpm} words/min"
            )
            print(table.to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
