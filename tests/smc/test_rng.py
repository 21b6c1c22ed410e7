"""The per-run random generator: seeded runs repeat, concurrent runs keep their own streams."""

import asyncio

import numpy as np
import pytest

from genlm_lab.smc import get_rng, make_rng, using_rng


def test_a_seed_gives_the_same_stream_and_a_generator_passes_through():
    assert make_rng(7).random(5).tolist() == make_rng(7).random(5).tolist()
    generator = np.random.default_rng(1)
    assert make_rng(generator) is generator


@pytest.mark.parametrize("bad", [1.5, "3", True, [1]])
def test_a_seed_of_the_wrong_type_is_named(bad):
    with pytest.raises(ValueError, match="seed must be an int"):
        make_rng(bad)


def test_using_rng_binds_inside_the_block_only():
    outside = get_rng()
    bound = make_rng(0)
    with using_rng(bound):
        assert get_rng() is bound
    assert get_rng() is outside


def test_concurrent_tasks_draw_from_their_own_run():
    async def draws(seed: int) -> list[float]:
        with using_rng(make_rng(seed)):
            out = []
            for _ in range(4):
                await asyncio.sleep(0)  # let the other run interleave
                out.append(get_rng().random())
            return out

    async def both():
        return await asyncio.gather(draws(3), draws(4))

    first, second = asyncio.run(both())
    assert first == make_rng(3).random(4).tolist()
    assert second == make_rng(4).random(4).tolist()
