"""Lab 03's chart: every (policy, defense) on utility against security, and the money it lost (log
scale: the two policies' losses differ a hundredfold; each bar labelled, so a zero drawn at 1 reads 0)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from labkit.core.colours import colour


def _bounds(cells: pd.Series) -> tuple[Any, Any]:
    """A column of `Interval`s as arrays of lows and highs."""
    return np.array([c.low for c in cells]), np.array([c.high for c in cells])


def utility_security(table: pd.DataFrame, intervals: pd.DataFrame | None = None) -> Figure:
    """Two panels from `metrics.matrix(...)`: attack success against utility under attack, and
    money lost per defense (log scale), one colour per policy. With `intervals`
    (`intervals.matrix_intervals`, indexed like `table`), each point gets its 95% error bars."""
    import matplotlib.pyplot as plt

    points = table.reset_index()
    policies = list(dict.fromkeys(points["policy"]))
    defenses = list(dict.fromkeys(points["defense"]))
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6), width_ratios=(1, 1.2))
    for index, policy in enumerate(policies):
        mine = points[points["policy"] == policy]
        x, y = mine["attack_success_rate"].to_numpy(), mine["utility_under_attack"].to_numpy()
        left.scatter(
            x, y, s=300 if index else 80, alpha=0.6, color=colour(policy), label=policy, zorder=2 - index
        )
        if intervals is not None:  # each point's 95% interval, both ways
            ci = intervals.loc[[(policy, defense) for defense in mine["defense"]]]
            (x0, x1), (y0, y1) = _bounds(ci["attack_success_rate"]), _bounds(ci["utility_under_attack"])
            bars = {"fmt": "none", "ecolor": colour(policy), "elinewidth": 1, "capsize": 3, "alpha": 0.8}
            left.errorbar(x, y, xerr=[x - x0, x1 - x], yerr=[y - y0, y1 - y], zorder=1, **bars)
        # Policies that share a point get one label each, the first below it, the next above.
        for (x, y), group in mine.groupby(["attack_success_rate", "utility_under_attack"]):
            names = "every defense" if len(group) == len(defenses) else "\n".join(group["defense"])
            left.annotate(
                names,
                (x, y),
                xytext=(10, 8 if index else -6),
                textcoords="offset points",
                fontsize=8,
                va="bottom" if index else "top",
                color=colour(policy),
            )
    # Room below the lowest point for its label and the legend, above the highest for its label.
    lowest = points["utility_under_attack"].min()
    if intervals is not None:
        lowest = min(lowest, *(i.low for i in intervals["utility_under_attack"]))
    bars = ", 95% intervals" if intervals is not None else ""
    left.set(
        xlabel=f"attack success rate (lower is better{bars})",
        ylabel=f"utility under attack (higher is better{bars})",
        xlim=(-0.1, 1.35),
        ylim=(lowest - 0.12, 1.06),
    )
    left.legend(loc="lower left")

    lost = table["money_lost"].unstack("policy").loc[defenses, policies]
    colours = [colour(policy) for policy in policies]
    lost.clip(lower=1).plot.barh(ax=right, width=0.8, color=colours, logx=True)
    for bars, policy in zip(right.containers, policies, strict=True):
        right.bar_label(bars, labels=[f"{value:,.0f}" for value in lost[policy]], padding=3, fontsize=8)
    right.set(
        ylabel="",
        xlim=(1, max(lost.max().max(), 1) * 10),
        xlabel="money lost, dollars, all episodes (log scale; 0 drawn at 1)",
    )
    right.invert_yaxis()
    right.legend(loc="lower right")
    fig.suptitle("Each policy under each defense, from the ledger")
    fig.tight_layout()
    return fig
