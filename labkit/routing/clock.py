"""The run's clock: `now()` and `await sleep(seconds)`. Tests and notebooks pass a FakeClock, so a
retry's 0.5 s, 1 s, 2 s backoff costs no wall time; the real clock is the default."""

import asyncio
import time
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """What a run's clock offers: `now()` in seconds and `await sleep(seconds)`; `run_plan` refuses
    (GraphError) a clock without both."""

    def now(self) -> float:
        """The time in seconds; a run reads only differences from its start."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds` (a retry's backoff) as this clock counts time."""
        ...


class RealClock:
    """Wall time: `time.perf_counter()` and `asyncio.sleep`; the clock a run uses unless given another."""

    def now(self) -> float:
        """`time.perf_counter()`: monotonic seconds from an arbitrary origin."""
        return time.perf_counter()

    async def sleep(self, seconds: float) -> None:
        """`asyncio.sleep(seconds)`: other tasks run meanwhile."""
        await asyncio.sleep(seconds)


class FakeClock:
    """Virtual time that moves only when something sleeps on it; `sleeps` records every wait. Sleeps
    do not overlap (two at once advance it by their sum): use the RealClock to measure parallel time."""

    def __init__(self, start: float = 0.0) -> None:
        self.time = float(start)
        self.sleeps: list[float] = []

    def now(self) -> float:
        """The virtual time: `start` plus every sleep so far."""
        return self.time

    async def sleep(self, seconds: float) -> None:
        """Record `seconds`, move the time on by them at once, and give other tasks one turn."""
        self.sleeps.append(seconds)
        self.time += seconds
        await asyncio.sleep(0)  # a turn for other tasks, as a real sleep gives
