"""ByteLMContext on a toy LM: byte probabilities summed over tokenizations, regex models."""

import copy
import math

import numpy as np
import pytest

from genlm_lab.backend import ToyLM
from genlm_lab.bytes import BeamParams
from genlm_lab.smc import ByteLMContext, byte_mask, smc_standard
from genlm_lab.smc.examples import RegexBytes

VOCAB = [b"1", b"2", b"12", b"-", b"a", b"ab", b"b", b"2-", b"<eos>"]
EOS_ID = VOCAB.index(b"<eos>")
PATTERN = rb"[12]{2}-(ab|b)"
LANGUAGE = [x + y + b"-" + z for x in (b"1", b"2") for y in (b"1", b"2") for z in (b"ab", b"b")]


def toy_lm():
    return ToyLM(VOCAB, seed=5, eos=b"<eos>")


def p_bytes_then_eos(lm, text, context=()):
    """P(the LM writes exactly `text` then EOS), summed over every tokenization."""
    p = np.exp(lm.next_token_logprobs_sync(list(context)).double().numpy())
    if not text:
        return p[EOS_ID]
    return sum(
        p[t] * p_bytes_then_eos(lm, text[len(v) :], (*context, t))
        for t, v in enumerate(VOCAB)
        if t != EOS_ID and text.startswith(v)
    )


async def make_context(lm, k=16):
    return await ByteLMContext.create(lm, b"", BeamParams(K=k, eos_byte_strings=[b"<eos>"]))


async def test_observing_bytes_gives_the_probability_summed_over_tokenizations():
    lm = toy_lm()
    for text in (b"12-ab", b"21-b", b"2-b"):
        ctx = await make_context(lm)
        total = 0.0
        for b in text:
            total += await ctx.next_byte().log_prob(b)
        total += await ctx.next_byte().log_prob(ByteLMContext.EOS)
        assert math.exp(total) == pytest.approx(p_bytes_then_eos(lm, text), rel=1e-5)
        assert str(ctx) == text.decode() and ctx.ended


async def test_expecting_the_observed_bytes_changes_no_weight():
    lm = toy_lm()
    totals = {}
    for told in (False, True):
        ctx = await make_context(lm, k=3)
        if told:
            ctx.expect(b"12-ab")
        totals[told] = [await ctx.next_byte().log_prob(b) for b in b"12-ab"]
        totals[told].append(await ctx.next_byte().log_prob(ByteLMContext.EOS))
        if told:
            assert ctx.beam.lookahead_stats.used > 0  # later bytes found rows evaluated ahead
    np.testing.assert_allclose(totals[True], totals[False], rtol=0, atol=1e-12)


async def test_byte_mask_is_the_masked_renormalised_next_byte_distribution():
    ctx = await make_context(toy_lm())
    await ctx.ensure_logprobs()
    p = np.exp(ctx.next_byte_logprobs)
    allowed = byte_mask(b"2-")
    log_p = await ctx.mask_dist(b"2-").log_prob(True)
    assert math.exp(log_p) == pytest.approx(p[allowed].sum())
    assert np.exp(ctx.next_byte_logprobs) == pytest.approx(
        np.where(allowed, p, 0) / p[allowed].sum()
    )
    with pytest.raises(ValueError, match="outside 0..255"):
        byte_mask([256])


@pytest.mark.parametrize(
    "bad", ["2-", 7, None, [b"2"], ["7"], [97.0], [True, False], np.ones(3, dtype=bool)]
)
def test_byte_mask_refuses_non_byte_values_with_one_value_error(bad):
    with pytest.raises(ValueError, match="byte"):
        byte_mask(bad)


def test_a_list_of_258_bools_is_a_mask_over_slots_not_the_bytes_0_and_1():
    # int(True) == 1: bools read as byte values made any bool list the mask {0, 1}.
    flags = [False] * 258
    flags[ord("2")] = flags[257] = True
    np.testing.assert_array_equal(byte_mask(flags), byte_mask([ord("2"), 257]))


@pytest.mark.parametrize("bad", [b"2", "2", None, 256, -1, True, np.True_, 50.0])
async def test_observing_a_non_byte_leaves_the_context_as_it_was(bad):
    ctx = await make_context(toy_lm())
    await ctx.ensure_logprobs()
    before = ctx.next_byte_logprobs.copy()
    with pytest.raises(ValueError, match="byte"):
        await ctx.next_byte().log_prob(bad)
    assert not ctx.generated and not ctx.ended and not ctx.dead
    np.testing.assert_array_equal(ctx.next_byte_logprobs, before)


async def test_regex_model_outputs_match_and_evidence_is_exact_on_average():
    lm = toy_lm()
    z = sum(p_bytes_then_eos(lm, s) for s in LANGUAGE)
    estimates = []
    for seed in range(12):
        result = await smc_standard(RegexBytes(await make_context(lm), PATTERN), 12, seed=seed)
        for particle, w in zip(result, result.normalized_weights, strict=True):
            if w > 0:
                assert particle.matches() and particle.context.ended
                assert bytes(particle.context.generated) in LANGUAGE
        estimates.append(math.exp(result.log_ml))
    se = np.std(estimates, ddof=1) / math.sqrt(len(estimates))
    assert abs(np.mean(estimates) - z) <= 4 * se + 1e-12 * z


@pytest.mark.parametrize(
    "draw",
    [
        lambda ctx: ctx.next_byte().sample(),
        lambda ctx: ctx.next_byte().log_prob(ord("1")),
        lambda ctx: ctx.mask_dist(b"12").sample(),
        lambda ctx: ctx.mask_dist(b"12").log_prob(True),
    ],
    ids=["sample", "observe", "mask-sample", "mask-observe"],
)
async def test_nothing_follows_eos_one_clear_error_and_the_context_is_unchanged(draw):
    ctx = await make_context(toy_lm())
    for b in (ord("1"), ord("2"), ByteLMContext.EOS):
        await ctx.next_byte().log_prob(b)
    assert ctx.ended
    with pytest.raises(RuntimeError, match=r"ended with EOS.*2 bytes"):
        await draw(ctx)
    assert bytes(ctx.generated) == b"12" and ctx.ended and not ctx.dead


async def test_next_byte_logprobs_shared_by_copies_cannot_be_changed_in_place():
    ctx = await make_context(toy_lm())
    await ctx.ensure_logprobs()
    clone = copy.deepcopy(ctx)
    with pytest.raises(ValueError, match="read-only"):
        ctx.next_byte_logprobs[ord("1")] = 0.0
    assert clone.next_byte_logprobs[ord("1")] < 0.0
