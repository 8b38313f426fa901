"""Each experiment's declared question (fixtures/questions/questions.json), and the answer to it: the
one place a verdict is given, for the notebooks and for every CLI command alike.

A question names its family of comparisons before anything is recorded. `answer` takes whatever
comparisons a cell or a command computed: a declared one (same name, a leading model name aside,
on the declared number of units) gets Bonferroni's p over the declared family, the MDE of the
declared test at that level, and lab 02's verdict; every other one is exploratory, with its
estimate and interval and no verdict. Bonferroni, not Holm: Holm's p for one comparison depends
on the others' p, so a command given fewer files would decide differently; m * p does not."""

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

import pandas as pd

from labkit.core import stats
from labkit.core.errors import FixtureError, LabError
from labkit.core.fixtures import FIXTURES, load_json, read_json

QUESTIONS = FIXTURES / "questions" / "questions.json"
GAIN = 0.20  # the difference every design is sized for (power 0.80)
RECORDED_WITH = "SmolLM2-135M"  # the model every declared question was recorded with
_SCHEMA = read_json(FIXTURES / "questions" / "questions.schema.json")  # what questions.json holds


@dataclass(frozen=True)
class Question:
    """One declared question: what it `asks`, its `unit`, `test` and `level`, the `comparisons` it
    tests (one family), the design (`units` units of `trials` trials), the `direction` a gain goes,
    and the background its power assumes (`discordant` for McNemar, `sd` for the sign-flip test).
    `effective_units`: where the units weigh unequally (the sign-flip test weighs each unit by its
    trials), Kish's effective number of them, which the power and the MDE are computed on."""

    id: str
    lab: str
    asks: str
    unit: str
    test: str
    level: float
    comparisons: tuple[str, ...]
    units: int
    trials: int
    direction: str
    discordant: float = 0.0
    sd: float = 0.0
    effective_units: float = 0.0

    @property
    def size(self) -> float:
        """The number of units the power is computed on: `effective_units` where declared, else `units`."""
        return self.effective_units or self.units

    @property
    def alpha(self) -> float:
        """The level each comparison is tested at: Bonferroni's, level / family size."""
        return self.level / len(self.comparisons)

    def mde(self, sd: float | None = None) -> float:
        """The smallest gain the declared test detects with 80% power at `alpha` on the declared design
        (`size` units), by `stats.mde` (McNemar) or `stats.mde_mean` (sign-flip: with the declared
        `sd`, or the `sd` a recording showed)."""
        if self.test == "exact McNemar":
            return stats.mde(self.units, discordant=self.discordant, alpha=self.alpha)
        return stats.mde_mean(self.size, self.sd if sd is None else sd, self.alpha)

    def power(self, gain: float = GAIN, sd: float | None = None) -> float:
        """The chance the declared test rejects a true gain of `gain` on the declared design (McNemar
        exactly, `stats.power`; the sign-flip test by its t-test match, `stats.power_mean`, with `sd`
        as `mde` takes it)."""
        if self.test == "exact McNemar":
            return stats.power(self.units, gain, self.discordant, self.alpha)
        return stats.power_mean(self.size, gain, self.sd if sd is None else sd, self.alpha)


@cache
def questions() -> dict[str, Question]:
    """Every declared question by id; FixtureError (one line naming the field) if the file is wrong.
    (serves: ours — a shipped fixture, by schema)"""
    data = load_json(QUESTIONS, _SCHEMA)
    return {
        key: Question(key, **{**value, "comparisons": tuple(value["comparisons"])})
        for key, value in data.items()
        if key != "$comment"
    }


def question(name: str) -> Question:
    """The question called `name`; FixtureError listing the known ones otherwise (serves: user)."""
    if name not in (known := questions()):
        raise FixtureError(f"no declared question {name!r} (known: {', '.join(known)})")
    return known[name]


def _declared_as(question: Question, comparison: stats.Comparison) -> int | None:
    """Where in `question`'s family `comparison` stands (None: not declared there): its name, or its
    name after the recorded model's ("SmolLM2-135M example L3 T=0 − ..." for "example L3 T=0 − ..."; a
    run of another model is exploratory), on the declared number of units."""
    if comparison.n != question.units:
        return None
    for name in (comparison.name, comparison.name.removeprefix(f"{RECORDED_WITH} ")):
        if name in question.comparisons:
            return question.comparisons.index(name)
    return None


def _answer_one(chosen: Question, comparisons: Sequence[stats.Comparison]) -> list[stats.Comparison]:
    """The comparisons `chosen` declares, answered (see `answer`), in the declared order."""
    found = [(place, c) for c in comparisons if (place := _declared_as(chosen, c)) is not None]
    declared = sorted(found, key=lambda pair: pair[0])
    places = [place for place, _ in declared]
    if twice := [place for place in places if places.count(place) > 1]:  # serves: user — two files, one name
        raise LabError(
            f"question {chosen.id!r}: two runs give the comparison {chosen.comparisons[twice[0]]!r} "
            "(recorded twice under one name?): pass one of them"
        )
    m = len(chosen.comparisons)
    return [
        replace(
            c,
            family=chosen.id,
            p_adjusted=min(1.0, m * c.p),
            mde=chosen.mde(),
            room=(1 - c.b_share) if chosen.direction == "higher" else c.b_share,
        )
        for _, c in declared
    ]


def answer(name: str, comparisons: Sequence[stats.Comparison]) -> list[stats.Comparison]:
    """`comparisons` answered as question `name` declares (or, for a lab's number such as "02", as
    each of that lab's questions declares): the declared ones first, in the declared order, each
    with Bonferroni's p (`p_adjusted`, m * p capped at 1), the declared test's MDE at that level on its
    units and the room b leaves in the declared direction; then the rest, exploratory. A comparison
    a question declares twice (two rows of one name) is refused: LabError."""
    chosen = [q for q in questions().values() if q.lab == name] or [question(name)]
    answered = [c for q in chosen for c in _answer_one(q, comparisons)]
    rest = [c for c in comparisons if all(_declared_as(q, c) is None for q in chosen)]
    return answered + [replace(c, exploratory=True) for c in rest]


def answer_records(name: str, comparisons: Sequence[stats.Comparison]) -> list[dict[str, Any]]:
    """`answer` as JSON records (what `--json` prints): name, question, interval, test, n, p and its
    Monte-Carlo error, Bonferroni's p, MDE and verdict; the p values and MDE are null for an exploratory
    row (its table prints "-": no test was declared for it) and the MDE where there is none."""
    return [
        {
            "comparison": c.name,
            "question": None if c.exploratory else c.family,
            **vars(c.interval),
            "test": c.test,
            "n": c.n,
            "p": None if c.exploratory else c.p,
            "p_se": None if c.exploratory else c.p_se,
            "p_adjusted": None if c.exploratory else c.p_adjusted,
            "mde": None if c.exploratory or math.isnan(c.mde) else c.mde,
            "verdict": c.verdict,
        }
        for c in answer(name, comparisons)
    ]


def _p_columns(record: dict[str, Any]) -> dict[str, str]:
    """A record's p and Bonferroni's p as the table prints them ("-" for an exploratory row)."""
    if record["question"] is None:
        return {"p": "-", "p x m (Bonferroni)": "-"}
    m = len(question(record["question"]).comparisons)
    adjusted = stats.p_text(record["p_adjusted"], min(1.0, record["p_se"] * m))
    return {"p": stats.p_text(record["p"], record["p_se"]), "p x m (Bonferroni)": adjusted}


def records_table(records: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """`answer_records` as the table `answer_table` prints: estimate [interval], test, n, p, the
    adjusted p ("-" for exploratory rows) and the verdict."""
    rows = [
        {
            "comparison": r["comparison"],
            "difference [95% interval]": str(stats.Interval(r["estimate"], r["low"], r["high"])),
            "interval": r["method"],
            "test": r["test"],
            "n": r["n"],
            **_p_columns(r),
            "verdict": r["verdict"],
        }
        for r in records
    ]
    frame = pd.DataFrame(rows).set_index("comparison")
    declared = dict.fromkeys(r["question"] for r in records if r["question"])
    frame.columns.name = "declared: " + (", ".join(declared) or "none")
    return frame


def answer_table(name: str, comparisons: Sequence[stats.Comparison]) -> pd.DataFrame:
    """`answer` as a table (`records_table`): a row per comparison with its difference and interval,
    test, units, p and Bonferroni's p (declared rows only; "-" for exploratory ones) and the verdict.
    The columns are named by the declared question ids (`question(id).asks` says what each asks)."""
    return records_table(answer_records(name, comparisons))


def design_table() -> pd.DataFrame:
    """One row per declared question: the lab, unit, test, design, family size, each comparison's
    level, the power for a gain of 0.20 and the MDE at 80% power."""
    rows = [
        {
            "question": q.id,
            "lab": q.lab,
            "unit": q.unit,
            "test": q.test,
            "units": q.units,
            "trials": q.trials,
            "comparisons": len(q.comparisons),
            "level each": round(q.alpha, 4),
            f"power for {GAIN:.2f}": round(q.power(), 2),
            "MDE": q.mde(),
        }
        for q in questions().values()
    ]
    return pd.DataFrame(rows).set_index("question")
