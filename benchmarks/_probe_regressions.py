"""Probes for bisecting issue #33's two regressions, run by `compare.py --script`.

Each probe runs inside a worktree and calls that commit's own benchmark code
(`bench_bytes`, `bench_smc` from the worktree's benchmarks/ on PYTHONPATH), on
a smaller scope than the full benchmark:

- `PROBE=bytes`: the byte beam's wall over the canonical floor, exact with
  lookahead at K=5, on bench_bytes' first three panel texts (no genlm-bytes:
  the floor ratio does not involve it); the best of 2 runs each side.
- `PROBE=smc`: the lipogram at 16 particles, ours and llamppl's, best of
  BENCH_SMC_REPEATS (default 2), and the time inside the model's forward.
"""

from __future__ import annotations

import asyncio
import math
import os
import statistics


def _row(metric: str, ours: float, baseline: float | None = None) -> dict:
    ratio = ours / baseline if baseline else None
    return {
        "benchmark": "probe",
        "metric": metric,
        "ours": ours,
        "baseline": baseline,
        "ratio": ratio,
    }


def _bytes() -> list[dict]:
    import bench_bytes as bb
    import torch

    from genlm_lab.backend import load_model_by_name
    from genlm_lab.bytes.lookahead import DEFAULT_DEPTH

    torch.manual_seed(0)
    lm = load_model_by_name("smollm2-135m")
    bb.floor(lm.model, [lm.bos_token_id, 504, 2365])
    rows, overs = [], []
    for name, text in list(bb.PANEL.items())[:3]:
        data = text.encode()
        ids = [lm.bos_token_id, *lm.tokenizer.encode(text, add_special_tokens=False)]
        floor = min(bb.floor(lm.model, ids) for _ in range(2))
        runs = [asyncio.run(bb.ours(lm, data, 5, DEFAULT_DEPTH)) for _ in range(2)]
        best = min(runs, key=lambda r: r["wall"])
        overs.append(best["wall"] / floor)
        rows += [
            _row(f"{name}: ours wall s / floor s", best["wall"], floor),
            _row(f"{name}: forwards (ours) / canonical tokens", best["forwards"], len(ids) - 1),
            _row(f"{name}: tokens computed (ours)", best["tokens"]),
        ]
    g = math.exp(statistics.fmean(math.log(x) for x in overs))
    return [_row("geomean wall over the canonical floor (3 texts, K=5)", g), *rows]


def _smc() -> list[dict]:
    import bench_smc as bs
    import numpy as np
    from genlm.backend.llm import AsyncTransformer as TheirTransformer
    from llamppl import CachedCausalLM

    from genlm_lab.backend import load_model_by_name
    from genlm_lab.smc.examples import Lipogram

    lm = load_model_by_name("smollm2-135m", backend="hf")
    their_llm = CachedCausalLM(TheirTransformer(lm.model, lm.tokenizer))
    mask_ids = {int(i) for i in np.flatnonzero(Lipogram(lm, bs.PROMPT).mask)}
    eos_id = lm.eos_token_ids[0]
    counter = bs.ForwardCounter(lm.model)

    async def go() -> tuple[list[dict], list[dict]]:
        await bs._ours(lm, counter, 2, seed=99)
        ours, theirs = [], []
        for r in range(int(os.environ.get("BENCH_SMC_REPEATS", "2"))):
            ours.append(await bs._ours(lm, counter, bs.N_PARTICLES, seed=r))
            theirs.append(
                await bs._theirs(their_llm, counter, mask_ids, eos_id, bs.N_PARTICLES, seed=r)
            )
        return ours, theirs

    ours, theirs = asyncio.run(go())
    o, t = min(ours, key=lambda r: r["wall"]), min(theirs, key=lambda r: r["wall"])
    return [
        _row("lipogram 16 particles: llamppl wall / ours wall (s)", t["wall"], o["wall"]),
        _row("lipogram: llamppl s in forward / ours s in forward", t["model_s"], o["model_s"]),
        _row("lipogram: forwards llamppl / ours", t["forwards"], o["forwards"]),
        _row("lipogram: ours s outside the forward", o["wall"] - o["model_s"]),
        _row("lipogram: llamppl s outside the forward", t["wall"] - t["model_s"]),
    ]


def run() -> list[dict]:
    return _bytes() if os.environ.get("PROBE", "bytes") == "bytes" else _smc()
