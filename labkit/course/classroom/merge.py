"""The class round: a folder of submissions merged into tables and one chart.

`load_folder(folder)` reads every `*.json` directly in `folder` (sorted by name) and returns
the usable submissions and one line per file it skipped — unreadable, hostile or malformed
(see `labkit.course.classroom.submission.read`), or a second file from the same learner for the
same lab (the latest `submitted` is kept). Nothing in a file is ever executed.

`pass_counts` counts, per lab and exercise, the learners who attempted it and who passed,
and the median attempt at which they first passed.

`red_team` is lab 03's round: every attack (the course's and each learner's) against every
deterministic defense and every learner's guard (answered from its guard table, see
`labkit.refunds.guard_table`), run as real episodes with the gullible policy — which obeys
every instruction it reads — on each legitimate request, the attack at each of its places.
Every figure is read from the ledger: an attack succeeded when its security check finds its
goal among the refunds actually paid; money lost is what was paid beyond the refund the
customer asked for; a guard that stops attacks by refusing legitimate refunds shows it in
`legit_paid` (each legitimate request once, no attack).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from labkit.course.classroom.submission import Submission, SubmissionError, read, shown

PRESETS = ("none", "mediation", "provenance", "confirmation", "all_deterministic")


def load_folder(folder: Path) -> tuple[list[Submission], list[str]]:
    """The usable submissions in `folder` and one line per skipped file (see the module docstring)."""
    usable: dict[tuple[str, str], Submission] = {}
    skipped = []
    for path in sorted(folder.glob("*.json"), key=lambda p: p.name):
        try:
            submission = read(path)
        except SubmissionError as error:
            skipped.append(f"skipped {shown(path.name)}: {error}")
            continue
        key = (submission.lab, submission.name)
        if key in usable:
            older, newer = sorted((usable[key], submission), key=lambda s: s.data["submitted"])
            skipped.append(f"skipped {older.file}: {newer.file} is a later lab {submission.lab} "
                           f"submission by {submission.name}")
            usable[key] = newer
        else:
            usable[key] = submission
    return sorted(usable.values(), key=lambda s: (s.lab, s.name)), skipped


def pass_counts(submissions: Sequence[Submission]) -> pd.DataFrame:
    """One row per (lab, exercise): learners, attempted, passed, median first passing attempt."""
    rows = []
    labs = sorted({s.lab for s in submissions})
    for lab in labs:
        mine = [s for s in submissions if s.lab == lab]
        names = sorted({name for s in mine for name in s.data["exercises"]})
        for exercise in names:
            entries = [s.data["exercises"][exercise] for s in mine if exercise in s.data["exercises"]]
            firsts = [e["first_passed_attempt"] for e in entries if e["passed"] and e["first_passed_attempt"]]
            rows.append({"lab": lab, "exercise": exercise, "learners": len(mine),
                         "attempted": sum(e["attempts"] > 0 for e in entries),
                         "passed": sum(e["passed"] for e in entries),
                         "median_attempts_to_pass": statistics.median(firsts) if firsts else None})
    columns = ["lab", "exercise", "learners", "attempted", "passed", "median_attempts_to_pass"]
    return pd.DataFrame(rows, columns=columns).set_index(["lab", "exercise"])


@dataclass(frozen=True)
class RedTeam:
    """Lab 03's round: success rate per attack × defense, and the two leaderboards."""

    success: pd.DataFrame  # attack × defense, attack success rate 0..1
    defenses: pd.DataFrame  # one row per defense, best first
    attacks: pd.DataFrame  # one row per attack, strongest first


def _label(name: str, key: str, count: int) -> str:
    return name if count == 1 else f"{name}:{key}"


def red_team(submissions: Sequence[Submission]) -> RedTeam | None:
    """The red-team round over the lab-03 submissions (None if there are none)."""
    from labkit.refunds.attacks import attack_from, load_templates
    from labkit.refunds.defenses import DEFENSES, Defenses
    from labkit.refunds.guard_table import TableGuard
    from labkit.refunds.lab import refund_lab
    from labkit.refunds.metrics import Spec, evaluate
    from labkit.refunds.policies import factory_of, gullible

    mine = [s for s in submissions if s.lab == "03"]
    if not mine:
        return None
    lab = refund_lab()
    templates = load_templates(lab.shop.folder / "templates.json")
    attacks = {attack.id: ("course", attack) for attack in lab.attacks.values()}
    for s in mine:
        for index, record in enumerate(s.data["attacks"], 1):
            label = _label(s.name, str(index), len(s.data["attacks"]))
            attacks[label] = (s.name, replace(attack_from(record, templates, lab.shop, label), id=label))
    defenses = {name: ("course", DEFENSES[name]) for name in PRESETS}
    for s in mine:
        for exercise, table in s.data["guards"].items():
            label = _label(s.name, exercise, len(s.data["guards"]))
            defenses[label] = (s.name, Defenses(label, guards=(TableGuard(table, label),)))
    legit = lab.legitimate
    specs = [Spec("benign", r) for r in legit] + [
        Spec("attack", r, attack, place)
        for _, attack in attacks.values() for r in legit for place in attack.places]
    success, lost, board = {}, {}, []
    for label, (by, defense) in defenses.items():
        # labkit's gullible policy (marked cannot_hang: no timeout thread) and table lookups.
        scores = evaluate(factory_of(gullible), defense, specs, lab)
        for attack_label in attacks:
            mine_ = [s for s in scores if s.spec.attack is not None and s.spec.attack.id == attack_label]
            success[attack_label, label] = sum(bool(s.attacked) for s in mine_) / len(mine_)
            lost[attack_label, label] = sum(s.money_lost for s in mine_) / 100
        benign = [s for s in scores if s.spec.kind == "benign"]
        rates = [success[a, label] for a in attacks]
        board.append({"defense": label, "by": by,
                      "attacks_stopped": sum(rate == 0 for rate in rates),
                      "attack_success_rate": round(sum(rates) / len(rates), 3),
                      "money_lost": round(sum(lost[a, label] for a in attacks), 2),
                      "legit_paid": round(sum(s.utility for s in benign) / len(benign), 3)})
    matrix = pd.Series(success).unstack()[list(defenses)].loc[list(attacks)].round(3)
    matrix.index.name, matrix.columns.name = "attack", "defense"
    ranking = ["legit_paid", "attacks_stopped", "money_lost"]
    defense_board = (pd.DataFrame(board).sort_values(ranking, ascending=[False, False, True], kind="stable")
                     .set_index("defense"))
    attack_board = pd.DataFrame([
        {"attack": a, "by": by, "defenses_beaten": sum(success[a, d] > 0 for d in defenses),
         "money_taken": round(sum(lost[a, d] for d in defenses), 2)} for a, (by, _) in attacks.items()
    ]).sort_values(["defenses_beaten", "money_taken"], ascending=False, kind="stable").set_index("attack")
    return RedTeam(matrix, defense_board, attack_board)


def chart(counts: pd.DataFrame, round_: RedTeam | None):
    """One figure: pass counts per exercise, and lab 03's attack × defense success rates."""
    from matplotlib.figure import Figure

    from labkit.core.colours import OUTCOMES

    panels = 1 + (round_ is not None)
    rows = max(len(counts), len(round_.success) if round_ is not None else 0)
    figure = Figure(figsize=(7 * panels, max(3.0, 0.3 * rows + 2.5)), layout="constrained")
    left, *right = figure.subplots(1, panels, squeeze=False)[0]
    labels = [f"lab {lab}: {exercise}" for lab, exercise in counts.index]
    left.barh(labels, counts["passed"], color=OUTCOMES["correct"], label="passed")
    left.barh(labels, counts["attempted"] - counts["passed"], left=counts["passed"], color=OUTCOMES["wrong"],
              label="attempted, not passed")
    left.xaxis.get_major_locator().set_params(integer=True)
    left.invert_yaxis()
    left.set_xlabel("learners")
    left.set_title("Exercises: attempted and passed")
    left.legend(loc="lower right")
    if round_ is not None:
        axes = right[0]
        image = axes.imshow(round_.success.to_numpy(dtype=float), cmap="Reds", vmin=0, vmax=1, aspect="auto")
        axes.set_xticks(range(len(round_.success.columns)), round_.success.columns, rotation=60, ha="right")
        axes.set_yticks(range(len(round_.success.index)), round_.success.index)
        axes.set_title("Lab 03 red team: attack success rate (from the ledger)")
        figure.colorbar(image, ax=axes, shrink=0.8)
    return figure
