"""KV plumbing: the reusable workspace and the segments cut out of a batched forward."""

import asyncio
import random

import torch

from genlm_lab.backend._kv import KVWorkspace
from genlm_lab.backend.hf import AsyncTransformer


def test_workspace_reuses_one_buffer_and_grows_when_needed():
    ws = KVWorkspace(max_bytes=4096)
    like = torch.zeros(1)
    a = ws.take((2, 3, 4), like)
    b = ws.take((4, 6), like)  # same size: same storage
    assert a.shape == (2, 3, 4) and b.shape == (4, 6) and b.is_contiguous()
    assert a.data_ptr() == b.data_ptr()
    c = ws.take((10, 10), like)  # larger: a new buffer, kept for next time
    assert ws.take((5, 5), like).data_ptr() == c.data_ptr()


def test_workspace_does_not_keep_buffers_over_its_bound_or_of_another_dtype():
    ws = KVWorkspace(max_bytes=400)  # 100 float32 values
    kept = ws.take((10, 10), torch.zeros(1))
    big = ws.take((11, 10), torch.zeros(1))
    assert big.data_ptr() != kept.data_ptr()
    assert ws.take((10, 10), torch.zeros(1)).data_ptr() == kept.data_ptr()
    half = ws.take((10, 10), torch.zeros(1, dtype=torch.float16))
    assert half.dtype == torch.float16


def _overlaps(t: torch.Tensor, buf: torch.Tensor) -> bool:
    lo, hi = buf.data_ptr(), buf.data_ptr() + buf.numel() * buf.element_size()
    start = t.data_ptr()
    return lo <= start < hi


async def test_cached_segments_never_alias_the_reused_workspace(tiny_random_hf):
    model, tokenizer = tiny_random_hf
    lm = AsyncTransformer(model, tokenizer, timeout=60.0)
    rng = random.Random(0)
    contexts = [
        [lm.bos_token_id] + [rng.randrange(lm.vocab_size) for _ in range(5 + i)] for i in range(6)
    ]
    for c in contexts:
        lm.cache_kv(c)
    first = [c + [rng.randrange(lm.vocab_size)] for c in contexts]
    await asyncio.gather(*(lm.next_token_logprobs(e) for e in first))  # padded: uses the workspace
    buf = lm._workspace._flat
    assert buf is not None
    for e in first:
        for seg in lm.cache.longest_kv(None, e, len(e)).pieces():
            assert not _overlaps(seg, buf)
    # A second batch overwrites the workspace; the first batch's extensions stay exact.
    second = [c + [rng.randrange(lm.vocab_size)] for c in contexts]
    await asyncio.gather(*(lm.next_token_logprobs(e) for e in second))
    third = [[*e, rng.randrange(lm.vocab_size)] for e in first]
    reused = lm.stats["kv_tokens_reused"]
    results = await asyncio.gather(*(lm.next_token_logprobs(e) for e in third))
    assert lm.stats["kv_tokens_reused"] - reused == sum(len(e) for e in first)
    for e, got in zip(third, results, strict=True):
        torch.testing.assert_close(got, lm.next_token_logprobs_uncached(e), atol=1e-5, rtol=1e-5)


async def test_rows_of_many_segments_and_different_lengths_share_a_padded_forward(
    tiny_random_hf,
):
    """Each row's prefix is a chain of segments (one per earlier call), left-padded."""
    model, tokenizer = tiny_random_hf
    lm = AsyncTransformer(model, tokenizer, timeout=60.0)
    rng = random.Random(1)
    branches = [[lm.bos_token_id] + [rng.randrange(lm.vocab_size) for _ in range(3)]]
    branches = [list(branches[0]) for _ in range(5)]
    for step in range(5):  # branch i grows by 1 + (i + step) % 3 tokens per call
        for i, b in enumerate(branches):
            b.extend(rng.randrange(lm.vocab_size) for _ in range(1 + (i + step) % 3))
        await asyncio.gather(*(lm.next_token_logprobs(b) for b in branches))
    final = [[*b, rng.randrange(lm.vocab_size)] for b in branches]
    assert len({len(f) for f in final}) > 1  # rows differ in length: the forward pads
    assert all(len(lm.cache.longest_kv(None, f, len(f) - 1).pieces()) > 3 for f in final)
    batches = lm.stats["batches"]
    results = await asyncio.gather(*(lm.next_token_logprobs(f) for f in final))
    assert lm.stats["batches"] == batches + 1
    for f, got in zip(final, results, strict=True):
        torch.testing.assert_close(got, lm.next_token_logprobs_uncached(f), atol=1e-5, rtol=1e-5)
