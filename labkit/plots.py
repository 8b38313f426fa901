"""Charts for lab 01: what each controller achieved against what it spent."""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator


def outcomes_vs_tool_calls(tables: Mapping[str, pd.DataFrame]) -> Figure:
    """One panel per case set: cases passed (y) against tool calls spent (x), per controller.

    Controllers that land on the same point (the workflow and the scripted loop do) share
    one marker, labelled with both names, so a tie is visible rather than hidden.
    """
    fig, axes = plt.subplots(1, len(tables), figsize=(5.5 * len(tables), 4), squeeze=False)
    for ax, (title, table) in zip(axes[0], tables.items(), strict=True):
        points: dict[tuple[int, int], list[str]] = {}
        for name, row in table.iterrows():
            points.setdefault((int(row["tool_calls"]), int(row["passed"])), []).append(str(name))
        for (calls, passed), names in points.items():
            ax.scatter(calls, passed, s=60, zorder=3)
            ax.annotate("\n".join(names), (calls, passed), textcoords="offset points", xytext=(7, 0),
                        va="center", fontsize=8)
        total = int(table["total"].iloc[0])
        ax.set_ylim(-0.5, total + 1)
        ax.axhline(total, color="grey", linewidth=0.8, linestyle="--")
        ax.set_xlim(left=-1, right=max(x for x, _ in points) * 1.7 + 4)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(f"{title} ({total} cases)")
        ax.set_xlabel("tool calls, summed over the cases")
        ax.set_ylabel("cases passed")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
