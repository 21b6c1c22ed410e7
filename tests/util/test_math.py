"""Log-space helpers agree with direct computation and handle -inf."""

import math

import numpy as np
import pytest
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
