"""`labkit compare`: lab 01's controller comparison on a fixture folder."""

import argparse
import json

from labkit.baseline.controllers import TOP_K, controllers_for
from labkit.baseline.corpus import DOCUCTL, load_corpus
from labkit.baseline.grading import compare
from labkit.core.errors import LabError
from labkit.course.commands import add_command


def register(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "compare",
        handle,
        "Run every lab-01 controller on a docuctl-style fixture folder (documents.json, "
        "glossary.json, cases.json; adaptive_cases.json optional) and print cases passed "
        "and tool calls per controller. When the folder has adaptive cases, four more "
        "controllers join (spell-correct-first, fallback and two-rule workflows, adaptive "
        "loop) and every controller gets the same budget of three tools; otherwise two.",
    )
    add = parser.add_argument
    add("--fixtures", metavar="DIR", default=str(DOCUCTL), help="fixture folder (default: fixtures/docuctl)")
    add(
        "--cases",
        choices=("base", "adaptive", "all"),
        default="base",
        help="which cases to grade (default: base, the 18 baseline cases)",
    )
    add(
        "--top-k",
        type=int,
        choices=(1, 2, 3),
        default=TOP_K,
        help=f"search hits considered (default: {TOP_K})",
    )
    add(
        "--max-tools",
        type=int,
        choices=range(1, 7),
        metavar="{1..6}",
        help="tool budget of every controller (default: 3 with adaptive cases, else 2)",
    )
    add("--json", action="store_true", help="print {controller: {passed, total, tool_calls}}")


def handle(args: argparse.Namespace) -> int:
    corpus = load_corpus(args.fixtures)
    if args.cases != "base" and not corpus.adaptive_cases:  # serves: user
        raise LabError(f"{args.fixtures}: --cases {args.cases} needs adaptive_cases.json")
    cases = {"base": corpus.cases, "adaptive": corpus.adaptive_cases}.get(
        args.cases, corpus.cases + corpus.adaptive_cases
    )
    adaptive = bool(corpus.adaptive_cases)
    table = compare(
        cases, controllers_for(corpus.docs, adaptive=adaptive, top_k=args.top_k, max_tools=args.max_tools)
    )
    if args.json:
        rows = {name: {key: int(value) for key, value in row.items()} for name, row in table.iterrows()}
        print(json.dumps(rows, indent=2))
    else:
        print(
            f"Task: return the exact staging command with a version-matched citation ({args.cases} cases).",
            table.to_string(),
            "Scripted policies: these are control-flow results, not model-quality scores.",
            sep="\n",
        )
    return 0
