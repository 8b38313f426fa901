"""The run's clock: where event times come from and how a retry waits out its backoff.

A clock has two methods: `now()` (seconds, any origin) and `await sleep(seconds)`. The
scheduler takes one as an argument, so tests and notebooks pass a FakeClock and a retry
with a 0.5 s, 1 s, 2 s backoff costs no wall time at all, while the real clock stays the
default for anything measured.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class RealClock:
    """Wall time: `time.perf_counter()` and `asyncio.sleep`."""

    def now(self) -> float:
        return time.perf_counter()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def __repr__(self) -> str:
        return "RealClock()"


class FakeClock:
    """Virtual time that moves only when something sleeps on it.

    `sleep(s)` returns at once (after one yield to the event loop, as a real sleep would
    give other tasks a turn), moves `now()` forward by `s` and records `s` in `sleeps`,
    so a test can assert the exact backoff intervals a run waited.

    Sleeps do not overlap: two jobs that back off at the same moment advance the clock by
    the sum of their waits, not the longer one. Use it to count and order waits; measure
    overlap (parallel wall time) on the RealClock.
    """

    def __init__(self, start: float = 0.0) -> None:
        self.time = float(start)
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self.time

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.time += seconds
        await asyncio.sleep(0)

    def __repr__(self) -> str:
        return f"FakeClock(time={self.time:g}, sleeps={len(self.sleeps)})"
