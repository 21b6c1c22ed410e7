"""Resamplers: valid indices, unbiased frequencies, variance ordering, degenerate cases."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from genlm_lab.smc import RESAMPLING_METHODS, resample

log_weight_lists = st.lists(
    st.one_of(st.floats(-30, 30), st.just(-math.inf)), min_size=1, max_size=12
).filter(lambda ws: any(w > -math.inf for w in ws))


@pytest.mark.parametrize("method", RESAMPLING_METHODS)
@settings(max_examples=40, deadline=None)
@given(log_weights=log_weight_lists, n=st.integers(1, 20), seed=st.integers(0, 2**31))
def test_indices_are_in_range_and_avoid_zero_weights(method, log_weights, n, seed):
    out = resample(log_weights, n, method, np.random.default_rng(seed))
    assert out.shape == (n,)
    assert out.min() >= 0 and out.max() < len(log_weights)
    assert all(log_weights[i] > -math.inf for i in out)


@pytest.mark.parametrize("method", RESAMPLING_METHODS)
def test_frequencies_match_weights_chi_square(method):
    rng = np.random.default_rng(1)
    w = np.array([0.05, 0.1, 0.15, 0.3, 0.4])
    n, runs = 10, 3000
    counts = np.zeros(w.size)
    for _ in range(runs):
        counts += np.bincount(resample(np.log(w), n, method, rng), minlength=w.size)
    expected = w * n * runs
    # Counts within a run are dependent for the low-variance schemes, which only
    # lowers the spread; the chi-square test stays conservative.
    p_value = stats.chisquare(counts, expected).pvalue
    assert p_value > 1e-3, (counts, expected)


@pytest.mark.parametrize("method", ["stratified", "systematic", "residual"])
def test_variance_is_at_most_multinomial(method):
    rng = np.random.default_rng(2)
    w = np.array([0.02, 0.08, 0.2, 0.33, 0.37])
    n, runs = 8, 4000

    def count_variance(m):
        counts = np.array(
            [np.bincount(resample(np.log(w), n, m, rng), minlength=w.size) for _ in range(runs)]
        )
        return counts.var(axis=0).sum()

    multinomial = count_variance("multinomial")
    assert multinomial == pytest.approx((n * w * (1 - w)).sum(), rel=0.1)
    assert count_variance(method) <= multinomial


@pytest.mark.parametrize("method", RESAMPLING_METHODS)
def test_degenerate_weights_give_one_index(method):
    log_weights = [-math.inf, -math.inf, 0.0, -math.inf]
    out = resample(log_weights, 7, method, np.random.default_rng(0))
    assert out.tolist() == [2] * 7


@pytest.mark.parametrize("method", RESAMPLING_METHODS)
def test_weights_far_below_the_largest_are_not_lost_to_overflow(method):
    out = resample([-1000.0, -1000.0 + math.log(3.0)], 4000, method, np.random.default_rng(0))
    assert np.mean(out == 1) == pytest.approx(0.75, abs=0.03)


def test_bad_input_raises_one_clear_error():
    with pytest.raises(ValueError, match="every log-weight is -inf"):
        resample([-math.inf, -math.inf], 3)
    with pytest.raises(ValueError, match="unknown resampling method"):
        resample([0.0], 3, "magic")
    with pytest.raises(ValueError, match="NaN"):
        resample([0.0, math.nan], 3)
    with pytest.raises(ValueError, match="positive int"):
        resample([0.0], 0)


@pytest.mark.parametrize("name", list(RESAMPLING_METHODS))
def test_llamppl_style_function_is_unbiased_and_repeatable_under_np_random_seed(name):
    from genlm_lab.smc.resample import get_resampling_fn

    fn = get_resampling_fn(name)
    w = np.array([0.5, 0.3, 0.15, 0.05])
    np.random.seed(7)
    a = fn(w)
    np.random.seed(7)
    assert np.array_equal(a, fn(w)) and len(a) == len(w)
    counts = np.zeros(len(w))
    for seed in range(3000):
        np.random.seed(seed)
        counts += np.bincount(fn(w), minlength=len(w))
    # each index is expected n * w_i times per draw; 3000 draws put the mean within ~0.01
    np.testing.assert_allclose(counts / (3000 * len(w)), w, atol=0.015)


def test_get_resampling_fn_refuses_an_unknown_name():
    from genlm_lab.smc.resample import get_resampling_fn

    with pytest.raises(ValueError, match="Unknown resampling method 'nope'"):
        get_resampling_fn("nope")


class _SameUniform:
    """A stand-in generator whose every uniform is `r`: a scheme's draws as a function of r."""

    def __init__(self, r: float) -> None:
        self.r = r

    def random(self, size=None):
        return self.r if size is None else np.full(size, self.r)


def _exact_expected_counts(w: np.ndarray, n: int, method: str) -> np.ndarray:
    """E[offspring of i] by integrating over one uniform r, exactly.

    Every scheme's count of i is a sum over its uniforms of an indicator that
    depends on one uniform alone, so by linearity its mean is the integral over
    r of the count when every uniform equals r; that count is constant between
    the points where some cumulative weight (of w, of n*w modulo 1, or of the
    residual weights) crosses r, so one midpoint per piece gives the integral.
    """
    cdf = np.cumsum(w) / w.sum()
    residual = n * w - np.floor(n * w)
    edges = [0.0, 1.0, *cdf, *np.mod(n * cdf, 1.0)]
    if residual.sum() > 0:
        edges += list(np.cumsum(residual) / residual.sum())
    edges = np.unique(np.clip(edges, 0.0, 1.0))
    log_w = np.log(np.where(w > 0, w, 1.0)) + np.where(w > 0, 0.0, -math.inf)
    total = np.zeros(w.size)
    pieces = 0
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        if hi - lo < 1e-15:
            continue
        counts = [
            np.bincount(
                resample(log_w, n, method, _SameUniform(lo + f * (hi - lo))), minlength=w.size
            )
            for f in (0.25, 0.5, 0.75)
        ]
        # the piece really is flat: the edges above are all the points where the draw changes
        assert all(np.array_equal(c, counts[1]) for c in counts)
        total += (hi - lo) * counts[1]
        pieces += 1
    assert pieces >= 1
    return total


@pytest.mark.parametrize("method", RESAMPLING_METHODS)
def test_each_scheme_is_exactly_unbiased_by_integration_over_its_uniforms(method):
    rng = np.random.default_rng(5)
    cases = [(np.array([0.25, 0.25, 0.5]), 4), (np.array([0.1, 0.0, 0.9]), 3)]
    cases += [(rng.dirichlet(np.ones(k)), n) for k in (2, 3, 5, 6) for n in (1, 2, 5, 7)]
    for w, n in cases:
        np.testing.assert_allclose(_exact_expected_counts(w, n, method), n * w, atol=1e-9)
    assert len(cases) == 18


def test_a_function_registered_in_the_registry_is_what_runs_for_its_name(monkeypatch):
    seen = []

    def last_heaviest(w):  # every ancestor the heaviest particle (a deliberately biased scheme)
        seen.append(np.asarray(w).copy())
        return np.full(len(w), int(np.argmax(w)))

    monkeypatch.setitem(RESAMPLING_METHODS, "heaviest", last_heaviest)
    log_w = np.log([0.2, 0.5, 0.3])
    assert resample(log_w, 3, "heaviest").tolist() == [1, 1, 1]
    np.testing.assert_allclose(seen[0], [0.2, 0.5, 0.3])
    monkeypatch.setitem(RESAMPLING_METHODS, "multinomial", last_heaviest)
    assert resample(log_w, 3, "multinomial").tolist() == [1, 1, 1] and len(seen) == 2
    with pytest.raises(ValueError, match="one index per weight"):
        resample(log_w, 5, "heaviest")
    monkeypatch.setitem(RESAMPLING_METHODS, "broken", lambda w: [7, 0, 0])
    with pytest.raises(ValueError, match=r"3 indices in \[0, 3\)"):
        resample(log_w, 3, "broken")
