"""StatefulByteLM's helpers on a byte beam: seeded sampling and progress bars."""

from __future__ import annotations

import random

import pytest

from genlm_lab.backend.toy import ToyLM
from genlm_lab.bytes import BeamParams, ByteBeamState
from genlm_lab.bytes import base as base_mod

VOCAB = [b"a", b"b", b"ab", b"ba", b"c", b"abc"]


async def beam():
    return await ByteBeamState.initial(ToyLM(VOCAB, seed=11), BeamParams(K=3))


async def test_sample_with_the_same_seed_gives_the_same_bytes():
    b = await beam()
    runs = {await b.sample(b"a", 12, seed=7) for _ in range(3)}
    assert len(runs) == 1
    others = {await b.sample(b"a", 12, seed=s) for s in range(8)}
    assert len(others) > 1  # the seed matters


async def test_sample_seed_leaves_the_global_generator_alone():
    b = await beam()
    random.seed(3)
    want = random.random()
    random.seed(3)
    await b.sample(b"", 6, seed=1)
    assert random.random() == want


@pytest.mark.parametrize("seed", [1.5, "1", True])
async def test_sample_rejects_a_seed_that_is_not_an_int(seed):
    b = await beam()
    with pytest.raises(ValueError, match="seed"):
        await b.sample(b"", 2, seed=seed)


async def test_sample_rejects_a_seed_with_a_custom_draw():
    b = await beam()
    with pytest.raises(ValueError, match="custom draw"):
        await b.sample(b"", 2, draw=lambda chart: 97, seed=1)


class Recorder:
    """A progress bar that records what it was told."""

    made: list[Recorder] = []

    def __init__(self, total=None, desc=None, enabled=None, **kw):
        self.total, self.desc, self.enabled, self.n = total, desc, enabled, 0
        Recorder.made.append(self)

    def update(self, n=1):
        self.n += n

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


@pytest.fixture
def bars(monkeypatch):
    Recorder.made = []
    monkeypatch.setattr(base_mod, "progress_bar", Recorder)
    return Recorder.made


async def test_prefill_and_greedy_count_every_byte_on_their_bars(bars):
    b = await beam()
    text = b"ab" * 30
    await b.prefill(text, progress=True)
    out = await b.greedy(b"ab", 5, progress=True)
    prefill, greedy_prefill, greedy = bars
    assert (prefill.desc, prefill.total, prefill.n, prefill.enabled) == ("prefill", 60, 60, True)
    assert greedy.desc == "greedy" and greedy.n == len(out) - 2 and greedy.enabled


async def test_bars_are_off_by_default_outside_notebooks_and_for_short_runs(bars):
    b = await beam()
    await b.prefill(b"ab" * 40)  # pytest is no notebook
    await b.sample(b"a", 3, seed=0)
    assert bars and not any(bar.enabled for bar in bars)
    assert base_mod.byte_bar(10, "x", None).__class__ is Recorder
    assert not Recorder.made[-1].enabled
