"""`labkit evaluate`: pass@1, pass^k and stop reasons of recorded trials, or (`--baselines`) the ladder."""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict

import pandas as pd

from labkit.core import stats
from labkit.course.argtypes import trials_file
from labkit.course.commands import add_command, plain
from labkit.decision_loop.evaluation import SCRIPTED, evaluate_trials
from labkit.decision_loop.ladder import exact_baselines, ladder_with_baselines, run_comparisons
from labkit.decision_loop.tables import K_MAX, stop_counts, summary, with_intervals
from labkit.decision_loop.trials import known_cases

EVALUATE_FAMILY = "each run vs the scripted loop and the best baseline"


def register(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "evaluate",
        handle,
        "Replay every episode recorded in FILE (from `labkit trials`) through the runtime, "
        "grade it with the lab-01 outcome check, and print one row per run beside the scripted "
        f"and adaptive loops on the same cases (run {K_MAX} times each). Nothing is taken from "
        "the recording but the model's replies.",
    )
    add = parser.add_argument
    add("--trials", required=True, nargs="+", type=trials_file, metavar="FILE", help="trials file(s) (JSONL)")
    add("--json", action="store_true", help="print {summary, stops} (or {ladder, comparisons}) as JSON")
    baselines = (
        "print the runs beside the baselines on the same cases (random and search-then-answer at L0-L3 at "
        "their exact expectation, the scripted and adaptive loops), every rate with its 95%% interval over "
        "cases, and each run minus the scripted loop and the best baseline with Holm's p and lab 02's verdict"
    )
    add("--baselines", action="store_true", help=baselines)


def _comparison(c: stats.Comparison) -> dict[str, object]:
    """One comparison as JSON: its fields (interval, test, p, p_holm, mde: null if none) and verdict."""
    return asdict(c) | {"mde": None if math.isnan(c.mde) else c.mde, "verdict": c.verdict}


def _baselines(args: argparse.Namespace) -> int:
    rows = [row for row in evaluate_trials(args.trials, scripted_k=1) if row["policy"] not in SCRIPTED]
    cases = [known_cases()[case] for case in dict.fromkeys(row["case"] for row in rows)]
    baselines = exact_baselines(cases)
    table = ladder_with_baselines(rows, baselines)
    comparisons = stats.adjust(run_comparisons(rows, baselines), EVALUATE_FAMILY)
    if args.json:
        report = {
            "ladder": plain(table, "index"),
            "best baseline": table.attrs["best baseline"],
            "family": EVALUATE_FAMILY,
        }
        print(json.dumps(report | {"comparisons": {c.name: _comparison(c) for c in comparisons}}, indent=2))
        return 0
    with pd.option_context("display.width", 250, "display.max_columns", 30, "display.max_colwidth", 60):
        print(
            with_intervals(table).to_string(),
            stats.comparison_table(comparisons, EVALUATE_FAMILY).to_string(),
            sep="\n\n",
        )
    print(
        f"\n{len(cases)} cases. Each rate: estimate [95% interval] over cases (Wilson where every case's "
        "trials agree, else a cluster bootstrap by case). A difference is claimed only when Holm's p < 0.05 "
        "and its interval excludes 0; else it is not distinguishable, and the MDE (80% power) says how "
        "large a gain these cases could detect."
    )
    return 0


def handle(args: argparse.Namespace) -> int:
    if args.baselines:
        return _baselines(args)
    rows = evaluate_trials(args.trials)
    tables = {"summary": summary(rows), "stops": stop_counts(rows)}
    if args.json:
        print(json.dumps({name: plain(table, "index") for name, table in tables.items()}, indent=2))
        return 0
    tables["summary"] = with_intervals(tables["summary"])
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        print("\n\n".join(table.to_string() for table in tables.values()))
    print("pass^k = mean over cases of C(c,k)/C(n,k); n/a where a case has fewer than k trials.")
    return 0
