"""The class round: a folder of submissions merged into tables and one chart; nothing in a file runs.
A learner's rows are `NAME:KEY`; course rows never hold ':', so no learner can replace one. Names are
self-reported: a later file under a name replaces the earlier one, which is listed as superseded."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from labkit.course.classroom.submission import Submission, SubmissionError, printable, read

PRESETS = ("none", "mediation", "provenance", "confirmation", "all_deterministic")
CHART_ATTACKS = 30  # the chart's rows at most: the strongest attacks (every one is in the tables)
_ORDER = {"by": ["legit_paid", "attacks_stopped", "money_lost"], "ascending": [False, False, True]}


def _when(s: Submission) -> datetime:
    when = datetime.fromisoformat(s.data["submitted"])
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def load_folder(folder: Path) -> tuple[list[Submission], list[str]]:
    """Each learner's latest usable submission per lab in `folder` (on a tie, the first by file name),
    and one line per file left out: `skipped` (unusable, or a copy) or `superseded` (an earlier one)."""
    found: dict[tuple[str, str], list[Submission]] = {}
    skipped = []
    for path in sorted(folder.glob("*.json"), key=lambda p: p.name):
        try:
            submission = read(path)
        except SubmissionError as error:
            skipped.append(f"skipped {printable(path.name)}: {error}")
            continue
        key = (submission.lab, submission.name, submission.data.get("author", ""))
        found.setdefault(key, []).append(submission)
    usable = []
    for (lab, name, _), group in found.items():
        usable.append(latest := max(group, key=_when))
        for s in (s for s in group if s is not latest):
            if s.data == latest.data:
                skipped.append(f"skipped {s.file}: the same lab {lab} submission by {name} as {latest.file}")
                continue
            later = f"replaced by {latest.file} submitted {latest.data['submitted']}"
            skipped.append(
                f"superseded {s.file}: lab {lab} by {name} submitted {s.data['submitted']}, {later}"
            )
    return sorted(_told_apart(usable, skipped), key=lambda s: (s.lab, s.name)), skipped


def _told_apart(usable: list[Submission], notes: list[str]) -> list[Submission]:
    """Two learners who typed the same name (files from different checkouts: another author token)
    are both kept, the later ones as "NAME (2)", "NAME (3)" by first submission, with a line saying so."""
    by_name: dict[tuple[str, str], list[Submission]] = {}
    for s in sorted(usable, key=_when):
        by_name.setdefault((s.lab, s.name), []).append(s)
    kept = []
    for (lab, name), same in by_name.items():
        renamed = [same[0]] + [replace(s, name=f"{name} ({n})") for n, s in enumerate(same[1:], start=2)]
        if len(same) > 1:
            shown = ", ".join(f"{s.name!r} ({s.file})" for s in renamed)
            told = f"lab {lab} by {name!r} came from {len(same)} checkouts"
            notes.append(f"same name, different learners: {told}; kept as {shown}")
        kept += renamed
    return kept


def pass_counts(submissions: Sequence[Submission]) -> pd.DataFrame:
    """Per (lab, exercise): learners, attempted, ever passed, median first passing attempt (self-reported)."""
    rows = [
        (s.lab, name, e["attempts"] > 0, e["first_passed_attempt"])
        for s in submissions
        for name, e in s.data["exercises"].items()
    ]
    frame = pd.DataFrame(rows, columns=["lab", "exercise", "attempted", "first"]).astype({"first": float})
    frame["passed"] = frame["first"].notna()  # `read` refused a pass without a first passing attempt
    table = frame.groupby(["lab", "exercise"]).agg(
        attempted=("attempted", "sum"), passed=("passed", "sum"), median_attempts_to_pass=("first", "median")
    )
    learners = Counter(s.lab for s in submissions)
    table.insert(0, "learners", [learners[lab] for lab, _ in table.index])
    return table


@dataclass(frozen=True)
class RedTeam:
    """Lab 03's round: success rate per attack × defense, and the two leaderboards. A learner's defense
    is one of their guards: the one that passed its checker (the best if both did), else their best."""

    defenses: pd.DataFrame  # one row per defense, best first; `shown`: why this guard of the learner's
    attacks: pd.DataFrame  # one row per attack, strongest first
    success: pd.DataFrame  # attack × defense, attack success rate 0..1


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


def chart(counts: pd.DataFrame, round_: RedTeam | None):
    """One bounded figure: pass counts; the strongest attacks' success per course defense and learner mean."""
    from matplotlib.figure import Figure

    from labkit.core.colours import OUTCOMES

    panels = 1 + (round_ is not None)
    attacks = [] if round_ is None else list(round_.attacks.index[:CHART_ATTACKS])
    rows = max(len(counts), len(attacks))
    figure = Figure(figsize=(7 * panels, max(3.0, 0.3 * rows + 2.5)), layout="constrained")
    left, *right = figure.subplots(1, panels, squeeze=False)[0]
    labels = [f"lab {lab}: {exercise}" for lab, exercise in counts.index]
    left.barh(labels, counts["passed"], color=OUTCOMES["correct"], label="passed")
    failed = counts["attempted"] - counts["passed"]
    left.barh(labels, failed, left=counts["passed"], color=OUTCOMES["wrong"], label="attempted, not passed")
    left.xaxis.get_major_locator().set_params(integer=True)
    left.invert_yaxis()
    left.set(xlabel="learners", title="Exercises: attempted and ever passed (self-reported)")
    left.legend(loc="lower right")
    if round_ is not None:
        axes, success = right[0], round_.success.loc[attacks]
        learners = [d for d in success.columns if d not in PRESETS]
        mean = {f"mean of {len(learners)} learners": success[learners].mean(axis=1)} if learners else {}
        shown = success[list(PRESETS)].assign(**mean)
        image = axes.imshow(shown.to_numpy(dtype=float), cmap="Reds", vmin=0, vmax=1, aspect="auto")
        axes.set_xticks(range(len(shown.columns)), shown.columns, rotation=90)
        axes.set_yticks(range(len(attacks)), attacks)
        which = f"{len(attacks)} of {len(round_.attacks)} attacks, strongest first"
        axes.set_title(f"Lab 03 red team: attack success rate (from the ledger),\n{which}")
        figure.colorbar(image, ax=axes, shrink=0.8)
    return figure
