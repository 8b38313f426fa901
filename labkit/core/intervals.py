"""Error bars for the course's rates: how sure a table of a few dozen episodes can be.

One case of 24 is 0.04 of a pass rate, so a difference of one or two cases between two rows
is often noise. Every rate a lab reports gets an interval from one of these:

- `wilson(successes, n)`: the Wilson score interval for a proportion of independent trials
  (E. B. Wilson, 1927). It stays inside [0, 1] and is sensible at 0 of n and n of n, where the
  textbook "p ± 1.96·se" interval collapses to a point.
- `bootstrap(values_by_case, statistic)`: for a score averaged over cases that each ran several
  trials (pass@1, pass^k, money lost per episode), resample *cases*, not episodes: trials of one
  case are not independent, and treating them as such makes the interval too narrow. This is
  the clustered bootstrap recommended in "Adding Error Bars to Evals" (E. Miller, 2024,
  https://arxiv.org/abs/2411.00640).
- `paired(a, b)`: two policies run on the same cases are compared by the per-case difference,
  resampled by case: the cases' own difficulty cancels out, so a real difference shows sooner
  than from two separate intervals (Miller, section 4). `mcnemar(a, b)` is the exact test for
  one pass/fail outcome per case.

Every resampling takes a `seed` and uses numpy's own Generator, so a notebook's interval is the
same on every run (and nbval can check it). A difference is a difference only when its
interval excludes 0 (`Interval.excludes(0)`) and, where McNemar's test applies, p < 0.05 too;
otherwise the honest word is "not distinguishable" (`verdict(interval, p)` says which).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

Z95 = 1.959963984540054  # the standard normal's 97.5th percentile: a two-sided 95% interval
RESAMPLES = 2000  # bootstrap resamples: the 2.5th and 97.5th percentiles move by < 0.01 past this
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


def wilson(successes: int, n: int, z: float = Z95) -> Interval:
    """The Wilson score interval for `successes` of `n` independent trials.

    Refuses (ValueError) counts that are not ints with 0 <= successes <= n, and n = 0: no
    trials give no rate, not a rate of 0.
    """
    if type(successes) is not int or type(n) is not int or not 0 <= successes <= n or n == 0:
        raise ValueError(f"wilson needs int counts with 0 <= successes <= n and n > 0, got {successes}/{n}")
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    # At 0 of n (n of n) the lower (upper) bound is exactly 0 (1); the formula leaves float dust.
    low = 0.0 if successes == 0 else centre - half
    high = 1.0 if successes == n else centre + half
    return Interval(p, low, high)


def _percentiles(samples: np.ndarray) -> tuple[float, float]:
    low, high = np.percentile(samples, [2.5, 97.5])
    return float(low), float(high)


def bootstrap(
    values_by_case: Mapping[str, Sequence[float]],
    statistic: Callable[[Sequence[Sequence[float]]], float] | None = None,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Interval:
    """A 95% percentile interval for a statistic over cases, resampling whole cases.

    `values_by_case` maps each case to its trials' values (1.0/0.0 for pass/fail, or any
    number). `statistic` takes a list of cases' value lists and returns one number; by default
    the mean over cases of each case's mean (pass@1 when the values are passes). The estimate
    is the statistic on the cases as given. Refuses an empty mapping or a case without values.
    """
    cases = [list(map(float, values)) for values in values_by_case.values()]
    if not cases or any(not values for values in cases):
        raise ValueError("bootstrap needs at least one case, each with at least one value")
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(cases), size=(resamples, len(cases)))
    if statistic is None:  # the mean over cases of each case's mean: average each case once
        means = np.array([np.mean(values) for values in cases])
        return Interval(float(means.mean()), *_percentiles(means[draws].mean(axis=1)))
    samples = np.array([statistic([cases[i] for i in draw]) for draw in draws])
    return Interval(float(statistic(cases)), *_percentiles(samples))


def paired(
    a: Mapping[str, float],
    b: Mapping[str, float],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Interval:
    """The mean per-case difference a - b over the cases both were run on, with its interval.

    `a` and `b` map case ids to each policy's score on that case (a pass rate, pass^k, a 0/1
    outcome). Only cases in both count; refuses two mappings that share no case.
    """
    shared = sorted(set(a) & set(b))
    if not shared:
        raise ValueError("paired needs two score mappings over the same cases; these share none")
    differences = np.array([float(a[case]) - float(b[case]) for case in shared])
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(shared), size=(resamples, len(shared)))
    return Interval(float(differences.mean()), *_percentiles(differences[draws].mean(axis=1)))


def mcnemar(a: Mapping[str, bool], b: Mapping[str, bool]) -> float:
    """The exact two-sided McNemar p-value for two pass/fail outcomes on the same cases.

    Only the discordant cases carry information: with `x` cases that only `a` passed and `y`
    that only `b` passed, under "no difference" x is Binomial(x + y, 1/2). Returns 1.0 when no
    case is discordant. Refuses two mappings that share no case.
    """
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
    """"a difference" when the paired interval excludes 0 and, where McNemar's exact test applies
    (`p` given), p < 0.05 too; else "not distinguishable". With ten cases (or five trials) the
    percentile bootstrap alone is too eager (lab 03's model mediation - careful benign utility:
    [-0.70, -0.10], yet p = 0.125)."""
    if interval.excludes(0) and (p is None or p < 0.05):
        return "a difference"
    return "not distinguishable"
