"""ByteEnsemble: two models of different tokenizers weighed byte by byte, against exact sums."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest

from genlm_lab.backend import ToyLM
from genlm_lab.bytes import BeamParams, ByteBeamState
from genlm_lab.control import EOS, convert_to_weighted_logop
from genlm_lab.control.lm import ByteEnsemble
from tests.control._byte_pair import K, log, oracles, texts, toy_pair


def run(coro):
    return asyncio.run(coro)


@pytest.mark.parametrize(("op", "a"), [("sum", 0.3), ("prod", 0.3), ("min", 0.5)])
def test_weights_are_the_weighted_mean_of_the_exact_byte_probabilities(op, a):
    """prefix, complete and logw_next of every text up to 3 bytes, against the token-level sums."""
    lm1, lm2 = toy_pair()
    (pre1, end1), (pre2, end2) = oracles(lm1, lm2)
    mean = convert_to_weighted_logop(op, a)

    async def main():
        ens = await ByteEnsemble.create(lm1, lm2, op, a=a, K=K)
        checked = 0
        for x in texts(3):
            context = list(x)
            prefix = mean(log(pre1(x)), log(pre2(x)))
            assert await ens.prefix(context) == pytest.approx(prefix, abs=1e-6)
            complete = mean(log(end1(x)), log(end2(x)))
            assert await ens.complete(context) == pytest.approx(complete, abs=1e-6)
            row = (await ens.logw_next(context)).weights
            for y in b"ab":
                after = mean(log(pre1(x + bytes([y]))), log(pre2(x + bytes([y]))))
                assert row[y] == pytest.approx(after - prefix, abs=1e-6)
            assert row[256] == pytest.approx(complete - prefix, abs=1e-6)
            others = np.delete(row, [*b"ab", 256])
            assert np.all(others == -math.inf)  # bytes neither model writes
            assert await ens.component_logws([*context, EOS]) == pytest.approx(
                (log(end1(x)), log(end2(x))), abs=1e-6
            )
            checked += 1
        assert checked == 15
        await ens.cleanup()

    run(main())


def test_a_model_that_cannot_write_a_byte_leaves_the_mixture_to_the_other():
    """Model 2 never writes "b" first: the mixture's weight of "b..." is model 1's alone."""
    lm1 = ToyLM([b"a", b"b", b"$"], eos=b"$", seed=3)
    lm2 = ToyLM([b"a", b"b", b"$"], eos=b"$", logprobs_fn=lambda c: [0.0, -math.inf, 0.0])
    (pre1, end1), (pre2, _) = oracles(lm1, lm2)

    async def main():
        ens = await ByteEnsemble.create(lm1, lm2, "sum", a=0.4, K=K)
        beam1, beam2 = await ens.get_beam_states(list(b"ba"))
        assert beam2 is None and len(beam1) > 0  # model 2 is dead after "b"
        assert pre2(b"ba") == 0.0
        assert await ens.prefix(list(b"ba")) == pytest.approx(math.log(0.4 * pre1(b"ba")), abs=1e-6)
        assert await ens.complete(list(b"ba")) == pytest.approx(
            math.log(0.4 * end1(b"ba")), abs=1e-6
        )
        product = await ByteEnsemble.create(lm1, lm2, "prod", a=0.4, K=K)
        assert await product.prefix(list(b"b")) == -math.inf
        with pytest.raises(ValueError, match="weight zero"):
            await product.logw_next(list(b"b"))

    run(main())


def test_concurrent_particles_share_one_reading_of_each_context():
    lm1, lm2 = toy_pair()

    async def main():
        ens = await ByteEnsemble.create(lm1, lm2, "prod", K=K)
        before = lm1.stats["queries"] + lm2.stats["queries"]
        await asyncio.gather(*(ens.logw_next(list(b"abab")) for _ in range(8)))
        once = lm1.stats["queries"] + lm2.stats["queries"] - before
        fresh = await ByteEnsemble.create(*toy_pair(), "prod", K=K)
        before = sum(m.stats["queries"] for m in (fresh.p1, fresh.p2))
        await fresh.logw_next(list(b"abab"))
        alone = sum(m.stats["queries"] for m in (fresh.p1, fresh.p2)) - before
        assert once == alone > 0
        assert set(ens.data_dict_1) == {b"", b"a", b"ab", b"aba", b"abab"}

    run(main())


def test_bad_input_is_one_clear_value_error():
    lm1, lm2 = toy_pair()
    no_eos = ToyLM([b"a", b"b"], seed=0)

    async def beams(eos1, eos2):
        return [
            await ByteBeamState.initial(lm, BeamParams(K=4, eos_byte_strings=eos))
            for lm, eos in ((lm1, eos1), (lm2, eos2))
        ]

    async def main():
        with pytest.raises(ValueError, match="a should be|between 0 and 1"):
            await ByteEnsemble.create(lm1, lm2, "prod", a=1.5)
        with pytest.raises(ValueError, match="Invalid operation|operation"):
            await ByteEnsemble.create(lm1, lm2, "median")
        with pytest.raises(ValueError, match="model 2 .* has no EOS token"):
            await ByteEnsemble.create(lm1, no_eos, "sum")
        b1, b2 = await beams([b"$"], [b"<e>"])
        with pytest.raises(ValueError, match="vocab must be list"):
            ByteEnsemble(lm1, lm2, "sum", {b"": b1}, {b"": b2}, vocab=[b"a", b"b"])
        with pytest.raises(ValueError, match=r"eos_tokens \[b'\$', b'\$'\] are not"):
            ByteEnsemble(lm1, lm2, "sum", {b"": b1}, {b"": b2}, eos_tokens=[b"$", b"$"])
        with pytest.raises(ValueError, match="data_dict_2 must map b''"):
            ByteEnsemble(lm1, lm2, "sum", {b"": b1}, {})
        b1, b2 = await beams([b"$"], None)
        with pytest.raises(ValueError, match="model 2's beam has no EOS byte string"):
            ByteEnsemble(lm1, lm2, "sum", {b"": b1}, {b"": b2})

    run(main())
