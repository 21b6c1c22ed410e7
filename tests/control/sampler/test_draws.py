"""`draw_from`: batched draws match their categorical distributions; failures stay in their group."""

from __future__ import annotations

import asyncio
import math
from collections import Counter

import numpy as np
import pytest
import torch

from genlm_lab.control.core.util import BatchAbandoned
from genlm_lab.control.core.weights import LazyWeights
from genlm_lab.control.sampler import draws
from genlm_lab.control.sampler.draws import DRAW_METHODS, draw_from, draw_indices, set_draw_method


def row(weights, vocab):
    return LazyWeights(np.asarray(weights, dtype=float), {t: i for i, t in enumerate(vocab)}, vocab)


@pytest.fixture(params=sorted(DRAW_METHODS))
def method(request):
    before = draws._draw_method
    set_draw_method(request.param)
    yield request.param
    set_draw_method(before)


def test_each_method_draws_its_categorical(method):
    vocab = [b"a", b"b", b"c"]
    probs = np.array([0.2, 0.3, 0.5])
    logws = np.log(probs) + 1.7  # unnormalised: the weight is the log normaliser
    n = 3000
    torch.manual_seed(0)

    async def go():
        return await asyncio.gather(*(draw_from(row(logws, vocab)) for _ in range(n)))

    out = asyncio.run(go())
    counts = Counter(t for t, _, _ in out)
    for token, p in zip(vocab, probs, strict=True):
        assert abs(counts[token] / n - p) < 4 * math.sqrt(p * (1 - p) / n)
    for token, logw, logp in out:
        assert logw == pytest.approx(1.7)
        assert logp == pytest.approx(math.log(probs[vocab.index(token)]))
    assert draw_indices(np.log(probs)).ndim == 0
    assert draw_indices(np.log(np.tile(probs, (4, 1)))).shape == (4,)


def test_importance_draw_and_custom_draw():
    vocab = [b"a", b"b"]
    proposal, target = np.log([0.9, 0.1]), np.log([0.25, 0.5])

    def pick_b(chart):
        assert sum(chart.values()) == pytest.approx(1.0)
        return b"b"

    token, logw, logp = asyncio.run(draw_from(row(proposal, vocab), pick_b, row(target, vocab)))
    assert token == b"b"
    assert logp == pytest.approx(math.log(0.1))
    assert logw == pytest.approx(math.log(0.5) - math.log(0.1))


def test_a_bad_group_fails_alone_and_an_abandoned_batch_says_so():
    good = [row(np.log([0.5, 0.5]), [b"x", b"y"]) for _ in range(3)]
    bad = [row(np.zeros(3), [b"p", b"q", b"r"]), row(np.zeros((2, 3)), [b"p", b"q", b"r"])]

    async def go():
        return await asyncio.gather(
            *(draw_from(r) for r in good), *(draw_from(r) for r in bad), return_exceptions=True
        )

    out = asyncio.run(go())
    assert all(t in (b"x", b"y") for t, _, _ in out[:3])
    assert isinstance(out[3], RuntimeError) and out[3] is out[4]

    async def abandon():
        tasks = [asyncio.ensure_future(draw_from(r)) for r in good]
        await asyncio.sleep(0)
        tasks[0].cancel()
        return await asyncio.gather(*tasks[1:], return_exceptions=True)

    assert all(isinstance(r, BatchAbandoned) for r in asyncio.run(abandon()))
    with pytest.raises(ValueError, match="unknown draw method"):
        set_draw_method("coin")
