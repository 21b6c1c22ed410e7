"""Lookahead batching changes nothing the beam computes: same logZ, distributions, records."""

from __future__ import annotations

import asyncio
import copy

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_beam import EOS_TOKEN, toy_cases

from genlm_lab.backend import AsyncTransformer
from genlm_lab.bytes import BeamParams, ByteBeamState

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


async def score(lm, params: BeamParams, text: bytes, lookahead: int, prefill: bool = False):
    """Read `text` (with logp_next before every byte, or by prefill); what a user can see."""
    beam = await ByteBeamState.initial(lm, params)
    logps = []
    if prefill:
        beam = await beam.prefill(text, lookahead=lookahead)
    else:
        if lookahead:
            beam = beam.expect(text, lookahead)
        for b in text:
            beam = beam.prune()
            logps.append((await beam.logp_next()).ps)
            beam = await (beam << b)
    logps.append((await beam.logp_next()).ps)
    records = [step.to_dict() for step in beam.history]
    return beam, np.array(logps), records


def assert_same(a, b, tol: float) -> None:
    beam_a, logps_a, rec_a = a
    beam_b, logps_b, rec_b = b
    assert beam_a.logZ == pytest.approx(beam_b.logZ, abs=tol)
    assert beam_a.logZ_upper == pytest.approx(beam_b.logZ_upper, abs=tol)
    np.testing.assert_array_equal(np.isfinite(logps_a), np.isfinite(logps_b))
    fin = np.isfinite(logps_a)
    np.testing.assert_allclose(logps_a[fin], logps_b[fin], atol=tol, rtol=0)
    assert len(rec_a) == len(rec_b)
    for x, y in zip(rec_a, rec_b, strict=True):
        for key in ("position", "byte", "lm_calls", "lm_calls_next", "skipped"):
            assert x[key] == y[key], key
        assert [c["token_ids"] for c in x["candidates"]] == [
            c["token_ids"] for c in y["candidates"]
        ]
        assert [c["status"] for c in x["candidates"]] == [c["status"] for c in y["candidates"]]
        wa = [c["log_weight"] for c in x["candidates"]]
        wb = [c["log_weight"] for c in y["candidates"]]
        np.testing.assert_allclose(np.array(wa, float), np.array(wb, float), atol=tol, rtol=0)


@SETTINGS
@given(
    toy_cases(prefix_closed=True),
    st.integers(1, 4),
    st.sampled_from([1, 3, 8]),
    st.sampled_from([0.0, 0.05]),
    st.sampled_from([0.0, 0.1]),
    st.booleans(),
)
def test_lookahead_gives_the_plain_beams_results(case, K, depth, prune, extend, prefill):
    lm, text = case
    text = text * 2  # longer texts: several lookahead windows
    params = BeamParams(
        K=K, prune_threshold=prune, extend_threshold=extend, eos_byte_strings=[EOS_TOKEN]
    )
    plain = asyncio.run(score(lm, params, text, 0, prefill))
    ahead = asyncio.run(score(lm, params, text, depth, prefill))
    assert_same(ahead, plain, 1e-9)


async def test_lookahead_evaluates_rows_that_later_steps_use():
    from genlm_lab.backend.toy import ToyLM

    lm = ToyLM([b"a", b"b", b"ab", b"ba", b"aba", b"bab"], seed=4)
    beam = await ByteBeamState.initial(lm, BeamParams(K=3))
    beam = beam.expect(b"abababab", 4)
    for b in b"abababab":
        beam = beam.prune()
        await beam.logp_next()
        beam = await (beam << b)
    stats = beam.lookahead_stats
    assert stats.rows > 0 and 0 < stats.used <= stats.rows
    assert 0.0 <= stats.waste < 1.0


async def test_reading_another_byte_than_expected_stops_the_lookahead():
    from genlm_lab.backend.toy import ToyLM

    lm = ToyLM([b"a", b"b", b"ab"], seed=1)
    beam = (await ByteBeamState.initial(lm, BeamParams(K=3))).expect(b"ab", 2)
    assert beam.lookahead_stats is not None
    beam = await (beam << ord("b"))
    assert beam.lookahead_stats is None


@pytest.mark.parametrize("bad", [-1, 1.5, "2", True])
async def test_a_bad_lookahead_raises_value_error(bad):
    from genlm_lab.backend.toy import ToyLM

    beam = await ByteBeamState.initial(ToyLM([b"a"], seed=0), BeamParams(K=1))
    with pytest.raises(ValueError, match="lookahead"):
        beam.expect(b"a", bad)


@pytest.mark.parametrize("bad", [123, None, 1.5, [1, 2, 300], [True], {"a": 1}])
async def test_expecting_what_is_not_bytes_raises_one_value_error(bad):
    from genlm_lab.backend.toy import ToyLM

    beam = await ByteBeamState.initial(ToyLM([b"a"], seed=0), BeamParams(K=1))
    with pytest.raises(ValueError, match="expect reads"):
        beam.expect(bad)


async def test_text_bytes_and_byte_ints_are_expected_alike():
    from genlm_lab.backend.toy import ToyLM

    beam = await ByteBeamState.initial(ToyLM([b"a"], seed=0), BeamParams(K=1))
    told = [beam.expect(x)._ahead.text for x in ("ab", b"ab", bytearray(b"ab"), [97, 98])]
    assert told == [b"ab"] * 4


@pytest.mark.parametrize("bad", [-1, 2.0, "8", False])
async def test_a_bad_budget_raises_value_error(bad):
    from genlm_lab.backend.toy import ToyLM

    beam = await ByteBeamState.initial(ToyLM([b"a"], seed=0), BeamParams(K=1))
    with pytest.raises(ValueError, match="budget"):
        beam.expect(b"a", 1, budget=bad)


@pytest.mark.parametrize("K", [1, 2, 4])
async def test_the_default_budget_is_two_rows_per_unit_of_beam_width(K):
    from genlm_lab.backend.toy import ToyLM
    from genlm_lab.bytes.lookahead import ROWS_PER_CANDIDATE

    vocab = [bytes([c]) for c in b"abc"] + [b"ab", b"bc", b"ca", b"abc", b"bca", b"cab"]
    issued = {}
    for budget in (None, 1):
        beam = await ByteBeamState.initial(ToyLM(vocab, seed=2), BeamParams(K=K))
        beam = beam.expect(b"abcabcabc", 3, budget=budget)
        while not beam.lookahead_stats.rows:  # up to the first forward that adds rows
            await beam.logp_next()
            beam = await (beam.prune() << b"abc"[beam.position % 3])
        issued[budget] = beam.lookahead_stats.rows
    assert issued[1] == 1
    assert 1 < issued[None] <= ROWS_PER_CANDIDATE * K


async def test_rows_ahead_never_add_forwards_past_the_backends_batch_size(tiny_random_hf):
    # 3 rows per forward: rows ahead only fill a forward's free places
    forwards = {}
    for depth in (0, 1):
        lm = AsyncTransformer(*tiny_random_hf, batch_size=3)
        beam = await ByteBeamState.initial(lm, BeamParams(K=5))
        if depth:
            beam = beam.expect(b"Hello, world", depth, budget=10)
        for b in b"Hello, world":
            beam = beam.prune()
            await beam.logp_next()
            beam = await (beam << b)
        forwards[depth] = lm.stats["batches"]
    assert forwards[1] <= forwards[0]


def test_rows_ahead_take_the_next_byte_first_and_stay_within_max_new_tokens():
    from genlm_lab.backend.toy import ToyLM
    from genlm_lab.bytes.lookahead import speculative_rows

    vocab = [bytes([c]) for c in b"ab"] + [b"ab", b"ba", b"aa", b"bb", b"aba", b"bab"]

    async def beam_at_a_boundary():
        beam = await ByteBeamState.initial(ToyLM(vocab, seed=3), BeamParams(K=8))
        beam = await (beam << ord("a"))
        await beam.logp_next()  # evaluates the extensions that end a token at "a"
        return beam

    beam = asyncio.run(beam_at_a_boundary())
    states = [s for s in beam.states if s.materialized]
    computed = {s.lm_state.context for s in states} | {
        e.lm_state.context for e in beam._ext or () if e.materialized
    }

    def new_tokens(ctx):
        return min(len(ctx) - len(c) for c in computed if ctx[: len(c)] == c)

    every = speculative_rows(states, [], b"bab", 8, 1000, max_new=9)
    for max_new in (1, 2, 3):
        rows = speculative_rows(states, [], b"bab", 8, 1000, max_new=max_new)
        assert all(new_tokens(r.context) <= max_new for r in rows)
        assert {r.context for r in rows} == {
            r.context for r in every if new_tokens(r.context) <= max_new
        }
    # a small budget keeps the next byte's rows: they are the ones needed first
    nxt = speculative_rows(states, [], b"b", 8, 1000)
    assert [r.context for r in speculative_rows(states, [], b"bab", 8, len(nxt))] == [
        r.context for r in nxt
    ]


def _float64_lm(model, tokenizer) -> AsyncTransformer:
    # float32 forwards differ by batch composition (about 3e-5 nats in logZ between
    # batch_size=1 and batched runs of the plain beam on the default model); in
    # float64 that noise is far below 1e-6, so the comparison tests the algorithm.
    return AsyncTransformer(copy.deepcopy(model).double(), tokenizer)


def plain_then_ahead(lm, text: bytes, prefill: bool = False):
    """`score` without and with 4 bytes of lookahead (K=5), each from empty caches.

    The backend's stats are those of the lookahead run.
    """
    params = BeamParams(K=5)
    lm.clear_cache()
    plain = asyncio.run(score(lm, params, text, 0, prefill))
    lm.clear_cache()
    lm.reset_stats()
    return plain, asyncio.run(score(lm, params, text, 4, prefill))


def test_lookahead_on_tiny_random_equals_the_plain_beam(tiny_random_hf):
    lm = _float64_lm(*tiny_random_hf)
    plain, ahead = plain_then_ahead(lm, b"Hello, world! 12")
    assert_same(ahead, plain, 1e-6)
    assert ahead[0].lookahead_stats.used > 0
    # rows ahead extend rows of the same forward: those share the longer row
    assert lm.stats["prefix_shared"] > 0


@pytest.mark.slow
def test_lookahead_on_the_default_model_equals_the_plain_beam(default_hf):
    lm = _float64_lm(*default_hf)
    plain, ahead = plain_then_ahead(lm, b"Hello, world")
    assert_same(ahead, plain, 1e-6)
    assert lm.stats["prefix_shared"] > 0  # the backend's prefix sharing is part of what is equal
    plain, ahead = plain_then_ahead(lm, b"Hello, world", prefill=True)
    assert_same(ahead, plain, 1e-6)
