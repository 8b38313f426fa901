"""TO BE DELETED when every caller uses `labkit.core.stats`. Error bars for the course's rates: how sure a table of a few dozen episodes can be.

- `wilson(successes, n)`: the Wilson score interval (E. B. Wilson, 1927) for a proportion;
- `bootstrap(values_by_case, statistic)`: resamples *cases*, not episodes, since trials of one
  case are not independent ("Adding Error Bars to Evals", E. Miller, 2024, arXiv:2411.00640);
- `paired(a, b)`: the per-case difference of two policies on the same cases, resampled by case;
  `mcnemar(a, b)`: the exact test for one pass/fail outcome per case; `verdict` words the two.

Every resampling is seeded (numpy's Generator), so a notebook's interval is the same every run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from labkit.core.stats import SEED, Interval, mcnemar, wilson

__all__ = ["Interval", "bootstrap", "mcnemar", "paired", "verdict", "wilson"]
_RESAMPLES = 2000


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


def verdict(interval: Interval, p: float | None = None) -> str:
    """ "a difference" when the paired interval excludes 0 and, where McNemar's test applies (`p`
    given), p < 0.05 too; else "not distinguishable": with ten cases the bootstrap alone is too eager."""
    if interval.excludes(0) and (p is None or p < 0.05):
        return "a difference"
    return "not distinguishable"
