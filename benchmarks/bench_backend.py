"""AsyncTransformer on the default model (SmolLM2-135M, CPU): batching, KV reuse, overhead.

Every ratio is measured side by side in one run, alternating the two sides
and taking medians so that a busy machine slows both alike.

    python benchmarks/bench_backend.py
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import time

import torch
from _row import result_row

REPS = 5


def _paired(ours: list[float], base: list[float]) -> float:
    """Median of per-pair ratios: each pair ran back to back, so load drift cancels."""
    return statistics.median(o / b for o, b in zip(ours, base, strict=True))


N_CONTEXTS = 32


def _row(metric, ours, baseline, ratio, target, met, note):
    return result_row("backend", metric, ours, baseline, ratio, target, met, note)


def _bare_forward(model, ids: list[list[int]], past_kv) -> float:
    """Seconds for one plain HF forward of `ids` (rows) on top of a prepared DynamicCache."""
    from transformers import DynamicCache

    cache = DynamicCache(ddp_cache_data=past_kv)  # prepared outside the timer
    x = torch.tensor(ids)
    start = time.perf_counter()
    with torch.inference_mode():
        logits = model(x, past_key_values=cache, use_cache=True, logits_to_keep=1).logits
        torch.log_softmax(logits[:, -1].float(), dim=-1)
    return time.perf_counter() - start


def _stacked_past(lm, contexts: list[list[int]]) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The cached keys and values of equal-length contexts as one batch, per layer."""
    kv = torch.stack(
        [torch.cat(lm.cache.longest_kv(None, c, len(c)).pieces(), dim=-2) for c in contexts],
        dim=2,
    )
    return [(kv[i, 0], kv[i, 1]) for i in range(kv.shape[0])]


async def _bench(lm) -> list[dict]:
    rng = random.Random(0)
    vocab = lm.vocab_size
    bos = lm.bos_token_id
    rows = []

    # 1. 32 concurrent one-token extensions of 32 cached contexts vs the same one by one.
    contexts = [[bos] + [rng.randrange(vocab) for _ in range(24)] for _ in range(N_CONTEXTS)]
    for c in contexts:
        lm.cache_kv(c)
    seq_times, batch_times, realised = [], [], []
    for _ in range(REPS):
        seq_ext = [c + [rng.randrange(vocab)] for c in contexts]
        start = time.perf_counter()
        for e in seq_ext:
            await lm.next_token_logprobs(e)
        seq_times.append(time.perf_counter() - start)
        conc_ext = [c + [rng.randrange(vocab)] for c in contexts]
        lm.reset_stats()
        start = time.perf_counter()
        await asyncio.gather(*(lm.next_token_logprobs(e) for e in conc_ext))
        batch_times.append(time.perf_counter() - start)
        realised.append(lm.stats["max_batch_size"] / N_CONTEXTS)
    seq, conc = statistics.median(seq_times), statistics.median(batch_times)
    rows.append(
        _row(
            "throughput: 32 concurrent vs sequential one-token extensions (x)",
            f"{conc * 1e3:.0f} ms",
            f"{seq * 1e3:.0f} ms",
            1 / _paired(batch_times, seq_times),
            ">= 8",
            1 / _paired(batch_times, seq_times) >= 8,
            "32 different cached 25-token contexts; baseline = same calls awaited one by one",
        )
    )
    ratio = min(realised)
    rows.append(
        _row(
            "realised batch size / concurrent callers",
            ratio * N_CONTEXTS,
            N_CONTEXTS,
            ratio,
            ">= 0.95",
            ratio >= 0.95,
            "largest forward per gather (worst of the reps)",
        )
    )

    # The model's own ceiling: one forward of 32 rows vs one of a single row, same pasts.
    past32, past1 = _stacked_past(lm, contexts), _stacked_past(lm, contexts[:1])
    one, many = [], []
    for _ in range(REPS):
        one.append(_bare_forward(lm.model, [[rng.randrange(vocab)]], past1))
        many.append(_bare_forward(lm.model, [[rng.randrange(vocab)] for _ in contexts], past32))
    ceiling = N_CONTEXTS / _paired(many, one)
    rows.append(
        _row(
            "bare model: 32 one-token rows in one forward vs one row (x, ceiling)",
            f"{statistics.median(many) * 1e3:.0f} ms",
            f"{statistics.median(one) * 1e3 * N_CONTEXTS:.0f} ms",
            ceiling,
            None,
            None,
            "what batching can gain at best on this machine (no cache, no Python around it)",
        )
    )

    # Side by side: genlm-backend's AsyncTransformer on the same concurrent extensions.
    theirs = _genlm_backend(lm)
    if theirs is not None:
        for c in contexts:
            theirs.cache_kv(c)
        their_times, our_times = [], []
        for _ in range(REPS):
            ext = [c + [rng.randrange(vocab)] for c in contexts]
            start = time.perf_counter()
            await asyncio.gather(*(theirs.next_token_logprobs(e) for e in ext))
            their_times.append(time.perf_counter() - start)
            ext = [c + [rng.randrange(vocab)] for c in contexts]
            start = time.perf_counter()
            await asyncio.gather(*(lm.next_token_logprobs(e) for e in ext))
            our_times.append(time.perf_counter() - start)
        t_theirs, t_ours = statistics.median(their_times), statistics.median(our_times)
        rows.append(
            _row(
                "32 concurrent extensions: genlm-backend time / ours",
                f"{t_ours * 1e3:.0f} ms",
                f"{t_theirs * 1e3:.0f} ms",
                t_theirs / t_ours,
                ">= 1",
                t_theirs >= t_ours,
                (
                    "genlm-backend 0.3.1 AsyncTransformer, same model object, batch_size=32; "
                    "with transformers 5.x its batch re-ran the whole 26-token contexts"
                ),
            )
        )

    # 2-4. A 200-token cached context: extension, overhead and exact hits.
    ctx = [bos] + [rng.randrange(vocab) for _ in range(199)]
    lm.cache_kv(ctx)
    handle = lm.cache.longest_kv(None, ctx, len(ctx))
    kv = torch.cat(handle.pieces(), dim=-2)
    past = [(kv[i, 0][None], kv[i, 1][None]) for i in range(kv.shape[0])]

    async def extend() -> float:
        ext = ctx + [rng.randrange(vocab)]
        start = time.perf_counter()
        await lm.next_token_logprobs(ext)
        return time.perf_counter() - start

    ext_times, full_times, bare_times, hit_times, cached_times = [], [], [], [], []
    for _ in range(REPS * 2):  # cached extension vs recomputing the whole context
        ext_times.append(await extend())
        start = time.perf_counter()
        lm.next_token_logprobs_uncached(ctx + [rng.randrange(vocab)])
        full_times.append(time.perf_counter() - start)
    for _ in range(REPS * 8):  # cached extension vs a bare forward, alternating
        cached_times.append(await extend())
        bare_times.append(_bare_forward(lm.model, [[rng.randrange(vocab)]], past))
    ext = ctx + [rng.randrange(vocab)]
    await lm.next_token_logprobs(ext)
    for _ in range(REPS * 4):  # exact cache hits
        start = time.perf_counter()
        for _ in range(100):
            await lm.next_token_logprobs(ext)
        hit_times.append((time.perf_counter() - start) / 100)
    ext_t, full_t = statistics.median(ext_times), statistics.median(full_times)
    bare_t, hit_t = statistics.median(bare_times), statistics.median(hit_times)
    cached_t = statistics.median(cached_times)
    rows.append(
        _row(
            "KV reuse: extend a 200-token cached context by 1 token / recompute",
            f"{ext_t * 1e3:.1f} ms",
            f"{full_t * 1e3:.1f} ms",
            _paired(ext_times, full_times),
            "<= 0.10",
            _paired(ext_times, full_times) <= 0.10,
            "baseline = next_token_logprobs_uncached (one plain forward of 201 tokens); "
            f"the model's own floor here (bare 1-token forward / recompute): {bare_t / full_t:.3f}",
        )
    )
    rows.append(
        _row(
            "overhead: cached-context call / bare model forward",
            f"{cached_t * 1e3:.1f} ms",
            f"{bare_t * 1e3:.1f} ms",
            _paired(cached_times, bare_times),
            "<= 1.10",
            _paired(cached_times, bare_times) <= 1.10,
            "bare = model(1 token, prepared DynamicCache of the 200 tokens) + log_softmax",
        )
    )
    rows.append(
        _row(
            "exact cache hit / forward",
            f"{hit_t * 1e6:.0f} us",
            f"{bare_t * 1e3:.1f} ms",
            hit_t / bare_t,
            "< 0.01",
            hit_t / bare_t < 0.01,
            "201-token context already computed; includes validation and trie walk",
        )
    )
    return rows


def _genlm_backend(lm):
    """genlm-backend's AsyncTransformer over the same model, or None if not installed."""
    try:
        from genlm.backend.llm import AsyncTransformer as TheirTransformer
    except ImportError:
        return None
    return TheirTransformer(lm.model, lm.tokenizer, batch_size=N_CONTEXTS, timeout=0.02)


def _threads() -> int:
    """Torch threads: the core count, or 1 on a machine already busier than its cores.

    On an oversubscribed CPU, OpenMP threads wait on each other at every
    barrier and a forward can take 10x longer; one thread stays predictable.
    `GENLM_BENCH_THREADS` overrides the choice.
    """
    if "GENLM_BENCH_THREADS" in os.environ:
        return int(os.environ["GENLM_BENCH_THREADS"])
    cores = os.cpu_count() or 1
    return 1 if os.getloadavg()[0] > cores else cores


def run() -> list[dict]:
    """Rows for benchmarks/RESULTS.md (see benchmarks/run_all.py)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    threads = _threads()
    torch.set_num_threads(threads)
    from genlm_lab.backend.hf import AsyncTransformer
    from genlm_lab.backend.models import load_hf_model

    model, tokenizer = load_hf_model("default", device="cpu")
    lm = AsyncTransformer(model, tokenizer, timeout=1.0)
    rows = asyncio.run(_bench(lm))
    for r in rows:
        r["note"] += f"; {threads} torch thread(s)"
    return rows


if __name__ == "__main__":
    for r in run():
        print(
            f"{r['metric']:<70} ours={r['ours']!s:>10} base={r['baseline']!s:>10} "
            f"ratio={r['ratio']:.3g} target {r['target'] or '-'} "
            f"{'' if r['met'] is None else 'ok' if r['met'] else 'MISSED'}"
        )
