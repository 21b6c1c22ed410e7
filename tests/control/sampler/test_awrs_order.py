"""awrs_order: the skip lengths, the without-replacement order and its remaining mass."""

from __future__ import annotations

import numpy as np

from genlm_lab.control.sampler.awrs_order import (
    UnseenTokens,
    draw_from_cdf,
    pick_weighted,
    skipped_draws,
)


def test_skipped_draws_follow_the_geometric_law():
    rng = np.random.default_rng(0)
    p_out = 0.2
    draws = np.array([skipped_draws(p_out, rng) for _ in range(20000)])
    # failures before the first success: mean (1 - p) / p = 4, P(0) = p
    assert abs(draws.mean() - (1 - p_out) / p_out) < 0.15
    assert abs((draws == 0).mean() - p_out) < 0.02
    assert skipped_draws(1.0, rng) == 0


def test_unseen_tokens_pop_each_live_token_once_and_keep_the_exact_mass():
    rng = np.random.default_rng(1)
    q = rng.random(300)
    q[::7] = 0.0
    seen = [1, 2, 3]
    order = UnseenTokens(q, seen, rng)
    popped = []
    while (index := order.pop()) is not None:
        popped.append(index)
        left = [i for i in range(len(q)) if i not in popped and i not in seen and q[i] > 0]
        assert np.isclose(order.mass(), q[left].sum())
    expected = {i for i in range(len(q)) if q[i] > 0 and i not in seen}
    assert sorted(popped) == sorted(expected)


def test_the_first_unseen_token_is_drawn_in_proportion_to_q():
    q = np.array([0.1, 0.0, 0.6, 0.3])
    rng = np.random.default_rng(2)
    counts = np.bincount([UnseenTokens(q, [], rng).pop() for _ in range(20000)], minlength=4)
    assert np.allclose(counts / counts.sum(), q, atol=0.015)


def test_draw_from_cdf_and_pick_weighted_match_their_weights():
    rng = np.random.default_rng(3)
    q = np.array([0.0, 0.25, 0.0, 0.75, 0.0])
    counts = np.bincount([draw_from_cdf(np.cumsum(q), q, rng) for _ in range(20000)], minlength=5)
    assert counts[[0, 2, 4]].sum() == 0
    assert abs(counts[3] / counts.sum() - 0.75) < 0.015
    picks = [pick_weighted({5: 1.0, 9: 3.0}, rng) for _ in range(20000)]
    assert set(picks) == {5, 9}
    assert abs(np.mean(np.array(picks) == 9) - 0.75) < 0.015
