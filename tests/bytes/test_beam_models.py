"""The beam over full-size vocabularies: MockAsyncLM, tiny-random and (slow) the default model."""

from __future__ import annotations

import asyncio
import math

import pytest

from genlm_lab.backend import AsyncTransformer, MockAsyncLM
from genlm_lab.bytes import BeamParams, ByteBeamState

TEXT = b"Hello, world"


async def read(lm, params: BeamParams, text: bytes, prune: bool = True):
    beam = await ByteBeamState.initial(lm, params)
    logps = []
    for b in text:
        if prune:
            beam = beam.prune()
        q = await beam.logp_next()
        assert q.total() == pytest.approx(1.0, abs=1e-9)
        logps.append(q[b])
        beam = await (beam << b)
    await beam.cleanup()
    return beam, logps


def check_chain_rule_without_pruning(lm):
    beam, logps = asyncio.run(read(lm, BeamParams(K=10_000), TEXT[:5], prune=False))
    assert math.isfinite(beam.logZ)
    assert sum(logps) == pytest.approx(beam.logZ, abs=1e-4)


def test_mock_lm_over_the_smollm2_vocabulary(smollm2_tokenizer):
    lm = MockAsyncLM(tokenizer=smollm2_tokenizer, seed=1)
    check_chain_rule_without_pruning(lm)
    beam, _ = asyncio.run(read(lm, BeamParams(K=3), TEXT))
    assert beam.position == len(TEXT)


def test_tiny_random_transformer(tiny_random_hf):
    model, tokenizer = tiny_random_hf
    lm = AsyncTransformer(model, tokenizer)
    check_chain_rule_without_pruning(lm)


@pytest.mark.slow
def test_pruned_logZ_is_at_most_unpruned_on_the_default_model(default_hf):
    model, tokenizer = default_hf
    lm = AsyncTransformer(model, tokenizer)
    text = b"Hello"
    unpruned, _ = asyncio.run(read(lm, BeamParams(K=100_000), text, prune=False))
    for K in range(1, 6):
        for threshold in (0.0, 0.05):
            beam, _ = asyncio.run(read(lm, BeamParams(K=K, prune_threshold=threshold), text))
            assert beam.logZ <= unpruned.logZ + 1e-6, (K, threshold)
