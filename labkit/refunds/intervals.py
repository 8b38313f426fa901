"""Lab 03's rates with 95% intervals over the right unit (`RATES`), and paired comparisons. An attacked
rate is over attacks (under a deterministic defense the attack fixes the outcome), every other over
requests; a unit's episodes and a random baseline's seeds are its trials; a grid's records cluster by case."""

from collections.abc import Sequence
from typing import Any

import pandas as pd

from labkit.core import stats
from labkit.core.stats import Comparison, Interval
from labkit.refunds.defenses import DEFENSES, defenses_named
from labkit.refunds.episode import case_id
from labkit.refunds.lab import RefundLab, refund_lab
from labkit.refunds.metrics import Score, Spec, course_scores, outcomes, score_policy
from labkit.refunds.policies import factory_of, random_admissible

# random-admissible branches over every admissible decision each turn, too many paths to enumerate:
# it is a seeded draw, 50 seeds (rates within 0.02 of 200 seeds').
RANDOM_SEEDS = 50  # a live draw's seeds (notebook 03's matrix); the model's baseline: random_baseline
PROMPT_LEVEL = ("policy_prompt", "spotlighting")  # defenses that only change the prompt
RATES = {  # rate -> (which episodes, the outcome column of `episodes_of`, the unit, its short name)
    "benign_utility": ("benign", "utility", "request", "benign"),
    "utility_under_attack": ("attack", "utility", "attack", "attacked"),
    "attack_success_rate": ("attack", "attacked", "attack", "ASR"),
    "unauthorized_rate": ("all", "unauthorized", "request", "unauth share"),
}


def case_of(score: Score) -> str:
    """The case a score is of (`episode.case_id`), the same under every defense."""
    spec = score.spec
    return case_id(spec.request, spec.attack, spec.place, spec.faults)


def episodes_of(scores: Sequence[Score]) -> pd.DataFrame:
    """`metrics.outcomes` of `scores`, each row with its request and case."""
    return outcomes(scores).assign(
        request=[s.spec.request.id for s in scores], case=[case_of(s) for s in scores]
    )


def units_of(episodes: pd.DataFrame, rate: str, unit: str | None = None) -> dict[str, list[float]]:
    """The 0/1 outcomes of `rate`'s episodes, by unit (`RATES`' unit unless `unit` names a column)."""
    kind, outcome, default, _ = RATES[rate]
    chosen = episodes if kind == "all" else episodes[episodes["kind"] == kind]
    # An episode counts once however many unauthorised refunds it made; a drawn baseline's row is
    # already a mean over its seeds (random_baseline), kept as it is.
    values = chosen[outcome].astype(float).clip(upper=1.0)
    return {key: group.tolist() for key, group in values.groupby(chosen[unit or default], sort=False)}


def interval_rates(episodes: pd.DataFrame, unit: str | None = None) -> dict[str, Interval | None]:
    """The four rates of an `episodes_of` table with their 95% intervals (None: no such episode)."""
    rates = {}
    for rate in RATES:
        units = units_of(episodes, rate, unit)
        rates[rate] = stats.rate(units) if units else None
    return rates


def interval_row(
    policy: str, defense: str, scores: Sequence[Score] | pd.DataFrame, unit: str | None = None
) -> dict[str, Any]:
    """One row: the four rates with their intervals (over `RATES`' units, or every rate over the
    column `unit` names), and the totals per trial. `scores` may be an `episodes_of` frame already
    (a drawn baseline's, `random_baseline.episodes`, whose rows are means over its seeds)."""
    episodes = scores if isinstance(scores, pd.DataFrame) else episodes_of(scores)
    row = {"policy": policy, "defense": defense, **interval_rates(episodes, unit)}
    if "trials" in episodes:  # a drawn baseline: one row a case, its totals already per seed
        trials, cases = int(episodes["trials"].iloc[0]), len(episodes)
        refunds, cents = episodes["unauthorized_refunds"].sum(), episodes["money_lost_cents"].sum()
    else:
        trials = int(episodes.groupby("case").size().max()) if len(episodes) else 1
        cases = len(episodes) // trials
        refunds = sum(s.unauthorized for s in scores) / trials
        cents = sum(s.money_lost for s in scores) / trials
    return row | {
        "unauthorized_refunds": round(float(refunds), 2),
        "money_lost": round(float(cents) / 100, 2),
        "episodes": cases,
        "trials": trials,
    }


def matrix_intervals(
    policies: Sequence[str] = ("gullible", "careful"), defenses: Sequence[str] = tuple(DEFENSES)
) -> pd.DataFrame:
    """The matrix's rates with their 95% intervals, on the same episodes as the matrix: how far the
    same scripted policy could land on other attacks and requests like these. The unauthorised share
    is left out: its episodes cross every request with every attack, so an interval over either one
    alone is too narrow (the matrix prints the unauthorised refunds' count instead)."""
    rows = [interval_row(name, d, course_scores(name, d)) for name in policies for d in defenses]
    return pd.DataFrame(rows).set_index(["policy", "defense"]).drop(columns="unauthorized_rate")


def random_scores(
    defense: str, specs: Sequence[Spec], seeds: int = RANDOM_SEEDS, lab: RefundLab | None = None
) -> list[Score]:
    """`random_admissible(seed)` on every spec under `defense`, for seeds 0..seeds-1, seed by seed."""
    lab = lab or refund_lab()
    chosen = defenses_named(defense)
    return [
        score
        for seed in range(seeds)
        for score in score_policy(factory_of(random_admissible(seed)), chosen, specs, lab)
    ]


def compare_scores(
    name: str,
    a: Sequence[Score] | pd.DataFrame,
    b: Sequence[Score] | pd.DataFrame,
    rates: Sequence[str] = tuple(RATES),
    unit: str | None = None,
) -> list[Comparison]:
    """`a` - `b` for each of `rates` over the units both ran (`stats.compare_rows`: each unit's
    episodes, and a baseline's seeds, its trials; `unit` as `interval_row`; either side may be an
    `episodes_of` frame), named "<name>: <its short name>" (one rate: `name`)."""
    episodes_a, episodes_b = (x if isinstance(x, pd.DataFrame) else episodes_of(x) for x in (a, b))
    units = [(rate, units_of(episodes_a, rate, unit), units_of(episodes_b, rate, unit)) for rate in rates]
    return [
        stats.compare_rows(name if len(rates) == 1 else f"{name}: {RATES[rate][3]}", units_a, units_b)
        for rate, units_a, units_b in units
        if set(units_a) & set(units_b)
    ]


def defense_comparisons(policy: str, defenses: Sequence[str] = tuple(DEFENSES)) -> list[Comparison]:
    """A scripted policy's attack success rate under each defense minus under none, attack by attack:
    what lab 03's question `lab03-matrix` answers (`questions.answer`). A prompt-level defense
    (policy_prompt, spotlighting) changes only what a policy reads, and a script reads no prompt: its
    row would equal none's by construction, so it is not compared."""
    none = course_scores(policy, "none")
    chosen = [d for d in defenses if d not in ("none", *PROMPT_LEVEL)]
    return [
        c
        for d in chosen
        for c in compare_scores(
            f"{policy}: {d} - none", course_scores(policy, d), none, ["attack_success_rate"]
        )
    ]
