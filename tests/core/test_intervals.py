"""Error bars (labkit.core.intervals): Wilson against published values, seeded bootstraps, pairs."""

import math

import pytest

from labkit.core.intervals import Interval, bootstrap, mcnemar, paired, verdict, wilson

# Newcombe, "Two-sided confidence intervals for the single proportion: comparison of seven
# methods", Statistics in Medicine 17 (1998), Table I, method 3 (Wilson score, no continuity
# correction), to the four decimals printed there.
NEWCOMBE = [
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0000, 0.1611),
    (1, 29, 0.0061, 0.1718),
]


@pytest.mark.parametrize(("successes", "n", "low", "high"), NEWCOMBE)
def test_wilson_matches_the_published_values(successes, n, low, high):
    interval = wilson(successes, n)
    assert interval.estimate == successes / n
    assert (round(interval.low, 4), round(interval.high, 4)) == (low, high)


def test_wilson_at_the_edges_stays_inside_zero_and_one():
    assert wilson(24, 24).high == 1.0 and wilson(24, 24).low == pytest.approx(0.8620, abs=1e-4)
    assert wilson(0, 24).low == 0.0
    # The closed form at 0 of n: the upper bound is z^2 / (n + z^2).
    assert wilson(0, 20).high == pytest.approx(1.959963984540054**2 / (20 + 1.959963984540054**2))


@pytest.mark.parametrize("bad", [(1, 0), (3, 2), (-1, 5), (1.0, 2), (True, 2), (1, 10**400 / 10**399)])
def test_wilson_refuses_counts_that_are_not_counts(bad):
    with pytest.raises(ValueError, match="wilson needs int counts"):
        wilson(*bad)


CASES = {"a": [1, 1, 1], "b": [1, 0, 0], "c": [0, 0, 0], "d": [1, 1, 0], "e": [1, 1, 1]}


def test_the_bootstrap_is_the_same_for_the_same_seed_and_moves_with_another():
    first, again = bootstrap(CASES, seed=7), bootstrap(CASES, seed=7)
    assert first == again
    varied = {f"c{i}": [1] * (i % 4) + [0] * (3 - i % 4) for i in range(24)}
    assert bootstrap(varied, seed=7) != bootstrap(varied, seed=8)
    assert first.estimate == pytest.approx((1 + 1 / 3 + 0 + 2 / 3 + 1) / 5)
    assert 0 <= first.low <= first.estimate <= first.high <= 1


def test_the_bootstrap_resamples_cases_not_trials():
    # Two cases, each always passing or always failing: resampling trials would give a narrow
    # interval around 0.5; resampling cases can draw both cases the same, so the bounds are 0 and 1.
    interval = bootstrap({"always": [1] * 20, "never": [0] * 20})
    assert (interval.low, interval.high) == (0.0, 1.0)


@pytest.mark.parametrize("bad", [{}, {"a": []}])
def test_the_bootstrap_refuses_nothing_to_resample(bad):
    with pytest.raises(ValueError, match="at least one case"):
        bootstrap(bad)


def test_a_paired_difference_sees_what_two_separate_intervals_cannot():
    # b passes every case a passes, plus six more, on 24 cases where difficulty varies widely.
    a = {f"c{i}": 1.0 if i < 12 else 0.0 for i in range(24)}
    b = {case: 1.0 if value or int(case[1:]) < 18 else 0.0 for case, value in a.items()}
    difference = paired(b, a)
    assert difference.estimate == pytest.approx(6 / 24)
    assert difference.excludes(0)
    # Two separate Wilson intervals overlap: side by side, the difference would look like noise.
    assert wilson(18, 24).low < wilson(12, 24).high


def test_a_paired_difference_of_noise_includes_zero_and_only_counts_shared_cases():
    a = {"x": 1, "y": 0, "z": 1, "only-a": 1}
    b = {"x": 0, "y": 1, "z": 1, "only-b": 0}
    difference = paired(a, b)
    assert difference.estimate == 0.0 and not difference.excludes(0)
    with pytest.raises(ValueError, match="share none"):
        paired({"x": 1}, {"y": 1})


def test_mcnemar_counts_only_discordant_cases():
    same = {"a": True, "b": False}
    assert mcnemar(same, same) == 1.0
    # 6 cases only a passed, 0 only b: p = 2 * (1/2)^6.
    a = {f"c{i}": i < 6 for i in range(10)}
    b = dict.fromkeys(a, False)
    assert mcnemar(a, b) == pytest.approx(2 / 64)
    # 3 against 3: no evidence either way.
    b2 = {f"c{i}": 6 <= i < 9 for i in range(10)}
    a2 = {f"c{i}": i < 3 for i in range(10)}
    assert mcnemar(a2, b2) == 1.0
    with pytest.raises(ValueError, match="share none"):
        mcnemar({"x": True}, {"y": True})


def test_an_interval_says_whether_it_excludes_a_value():
    interval = Interval(0.1, 0.02, 0.2)
    assert interval.excludes(0) and not interval.excludes(0.02) and interval.excludes(0.21)
    assert str(interval) == "0.100 [0.020, 0.200]"


def test_a_verdict_needs_the_interval_to_exclude_zero_and_mcnemar_to_agree_where_it_applies():
    apart, across = Interval(-0.4, -0.7, -0.1), Interval(0.1, -0.1, 0.3)
    assert verdict(apart) == verdict(apart, 0.01) == "a difference"
    assert verdict(apart, 0.125) == verdict(across) == verdict(across, 0.01) == "not distinguishable"


def test_a_tables_mean_is_summed_exactly_so_it_rounds_as_the_fractions_do():
    # Twenty cases whose pass rates sum to exactly 10.35: pass@1 is 0.5175, which a float sum
    # (numpy's) leaves at 0.5175000000000001 and prints as 0.518; the exact sum prints 0.517.
    from labkit.decision_loop.tables import rate_intervals

    fractions = [
        (1, 1),
        (5, 6),
        (4, 5),
        (1, 6),
        (1, 3),
        (1, 5),
        (3, 5),
        (1, 1),
        (0, 1),
        (1, 6),
        (1, 4),
        (5, 6),
        (3, 5),
        (1, 4),
        (4, 5),
        (1, 3),
        (3, 5),
        (1, 2),
        (1, 4),
        (5, 6),
    ]
    rows = [{"case": f"c{i}", "passed": t < c} for i, (c, n) in enumerate(fractions) for t in range(n)]
    found = rate_intervals(rows, k_max=1)["pass@1"]
    rates = [c / n for c, n in fractions]
    assert found.estimate == math.fsum(rates) / 20 and f"{found.estimate:.3f}" == "0.517"
    assert found.low <= found.estimate <= found.high
