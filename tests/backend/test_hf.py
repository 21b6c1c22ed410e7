"""AsyncTransformer: batching and caching are transparent, bad input fails alone."""

import asyncio
import random

import pytest
import torch

from genlm_lab.backend.hf import AsyncTransformer


@pytest.fixture(scope="module")
def vocab(tiny_random_hf):
    from genlm_lab.tokenization import decode_vocab

    return decode_vocab(tiny_random_hf[1])


@pytest.fixture
def make_lm(tiny_random_hf, vocab):
    model, tokenizer = tiny_random_hf

    def make(**kwargs):
        return AsyncTransformer(model, tokenizer, byte_vocab=vocab[0], str_vocab=vocab[1], **kwargs)

    return make


@pytest.fixture
def lm(make_lm):
    return make_lm(timeout=60.0)  # a batch that waited for the timer would hang the test


def random_contexts(lm, n, seed=0):
    """Contexts with shared prefixes, different lengths and duplicates."""
    rng = random.Random(seed)
    stem = [lm.bos_token_id] + [rng.randrange(lm.vocab_size) for _ in range(12)]
    out = []
    for _ in range(n):
        ctx = stem[: rng.randrange(1, len(stem) + 1)]
        ctx += [rng.randrange(lm.vocab_size) for _ in range(rng.randrange(0, 6))]
        out.append(ctx)
    return out + out[: n // 4]


def close(a, b, tol):
    torch.testing.assert_close(a, b, atol=tol, rtol=tol)


async def gathered(lm, contexts):
    """Log-probs of `contexts` asked concurrently (one batch)."""
    return await asyncio.gather(*(lm.next_token_logprobs(x) for x in contexts))


def assert_uncached(lm, contexts, results, tol):
    """Each result equals a fresh, uncached forward of its context (check stats before)."""
    for x, got in zip(contexts, results, strict=True):
        close(got, lm.next_token_logprobs_uncached(x), tol)


async def test_gathered_queries_equal_sequential_uncached_calls(lm):
    contexts = random_contexts(lm, 24)
    results = await gathered(lm, contexts)
    assert lm.stats["batches"] < lm.stats["queries"]
    assert lm.stats["batches"] == 1
    shared = lm.stats["deduplicated"] + lm.stats["prefix_shared"]
    assert lm.stats["rows"] + shared >= 0.95 * len(contexts)
    assert_uncached(lm, contexts, results, 1e-5)


async def test_concurrent_extensions_of_different_cached_prefixes_share_one_forward(lm):
    contexts = random_contexts(lm, 12, seed=1)[:12]
    for c in contexts:
        lm.cache_kv(c)
    lm.reset_stats()
    rng = random.Random(2)
    ext = [
        c + [rng.randrange(lm.vocab_size) for _ in range(1 + i % 3)] for i, c in enumerate(contexts)
    ]
    ext = list({tuple(e): e for e in ext}.values())
    results = await gathered(lm, ext)
    assert lm.stats["batches"] == 1
    assert lm.stats["tokens_computed"] == sum(
        len(e) - len(c) for e, c in zip(ext, contexts, strict=False)
    )
    assert_uncached(lm, ext, results, 1e-4)


async def test_a_context_and_its_extensions_in_one_forward_share_one_row(lm):
    # a beam looking ahead asks for c+t1 and c+t1+t2 (and c+t1+t3) at once
    rng = random.Random(5)
    c = [lm.bos_token_id] + [rng.randrange(lm.vocab_size) for _ in range(6)]
    lm.cache_kv(c)
    lm.reset_stats()
    t = [rng.randrange(lm.vocab_size) for _ in range(4)]
    contexts = [c + t[:1], c + t[:2], c + t[:3], c + [t[0], t[3]], c + [t[3]]]
    results = await gathered(lm, contexts)
    assert lm.stats["batches"] == 1
    # c+t1 and c+t1+t2 ride on c+t1+t2+t3; c+t1+t4 and c+t4 compute
    assert lm.stats["prefix_shared"] == 2 and lm.stats["rows"] == 3
    assert lm.stats["tokens_computed"] == 3 + 2 + 1
    assert_uncached(lm, contexts, results, 1e-5)
    # a rider keeps no KV of its own, yet its next extension reuses the host's
    lm.reset_stats()
    ext = c + t[:2] + [t[3]]
    got = await lm.next_token_logprobs(ext)
    assert lm.stats["tokens_computed"] == 1
    close(got, lm.next_token_logprobs_uncached(ext), 1e-5)


async def test_a_context_whose_keys_are_cached_computes_its_own_row(make_lm):
    # c's keys and values are cached but not its log-probs: the row c+t starts
    # after c, so its outputs hold nothing about what follows c itself
    lm = make_lm(timeout=60.0, max_cache_logprobs=0)
    c = [lm.bos_token_id, 5, 6, 7]
    lm.cache_kv(c)
    lm.reset_stats()
    contexts = [c, c + [8]]
    results = await gathered(lm, contexts)
    assert lm.stats["prefix_shared"] == 0
    assert_uncached(lm, contexts, results, 1e-5)


async def test_prefix_sharing_never_changes_a_random_batch(lm):
    rng = random.Random(6)
    stem = [lm.bos_token_id] + [rng.randrange(lm.vocab_size) for _ in range(4)]
    lm.cache_kv(stem)
    chains = []
    for _ in range(6):  # prefix chains off the stem and off each other
        base = rng.choice([stem, *chains]) if chains else stem
        chains.append(base + [rng.randrange(8) for _ in range(rng.randrange(1, 4))])
    contexts = list({tuple(x): x for x in chains}.values())
    lm.reset_stats()
    results = await gathered(lm, contexts)
    assert lm.stats["rows"] + lm.stats["prefix_shared"] == len(contexts)
    assert_uncached(lm, contexts, results, 1e-5)


async def test_kv_cached_results_equal_uncached_over_long_incremental_runs(lm):
    rng = random.Random(3)
    prompt = [lm.bos_token_id] + [rng.randrange(lm.vocab_size) for _ in range(300)]
    lm.cache_kv(prompt)
    branches = [list(prompt) for _ in range(4)]
    for step in range(12):
        for b in branches:
            b.extend(rng.randrange(lm.vocab_size) for _ in range(1 + step % 2))
        results = await gathered(lm, branches)
        if step % 4 == 3:
            for b, got in zip(branches, results, strict=True):
                close(got, lm.next_token_logprobs_uncached(b), 1e-4)
    # Every step after the prompt ran only the new tokens.
    assert lm.stats["kv_tokens_reused"] >= 12 * 4 * len(prompt)


async def test_lru_eviction_keeps_results_exact(make_lm):
    lm = make_lm(timeout=60.0, max_cache_tokens=40, max_cache_logprobs=5)
    rng = random.Random(4)
    branches = [[lm.bos_token_id, i + 10] for i in range(3)]
    for _ in range(15):
        for b in branches:
            b.append(rng.randrange(lm.vocab_size))
        results = await gathered(lm, branches)
        assert lm.cache.kv_tokens <= 40
        assert lm.cache.n_logprobs <= 5
    assert lm.stats["evictions"] > 0
    assert_uncached(lm, branches, results, 1e-4)


def test_evictions_count_from_reset_stats_like_every_counter(make_lm):
    lm = make_lm(max_cache_tokens=8, max_cache_logprobs=2)
    for i in range(5):
        lm.next_token_logprobs_sync([lm.bos_token_id, 10 + i, 7, 8])
    assert lm.stats["evictions"] == lm.cache.evictions > 0
    lm.reset_stats()
    before = lm.cache.evictions
    lm.next_token_logprobs_sync([lm.bos_token_id, 99, 7, 8])
    assert lm.stats["evictions"] == lm.cache.evictions - before > 0


async def test_exact_cache_hit_runs_no_forward_and_clear_cache_recomputes(lm):
    ctx = [lm.bos_token_id, 5, 6, 7]
    first = await lm.next_token_logprobs(ctx)
    batches = lm.stats["batches"]
    again = await lm.next_token_logprobs(ctx)
    assert lm.stats["batches"] == batches and lm.stats["cache_hits"] == 1
    assert torch.equal(first, again)
    lm.clear_cache()
    third = await lm.next_token_logprobs(ctx)
    assert lm.stats["batches"] == batches + 1
    close(third, first, 1e-5)


def test_clear_kv_cache_forgets_keys_and_values_only(lm):
    ctx = [lm.bos_token_id, 5, 6, 7]
    lm.next_token_logprobs_sync(ctx)
    lm.clear_kv_cache()
    assert lm.cache.kv_tokens == 0
    lm.next_token_logprobs_sync(ctx)
    assert lm.stats["cache_hits"] == 1
    lm.next_token_logprobs_sync(ctx + [8])
    assert lm.stats["kv_tokens_reused"] == 0


def test_clear_kv_cache_after_extending_a_prompt_without_logprob_cache(make_lm):
    # clear_kv pruned a prompt node twice (KeyError) and left the cache half-cleared
    lm = make_lm(max_cache_logprobs=0)
    prompt = [lm.bos_token_id, 5, 6]
    lm.cache_kv(prompt)
    lm.cache_kv(prompt + [7, 8])
    lm.clear_kv_cache()
    assert lm.cache.kv_tokens == 0 and len(lm.cache) == 0
    ctx = prompt + [7, 8, 9]
    close(lm.next_token_logprobs_sync(ctx), lm.next_token_logprobs_uncached(ctx), 1e-4)


async def test_logprobs_are_normalised(lm):
    contexts = random_contexts(lm, 8)
    results = await asyncio.gather(*(lm.next_token_logprobs(c) for c in contexts))
    assert len(results) == len(contexts) >= 8
    for lp in results:
        assert lp.shape == (lm.vocab_size,) and lp.dtype == torch.float32
        assert abs(torch.logsumexp(lp.double(), 0).item()) < 1e-4


def test_sync_apis_equal_uncached(lm):
    contexts = random_contexts(lm, 6, seed=5)
    batch = lm.batch_next_token_logprobs_sync(contexts)
    single = [lm.next_token_logprobs_sync(c) for c in contexts]
    for c, row, one in zip(contexts, batch, single, strict=True):
        ref = lm.next_token_logprobs_uncached(c)
        close(row, ref, 1e-5)
        close(one, ref, 1e-5)


async def test_async_batch_api_is_one_forward(lm):
    contexts = random_contexts(lm, 6, seed=6)
    out = await lm.batch_next_token_logprobs(contexts)
    assert out.shape == (len(contexts), lm.vocab_size)
    assert lm.stats["batches"] == 1


MESSAGES = {
    "empty": "empty context",
    "outside": "outside the vocabulary",
    "negative": "outside the vocabulary",
    "non_int": "not an int",
    "string": "sequence of int",
    "too_long": "longer than the model allows",
}


def bad_contexts(lm):
    return {
        "empty": [],
        "outside": [lm.bos_token_id, lm.vocab_size + 3],
        "negative": [lm.bos_token_id, -1],
        "non_int": [lm.bos_token_id, 2.5],
        "string": "hello",
        "too_long": [lm.bos_token_id] * (lm.max_context_length + 1),
    }


async def test_bad_input_fails_alone_and_backend_keeps_working(lm):
    good = random_contexts(lm, 4, seed=7)
    bad = bad_contexts(lm)
    calls = [lm.next_token_logprobs(c) for c in good] + [
        lm.next_token_logprobs(c) for c in bad.values()
    ]
    results = await asyncio.gather(*calls, return_exceptions=True)
    for got, ctx in zip(results[: len(good)], good, strict=True):
        close(got, lm.next_token_logprobs_uncached(ctx), 1e-5)
    for got in results[len(good) :]:
        assert isinstance(got, ValueError), got
    for name, ctx in bad.items():
        with pytest.raises(ValueError, match=MESSAGES[name]):
            lm.next_token_logprobs_sync(ctx)
    assert lm.stats["batches"] >= 1
    out = await lm.next_token_logprobs(good[0] + [3])
    close(out, lm.next_token_logprobs_uncached(good[0] + [3]), 1e-5)


async def test_cancelled_caller_leaves_the_batcher_usable(lm):
    contexts = [[lm.bos_token_id, i] for i in range(5)]
    tasks = [asyncio.ensure_future(lm.next_token_logprobs(c)) for c in contexts]
    await asyncio.sleep(0)
    tasks[2].cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert isinstance(results[2], asyncio.CancelledError)
    for i in (0, 1, 3, 4):
        close(results[i], lm.next_token_logprobs_uncached(contexts[i]), 1e-5)
    out = await lm.next_token_logprobs(contexts[2])
    close(out, lm.next_token_logprobs_uncached(contexts[2]), 1e-5)


async def test_forward_error_reaches_every_caller_of_the_batch(lm, monkeypatch):
    real = lm.model.forward

    def broken(*args, **kwargs):
        raise RuntimeError("simulated out of memory")

    monkeypatch.setattr(lm.model, "forward", broken)
    calls = [lm.next_token_logprobs([lm.bos_token_id, i]) for i in range(4)]
    results = await asyncio.gather(*calls, return_exceptions=True)
    assert all(isinstance(r, RuntimeError) and "simulated" in str(r) for r in results)
    monkeypatch.setattr(lm.model, "forward", real)
    out = await lm.next_token_logprobs([lm.bos_token_id, 1])
    close(out, lm.next_token_logprobs_uncached([lm.bos_token_id, 1]), 1e-5)


async def test_reset_async_queries_cancels_waiting_callers(lm):
    task = asyncio.ensure_future(lm.next_token_logprobs([lm.bos_token_id, 9]))
    await asyncio.sleep(0)
    lm.reset_async_queries()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert lm.stats["batches"] == 0
    await lm.next_token_logprobs([lm.bos_token_id, 9])


async def test_batch_size_caps_each_forward(make_lm):
    lm = make_lm(batch_size=4, timeout=60.0)
    await asyncio.gather(*(lm.next_token_logprobs([lm.bos_token_id, i]) for i in range(10)))
    assert lm.stats["batches"] == 3 and lm.stats["max_batch_size"] == 4


async def test_sample_is_reproducible_and_stops_at_eos(lm):
    prompt = [lm.bos_token_id, 5, 6]
    a = await lm.sample(prompt, max_tokens=6, seed=11)
    b = await lm.sample(prompt, max_tokens=6, seed=11)
    assert a == b and 1 <= len(a) <= 6
    assert all(0 <= t < lm.vocab_size for t in a)
    stop = await lm.sample(prompt, max_tokens=6, eos_token_ids=[a[0]], seed=11)
    assert stop == a[:1]


@pytest.mark.slow
async def test_default_model_says_paris(default_hf):
    lm = AsyncTransformer(*default_hf)
    ids = [lm.bos_token_id] + lm.tokenizer.encode(
        "The capital of France is", add_special_tokens=False
    )
    lp = await lm.next_token_logprobs(ids)
    assert lm.str_vocab[int(lp.argmax())] == " Paris"
    close(lp, lm.next_token_logprobs_uncached(ids), 1e-4)


async def test_a_query_leaving_a_cached_path_reuses_the_shared_part_of_its_kv(lm):
    long = [lm.bos_token_id] + list(range(100, 140))
    lm.cache_kv(long)
    lm.reset_stats()
    branch = long[:25] + [7, 8]
    got = await lm.next_token_logprobs(branch)
    assert lm.stats["kv_tokens_reused"] == 25 and lm.stats["tokens_computed"] == 2
    close(got, lm.next_token_logprobs_uncached(branch), 1e-4)


async def test_kv_reuse_disabled_still_gives_the_same_results(make_lm):
    lm = make_lm(timeout=60.0, max_cache_tokens=0)
    contexts = random_contexts(lm, 8, seed=8)
    for c in contexts:
        lm.cache_kv(c)
    results = await asyncio.gather(*(lm.next_token_logprobs(c + [5]) for c in contexts))
    assert lm.stats["kv_tokens_reused"] == 0
    for c, got in zip(contexts, results, strict=True):
        close(got, lm.next_token_logprobs_uncached(c + [5]), 1e-5)


def test_str_vocab_of_another_length_than_byte_vocab_is_rejected(tiny_random_hf, vocab):
    # it was taken as is, and str_vocab[token_id] failed later, far from the cause
    with pytest.raises(ValueError, match="str_vocab has 10 tokens"):
        AsyncTransformer(*tiny_random_hf, byte_vocab=vocab[0], str_vocab=vocab[1][:10])


def test_float_batch_size_is_rejected_at_construction(make_lm):
    with pytest.raises(ValueError, match="batch_size"):
        make_lm(batch_size=2.5)


def test_sample_near_the_context_limit_stops_instead_of_raising(make_lm):
    lm = make_lm()
    limit = lm.max_context_length
    out = asyncio.run(lm.sample([lm.bos_token_id] * (limit - 1), 5, eos_token_ids=[], seed=0))
    assert len(out) == 2


def test_async_batch_of_no_contexts_is_an_empty_matrix(lm):
    assert asyncio.run(lm.batch_next_token_logprobs([])).shape == (0, lm.vocab_size)


async def test_bfloat16_weights_batch_and_cache_like_float32(vocab):
    from genlm_lab.backend.models import load_hf_model

    model, tokenizer = load_hf_model("tiny-random", device="cpu", dtype=torch.bfloat16)
    lm = AsyncTransformer(model, tokenizer, byte_vocab=vocab[0], str_vocab=vocab[1], timeout=60.0)
    contexts = random_contexts(lm, 10, seed=5)
    for c in contexts[:4]:
        lm.cache_kv(c)
    extended = [c + [7] for c in contexts]
    results = await gathered(lm, extended)
    assert lm.stats["kv_tokens_reused"] > 0 and lm.stats["batches"] == 1 + 4
    for c, got in zip(extended, results, strict=True):
        assert got.dtype == torch.float32  # log-probs come back in float32 whatever the weights
        close(got, lm.next_token_logprobs_uncached(c), 2e-2)


def test_a_transformer_is_shared_not_copied_by_deepcopy(lm):
    """Programs keep their LM in attributes; SMC deep-copies programs (the LM holds locks)."""
    import copy

    assert copy.deepcopy([lm])[0] is lm


@pytest.mark.gpu
async def test_on_cuda_gathered_queries_equal_the_cpu_forward(vocab, make_lm):
    """The same weights on CUDA: one batched forward, KV reuse, and the CPU's log-probs."""
    from genlm_lab.backend.models import load_hf_model

    model, tokenizer = load_hf_model("tiny-random", device="cuda")
    gpu = AsyncTransformer(model, tokenizer, byte_vocab=vocab[0], str_vocab=vocab[1], timeout=60.0)
    cpu = make_lm()
    contexts = random_contexts(gpu, 12, seed=3)
    for c in contexts[:3]:
        gpu.cache_kv(c)
    results = await gathered(gpu, contexts)
    assert gpu.stats["batches"] == 1 + 3
    for c, got in zip(contexts, results, strict=True):
        close(got.cpu(), cpu.next_token_logprobs_uncached(c).cpu(), 1e-4)
