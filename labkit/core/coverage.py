"""How often the course's 95% intervals hold the truth, by simulation at the sizes the labs print:
what picked `stats.rate` and `stats.mover_bounds`, and what tests/core/test_coverage.py and
`python -m benchmarks.coverage` measure.

A design is `units` units of `trials` trials each, or of `sizes` trials where the units differ. A
unit's own rate is drawn from a beta distribution with mean `rate` and intra-unit correlation `icc`
(its parameters sum to 1/icc - 1), and its trials are Bernoulli draws at that rate: at icc 0.6 most
units nearly always pass or nearly always fail, as a case does for a model at a low temperature. A
paired design draws the two sides' unit rates through one uniform quantile, shared with chance `corr`,
so a unit that is hard for one side is often hard for the other.

Lab 03's model suite crosses its units with attacks: most requests ran alone and under each of the same
9 attacks, so an attack that works on every request would tie the requests' episodes together, which
clustering by request alone does not see. A crossed design (`attack_weight` w > 0) draws each attack's
rate as it draws a unit's, and an episode's rate is (1 - w) * its request's + w * its attack's (an
episode alone counts as a tenth attack): the mean stays `rate`, and at w = 0.7 the attack sets most of
it. The request-clustered intervals hold there (the designs below); they fall under 0.93 only where the
attack alone sets the rate (w = 1 at intra-unit correlation 0.6: 0.90-0.94, `python -m benchmarks.coverage`),
far from the recorded suite, where the 9 attacks' shares under no defense (0.57-0.70) differ no more
than chance gives. Every draw comes from a seeded generator: a result is the same on every machine."""

from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy import stats as sps

from labkit.core import stats

LEVEL = 0.93  # the coverage a 95% interval must reach at our sizes to be printed
# The designs the labs print: units (lab 03's 9 attacks and 10 requests, lab 04's 15 and 50 trials, lab
# 02's 24 and 40 cases, lab 03's 82 and 154 model cases) and trials a unit (lab 02's 5, lab 03's 250 seeds).
UNITS = (9, 10, 15, 24, 40, 50, 82, 154)
# Lab 03's model suite by request (lab03-model), each request's episodes at each attack (the first alone,
# then the 9 attacks): the 4 pilot requests under every attack at every place (37 episodes), 28
# legitimate ones under each attack once (10), and the 6 refused ones alone (1).
REQUEST_ATTACKS = ((1,) + (4,) * 9,) * 4 + ((1,) * 10,) * 28 + ((1,) + (0,) * 9,) * 6
REQUEST_SIZES = tuple(sum(row) for row in REQUEST_ATTACKS)
ATTACK_WEIGHTS = (0.0, 0.3, 0.7)  # the share of an episode's rate its attack sets, in the crossed designs
TRIAL_COUNTS = (1, 5, 15, 50, 250)
SHARES = (0.1, 0.3, 0.5)
ICCS = (0.2, 0.6)
PAIRS = ((0.1, 0.1), (0.3, 0.1), (0.5, 0.3), (0.5, 0.5))  # (a's rate, b's rate) of a paired design
CORRS = (0.0, 0.9)
_QUANTILES = 4096  # a beta's inverse CDF tabulated on this grid: drawing is one lookup


@dataclass(frozen=True)
class Design:
    """A design to simulate: `units` units of `trials` trials; `rate` (a paired design: `rate_b`,
    `corr`, and b's own `trials_b` if it ran more) and `icc` as the module docstring says."""

    units: int
    trials: int
    rate: float
    icc: float
    rate_b: float | None = None
    corr: float = 0.0
    trials_b: int | None = None  # b's trials a unit when they differ from a's (a model against 250 seeds)
    sizes: tuple[int, ...] = ()  # each unit's own trials where they differ (`units` of them)
    attack_weight: float = 0.0  # a crossed design's w (module docstring): its trials are REQUEST_ATTACKS


def _cells(design: Design) -> int:
    """The quantile cells one simulated experiment draws: one a unit, and one an attack when crossed."""
    return design.units + (len(REQUEST_ATTACKS[0]) if design.attack_weight else 0)


def _trials(design: Design) -> np.ndarray:
    """Each unit's trials: `sizes` where given, else `trials` for every unit."""
    return np.asarray(design.sizes or (design.trials,) * design.units)


@cache
def _inverse_cdf(rate: float, icc: float) -> np.ndarray:
    """The beta(mean `rate`, correlation `icc`) quantiles at the midpoints of `_QUANTILES` cells."""
    total = 1 / icc - 1
    grid = (np.arange(_QUANTILES) + 0.5) / _QUANTILES
    return sps.beta.ppf(grid, rate * total, (1 - rate) * total)


def _unit_means(
    rng: np.random.Generator, quantiles: np.ndarray, design: Design, rate: float, trials: int | np.ndarray
) -> np.ndarray:
    """The units' observed mean rates (samples x units) over `trials` trials (one count, or one a unit)
    at the drawn quantile cells; a crossed design's cells past its units are its attacks'."""
    rates = _inverse_cdf(rate, design.icc)[quantiles]
    if not design.attack_weight:
        return rng.binomial(trials, rates) / trials
    units, attacks = rates[:, : design.units], rates[:, design.units :]
    episode_rates = (1 - design.attack_weight) * units[..., None] + design.attack_weight * attacks[:, None, :]
    return rng.binomial(np.asarray(REQUEST_ATTACKS), episode_rates).sum(axis=-1) / trials


def rate_coverage(design: Design, samples: int = 2000, seed: int = 0) -> float:
    """The share of `samples` simulated experiments whose `stats.rate` interval (`stats.rate_bounds`,
    the same computation, row by row) holds the true rate."""
    rng = np.random.default_rng(seed)
    cells = rng.integers(0, _QUANTILES, size=(samples, _cells(design)))
    means = _unit_means(rng, cells, design, design.rate, _trials(design))
    _, low, high = stats.rate_bounds(means, _trials(design))
    return float(np.mean((low <= design.rate) & (design.rate <= high)))


def difference_coverage(design: Design, samples: int = 2000, seed: int = 0) -> float:
    """The share of simulated paired experiments whose `stats.mover_bounds` interval for a - b holds
    the true difference."""
    rng = np.random.default_rng(seed)
    cells_a = rng.integers(0, _QUANTILES, size=(samples, _cells(design)))
    fresh = rng.integers(0, _QUANTILES, size=cells_a.shape)
    cells_b = np.where(rng.random(cells_a.shape) < design.corr, cells_a, fresh)
    means_a = _unit_means(rng, cells_a, design, design.rate, _trials(design))
    means_b = _unit_means(rng, cells_b, design, design.rate_b, design.trials_b or _trials(design))
    truth = design.rate - design.rate_b
    _, low, high = stats.mover_bounds(means_a, means_b, _trials(design))
    return float(np.mean((low <= truth) & (truth <= high)))


def rate_designs() -> list[Design]:
    """Every rate design the labs print, crossed with the rates and correlations above, and lab 03's
    requests with their own sizes, crossed with the attacks at each of `ATTACK_WEIGHTS`."""
    return [Design(n, k, p, icc) for n in UNITS for k in TRIAL_COUNTS for p in SHARES for icc in ICCS] + [
        crossed_requests(p, icc, weight) for p in SHARES for icc in ICCS for weight in ATTACK_WEIGHTS
    ]


def crossed_requests(rate: float, icc: float, weight: float, **paired: float) -> Design:
    """Lab 03's model suite: its requests with their own sizes, crossed with its attacks at `weight`."""
    return Design(len(REQUEST_SIZES), 10, rate, icc, sizes=REQUEST_SIZES, attack_weight=weight, **paired)


def difference_designs() -> list[Design]:
    """Every paired design the labs print, crossed with the rate pairs and correlations above: both
    sides with the same trials, one trial a unit against a 250-seed baseline (lab 03's model
    against random-admissible, over its 10 requests, 82 and 154 cases), and lab 03's requests with
    their own sizes on both sides, crossed with the attacks at each of `ATTACK_WEIGHTS`."""
    return (
        [  # both sides with the same trials
            Design(n, k, a, icc, rate_b=b, corr=corr)
            for n in UNITS
            for k in TRIAL_COUNTS
            for a, b in PAIRS
            for icc in ICCS
            for corr in CORRS
        ]
        + [  # one trial a unit against 250 seeds
            Design(n, 1, a, icc, rate_b=b, corr=corr, trials_b=250)
            for n in (10, 82, 154)
            for a, b in PAIRS
            for icc in ICCS
            for corr in CORRS
        ]
        + [  # lab 03's requests, each with its own episodes on both sides
            crossed_requests(a, icc, weight, rate_b=b, corr=corr)
            for a, b in PAIRS
            for icc in ICCS
            for corr in CORRS
            for weight in ATTACK_WEIGHTS
        ]
    )
