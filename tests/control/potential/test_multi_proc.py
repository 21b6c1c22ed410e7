"""MultiProcPotential: every method answers what the potential built in-process answers."""

from __future__ import annotations

import asyncio
import math
import os

import numpy as np
import pytest

from genlm_lab.control import EOS, MultiProcPotential, Potential


class Counting(Potential):
    """prefix = -0.5 per token, complete = -1 per token; reports the process it ran in."""

    def __init__(self, vocab):
        super().__init__(vocab)

    async def prefix(self, context):
        return -0.5 * len(context)

    async def complete(self, context):
        return -1.0 * len(context)

    async def pid(self, context):
        return float(os.getpid())


class Broken:
    def __init__(self, *args):
        raise RuntimeError("cannot build")


def test_every_method_matches_the_potential_in_process():
    vocab = [b"a", b"b", b"c"]
    local = Counting(vocab)

    async def go():
        mp = MultiProcPotential(Counting, (vocab,), num_workers=2)
        try:
            contexts = [[b"a"], [b"a", b"b"], [b"a", b"b", EOS]]
            assert mp.vocab == local.vocab and mp.eos == local.eos
            assert await mp.prefix([b"b", b"c"]) == await local.prefix([b"b", b"c"])
            assert await mp.complete([b"b"]) == await local.complete([b"b"])
            assert await mp.score([b"b", EOS]) == await local.score([b"b", EOS])
            want = await local.logw_next([b"b"])
            np.testing.assert_array_equal((await mp.logw_next([b"b"])).weights, want.weights)
            np.testing.assert_array_equal(
                await mp.batch_score(contexts), await local.batch_score(contexts)
            )
            rows = await mp.batch_logw_next(contexts[:2])
            rows.assert_equal(await local.batch_logw_next(contexts[:2]))
            pids = {await mp._run("pid", []) for _ in range(4)}
            assert float(os.getpid()) not in pids  # the calls ran elsewhere
        finally:
            await mp.cleanup()

    asyncio.run(go())


def test_spawn_is_refused_and_bad_arguments_are_named():
    mp = Counting([b"a"]).to_multiprocess(num_workers=1)
    assert mp.vocab == [b"a"] and "1 workers" in repr(mp)
    with pytest.raises(ValueError, match="cannot be spawned"):
        mp.spawn()
    asyncio.run(mp.cleanup())
    with pytest.raises(ValueError, match="num_workers"):
        MultiProcPotential(Counting, ([b"a"],), num_workers=0)
    with pytest.raises(ValueError, match="did not build"):
        MultiProcPotential(Broken, (), num_workers=1)
    assert math.isclose(asyncio.run(Counting([b"a"]).prefix([b"a"])), -0.5)
