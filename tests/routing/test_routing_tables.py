"""Lab 04's tables in HTML: text columns left-aligned, numbers right, the frame itself untouched."""

import pandas as pd

from labkit.routing.tables import align_text_left, html

LEFT = '<td style="text-align: left;">'


def test_text_columns_are_left_aligned_and_numbers_are_not():
    frame = pd.DataFrame(
        {"error": ["short", "a longer message"], "runs": [1, 2], "ok": [True, False]},
        index=pd.Index(["a", "b"], name="job"),
    )
    out = html(frame)
    assert out.count(LEFT) == 2 and f"{LEFT}a longer message</td>" in out
    assert "<td>2</td>" in out and "<td>False</td>" in out and "text-align: right" not in out
    multi = pd.DataFrame(
        {"text": ["x", "y", "z"], "n": [1, 2, 3]},
        index=pd.MultiIndex.from_tuples([("L1", "a"), ("L1", "b"), ("L2", "a")]),
    )
    assert html(multi).count(LEFT) == 3
    assert align_text_left() is False  # outside IPython nothing is registered
