"""AsyncTokenCharacterTrie: concurrent requests share batched calls and get the right rows."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from _trie_strategies import random_weights, vocabularies
from hypothesis import given, settings
from hypothesis import strategies as st

from genlm_lab.trie import AsyncTokenCharacterTrie, TokenCharacterTrie

VOCAB = [b"a", b"ab", b"abc", b"b", b"ab"]


@settings(max_examples=15, deadline=None)
@given(
    vocab=vocabularies(),
    seed=st.integers(0, 2**32 - 1),
    backend=st.sampled_from(["sequential", "parallel"]),
)
def test_async_results_equal_direct_calls(vocab, seed, backend):
    seq = TokenCharacterTrie(vocab)
    ws = random_weights(seed, len(vocab), 4)

    async def main():
        trie = AsyncTokenCharacterTrie.from_vocab(vocab, backend=backend, device="cpu")
        sums = await asyncio.gather(*(trie.weight_sum(w) for w in ws))
        maxs = await asyncio.gather(*(trie.weight_max(w) for w in ws))
        await trie.cleanup()
        return sums, maxs

    sums, maxs = asyncio.run(main())
    for w, s, m in zip(ws, sums, maxs, strict=True):
        np.testing.assert_allclose(s, seq.weight_sum(w), atol=1e-5)
        np.testing.assert_allclose(m, seq.weight_max(w), atol=1e-5)


async def test_concurrent_requests_are_served_by_one_batch_per_operation():
    trie = AsyncTokenCharacterTrie.from_vocab(VOCAB, backend="sequential")
    ws = random_weights(1, len(VOCAB), 6)
    calls = []
    inner = trie.trie.batch_weight_sum
    trie.trie.batch_weight_sum = lambda batch: calls.append(len(batch)) or inner(batch)
    results = await asyncio.gather(*(trie.weight_sum(w) for w in ws), trie.weight_max(ws[0]))
    assert calls == [6]
    assert trie._batcher.batches == 2  # one sum batch, one max batch
    np.testing.assert_allclose(results[3], trie.trie.weight_sum(ws[3]))
    await trie.cleanup()


async def test_error_in_a_batch_reaches_every_waiting_caller_and_service_continues():
    trie = AsyncTokenCharacterTrie.from_vocab(VOCAB, backend="sequential")

    def boom(batch):
        raise RuntimeError("kernel failed")

    good = trie.trie.batch_weight_sum
    trie.trie.batch_weight_sum = boom
    ws = random_weights(2, len(VOCAB), 3)
    results = await asyncio.gather(*(trie.weight_sum(w) for w in ws), return_exceptions=True)
    assert all(isinstance(r, RuntimeError) for r in results)
    trie.trie.batch_weight_sum = good
    np.testing.assert_allclose(await trie.weight_sum(ws[0]), good(ws[:1])[0])
    await trie.cleanup()


async def test_a_batch_giving_the_wrong_number_of_rows_fails_its_callers_and_service_continues():
    trie = AsyncTokenCharacterTrie.from_vocab(VOCAB, backend="sequential")
    good = trie.trie.batch_weight_sum
    trie.trie.batch_weight_sum = lambda batch: good(batch)[:1]  # a broken kernel
    ws = random_weights(4, len(VOCAB), 3)
    results = await asyncio.wait_for(
        asyncio.gather(*(trie.weight_sum(w) for w in ws), return_exceptions=True), 5
    )
    assert all(isinstance(r, RuntimeError) and "3 requests" in str(r) for r in results)
    trie.trie.batch_weight_sum = good
    np.testing.assert_allclose(await trie.weight_sum(ws[0]), good(ws[:1])[0])
    await trie.cleanup()


async def test_bad_request_fails_only_its_caller():
    trie = AsyncTokenCharacterTrie.from_vocab(VOCAB, backend="sequential")
    ok = np.ones(len(VOCAB))
    bad = ok.copy()
    bad[2] = -1.0
    results = await asyncio.gather(
        trie.weight_sum(ok), trie.weight_sum(bad), return_exceptions=True
    )
    assert isinstance(results[1], ValueError) and "token id 2" in str(results[1])
    assert results[0][0] == len(VOCAB)
    with pytest.raises(ValueError, match="shape"):
        await trie.weight_max(np.ones(2))
    await trie.cleanup()


def test_fresh_queue_per_event_loop():
    trie = AsyncTokenCharacterTrie.from_vocab(VOCAB, backend="sequential")
    ws = np.arange(len(VOCAB), dtype=float)
    for _ in range(2):  # a second asyncio.run is a new loop: the trie must still answer
        out = asyncio.run(trie.weight_sum(ws))
        assert out[0] == ws.sum()


def test_a_task_ended_with_its_loop_is_forgotten():
    """asyncio.run cancels the background task; a cancelled task holds its traceback, which
    reaches the batcher: kept, it tied the trie (a whole vocabulary) into a cycle that the
    test suite's workers were seen never to free."""
    trie = AsyncTokenCharacterTrie.from_vocab(VOCAB, backend="sequential")
    for _ in range(2):  # no cleanup: each loop ends with the task still serving
        asyncio.run(trie.weight_sum(np.ones(len(VOCAB))))
        assert trie._batcher._served == {}


def test_unknown_backend_raises_value_error():
    with pytest.raises(ValueError, match="backend 'gpu'"):
        AsyncTokenCharacterTrie.from_vocab(VOCAB, backend="gpu")


async def test_cleanup_stops_the_background_task():
    trie = AsyncTokenCharacterTrie.from_vocab(VOCAB)
    await trie.weight_sum(np.ones(len(VOCAB)))
    task = trie._batcher._task
    await trie.cleanup()
    assert task.done() and trie._batcher._task is None


async def test_cleanup_answers_queued_requests_instead_of_cancelling_or_leaving_them():
    # One trie serves many callers (every beam over a model shares one): a caller
    # stopping it must not cancel another caller's request, which was never cancelled.
    trie = AsyncTokenCharacterTrie.from_vocab(VOCAB, backend="sequential")
    ws = random_weights(3, len(VOCAB), 3)
    for ticks in range(4):  # queued, grouped, or not yet picked up when cleanup comes
        trie.start()
        await asyncio.sleep(0)  # the background task now waits for requests
        callers = [asyncio.create_task(trie.weight_sum(w)) for w in ws]
        for _ in range(ticks):
            await asyncio.sleep(0)
        await trie.cleanup()
        results = await asyncio.wait_for(asyncio.gather(*callers, return_exceptions=True), 5)
        for w, r in zip(ws, results, strict=True):
            assert isinstance(r, np.ndarray), (ticks, r)
            np.testing.assert_allclose(r, trie.trie.weight_sum(w))
    # The trie serves again afterwards.
    assert (await trie.weight_sum(np.ones(len(VOCAB))))[0] == len(VOCAB)
    await trie.cleanup()


def test_event_loops_in_two_threads_share_one_trie():
    """A trie is cached per model; notebooks and servers may use it from two loops at once.

    With one queue for all loops, a request could land in the other loop's queue
    and never be answered (a timeout here); a tiny switch interval makes the
    threads interleave often enough to show it.
    """
    import sys
    import threading

    trie = AsyncTokenCharacterTrie.from_vocab(VOCAB, backend="sequential")
    ws = random_weights(7, len(VOCAB), 8)
    want = [trie.trie.weight_sum(w) for w in ws]
    errors: list[BaseException] = []

    async def many() -> None:
        for _ in range(150):
            got = await asyncio.wait_for(asyncio.gather(*(trie.weight_sum(w) for w in ws)), 2)
            for g, w in zip(got, want, strict=True):
                np.testing.assert_allclose(g, w)

    def worker() -> None:
        try:
            asyncio.run(many())
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=worker) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors


def test_repr_and_html_wrap_the_inner_trie():
    trie = TokenCharacterTrie([b"a", b"ab", b"b"])
    wrapped = AsyncTokenCharacterTrie(trie)
    assert repr(wrapped) == f"AsyncTokenCharacterTrie({trie!r})"
    assert trie._repr_html_() in wrapped._repr_html_()
    assert "batches" in wrapped._repr_html_()
