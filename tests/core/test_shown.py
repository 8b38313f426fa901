"""How labkit quotes a value it did not make: `shown` (short, never raising) and `shorten`."""

import numpy as np
import pytest

from labkit.core.answers import shown
from labkit.core.text import shorten


class Raising:
    def __repr__(self):
        raise RuntimeError("no repr")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("a  b   c", "'a b c'"),
        (10**5000, "a number of about 5,001 digits"),
        (Raising(), "<Raising instance at 0x"),
        (list(range(100)), "[0, 1, 2, 3, 4, 5, 6, 7, ...]"),
    ],
    ids=["spaces", "a huge int", "a raising repr", "a long list"],
)
def test_shown_is_short_and_never_raises(value, expected):
    assert shown(value).startswith(expected)
    assert len(shown("x" * 10**6, 40)) == 40 and len(shown(np.arange(10**6))) <= 80


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [("", 1, ""), ("abc", 3, "abc"), ("abcd", 3, "ab…"), ("abcd", 1, "…"), ("x" * 500, 80, "x" * 79 + "…")],
)
def test_shorten_keeps_what_fits_and_cuts_the_rest_with_an_ellipsis(text, limit, expected):
    assert shorten(text, limit) == expected
