"""Lab 03's red-team round, as `labkit class` runs it over a room's submissions: the learners' attacks
against every preset defense and each learner's guard (tabulated by `labkit submit`, replayed as a
`TableGuard`), the gullible policy proposing, scored from the ledger."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import pandas as pd

from labkit.refunds.attacks import attack_from, load_templates
from labkit.refunds.defenses import DEFENSES, Defenses
from labkit.refunds.guard_table import TableGuard
from labkit.refunds.lab import refund_lab
from labkit.refunds.metrics import Spec, score_policy
from labkit.refunds.policies import factory_of, gullible

ROUND_LAB = "03"  # the lab whose submissions this round reads
PRESETS = ("none", "mediation", "provenance", "confirmation", "all_deterministic")
_ORDER = {"by": ["legit_paid", "attacks_stopped", "money_lost"], "ascending": [False, False, True]}


class Handed(Protocol):
    """What the round reads of a submission: the learner's name and the file's data."""

    name: str
    data: Mapping[str, Any]


@dataclass(frozen=True)
class RedTeam:
    """Lab 03's round: success rate per attack × defense, and the two leaderboards. A learner's defense
    is one of their guards: the one that passed its checker (the best if both did), else their best."""

    defenses: pd.DataFrame  # one row per defense, best first; `shown`: why this guard of the learner's
    attacks: pd.DataFrame  # one row per attack, strongest first
    success: pd.DataFrame  # attack × defense, attack success rate 0..1


def score_round(mine: Sequence[Handed]) -> RedTeam | None:
    """The red-team round over lab 03's submissions as `labkit class` read them (each learner's name
    and data: their attacks, checked as attacks.json's on reading, and their guards' tables), None if
    there are none: every attack, the course's and the learners', against the gullible policy under
    every preset defense and each learner's chosen guard, scored from the ledger."""
    if not mine:
        return None
    lab = refund_lab()
    templates = load_templates(lab.shop.folder / "templates.json")
    attacks = {attack.id: ("course", attack) for attack in lab.attacks.values()}
    defenses = {name: ("course", DEFENSES[name]) for name in PRESETS}
    behaviour = {name: name for name in PRESETS}  # what decides a defense's scores: a preset, or a table
    choices: dict[str, tuple[list[str], str]] = {}  # learner -> their candidate defenses, and why
    for s in mine:
        for index, record in enumerate(s.data["attacks"], 1):
            label = f"{s.name}:attack" + (str(index) if len(s.data["attacks"]) > 1 else "")
            attacks[label] = (s.name, replace(attack_from(record, templates, lab.shop, label), id=label))
        guards = sorted(s.data["guards"])  # the guards the learner's row is chosen from
        passed = [g for g in guards if s.data["exercises"][g]["passed"]]
        guards, why = (passed, "passed") if passed else (guards, "none passed")
        if guards:
            if len(guards) > 1:
                why += f", best of {len(guards)}"
            choices[s.name] = ([f"{s.name}:{g}" for g in guards], why)
        for exercise in guards:
            table, label = s.data["guards"][exercise], f"{s.name}:{exercise}"
            defenses[label] = (s.name, Defenses(label, guards=(TableGuard(table, label),)))
            behaviour[label] = "table:" + table["verdicts"]
    specs = [
        *(Spec("benign", r) for r in lab.legitimate),
        *(Spec("attack", r, a, p) for _, a in attacks.values() for r in lab.legitimate for p in a.places),
    ]
    rows, scored = [], {}
    for label, (_, defense) in defenses.items():
        if behaviour[label] not in scored:  # learners who hand in the same table are scored once
            scored[behaviour[label]] = score_policy(factory_of(gullible), defense, specs, lab)
        rows += [
            {"defense": label, "attack": s.spec.attack and s.spec.attack.id, "attacked": bool(s.attacked)}
            | {"lost": s.money_lost / 100, "paid": s.utility}
            for s in scored[behaviour[label]]
        ]
    frame = pd.DataFrame(rows)
    hits = frame.dropna(subset="attack").groupby(["attack", "defense"])
    success, lost = (
        hits[name].sum().unstack().loc[list(attacks), list(defenses)] for name in ("attacked", "lost")
    )
    success = success / hits.size().unstack().loc[list(attacks), list(defenses)]
    paid = frame[frame["attack"].isna()].groupby("defense")["paid"].mean()
    board = pd.DataFrame(
        {
            "by": [by for by, _ in defenses.values()],
            "attacks_stopped": (success == 0).sum(),
            "attack_success_rate": success.mean().round(3),
            "money_lost": lost.sum().round(2),
            "legit_paid": paid.round(3),
        },
        index=pd.Index(list(defenses), name="defense"),
    ).sort_values(**_ORDER, kind="stable")
    # each learner's row: their best candidate, the first of them on the sorted board
    picks = {next(d for d in board.index if d in labels): why for labels, why in choices.values()}
    board = board.loc[[d for d in board.index if d in PRESETS or d in picks]]
    board = board.assign(shown=[picks.get(d, "") for d in board.index])
    success, lost = success[[*PRESETS, *picks]], lost[[*PRESETS, *picks]]
    attack_board = pd.DataFrame(
        {
            "by": [by for by, _ in attacks.values()],
            "defenses_beaten": (success > 0).sum(axis=1),
            "money_taken": lost.sum(axis=1).round(2),
        },
        index=pd.Index(list(attacks), name="attack"),
    ).sort_values(["defenses_beaten", "money_taken"], ascending=False, kind="stable")
    success = success.round(3).rename_axis(index="attack", columns="defense")
    return RedTeam(board, attack_board, success)
