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
    adjust,
    compare_rows,
    comparison_table,
    holm,
    mcnemar,
    mde,
    newcombe,
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


@pytest.mark.parametrize("bad", [(1, 0), (3, 2), (-1, 5), (True, 2), (1, 2.0)])
def test_wilson_refuses_what_is_not_a_count(bad):
    with pytest.raises(ValueError, match="wilson needs"):
        wilson(*bad)


def test_no_rate_has_zero_width_at_the_edges_or_where_trials_agree():
    assert (wilson(0, 24).low, round(wilson(0, 24).high, 3)) == (0.0, 0.138)
    assert str(wilson(23, 24)) == "0.958 [0.798, 0.993]"
    # Five trials of each case, every case all-pass or all-fail: the unit is the case (Wilson on 10).
    agreeing = {f"c{i}": [i < 7] * 5 for i in range(10)}
    assert rate(agreeing) == wilson(7, 10)
    # Every case passes 3 of 5: nothing for the bootstrap to resample; Wilson on the summed means.
    same = rate({f"c{i}": [1, 1, 1, 0, 0] for i in range(10)})
    assert same.low < 0.6 < same.high and same.method == "Wilson on unit means"


def test_a_rate_over_several_trials_resamples_units_not_trials():
    # 3 cases of 10 trials: clustered by case, the interval is far wider than Wilson over 30 trials.
    clustered = rate({"a": [1] * 10, "b": [0] * 10, "c": [1] * 5 + [0] * 5})
    assert clustered.method == "cluster bootstrap" and clustered.estimate == pytest.approx(0.5)
    assert clustered.high - clustered.low > (wilson(15, 30).high - wilson(15, 30).low) * 1.5
    assert rate({"a": [1, 0], "b": [0, 0], "c": [1, 1]}) == rate({"a": [1, 0], "b": [0, 0], "c": [1, 1]})


def test_newcombe_is_symmetric_wide_where_rows_agree_and_narrows_with_units():
    a = {f"c{i}": i < 16 for i in range(24)}
    b = {f"c{i}": i < 17 for i in range(24)}
    ab, ba = newcombe(a, b), newcombe(b, a)
    assert (ab.estimate, ab.low, ab.high) == pytest.approx((-ba.estimate, -ba.high, -ba.low))
    everything = dict.fromkeys(range(24), True)
    same = newcombe(everything, everything)
    assert same.estimate == 0 and same.low == pytest.approx(-0.138, abs=1e-3) and same.high == -same.low
    assert newcombe(a, a).low < 0 < newcombe(a, a).high  # agreement narrows it, never to zero
    assert newcombe(dict.fromkeys(range(96), True), dict.fromkeys(range(96), True)).high < 0.05


def _coverage(n, p_a, p_b, both):
    """The exact coverage of Newcombe's interval over every 2x2 table of n pairs."""
    probs = [both, p_a - both, p_b - both, 1 - p_a - p_b + both]
    covered = 0.0
    for cells in itertools.product(range(n + 1), repeat=3):
        if sum(cells) > n:
            continue
        table = [*cells, n - sum(cells)]
        a = {i: i < table[0] + table[1] for i in range(n)}
        b = {i: i < table[0] or table[0] + table[1] <= i < table[0] + table[1] + table[2] for i in range(n)}
        if newcombe(a, b).low <= p_a - p_b <= newcombe(a, b).high:
            covered += sp.multinomial.pmf(table, n, probs)
    return covered


@pytest.mark.parametrize(("p_a", "p_b", "both"), [(0.7, 0.6, 0.5), (0.3, 0.1, 0.05), (0.9, 0.9, 0.85)])
def test_newcombe_covers_the_true_difference_about_95_percent_of_the_time(p_a, p_b, both):
    # Newcombe (1998) reports method 10's mean coverage near 0.95; exact here over n = 12 pairs.
    assert 0.92 <= _coverage(12, p_a, p_b, both) <= 1.0


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


def test_holm_matches_the_step_down_by_hand():
    # Sorted 0.005, 0.01, 0.03, 0.04 -> x4, x3, x2, x1 -> 0.02, 0.03, 0.06, 0.04 -> monotone 0.06.
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5]) == [0.5] and holm([0.6, 0.7]) == [1.0, 1.0]


def test_power_and_mde_of_exact_mcnemar():
    # With the other row never winning, 6 discordant units are needed: power = P(Bin(n, gain) >= 6).
    assert power(40, 0.2) == pytest.approx(sp.binom.sf(5, 40, 0.2))
    assert (mde(24), mde(24, discordant=0.1), mde(40)) == (0.31, 0.47, 0.2)
    assert math.isnan(mde(5))  # 5 units: the smallest p is 2 / 32 = 0.0625, nothing rejects


def test_compare_rows_picks_the_method_by_design():
    one = compare_rows(
        "x", {f"c{i}": float(i < 12) for i in range(24)}, {f"c{i}": float(i < 5) for i in range(24)}
    )
    assert (one.test, one.interval.method, one.n) == ("exact McNemar", "Newcombe", 24)
    several = {f"c{i}": [1, 0, 1, 1, i % 2] for i in range(12)}
    baseline = {f"c{i}": 0.1 for i in range(12)}
    multi = compare_rows("y", several, baseline)
    assert (multi.test, multi.interval.method) == ("sign-flip permutation", "cluster bootstrap")
    alike = compare_rows("z", {f"c{i}": [1, 0] for i in range(8)}, {f"c{i}": [1, 0] for i in range(8)})
    assert alike.interval.low < 0 < alike.interval.high  # every unit differs by 0: still not zero width


def test_one_rule_needs_the_adjusted_test_and_the_interval():
    wide = Interval(0.3, 0.1, 0.5)
    assert Comparison("a", wide, "t", 0.01, 24, 0.31).verdict == "a difference"
    assert Comparison("a", wide, "t", 0.01, 24, 0.31, p_holm=0.2).verdict == "not distinguishable (MDE 0.31)"
    assert Comparison("a", Interval(0.3, -0.1, 0.5), "t", 0.001, 24, 0.31).verdict.startswith("not")
    assert "no gain is detectable on 5 units" in Comparison("a", wide, "t", 0.06, 5, math.nan).verdict
    family = adjust(
        [Comparison("a", wide, "t", 0.01, 24, 0.31), Comparison("b", wide, "t", 0.04, 24, 0.31)], "f"
    )
    assert [c.p_holm for c in family] == pytest.approx([0.02, 0.04]) and {c.family for c in family} == {"f"}
    table = comparison_table(family, "lab 02 rungs")
    assert table.columns.name == "family: lab 02 rungs (2 comparisons, Holm)"
    assert list(table["verdict"]) == ["a difference", "a difference"]


def test_a_forest_plot_draws_a_row_per_estimate_and_a_band_per_baseline():
    from labkit.core.forest import forest_plot

    rows = [("a", wilson(16, 24)), ("b", wilson(3, 24)), ("c", wilson(0, 24))]
    fig = forest_plot(rows, bands={"random": wilson(2, 24)}, mde=(0.7, 0.31))
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "c"]
    assert len(ax.patches) == 1 and ax.get_xlim()[1] >= 1.01  # the band, and room for the bracket
    assert any("MDE 0.31" == t.get_text() for t in ax.texts)


def test_a_rate_over_units_of_unequal_size_is_the_pooled_share():
    # 6 trials of one request, 2 of another: the share of the 8 episodes, its interval over 2 units.
    pooled = rate({"a": [1, 1, 0, 0, 1, 1], "b": [0, 1]})
    assert pooled.estimate == 5 / 8 and pooled.method == "cluster bootstrap"
    assert rate({"a": [1, 1, 1], "b": [0]}) == wilson(1.5, 2)  # each unit agrees with itself
