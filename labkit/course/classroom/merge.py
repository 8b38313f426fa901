"""The class round: a folder of submissions merged into tables and one chart; nothing in a file runs.
A learner's rows are `NAME:KEY`; course rows never hold ':', so no learner can replace one. Names are
self-reported: a later file under a name replaces the earlier one, which is listed as superseded."""

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from labkit.course.classroom.submission import Submission, SubmissionError, printable, read
from labkit.refunds import red_team as round_03
from labkit.refunds.red_team import PRESETS, RedTeam

CHART_ATTACKS = 30  # the chart's rows at most: the strongest attacks (every one is in the tables)


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
        latest = max(group, key=_when)
        usable.append(latest)
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


def red_team(submissions: Sequence[Submission]) -> RedTeam | None:
    """Lab 03's red-team round over the submissions of its lab (`labkit.refunds.red_team.score_round`)."""
    return round_03.score_round([s for s in submissions if s.lab == round_03.ROUND_LAB])


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
