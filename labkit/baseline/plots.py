"""Charts for lab 01: what each controller achieved against what it spent."""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from labkit.core.colours import colour

_LINE = 11  # points between two names stacked beside one marker


def _tie(ax: Axes, calls: int, passed: int, names: list[str], *, downward: bool) -> None:
    """Controllers on one point: concentric rings, one per controller, names in their colours."""
    for ring, name in enumerate(names):
        ax.scatter(
            calls,
            passed,
            s=60 + 70 * ring,
            zorder=3 + len(names) - ring,
            linewidths=1.5,
            facecolors=colour(name) if ring == 0 else "none",
            edgecolors=colour(name),
        )
    for line, name in enumerate(names):
        offset = 4 - _LINE * line if downward else -4 + _LINE * (len(names) - 1 - line)
        ax.annotate(
            name,
            (calls, passed),
            textcoords="offset points",
            xytext=(10 + 3 * len(names), offset),
            va="center",
            fontsize=8,
            color=colour(name),
        )


def outcomes_vs_tool_calls(tables: Mapping[str, pd.DataFrame]) -> Figure:
    """One panel per case set: cases passed (y) against tool calls spent (x), one marker per
    controller in its `labkit.core.colours` colour; controllers on one point are concentric rings
    named one under the other, so a tie is visible, and close labels take opposite sides."""
    fig, axes = plt.subplots(1, len(tables), figsize=(5.5 * len(tables), 4), squeeze=False)
    for ax, (title, table) in zip(axes[0], tables.items(), strict=True):
        total = int(table["total"].iloc[0])
        right = int(table["tool_calls"].max()) * 1.7 + 4
        previous: dict[int, tuple[int, bool]] = {}  # level -> (x, downward) of the last point drawn
        for (calls, passed), same in table.groupby(["tool_calls", "passed"]):
            names = [str(name) for name in same.index]
            downward = passed >= total / 2
            if passed in previous and calls - previous[passed][0] < 0.25 * right:
                downward = not previous[passed][1]
            previous[passed] = (calls, downward)
            _tie(ax, calls, passed, names, downward=downward)
        ax.set_ylim(-0.5 - 0.1 * total, total * 1.08 + 0.5)
        ax.axhline(total, color="grey", linewidth=0.8, linestyle="--")
        ax.set_xlim(left=-1, right=right)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(f"{title} ({total} cases)")
        ax.set_xlabel("tool calls, summed over the cases")
        ax.set_ylabel("cases passed")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
