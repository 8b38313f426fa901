"""labkit.core.stats.sign_flip: exact over every sign pattern of the non-zero units, up to 24 of
them (checked against a brute-force enumeration and counts by hand), Monte-Carlo with its standard
error above that, and what it refuses."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sp

from labkit.core.questions import answer_table
from labkit.core.stats import compare_rows, p_text, sign_flip


def _brute_force(diffs, weights=None):
    """The share of all 2**n sign patterns whose |weighted mean| reaches the observed one."""
    d = np.asarray(diffs, dtype=float)
    w = np.ones_like(d) if weights is None else np.asarray(weights, dtype=float)
    observed = abs(np.sum(w * d) / w.sum())
    means = [
        abs(np.sum(w * d * np.array(signs)) / w.sum()) for signs in itertools.product((1, -1), repeat=d.size)
    ]
    return np.mean([m >= observed - 1e-12 for m in means])


@pytest.mark.parametrize("seed", range(6))
def test_exact_p_is_the_brute_force_enumeration(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 11))
    diffs = rng.integers(-3, 4, n) / 3  # a unit's mean difference over 3 trials: ties are common
    weights = rng.integers(1, 5, n).astype(float)
    found = sign_flip(diffs, weights=weights, seed=seed)
    assert found.exact and found.se == 0.0
    assert found.p == pytest.approx(_brute_force(diffs, weights), abs=1e-12)
    assert sign_flip(diffs).p == pytest.approx(_brute_force(diffs), abs=1e-12)


def test_sixteen_units_are_exact_where_9999_draws_were_sampled():
    # 15 units +1, one -1: the sum is 14, and |sum| >= 14 only with 0, 1, 15 or 16 signs flipped:
    # (1 + 16 + 16 + 1) of 2**16 patterns. (The old test drew 9,999 of them: p moved with the seed.)
    diffs = [1.0] * 15 + [-1.0]
    found = {sign_flip(diffs, seed=seed) for seed in range(4)}
    assert found == {sign_flip(diffs)} and sign_flip(diffs).p == 34 / 2**16
    assert (sign_flip(diffs).flips, sign_flip(diffs).exact) == (2**16, True)


def test_twenty_four_non_zero_units_among_zeros_are_exact():
    # 28 units, 4 of them 0: 24 left (lab 02's 24 cases). 22 at +0.5, 2 at -0.5: |sum| >= 10 with
    # <= 2 or >= 22 flipped.
    diffs = [0.5] * 22 + [-0.5] * 2 + [0.0] * 4
    found = sign_flip(diffs, seed=7)
    assert (found.exact, found.flips, found.se) == (True, 2**24, 0.0)
    assert found.p == 2 * (1 + 24 + math.comb(24, 2)) / 2**24 == pytest.approx(602 / 2**24)
    assert sign_flip(diffs, seed=8) == found


def test_zero_differences_and_zero_weights_are_dropped():
    diffs, weights = [0.4, -0.1, 0.7, 0.2, 1.0], [1.0, 2.0, 1.0, 3.0, 1.0]
    alone = sign_flip(diffs, weights=weights)
    padded = sign_flip([0.0, *diffs, 0.0, 0.9], weights=[5.0, *weights, 2.0, 0.0])
    assert padded.p == alone.p and padded.flips == alone.flips == 2**5
    assert sign_flip([0.0, 0.0]).p == 1.0 and sign_flip([]).p == 1.0


def test_weights_weight_the_mean_and_only_their_ratios_matter():
    diffs, weights = [1.0, -0.5, 0.25, 0.75, -1.0, 0.5, 1.0], [3.0, 1.0, 2.0, 4.0, 1.0, 1.0, 2.0]
    weighted = sign_flip(diffs, weights=weights)
    assert weighted.p == pytest.approx(_brute_force(diffs, weights), abs=1e-12)
    assert sign_flip(diffs, weights=[10 * w for w in weights]).p == weighted.p
    assert weighted.p != sign_flip(diffs).p  # the weights change which patterns reach the observed


def test_above_twenty_four_units_it_draws_with_a_monte_carlo_standard_error():
    # 25 units of +1 or -1 (17 and 8): the sum of flipped signs is 2 * Binomial(25, 1/2) - 25.
    diffs = [1.0] * 17 + [-1.0] * 8
    exact = 2 * sp.binom.sf(16, 25, 0.5)  # |sum| >= 9: 17 or more, or 8 or fewer, of 25 kept
    found = sign_flip(diffs, seed=0)
    assert (found.exact, found.flips) == (False, 99_999)
    assert found.se == pytest.approx(math.sqrt(found.p * (1 - found.p) / 99_999))
    assert abs(found.p - exact) < 4 * found.se
    assert sign_flip(diffs, seed=0) == found and sign_flip(diffs, seed=1) != found
    assert str(found).startswith(f"{found.p:.3f} ± ") and str(sign_flip([1.0, 1.0])) == "0.5000 (exact)"


@pytest.mark.parametrize(
    ("diffs", "weights"),
    [
        ([0.1, math.nan], None),
        ([0.1, 0.2], [1.0]),
        ([0.1, 0.2], [1.0, -1.0]),
        ([0.1, 0.2], [1.0, math.inf]),
        ([0.3, -0.2], [0.0, 0.0]),
        ([[0.1, 0.2]], None),
    ],
)
def test_it_refuses_what_has_no_weighted_mean(diffs, weights):
    with pytest.raises(ValueError, match="sign_flip needs"):
        sign_flip(diffs, weights=weights)


def test_compare_rows_prints_exact_p_and_monte_carlo_p_to_its_digits():
    # 16 cases, 2 trials each: a wins both trials of 12 cases and 1 of 2 in 4; b passes 1 of 2 everywhere.
    a = {f"c{i}": [1, 1] if i < 12 else [1, 0] for i in range(16)}
    b = {f"c{i}": [1, 0] for i in range(16)}
    exact = compare_rows("exact", a, b)
    assert (exact.test, exact.p, exact.p_se) == ("sign-flip permutation", 2 / 2**12, 0.0)
    many = {f"c{i}": [1, 1] if i < 20 else [1, 0] if i < 24 else [0, 0] for i in range(30)}
    drawn = compare_rows("drawn", many, {f"c{i}": [1, 0] for i in range(30)})
    assert drawn.test == "sign-flip permutation (Monte-Carlo)" and drawn.p_se > 0
    assert p_text(exact.p, exact.p_se) == "0.0005"
    assert (
        p_text(drawn.p, drawn.p_se) == f"{drawn.p:.{math.floor(-math.log10(drawn.p_se))}f} ± {drawn.p_se:.1g}"
    )
    table = answer_table("02", [exact, drawn])  # exploratory rows: no p at all
    assert list(table["p"]) == ["-", "-"] and set(table["verdict"]) == {"exploratory: no verdict"}
