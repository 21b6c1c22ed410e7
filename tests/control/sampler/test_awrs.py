"""AWRS: properly weighted for LM * condition, checked against exact next-token weights."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest
from _toys import VOCAB, LengthCritic, RegexConstraint, TablePotential, toy_llm, within

from genlm_lab.control import AWRS, EOS


def run(coro):
    return asyncio.run(coro)


async def _exact_next(llm, condition, context):
    """Exact target weights after `context`: LM weight times the condition, per token (linear)."""
    lm = (await llm.logw_next(context)).weights
    out = {}
    for token, logw in zip(llm.vocab_eos, lm, strict=True):
        if token is EOS or token == EOS:
            ok = await condition.complete(context) == 0
        else:
            ok = await condition.prefix([*context, token]) == 0
        out[token] = math.exp(logw) if ok else 0.0
    return out


async def _draws(sampler, context, n):
    out = []
    for _ in range(n):
        out.append(await sampler.sample_with_info(context))
    return out


def _check_properly_weighted(draws, exact):
    """Mean weight and per-token weighted frequency within 3 SE of the exact values."""
    w = np.exp([d[1] for d in draws])
    assert np.all(np.isfinite(w))
    assert within(w, sum(exact.values())), (w.mean(), sum(exact.values()))
    total = sum(exact.values())
    for token, value in exact.items():
        hits = np.array([wi if d[0] == token else 0.0 for d, wi in zip(draws, w, strict=True)])
        if value == 0:
            assert not hits.any(), f"token {token!r} has weight zero but was returned"
        elif value / total * len(draws) >= 20:  # rarer tokens: too few hits for an SE
            assert within(hits, value, k=3.5), (token, hits.mean(), value)


@pytest.mark.parametrize("max_accepts", [2, 4])
def test_awrs_weights_are_unbiased_for_the_allowed_mass(max_accepts):
    llm = toy_llm()
    condition = RegexConstraint(llm.vocab, rb"(ab|b)*c?")
    context = [llm.vocab[1]]  # "b": allows a, b, ab, c and EOS; forbids \xc3
    exact = run(_exact_next(llm, condition, context))
    sampler = AWRS(llm, condition, seed=0, max_accepts=max_accepts, autobatch=False)
    draws = run(_draws(sampler, context, 2000))
    _check_properly_weighted(draws, exact)
    # The same check rejects a wrong target: 10% too much mass.
    w = np.exp([d[1] for d in draws])
    assert not within(w, 1.1 * sum(exact.values()))


def test_awrs_is_exact_when_the_condition_allows_very_little_mass():
    # Allowed tokens carry ~1e-9 of the LM's mass: draws are skipped in O(1) and
    # the weight stays finite and unbiased (genlm-control #95, #102). With
    # max_accepts=2 the estimator's variance grows like log(1/mass) (a heavy
    # tail a 3-SE test cannot judge); 5 accepts make it finite.
    vocab = [b"a", b"b", b"c"]
    logits = np.array([0.0, -21.0, -22.0, -30.0])  # a, b, c, EOS
    table = TablePotential(vocab, lambda ctx: logits - np.logaddexp.reduce(logits))
    condition = RegexConstraint(vocab, rb"[bc]")
    exact = run(_exact_next(table, condition, []))
    draws = run(_draws(AWRS(table, condition, seed=1, max_accepts=5, autobatch=False), [], 1500))
    _check_properly_weighted(draws, exact)
    assert all(d[3]["awrs"]["n_checks"] <= 4 for d in draws)  # a, b, c, EOS at most
    assert max(d[3]["awrs"]["n_draws"] for d in draws) > 1e6  # skipped, not looped


def test_awrs_checks_only_drawn_tokens_and_traces_them():
    llm = toy_llm()
    condition = RegexConstraint(llm.vocab, rb"(ab|b)*c?")
    sampler = AWRS(llm, condition, seed=2)
    token, logw, _, info = run(sampler.sample_with_info([]))
    trace = info["awrs"]
    assert set(trace) == {"drawn", "accepted", "rejected", "n_draws", "n_checks", "logw"}
    assert trace["logw"] == logw
    assert trace["n_checks"] == len(trace["accepted"]) + len(trace["rejected"])
    assert trace["n_draws"] >= len(trace["drawn"]) >= 2
    assert all(isinstance(t, str) for t in trace["drawn"])
    assert not set(trace["accepted"]) & set(trace["rejected"])


def test_awrs_with_an_all_zero_proposal_terminates_with_weight_zero():
    vocab = [b"a", b"b"]
    zero = TablePotential(vocab, lambda ctx: np.full(3, -math.inf))
    condition = RegexConstraint(vocab, rb"a*")
    token, logw, _, info = run(AWRS(zero, condition, seed=0).sample_with_info([]))
    assert logw == -math.inf and token == EOS
    assert info["awrs"]["n_checks"] == 0


def test_awrs_when_the_condition_rejects_everything_terminates_with_weight_zero():
    llm = toy_llm()
    condition = RegexConstraint(llm.vocab, rb"zz")  # no token has a z; "" is a live prefix
    sampler = AWRS(llm, condition, seed=0)
    token, logw, _, info = run(sampler.sample_with_info([]))
    assert logw == -math.inf
    assert info["awrs"]["n_checks"] == len(VOCAB)  # each token (and EOS) asked once
    assert info["awrs"]["accepted"] == []


def test_awrs_never_returns_zero_weight_when_some_mass_is_allowed():
    llm = toy_llm()
    condition = RegexConstraint(llm.vocab, rb"c")  # only "c" (LM prob ~ small) is allowed
    draws = run(_draws(AWRS(llm, condition, seed=3), [], 300))
    assert all(math.isfinite(d[1]) for d in draws)
    assert {d[0] for d in draws} == {llm.vocab[3]}


def test_awrs_max_rejects_stops_with_weight_zero():
    llm = toy_llm()
    condition = RegexConstraint(llm.vocab, rb"zz")
    token, logw, _, info = run(AWRS(llm, condition, seed=0, max_rejects=2).sample_with_info([]))
    assert logw == -math.inf
    assert info["awrs"]["n_draws"] == 2


def test_awrs_improper_mode_returns_an_allowed_token_with_weight_one():
    llm = toy_llm()
    condition = RegexConstraint(llm.vocab, rb"(ab|b)*c?")
    sampler = AWRS(llm, condition, seed=0, proper_weights=False)
    for _ in range(20):
        token, logw, _ = run(sampler.sample([]))
        assert logw == 0.0 and token != llm.vocab[4]  # b"\\xc3" is the one token forbidden


def test_awrs_rejects_a_non_boolean_condition_with_one_error():
    llm = toy_llm()
    critic = LengthCritic(llm.vocab)
    with pytest.raises(ValueError, match="boolean condition"):
        run(AWRS(llm, critic, seed=0).sample([]))


def test_awrs_settings_are_checked():
    llm = toy_llm()
    condition = RegexConstraint(llm.vocab, rb"a*")
    with pytest.raises(ValueError, match="max_accepts"):
        AWRS(llm, condition, max_accepts=1)
    with pytest.raises(ValueError, match="max_rejects"):
        AWRS(llm, condition, max_rejects=0)
    with pytest.raises(ValueError, match="vocabular"):
        AWRS(llm, RegexConstraint([b"zz"], rb"a*"))  # no token in common


def test_a_condition_over_fewer_tokens_targets_the_tokens_both_have():
    llm = toy_llm()
    fewer = [t for t in llm.vocab if t != llm.vocab[0]]  # the condition never saw "a"
    condition = RegexConstraint(fewer, rb"(ab|b)*c?")
    context = [llm.vocab[1]]
    exact = run(_exact_next(llm, condition, context))
    exact[llm.vocab[0]] = 0.0  # outside the condition's vocabulary: not in the target
    sampler = AWRS(llm, condition, seed=0, autobatch=False)
    assert sampler.target.vocab == fewer
    draws = run(_draws(sampler, context, 2000))
    _check_properly_weighted(draws, exact)
    assert all(d[0] != llm.vocab[0] for d in draws)


def test_awrs_reports_each_factors_weight_of_the_token():
    llm = toy_llm()
    condition = RegexConstraint(llm.vocab, rb"(ab|b)*c?")
    sampler = AWRS(llm, condition, seed=5)
    for _ in range(10):
        token, logw, _, info = run(sampler.sample_with_info([]))
        expected = [run(llm.logw_next([]))[token], run(condition.logw_next([]))[token]]
        assert info["factors"] == pytest.approx(expected)
    dead = AWRS(llm, RegexConstraint(llm.vocab, rb"zz"), seed=0)
    assert run(dead.sample_with_info([]))[3]["factors"][1] == -math.inf


def test_awrs_weight_stays_finite_when_the_allowed_mass_underflows():
    # The allowed token has relative mass e^-740 (below the smallest normal float).
    vocab = [b"a", b"b"]
    logits = np.array([0.0, -740.0, -math.inf])
    table = TablePotential(vocab, lambda ctx: logits)
    condition = RegexConstraint(vocab, rb"b")
    token, logw, _, info = run(AWRS(table, condition, seed=0).sample_with_info([]))
    assert token == b"b" and -800 < logw < -600
    assert info["awrs"]["n_checks"] == 2


class _AllowedSet(TablePotential):
    """Boolean: the first token must be in `allowed` (then anything goes)."""

    is_boolean = True

    def __init__(self, vocab, allowed):
        super().__init__(vocab, lambda ctx: np.zeros(len(vocab) + 1))
        self.allowed = allowed

    async def prefix(self, context):
        return 0.0 if not context or context[0] in self.allowed else -math.inf

    async def complete(self, context):
        return 0.0 if context and context[0] in self.allowed else -math.inf


@pytest.mark.slow
def test_awrs_is_unbiased_over_a_large_vocabulary_with_many_rejections():
    # 400 tokens, the allowed 20 carry a few percent of the mass: hundreds of
    # distinct rejections per call, drawn from the lazily sorted order.
    rng = np.random.default_rng(0)
    vocab = [f"t{i:03d}".encode() for i in range(400)]
    logits = rng.normal(scale=2.0, size=401)
    allowed_idx = rng.choice(400, size=20, replace=False)
    logits[allowed_idx] -= 3.0
    lm = TablePotential(vocab, lambda ctx: logits)
    condition = _AllowedSet(vocab, {vocab[i] for i in allowed_idx})
    exact = run(_exact_next(lm, condition, []))
    draws = run(_draws(AWRS(lm, condition, seed=3, max_accepts=4, autobatch=False), [], 1500))
    assert np.mean([d[3]["awrs"]["n_checks"] for d in draws]) > 30
    _check_properly_weighted(draws, exact)
    improper = AWRS(lm, condition, seed=7, proper_weights=False, autobatch=False)
    counts = {}
    for token, logw, _, _ in run(_draws(improper, [], 1500)):
        assert logw == 0.0
        counts[token] = counts.get(token, 0) + 1
    total = sum(exact.values())
    for token, value in exact.items():  # an exact draw from the normalised target
        p = value / total
        if p * 1500 >= 20:
            assert abs(counts.get(token, 0) / 1500 - p) <= 3.5 * math.sqrt(p * (1 - p) / 1500)


def test_a_grammar_condition_is_asked_through_its_engine_with_the_same_answers():
    from genlm_lab.control import BoolFSA

    llm = toy_llm()
    condition = BoolFSA.from_regex("(ab|b)+c?").coerce(llm, f=b"".join)
    sampler = AWRS(llm, condition, seed=0)
    assert sampler._engine is condition.engine
    for context in ([], [llm.vocab[1]], [llm.vocab[2], llm.vocab[1]]):
        for token in [*llm.vocab, EOS]:
            expected = run(condition.score([*context, token])) == 0
            assert run(sampler._accepts(context, token)) is expected, (context, token)


# ------------------------------------------------ proposals from another source (#140)


def _tables(vocab, seed):
    """A target and a proposal over `vocab`: random next-token weights, fixed per context."""
    rng = np.random.default_rng(seed)
    rows = {}

    def table(which):
        def fn(ctx):
            if (which, ctx) not in rows:
                rows[which, ctx] = np.log(rng.uniform(0.05, 1.0, len(vocab) + 1))
            return rows[which, ctx]

        return TablePotential(vocab, fn)

    return table("target"), table("proposal")


class _Masked(RegexConstraint):
    """The same condition with a `logw_next` of its own, so AWRS may ask it for its mask."""

    async def logw_next(self, context):
        return await super().logw_next(context)


def test_awrs_with_a_proposal_draws_what_awrs_over_the_proposal_draws_reweighted_exactly():
    # Same seed, same draws: the proposal drives the rejection loop, and the weight
    # differs from AWRS's over the proposal by exactly log target(x) - log proposal(x).
    vocab = [bytes([c]) for c in b"abcdef"]
    target, proposal = _tables(vocab, seed=0)
    condition = _Masked(vocab, rb"[ace]+")
    context = [b"a"]
    p = run(target.logw_next(context)).weights
    q = run(proposal.logw_next(context)).weights
    for mask_after in (math.inf, 0):  # the loop, and the closed-form finish
        over_q = AWRS(proposal, condition, seed=11, autobatch=False)
        with_q = AWRS(target, condition, seed=11, autobatch=False, proposal=proposal)
        over_q.mask_after = with_q.mask_after = mask_after
        pairs = [
            (run(over_q.sample_with_info(context)), run(with_q.sample_with_info(context)))
            for _ in range(200)
        ]
        for (tok_q, w_q, _, info_q), (tok, w, _, info) in pairs:
            assert tok == tok_q and info["awrs"]["drawn"] == info_q["awrs"]["drawn"]
            i = vocab.index(tok) if tok in vocab else len(vocab)
            assert w == pytest.approx(w_q + p[i] - q[i], abs=1e-12)
            assert info["factors"][0] == pytest.approx(p[i])  # the target's factor, not q's
        finished = sum("summarised" in info["awrs"] for _, (_, _, _, info) in pairs)
        assert finished == (200 if mask_after == 0 else 0)


def test_awrs_with_a_proposal_is_properly_weighted_for_the_target():
    vocab = [bytes([c]) for c in b"abcdef"]
    target, proposal = _tables(vocab, seed=1)
    condition = RegexConstraint(vocab, rb"b?[ace]*")
    context = [b"c"]
    exact = run(_exact_next(target, condition, context))  # target * condition, enumerated
    sampler = AWRS(target, condition, seed=4, autobatch=False, proposal=proposal)
    draws = run(_draws(sampler, context, 3000))
    _check_properly_weighted(draws, exact)
    # Without the correction the same draws weigh proposal * condition instead: the token
    # where target and proposal differ most gets a weighted frequency far from its target.
    q = run(proposal.logw_next(context)).weights
    p = run(target.logw_next(context)).weights
    allowed = [t for t, v in exact.items() if v > 0 and t in vocab]
    y = max(allowed, key=lambda t: abs(p[vocab.index(t)] - q[vocab.index(t)]))
    i = vocab.index(y)
    assert abs(p[i] - q[i]) > 0.5
    raw = [math.exp(w - p[i] + q[i]) if t == y else 0.0 for t, w, _, _ in draws]
    assert not within(raw, exact[y], k=4.0)


def test_awrs_with_a_proposal_and_improper_weights_only_steers_the_draws():
    vocab = [b"a", b"b", b"c"]
    target, _ = _tables(vocab, seed=2)
    # the proposal puts nearly all its mass on "c": the first accepted draw is nearly always "c"
    logits = np.log([1e-6, 1e-6, 1.0, 1e-6])
    proposal = TablePotential(vocab, lambda ctx: logits)
    condition = RegexConstraint(vocab, rb"[bc]")
    sampler = AWRS(target, condition, seed=0, proper_weights=False, proposal=proposal)
    draws = run(_draws(sampler, [], 50))
    assert all(d[1] == 0.0 for d in draws)
    assert sum(d[0] == b"c" for d in draws) >= 48


def test_awrs_proposal_is_checked():
    vocab = [b"a", b"b"]
    target, _ = _tables(vocab, seed=3)
    condition = RegexConstraint(vocab, rb"a*")
    with pytest.raises(TypeError, match="proposal must be a Potential"):
        AWRS(target, condition, proposal="llm")
    with pytest.raises(ValueError, match="different tokenizers"):
        AWRS(target, condition, proposal=_tables([b"a", b"c"], seed=3)[1])
    assert "proposal=" in repr(AWRS(target, condition, proposal=_tables(vocab, seed=4)[1]))
