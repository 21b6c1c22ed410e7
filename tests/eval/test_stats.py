"""Bootstrap confidence intervals: exact on constants, nominal coverage over seeds."""

import numpy as np
import pytest

from genlm_lab.eval import bootstrap_ci


def test_constant_values_give_a_point_interval():
    assert bootstrap_ci([0.25] * 10) == (0.25, 0.25, 0.25)


def test_interval_brackets_the_mean_and_is_reproducible():
    values = np.random.default_rng(0).random(30)
    mean, lo, hi = bootstrap_ci(values, seed=1)
    assert lo < mean < hi
    assert mean == pytest.approx(values.mean())
    assert bootstrap_ci(values, seed=1) == (mean, lo, hi)


def test_custom_metric_matches_the_vectorised_mean():
    values = np.random.default_rng(2).random(20)
    fast = bootstrap_ci(values, seed=3, n_bootstrap=500)
    slow = bootstrap_ci(values, metric=lambda v: float(np.mean(v)), seed=3, n_bootstrap=500)
    assert fast == pytest.approx(slow)


def test_coverage_is_near_nominal_over_seeds():
    """Per-instance weighted accuracies drawn from a Beta with a known mean: the 95% CI covers it ~95%."""
    rng = np.random.default_rng(7)
    a, b, n, trials = 2.0, 3.0, 60, 400
    truth = a / (a + b)
    covered = 0
    for t in range(trials):
        values = rng.beta(a, b, size=n)
        _, lo, hi = bootstrap_ci(values, n_bootstrap=2000, seed=t)
        covered += lo <= truth <= hi
    rate = covered / trials
    # Binomial sd at 400 trials is 1.1%; percentile bootstrap runs slightly under nominal at n=60.
    assert 0.90 <= rate <= 0.985, rate
    # A 50% interval covers about half the time: the check tells coverage levels apart.
    covered50 = 0
    for t in range(trials):
        _, lo, hi = bootstrap_ci(rng.beta(a, b, size=n), ci=0.5, n_bootstrap=2000, seed=t)
        covered50 += lo <= truth <= hi
    assert 0.4 <= covered50 / trials <= 0.6, covered50 / trials


@pytest.mark.parametrize("bad", [[], [np.nan, 1.0]])
def test_bad_values_raise(bad):
    with pytest.raises(ValueError):
        bootstrap_ci(bad)


def test_bad_ci_raises():
    with pytest.raises(ValueError, match="between 0 and 1"):
        bootstrap_ci([1.0], ci=1.5)


# ---------------------------------------------------------------- accuracy intervals
from itertools import product  # noqa: E402

from scipy import stats  # noqa: E402
from scipy.optimize import brentq  # noqa: E402

from genlm_lab.eval.stats import (  # noqa: E402
    INTERVAL_METHODS,
    PAIRED_METHODS,
    accuracy_interval,
    clopper_pearson,
    detectable_difference,
    paired_interval,
    sign_flip_test,
    wilson_interval,
)


@pytest.mark.parametrize("n", [1, 2, 3, 10, 57])
@pytest.mark.parametrize("ci", [0.95, 0.8])
def test_zero_one_scores_get_scipys_wilson_interval(n, ci):
    checked = 0
    for k in range(n + 1):
        got = accuracy_interval([1.0] * k + [0.0] * (n - k), ci=ci)
        ref = stats.binomtest(k, n).proportion_ci(confidence_level=ci, method="wilson")
        assert got.method == "Wilson score" and got.estimate == pytest.approx(k / n)
        assert (got.low, got.high) == pytest.approx((ref.low, ref.high), abs=1e-12)
        checked += 1
    assert checked == n + 1


@pytest.mark.parametrize("values", [[1.0], [0.0], [1.0, 1.0], [0.0, 0.0], [1.0, 0.0], [0.5, 0.5]])
def test_one_or_two_instances_never_give_a_zero_width_interval(values):
    iv = accuracy_interval(values)
    assert iv.high - iv.low > 0.2, iv  # two instances say little, whatever they scored
    assert 0.0 <= iv.low <= iv.estimate <= iv.high <= 1.0


def test_all_equal_and_all_different_scores():
    ones = accuracy_interval([1.0] * 2)
    assert ones.high == 1.0 and ones.low == pytest.approx(2 / (2 + stats.norm.ppf(0.975) ** 2))
    zeros = accuracy_interval([0.0] * 2)
    assert zeros.low == 0.0 and zeros.high == pytest.approx(1 - ones.low)
    mixed = accuracy_interval([0.0, 1.0])
    assert (mixed.low + mixed.high) / 2 == pytest.approx(0.5)  # symmetric about 1/2
    spread = accuracy_interval(np.linspace(0, 1, 11))  # eleven different fractional scores
    assert spread.method == "Wilson score, variance bound"
    assert spread.estimate == pytest.approx(0.5)


def test_float_noise_ones_read_as_ones():
    noisy = accuracy_interval([sum([0.1] * 10)] * 3)
    exact = accuracy_interval([1.0] * 3)
    assert noisy.method == exact.method == "Wilson score"
    assert (noisy.low, noisy.high) == (exact.low, exact.high)


def test_fractional_scores_get_the_score_interval_at_their_mean():
    """Wilson's interval is {p : |mean - p| <= z sqrt(p (1 - p) / n)}: solved here by root finding."""
    values = np.array([0.25, 0.5, 0.9, 0.6, 0.3])
    z, n, m = stats.norm.ppf(0.975), len(values), values.mean()
    score = lambda p: abs(m - p) - z * np.sqrt(p * (1 - p) / n)  # noqa: E731
    iv = accuracy_interval(values)
    assert iv.method == "Wilson score, variance bound"
    assert iv.low == pytest.approx(brentq(score, 1e-12, m), abs=1e-9)
    assert iv.high == pytest.approx(brentq(score, m, 1 - 1e-12), abs=1e-9)
    assert set(INTERVAL_METHODS) == {"Wilson score", "Wilson score, variance bound"}


@pytest.mark.parametrize("n", [2, 5, 40])
def test_fractional_intervals_cover_at_least_nominally(n):
    """Beta-distributed accuracies (variance below p(1 - p)): the bound makes the interval conservative."""
    rng = np.random.default_rng(n)
    a, b, trials = 2.0, 3.0, 2000
    covered = sum(
        (iv := accuracy_interval(rng.beta(a, b, size=n))).low <= a / (a + b) <= iv.high
        for _ in range(trials)
    )
    assert covered / trials >= 0.95


@pytest.mark.parametrize("bad", [[], [np.nan], [1.2], [-0.1]])
def test_accuracies_outside_zero_one_are_refused(bad):
    with pytest.raises(ValueError):
        accuracy_interval(bad)
    with pytest.raises(ValueError, match="n >= 1"):
        wilson_interval(0, 0)


@pytest.mark.parametrize("n", [1, 2, 7, 30])
def test_clopper_pearson_is_scipys_exact_interval(n):
    for k in range(n + 1):
        ref = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
        assert clopper_pearson(k, n) == pytest.approx((ref.low, ref.high), abs=1e-12)
    assert clopper_pearson(0, 0) == (0.0, 1.0)


# ---------------------------------------------------------------- paired differences
def _outcomes(n):
    """Every count of (a-wins, b-wins) among n pairs of 0/1 scores, with its pairs' differences."""
    for plus in range(n + 1):
        for minus in range(n + 1 - plus):
            yield plus, minus, [1.0] * plus + [-1.0] * minus + [0.0] * (n - plus - minus)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 12])
def test_the_paired_interval_covers_at_least_nominally_at_every_n(n):
    """Exact coverage by enumeration: every trinomial law of d in {-1, 0, 1} on a grid."""
    outcomes = [(p, m, paired_interval(d)) for p, m, d in _outcomes(n)]
    grid = [
        (qp, qm) for qp in np.linspace(0, 1, 21) for qm in np.linspace(0, 1, 21) if qp + qm <= 1
    ]
    worst = 1.0
    for qp, qm in grid:
        coverage = sum(
            stats.multinomial.pmf([p, m, n - p - m], n, [qp, qm, max(0.0, 1 - qp - qm)])
            for p, m, iv in outcomes
            if iv.low <= qp - qm <= iv.high
        )
        worst = min(worst, coverage)
    assert worst >= 0.95, worst


def test_the_paired_interval_excludes_zero_exactly_when_mcnemars_exact_test_rejects():
    checked = 0
    for n in (1, 2, 5, 6, 13, 30):
        for plus, minus, d in _outcomes(n):
            iv = paired_interval(d)
            p = stats.binomtest(plus, plus + minus).pvalue if plus + minus else 1.0
            assert (iv.low > 0 or iv.high < 0) == (p <= 0.05), (n, plus, minus, iv, p)
            checked += 1
    assert checked > 100  # every split of each n into wins, losses and ties


def test_the_paired_interval_is_the_range_over_its_two_exact_intervals():
    checked = 0
    for n in (1, 2, 4, 9):
        for plus, minus, d in _outcomes(n):
            checked += 1
            iv = paired_interval(d)
            q = clopper_pearson(plus + minus, n)
            p = clopper_pearson(plus, plus + minus)
            qq, pp = np.meshgrid(np.linspace(*q, 201), np.linspace(*p, 201))
            grid = qq * (2 * pp - 1)  # brute force over the box
            assert iv.low == pytest.approx(min(grid.min(), iv.estimate), abs=1e-12)
            assert iv.high == pytest.approx(max(grid.max(), iv.estimate), abs=1e-12)
            assert -1.0 <= iv.low <= iv.estimate <= iv.high <= 1.0
            assert iv.method in PAIRED_METHODS
    assert checked > 50


def test_small_paired_samples_give_honest_intervals():
    two_wins = paired_interval([1.0, 1.0])
    assert two_wins.low < 0 < two_wins.high  # the exact test cannot reject from two pairs either
    ties = paired_interval([0.0, 0.0])
    assert ties.low == pytest.approx(-ties.high) and ties.high > 0.5  # all equal: wide, about 0
    one = paired_interval([-1.0])
    assert one.low == -1.0 and one.high > 0.9
    assert paired_interval([0.3, -0.2]).method == "Clopper-Pearson range, fractional parts"


@pytest.mark.parametrize("n", [1, 2, 3, 6, 9, 12])
def test_the_sign_flip_test_equals_scipys_exact_permutation_test(n):
    rng = np.random.default_rng(n)
    d = np.round(rng.uniform(-1, 1, n), 3)
    d[rng.random(n) < 0.25] = 0.0
    p, exact = sign_flip_test(d)
    if n > 1:  # scipy wants two observations
        ref = stats.permutation_test((d,), np.sum, permutation_type="samples", n_resamples=np.inf)
        assert exact and p == pytest.approx(ref.pvalue, rel=1e-9)
    brute = np.mean([abs(np.dot(s, d)) >= abs(d.sum()) - 1e-12 for s in product((-1, 1), repeat=n)])
    assert p == pytest.approx(brute, rel=1e-9)


def test_the_sign_flip_test_on_zero_one_scores_is_mcnemars_exact_test():
    for plus, minus in ((0, 0), (2, 0), (1, 1), (7, 2), (40, 25), (300, 260)):
        d = [1.0] * plus + [-1.0] * minus + [0.0] * 5
        p, exact = sign_flip_test(d)
        ref = stats.binomtest(plus, plus + minus).pvalue if plus + minus else 1.0
        assert exact and p == pytest.approx(ref, rel=1e-9)
    assert sign_flip_test([1.0, 1.0]) == (pytest.approx(0.5), True)  # n = 2: nothing to see


def test_many_distinct_differences_are_sampled_and_agree_with_scipy():
    d = np.random.default_rng(3).uniform(-0.5, 0.8, 40)
    p, exact = sign_flip_test(d, n_flips=20000, seed=1)
    ref = stats.permutation_test(
        (d,), np.sum, permutation_type="samples", n_resamples=20000, random_state=2
    ).pvalue
    assert not exact and p == pytest.approx(ref, abs=0.01)
    assert p >= 1 / 20001  # (1 + hits) / (1 + flips): never zero


# ---------------------------------------------------------------- the minimum detectable effect
def _sign_test_power(n, delta, alpha=0.05):
    """P(the exact sign test rejects) when each of n pairs is +1 w.p. (1 + delta) / 2, else -1."""
    reject = [k for k in range(n + 1) if stats.binomtest(k, n).pvalue <= alpha]
    return sum(stats.binom.pmf(k, n, (1 + delta) / 2) for k in reject)


@pytest.mark.parametrize("n", [6, 7, 10, 23, 40, 100])
def test_the_detectable_difference_is_the_smallest_with_the_stated_power(n):
    delta = detectable_difference(n)
    assert 0 < delta <= 1
    assert _sign_test_power(n, delta) >= 0.8 - 1e-9
    assert _sign_test_power(n, delta - 1e-6) < 0.8


def test_six_pairs_need_all_six_and_five_cannot_detect_anything():
    # At n = 6 only 6-0 and 0-6 reject (p = 1/32): ((1 + d) / 2)^6 + ((1 - d) / 2)^6 = 0.8.
    exact = brentq(lambda d: ((1 + d) / 2) ** 6 + ((1 - d) / 2) ** 6 - 0.8, 0.5, 1)
    assert detectable_difference(6) == pytest.approx(exact, abs=1e-9)
    for n in range(0, 6):  # 5-0 has p = 1/16 > 0.05: even a difference of 1 goes undetected
        assert np.isnan(detectable_difference(n))
    assert detectable_difference(5, alpha=0.1) <= 1  # at a looser level it is sizeable


def test_the_detectable_difference_is_detected_with_its_power_in_simulation():
    n, rng = 30, np.random.default_rng(0)
    delta = detectable_difference(n)
    wins = rng.binomial(n, (1 + delta) / 2, size=4000)
    rejected = np.mean([sign_flip_test([1.0] * w + [-1.0] * (n - w))[0] <= 0.05 for w in wins])
    assert rejected == pytest.approx(0.8, abs=0.03)
    assert detectable_difference(1000) < detectable_difference(100) < detectable_difference(30)


def test_the_numbers_the_docs_quote():
    """docs/eval-own-domain.md quotes these: they must stay true."""
    assert accuracy_interval([1.0, 1.0])[1:3] == pytest.approx((0.342, 1.0), abs=5e-4)
    assert [round(detectable_difference(n), 2) for n in (12, 40, 100)] == [0.74, 0.44, 0.29]
    assert np.isnan(detectable_difference(5)) and detectable_difference(6) <= 1
