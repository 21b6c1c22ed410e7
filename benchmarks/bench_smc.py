"""SMC on the default model: the "no letter e" lipogram, ours vs PyPI llamppl 0.2.3.

Both sides run the same program (prompt "Write a sentence about the sea:";
each step observes that the next token avoids e/E, then samples it; 20
tokens; SMC with ESS threshold 0.5) on the same HF model object. llamppl runs
its `LMContext` over `CachedCausalLM(genlm.backend AsyncTransformer(...))`.
A forward hook on the shared HF model counts model calls and their batch
sizes for both sides alike.

Rows: wall time at 16 particles (and the throughput ratio), model forwards,
mean realised batch size, log_ml mean and spread over repeated runs, and our
wall time at 1, 8 and 32 particles (particles must batch: 8 particles within
1.5x the time of 1, 32 within 3x).

The model floor: each run's forwards (rows, new and cached tokens, as the hook
saw them) are replayed as plain HF calls on prepared caches. No implementation
that makes those forwards can be faster, so llamppl's wall over our floor is
the largest ratio this machine allows, and the floors at 1, 8 and 32 particles
say how well the model itself batches.

Run: `python benchmarks/bench_smc.py` (set HF_HUB_OFFLINE=1; loads the model).
"""

from __future__ import annotations

import asyncio
import math
import os
import statistics
import time
from typing import Any

import numpy as np

PROMPT = "Write a sentence about the sea:"
N_TOKENS = 20
N_PARTICLES = 16
REPEATS = int(os.environ.get("BENCH_SMC_REPEATS", "3"))


class ForwardCounter:
    """Counts forward calls of an HF model and the batch size of each."""

    def __init__(self, hf_model: Any) -> None:
        self.sizes: list[int] = []
        self.shapes: list[tuple[int, int, int]] = []  # (rows, new tokens, cached tokens)
        self._handle = hf_model.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, module: Any, args: tuple, kwargs: dict) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is None:
            ids = kwargs.get("inputs_embeds")
        self.sizes.append(int(ids.shape[0]) if ids is not None else 1)
        past = kwargs.get("past_key_values")
        n_past = int(past.get_seq_length()) if past is not None else 0
        if ids is not None:
            self.shapes.append((int(ids.shape[0]), int(ids.shape[1]), n_past))

    def reset(self) -> None:
        self.sizes = []
        self.shapes = []

    def close(self) -> None:
        self._handle.remove()


def _llamppl_lipogram(lm: Any, mask_ids: set[int], eos_id: int) -> Any:
    import llamppl

    class NoLetterE(llamppl.Model):
        def __init__(self) -> None:
            super().__init__()
            self.context = llamppl.LMContext(lm, PROMPT)
            self.mask = mask_ids

        def immutable_properties(self) -> set[str]:
            return {"mask"}

        async def step(self) -> None:
            await self.observe(self.context.mask_dist(self.mask), True)
            token = await self.sample(self.context.next_token())
            if token.token_id == eos_id or self.context.token_count >= N_TOKENS:
                self.finish()

        def string_for_serialization(self) -> str:
            return str(self.context)

    return NoLetterE()


def _logmeanexp(ws: list[float]) -> float:
    arr = np.asarray(ws, dtype=np.float64)
    top = arr.max()
    if not np.isfinite(top):
        return -math.inf
    return float(top + np.log(np.mean(np.exp(arr - top))))


async def _ours(lm: Any, counter: ForwardCounter, n: int, seed: int) -> dict:
    from genlm_lab.smc import smc_standard
    from genlm_lab.smc.examples import Lipogram

    lm.clear_cache()
    lm.reset_stats()
    counter.reset()
    model = Lipogram(lm, PROMPT, max_tokens=N_TOKENS)
    start = time.perf_counter()
    result = await smc_standard(model, n, ess_threshold=0.5, seed=seed)
    wall = time.perf_counter() - start
    return {
        "wall": wall,
        "forwards": len(counter.sizes),
        "shapes": list(counter.shapes),
        "mean_batch": float(np.mean(counter.sizes)) if counter.sizes else 0.0,
        "max_batch": max(counter.sizes, default=0),
        "log_ml": result.log_ml,
        "ok": all(p.satisfied() for p in result),
    }


async def _theirs(
    llm: Any, counter: ForwardCounter, mask_ids: set[int], eos_id: int, n: int, seed: int
) -> dict:
    import llamppl

    llm.clear_cache()
    counter.reset()
    np.random.seed(seed)
    model = _llamppl_lipogram(llm, mask_ids, eos_id)
    start = time.perf_counter()
    particles = await llamppl.smc_standard(model, n, 0.5)
    wall = time.perf_counter() - start
    texts = [str(p.context) for p in particles]
    return {
        "wall": wall,
        "forwards": len(counter.sizes),
        "mean_batch": float(np.mean(counter.sizes)) if counter.sizes else 0.0,
        "max_batch": max(counter.sizes, default=0),
        "log_ml": _logmeanexp([p.weight for p in particles]),
        "ok": all("e" not in t.replace("<|im_end|>", "").lower() for t in texts),
    }


def _spread(values: list[float]) -> str:
    finite = [v for v in values if math.isfinite(v)]
    if len(finite) < 2:
        return f"{finite[0]:.2f}" if finite else "-inf"
    return f"{statistics.mean(finite):.2f} ± {statistics.stdev(finite):.2f}"


def _fixed_table(vocab_size: int, size: int = 8) -> list[Any]:
    """A few fixed log-prob vectors (float32 tensors), so mock LMs cost nothing per query."""
    import torch

    rng = np.random.default_rng(0)
    out = []
    for _ in range(size):
        logits = rng.normal(scale=2.0, size=vocab_size)
        logits -= logits.max() + np.log(np.exp(logits - logits.max()).sum())
        out.append(torch.from_numpy(logits.astype(np.float32)))
    return out


async def _overhead(tokenizer: Any, mask_ids: set[int], eos_id: int) -> tuple[float, float]:
    """Seconds per particle-step of everything but the model.

    Both sides run the same program over mock LMs that return one of a few
    fixed log-prob tensors (chosen by context length) without any computation.
    """
    from genlm.backend.llm import MockAsyncLM as TheirMock
    from llamppl import CachedCausalLM
    from llamppl import smc_standard as their_smc

    from genlm_lab.backend import MockAsyncLM
    from genlm_lab.smc import smc_standard
    from genlm_lab.smc.examples import Lipogram

    class OurFixed(MockAsyncLM):
        async def next_token_logprobs(self, token_ids):
            return table[len(token_ids) % len(table)]

    class TheirFixed(TheirMock):
        async def next_token_logprobs(self, token_ids, lora_name=None):
            return table[len(token_ids) % len(table)]

        def next_token_logprobs_sync(self, token_ids, lora_name=None):
            return table[len(token_ids) % len(table)]

    ours_lm = OurFixed(tokenizer=tokenizer)
    table = _fixed_table(ours_lm.vocab_size)
    n, steps = N_PARTICLES, N_PARTICLES * N_TOKENS
    model = Lipogram(ours_lm, PROMPT, max_tokens=N_TOKENS)
    start = time.perf_counter()
    await smc_standard(model, n, seed=0)
    ours = (time.perf_counter() - start) / steps
    their_lm = CachedCausalLM(TheirFixed(tokenizer))
    np.random.seed(0)
    model = _llamppl_lipogram(their_lm, mask_ids, eos_id)
    start = time.perf_counter()
    await their_smc(model, n, 0.5)
    theirs = (time.perf_counter() - start) / steps
    return ours, theirs


def _replay_floor(hf_model: Any, shapes: list[tuple[int, int, int]], reps: int = 2) -> float:
    """Seconds the bare model takes for the same forwards: same rows, new and cached tokens.

    Each recorded forward is replayed as one plain HF call on a prepared
    DynamicCache of that length (no Python around it, logits of the last
    position only). Any implementation that makes these forwards pays at least
    this, so llamppl's wall over it is the largest throughput ratio this
    machine allows.
    """
    import torch
    from transformers import DynamicCache

    config = hf_model.config
    heads = config.num_key_value_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    best = math.inf
    with torch.no_grad():
        for _ in range(reps):
            total = 0.0
            for rows, new, n_past in shapes:
                kwargs: dict[str, Any] = {"use_cache": True, "logits_to_keep": 1}
                if n_past:
                    kv = torch.randn(rows, heads, n_past, head_dim) * 0.1
                    layers = [(kv, kv.clone()) for _ in range(config.num_hidden_layers)]
                    kwargs["past_key_values"] = DynamicCache(ddp_cache_data=layers)
                ids = torch.randint(0, config.vocab_size, (rows, new))
                kwargs["attention_mask"] = torch.ones(rows, n_past + new, dtype=torch.long)
                start = time.perf_counter()
                hf_model(input_ids=ids, **kwargs)
                total += time.perf_counter() - start
            best = min(best, total)
    return best


async def _main() -> list[dict]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from genlm.backend.llm import AsyncTransformer as TheirTransformer
    from llamppl import CachedCausalLM

    from genlm_lab.backend import load_model_by_name
    from genlm_lab.smc.examples import Lipogram

    lm = load_model_by_name("smollm2-135m", backend="hf")
    hf_model, tokenizer = lm.model, lm.tokenizer
    their_llm = CachedCausalLM(TheirTransformer(hf_model, tokenizer))
    mask_ids = {int(i) for i in np.flatnonzero(Lipogram(lm, PROMPT).mask)}
    eos_id = lm.eos_token_ids[0]
    counter = ForwardCounter(hf_model)
    ours, theirs, scaling = [], [], {1: [], 8: [], 32: []}
    try:
        await _ours(lm, counter, 2, seed=99)  # warm-up: first forwards are slower
        # Interleaved repeats; the minimum wall time is the least disturbed by other load.
        for r in range(REPEATS):
            ours.append(await _ours(lm, counter, N_PARTICLES, seed=r))
            theirs.append(await _theirs(their_llm, counter, mask_ids, eos_id, N_PARTICLES, seed=r))
            for n in scaling:
                scaling[n].append(await _ours(lm, counter, n, seed=7 + r))
    finally:
        counter.close()
    overhead_ours, overhead_theirs = await _overhead(tokenizer, mask_ids, eos_id)
    fastest = min(ours, key=lambda r: r["wall"])
    best_scaling = {n: min(runs, key=lambda r: r["wall"]) for n, runs in scaling.items()}
    try:
        model_floor = _replay_floor(hf_model, fastest["shapes"])
        floor = {n: _replay_floor(hf_model, r["shapes"]) for n, r in best_scaling.items()}
    except Exception as error:  # context only; never fail the benchmark on it
        print(f"model floor not measured: {error}")
        model_floor, floor = math.nan, {}

    ours_wall = min(r["wall"] for r in ours)
    theirs_wall = min(r["wall"] for r in theirs)
    o, t = ours[0], theirs[0]
    name = "smc_lipogram"
    rows = [
        {
            "benchmark": name,
            "metric": f"wall s, {N_PARTICLES} particles x {N_TOKENS} tokens",
            "ours": ours_wall,
            "baseline": theirs_wall,
            "ratio": theirs_wall / ours_wall,
            "target": ">= 5x throughput",
            "met": theirs_wall / ours_wall >= 5,
            "note": "best of "
            f"{REPEATS}; baseline: llamppl 0.2.3 LMContext over CachedCausalLM(genlm-backend "
            "AsyncTransformer) on the same HF model",
        },
        {
            "benchmark": name,
            "metric": "model floor: the same forwards on the bare model (s)",
            "ours": ours_wall,
            "baseline": model_floor,
            "ratio": ours_wall / model_floor,
            "target": "",
            "met": None,
            "note": f"our fastest run's {len(fastest['shapes'])} forwards (rows, new and cached "
            "tokens) replayed as plain HF calls; the most any implementation of these forwards "
            f"could reach over llamppl here: {theirs_wall / model_floor:.2f}x",
        },
        {
            "benchmark": name,
            "metric": "model forward calls",
            "ours": o["forwards"],
            "baseline": t["forwards"],
            "ratio": t["forwards"] / max(o["forwards"], 1),
            "target": "",
            "met": None,
            "note": "counted by a forward hook on the shared HF model",
        },
        {
            "benchmark": name,
            "metric": "mean realised batch size",
            "ours": o["mean_batch"],
            "baseline": t["mean_batch"],
            "ratio": o["mean_batch"] / max(t["mean_batch"], 1e-9),
            "target": "",
            "met": None,
            "note": f"max batch: ours {o['max_batch']}, llamppl {t['max_batch']}",
        },
        {
            "benchmark": name,
            "metric": "non-model s per particle-step (mock LM)",
            "ours": overhead_ours,
            "baseline": overhead_theirs,
            "ratio": overhead_theirs / overhead_ours,
            "target": "",
            "met": None,
            "note": "same program over a mock LM returning fixed log-probs (SmolLM2 vocabulary)",
        },
        {
            "benchmark": name,
            "metric": "log_ml (mean ± sd over runs)",
            "ours": _spread([r["log_ml"] for r in ours]),
            "baseline": _spread([r["log_ml"] for r in theirs]),
            "ratio": None,
            "target": "agree within spread",
            "met": None,
            "note": f"{REPEATS} runs each; constraint held: ours {all(r['ok'] for r in ours)}, "
            f"llamppl {all(r['ok'] for r in theirs)}",
        },
    ]
    one = best_scaling[1]["wall"]
    for n, limit in ((8, 1.5), (32, 3.0)):
        best = best_scaling[n]
        ratio = best["wall"] / one
        rows.append(
            {
                "benchmark": name,
                "metric": f"wall s, {n} particles vs 1 (ours)",
                "ours": best["wall"],
                "baseline": one,
                "ratio": ratio,
                "target": f"<= {limit}x",
                "met": ratio <= limit,
                "note": f"best of {REPEATS}; mean batch {best['mean_batch']:.1f}, "
                f"{best['forwards']} forwards; the same forwards on the bare model, {n} vs 1: "
                + (f"{floor[n] / floor[1]:.2f}x" if floor else "n/a"),
            }
        )
    return rows


def run() -> list[dict]:
    """Run the benchmark and return its rows (see module docstring)."""
    return asyncio.run(_main())


if __name__ == "__main__":
    for row in run():
        print(
            f"{row['metric']:<42} ours={row['ours']!s:<22} baseline={row['baseline']!s:<22} "
            f"ratio={row['ratio']!s:<8} target={row['target']} met={row['met']}  {row['note']}"
        )
