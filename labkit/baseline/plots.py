"""Charts for lab 01: what each controller achieved against what it spent."""

from collections.abc import Mapping

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backend_bases import RendererBase as Renderer
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import Bbox

from labkit.core.colours import colour

_LINE = 11  # points between two names in one label
# Where a label may go, in order: (points right of its point, its middle's height in label heights).
_SIDES = ((12, 0.0), (-12, 0.0), (12, 0.6), (12, -0.6), (-12, 0.6), (-12, -0.6), (30, 1.2), (30, -1.2))


def _label(ax: Axes, point: tuple[int, int], names: list[str], taken: list[Bbox], renderer: Renderer) -> None:
    """Name the controllers at `point`, a line each in its colour, on the first side that overlaps nothing."""
    frame, style = ax.get_window_extent(renderer), dict(textcoords="offset points", va="center", fontsize=8)
    for dx, rise in _SIDES:
        middle, ha = rise * (_LINE * len(names) + 8), "left" if dx > 0 else "right"
        rows = [(name, middle + _LINE * ((len(names) - 1) / 2 - line)) for line, name in enumerate(names)]
        texts = [
            ax.annotate(name, point, xytext=(dx, y), ha=ha, color=colour(name), **style) for name, y in rows
        ]
        box = Bbox.union([text.get_window_extent(renderer) for text in texts])
        inside = frame.contains(box.x0, box.y0) and frame.contains(box.x1, box.y1)
        if inside and (not any(box.overlaps(other) for other in taken) or (dx, rise) == _SIDES[-1]):
            taken.append(box)
            return
        for text in texts:
            text.remove()


def outcomes_vs_tool_calls(tables: Mapping[str, pd.DataFrame]) -> Figure:
    """One panel per case set: cases passed (y) against tool calls spent (x), one marker per point in
    the controller's colour (dark grey where several tie), named beside it where no label covers another."""
    fig, axes = plt.subplots(1, len(tables), figsize=(5.5 * len(tables), 4), squeeze=False)
    groups = []
    for ax, (title, table) in zip(axes[0], tables.items(), strict=True):
        total = int(table["total"].iloc[0])
        for (calls, passed), same in table.groupby(["tool_calls", "passed"]):
            names = [str(name) for name in same.index]
            dot = colour(names[0]) if len(names) == 1 else "#212121"
            ax.scatter(calls, passed, s=90 if len(names) > 1 else 60, zorder=3, color=dot)
            groups.append((ax, (int(calls), int(passed)), names))
        ax.set_ylim(-0.5 - 0.1 * total, total * 1.08 + 0.5)
        ax.axhline(total, color="grey", linewidth=0.8, linestyle="--")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set(
            xlim=(-1, int(table["tool_calls"].max()) * 1.7 + 4),
            title=f"{title} ({total} cases)",
            xlabel="tool calls, summed over the cases",
            ylabel="cases passed",
        )
        ax.grid(alpha=0.3)
    fig.tight_layout()
    renderer, taken = fig.canvas.get_renderer(), {ax: [] for ax in axes[0]}
    radius = 6 * fig.dpi / 72  # a marker's half width, in pixels: no label covers a marker
    for ax, point, _ in groups:
        x, y = ax.transData.transform(point)
        taken[ax].append(Bbox.from_extents(x - radius, y - radius, x + radius, y + radius))
    for ax, point, names in sorted(groups, key=lambda group: -len(group[2])):  # the longest first
        _label(ax, point, names, taken[ax], renderer)
    return fig
