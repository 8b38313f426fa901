"""The course's statistics, one method per design, on scipy.stats. A rate (`rate`): Clopper-Pearson's exact
interval (`exact`) when each unit (a case, a request, an attack) ran once; when units ran several
trials, Wilson over the units' mean rates (a unit's trials are not independent of each other, so
the units are what is counted; see E. Miller, "Adding Error Bars to Evals", 2024, arXiv:2411.00640,
on clustering). A paired difference: `compare_rows`, `mover_bounds` with exact McNemar when each unit
ran once, else with the sign-flip test, exact up to 24 non-zero units, else Monte-Carlo with its
standard error. Which comparisons form a family, and its adjustment, labkit.core.questions declares.
`mde`: the smallest gain exact McNemar detects with 80% power; `mde_mean` the sign-flip test's.

Every interval method was picked by measured coverage, not by name: `labkit.core.coverage` simulates
the designs the labs print (9 to 154 units, 1 to 250 trials a unit, rates 0.1/0.3/0.5, intra-unit
correlation 0.2/0.6) and tests/core/test_coverage.py fails below 0.93; `python -m benchmarks.coverage`
prints the table, beside the percentile cluster bootstrap this replaced (0.77-0.93 at 9-15 units).
No interval has zero width (where every unit agrees with itself the score interval is used).
A method's ValueError for counts out of range (serves: ours): a wrong count never passes silently.
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy import stats

ALPHA = 0.05  # the series' level: a two-sided 95% interval, a test at 0.05
POWER = 0.80  # the power an MDE is quoted at
SEED = 0
_Z = float(stats.norm.ppf(1 - ALPHA / 2))
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
    return Interval(successes / n, *(float(bound) for bound in _wilson_bounds(successes / n, n)))


def exact_bounds(successes: np.ndarray, n: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson's exact 95% bounds for `successes` of `n` (arrays allowed): the rates at which
    seeing that many or more (fewer) has chance 2.5%; exactly 0 (1) at 0 (n) of n."""
    k, n = np.asarray(successes, dtype=float), np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore"):  # beta's parameters are 0 at the ends, handled by `where`
        low = np.where(k <= 0, 0.0, stats.beta.ppf(ALPHA / 2, k, n - k + 1))
        high = np.where(k >= n, 1.0, stats.beta.ppf(1 - ALPHA / 2, k + 1, n - k))
    return low, high


def exact(successes: int, n: int) -> Interval:
    """The Clopper-Pearson interval (C. J. Clopper and E. S. Pearson, Biometrika 26:404, 1934) for
    `successes` of `n` units, each run once: it covers at least 95% at every rate and size, where
    Wilson's dips to 0.90 at some (15 units at a rate of 0.3: `labkit.core.coverage`). ValueError
    unless both are ints (not bools) with 0 <= successes <= n and n > 0."""
    if any(isinstance(x, bool) or not isinstance(x, int | np.integer) for x in (successes, n)) or not (
        0 <= successes <= n and n > 0
    ):
        raise ValueError(f"exact needs whole counts 0 <= successes <= n and n > 0, got {successes}/{n}")
    low, high = (float(x) for x in exact_bounds(np.array(successes), n))
    return Interval(successes / n, low, high, "Clopper-Pearson")


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


def _wilson_bounds(
    p: np.ndarray, n: np.ndarray, crit: np.ndarray | float = _Z
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson's score bounds for a share `p` of `n` units (both may be arrays, `n` fractional) at the
    critical value `crit`; exactly 0 (1) where p is 0 (1)."""
    p, n = np.asarray(p, dtype=float), np.asarray(n, dtype=float)
    z2 = np.square(crit)
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = crit / (1 + z2 / n) * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return np.where(p <= 0, 0.0, np.maximum(0.0, centre - half)), np.where(
        p >= 1, 1.0, np.minimum(1.0, centre + half)
    )


def effective_units(weights: np.ndarray) -> np.ndarray:
    """Kish's effective number of units, sum(w)**2 / sum(w**2), along the last axis: the number of
    units when every unit weighs the same, fewer when some weigh more."""
    weights = np.asarray(weights, dtype=float)
    return np.square(weights.sum(axis=-1)) / np.square(weights).sum(axis=-1)


def _pooled(means: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The weighted mean of the units' mean rates along the last axis: the share of all trials."""
    return (means * weights).sum(axis=-1) / weights.sum(axis=-1)


def _one_outcome(means: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Along the last axis: is every unit one outcome (its mean 0 or 1), the units weighing alike?"""
    return np.isin(means, (0.0, 1.0)).all(axis=-1) & (np.ptp(weights, axis=-1) == 0)


def unit_rate_bounds(means: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pooled share (the weighted mean of the units' mean rates, weights = trials) and `rate`'s
    Wilson bounds over the effective number of units, along the last axis (one row per sample when
    `coverage` simulates). Wilson's variance p(1 - p) / n bounds the variance of a mean of n
    independent rates in [0, 1] whatever the correlation inside a unit, so this is conservative at
    a low intra-unit correlation and right at a high one, where it matters."""
    share = _pooled(means, weights)
    return (share, *_wilson_bounds(share, effective_units(weights)))


def rate_bounds(means: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`rate`'s estimate and bounds along the last axis: `exact_bounds` where every unit is one
    outcome (`_one_outcome`), else `unit_rate_bounds`. What `coverage` simulates, row by row."""
    share, low, high = unit_rate_bounds(means, weights)
    exact_low, exact_high = exact_bounds(np.rint(means.sum(axis=-1)), means.shape[-1])
    one = _one_outcome(means, weights)
    return share, np.where(one, exact_low, low), np.where(one, exact_high, high)


def rate(values: Values) -> Interval:
    """The share of all trials that passed, with its 95% interval over units (`rate_bounds`):
    Clopper-Pearson's on the units when each unit is one outcome, 0 or 1 (it ran once, or equally
    many trials that all agree), else Wilson over the units' mean rates with the effective number of
    units ("Wilson over units"). Refused as `_units` says."""
    trials = list(_units(values).values())
    means, counts = np.array([t.mean() for t in trials]), np.array([float(t.size) for t in trials])
    share, low, high = (float(x) for x in rate_bounds(means, counts))
    method = "Clopper-Pearson" if _one_outcome(means, counts) else "Wilson over units"
    return Interval(share, low, high, method)


def mover_bounds(
    means_a: np.ndarray, means_b: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The weighted mean difference of the units' rates, a - b, and its 95% bounds by the method of
    variance estimates recovery (G. Y. Zou and A. Donner, Stat. Med. 27:1693, 2008; Newcombe's
    square-and-add): each side's Wilson bounds over the effective units at t on n - 1 degrees of
    freedom, joined through the correlation of the units' rates, shrunk by (n - 2) / n. The t value
    and the shrinkage are what measured coverage asked for at 9-15 units (a sample correlation of
    few units overstates how much the sides move together, which narrows the interval). Along the
    last axis, as `unit_rate_bounds`."""
    n = effective_units(weights)
    crit = stats.t.ppf(1 - ALPHA / 2, np.maximum(n - 1, 1))
    share_a, share_b = _pooled(means_a, weights), _pooled(means_b, weights)
    low_a, high_a = _wilson_bounds(share_a, n, crit)
    low_b, high_b = _wilson_bounds(share_b, n, crit)
    centred_a, centred_b = means_a - share_a[..., None], means_b - share_b[..., None]
    spread = np.sqrt((weights * centred_a**2).sum(axis=-1) * (weights * centred_b**2).sum(axis=-1))
    cross = (weights * centred_a * centred_b).sum(axis=-1)
    r = np.divide(cross, spread, out=np.zeros_like(spread), where=spread > 0) * np.maximum(n - 2, 0) / n
    diff = share_a - share_b
    below = (share_a - low_a) ** 2 + (high_b - share_b) ** 2 - 2 * r * (share_a - low_a) * (high_b - share_b)
    above = (high_a - share_a) ** 2 + (share_b - low_b) ** 2 - 2 * r * (high_a - share_a) * (share_b - low_b)
    low = np.maximum(-1.0, diff - np.sqrt(np.maximum(below, 0.0)))
    return diff, low, np.minimum(1.0, diff + np.sqrt(np.maximum(above, 0.0)))


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
        return f"{self.p:.4f} (exact)" if self.exact else f"{p_text(self.p, self.se)} (Monte-Carlo)"


def p_text(p: float, se: float) -> str:
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


def mde_mean(n: float, sd: float, alpha: float = ALPHA) -> float:
    """The sign-flip test's minimum detectable difference over `n` units whose per-unit differences
    have standard deviation `sd`: the mean shift the paired t-test, which the sign-flip test matches
    in power at these sizes, detects with 80% power at `alpha`, (t(1 - alpha/2) + t(0.80)) * sd /
    sqrt(n) on n - 1 degrees of freedom, to 0.01 (rounded up). nan when n < 2. `n` may be fractional:
    Kish's effective number of units when the test weighs them by their trials."""
    if n < 2:
        return math.nan
    crit = stats.t.ppf(1 - alpha / 2, n - 1) + stats.t.ppf(POWER, n - 1)
    return math.ceil(100 * crit * sd / math.sqrt(n) - 1e-9) / 100


def power_mean(n: float, gain: float, sd: float, alpha: float = ALPHA) -> float:
    """The sign-flip test's power for a mean shift `gain` over `n` units whose per-unit differences
    have standard deviation `sd`, by the paired t-test's (noncentral t on n - 1 degrees of freedom),
    as `mde_mean` inverts it."""
    return float(stats.nct.sf(stats.t.ppf(1 - alpha / 2, n - 1), n - 1, gain * math.sqrt(n) / sd))


@dataclass(frozen=True)
class Comparison:
    """Row a minus row b over `n` shared units: the difference's interval, its test's p-value (with
    its Monte-Carlo standard error `p_se`, 0 when p is exact), the adjusted p `p_adjusted` within
    `family` (a declared question's, once answered: `questions.answer`), and the MDE of the design;
    `b_share`: b's pooled share, `room` the largest change it leaves in either direction (a declared
    question narrows it to the direction it asks about)."""

    name: str
    interval: Interval
    test: str
    p: float
    n: int
    mde: float
    family: str = ""
    p_adjusted: float | None = None
    p_se: float = 0.0
    exploratory: bool = False
    room: float = 1.0
    b_share: float = math.nan

    @property
    def verdict(self) -> str:
        """The series' one rule: "a difference" only when the (adjusted) test rejects at 0.05
        and the interval excludes 0; else "not distinguishable", with the MDE, or, when b is so near
        the ceiling that no detectable gain is possible (`room`, the largest gain b leaves), that.
        A comparison no question declared (`exploratory`) has no verdict."""
        if self.exploratory:
            return "exploratory: no verdict"
        p = self.p if self.p_adjusted is None else self.p_adjusted
        if p < ALPHA and self.interval.excludes(0):
            return "a difference"
        if math.isnan(self.mde) or self.mde > self.room:
            return f"not distinguishable (no detectable gain fits: b leaves {self.room:.2f})"
        return f"not distinguishable (MDE {self.mde:.2f})"


def compare_rows(name: str, a: Values, b: Values, *, known: bool = False, seed: int = SEED) -> Comparison:
    """`a` minus `b` by unit (unit -> trials' 0/1; a number is one trial, or with `known` a baseline's
    exact expected pass rate on that unit). The interval: `mover_bounds` over the shared units, the
    units weighted by `a`'s trials (the difference of pooled shares); with `known`, `a`'s own interval
    (`rate`) shifted by `b`'s share, since a known expectation has no variance. The test: exact
    McNemar when both sides are one 0/1 a unit (or equally many agreeing trials), else the sign-flip
    test of the per-unit differences. `mde` here is exact McNemar's at 0.05 with the observed
    discordance; a declared question (`questions.answer`) replaces it with its own design's."""
    trials_a = _units(a)
    means_a, means_b = {u: float(t.mean()) for u, t in trials_a.items()}, unit_means(b)
    units = _shared(means_a, means_b)
    sizes = np.array([float(trials_a[u].size) for u in units])
    first, second = (np.array([means[u] for u in units]) for means in (means_a, means_b))
    wins = first - second
    # The design's background: how often the row behind still wins a unit (in expectation).
    losing = min(wins[wins > 0].sum(), -wins[wins < 0].sum()) / len(units)
    design = mde(len(units), discordant=float(losing))
    b_share = float(_pooled(second, sizes))
    found = {"b_share": b_share, "room": max(b_share, 1 - b_share)}
    if known:
        own = rate({u: trials_a[u] for u in units})
        low, high = max(-1.0, own.low - b_share), min(1.0, own.high - b_share)
        interval = Interval(own.estimate - b_share, low, high, f"{own.method}, b exact")
    else:
        interval = Interval(*(float(x) for x in mover_bounds(first, second, sizes)), "MOVER over units")
    binary = all(m in (0.0, 1.0) for m in (*first, *second))
    if binary and np.ptp(sizes) == 0:
        outcome_a, outcome_b = (
            {u: m == 1.0 for u, m in zip(units, side, strict=True)} for side in (first, second)
        )
        return Comparison(
            name, interval, "exact McNemar", mcnemar(outcome_a, outcome_b), len(units), design, **found
        )
    test = sign_flip(wins, weights=sizes, seed=seed)
    method = "sign-flip permutation" if test.exact else "sign-flip permutation (Monte-Carlo)"
    return Comparison(name, interval, method, test.p, len(units), design, p_se=test.se, **found)


def _shared(a: Mapping[str, object], b: Mapping[str, object]) -> list[str]:
    """The units both sides ran, in a fixed order; ValueError when they share none."""
    units = sorted(set(a) & set(b))
    if not units:
        raise ValueError("the two rows share no unit to compare on")
    return units
