"""LMContext and token masks against the LM's own distribution, computed independently."""

import copy
import math

import numpy as np
import pytest
from scipy import stats

from genlm_lab.backend import ToyLM
from genlm_lab.smc import LMContext, Model, as_mask, smc_standard, token_masks
from genlm_lab.smc.rng import using_rng

VOCAB = [b"a", b"b", b"ab", b" c", b"e", b"E!", b"\n", b".", b"<eos>"]


def toy(temp_logits=None):
    def logits(ctx):
        base = np.linspace(-1.0, 1.0, len(VOCAB))
        return np.roll(base, len(ctx)) if temp_logits is None else temp_logits

    return ToyLM(VOCAB, logprobs_fn=logits, eos=b"<eos>")


def softmax(x):
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - x.max())
    return e / e.sum()


async def test_next_token_logprobs_are_the_lm_at_temperature():
    lm = toy()
    ctx = LMContext(lm, "ab", temp=0.7)
    await ctx.ensure_logprobs()
    raw = lm.next_token_logprobs_sync(ctx.tokens).double().numpy()
    assert np.exp(ctx.next_token_logprobs) == pytest.approx(softmax(raw / 0.7))


@pytest.mark.parametrize("outcome", [True, False])
async def test_mask_dist_is_the_masked_renormalised_distribution(outcome):
    lm = toy()
    ctx = LMContext(lm, "a")
    await ctx.ensure_logprobs()
    p = np.exp(ctx.next_token_logprobs)
    mask = {0, 2, 4, 8}
    inside = np.isin(np.arange(len(VOCAB)), sorted(mask))
    keep = inside if outcome else ~inside
    log_p = await ctx.mask_dist(mask).log_prob(outcome)
    assert math.exp(log_p) == pytest.approx(p[keep].sum())
    want = np.where(keep, p, 0) / p[keep].sum()
    assert np.exp(ctx.next_token_logprobs) == pytest.approx(want)
    # A second mask narrows further: the product of the two events' probabilities
    # is the probability of the intersection.
    second = as_mask([0, 1, 3], len(VOCAB))
    log_q = await ctx.mask_dist(second).log_prob(True)
    both = keep & second
    assert math.exp(log_p + log_q) == pytest.approx(p[both].sum())
    assert np.exp(ctx.next_token_logprobs) == pytest.approx(np.where(both, p, 0) / p[both].sum())


async def test_sampling_a_mask_then_a_token_follows_the_lm():
    """mask_dist then next_token, both sampled, draw tokens with the LM's own frequencies."""
    lm = toy()
    ctx0 = LMContext(lm, "a")
    await ctx0.ensure_logprobs()
    p = np.exp(ctx0.next_token_logprobs)
    p /= p.sum()  # exact normalisation for the chi-square test
    mask = as_mask([1, 2, 5], len(VOCAB))
    counts = np.zeros(len(VOCAB))
    with using_rng(np.random.default_rng(0)):
        for _ in range(3000):
            ctx = copy.deepcopy(ctx0)
            value, log_v = await ctx.mask_dist(mask).sample()
            assert math.exp(log_v) == pytest.approx(p[mask].sum() if value else p[~mask].sum())
            token, log_t = await ctx.next_token().sample()
            assert bool(mask[token.token_id]) == value
            counts[token.token_id] += 1
    assert stats.chisquare(counts, p * counts.sum()).pvalue > 1e-3


async def test_observing_a_token_appends_it_and_returns_its_log_prob():
    lm = toy()
    ctx = LMContext(lm, "a")
    raw = lm.next_token_logprobs_sync(ctx.tokens).double().numpy()
    want = math.log(softmax(raw)[3])
    assert await ctx.next_token().log_prob(lm.byte_vocab[3]) == pytest.approx(want, abs=1e-6)
    assert ctx.tokens[-1] == 3 and ctx.token_count == 1 and str(ctx) == " c"


@pytest.mark.parametrize("bad", [b"5", "5", 2.0, None, True, 99, -1])
async def test_observing_a_non_token_leaves_the_context_as_it_was(bad):
    ctx = LMContext(toy(), "a")
    before = list(ctx.tokens)
    with pytest.raises(ValueError, match="token"):
        await ctx.next_token().log_prob(bad)
    assert ctx.tokens == before


async def test_copies_advance_independently_and_share_the_lm():
    ctx = LMContext(toy(), "a")
    await ctx.next_token().log_prob(1)
    clone = copy.deepcopy(ctx)
    await clone.next_token().log_prob(2)
    assert clone.lm is ctx.lm
    assert ctx.generated_ids == [1] and clone.generated_ids == [1, 2]


async def test_a_mask_without_mass_gives_minus_inf_not_nan():
    lm = toy(temp_logits=[0.0] * 8 + [-math.inf])
    ctx = LMContext(lm, "a")
    assert await ctx.mask_dist({8}).log_prob(True) == -math.inf
    token, log_p = await ctx.next_token().sample()
    assert log_p == -math.inf and 0 <= token.token_id < len(VOCAB)


def test_token_masks_match_brute_force_over_the_vocabulary():
    lm = toy()
    m = token_masks(lm)
    assert token_masks(lm) is m
    ids = range(len(VOCAB))
    assert set(np.flatnonzero(m.EOS)) == {8}
    assert set(np.flatnonzero(m.without_bytes("eE", keep_special=False))) == {
        i for i in ids if i != 8 and b"e" not in VOCAB[i] and b"E" not in VOCAB[i]
    }
    assert set(np.flatnonzero(m.CONTAINS_WHITESPACE)) == {3, 6}
    assert set(np.flatnonzero(m.END_PUNCTUATION)) == {7}
    assert set(np.flatnonzero(m.token_length_mask(min=2, max=2))) == {2, 3, 5}
    assert m.token_lengths[8] == 0
    with pytest.raises(ValueError, match="outside the vocabulary"):
        as_mask([99], len(VOCAB))


class NoE(Model):
    def __init__(self, lm, n):
        super().__init__()
        self.ctx = LMContext(lm, "a")
        self.mask = token_masks(lm).without_bytes("eE", keep_special=False)
        self.n = n

    async def step(self):
        await self.observe(self.ctx.mask_dist(self.mask), True)
        await self.sample(self.ctx.next_token())
        if self.ctx.token_count == self.n:
            self.finish()

    def __str__(self):
        return str(self.ctx)


def _p_no_e(lm, ctx, left):
    """P(the next `left` tokens avoid e/E and EOS), by enumeration."""
    if left == 0:
        return 1.0
    bad = [b"e" in v or b"E" in v or v == b"<eos>" for v in VOCAB]
    p = np.exp(lm.next_token_logprobs_sync(ctx).double().numpy())
    return sum(p[t] * _p_no_e(lm, ctx + [t], left - 1) for t in range(len(VOCAB)) if not bad[t])


async def test_path_independent_mask_probability_gives_every_particle_log_z():
    """The toy LM's distribution depends only on the position, so observing the mask
    is the exact proposal: every particle's weight is log P(no e in n tokens)."""
    lm = toy()
    z = _p_no_e(lm, lm.tokenizer.encode("a"), 3)
    result = await smc_standard(NoE(lm, 3), 20, seed=0)
    assert all("e" not in str(p) and "E" not in str(p) for p in result)
    assert result.log_weights == pytest.approx(np.full(20, math.log(z)), rel=1e-6)


async def test_masked_smc_evidence_is_unbiased_for_a_context_dependent_lm():
    lm = ToyLM(VOCAB, seed=3, eos=b"<eos>")
    z = _p_no_e(lm, lm.tokenizer.encode("a"), 3)
    estimates = []
    for seed in range(25):
        result = await smc_standard(NoE(lm, 3), 30, seed=seed)
        assert all("e" not in str(p) and "E" not in str(p) for p in result)
        estimates.append(math.exp(result.log_ml))
    se = np.std(estimates, ddof=1) / math.sqrt(len(estimates))
    assert se > 0
    assert abs(np.mean(estimates) - z) <= 4 * se


async def _ended_context():
    ctx = LMContext(toy(), "a")
    await ctx.next_token().log_prob(1)
    await ctx.next_token().log_prob(8)  # EOS
    assert ctx.ended and ctx.token_count == 2
    return ctx


@pytest.mark.parametrize(
    "draw",
    [
        lambda ctx: ctx.next_token().sample(),
        lambda ctx: ctx.next_token().log_prob(0),
        lambda ctx: ctx.mask_dist({0, 1}).sample(),
        lambda ctx: ctx.mask_dist({0, 1}).log_prob(True),
    ],
    ids=["sample", "observe", "mask-sample", "mask-observe"],
)
async def test_nothing_follows_eos_one_clear_error_and_the_context_is_unchanged(draw):
    ctx = await _ended_context()
    before = list(ctx.tokens)
    with pytest.raises(RuntimeError, match=r"ended with EOS.*2 tokens"):
        await draw(ctx)
    assert ctx.tokens == before and ctx.ended and ctx._mask is None


class NoFinishAtEos(Model):
    """Forgets to finish when the text ends: its next step would draw past EOS."""

    def __init__(self, lm):
        super().__init__()
        self.ctx = LMContext(lm, "a")

    async def step(self):
        await self.sample(self.ctx.next_token())
        if self.ctx.token_count == 4:
            self.finish()


async def test_a_model_that_steps_past_eos_gets_the_error_from_smc():
    lm = toy(temp_logits=[-math.inf] * 8 + [0.0])  # EOS at once, every time
    with pytest.raises(RuntimeError, match="ended with EOS"):
        await smc_standard(NoFinishAtEos(lm), 3, seed=0)


async def test_a_mask_of_tiny_but_positive_probability_is_not_read_as_zero():
    # exp(log-prob - max) underflows in float32 below about -103 nats: such a
    # mask had mass 0 and killed the particle although its probability is > 0.
    logits = [0.0, -150.0, -151.0, 0.0, 0.0, 0.0, 0.0, 0.0, -math.inf]
    lm = toy(temp_logits=logits)
    ctx = LMContext(lm, "a")
    raw = lm.next_token_logprobs_sync(ctx.tokens).double().numpy()
    inside = raw[[1, 2]]
    want = np.logaddexp.reduce(inside) - np.logaddexp.reduce(raw[np.isfinite(raw)])
    assert await ctx.mask_dist({1, 2}).log_prob(True) == pytest.approx(want, rel=1e-6)
    p1 = math.exp(inside[0] - np.logaddexp.reduce(inside))
    assert np.exp(ctx.next_token_logprobs[[1, 2]]) == pytest.approx([p1, 1 - p1], rel=1e-5)
    counts = {1: 0, 2: 0}
    with using_rng(np.random.default_rng(0)):
        for _ in range(400):
            clone = copy.deepcopy(ctx)
            token, log_p = await clone.next_token().sample()
            assert log_p == pytest.approx(ctx.next_token_logprobs[token.token_id])
            counts[token.token_id] += 1
    assert counts[1] / 400 == pytest.approx(p1, abs=0.08)


async def test_shared_masks_cannot_be_changed_in_place():
    # token_masks(lm) is cached per LM and a context's mask is shared by its copies
    # (and may be a model's shared mask): `m.ALL_TOKENS[eos] = False` changed every
    # later model's ALL_TOKENS, and editing `ctx.model_mask` every particle's mask.
    lm = toy()
    m = token_masks(lm)
    for name in ("ALL_TOKENS", "EOS", "SPECIAL", "PUNCTUATION", "token_lengths"):
        with pytest.raises(ValueError, match="read-only"):
            getattr(m, name)[0] = 0
    mine = m.ALL_TOKENS & ~m.EOS  # derived masks are the caller's own
    mine[0] = False
    ctx = LMContext(lm, "a")
    await ctx.mask_dist(mine).log_prob(True)
    clone = copy.deepcopy(ctx)
    with pytest.raises(ValueError, match="read-only"):
        ctx.model_mask[1] = False
    assert mine.flags.writeable and mine[1] and clone.model_mask[1]
