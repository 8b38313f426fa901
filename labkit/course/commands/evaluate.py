"""`labkit evaluate`: pass@1, pass^k and stop reasons of recorded trials, or (`--baselines`) the ladder."""

from __future__ import annotations

import argparse
import json

import pandas as pd

from labkit.course.argtypes import int_in
from labkit.course.commands import add_command, plain
from labkit.decision_loop.baselines import SEEDS, baseline_rows
from labkit.decision_loop.evaluation import SCRIPTED, evaluate_trials
from labkit.decision_loop.ladder import ladder_with_baselines
from labkit.decision_loop.tables import K_MAX, WRONG, latency, stop_counts, summary, with_intervals
from labkit.decision_loop.trials import known_cases


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
    add("--trials", required=True, nargs="+", metavar="FILE", help="trials file(s) (JSONL)")
    add("--json", action="store_true", help="print {summary, stops, latency} (or {ladder, best}) as JSON")
    baselines = (
        "print the runs beside the baselines on the same cases (random and search-then-answer at L0-L3, "
        "scripted and adaptive loops), every rate with its 95%% interval and the paired difference from "
        "the scripted loop and from the best baseline"
    )
    add("--baselines", action="store_true", help=baselines)
    seeds = f"with --baselines: episodes per case of each random baseline (default {SEEDS})"
    add("--seeds", type=int_in(1, 1000), default=SEEDS, metavar="N", help=seeds)


def _baselines(args: argparse.Namespace) -> int:
    rows = [row for row in evaluate_trials(args.trials, scripted_k=1) if row["policy"] not in SCRIPTED]
    known = known_cases()
    cases = [known[case] for case in dict.fromkeys(row["case"] for row in rows)]
    table = ladder_with_baselines(rows, baseline_rows(cases, seeds=args.seeds))
    best = table.attrs["best baseline"]
    if args.json:
        print(json.dumps({"ladder": plain(table, "index"), "best baseline": best}, indent=2))
        return 0
    rates = ("pass@1", f"pass^{K_MAX}", WRONG, "vs scripted", "vs best")
    shown = with_intervals(
        table[["kind", "cases", "trials", *(f"{r}{e}" for r in rates for e in ("", " low", " high"))]]
    )
    with pd.option_context("display.width", 250, "display.max_columns", 30, "display.max_colwidth", 40):
        print(shown.to_string())
    print(
        f"\n{len(cases)} cases. Each rate: estimate [95% interval], a bootstrap over cases (seed 0); "
        f"{WRONG!r}: share of episodes (Wilson at one trial per case). vs scripted, vs best ({best}): "
        "the paired per-case difference of pass@1; a difference whose interval contains 0 is not "
        "distinguishable from none."
    )
    return 0


def handle(args: argparse.Namespace) -> int:
    if args.baselines:
        return _baselines(args)
    rows = evaluate_trials(args.trials)
    tables = {"summary": summary(rows), "stops": stop_counts(rows), "latency": latency(rows)}
    if args.json:
        print(json.dumps({name: plain(table, "index") for name, table in tables.items()}, indent=2))
        return 0
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print("\n\n".join(table.to_string() for table in tables.values()))
    print("pass^k = mean over cases of C(c,k)/C(n,k); NaN where a case has fewer than k trials.")
    return 0
