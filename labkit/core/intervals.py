"""Error bars for the course's rates: how sure a table of a few dozen episodes can be.

- `wilson(successes, n)`: the Wilson score interval (E. B. Wilson, 1927) for a proportion;
- `bootstrap(values_by_case, statistic)`: resamples *cases*, not episodes, since trials of one
  case are not independent ("Adding Error Bars to Evals", E. Miller, 2024, arXiv:2411.00640);
- `paired(a, b)`: the per-case difference of two policies on the same cases, resampled by case;
  `mcnemar(a, b)`: the exact test for one pass/fail outcome per case; `verdict` words the two.

Every resampling is seeded (numpy's Generator), so a notebook's interval is the same every run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

_Z95 = 1.959963984540054  # the standard normal's 97.5th percentile: a two-sided 95% interval
_RESAMPLES = 2000  # bootstrap resamples: the 2.5th and 97.5th percentiles move by < 0.01 past this
SEED = 0


@dataclass(frozen=True)
class Interval:
    """A point estimate with its 95% interval: `low <= estimate <= high`."""

    estimate: float
    low: float
    high: float

    def excludes(self, value: float) -> bool:
        """True when `value` lies outside the interval (a difference that is a difference)."""
        return value < self.low or value > self.high

    def __str__(self) -> str:
        return f"{self.estimate:.3f} [{self.low:.3f}, {self.high:.3f}]"


def wilson(successes: int, n: int) -> Interval:
    """The Wilson score interval for `successes` of `n` independent trials (ValueError unless
    they are ints with 0 <= successes <= n and n > 0)."""
    if type(successes) is not int or type(n) is not int or not 0 <= successes <= n or n == 0:
        raise ValueError(f"wilson needs int counts with 0 <= successes <= n and n > 0, got {successes}/{n}")
    p, z = successes / n, _Z95
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    # At 0 of n (n of n) the lower (upper) bound is exactly 0 (1); the formula leaves float dust.
    low = 0.0 if successes == 0 else centre - half
    high = 1.0 if successes == n else centre + half
    return Interval(p, low, high)


def _resampled(values: np.ndarray, seed: int) -> Interval:
    """The mean of `values` with the 2.5th and 97.5th percentiles of the means of its resamples."""
    draws = np.random.default_rng(seed).integers(0, len(values), size=(_RESAMPLES, len(values)))
    low, high = np.percentile(values[draws].mean(axis=1), [2.5, 97.5])
    return Interval(float(values.mean()), float(low), float(high))


def bootstrap(values_by_case: Mapping[str, Sequence[float]], *, seed: int = SEED) -> Interval:
    """The mean over cases of each case's mean (pass@1 for 0/1 values) with its 95% percentile
    interval, resampling whole cases (each a list of its trials' values)."""
    cases = [list(map(float, values)) for values in values_by_case.values()]
    if not cases or any(not values for values in cases):
        raise ValueError("bootstrap needs at least one case, each with at least one value")
    return _resampled(np.array([np.mean(values) for values in cases]), seed)  # each case counts once


def paired(a: Mapping[str, float], b: Mapping[str, float], *, seed: int = SEED) -> Interval:
    """The mean per-case difference a - b (case id -> score) over the cases both ran, with its interval."""
    shared = sorted(set(a) & set(b))
    if not shared:
        raise ValueError("paired needs two score mappings over the same cases; these share none")
    return _resampled(np.array([float(a[case]) - float(b[case]) for case in shared]), seed)


def mcnemar(a: Mapping[str, bool], b: Mapping[str, bool]) -> float:
    """The exact two-sided McNemar p-value for two pass/fail outcomes on the same cases: with x
    cases only `a` passed and y only `b` passed, x is Binomial(x + y, 1/2) under no difference."""
    shared = set(a) & set(b)
    if not shared:
        raise ValueError("mcnemar needs two outcome mappings over the same cases; these share none")
    only_a = sum(1 for case in shared if a[case] and not b[case])
    only_b = sum(1 for case in shared if b[case] and not a[case])
    discordant = only_a + only_b
    if discordant == 0:
        return 1.0
    tail = sum(math.comb(discordant, i) for i in range(min(only_a, only_b) + 1)) / 2**discordant
    return min(1.0, 2 * tail)


def verdict(interval: Interval, p: float | None = None) -> str:
    """ "a difference" when the paired interval excludes 0 and, where McNemar's test applies (`p`
    given), p < 0.05 too; else "not distinguishable": with ten cases the bootstrap alone is too eager."""
    if interval.excludes(0) and (p is None or p < 0.05):
        return "a difference"
    return "not distinguishable"
