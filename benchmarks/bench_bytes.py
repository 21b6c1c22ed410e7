"""Byte-level beam on the default model: ours vs PyPI genlm-bytes vs the token-level floor.

One process, one HF model object (SmolLM2-135M on CPU), the 74-byte text below
read with `logp_next` at every byte and K=5:

- genlm-bytes 0.2.0 (PyPI) on genlm-backend's AsyncTransformer over the same
  HF model, fresh caches;
- ours (`genlm_lab.bytes.ByteBeamState`) on our AsyncTransformer, fresh
  LM caches, trie built beforehand (its build time, with the load of our numba
  kernels, is added to our wall in the throughput ratio only; numba's one-off
  runtime start-up is timed apart and reported, not charged), with `extend_threshold=0.01` (extensions whose summed weight is at
  most 1% of the beam are not evaluated) and, as a check, with 0 (every
  extension evaluated, the genlm-bytes semantics) and at the larger thresholds
  in `SWEEP_EPS` (the tokens-vs-logZ trade-off);
- the floor: the canonical tokenization scored token by token with the KV
  cache, one forward per token.

Time inside the model forward is measured with forward hooks on the HF model.

Where the tokens go (issue #4): the canonical tokenization needs 17 forwards
(BOS + 16 tokens). With this model, text and K, the final beam also holds the
non-canonical " Mont|real" path, with about two thirds of the mass; matching
genlm-bytes' logZ needs it, and it costs 7 more tokens (" Mont", " Mont|real",
then " is", " a", " city", " in", " Canada" a second time): 24 tokens is the
floor for the logZ check ("needed" below: distinct token prefixes of the final
candidates). The other extensions only serve `logp_next`: their share of the
beam when the next-byte distribution is asked for is up to 0.54 (" jump|" before
the "s"), and they die one or two bytes later. A threshold on that share that
keeps " Mont|" (0.147 at that byte) keeps them too, so 28 tokens is the least
any share rule reaches here (`extend_threshold` 0.12); at 0.15 " Mont|" is
skipped and logZ falls by 1.09 nats.
Run as a script (`python benchmarks/bench_bytes.py`) or through run_all.py.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

TEXT = b"The quick brown fox jumps over the lazy dog. Montreal is a city in Canada."
K = 5
EPS = 0.01
SWEEP_EPS = (0.05, 0.1, 0.12, 0.15)
REPS = 3


class ForwardTimer:
    """Wall time spent inside `hf_model.forward` (outermost calls only)."""

    def __init__(self, hf_model):
        self.total = 0.0
        self.calls = 0
        self._start = None
        hf_model.register_forward_pre_hook(self._pre)
        hf_model.register_forward_hook(self._post)

    def _pre(self, *_):
        self._start = time.perf_counter()

    def _post(self, *_):
        self.total += time.perf_counter() - self._start
        self.calls += 1

    def reset(self):
        self.total, self.calls = 0.0, 0


def floor(hf_model, ids: list[int]) -> tuple[float, float, int]:
    """Score ids[1:] given ids[0] (BOS) one token per forward with the KV cache."""
    import torch

    past, logp = None, 0.0
    start = time.perf_counter()
    with torch.inference_mode():
        for i in range(len(ids) - 1):
            out = hf_model(input_ids=torch.tensor([[ids[i]]]), past_key_values=past, use_cache=True)
            past = out.past_key_values
            logp += float(torch.log_softmax(out.logits[0, -1].double(), -1)[ids[i + 1]])
    return time.perf_counter() - start, logp, len(ids) - 1


def start_numba_runtime() -> float:
    """Seconds numba takes to start its compiler runtime, paid once per process.

    The first jitted call of any library in a process loads numba's typing and
    lowering registries (about half a second here), whatever the function. It is
    a start-up cost like importing torch, which neither side is charged; our
    own kernels' load from numba's disk cache stays in the trie build time.
    """
    import numba

    start = time.perf_counter()
    numba.njit(lambda x: x + 1)(1)
    return time.perf_counter() - start


async def read_text(beam, text: bytes):
    """The benchmark loop: prune, next-byte distribution, read the byte."""
    for b in text:
        beam = beam.prune()
        await beam.logp_next()
        beam = await (beam << b)
    return beam


async def ours(lm, k: int, eps: float) -> dict:
    from genlm_lab.bytes import BeamParams, ByteBeamState

    lm.clear_cache()
    lm.reset_stats()
    start = time.perf_counter()
    beam = await ByteBeamState.initial(lm, BeamParams(K=k, extend_threshold=eps))
    beam = await read_text(beam, TEXT)
    wall = time.perf_counter() - start
    await beam.cleanup()
    return {
        "wall": wall,
        "logZ": beam.logZ,
        "tokens": lm.stats["tokens_computed"],
        "batches": lm.stats["batches"],
        "needed": needed_tokens(beam),
    }


def needed_tokens(beam, tol: float = 0.02) -> int:
    """Forwards any beam must run to reach this logZ within `tol` nats.

    The heaviest final candidates whose dropped rest costs at most `tol` nats
    are kept; each distinct token prefix of theirs (BOS alone included) is one
    forward that produced their weights.
    """
    rows = sorted(beam.last_step.candidates, key=lambda r: -r.share)
    kept, total = [], 0.0
    for r in rows:
        if total > 0 and np.log(total) >= -tol:
            break
        kept.append(r)
        total += r.share
    return len({tuple(r.token_ids[:i]) for r in kept for i in range(len(r.token_ids) + 1)})


async def theirs(hf_model, hf_tokenizer) -> dict:
    from genlm.backend.llm import AsyncTransformer as TheirTransformer
    from genlm.bytes import BeamParams as TheirParams
    from genlm.bytes import ByteBeamState as TheirBeam

    llm = TheirTransformer(hf_model, hf_tokenizer)
    start = time.perf_counter()
    beam = await TheirBeam.initial(llm, TheirParams(K=K))
    beam = await read_text(beam, TEXT)
    wall = time.perf_counter() - start
    await beam.cleanup()
    return {"wall": wall, "logZ": float(beam.logZ)}


def run() -> list[dict]:
    import torch

    from genlm_lab.backend import load_model_by_name

    torch.manual_seed(0)
    lm = load_model_by_name("smollm2-135m")
    hf_model, tok = lm.model, lm.tokenizer
    timer = ForwardTimer(hf_model)
    ids = [lm.bos_token_id, *tok.encode(TEXT.decode(), add_special_tokens=False)]
    floor(hf_model, ids[:3])  # warm up kernels
    # Our trie is built once per model (like loading the model); time it apart and
    # charge it to our wall only in the throughput ratio, where genlm-bytes'
    # wall also includes building its trie.
    from genlm_lab.bytes._tries import trie_for

    numba_startup = start_numba_runtime()
    start = time.perf_counter()
    trie = trie_for(lm, [], None)
    trie.trie.weight_sum(np.ones(lm.vocab_size))  # load the numba kernels
    trie_build = time.perf_counter() - start
    # On a shared machine single timings drift: our run is repeated REPS times,
    # each between two floor measurements, and medians are compared.
    floors = [floor(hf_model, ids)]
    floor_logp, floor_tokens = floors[0][1], floors[0][2]
    runs, shares = [], []
    for _ in range(REPS):
        timer.reset()
        runs.append(asyncio.run(ours(lm, K, EPS)))
        shares.append(timer.total / runs[-1]["wall"])
        floors.append(floor(hf_model, ids))
    walls = sorted(r["wall"] for r in runs)
    mine = dict(runs[0], wall=statistics.median(walls))
    mine_share = statistics.median(shares)
    floor_walls = sorted(f[0] for f in floors)
    floor_wall = statistics.median(floor_walls)
    timer.reset()
    base = asyncio.run(theirs(hf_model, tok))
    their_share = timer.total / base["wall"]
    sweep = {k: asyncio.run(ours(lm, k, EPS))["logZ"] for k in range(1, 9)}
    exact = asyncio.run(ours(lm, K, 0.0))
    trade = {eps: asyncio.run(ours(lm, K, eps)) for eps in SWEEP_EPS}

    n = len(TEXT)
    name = "bytes: beam K=5, logp_next every byte, 74 bytes, SmolLM2-135M CPU"
    cold = mine["wall"] + trie_build
    speedup = base["wall"] / cold
    charged = base["wall"] / (cold + numba_startup)
    rows = [
        {
            "metric": "throughput (bytes/s), ours over genlm-bytes 0.2.0",
            "ours": n / cold,
            "baseline": n / base["wall"],
            "ratio": speedup,
            "target": ">= 8",
            "met": speedup >= 8,
            "note": f"walls {cold:.2f} s (incl. {trie_build:.2f} s trie build) vs {base['wall']:.2f} s; "
            f"extend_threshold={EPS}; numba's runtime start-up ({numba_startup:.2f} s, once per "
            f"process, like imports) not charged: {charged:.2f}x with it",
        },
        {
            "metric": "logZ, ours minus genlm-bytes (nats)",
            "ours": mine["logZ"],
            "baseline": base["logZ"],
            "ratio": mine["logZ"] - base["logZ"],
            "target": "|diff| <= 0.02",
            "met": abs(mine["logZ"] - base["logZ"]) <= 0.02,
            "note": f"ours with extend_threshold=0: {exact['logZ']:.4f}; floor (canonical) {floor_logp:.4f}",
        },
        {
            "metric": "wall time over the floor (canonical tokens, one forward each)",
            "ours": mine["wall"],
            "baseline": floor_wall,
            "ratio": mine["wall"] / floor_wall,
            "target": "<= 2.5",
            "met": mine["wall"] / floor_wall <= 2.5,
            "note": f"{mine['batches']} batched forwards vs {floor_tokens}; medians: ours of "
            f"{[round(w, 2) for w in walls]}, floor of {[round(w, 2) for w in floor_walls]}",
        },
        {
            "metric": "tokens evaluated in the model over the canonical count",
            "ours": mine["tokens"],
            "baseline": floor_tokens,
            "ratio": mine["tokens"] / floor_tokens,
            "target": "<= 1.5",
            "met": mine["tokens"] / floor_tokens <= 1.5,
            "note": f"extend_threshold={EPS}; needed for this logZ: {mine['needed']} "
            f"(distinct token prefixes of the final candidates); "
            f"extend_threshold=0: {exact['tokens']} tokens in {exact['batches']} forwards, "
            f"{exact['wall']:.2f} s",
        },
        {
            "metric": "share of wall time inside the model forward",
            "ours": mine_share,
            "baseline": their_share,
            "ratio": mine_share / their_share if their_share else None,
            "target": ">= 0.7",
            "met": mine_share >= 0.7,
            "note": "median of our runs, trie prebuilt; baseline column: genlm-bytes' share",
        },
        {
            "metric": "tokens evaluated vs extend_threshold (logZ minus genlm-bytes)",
            "ours": mine["tokens"],
            "baseline": None,
            "ratio": None,
            "target": "report",
            "met": None,
            "note": ", ".join(
                f"{eps}: {r['tokens']} ({r['logZ'] - base['logZ']:+.3f})"
                for eps, r in [(EPS, mine), *trade.items()]
            ),
        },
        {
            "metric": "logZ for K = 1..8",
            "ours": sweep[K],
            "baseline": None,
            "ratio": None,
            "target": "report",
            "met": None,
            "note": ", ".join(f"K={k}: {v:.4f}" for k, v in sweep.items()),
        },
    ]
    for row in rows:
        row["benchmark"] = name
    return rows


if __name__ == "__main__":
    for row in run():
        print(
            f"{row['metric']:<66} ours={row['ours']!s:<22.22} base={row['baseline']!s:<14.14} "
            f"ratio={row['ratio']!s:<10.8} target={row['target']} met={row['met']}  {row['note']}"
        )
