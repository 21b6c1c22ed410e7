"""Tempered against its definition (beta times the inner weights, by enumeration) and SMC
over `lm * Tempered(c, beta)` against the exact tempered posterior."""

from __future__ import annotations

import asyncio
import itertools
import math

import numpy as np
import pytest
from _toys import RegexConstraint, toy_llm

from genlm_lab.control import EOS, SMC, Power, Tempered, direct_token_sampler


def run(coro):
    return asyncio.run(coro)


def _contexts(vocab, longest):
    """Every token sequence over `vocab` of at most `longest` tokens."""
    return [list(c) for n in range(longest + 1) for c in itertools.product(vocab, repeat=n)]


def _scaled(beta, w):
    """beta * w with weight zero (-inf) kept, computed here rather than by the potential."""
    return np.array([-math.inf if x == -math.inf else beta * x for x in np.ravel(w)])


@pytest.mark.parametrize("beta", [0.5, 2.0, 0.0])
def test_every_weight_is_the_inner_weight_times_beta_by_enumeration(beta):
    llm = toy_llm()
    inner = llm * RegexConstraint(llm.vocab, rb"(ab|b|c)*")  # zeros as well as finite weights
    hot = Tempered(inner, beta)
    contexts = _contexts(llm.vocab, 2)
    live, zeros = [], 0
    for c in contexts:
        assert run(hot.prefix(c)) == pytest.approx(_scaled(beta, run(inner.prefix(c)))[0])
        assert run(hot.complete(c)) == pytest.approx(_scaled(beta, run(inner.complete(c)))[0])
        if run(inner.prefix(c)) == -math.inf:  # nothing follows a dead prefix: no row
            continue
        row = run(inner.logw_next(c)).weights
        np.testing.assert_allclose(run(hot.logw_next(c)).weights, _scaled(beta, row))
        live.append(c)
        zeros += int(np.isinf(row).any())
    assert len(contexts) == 31 and 5 <= len(live) < 31 and zeros > 0  # 1 + 5 + 25
    np.testing.assert_allclose(
        run(hot.batch_complete(contexts)),
        _scaled(beta, [run(inner.complete(c)) for c in contexts]),
    )
    np.testing.assert_allclose(
        run(hot.batch_prefix(contexts)), _scaled(beta, [run(inner.prefix(c)) for c in contexts])
    )
    rows = run(hot.batch_logw_next(live[:5]))
    want = np.array([_scaled(beta, run(inner.logw_next(c)).weights) for c in live[:5]])
    np.testing.assert_allclose(np.asarray(rows.weights), want)


def test_power_operator_is_tempered_with_genlm_controls_attribute_names():
    llm = toy_llm()
    hot = llm**0.25
    assert type(hot) is Tempered and isinstance(hot, Power)
    assert hot.p is llm and hot.beta == 0.25 and hot.temperature == 4.0
    assert type(hot.spawn()) is Tempered and hot.spawn().beta == 0.25
    assert Tempered(llm, 0).temperature == math.inf
    with pytest.raises(ValueError, match="Tempered needs a Potential"):
        Tempered("not a potential", 2.0)
    with pytest.raises(ValueError, match="exponent must be a finite number"):
        Tempered(llm, math.nan)


def test_smc_over_lm_times_tempered_critic_matches_the_exact_tempered_posterior():
    llm, other, beta, max_tokens = toy_llm(seed=3), toy_llm(seed=11), 3.0, 3
    # the exact target: lm(x) * other(x) ** beta for every x of <= max_tokens - 1 tokens
    exact, untempered = {}, {}
    for c in _contexts(llm.vocab, max_tokens - 1):
        a, b = run(llm.complete(c)), run(other.complete(c))
        exact[(*c, EOS)] = math.exp(a + beta * b)
        untempered[(*c, EOS)] = math.exp(a + b)
    z = sum(exact.values())
    post = {k: v / z for k, v in exact.items()}
    flat = {k: v / sum(untempered.values()) for k, v in untempered.items()}

    def tv(p, q):
        return 0.5 * sum(abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in set(p) | set(q))

    assert tv(post, flat) > 0.1  # the tolerance below would notice a missing temperature
    seqs = run(
        SMC(direct_token_sampler(llm * Tempered(other, beta)), record_factors=False)(
            1000, 0.5, max_tokens, seed=2
        )
    )
    assert tv(dict(seqs.posterior), post) < 0.05
    assert abs(seqs.log_ml - math.log(z)) < 0.1
