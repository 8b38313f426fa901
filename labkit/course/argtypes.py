"""argparse types shared by the commands: numbers in range, refused in one line.

Kept out of `labkit.course.commands` (every module there is a command) and free of heavy imports,
so a command that needs them imports nothing else.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from labkit.core.text import shorten


def temperature(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 2:
        raise argparse.ArgumentTypeError(f"must be in 0..2, got {value:g}")
    return value


def int_in(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an int from `low` to `high` (a 401-digit seed is a usage error)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:  # also a number past Python's 4,300-digit limit
            raise argparse.ArgumentTypeError(f"not an integer: {shorten(text, 20)!r}") from None
        shown = str(value) if abs(value) < 10**20 else "a number that large"
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {shown}")
        if value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high}, got {shown}")
        return value

    return parse


positive = int_in(1, 2**53)
SEED_MAX = 2**31 - 1  # the local model's sampler takes a 32-bit seed, and trial t uses seed + t
