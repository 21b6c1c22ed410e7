"""ByteLLM: the byte beam's probabilities, as a potential that multiplies with byte constraints."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest

from genlm_lab.backend import ToyLM
from genlm_lab.bytes import BeamParams, ByteBeamState
from genlm_lab.control import EOS, BoolFSA, ByteLLM

TOKENS = [b"a", b"b", b"ab", b"ba", b"c", b"$"]


def run(coro):
    return asyncio.run(coro)


def toy():
    return ToyLM(TOKENS, eos=b"$", seed=5)


def test_prefix_and_next_weights_are_the_beams():
    async def main():
        lm = toy()
        params = BeamParams(K=8, eos_byte_strings=[b"$"])
        byte_llm = ByteLLM(lm, params)
        beam = await ByteBeamState.initial(lm, params)
        start = beam.logZ
        context = list(b"abc")
        for b in context:
            beam = await (beam.prune() << b)
        probs = await beam.logp_next()
        weights = await byte_llm.logw_next(context)
        assert await byte_llm.prefix(context) == pytest.approx(beam.logZ - start)
        for b in (97, 98, 99):
            assert weights[b] == pytest.approx(probs[b])
        assert weights[EOS] == pytest.approx(probs[257])
        assert await byte_llm.complete(context) == pytest.approx(beam.logZ - start + probs[257])
        # prefix(x + b) - prefix(x) is logw_next(x)[b]: the chain rule of the beam
        step = await byte_llm.prefix([*context, 97]) - await byte_llm.prefix(context)
        assert step == pytest.approx(weights[97], abs=1e-6)
        total = np.exp(weights.weights[np.isfinite(weights.weights)]).sum()
        assert total == pytest.approx(1.0, abs=1e-6)
        await byte_llm.cleanup()

    run(main())


def test_multiplies_with_a_byte_constraint_and_reads_bytes_or_ints():
    async def main():
        byte_llm = ByteLLM(toy(), BeamParams(K=4, eos_byte_strings=[b"$"]))
        regex = BoolFSA.from_regex("(ab)+c")
        product = byte_llm * regex
        w = await product.logw_next([b"a", b"b"])
        lm_w = await byte_llm.logw_next([97, 98])
        assert w[97] == pytest.approx(lm_w[97]) and w[99] == pytest.approx(lm_w[99])
        assert w[98] == -math.inf and w[EOS] == -math.inf
        await byte_llm.cleanup()

    run(main())


def test_bad_parameters_are_one_value_error():
    with pytest.raises(ValueError, match="BeamParams"):
        ByteLLM(toy(), beam_params={"K": 3})


def test_from_name_loads_the_model_and_refuses_unknown_keywords():
    p = ByteLLM.from_name("tiny-random", BeamParams(K=2), backend="hf", prompt=b"Hi")
    assert p.beam_params.K == 2 and p.prompt_bytes == b"Hi"
    assert type(p.llm).__name__ == "AsyncTransformer"
    with pytest.raises(TypeError, match="bogus"):
        ByteLLM.from_name("tiny-random", backend="mock", bogus=1)


def test_async_with_cleans_up_on_exit_even_after_an_error():
    async def main():
        with pytest.raises(RuntimeError, match="inside"):
            async with ByteLLM(toy(), BeamParams(K=4, eos_byte_strings=[b"$"])) as byte_llm:
                first = await byte_llm.prefix(list(b"ab"))
                raise RuntimeError("inside the block")
        assert not byte_llm._beams and byte_llm._start is None
        assert await byte_llm.prefix(list(b"ab")) == pytest.approx(first)  # usable again

    run(main())
