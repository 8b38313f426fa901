"""A forest plot: one row per estimate with its interval, baselines as shaded bands, the MDE as a
bracket. It replaces a tall table of intervals in a lesson; the table stays one click away."""

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from labkit.core.stats import Interval

_BAND_COLOURS = ("#d9d9d9", "#c6dbef", "#fdd0a2", "#c7e9c0")


def forest_plot(
    rows: Sequence[tuple[str, Interval]],
    *,
    bands: Mapping[str, Interval] | None = None,
    mde: tuple[float, float] | None = None,
    xlabel: str = "pass rate",
    title: str = "",
    zero: bool = False,
) -> Figure:
    """Each (label, interval) as a point with its 95% interval, top to bottom in the given order;
    each baseline in `bands` a shaded band over its interval; `mde` = (start, size) a bracket from
    start to start + size, cut at 1 (said in its label); `zero` a line at 0 (for differences)."""
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.32 * len(rows)))
    for colour, (name, band) in zip(_BAND_COLOURS * 4, (bands or {}).items(), strict=False):
        ax.axvspan(band.low, band.high, color=colour, alpha=0.6, label=f"{name}: {band}")
        ax.axvline(band.estimate, color="grey", linewidth=0.8)
    for y, (_, interval) in enumerate(rows):
        ax.plot([interval.low, interval.high], [y, y], color="black", linewidth=1.4)
        ax.plot(interval.estimate, y, "o", color="black", markersize=4)
    if zero:
        ax.axvline(0, color="black", linewidth=0.8, linestyle=":")
    if mde is not None:
        # The bracket stays inside what a rate or a difference of rates can reach (at most 1): an
        # MDE larger than the room left is said in words at the edge.
        start, size = mde
        end = min(start + size, 1.0)
        ax.set_xlim(min(ax.get_xlim()[0], start), max(ax.get_xlim()[1], end + 0.02))
        top = -0.75
        label = (
            f"MDE {size:.2f}"
            if end == start + size
            else f"MDE {size:.2f}: more than the {end - start:.2f} left"
        )
        ax.annotate("", xy=(start, top), xytext=(end, top), arrowprops={"arrowstyle": "|-|"})
        ax.text((start + end) / 2, top - 0.1, label, ha="center", va="bottom", fontsize=8)
    ax.set_yticks(range(len(rows)), [label for label, _ in rows], fontsize=8)
    ax.set(ylim=(len(rows) - 0.5, -1.3 if mde else -0.6), xlabel=xlabel)
    if title:
        ax.set_title(title, fontsize=10)
    if bands:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False, title="baselines")
    fig.tight_layout()
    return fig
