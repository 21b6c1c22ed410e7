"""recursive_awrs and geometric_awrs: proper weights checked against exact enumeration.

recursive_awrs is deterministic given the walk's order, so E[w 1{x = y}] is a
finite sum over the Plackett-Luce orders of the row: it must equal p(y) c(y)
exactly (c the accept set). geometric_awrs also draws geometric phantom counts,
so its check is a seeded Monte Carlo one, against the same exact values.
"""

from __future__ import annotations

import asyncio
import itertools
import math

import numpy as np
import pytest
import torch

from genlm_lab.control import geometric_awrs, recursive_awrs


def run(coro):
    return asyncio.run(coro)


def accept_set(allowed, calls=None):
    async def accept(tok):
        if calls is not None:
            calls.append(tok)
        return tok in allowed

    return accept


def plackett_luce(p):
    """(order, probability) of every without-replacement order of the tokens with p > 0."""
    live = [i for i, x in enumerate(p) if x > 0]
    for perm in itertools.permutations(live):
        prob, left = 1.0, 1.0
        for i in perm:
            prob *= p[i] / left
            left -= p[i]
        yield list(perm) + [i for i in range(len(p)) if p[i] == 0], prob


def keys_for(order):
    """A make_keys that walks `order` (the first gets the highest key)."""
    keys = np.empty(len(order))
    keys[order] = np.arange(len(order), 0, -1)
    return lambda logps: torch.as_tensor(keys)


def exact_recursive(p, allowed, max_rejects=math.inf):
    """sum over orders of P(order) w 1{x = y}, per token y, and P(weight -inf)."""
    logps = torch.log(torch.as_tensor(p, dtype=torch.float64))
    toks = list(range(len(p)))
    by_token = np.zeros(len(p))
    for order, prob in plackett_luce(p):
        tok, logw, _ = run(
            recursive_awrs(
                logps=logps,
                toks=toks,
                accept=accept_set(allowed),
                make_keys=keys_for(order),
                max_rejects=max_rejects,
            )
        )
        by_token[tok] += prob * math.exp(logw)
    return by_token


ROWS = [
    ([0.5, 0.3, 0.2], {0}),
    ([0.5, 0.3, 0.2], {1, 2}),
    ([0.1, 0.2, 0.3, 0.4], {0, 3}),
    ([0.1, 0.2, 0.3, 0.4], {1}),
    ([0.25, 0.25, 0.25, 0.25], {0, 1, 2, 3}),
    ([0.05, 0.15, 0.3, 0.2, 0.3], {2, 4}),
    ([0.6, 0.0, 0.4], {1, 2}),  # a zero-mass token: never walked, never weighted
]


@pytest.mark.parametrize("p, allowed", ROWS)
def test_recursive_awrs_is_properly_weighted_exactly(p, allowed):
    expected = np.array([x if i in allowed else 0.0 for i, x in enumerate(p)])
    np.testing.assert_allclose(exact_recursive(p, allowed), expected, atol=1e-12)


def test_recursive_awrs_normalises_an_unnormalised_row():
    p = np.array([0.5, 0.3, 0.2])
    logps = torch.log(torch.as_tensor(p)) + 3.0  # the same row, times e^3
    total = 0.0
    for order, prob in plackett_luce(list(p)):
        tok, logw, _ = run(
            recursive_awrs(
                logps=logps,
                toks=[0, 1, 2],
                accept=accept_set({1}),
                make_keys=keys_for(order),
                max_rejects=math.inf,
            )
        )
        assert tok == 1
        total += prob * math.exp(logw)
    assert total == pytest.approx(0.3)


def test_recursive_awrs_rejecting_everything_gives_minus_inf():
    calls = []
    tok, logw, logp = run(
        recursive_awrs(
            logps=torch.log(torch.tensor([0.5, 0.5, 0.0])),
            toks=["a", "b", "c"],
            accept=accept_set(set(), calls),
            make_keys=keys_for([0, 1, 2]),
            max_rejects=math.inf,
        )
    )
    assert (tok, logw) == ("b", -math.inf) and math.isnan(logp)
    assert calls == ["a", "b"]  # the zero-mass token is never asked about


def test_recursive_awrs_asks_one_token_past_the_first_accepted():
    calls = []
    tok, logw, _ = run(
        recursive_awrs(
            logps=np.log([0.5, 0.3, 0.2]),
            toks=["a", "b", "c"],
            accept=accept_set({"b"}, calls),
            make_keys=lambda lp: -np.arange(3.0),
            max_rejects=math.inf,
        )
    )
    # a rejected (T = 1), b accepted, c rejected: the weight is p(b) / Z
    assert (tok, calls) == ("b", ["a", "b", "c"])
    assert logw == pytest.approx(math.log(0.3))


def test_recursive_awrs_max_rejects_cuts_the_walk():
    walk = dict(
        logps=np.log([0.5, 0.3, 0.2]),
        toks=["a", "b", "c"],
        make_keys=lambda lp: -np.arange(3.0),
    )
    tok, logw, _ = run(recursive_awrs(**walk, accept=accept_set({"c"}), max_rejects=2))
    assert (tok, logw) == ("b", -math.inf)
    # accepted at the max_rejects-th token: the tail mass T_k / Z, no coin flip
    calls = []
    tok, logw, _ = run(recursive_awrs(**walk, accept=accept_set({"b"}, calls), max_rejects=2))
    assert tok == "b" and logw == pytest.approx(math.log(0.5)) and calls == ["a", "b"]


def test_recursive_awrs_tiny_accepted_mass_keeps_a_finite_weight():
    tok, logw, _ = run(
        recursive_awrs(
            logps=torch.tensor([0.0, -800.0], dtype=torch.float64),
            toks=[0, 1],
            accept=accept_set({1}),
            make_keys=lambda lp: torch.tensor([1.0, 0.0]),
            max_rejects=math.inf,
        )
    )
    assert tok == 1 and logw == pytest.approx(-800.0)


@pytest.mark.parametrize("p, allowed", ROWS[:4])
def test_geometric_awrs_is_properly_weighted(p, allowed):
    rng = np.random.default_rng(0)
    logps = torch.log(torch.as_tensor(p, dtype=torch.float64))

    def make_keys(lp):
        u = torch.as_tensor(rng.random(len(lp)), dtype=lp.dtype)
        return lp - torch.log(-torch.log(u))

    n = 4000
    toks = list(range(len(p)))

    async def draws():
        return [
            await geometric_awrs(
                logps=logps,
                toks=toks,
                accept=accept_set(allowed),
                make_keys=make_keys,
                rng=rng,
                max_rejects=math.inf,
                max_accepts=3,
            )
            for _ in range(n)
        ]

    sums = np.zeros(len(p))
    sq = np.zeros(len(p))
    for tok, logw, _ in run(draws()):
        w = math.exp(logw)
        sums[tok] += w
        sq[tok] += w * w
    mean = sums / n
    se = np.sqrt(np.maximum(sq / n - mean**2, 1e-12) / n)
    expected = np.array([x if i in allowed else 0.0 for i, x in enumerate(p)])
    assert np.all(np.abs(mean - expected) <= 4 * se + 1e-9), (mean, expected, se)
    assert float(logps.max()) == pytest.approx(math.log(max(p)))  # the caller's row is untouched


def test_geometric_awrs_all_rejected_and_argument_checks():
    rng = np.random.default_rng(1)
    tok, logw, _ = run(
        geometric_awrs(
            logps=np.log([0.5, 0.5]),
            toks=["a", "b"],
            accept=accept_set(set()),
            make_keys=lambda lp: -np.arange(2.0),
            rng=rng,
            max_rejects=math.inf,
            max_accepts=2,
        )
    )
    assert (tok, logw) == ("a", -math.inf)
    with pytest.raises(ValueError, match="max_accepts"):
        run(
            geometric_awrs(
                logps=np.zeros(1),
                toks=["a"],
                accept=accept_set({"a"}),
                make_keys=lambda lp: lp,
                rng=rng,
                max_rejects=3,
                max_accepts=1,
            )
        )
