"""Log-space helpers agree with direct computation and handle -inf."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from genlm_lab.util import logmeanexp, logsumexp, normalize_log_weights

logs = st.lists(st.floats(-50, 50), min_size=1, max_size=20)


@given(logs)
def test_logsumexp_matches_direct_sum(xs):
    assert logsumexp(xs) == pytest.approx(math.log(sum(math.exp(x) for x in xs)), rel=1e-9)


@given(logs)
def test_logmeanexp_is_log_of_mean(xs):
    assert logmeanexp(xs) == pytest.approx(math.log(np.mean(np.exp(xs))), rel=1e-9, abs=1e-9)


def test_all_minus_inf_gives_minus_inf_and_zero_weights():
    assert logsumexp([-math.inf, -math.inf]) == -math.inf
    assert logsumexp([]) == -math.inf
    assert list(normalize_log_weights([-math.inf, -math.inf])) == [0.0, 0.0]


@given(logs)
def test_normalized_weights_sum_to_one(xs):
    w = normalize_log_weights(xs)
    assert w.sum() == pytest.approx(1.0)
    assert np.all(w >= 0)


def test_nan_propagates_instead_of_reading_as_a_zero_weight():
    # logsumexp([nan, 0]) was -inf and normalize_log_weights gave all zeros before
    assert math.isnan(logsumexp([math.nan, 0.0]))
    assert math.isnan(logsumexp([0.0, math.nan, -math.inf]))
    assert np.isnan(normalize_log_weights([math.nan, 0.0])).all()


def test_plus_inf_log_weights_take_the_whole_mass_equally():
    # the limit of normalising [x, 0] or [x, x, 0] as x grows; NaN before
    np.testing.assert_array_equal(normalize_log_weights([math.inf, 0.0]), [1.0, 0.0])
    np.testing.assert_array_equal(
        normalize_log_weights([math.inf, -1.0, math.inf]), [0.5, 0.0, 0.5]
    )
    big = normalize_log_weights([700.0, 0.0])
    np.testing.assert_allclose(big, [1.0, 0.0], atol=1e-300)


@given(st.floats(allow_nan=False, allow_infinity=False), st.integers(1, 9))
def test_equal_weights_of_any_magnitude_share_the_mass_equally(x, n):
    # -1e300 + log(n) rounds back to -1e300: normalising by the log total gave n/n-ths
    np.testing.assert_allclose(normalize_log_weights([x] * n), [1.0 / n] * n, rtol=1e-12)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_torch_tensors_of_any_float_dtype_are_read(dtype):
    # a bfloat16 tensor raised "Got unsupported ScalarType BFloat16"
    t = torch.tensor([0.0, -1.5, -math.inf, 2.0], dtype=dtype)
    plain = [float(x) for x in t.tolist()]
    assert logsumexp(t) == pytest.approx(logsumexp(plain))
    assert logmeanexp(t) == pytest.approx(logmeanexp(plain))
    assert np.allclose(normalize_log_weights(t), normalize_log_weights(plain))
