"""Lab 04's tables: text columns left-aligned in HTML, numbers right, plain text untouched."""

import pandas as pd

from labkit.routing.tables import LEFT, align_text_left, html


def test_text_columns_are_left_aligned_and_numbers_are_not():
    frame = pd.DataFrame({"error": ["short", "a longer message"], "runs": [1, 2], "ok": [True, False]},
                         index=pd.Index(["a", "b"], name="job"))
    out = html(frame)
    assert out.count(LEFT) == 2
    assert f"{LEFT}a longer message</td>" in out and "<td>2</td>" in out and "<td>False</td>" in out
    assert '<tr style="text-align: left;">' in out and "text-align: right" not in out
    assert repr(frame) == repr(frame.copy())  # the frame itself is not changed


def test_a_multi_index_keeps_one_style_per_text_cell():
    frame = pd.DataFrame({"text": ["x", "y", "z"], "n": [1, 2, 3]},
                         index=pd.MultiIndex.from_tuples([("L1", "a"), ("L1", "b"), ("L2", "a")]))
    assert html(frame).count(LEFT) == 3


def test_outside_ipython_nothing_is_registered():
    assert align_text_left() is False
