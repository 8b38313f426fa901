"""labkit.core.stats against published tables and scipy, and the properties every table relies on:
no interval of zero width, the right unit, one decision rule."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sp

from labkit.core.stats import (
    Comparison,
    Interval,
    compare_rows,
    exact,
    mcnemar,
    mde,
    mde_mean,
    mover_bounds,
    power,
    rate,
    sign_flip,
    wilson,
)

# Newcombe, "Two-sided confidence intervals for the single proportion: comparison of seven
# methods", Statistics in Medicine 17 (1998), Table I, method 3 (Wilson score, no continuity
# correction), to the four decimals printed there.
NEWCOMBE_1998_TABLE_I = [
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0, 0.1611),
    (1, 29, 0.0061, 0.1718),
]


@pytest.mark.parametrize(("successes", "n", "low", "high"), NEWCOMBE_1998_TABLE_I)
def test_wilson_matches_the_published_table_and_scipy(successes, n, low, high):
    interval = wilson(successes, n)
    assert (round(interval.low, 4), round(interval.high, 4)) == (low, high)
    ci = sp.binomtest(successes, n).proportion_ci(method="wilson")
    assert (interval.low, interval.high) == pytest.approx((ci.low, ci.high), abs=1e-12)


@pytest.mark.parametrize(("successes", "n"), [(0, 9), (1, 9), (7, 10), (10, 10), (13, 154)])
def test_exact_is_clopper_pearson_as_scipy_computes_it(successes, n):
    interval = exact(successes, n)
    ci = sp.binomtest(successes, n).proportion_ci(method="exact")
    assert (interval.low, interval.high) == pytest.approx((ci.low, ci.high), abs=1e-12)
    assert interval.method == "Clopper-Pearson" and interval.low < interval.high


@pytest.mark.parametrize(
    ("interval", "bad"),
    [
        (wilson, (1, 0)),
        (wilson, (3, 2)),
        (wilson, (-1, 5)),
        (wilson, (True, 2)),
        (wilson, (1, 2.0)),
        (exact, (1, 0)),
        (exact, (3, 2)),
        (exact, (-1, 5)),
        (exact, (True, 2)),
        (exact, (1, 2.0)),
        (exact, (0.5, 2)),  # a Wilson count may be fractional (a sum of per-unit means), an exact one not
    ],
)
def test_wilson_and_exact_refuse_what_is_not_a_count(interval, bad):
    with pytest.raises(ValueError, match=f"{interval.__name__} needs"):
        interval(*bad)


def test_no_rate_has_zero_width_at_the_edges_or_where_trials_agree():
    assert (wilson(0, 24).low, round(wilson(0, 24).high, 3)) == (0.0, 0.138)
    assert str(wilson(23, 24)) == "0.958 [0.798, 0.993]"
    assert rate({f"c{i}": i < 7 for i in range(10)}) == exact(7, 10)  # one trial a case: exact
    # Five trials of each case, every case all-pass or all-fail: the unit is the case (exact on 10).
    assert rate({f"c{i}": [i < 7] * 5 for i in range(10)}) == exact(7, 10)  # 10 outcomes, not 50
    same = rate({f"c{i}": [1, 1, 1, 0, 0] for i in range(10)})  # every case passes 3 of 5
    assert same.low < 0.6 < same.high and same.method == "Wilson over units"


def test_a_rate_over_several_trials_counts_units_not_trials():
    # 3 cases of 10 trials: the interval is Wilson over the 3 cases, far wider than over 30 trials.
    clustered = rate({"a": [1] * 10, "b": [0] * 10, "c": [1] * 5 + [0] * 5})
    assert clustered.method == "Wilson over units" and clustered.estimate == pytest.approx(0.5)
    assert (clustered.low, clustered.high) == (wilson(1.5, 3).low, wilson(1.5, 3).high)
    assert clustered.high - clustered.low > (wilson(15, 30).high - wilson(15, 30).low) * 1.5


def _mover(a, b, weights=None):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return mover_bounds(a, b, np.ones_like(a) if weights is None else np.asarray(weights, dtype=float))


def test_mover_is_symmetric_wide_where_rows_agree_and_narrows_with_units():
    a = [float(i < 16) for i in range(24)]
    b = [float(i < 17) for i in range(24)]
    ab, ba = _mover(a, b), _mover(b, a)
    assert (ab[0], ab[1], ab[2]) == pytest.approx((-ba[0], -ba[2], -ba[1]))
    same = _mover([1.0] * 24, [1.0] * 24)
    assert same[0] == 0 and same[1] < 0 < same[2]  # agreement narrows it, never to zero
    assert _mover([1.0] * 96, [1.0] * 96)[2] < _mover([1.0] * 24, [1.0] * 24)[2]


def test_mover_joins_the_two_sides_intervals_by_hand():
    # Uncorrelated sides (b constant): the square root of the two sides' squared half-widths, at t(n-1).
    from labkit.core.stats import _wilson_bounds

    a, b = [1.0, 0.0, 1.0, 0.5, 0.5, 1.0, 0.0, 1.0, 0.5, 0.5], [0.5] * 10
    crit = sp.t.ppf(0.975, 9)
    low_a, high_a = _wilson_bounds(np.array(0.6), np.array(10.0), crit)
    low_b, high_b = _wilson_bounds(np.array(0.5), np.array(10.0), crit)
    diff, low, high = _mover(a, b)
    assert diff == pytest.approx(0.1)
    assert low == pytest.approx(0.1 - math.hypot(0.6 - low_a, high_b - 0.5))
    assert high == pytest.approx(0.1 + math.hypot(high_a - 0.6, 0.5 - low_b))


def test_mcnemar_is_scipys_exact_binomial_test_on_the_discordant_units():
    a = {f"c{i}": i < 6 for i in range(10)}
    assert mcnemar(a, dict.fromkeys(a, False)) == pytest.approx(2 / 64)
    b = {f"c{i}": 3 <= i < 10 for i in range(10)}
    assert mcnemar(a, b) == pytest.approx(sp.binomtest(3, 7, 0.5).pvalue)
    assert mcnemar(a, a) == 1.0
    with pytest.raises(ValueError, match="share no unit"):
        mcnemar({"x": True}, {"y": True})


def test_sign_flip_enumerates_every_flip_when_it_can():
    diffs = [1.0, 0.5, 1.0, 0.2, -0.1, 0.8]
    means = [
        np.mean([d * s for d, s in zip(diffs, signs, strict=True)])
        for signs in itertools.product((1, -1), repeat=6)
    ]
    exact = np.mean([abs(m) >= abs(np.mean(diffs)) - 1e-12 for m in means])
    assert sign_flip(diffs).p == pytest.approx(exact)
    assert sign_flip([0.0, 0.0]).p == 1.0


def test_mde_of_the_sign_flip_test_is_the_paired_t_tests():
    # (t(0.975, 39) + t(0.80, 39)) * 0.3 / sqrt(40) = 0.1363 -> 0.14, and smaller at a stricter sd.
    assert mde_mean(40, 0.3) == 0.14 and mde_mean(40, 0.3, alpha=0.01) > 0.14 and math.isnan(mde_mean(1, 0.3))


def test_power_and_mde_of_exact_mcnemar():
    # With the other row never winning, 6 discordant units are needed: power = P(Bin(n, gain) >= 6).
    assert power(40, 0.2) == pytest.approx(sp.binom.sf(5, 40, 0.2))
    assert (mde(24), mde(24, discordant=0.1), mde(40)) == (0.31, 0.47, 0.2)
    assert math.isnan(mde(5))  # 5 units: the smallest p is 2 / 32 = 0.0625, nothing rejects


def test_compare_rows_picks_the_method_by_design():
    one = compare_rows(
        "x", {f"c{i}": float(i < 12) for i in range(24)}, {f"c{i}": float(i < 5) for i in range(24)}
    )
    assert (one.test, one.interval.method, one.n) == ("exact McNemar", "MOVER over units", 24)
    several = {f"c{i}": [1, 0, 1, 1, i % 2] for i in range(12)}
    baseline = {f"c{i}": 0.1 for i in range(12)}
    multi = compare_rows("y", several, baseline)
    assert (multi.test, multi.interval.method) == ("sign-flip permutation", "MOVER over units")
    known = compare_rows("y", several, baseline, known=True)  # b exact: a's own interval, shifted
    own = rate(several)
    assert (known.interval.low, known.interval.high) == pytest.approx((own.low - 0.1, own.high - 0.1))
    assert known.interval.high - known.interval.low < multi.interval.high - multi.interval.low
    assert (known.b_share, known.room) == pytest.approx((0.1, 0.9))
    alike = compare_rows("z", {f"c{i}": [1, 0] for i in range(8)}, {f"c{i}": [1, 0] for i in range(8)})
    assert alike.interval.low < 0 < alike.interval.high  # every unit differs by 0: still not zero width


def test_one_rule_needs_the_adjusted_test_and_the_interval():
    wide = Interval(0.3, 0.1, 0.5)
    assert Comparison("a", wide, "t", 0.01, 24, 0.31).verdict == "a difference"
    assert (
        Comparison("a", wide, "t", 0.01, 24, 0.31, p_adjusted=0.2).verdict == "not distinguishable (MDE 0.31)"
    )
    assert Comparison("a", Interval(0.3, -0.1, 0.5), "t", 0.001, 24, 0.31).verdict.startswith("not")
    assert "no detectable gain fits" in Comparison("a", wide, "t", 0.06, 5, math.nan).verdict
    assert "b leaves 0.10" in Comparison("a", wide, "t", 0.06, 40, 0.2, room=0.1).verdict  # a ceiling
    assert Comparison("a", wide, "t", 0.001, 24, 0.31, exploratory=True).verdict == "exploratory: no verdict"


def test_a_forest_plot_draws_a_row_per_estimate_and_a_band_per_baseline():
    from labkit.core.forest import forest_plot

    rows = [("a", wilson(16, 24)), ("b", wilson(3, 24)), ("c", wilson(0, 24))]
    fig = forest_plot(rows, bands={"random": wilson(2, 24)}, mde=(0.7, 0.31))
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "c"]
    assert len(ax.patches) == 1 and 1.01 <= ax.get_xlim()[1] <= 1.03  # the band; the bracket stops at 1
    assert any("MDE 0.31: more than the 0.30 left" == t.get_text() for t in ax.texts)
    inside = forest_plot(rows, mde=(0.2, 0.31))
    assert any("MDE 0.31" == t.get_text() for t in inside.axes[0].texts)


def test_a_rate_over_units_of_unequal_size_is_the_pooled_share():
    # 6 trials of one request, 2 of another: the share of the 8 episodes, its interval over 2 units.
    pooled = rate({"a": [1, 1, 0, 0, 1, 1], "b": [0, 1]})
    assert pooled.estimate == 5 / 8 and pooled.method == "Wilson over units"
    # Kish's effective units, (6 + 2)**2 / (36 + 4) = 1.6: fewer than 2, as one unit weighs more.
    from labkit.core.stats import _wilson_bounds

    low, high = _wilson_bounds(np.array(5 / 8), np.array(1.6))
    assert (pooled.low, pooled.high) == pytest.approx((float(low), float(high)))
