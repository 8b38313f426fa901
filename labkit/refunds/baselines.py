"""Rows beside the model's: baselines and 95% intervals, by the same runtime and grader.

`interval_row`: Wilson over the cases for one trial per case; for several (the random baseline's
seeds), a bootstrap over *cases*. `paired_rows` compares two policies case by case.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from labkit.core.intervals import Interval, bootstrap, mcnemar, paired, verdict, wilson
from labkit.refunds.defenses import DEFENSES, defenses_named
from labkit.refunds.episode import case_id
from labkit.refunds.lab import RefundLab, refund_lab
from labkit.refunds.metrics import Score, Spec, course_scores, outcomes, score_policy
from labkit.refunds.policies import factory_of, random_admissible

# 50 seeds give rates within 0.02 of 200 seeds' (ASR 0.084 vs 0.079 under `none`).
RANDOM_SEEDS = 50
RATES = {  # column -> (which episodes, the outcome column of `episodes_of`, counted as true or false)
    "benign_utility": ("benign", "utility"),
    "utility_under_attack": ("attack", "utility"),
    "attack_success_rate": ("attack", "attacked"),
    "unauthorized_rate": ("all", "unauthorized"),
}


def case_of(score: Score) -> str:
    """The case a score is of (`episode.case_id`), the same under every defense."""
    spec = score.spec
    return case_id(spec.request, spec.attack, spec.place, spec.faults)


def episodes_of(scores: Sequence[Score]) -> pd.DataFrame:
    """`metrics.outcomes` of `scores`, each row with its case."""
    return outcomes(scores).assign(case=[case_of(s) for s in scores])


def _by_case(episodes: pd.DataFrame, kind: str, outcome: str) -> Any:
    """The outcomes (0/1) of the `kind` episodes ("all": every one), grouped by case in order."""
    chosen = episodes if kind == "all" else episodes[episodes["kind"] == kind]
    return chosen[outcome].astype(bool).astype(float).groupby(chosen["case"], sort=False)


def rate_interval(episodes: pd.DataFrame, kind: str, outcome: str, *, seed: int = 0) -> Interval | None:
    """A rate over the `kind` episodes with its 95% interval (see the module docstring); None if none."""
    cases = _by_case(episodes, kind, outcome)
    if not len(cases):
        return None
    if (cases.size() == 1).all():
        return wilson(int(cases.sum().sum()), len(cases))
    return bootstrap({case: values.tolist() for case, values in cases}, seed=seed)


def interval_rates(episodes: pd.DataFrame) -> dict[str, Any]:
    """The four rates of an `episodes_of` table, each with a `<rate>_ci` "[low, high]" column."""
    row: dict[str, Any] = {}
    for column, (kind, outcome) in RATES.items():
        interval = rate_interval(episodes, kind, outcome)
        row[column] = None if interval is None else round(interval.estimate, 3)
        row[f"{column}_ci"] = "-" if interval is None else f"[{interval.low:.2f}, {interval.high:.2f}]"
    return row


def interval_row(policy: str, defense: str, scores: Sequence[Score]) -> dict[str, Any]:
    """One row: the four rates with their intervals, and the totals per trial."""
    episodes = episodes_of(scores)
    cases = episodes.groupby("case", sort=False).size()
    trials = int(cases.max()) if len(cases) else 0
    row = {"policy": policy, "defense": defense, **interval_rates(episodes)}
    row["unauthorized_refunds"] = round(sum(s.unauthorized for s in scores) / max(trials, 1), 2)
    row["money_lost"] = round(sum(s.money_lost for s in scores) / 100 / max(trials, 1), 2)
    row["episodes"] = len(cases)
    row["trials"] = trials
    row["interval"] = "wilson" if trials == 1 else f"bootstrap over {len(cases)} cases"
    return row


def matrix_intervals(policies: Sequence[str] = ("gullible", "careful")) -> list[dict[str, Any]]:
    """The matrix's rates with their 95% (Wilson) intervals, on the same episodes as the matrix: how far
    the same scripted policy could land on another suite of the same size."""
    return [interval_row(name, d, course_scores(name, d)) for name in policies for d in DEFENSES]


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


def paired_rows(name_a: str, a: Sequence[Score], name_b: str, b: Sequence[Score]) -> list[dict[str, Any]]:
    """`a` - `b` per rate, over the cases both ran: the mean difference, its paired bootstrap
    interval, McNemar's exact p where both are one trial per case ("-" otherwise), and the
    verdict (`labkit.core.intervals.verdict`)."""
    out, episodes_a, episodes_b = [], episodes_of(a), episodes_of(b)
    for column, (kind, outcome) in RATES.items():
        by_a, by_b = _by_case(episodes_a, kind, outcome), _by_case(episodes_b, kind, outcome)
        mean_a, mean_b = by_a.mean().to_dict(), by_b.mean().to_dict()
        if not set(mean_a) & set(mean_b):
            continue
        interval = paired(mean_a, mean_b)
        single = (by_a.size() == 1).all() and (by_b.size() == 1).all()
        p = (
            mcnemar({c: v == 1.0 for c, v in mean_a.items()}, {c: v == 1.0 for c, v in mean_b.items()})
            if single
            else None
        )
        out.append(
            {
                "comparison": f"{name_a} - {name_b}",
                "rate": column,
                "cases": len(set(mean_a) & set(mean_b)),
                "difference": round(interval.estimate, 3),
                "difference_ci": f"[{interval.low:.2f}, {interval.high:.2f}]",
                "mcnemar_p": "-" if p is None else f"{p:.3f}",
                "verdict": verdict(interval, p),
            }
        )
    return out
