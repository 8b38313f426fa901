"""DataFrames that read well in JupyterLab: text columns left-aligned, numbers right-aligned.

JupyterLab strips a `<style>` block or a pandas Styler from an untrusted notebook's output, but
keeps an inline `style` attribute on a cell. The plain-text repr (what nbval compares) is untouched.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

_LEFT = '<td style="text-align: left;">'


def html(frame: pd.DataFrame) -> str:
    """`frame.to_html()` with its text (non-numeric) columns and its header left-aligned."""
    text = {n for n, dtype in enumerate(frame.dtypes) if not pd.api.types.is_numeric_dtype(dtype)}
    head, sep, body = frame.to_html().partition("<tbody>")
    head = head.replace('<tr style="text-align: right;">', '<tr style="text-align: left;">')

    def row(match: re.Match[str]) -> str:
        cells = iter(range(len(frame.columns)))
        return re.sub("<td>", lambda _: _LEFT if next(cells, -1) in text else "<td>", match.group(0))

    return head + sep + re.sub(r"<tr>.*?</tr>", row, body, flags=re.S)


def align_text_left() -> bool:
    """Show every DataFrame through `html` in this IPython kernel; False outside IPython."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - labkit's notebooks always have IPython
        return False
    shell: Any = get_ipython()
    if shell is None:
        return False
    shell.display_formatter.formatters["text/html"].for_type(pd.DataFrame, html)
    return True
