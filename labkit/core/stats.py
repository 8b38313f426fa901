"""The course's statistics, one method per design, on scipy.stats. A rate: `wilson` when each unit (a
case, a request, an attack) ran once, `rate` when units ran several trials (a cluster bootstrap over
units: E. Miller, "Adding Error Bars to Evals", 2024, arXiv:2411.00640). A paired difference:
`compare_rows` (Newcombe with exact McNemar, or the cluster bootstrap with a sign-flip test, exact
up to 24 non-zero units, else Monte-Carlo with its standard error). One
printed family: `holm`. `mde`: the smallest gain detected with 80% power. No interval has zero width
(where every unit agrees with itself the score interval is used); every draw is seeded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache

import numpy as np
import pandas as pd
from scipy import stats

ALPHA = 0.05  # the series' level: a two-sided 95% interval, a test at 0.05
POWER = 0.80  # the power an MDE is quoted at
SEED = 0
_Z = float(stats.norm.ppf(1 - ALPHA / 2))
_RESAMPLES = 2000  # bootstrap resamples: the interval's ends move by < 0.01 past this
_EXACT_UNITS = 24  # sign_flip enumerates all 2**m sign patterns of m <= 24 non-zero units (16.8 M sums)
_DRAWS = 99_999  # else it draws this many: a Monte-Carlo s.e. of p below 0.0016
_CHUNK = 2**16  # sums sign_flip holds at once when it enumerates: 0.5 MB

Values = Mapping[str, "float | Sequence[float]"]  # unit id -> its trials' 0/1 (or one value)


@dataclass(frozen=True)
class Interval:
    """An estimate with its 95% interval (`low <= estimate <= high`, `low < high`) and its method."""

    estimate: float
    low: float
    high: float
    method: str = "Wilson"

    def excludes(self, value: float) -> bool:
        """True when `value` lies outside the interval."""
        return value < self.low or value > self.high

    def __str__(self) -> str:
        return f"{self.estimate:.3f} [{self.low:.3f}, {self.high:.3f}]"


def wilson(successes: float, n: int) -> Interval:
    """The Wilson score interval (E. B. Wilson, JASA 22, 1927) for `successes` of `n` units; the
    count may be fractional (a sum of per-unit means). ValueError unless 0 <= successes <= n, n > 0."""
    if isinstance(successes, bool) or not isinstance(n, int) or n <= 0 or not 0 <= successes <= n:
        raise ValueError(f"wilson needs 0 <= successes <= n and n > 0, got {successes}/{n}")
    p, z2 = successes / n, _Z * _Z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = _Z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    # At 0 (or n) of n the bound is exactly 0 (or 1); the formula leaves float dust there.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    return Interval(p, low, 1.0 if successes == n else min(1.0, centre + half))


def _units(values: Values) -> dict[str, np.ndarray]:
    """Each unit's trials as an array (a bare number is one trial). ValueError for no units or a
    unit with no trials."""
    units = {unit: np.atleast_1d(np.asarray(trials, dtype=float)) for unit, trials in values.items()}
    if not units:
        raise ValueError("no units to estimate over")
    if empty := [unit for unit, trials in units.items() if not trials.size]:
        raise ValueError(f"unit {empty[0]!r} has no trials")
    return units


def unit_means(values: Values) -> dict[str, float]:
    """Each unit's mean over its trials (`_units` says what is refused)."""
    return {unit: float(trials.mean()) for unit, trials in _units(values).items()}


def _weighted_mean(values: np.ndarray, weights: np.ndarray, axis: int = -1) -> np.ndarray:
    return (values * weights).sum(axis=axis) / weights.sum(axis=axis)


def _bootstrap(values: np.ndarray, seed: int, weights: np.ndarray | None = None) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of the (weighted) mean over resampled units (percentile)."""
    if np.ptp(values) == 0:
        return float(values[0]), float(values[0])
    weights = np.ones_like(values) if weights is None else weights
    ends = stats.bootstrap(
        (values, weights),
        _weighted_mean,
        paired=True,
        vectorized=True,
        n_resamples=_RESAMPLES,
        method="percentile",
        rng=np.random.default_rng(seed),
    ).confidence_interval
    return float(ends.low), float(ends.high)


def rate(values: Values, *, seed: int = SEED) -> Interval:
    """The share of all trials that passed, with its 95% interval over units: Wilson on the number of
    units when each ran once, or every unit's trials agree, or all units share one rate; else a
    cluster bootstrap of the pooled share, resampling whole units (percentile)."""
    trials = list(_units(values).values())
    passed, counts = np.array([t.sum() for t in trials]), np.array([len(t) for t in trials])
    share, n = float(passed.sum() / counts.sum()), len(trials)
    means = passed / counts
    if np.isin(means, (0.0, 1.0)).all() or np.ptp(means) == 0:
        method = "Wilson" if np.isin(means, (0.0, 1.0)).all() else "Wilson on unit means"
        return replace(wilson(min(float(n), share * n), n), method=method)
    low, high = _bootstrap(means, seed, counts.astype(float))
    return Interval(share, low, high, "cluster bootstrap")


def newcombe(a: Mapping[str, bool], b: Mapping[str, bool]) -> Interval:
    """The paired difference of pass rates a - b over their shared units, one outcome each, with
    Newcombe's hybrid score interval (R. G. Newcombe, Stat. Med. 17:2635, 1998, method 10)."""
    units = _shared(a, b)
    both = sum(bool(a[u]) and bool(b[u]) for u in units)
    only_a = sum(bool(a[u]) and not b[u] for u in units)
    only_b = sum(bool(b[u]) and not a[u] for u in units)
    neither, n = len(units) - both - only_a - only_b, len(units)
    p1, p2 = (both + only_a) / n, (both + only_b) / n
    first, second = wilson(both + only_a, n), wilson(both + only_b, n)
    margins = (both + only_a) * (neither + only_b) * (both + only_b) * (neither + only_a)
    cross = both * neither - only_a * only_b
    # Newcombe's correlation term, with his continuity adjustment of the cross product.
    adjusted = cross - n / 2 if cross > n / 2 else min(cross, 0)
    phi = adjusted / math.sqrt(margins) if margins else 0.0
    below = (p1 - first.low) ** 2 - 2 * phi * (p1 - first.low) * (second.high - p2) + (second.high - p2) ** 2
    above = (second.low - p2) ** 2 - 2 * phi * (p2 - second.low) * (first.high - p1) + (first.high - p1) ** 2
    diff = p1 - p2
    return Interval(diff, max(-1.0, diff - math.sqrt(below)), min(1.0, diff + math.sqrt(above)), "Newcombe")


def mcnemar(a: Mapping[str, bool], b: Mapping[str, bool]) -> float:
    """The exact two-sided McNemar p-value over the shared units: with x units only `a` passed and
    y only `b` passed, x ~ Binomial(x + y, 1/2) under no difference (scipy.stats.binomtest)."""
    units = _shared(a, b)
    only_a = sum(bool(a[u]) and not b[u] for u in units)
    only_b = sum(bool(b[u]) and not a[u] for u in units)
    return 1.0 if only_a + only_b == 0 else _mcnemar(only_a, only_b)


@cache
def _mcnemar(only_a: int, only_b: int) -> float:
    return float(stats.binomtest(only_a, only_a + only_b, 0.5).pvalue)


@dataclass(frozen=True)
class SignFlip:
    """A sign-flip test's two-sided p-value: exact over all `flips` sign patterns (`se` 0), or
    Monte-Carlo over `flips` random ones, `se` the p-value's Monte-Carlo standard error."""

    p: float
    se: float
    flips: int
    exact: bool

    def __str__(self) -> str:
        return f"{self.p:.4f} (exact)" if self.exact else f"{_supported(self.p, self.se)} (Monte-Carlo)"


def _supported(p: float, se: float) -> str:
    """`p` to the digits its Monte-Carlo standard error supports (4 when exact), with the error."""
    if se == 0:
        return f"{p:.4f}"
    places = min(4, max(1, math.floor(-math.log10(se))))
    return f"{p:.{places}f} ± {se:.1g}"


def _signed_sums(values: np.ndarray) -> np.ndarray:
    """sum(s_i * values_i) for every sign pattern s in {+1, -1}^len(values) (2**len(values) sums)."""
    sums = np.zeros(1)
    for value in values:
        sums = np.concatenate((sums + value, sums - value))
    return sums


def sign_flip(
    differences: Sequence[float], *, weights: Sequence[float] | None = None, seed: int = SEED
) -> SignFlip:
    """The two-sided paired permutation (sign-flip) test that the weighted mean per-unit difference,
    sum(w * d) / sum(w), is 0: under no difference each unit's sign is +/- with equal chance, and p is
    the share of sign patterns whose |weighted mean| reaches the observed one (ties within 1e-9 of
    sum |w * d|, float rounding, count as reaching it). A unit with w * d == 0 is the same under
    either sign, so those are dropped first. With m <= 24 units left (2**24
    sign patterns) every one is enumerated (exact, `se` 0, `seed` unused; vectorised in chunks of
    2**16 sums); above that `_DRAWS` random patterns are drawn (seeded by `seed`), p = (1 + reaching)
    / (1 + draws), which counts the observed pattern (B. Phipson and G. K. Smyth, SAGAP 9:39, 2010),
    with its Monte-Carlo standard error sqrt(p (1 - p) / draws). No unit with w * d != 0: p = 1.
    `weights` default to 1 each. ValueError unless `differences` is 1-D and finite and `weights`,
    when given, is as long, finite, >= 0 and sums to more than 0. Returns a `SignFlip`."""
    diffs = np.asarray(differences, dtype=float)
    w = np.ones_like(diffs) if weights is None else np.asarray(weights, dtype=float)
    if diffs.ndim != 1 or not np.isfinite(diffs).all():
        raise ValueError("sign_flip needs a 1-D sequence of finite differences")
    if w.shape != diffs.shape or not np.isfinite(w).all() or (w < 0).any() or (diffs.size and w.sum() <= 0):
        raise ValueError("sign_flip needs one finite weight >= 0 per difference, summing to more than 0")
    terms = (w * diffs)[w * diffs != 0]
    if not terms.size:
        return SignFlip(1.0, 0.0, 1, True)
    bar = abs(terms.sum()) - 1e-9 * np.abs(terms).sum()
    if terms.size <= _EXACT_UNITS:
        half = terms.size // 2  # every sum is one of `low` plus one of `high`: 2**half by 2**rest
        low, high = _signed_sums(terms[:half]), _signed_sums(terms[half:])
        rows = max(1, _CHUNK // low.size)
        reaching = sum(
            np.count_nonzero(np.abs(high[start : start + rows, None] + low) >= bar)
            for start in range(0, high.size, rows)
        )
        return SignFlip(reaching / 2**terms.size, 0.0, 2**terms.size, True)
    rng, reaching = np.random.default_rng(seed), 0
    rows = max(1, 16 * _CHUNK // terms.size)  # 2**20 signs a chunk: 9 MB with their float copy
    for start in range(0, _DRAWS, rows):
        signs = 1 - 2 * rng.integers(0, 2, size=(min(rows, _DRAWS - start), terms.size), dtype=np.int8)
        reaching += np.count_nonzero(np.abs(signs @ terms) >= bar)
    p = (1 + reaching) / (1 + _DRAWS)
    return SignFlip(p, math.sqrt(p * (1 - p) / _DRAWS), _DRAWS, False)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (S. Holm, Scand. J. Stat. 6:65, 1979), in the given order:
    the i-th smallest is multiplied by (m - i + 1), made non-decreasing, capped at 1."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    adjusted, running = [1.0] * len(pvalues), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(pvalues) - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


@cache
def _rejected(n: int, alpha: float) -> np.ndarray:
    """Every pair of counts (x wins for a, y for b, x + y <= n) exact McNemar rejects at `alpha`."""
    x, y = (grid.ravel() for grid in np.mgrid[0 : n + 1, 0 : n + 1])
    x, y = x[(x + y <= n) & (x + y > 0)], y[(x + y <= n) & (x + y > 0)]
    tail = np.minimum(stats.binom.cdf(x, x + y, 0.5), stats.binom.sf(x - 1, x + y, 0.5))
    keep = np.minimum(1.0, 2 * tail) < alpha
    return np.stack([x[keep], y[keep], n - x[keep] - y[keep]], axis=1)


def power(n: int, gain: float, discordant: float = 0.0, alpha: float = ALPHA) -> float:
    """The chance exact McNemar at `alpha` rejects over `n` paired units when one row wins
    `discordant + gain` of them and the other `discordant` (summed over every pair of counts)."""
    win, lose = discordant + gain, discordant
    if n <= 0 or win + lose > 1 + 1e-9:
        return 0.0
    region = _rejected(n, alpha)
    probabilities = [win, lose, max(0.0, 1.0 - win - lose)]
    return float(stats.multinomial.pmf(region, n, probabilities).sum()) if len(region) else 0.0


def mde(n: int, *, discordant: float = 0.0, alpha: float = ALPHA) -> float:
    """The minimum detectable difference: the smallest gain (to 0.01) that `n` paired units detect
    with 80% power, the other row winning `discordant` of them; nan if no gain reaches it."""
    for step in range(1, 101):
        if power(n, step / 100, discordant, alpha) >= POWER:
            return step / 100
    return math.nan


@dataclass(frozen=True)
class Comparison:
    """Row a minus row b over `n` shared units: the difference's interval, its test's p-value (with
    its Monte-Carlo standard error `p_se`, 0 when p is exact), Holm's p within `family` (once
    adjusted), and the MDE of the design."""

    name: str
    interval: Interval
    test: str
    p: float
    n: int
    mde: float
    family: str = ""
    p_holm: float | None = None
    p_se: float = 0.0

    @property
    def verdict(self) -> str:
        """The series' one rule: "a difference" only when the (Holm-adjusted) test rejects at 0.05
        and the interval excludes 0; else "not distinguishable", with the MDE."""
        p = self.p if self.p_holm is None else self.p_holm
        if p < ALPHA and self.interval.excludes(0):
            return "a difference"
        if math.isnan(self.mde):
            return f"not distinguishable (no gain is detectable on {self.n} units)"
        return f"not distinguishable (MDE {self.mde:.2f})"


def compare_rows(name: str, a: Values, b: Values, *, seed: int = SEED) -> Comparison:
    """`a` minus `b` by unit (unit -> trials' 0/1; a number is one trial, or a baseline's exact expected
    pass rate). One 0/1 per unit on both sides (or equally many agreeing trials): Newcombe with exact
    McNemar; else the cluster bootstrap of per-unit differences weighted by `a`'s trials (the
    difference of pooled shares), with a sign-flip test."""
    trials_a = _units(a)
    means_a, means_b = {u: float(t.mean()) for u, t in trials_a.items()}, unit_means(b)
    units = _shared(means_a, means_b)
    sizes = np.array([float(trials_a[u].size) for u in units])
    wins = [means_a[u] - means_b[u] for u in units]
    # The design's background: how often the row behind still wins a unit (in expectation).
    losing = min(sum(w for w in wins if w > 0), -sum(w for w in wins if w < 0)) / len(units)
    design = mde(len(units), discordant=losing)
    binary = all(means[u] in (0.0, 1.0) for means in (means_a, means_b) for u in units)
    if binary and np.ptp(sizes) == 0:
        outcome_a, outcome_b = ({u: m[u] == 1.0 for u in units} for m in (means_a, means_b))
        interval = newcombe(outcome_a, outcome_b)
        return Comparison(name, interval, "exact McNemar", mcnemar(outcome_a, outcome_b), len(units), design)
    diffs = np.array(wins)
    low, high = _bootstrap(diffs, seed, sizes)
    interval = Interval(float(_weighted_mean(diffs, sizes)), low, high, "cluster bootstrap")
    if low == high:  # every unit differs alike: the half-width of n units that agree (Newcombe)
        half = 1 - wilson(len(units), len(units)).low
        interval = Interval(low, max(-1.0, low - half), min(1.0, low + half), "Newcombe width")
    test = sign_flip(diffs, weights=sizes, seed=seed)
    method = "sign-flip permutation" if test.exact else "sign-flip permutation (Monte-Carlo)"
    return Comparison(name, interval, method, test.p, len(units), design, p_se=test.se)


def adjust(comparisons: Sequence[Comparison], family: str) -> list[Comparison]:
    """The comparisons printed together, as one family: each with its Holm-adjusted p."""
    adjusted = holm([c.p for c in comparisons])
    return [replace(c, family=family, p_holm=p) for c, p in zip(comparisons, adjusted, strict=True)]


def comparison_table(comparisons: Sequence[Comparison], family: str) -> pd.DataFrame:
    """A table of one family: difference with its interval, test, p, Holm's p and the verdict; the
    family and its size name the columns. p and Holm's p are rounded to 4 places; where one of the
    family's p-values is Monte-Carlo both columns are text, each to the digits its standard error
    supports, with that error (Holm's scaled by Holm's multiplier)."""
    adjusted = adjust(comparisons, family)
    rows = [
        {
            "comparison": c.name,
            "difference [95% interval]": str(c.interval),
            "interval": c.interval.method,
            "test": c.test,
            "n": c.n,
            "p": round(c.p, 4),
            "Holm p": round(c.p_holm, 4),
            "verdict": c.verdict,
        }
        for c in adjusted
    ]
    if any(c.p_se for c in adjusted):
        for row, c in zip(rows, adjusted, strict=True):
            scale = c.p_holm / c.p if c.p else 1.0
            row["p"], row["Holm p"] = _supported(c.p, c.p_se), _supported(c.p_holm, min(1.0, scale * c.p_se))
    frame = pd.DataFrame(rows).set_index("comparison")
    frame.columns.name = f"family: {family} ({len(rows)} comparisons, Holm)"
    return frame


def _shared(a: Mapping[str, object], b: Mapping[str, object]) -> list[str]:
    """The units both sides ran, in a fixed order; ValueError when they share none."""
    units = sorted(set(a) & set(b))
    if not units:
        raise ValueError("the two rows share no unit to compare on")
    return units
