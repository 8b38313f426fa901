"""`labkit evaluate`: pass@1, pass^k and stop reasons of recorded trials, beside the scripted policies."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

import pandas as pd

from labkit.decision_loop.evaluation import evaluate_trials
from labkit.decision_loop.tables import K_MAX, latency, stop_counts, summary


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "evaluate",
        help="lab 02: replay recorded trials and report pass@1, pass^k and stop reasons",
        description=(
            "Replay every episode recorded in FILE (from `labkit trials`) through the runtime, "
            "grade it with the lab-01 outcome check, and print one row per run beside the scripted "
            f"and adaptive loops on the same cases (run {K_MAX} times each). Nothing is taken from "
            "the recording but the model's replies."
        ),
    )
    parser.add_argument("--trials", required=True, nargs="+", metavar="FILE", help="trials file(s) (JSONL)")
    parser.add_argument("--json", action="store_true", help="print {summary, stops, latency} as JSON")
    parser.set_defaults(handler=handle)


def _plain(frame: pd.DataFrame) -> dict[str, dict[str, Any]]:
    def value(v: Any) -> Any:
        if isinstance(v, float) and math.isnan(v):
            return None
        return v.item() if hasattr(v, "item") else v

    return {str(index): {str(k): value(v) for k, v in row.items()} for index, row in frame.iterrows()}


def handle(args: argparse.Namespace) -> int:
    rows = evaluate_trials(args.trials)
    table, stops, timing = summary(rows), stop_counts(rows), latency(rows)
    if args.json:
        print(
            json.dumps(
                {"summary": _plain(table), "stops": _plain(stops), "latency": _plain(timing)}, indent=2
            )
        )
        return 0
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(table.to_string())
        print()
        print(stops.to_string())
        print()
        print(timing.to_string())
    print("pass^k = mean over cases of C(c,k)/C(n,k); NaN where a case has fewer than k trials.")
    return 0
