"""The class round: a folder of submissions merged into tables and one chart.

`load_folder(folder)` reads every `*.json` directly in `folder` (sorted by name, at most
MAX_FILES) and returns the usable submissions and one line per file it skipped: unreadable,
hostile or malformed (see `labkit.course.classroom.submission.read`), longer than FILE_S
seconds to check, or in conflict. Two different files from the same learner for the same lab
are a conflict: neither is used, and one line names both, so the instructor decides (a
byte-for-byte copy of a file is skipped as a copy). Nothing in a file is ever executed, and
no file can stall the round: each is opened once, non-blocking, and checked within FILE_S.

`pass_counts` counts, per lab and exercise, the learners who attempted it and who ever
passed it, and the median attempt at which they first passed: the files' own word, so the
columns say `self_reported`.

Every learner's row is namespaced: a learner's guard is `NAME:EXERCISE` and a learner's attack
`NAME:attack` (`NAME:attackN` for several), and a course row's name never holds ':', so no
learner, whatever their name, can equal or replace a course row (`mediation`,
`all_deterministic`, an attack id such as `direct-other-order`).

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

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from labkit.course.classroom.submission import Submission, SubmissionError, read, shown

PRESETS = ("none", "mediation", "provenance", "confirmation", "all_deterministic")
MAX_FILES = 500  # submission files read from one folder
FILE_S = 5.0  # seconds to read and check one file


def load_folder(folder: Path) -> tuple[list[Submission], list[str]]:
    """The usable submissions in `folder` and one line per skipped file (see the module docstring)."""
    from labkit.core.check import TimedOut, time_limit

    found: dict[tuple[str, str], list[tuple[Submission, bytes]]] = {}
    skipped = []
    paths = sorted(folder.glob("*.json"), key=lambda p: p.name)
    for path in paths[MAX_FILES:]:
        skipped.append(f"skipped {shown(path.name)}: more than {MAX_FILES} files in the folder")
    for path in paths[:MAX_FILES]:
        try:
            with time_limit(FILE_S):
                submission = read(path)
        except SubmissionError as error:
            skipped.append(f"skipped {shown(path.name)}: {error}")
            continue
        except TimedOut:
            skipped.append(f"skipped {shown(path.name)}: not checked within {FILE_S:g} s")
            continue
        body = json.dumps(submission.data, sort_keys=True).encode()
        found.setdefault((submission.lab, submission.name), []).append((submission, body))
    usable = []
    for (lab, name), files in found.items():
        first, body = files[0]
        copies = [s for s, b in files[1:] if b == body]
        others = [s for s, b in files[1:] if b != body]
        skipped += [f"skipped {s.file}: the same lab {lab} submission by {name} as {first.file}"
                    for s in copies]
        if others:
            names = ", ".join(s.file for s in [first, *others])
            skipped.append(f"skipped {names}: conflict, {len(others) + 1} different lab {lab} submissions "
                           f"by {name}; keep the one to count and run again")
            continue
        usable.append(first)
    return sorted(usable, key=lambda s: (s.lab, s.name)), skipped


def pass_counts(submissions: Sequence[Submission]) -> pd.DataFrame:
    """One row per (lab, exercise): learners, attempted, ever passed, median first passing attempt.

    Counts are what each file reports about its learner (`self_reported` in the column names).
    """
    rows = []
    labs = sorted({s.lab for s in submissions})
    for lab in labs:
        mine = [s for s in submissions if s.lab == lab]
        names = sorted({name for s in mine for name in s.data["exercises"]})
        for exercise in names:
            entries = [s.data["exercises"][exercise] for s in mine if exercise in s.data["exercises"]]
            firsts = [e["first_passed_attempt"] for e in entries if e["first_passed_attempt"] is not None]
            rows.append({"lab": lab, "exercise": exercise, "learners": len(mine),
                         "attempted": sum(e["attempts"] > 0 for e in entries),
                         "passed": sum(e["passed"] or e["first_passed_attempt"] is not None for e in entries),
                         "median_attempts_to_pass": statistics.median(firsts) if firsts else None})
    columns = ["lab", "exercise", "learners", "attempted", "passed", "median_attempts_to_pass"]
    return pd.DataFrame(rows, columns=columns).set_index(["lab", "exercise"])


@dataclass(frozen=True)
class RedTeam:
    """Lab 03's round: success rate per attack × defense, and the two leaderboards."""

    success: pd.DataFrame  # attack × defense, attack success rate 0..1
    defenses: pd.DataFrame  # one row per defense, best first
    attacks: pd.DataFrame  # one row per attack, strongest first


def _label(name: str, key: str) -> str:
    """A learner's row label, `NAME:KEY`: never a course row's name, which has no ':' (ids are
    lowercase letters, digits and '-'; defenses are identifiers)."""
    return f"{name}:{key}"


def red_team(submissions: Sequence[Submission]) -> RedTeam | None:
    """The red-team round over the lab-03 submissions (None if there are none)."""
    from labkit.refunds.attacks import attack_from, load_templates
    from labkit.refunds.defenses import DEFENSES, Defenses
    from labkit.refunds.guard_table import TableGuard
    from labkit.refunds.lab import refund_lab
    from labkit.refunds.metrics import Spec, score_policy
    from labkit.refunds.policies import factory_of, gullible

    mine = [s for s in submissions if s.lab == "03"]
    if not mine:
        return None
    lab = refund_lab()
    templates = load_templates(lab.shop.folder / "templates.json")
    attacks = {attack.id: ("course", attack) for attack in lab.attacks.values()}
    for s in mine:
        for index, record in enumerate(s.data["attacks"], 1):
            label = _label(s.name, "attack" if len(s.data["attacks"]) == 1 else f"attack{index}")
            attacks[label] = (s.name, replace(attack_from(record, templates, lab.shop, label), id=label))
    defenses = {name: ("course", DEFENSES[name]) for name in PRESETS}
    # What decides a defense's scores: a preset's name, or a learner's table of verdicts (a
    # TableGuard answers from its verdicts alone). Learners who hand in the same table, as a
    # class that solved the exercise mostly does, are scored once.
    behaviour = {name: ("preset", name) for name in PRESETS}
    for s in mine:
        for exercise, table in s.data["guards"].items():
            label = _label(s.name, exercise)
            defenses[label] = (s.name, Defenses(label, guards=(TableGuard(table, label),)))
            behaviour[label] = ("table", table["verdicts"])
    legit = lab.legitimate
    specs = [Spec("benign", r) for r in legit] + [
        Spec("attack", r, attack, place)
        for _, attack in attacks.values() for r in legit for place in attack.places]
    success, lost, board = {}, {}, []
    scored: dict[tuple[str, str], list] = {}
    for label, (by, defense) in defenses.items():
        if behaviour[label] not in scored:
            # labkit's gullible policy (marked cannot_hang: no timeout thread) and table lookups.
            scored[behaviour[label]] = score_policy(factory_of(gullible), defense, specs, lab)
        scores = scored[behaviour[label]]
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
    left.set_title("Exercises: attempted and ever passed (self-reported)")
    left.legend(loc="lower right")
    if round_ is not None:
        axes = right[0]
        image = axes.imshow(round_.success.to_numpy(dtype=float), cmap="Reds", vmin=0, vmax=1, aspect="auto")
        axes.set_xticks(range(len(round_.success.columns)), round_.success.columns, rotation=60, ha="right")
        axes.set_yticks(range(len(round_.success.index)), round_.success.index)
        axes.set_title("Lab 03 red team: attack success rate (from the ledger)")
        figure.colorbar(image, ax=axes, shrink=0.8)
    return figure
