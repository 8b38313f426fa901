"""Lab 03's chart: every (policy, defense) on utility against security, and the money it lost (log
scale: the two policies' losses differ a hundredfold; each bar labelled, so a zero drawn at 1 reads 0)."""

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

from labkit.core.colours import colour

# Where a point's label may go, in points from it: right and below, right and above, then further
# right (past a neighbour's bar), then the left.
_BELOW, _ABOVE = ((10, -6), "left", "top"), ((10, 8), "left", "bottom")
_FURTHER = [
    ((40, -6), "left", "top"),
    ((40, 8), "left", "bottom"),
    ((-10, -6), "right", "top"),
    ((-10, 8), "right", "bottom"),
]


def _label_clear(ax: Any, names: str, point: tuple[float, float], ink: str, places: list) -> Any:
    """Annotate `point` with `names` at the first of `places` where the text stays inside the axes
    and crosses no error bar and no earlier label (at the last place if none is clear), so no bar
    runs through a label and none is cut at the frame.
    Call it once the axes are laid out: it measures in the figure's pixels. Returns the annotation."""
    renderer = ax.figure.canvas.get_renderer()
    taken = [text.get_window_extent(renderer) for text in ax.texts]
    bars = [c for c in ax.collections if isinstance(c, LineCollection)]  # errorbar's lines
    taken += [Bbox(ax.transData.transform(segment)) for c in bars for segment in c.get_segments()]
    for offset, ha, va in places:
        text = ax.annotate(
            names, point, xytext=offset, textcoords="offset points", fontsize=8, ha=ha, va=va, color=ink
        )
        box, frame = text.get_window_extent(renderer), ax.bbox
        inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
        if (offset, ha, va) == places[-1] or inside and not any(box.overlaps(other) for other in taken):
            return text
        text.remove()
    return None


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
    labels = []
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
        # Policies that share a point get one label each (placed below, once every bar is drawn).
        for (x, y), group in mine.groupby(["attack_success_rate", "utility_under_attack"]):
            names = "every defense" if len(group) == len(defenses) else "\n".join(group["defense"])
            labels.append((names, (x, y), index, colour(policy)))
    # Room below the lowest point for its label and the legend, above the highest for its label.
    lowest = points["utility_under_attack"].min()
    if intervals is not None:
        lowest = min(lowest, *(i.low for i in intervals["utility_under_attack"]))
    bars = ", 95% intervals" if intervals is not None else ""
    left.set(
        xlabel=f"attack success rate (lower is better{bars})",
        ylabel=f"utility under attack (higher is better{bars})",
        xlim=(-0.1, 1.35),
        ylim=(lowest - 0.12, 1.1),
    )
    left.set_yticks(
        [tick for tick in left.get_yticks() if lowest - 0.12 <= tick <= 1]
    )  # a share: none past 1
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
    for names, point, index, ink in labels:  # the first policy's labels try below first, the next above
        _label_clear(
            left,
            names,
            point,
            ink,
            [_BELOW, _ABOVE, *_FURTHER] if index == 0 else [_ABOVE, _BELOW, *_FURTHER],
        )
    return fig
