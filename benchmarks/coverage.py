"""Coverage of the course's 95% intervals at the sizes the labs print, beside the percentile cluster
bootstrap they replaced (the baseline, measured in the same run on the same designs).

    python -m benchmarks.coverage [--samples N]

Prints one row per design (units, trials a unit, rate(s), intra-unit correlation): the coverage of
`stats.rate` (or, for a paired design, `stats.mover_bounds`) and of the percentile bootstrap, and
their ratio. tests/core/test_coverage.py holds the course's intervals to 0.93 on the same designs. Last,
beyond the labs: lab 03's crossed requests where the attack alone sets an episode's rate (`attack_weight`
1), the case the request-clustered intervals do not hold."""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from scipy import stats as sps

from labkit.core import coverage


def bootstrap_coverage(design: coverage.Design, samples: int) -> float:
    """The old `stats.rate`: percentile bootstrap of the mean over resampled units, 2,000 resamples."""
    rng, held = np.random.default_rng(0), 0
    total = 1 / design.icc - 1
    for _ in range(samples):
        rates = rng.beta(design.rate * total, (1 - design.rate) * total, design.units)
        means = rng.binomial(design.trials, rates) / design.trials
        if np.ptp(means) == 0:
            held += 1
            continue
        ends = sps.bootstrap((means,), np.mean, n_resamples=2000, method="percentile", rng=rng)
        held += ends.confidence_interval.low <= design.rate <= ends.confidence_interval.high
    return held / samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000, help="simulated experiments a design")
    args = parser.parse_args()
    rows = []
    for design in coverage.rate_designs():
        ours = coverage.rate_coverage(design, args.samples)
        old = bootstrap_coverage(design, min(args.samples, 400)) if design.trials > 1 else float("nan")
        rows.append({**vars(design), "course": ours, "percentile bootstrap": old, "ratio": ours / old})
    for design in coverage.difference_designs():
        rows.append({**vars(design), "course": coverage.difference_coverage(design, args.samples)})
    table = pd.DataFrame(rows).round(3)
    with pd.option_context("display.max_rows", None, "display.width", 160):
        print(table.to_string(index=False))
    print(
        f"\nworst course coverage {table['course'].min():.3f} (held to {coverage.LEVEL}); "
        f"worst bootstrap {table['percentile bootstrap'].min():.3f}"
    )
    alone = [coverage.crossed_requests(p, icc, 1.0) for p in coverage.SHARES for icc in coverage.ICCS]
    beyond = pd.DataFrame(
        {"rate": d.rate, "icc": d.icc, "course": coverage.rate_coverage(d, args.samples)} for d in alone
    )
    print("\nbeyond the labs, the attack alone setting the rate (attack_weight 1):")
    print(beyond.round(3).to_string(index=False))


if __name__ == "__main__":
    main()
