"""`labkit evaluate`: pass@1, pass^k and stop reasons of recorded trials, or (`--baselines`) the ladder."""

import argparse
import json

import pandas as pd

from labkit.core import questions
from labkit.core.errors import LabError
from labkit.course.argtypes import trials_file
from labkit.course.commands import WIDTH, add_command, plain, say
from labkit.decision_loop.evaluation import SCRIPTED, evaluate_trials, trials_report
from labkit.decision_loop.ladder import exact_baselines, ladder_with_baselines, run_comparisons
from labkit.decision_loop.tables import K_MAX, with_intervals
from labkit.decision_loop.trials import cases_of, known_cases

LAB = "02"  # the questions the comparisons answer: lab 02's ladder and rewrite set (fixtures/questions)


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
    add(
        "--baselines",
        action="store_true",
        help=(
            "print the runs beside the baselines on the same cases (random and search-then-answer at L0-L3 "
            "at their exact expectation, the scripted and adaptive loops), every rate with its 95%% interval "
            "over cases, and each run minus the scripted loop and the best baseline: lab 02's verdict where "
            "a declared question names the comparison, else exploratory"
        ),
    )


def _baselines(args: argparse.Namespace) -> int:
    rows = [row for row in evaluate_trials(args.trials, scripted_k=1) if row["policy"] not in SCRIPTED]
    cases = [known_cases()[case] for case in dict.fromkeys(row["case"] for row in rows)]
    rewrite = {case["id"] for case in cases_of("rewrite")}
    if 0 < sum(case["id"] in rewrite for case in cases) < len(cases):  # serves: user — one case set a table
        raise LabError(
            "these files hold episodes of the 24 graded cases and of the 40 rewrite cases: a run's row would "
            "average both sets; pass the files of one set at a time"
        )
    baselines = exact_baselines(cases)
    table = ladder_with_baselines(rows, baselines)
    records = questions.answer_records(LAB, run_comparisons(rows, baselines))
    if args.json:
        report = {"ladder": plain(table, "index"), "best baseline": table.attrs["best baseline"]}
        print(json.dumps(report | {"comparisons": {r.pop("comparison"): r for r in records}}, indent=2))
        return 0
    with pd.option_context("display.width", WIDTH, "display.max_columns", 30, "display.max_colwidth", 60):
        print(
            with_intervals(table).to_string(line_width=WIDTH),
            questions.records_table(records).to_string(line_width=WIDTH),
            sep="\n\n",
        )
    for name in dict.fromkeys(r["question"] for r in records if r["question"]):
        say(f"\n{name}: {questions.question(name).asks}", "  ")
    say(
        f"\n{len(cases)} cases. Each rate: estimate [95% interval] over cases (exact where each case ran "
        "once, else Wilson over the cases' mean rates). A comparison a question declared gets a verdict: a "
        "difference only when its Bonferroni-adjusted p < 0.05 and its interval excludes 0; else it is not "
        "distinguishable, with the MDE (80% power) of the declared design. Every other row is exploratory."
    )
    return 0


def handle(args: argparse.Namespace) -> int:
    if args.baselines:
        return _baselines(args)
    print(trials_report(args.trials, as_json=args.json, width=WIDTH))
    return 0
