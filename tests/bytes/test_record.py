"""Step records: complete, JSON-ready, and consistent with the beam and the model."""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from genlm_lab.backend.toy import ToyLM
from genlm_lab.bytes import BeamParams, ByteBeamState
from genlm_lab.bytes.record import STATUSES

VOCAB = [b"a", b"b", b"ab", b"ba", b"aba", b"$"]


async def run(params: BeamParams, text: bytes):
    lm = ToyLM(VOCAB, seed=4, eos=b"$")
    beam = await ByteBeamState.initial(lm, params)
    for b in text:
        beam = beam.prune()
        await beam.logp_next()
        beam = await (beam << b)
    return lm, beam


def test_one_record_per_byte_matching_the_beam():
    lm, beam = asyncio.run(run(BeamParams(K=3, eos_byte_strings=[b"$"]), b"abab"))
    history = beam.history
    assert [s.position for s in history] == [0, 1, 2, 3, 4]
    assert [s.byte for s in history] == [None, *b"abab"]
    assert history[0].candidates[0].status == "new"
    last = history[-1]
    assert last is beam.last_step
    assert last.logZ == pytest.approx(beam.logZ)
    assert [r.log_weight for r in last.candidates] == [s.weight for s in beam.states]
    for step in history:
        assert sum(r.share for r in step.candidates) == pytest.approx(1.0)
        assert {r.status for r in step.candidates} <= set(STATUSES)
        for r in step.candidates:
            assert b"".join(r.tokens) + r.partial == b"abab"[: step.position]
            assert r.tokens == [VOCAB[t] for t in r.token_ids]


def test_lm_calls_recorded_equal_the_model_queries():
    lm, beam = asyncio.run(run(BeamParams(K=3), b"ababa"))
    recorded = sum(s.lm_calls + s.lm_calls_next for s in beam.history)
    assert recorded == lm.stats["queries"]


def test_pruned_candidates_are_marked_and_next_distribution_kept():
    lm, beam = asyncio.run(run(BeamParams(K=1), b"abab"))
    assert len(beam.history) == len(b"abab") + 1  # the initial beam, then one step a byte
    assert any(r.status == "pruned" for step in beam.history for r in step.candidates)
    for step in beam.history[1:-1]:
        kept = [r for r in step.candidates if r.status != "pruned"]
        assert len(kept) == 1
        assert kept[0].log_weight == max(r.log_weight for r in step.candidates)
        if len(step.candidates) > 1:
            assert step.pruned_logZ == pytest.approx(kept[0].log_weight)
        else:  # prune() kept the beam as it was: its logZ is recorded all the same
            assert step.pruned_logZ == pytest.approx(step.logZ)
    for step in beam.history[:-1]:
        assert step.next_logprobs is not None and len(step.next_logprobs) == 258
        assert math.fsum(math.exp(x) for x in step.next_logprobs) == pytest.approx(1.0)


def test_records_serialise_to_strict_json():
    _, beam = asyncio.run(run(BeamParams(K=3, eos_byte_strings=[b"$"]), b"aba"))
    data = [step.to_dict() for step in beam.history]
    text = json.dumps({"params": beam.params.to_dict(), "steps": data}, allow_nan=False)
    back = json.loads(text)
    assert back["params"]["K"] == 3 and back["params"]["eos_byte_strings"] == [list(b"$")]
    rows = back["steps"][-1]["candidates"]
    for row in rows:
        assert bytes(sum(row["tokens"], [])) + bytes(row["partial"]) == b"aba"
        assert "".join(row["tokens_text"]) + row["partial_text"] == "aba"


def test_branching_from_one_beam_keeps_separate_histories():
    async def go():
        lm = ToyLM(VOCAB, seed=4)
        beam = await ByteBeamState.initial(lm, BeamParams(K=3))
        beam = await (beam << ord("a"))
        left = await (beam << ord("a"))
        right = await (beam << ord("b"))
        return beam, left, right

    beam, left, right = asyncio.run(go())
    assert [s.byte for s in left.history] == [None, ord("a"), ord("a")]
    assert [s.byte for s in right.history] == [None, ord("a"), ord("b")]
    assert len(beam.history) == 2


def test_concurrent_logp_next_on_one_beam_records_each_lm_call_once():
    """Particles sharing a beam ask for logp_next together; the calls run once and count once."""

    async def go():
        lm = ToyLM(VOCAB, seed=4, eos=b"$")
        beam = await ByteBeamState.initial(lm, BeamParams(K=3))
        for b in b"ab":
            beam = await (beam << b)
        before = lm.stats["queries"]
        first, *rest = await asyncio.gather(*(beam.logp_next() for _ in range(4)))
        for probs in rest:
            assert [probs[b] for b in range(256)] == [first[b] for b in range(256)]
        return lm.stats["queries"] - before, beam.last_step.lm_calls_next

    queries, recorded = asyncio.run(go())
    assert queries > 0
    assert recorded == queries
