"""genlm-backend's queue and cache-walk calls on a batched backend (AsyncTransformer).

`add_query`, `queries`, `batch_evaluate_queries` and `walk_cache` are the
public names genlm-backend documents on its `AsyncTransformer`; genlm_lab's
answer them from its own batcher and token-trie cache.
"""

import asyncio

import pytest
import torch

from genlm_lab.backend.hf import AsyncTransformer


@pytest.fixture
def lm(tiny_random_hf):
    model, tokenizer = tiny_random_hf
    return AsyncTransformer(model, tokenizer, timeout=60.0)  # only a flush runs a batch


def close(a, b):
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


async def test_add_query_resolves_its_future_with_the_next_token_logprobs(lm):
    ctx = [lm.bos_token_id, 5, 6]
    futures = [asyncio.get_running_loop().create_future() for _ in range(2)]
    for f in futures:
        lm.add_query(ctx, f)
    lm.add_query(ctx + [7], asyncio.get_running_loop().create_future())
    assert sorted(lm.queries) == [tuple(ctx), tuple(ctx + [7])]  # duplicates queue once
    lm.batch_evaluate_queries()
    assert lm.queries == [] and lm.stats["batches"] == 1
    assert futures[0].result() is futures[1].result()
    close(futures[0].result(), lm.next_token_logprobs_uncached(ctx))


async def test_add_query_of_a_cached_context_resolves_at_once(lm):
    ctx = [lm.bos_token_id, 3]
    want = await lm.next_token_logprobs(ctx)
    future = asyncio.get_running_loop().create_future()
    lm.add_query(ctx, future)
    assert future.done() and future.result() is want and lm.queries == []


async def test_add_query_of_a_cached_context_leaves_a_cancelled_future_alone(lm):
    ctx = [lm.bos_token_id, 3]
    await lm.next_token_logprobs(ctx)
    future = asyncio.get_running_loop().create_future()
    future.cancel()
    lm.add_query(ctx, future)  # no InvalidStateError
    assert future.cancelled()


def test_add_query_outside_the_futures_loop_is_refused(lm):
    other = asyncio.new_event_loop()
    try:
        with pytest.raises(RuntimeError):  # no loop runs here
            lm.add_query([lm.bos_token_id], other.create_future())
    finally:
        other.close()
    assert lm.queries == [] and lm.stats["queries"] == 0


async def test_add_query_runs_after_the_timeout_without_a_flush(lm):
    lm.timeout = 0.05
    future = asyncio.get_running_loop().create_future()
    lm.add_query([lm.bos_token_id, 4], future)
    await asyncio.sleep(0.15)
    assert future.done()
    close(future.result(), lm.next_token_logprobs_uncached([lm.bos_token_id, 4]))


async def test_add_query_rejects_a_past_and_a_bad_context_without_queueing(lm):
    future = asyncio.get_running_loop().create_future()
    with pytest.raises(ValueError, match="past=None"):
        lm.add_query([lm.bos_token_id], future, past=object())
    with pytest.raises(ValueError):
        lm.add_query([], future)
    with pytest.raises(ValueError):
        lm.add_query([lm.vocab_size], future)
    assert lm.queries == [] and not future.done()


async def test_reset_and_assigning_no_queries_cancel_the_queued_futures(lm):
    for reset in (lm.reset_async_queries, lambda: setattr(lm, "queries", [])):
        future = asyncio.get_running_loop().create_future()
        lm.add_query([lm.bos_token_id, 8], future)
        assert len(lm.queries) == 1
        reset()
        assert lm.queries == [] and future.cancelled()
    assert lm.stats["batches"] == 0
    with pytest.raises(ValueError, match="empty list"):
        lm.queries = [[1, 2]]


def test_batch_evaluate_queries_with_nothing_queued_runs_nothing(lm):
    lm.batch_evaluate_queries()
    assert lm.queries == [] and lm.stats["batches"] == 0


def test_walk_cache_on_an_empty_cache_matches_nothing(lm):
    node, matched, past, base = lm.walk_cache([lm.bos_token_id, 5])
    assert (matched, past, base) == (0, None, 0)
    assert node.length == 0 and node.logprobs is None and node.past_key_values is None


def test_walk_cache_finds_a_cached_prompt_and_the_keys_a_query_reuses(lm):
    prompt = [lm.bos_token_id, 5, 6, 7]
    lm.cache_kv(prompt)
    node, matched, past, base = lm.walk_cache(prompt)
    assert matched == len(prompt) and node.length == len(prompt)
    assert node.past_key_values is not None and node.past_key_values.length == len(prompt)
    close(node.logprobs, lm.next_token_logprobs_uncached(prompt))
    # the prompt's own last token is recomputed: its keys cover all but that one
    assert base == len(prompt) - 1 and past.length == base
    ext = prompt + [9, 10]
    node, matched, past, base = lm.walk_cache(ext)
    assert matched == len(prompt) and node.logprobs is not None
    assert base == len(prompt) and past.length == len(prompt)
    # what walk_cache promised: the query runs the model on ext[base:] only
    before = lm.stats["tokens_computed"]
    close(lm.next_token_logprobs_sync(ext), lm.next_token_logprobs_uncached(ext))
    assert lm.stats["tokens_computed"] - before == len(ext) - base + len(ext)  # + uncached
    lm.clear_cache()
    assert lm.walk_cache(ext)[1:] == (0, None, 0)


def test_walk_cache_after_clear_kv_cache_keeps_log_probs_only(lm):
    prompt = [lm.bos_token_id, 2, 3]
    lm.cache_kv(prompt)
    lm.clear_kv_cache()
    node, matched, past, base = lm.walk_cache(prompt + [4])
    assert matched == len(prompt) and node.logprobs is not None
    assert node.past_key_values is None and (past, base) == (None, 0)
