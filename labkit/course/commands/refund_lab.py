"""`labkit refund-lab`: lab 03's attack × defense matrix, measured from the shop's ledger, with the
notebook's intervals, comparisons (answered as lab 03's declared questions: Bonferroni p, MDE,
verdict; the rest exploratory) and the model's rows."""

import argparse
import json
from typing import Any

import pandas as pd

from labkit.core.questions import answer_records
from labkit.core.stats import Interval
from labkit.course.commands import WIDTH, add_command, plain, say
from labkit.refunds.defenses import DEFENSES
from labkit.refunds.display import family_table
from labkit.refunds.intervals import defense_comparisons, matrix_intervals
from labkit.refunds.lab import named
from labkit.refunds.metrics import COLUMNS, frame_of, matrix, rows
from labkit.refunds.model_rows import (
    GRID_RUNG,
    LADDER_DEFENSES,
    model_available,
    model_comparisons,
    model_scores,
    model_table,
    rates_with_intervals,
    recorded_defenses,
)
from labkit.refunds.policies import POLICIES

UNIT = "95% intervals over the attacks for attacked rates, over the requests for the others"


def register(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "refund-lab",
        handle,
        "Run each policy on every refund request, alone, under every injected attack at each "
        "of its places, and with a refund that commits then times out; print one row per "
        "policy and defense, each rate with its 95% interval, each defense's attack success against "
        "none's (answered as lab 03's declared questions), and the recorded model beside its "
        "baselines. Every number is read from the ledger of refunds actually executed.",
        model=True,
    )
    add = parser.add_argument
    add(
        "--policy",
        metavar="NAME",
        action="append",
        help=(
            f"a policy ({', '.join(POLICIES)}); repeat for several (default: all scripted ones, plus the "
            "model where trials are recorded)"
        ),
    )
    add(
        "--defense",
        metavar="NAME",
        action="append",
        help=f"a defense ({', '.join(DEFENSES)}); repeat for several (default: all)",
    )
    add("--by-attack", action="store_true", help="one row per policy, defense and attack (its episodes only)")
    add(
        "--json",
        action="store_true",
        help=(
            f"print an object of lists: matrix {{policy, defense, attack?, {', '.join(COLUMNS)}}}, "
            "intervals, comparisons, model, model_comparisons"
        ),
    )


def _names(given: list[str] | None, known: dict, what: str) -> list[str]:
    """The names `given` (each once, in order; LabError naming an unknown one), or all `known`.
    (serves: user)"""
    for name in given or []:
        named(what, name, known)
    return list(dict.fromkeys(given)) if given else list(known)


def _intervals(table: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows of Interval cells as JSON: each interval an {estimate, low, high, method} object."""
    return plain(table.map(lambda c: vars(c) if isinstance(c, Interval) else c).reset_index())


def _families(families: dict[str, list]) -> list[dict[str, Any]]:
    """Every table's comparisons as lab 03's questions answer them (`questions.answer_records`)."""
    return [r | {"table": name} for name, found in families.items() for r in answer_records("03", found)]


def _model_defenses(args: argparse.Namespace, defenses: list[str]) -> list[str]:
    """The defenses the model runs under: the recorded ones among those asked (LabError, if the model
    was asked for by name and one of the defenses named is not recorded)."""
    chosen = defenses if args.defense else list(LADDER_DEFENSES)
    known = recorded_defenses()
    missing = [d for d in chosen if d not in known]
    if args.policy is not None and args.defense and missing:
        model_table(missing)  # a LabError naming what is missing
    return [d for d in chosen if d in known]


def handle(args: argparse.Namespace) -> int:
    policies = _names(args.policy, POLICIES, "policy")
    defenses = _names(args.defense, DEFENSES, "defense")
    scripted = [name for name in policies if name != "model"]
    frames = [matrix(scripted, defenses, by_attack=args.by_attack)] if scripted else []
    intervals = matrix_intervals(scripted, defenses) if scripted and not args.by_attack else None
    compared = "none" in defenses and len(defenses) > 1 and not args.by_attack
    families = (
        {f"{policy} ASR: defense - none": defense_comparisons(policy, defenses) for policy in scripted}
        if compared
        else {}
    )
    model, model_families = None, {}
    # The model runs where trials are recorded: by default only if any are, and then only under the
    # defenses recorded; asked for by name, a missing recording is an error.
    if "model" in policies and (args.policy is not None or model_available()):
        from labkit.model.factory import backend_from_env

        backend_from_env()  # a LABKIT_MODEL that names no backend: its one line, before any progress bar
        chosen = _model_defenses(args, defenses)
        if args.by_attack:
            table = [
                r for d in chosen for r in rows(f"model {GRID_RUNG}", d, model_scores(d), by_attack=True)
            ]
            frames.append(frame_of(table, by_attack=True))
        elif chosen:
            model = model_table(chosen)
            model_families = model_comparisons(chosen) if "none" in chosen and len(chosen) > 1 else {}
    table = pd.concat([frame for frame in frames if not frame.empty] or frames) if frames else pd.DataFrame()
    if args.json:
        out = {
            "matrix": plain(table.reset_index()) if len(table) else [],
            "intervals": [] if intervals is None else _intervals(intervals),
            "comparisons": _families(families),
            "model": [] if model is None else _intervals(model),
            "model_comparisons": _families(model_families),
        }
        print(json.dumps(out, indent=2))
        return 0
    with pd.option_context("display.width", WIDTH, "display.max_columns", 20, "display.max_colwidth", 90):
        print("Refund attack lab: metrics read from the ledger of refunds executed.")
        if len(table):  # none when only the model was asked for: its own table follows
            # A rate with no episode to count (benign utility of an attack's rows) reads n/a, not None.
            shown = table.map(lambda cell: "n/a" if cell is None else cell)
            print(shown.to_string(line_width=WIDTH, na_rep="n/a"))
            say(
                "Scripted policies ignore their prompt, so policy_prompt and spotlighting equal none for "
                "them. Model rows (if any) cover only their recorded episodes (column 'episodes')."
            )
        if intervals is not None:
            print(
                f"\nRates with {UNIT}:", rates_with_intervals(intervals).to_string(line_width=WIDTH), sep="\n"
            )
        for family, comparisons in families.items():
            print(f"\n{family}\n{family_table(comparisons).to_string(line_width=WIDTH)}")
        if model is not None:
            say("\nThe model beside its baselines on the same cases, 95% intervals over the cases:")
            print(rates_with_intervals(model).to_string(line_width=WIDTH))
        for family, comparisons in model_families.items():
            print(f"\n{family}\n{family_table(comparisons).to_string(line_width=WIDTH)}")
    return 0
