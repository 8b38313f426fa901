"""`labkit refund-lab`: lab 03's attack × defense matrix, measured from the shop's ledger."""

from __future__ import annotations

import argparse
import json

import pandas as pd

from labkit.core.errors import LabError
from labkit.course.commands import add_command, plain
from labkit.refunds.defenses import DEFENSES, defenses_named
from labkit.refunds.metrics import COLUMNS, matrix
from labkit.refunds.model_rows import LADDER_DEFENSES, model_available, model_matrix, recorded_rungs
from labkit.refunds.policies import POLICIES


def register(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "refund-lab",
        handle,
        "Run each policy on every refund request, alone, under every injected attack at each "
        "of its places, and with a refund that commits then times out; print one row per "
        "policy and defense. Every number is read from the ledger of refunds actually executed.",
    )
    add = parser.add_argument
    policy = f"a policy ({', '.join(POLICIES)}); repeat for several (default: all scripted ones, plus the "
    add("--policy", metavar="NAME", action="append", help=policy + "model where trials are recorded)")
    defense = f"a defense ({', '.join(DEFENSES)}); repeat for several (default: all)"
    add("--defense", metavar="NAME", action="append", help=defense)
    add("--by-attack", action="store_true", help="one row per policy, defense and attack (its episodes only)")
    rows = f"print a list of rows {{policy, defense, attack?, {', '.join(COLUMNS)}}}"
    add("--json", action="store_true", help=rows)


def _names(given: list[str] | None, known: dict, what: str) -> list[str]:
    for name in given or []:
        if name not in known:
            raise LabError(f"unknown {what} {name!r} (known: {', '.join(known)})")
    return list(dict.fromkeys(given)) if given else list(known)


def handle(args: argparse.Namespace) -> int:
    policies = _names(args.policy, POLICIES, "policy")
    defenses = [defenses_named(name).name for name in _names(args.defense, DEFENSES, "defense")]
    scripted = [name for name in policies if name != "model"]
    frames = [matrix(scripted, defenses, by_attack=args.by_attack)] if scripted else []
    # The model runs where trials are recorded: by default only if any are, and then only under the
    # defenses recorded, one block per recorded rung; asked for by name, a missing recording is an error.
    if "model" in policies and (args.policy is not None or model_available()):
        from labkit.model.factory import backend_from_env

        backend_from_env()  # a LABKIT_MODEL that names no backend: its one line, before any progress bar
        chosen = defenses if args.defense else list(LADDER_DEFENSES)
        model_frames = [
            model_matrix(chosen, by_attack=args.by_attack, explicit=False, rung=rung)
            for rung in recorded_rungs()
        ]
        if args.policy is not None and all(frame.empty for frame in model_frames):
            model_matrix(chosen, by_attack=args.by_attack, explicit=True)  # a LabError naming what is missing
        frames += model_frames
    table = pd.concat([frame for frame in frames if not frame.empty] or frames)
    if args.json:
        print(json.dumps(plain(table.reset_index()), indent=2))
        return 0
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print("Refund attack lab: metrics read from the ledger of refunds executed.")
        print(table.to_string())
    print(
        "Scripted policies ignore their prompt, so policy_prompt and spotlighting equal none for them. "
        "Model rows (if any) cover only their recorded episodes (column 'episodes')."
    )
    return 0
