"""Resampling without replacement in smc_steer: inclusion probabilities and unbiased weights."""

import math

import numpy as np
import pytest

from genlm_lab.smc.steer import resample_without_replacement


def test_inclusion_probabilities_are_min_one_c_w_and_weights_unbiased():
    rng = np.random.default_rng(0)
    log_w = np.log(np.array([0.4, 0.2, 0.1, 0.1, 0.08, 0.07, 0.05]))
    n, m, runs = 3, log_w.size, 3000
    w = np.exp(log_w) / np.exp(log_w).sum()
    # c solves sum(min(1, c w)) = n: 0.4 is kept surely, then c = 2 / 0.6.
    c = 2 / 0.6
    want = np.minimum(1.0, c * w)
    kept_counts = np.zeros(m)
    totals = []
    for _ in range(runs):
        kept, new = resample_without_replacement(log_w, n, rng)
        assert len(set(kept.tolist())) == len(kept) == n
        kept_counts[kept] += 1
        totals.append(np.exp(new).sum())
    assert kept_counts / runs == pytest.approx(want, abs=0.03)
    # The mean weight over the kept n estimates the mean over all m candidates.
    assert np.mean(totals) / n == pytest.approx(np.exp(log_w).sum() / m, rel=0.03)


def test_few_positive_candidates_are_all_kept_with_the_same_mean():
    log_w = np.array([0.0, -math.inf, math.log(3.0), -math.inf])
    kept, new = resample_without_replacement(log_w, 3, np.random.default_rng(0))
    assert sorted(kept.tolist()) == [0, 2]
    assert np.exp(new).mean() == pytest.approx(np.exp(log_w).sum() / 4)
