"""Token samplers: the product's next-token weights and direct sampling, against brute force."""

from __future__ import annotations

import asyncio
import itertools
import math
import random

import numpy as np
import pytest
import regex
from _toys import ByteRegex, RegexConstraint, TablePotential, text_of, toy_llm, within

from genlm_lab.control import (
    EOS,
    DirectTokenSampler,
    TokenSampler,
    direct_token_sampler,
    eager_token_sampler,
    topk_token_sampler,
)

PATTERN = rb"(ab|b|c)*"


def run(coro):
    return asyncio.run(coro)


async def _brute_next(llm, pattern: bytes, context) -> dict:
    """Normalised LM * regex next-token distribution, from the LM's raw log-probs and `regex`."""
    compiled = regex.compile(pattern)
    ids = llm.prompt_ids + llm.token_ids(context)
    logps = (await llm.model.next_token_logprobs(ids)).double().numpy()
    text = text_of(context)
    weights = {}
    for token_id, token in enumerate(llm.model.byte_vocab):
        if token_id in llm._eos_token_ids:
            continue
        alive = compiled.fullmatch(text + bytes(token), partial=True) is not None
        weights[token_id] = math.exp(logps[token_id]) if alive else 0.0
    eos_mass = sum(math.exp(logps[i]) for i in llm._eos_token_ids)
    weights["EOS"] = eos_mass if compiled.fullmatch(text) is not None else 0.0
    total = sum(weights.values())
    return {k: v / total for k, v in weights.items()}


def _random_live_contexts(llm, pattern, n, seed=0):
    compiled = regex.compile(pattern)
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        context = []
        for _ in range(rng.randrange(0, 4)):
            token = rng.choice(llm.vocab)
            if compiled.fullmatch(text_of([*context, token]), partial=True) is None:
                break
            context.append(token)
        out.append(context)
    return out


def test_normalised_product_equals_brute_force():
    llm = toy_llm()
    target = llm * RegexConstraint(llm.vocab, PATTERN)
    contexts = _random_live_contexts(llm, PATTERN, 12)
    assert len(contexts) == 12
    for context in contexts:
        weights = run(target.logw_next(context)).normalize().exp()
        brute = run(_brute_next(llm, PATTERN, context))
        for token, p in zip(target.vocab_eos, weights.weights, strict=True):
            key = "EOS" if token == EOS else token.token_id
            assert p == pytest.approx(brute[key], abs=1e-6), (context, token)


def test_direct_sampler_weight_is_the_exact_mass_and_draws_follow_the_distribution():
    llm = toy_llm()
    target = llm * RegexConstraint(llm.vocab, PATTERN)
    context = [llm.vocab[1]]
    logws = run(target.logw_next(context))
    exact_z = math.exp(logws.sum())
    probs = np.exp(logws.weights - logws.sum())
    sampler = DirectTokenSampler(target, seed=0, autobatch=False)
    n = 2000

    async def draws():
        return [await sampler.sample(context) for _ in range(n)]

    out = run(draws())
    assert all(math.exp(w) == pytest.approx(exact_z, rel=1e-12) for _, w, _ in out)
    counts = np.array([sum(t == token for t, _, _ in out) for token in target.vocab_eos])
    se = np.sqrt(probs * (1 - probs) / n)
    assert np.all(np.abs(counts / n - probs) <= 3.5 * se + 1e-12), (counts / n, probs)
    wrong = np.roll(probs, 1)  # the same check fails for another distribution
    assert not np.all(np.abs(counts / n - wrong) <= 3.5 * np.sqrt(wrong * (1 - wrong) / n))
    for token, _, logp in out[:50]:
        assert logp == pytest.approx(math.log(probs[target.lookup[token]]))


def test_direct_sampler_with_no_mass_returns_eos_with_weight_zero():
    vocab = [b"a", b"b"]
    zero = TablePotential(vocab, lambda ctx: np.full(3, -math.inf))
    token, logw, logp = run(direct_token_sampler(zero, seed=0).sample([]))
    assert token == EOS and logw == -math.inf and not math.isnan(logp)


def test_direct_sampler_names_a_nan_weight():
    vocab = [b"a", b"b"]
    bad = TablePotential(vocab, lambda ctx: np.array([0.0, math.nan, 0.0]))
    with pytest.raises(ValueError, match="TablePotential.logw_next gave log-weight nan"):
        run(DirectTokenSampler(bad, seed=0).sample([]))


def test_sampler_base_weights_and_info():
    llm = toy_llm()
    target = llm * RegexConstraint(llm.vocab, PATTERN)
    sampler = direct_token_sampler(target, seed=1)
    assert run(sampler.start_weight()) == run(target.prefix([]))
    context = [llm.vocab[1]]
    assert run(sampler.logw_eos(context)) == pytest.approx(run(target.logw_next(context))[EOS])
    token, logw, logp, info = run(sampler.sample_with_info(context))
    assert set(info) == {"factors"} and math.isfinite(logw)
    with pytest.raises(ValueError, match="Potential"):
        direct_token_sampler("not a potential")

    class Fixed(TokenSampler):
        async def sample(self, context):
            return EOS, 0.0, 0.0

    assert run(Fixed(target).sample_with_info([])) == (EOS, 0.0, 0.0, {})


def test_sample_and_sample_with_info_each_default_to_the_other():
    llm = toy_llm()
    target = llm * RegexConstraint(llm.vocab, PATTERN)
    drawn = []

    class WithInfo(TokenSampler):
        async def sample_with_info(self, context, draw=None):
            token = draw(None) if draw is not None else EOS
            drawn.append(token)
            return token, 1.0, -0.5, {"note": 1}

    class WithoutDraw(TokenSampler):
        async def sample_with_info(self, context):
            return EOS, 0.0, 0.0, {}

    assert run(WithInfo(target).sample([])) == (EOS, 1.0, -0.5)
    token = llm.vocab[1]
    assert run(WithInfo(target).sample([], draw=lambda _: token)) == (token, 1.0, -0.5)
    assert drawn == [EOS, token]
    assert run(WithoutDraw(target).sample([])) == (EOS, 0.0, 0.0)
    with pytest.raises(ValueError, match="WithoutDraw.sample_with_info.. takes no draw="):
        run(WithoutDraw(target).sample([], draw=lambda _: token))
    for method in ("sample", "sample_with_info"):
        with pytest.raises(NotImplementedError, match="defines neither"):
            run(getattr(TokenSampler(target), method)([]))


def test_sampler_smc_shortcut_runs_smc():
    llm = toy_llm()
    sampler = direct_token_sampler(llm * RegexConstraint(llm.vocab, PATTERN))
    seqs = run(sampler.smc(4, 0.5, 3, seed=0))
    assert len(seqs) == 4 and all(c[-1] == EOS for c in seqs.contexts)


def test_concurrent_draws_with_one_bad_context_fail_only_that_call():
    # Particles' calls go out as one batch (AutoBatched); a context outside the
    # vocabulary fails its own call, the others get their draws.
    llm = toy_llm()
    sampler = direct_token_sampler(llm * RegexConstraint(llm.vocab, PATTERN), seed=0)

    async def both():
        return await asyncio.gather(
            sampler.sample([llm.vocab[1]]), sampler.sample([b"zz"]), return_exceptions=True
        )

    good, bad = run(both())
    assert isinstance(bad, ValueError) and "not in the vocabulary" in str(bad)
    assert math.isfinite(good[1])


@pytest.mark.parametrize("kind", ["eager", "topk1", "topk2", "topk_all"])
def test_set_samplers_are_properly_weighted(kind):
    llm = toy_llm()
    item = ByteRegex(PATTERN)
    if kind == "eager":
        sampler = eager_token_sampler(llm, item, seed=0)
    else:
        k = {"topk1": 1, "topk2": 2, "topk_all": None}[kind]
        sampler = topk_token_sampler(llm, item, k, seed=0)
    context = [llm.vocab[1]]
    exact = np.exp(run(sampler.target.logw_next(context)).weights)
    reference = llm * RegexConstraint(llm.vocab, PATTERN)  # the coerced target is the same
    assert np.allclose(exact, np.exp(run(reference.logw_next(context)).weights))
    n = 1500

    async def draws():
        return [await sampler.sample(context) for _ in range(n)]

    out = run(draws())
    w = np.exp([x[1] for x in out])
    assert np.all(np.isfinite(w))
    assert within(w, exact.sum()), (w.mean(), exact.sum())
    assert not within(w, 1.2 * exact.sum())  # the same check rejects 20% too much mass
    for i, token in enumerate(sampler.target.vocab_eos):
        hits = np.array([wi if x[0] == token else 0.0 for x, wi in zip(out, w, strict=True)])
        if exact[i] == 0:
            assert not hits.any()
        elif (hits > 0).sum() >= 20:  # rarer ones (top-K's wildcards): too few hits for an SE
            assert within(hits, exact[i], k=3.5), (token, hits.mean(), exact[i])


def test_topk_enumerates_the_heaviest_tokens_exactly():
    llm = toy_llm()
    sampler = topk_token_sampler(llm, ByteRegex(PATTERN), 2, seed=0)
    context = [llm.vocab[1]]
    exact = run(sampler.target.logw_next(context)).weights
    best = run(sampler.set_sampler._best_first(context, run(llm.logw_next(context)).weights))
    order = np.argsort(-exact, kind="stable")[:2]
    assert [t for t, _ in best] == order.tolist()
    assert np.allclose([v for _, v in best], exact[order])
    with pytest.raises(ValueError, match="K must be"):
        topk_token_sampler(llm, ByteRegex(PATTERN), 0)


def test_direct_sampler_reports_each_factors_weight_of_the_token():
    llm = toy_llm()
    condition = RegexConstraint(llm.vocab, PATTERN)
    sampler = direct_token_sampler(llm * condition, seed=4)
    context = [llm.vocab[1]]
    for _ in range(10):
        token, logw, _, info = run(sampler.sample_with_info(context))
        expected = [run(f.logw_next(context))[token] for f in (llm, condition)]
        assert info["factors"] == pytest.approx(expected)
    zero = TablePotential([b"a"], lambda ctx: np.full(2, -math.inf))
    assert run(direct_token_sampler(zero).sample_with_info([]))[3] == {"no_mass": True}


def test_smc_with_a_proposal_from_another_source_is_exact_over_every_run():
    # One particle, every draw enumerated: E[w 1{s}] is the target's complete(s) for
    # every sequence s, so the weighted law is the exact target and E[w] its normaliser.
    from _enumerate import enumerate_smc

    vocab = [b"a", b"b"]
    rng = np.random.default_rng(0)
    rows = {}

    def table(which):
        def fn(ctx):
            if (which, ctx) not in rows:
                rows[which, ctx] = np.log(rng.uniform(0.05, 1.0, 3))
            return rows[which, ctx]

        return TablePotential(vocab, fn)

    target, proposal = table("target"), table("proposal")
    max_tokens = 4
    mass = run(enumerate_smc(DirectTokenSampler(target, proposal=proposal), max_tokens))
    exact = {}
    for n in range(max_tokens):
        for seq in itertools.product(vocab, repeat=n):
            exact[(*seq, EOS)] = math.exp(run(target.complete(list(seq))))
    assert set(mass) == set(exact)
    for seq, value in exact.items():
        assert mass[seq] == pytest.approx(value, rel=1e-9), seq
    assert sum(mass.values()) == pytest.approx(sum(exact.values()), rel=1e-9)
    # the proposal's own law is different: without the correction the mass is wrong
    wrong = run(enumerate_smc(DirectTokenSampler(proposal), max_tokens))
    assert sum(wrong.values()) != pytest.approx(sum(exact.values()), rel=1e-3)
