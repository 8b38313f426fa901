"""`labkit class FOLDER`: the class round, from a folder of `labkit submit` files."""

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from labkit.core.errors import LabError
from labkit.core.paths import runs_dir
from labkit.course.argtypes import output_path, output_type
from labkit.course.classroom.merge import PRESETS, chart, load_folder, pass_counts, red_team
from labkit.course.commands import add_command, plain

_SELF_REPORTED = "self-reported: each file's own count, not re-checked here"
_NAMES = "names are self-reported: a later file under a name replaces the earlier one, listed as superseded"
_SHORT = {"attacks_stopped": "stopped", "attack_success_rate": "success_rate", "money_lost": "lost_usd"}
_TITLES = {
    "exercises": f"Exercises: learners who attempted and ever passed each one ({_SELF_REPORTED})",
    "defenses": "Lab 03 red team: defenses, best first (gullible policy, every attack at every place).\n"
    "A learner's row: their guard that passed its checker (the best if both did), else their best (`shown`).",
    "attacks": "Lab 03 red team: attacks, strongest first",
    "success": "Attack success rate, attack x course defense, and how many learners' guards it beats:",
}


def register(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "class",
        handle,
        "Read every *.json in FOLDER as a submission (data only: nothing in it is run), a learner's latest "
        "per lab. Print per exercise how many learners attempted and passed it; for lab 03 every attack "
        "against every deterministic defense and each learner's guard, from the ledger. A file not "
        "counted is named on one line.",
    )
    add = parser.add_argument
    add("folder", metavar="FOLDER", type=Path, help="the folder of submission files")
    add("--json", action="store_true", help="print the tables as JSON (skipped files included)")
    add(
        "--chart",
        metavar="PNG",
        type=output_type(suffix=".png"),
        help="where to save the chart, a .png file checked first (default: runs/class/class-results.png)",
    )


def handle(args: argparse.Namespace) -> int:
    if not args.folder.is_dir():  # serves: user
        raise LabError(f"{args.folder}: not a folder")
    try:  # the default place is checked as --chart is, before the round runs (serves: user)
        path = args.chart or output_path(runs_dir() / "class" / "class-results.png", suffix=".png")
    except ValueError as error:
        raise LabError(f"chart: {error}") from None
    submissions, skipped = load_folder(args.folder)
    if skipped and (not args.json or not submissions):
        print(*skipped, sep="\n", file=sys.stderr)
    if not submissions:  # serves: user — a folder with no usable submission
        raise LabError(f"no usable submission in {args.folder} ({len(skipped)} file(s) skipped)")
    counts, round_ = pass_counts(submissions), red_team(submissions)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        chart(counts, round_).savefig(path, dpi=100, format="png")
    except OSError as error:  # serves: environment — a chart that cannot be written
        raise LabError(f"cannot write the chart {path} ({error.strerror or error})") from None
    tables = {"exercises": counts} | ({} if round_ is None else vars(round_))
    if args.json:
        out = {
            "submissions": [{"file": s.file, "lab": s.lab, "name": s.name} for s in submissions],
            "skipped": skipped,
            "exercises": plain(counts.reset_index()),
            "exercises_are": _SELF_REPORTED,
        }
        if round_ is not None:
            out["red_team"] = {name: plain(tables[name].reset_index()) for name in list(tables)[1:]}
        print(json.dumps(out | {"names": _NAMES, "chart": str(path)}, indent=2))
        return 0
    superseded = sum(line.startswith("superseded ") for line in skipped)
    print(
        f"{len(submissions)} submission(s) from {args.folder}, {superseded} superseded, "
        f"{len(skipped) - superseded} skipped.\nThe {_NAMES}.\n"
    )
    if round_ is not None:  # a learner's row is NAME:KEY: `by` is left to --json
        tables |= {
            name: tables[name].drop(columns="by").rename(columns=_SHORT) for name in ("defenses", "attacks")
        }
        learners = [d for d in round_.success.columns if d not in PRESETS]
        beaten = (round_.success[learners] > 0).sum(axis=1).astype(str) + f"/{len(learners)}"
        tables["success"] = round_.success[list(PRESETS)].assign(learners_beaten=beaten)
    with pd.option_context("display.width", 120, "display.max_columns", 30, "display.max_colwidth", 40):
        for name, table in tables.items():
            print(_TITLES[name], table.to_string(na_rep="n/a"), "", sep="\n")  # n/a: no one passed yet
    print(f"chart: {path}")
    return 0
