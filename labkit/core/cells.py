"""Table cells that never break: in JupyterLab a short value (an interval such as
`0.092 [0.027, 0.269]`, a count, `8.39 s recorded`) squeezed by a narrow window breaks at its spaces
onto two lines, and a table of intervals becomes unreadable at a laptop's 1366 px. JupyterLab's own
stylesheet sets every `td` to wrap, so a style on the `<table>` is not inherited: each short cell with
a figure in it gets its own `white-space: nowrap`. Words (a definition, a verdict, a header) still
wrap between words, and are what gives way when the window is narrow.

No pandas import here: `labkit/__init__.py` calls `tables_unbroken` on every `import labkit`, and
IPython looks the DataFrame type up by name only once a frame is shown."""

import html
import re
import sys
from typing import Any

SHORT = 24  # characters: the longest interval the labs print, "-0.889 [-0.984, -0.354]", has 23
_CELL = re.compile(r"<(td|th)((?: [^>]*)?)>([^<]*)</\1>")  # a cell of plain text, attributes kept


def _keep_whole(cell: re.Match) -> str:
    """One cell, set not to wrap when it is short and holds a figure (an interval, `model L2`) or is
    one word (an id such as `autoscale-workers`, which would break at its hyphen); a short cell of
    words (a header, "exploratory: no verdict") may still wrap between them: the table needs
    somewhere to give way."""
    tag, attributes, text = cell.groups()
    shown = html.unescape(text)  # `&lt;=` is two characters on the page
    whole = 0 < len(shown) <= SHORT and (
        any(c.isdigit() for c in shown) or not any(c.isspace() for c in shown)
    )
    return f'<{tag}{attributes} style="white-space: nowrap">{text}</{tag}>' if whole else cell.group(0)


def unbroken(page: str) -> str:
    """`page` (HTML) with each short cell that holds a figure or is one word set not to wrap
    (`_keep_whole`); every other byte as it was."""
    return _CELL.sub(_keep_whole, page)


def _frame_html(frame: Any) -> str | None:
    """A DataFrame's own notebook HTML (its display options kept: rows cut past max_rows), unbroken."""
    own = frame._repr_html_()  # None where the user turned notebook HTML off
    return None if own is None else unbroken(own)


def tables_unbroken() -> bool:
    """In an IPython kernel, show every pandas DataFrame with its short cells unbroken; True if one
    was found. Outside IPython (the CLI prints text tables) nothing changes."""
    ipython = sys.modules.get("IPython")  # a kernel imported it already; nothing else needs it
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return False
    formatter = shell.display_formatter.formatters["text/html"]
    for module in ("pandas", "pandas.core.frame"):  # pandas 3 names DataFrame's module `pandas`
        formatter.for_type_by_name(module, "DataFrame", _frame_html)
    return True
