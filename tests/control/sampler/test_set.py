"""Set samplers and `draw=`: every random choice enumerated, the weights checked exactly.

A sampler is properly weighted for its target when, summing over all of its
random choices, E[exp(logw) 1{token = t}] = exp(target.logw_next(x)[t]) for
every token t. With `draw=` the choices can be enumerated, so the check is
exact, not Monte Carlo.
"""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest
from _enumerate import enumerate_runs
from _toys import ByteRegex, TablePotential, toy_llm

from genlm_lab.control import (
    AWRS,
    DirectTokenSampler,
    EagerSetSampler,
    Potential,
    SetTokenSampler,
    TopKSetSampler,
    TrieSetSampler,
    eager_token_sampler,
    topk_token_sampler,
)

PATTERN = rb"(ab|b|c)*"


def run(coro):
    return asyncio.run(coro)


async def _expected_mass(sampler, context) -> np.ndarray:
    """sum over every run of P(run) * exp(logw) per token of the target."""
    outcomes = await enumerate_runs(lambda draw: sampler.sample(context, draw=draw))
    assert sum(p for p, _ in outcomes) == pytest.approx(1.0)
    mass = np.zeros(len(sampler.target.vocab_eos))
    for prob, (token, logw, logp) in outcomes:
        assert math.isfinite(logp)
        if logw > -math.inf:
            mass[sampler.target.lookup[token]] += prob * math.exp(logw)
    return mass


def _table(vocab, seed=0):
    rng = np.random.default_rng(seed)
    rows: dict[tuple, np.ndarray] = {}

    def fn(context):
        if context not in rows:
            rows[context] = np.log(rng.uniform(0.05, 1.0, len(vocab) + 1))
        return rows[context]

    return TablePotential(vocab, fn)


def test_direct_sampler_enumerated_is_exact_with_and_without_a_proposal():
    vocab = [b"a", b"b", b"c"]
    target, proposal = _table(vocab, 1), _table(vocab, 2)
    context = [b"a"]
    exact = np.exp(run(target.logw_next(context)).weights)
    for sampler in (DirectTokenSampler(target), DirectTokenSampler(target, proposal=proposal)):
        assert np.allclose(run(_expected_mass(sampler, context)), exact)


def test_direct_sampler_proposal_is_checked():
    target = _table([b"a", b"b"])
    with pytest.raises(TypeError, match="Potential"):
        DirectTokenSampler(target, proposal=object())
    with pytest.raises(ValueError, match="different tokenizers"):
        DirectTokenSampler(target, proposal=_table([b"a", b"c"]))
    assert DirectTokenSampler(target).potential is target.to_autobatched()


def test_a_draw_that_answers_an_unknown_key_is_refused():
    sampler = DirectTokenSampler(_table([b"a", b"b"]))
    with pytest.raises(ValueError, match="not one of the keys"):
        run(sampler.sample([], draw=lambda chart: b"zz"))


@pytest.mark.parametrize("K", [None, 1, 2])
def test_set_samplers_enumerated_are_exact(K):
    llm = toy_llm()
    item = ByteRegex(PATTERN)
    if K is None:
        sampler = eager_token_sampler(llm, item)
    else:
        sampler = topk_token_sampler(llm, item, K)
    context = [llm.vocab[1]]
    exact = np.exp(run(sampler.target.logw_next(context)).weights)
    # the target is the LM times the regex, each token's bytes checked by brute force
    brute = np.exp(run(llm.logw_next(context)).weights)
    for i, token in enumerate(llm.vocab):
        alive = item._alive(b"b" + bytes(token))
        assert (exact[i] > 0) == (alive and brute[i] > 0)
    assert np.allclose(run(_expected_mass(sampler, context)), exact)


def test_sample_set_returns_the_targets_weights_and_a_log_probability():
    llm = toy_llm()
    sampler = EagerSetSampler(llm, ByteRegex(PATTERN), seed=0)
    weights, logp = run(sampler.sample_set([]))
    assert list(weights.decode) == list(sampler.target.vocab_eos)
    assert logp <= 0
    assert SetTokenSampler(sampler).target is sampler.target


def test_set_samplers_over_non_byte_tokens():
    """Tokens that are strings, items that are characters: the trie reads `list(token)`."""
    iters = _table(["ab", "b", "ba"], 3)
    items = _table(["a", "b"], 4)
    for set_sampler in (EagerSetSampler(iters, items), TopKSetSampler(iters, items, K=1)):
        sampler = SetTokenSampler(set_sampler)
        exact = np.exp(run(sampler.target.logw_next(["b"])).weights)
        assert np.allclose(run(_expected_mass(sampler, ["b"])), exact)


def test_trie_set_sampler_checks_token_types_and_seats():
    with pytest.raises(ValueError, match="iterable of token type"):
        TrieSetSampler(_table([0, 1]), _table(["a", "b"]))
    with pytest.raises(ValueError, match="K must be"):
        TopKSetSampler(toy_llm(), ByteRegex(PATTERN), K=0)
    with pytest.raises(ValueError, match="SetSampler"):
        SetTokenSampler(toy_llm())
    llm, item = toy_llm(), ByteRegex(PATTERN)
    wrapped = TrieSetSampler(llm, item)
    assert wrapped.iter_potential is llm.to_autobatched() and wrapped.item_potential is item
    assert TrieSetSampler(llm, item, autobatch=False).iter_potential is llm


def test_awrs_refuses_a_custom_draw():
    p = _table([b"a", b"b"])
    with pytest.raises(ValueError, match="draw="):
        run(AWRS(p, _table([b"a", b"b"])).sample([], draw=lambda chart: next(iter(chart))))


def test_alloc_logws_is_one_entry_per_token_and_eos():
    p: Potential = _table([b"a", b"b"])
    assert p.alloc_logws().tolist() == [-math.inf] * 3
    assert p.alloc_logws(default=False).tolist() == [False] * 3
