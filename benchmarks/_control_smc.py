"""bench_control's SMC rows: end to end on the JSON schema, ours vs genlm-control's AWRS-SMC.

See bench_control.py (module docstring) for what is measured; run through it.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from typing import Any

import numpy as np
from _control_setup import JSON_PROMPT, SCHEMA, SMC_RUNS, THEIR_SMC_RUNS, _progress, _row, _Setup


def _valid(text: bytes) -> bool:
    import jsonschema

    try:
        return jsonschema.Draft202012Validator(SCHEMA).is_valid(json.loads(text))
    except (ValueError, UnicodeDecodeError):
        return False


async def _smc_rows(setup: _Setup) -> list[dict]:
    import genlm.control as gc
    from bench_smc import ForwardCounter

    from genlm_lab.control import AWRS, EOS, SMC, JsonSchema, PromptedLLM, direct_token_sampler

    n, max_tokens = 10, 40
    # The few-shot prompt puts one object per line: "\n" ends a sequence on both sides.
    # With only <|im_end|> as EOS, genlm-control's particles went on after the object
    # ("}\n" then a lone UTF-8 lead byte, which its JsonSchema admits and nothing can
    # follow) and all died.
    eos = [*(bytes(setup.lm.byte_vocab[i]) for i in setup.lm.eos_token_ids), b"\n"]
    ours_llm = PromptedLLM(setup.lm, prompt=JSON_PROMPT, eos_tokens=eos)
    their_llm = gc.PromptedLLM(
        setup.their_lm, prompt_ids=list(ours_llm.prompt_ids), eos_byte_strings=eos
    )
    ours_c = JsonSchema(SCHEMA).coerce(ours_llm, f=b"".join)
    their_c = gc.JsonSchema(SCHEMA).coerce(their_llm, f=b"".join)
    samplers = {
        "direct": lambda: direct_token_sampler(ours_llm * ours_c),
        "AWRS": lambda: AWRS(ours_llm, ours_c),
    }
    counter = ForwardCounter(setup.lm.model)

    def outcome(wall: float, log_ml: float, particles: list[tuple[list, float, bool]]) -> dict:
        """Particles as (context bytes, log-weight, finished): valid among the live ones."""
        live = [(text, done) for text, w, done in particles if w > -math.inf]
        valid = sum(done and _valid(text) for text, done in live)
        return {
            "wall": wall,
            "model_s": counter.seconds,
            "forwards": len(counter.sizes),
            "batch": float(np.mean(counter.sizes)) if counter.sizes else 0.0,
            "log_ml": log_ml,
            "live": len(live),
            "valid": valid,
            "n": len(particles),
        }

    async def ours(kind: str, seed: int) -> dict:
        setup.lm.clear_cache()
        ours_c.engine.clear()
        counter.reset()
        start = time.perf_counter()
        seqs = await SMC(samplers[kind]())(n, 0.5, max_tokens, seed=seed, progress=False)
        wall = time.perf_counter() - start
        particles = [
            (b"".join(bytes(t) for t in ctx if t is not EOS), w, bool(ctx) and ctx[-1] is EOS)
            for ctx, w in seqs
        ]
        return outcome(wall, seqs.log_ml, particles)

    async def theirs(seed: int) -> dict:
        setup.their_lm.clear_cache()
        counter.reset()
        np.random.seed(seed)
        start = time.perf_counter()
        seqs = await gc.SMC(gc.AWRS(their_llm, their_c, seed=seed))(n, 0.5, max_tokens)
        wall = time.perf_counter() - start
        particles = [
            (
                b"".join(bytes(t) for t in ctx if t != gc.EOS),
                float(w),
                bool(ctx) and ctx[-1] == gc.EOS,
            )
            for ctx, w in zip(seqs.contexts, seqs.log_weights, strict=True)
        ]
        return outcome(wall, float(seqs.log_ml), particles)

    runs: dict[str, list[dict]] = {"direct": [], "AWRS": [], "genlm-control": []}
    try:
        for r in range(max(SMC_RUNS, THEIR_SMC_RUNS)):
            for kind in ("direct", "AWRS") if r == 0 else ("direct",):
                if r < SMC_RUNS:
                    _progress(f"SMC run {r + 1}: ours ({kind})")
                    runs[kind].append(await ours(kind, seed=r))
            if r < THEIR_SMC_RUNS:
                _progress(f"SMC run {r + 1}: genlm-control (AWRS), minutes on a busy machine")
                runs["genlm-control"].append(await theirs(seed=r))
    finally:
        counter.close()

    def spread(values: list[float]) -> str:
        finite = [v for v in values if math.isfinite(v)]
        if len(finite) < 2:
            return ", ".join(f"{v:.2f}" for v in values)
        return f"{statistics.mean(finite):.2f} ± {statistics.stdev(finite):.2f}"

    def walls(kind: str) -> str:
        return ", ".join(
            f"{r['wall']:.1f} s ({r['model_s']:.1f} s in {r['forwards']} forwards of mean batch "
            f"{r['batch']:.1f})"
            for r in runs[kind]
        )

    def valid(kind: str) -> str:
        v = runs[kind]
        return (
            f"{sum(r['valid'] for r in v)}/{sum(r['live'] for r in v)} live "
            f"({sum(r['n'] - r['live'] for r in v)} of {sum(r['n'] for r in v)} dead)"
        )

    _progress("SMC over a mock LM: ours")
    mock = await _our_overhead(setup)
    wall = {k: statistics.median(r["wall"] for r in v) for k, v in runs.items()}
    rest = {k: statistics.median(r["wall"] - r["model_s"] for r in v) for k, v in runs.items()}
    all_valid = all(r["valid"] == r["live"] > 0 for v in runs.values() for r in v)
    base = f"{n} particles, ESS threshold 0.5, at most {max_tokens} tokens, the JSON schema"
    rows = []
    for kind in ("direct", "AWRS"):
        ratio = wall["genlm-control"] / wall[kind]
        rows.append(
            _row(
                f"SMC JSON schema: wall (s), ours ({kind}) vs genlm-control AWRS",
                wall[kind],
                wall["genlm-control"],
                ">= 5x",
                ratio >= 5,
                f"{base}; median of runs: ours {walls(kind)}; genlm-control "
                f"{walls('genlm-control')}; outside the model's forward: ours "
                f"{rest[kind]:.1f} s, genlm-control {rest['genlm-control']:.1f} s "
                f"({rest['genlm-control'] / rest[kind]:.1f}x); the model's forward is the floor of "
                f"both walls here. The control layer's own cost: the same run over a mock LM with "
                f"fixed random rows took {mock[kind][0]:.2f} s for {mock[kind][1]} particle-steps "
                "(AWRS pays there for the many rejections random rows cause)",
            )
        )
    rows.append(
        _row(
            "SMC JSON schema: valid outputs (finished and schema-valid, of live particles)",
            f"direct {valid('direct')}; AWRS {valid('AWRS')}",
            valid("genlm-control"),
            "100% both",
            all_valid,
            f"{base}; json.loads + jsonschema on each particle with weight > 0 (a dead particle, "
            "weight 0, is no output; a run with none alive fails the target)",
        )
    )
    rows.append(
        _row(
            "SMC JSON schema: log_ml (mean ± sd over runs)",
            f"direct {spread([r['log_ml'] for r in runs['direct']])}; "
            f"AWRS {spread([r['log_ml'] for r in runs['AWRS']])}",
            spread([r["log_ml"] for r in runs["genlm-control"]]),
            "agree within spread",
            None,
            f"{base}; runs: ours direct {len(runs['direct'])}, AWRS {len(runs['AWRS'])}, "
            f"genlm-control {len(runs['genlm-control'])}",
        )
    )
    return rows


async def _our_overhead(setup: _Setup) -> dict[str, tuple[float, int]]:
    """Our SMC run of `_smc_rows` over a mock LM (fixed log-prob rows, no forward).

    Returns (wall, particle-steps) per sampler: the control layer's own cost.
    genlm-control is not run here: over such rows its AWRS checks thousands
    of tokens per step (about 3 s per particle-step when tried), minutes.
    """
    from bench_smc import _fixed_table

    from genlm_lab.backend import MockAsyncLM
    from genlm_lab.control import AWRS, SMC, JsonSchema, PromptedLLM, direct_token_sampler

    class OurFixed(MockAsyncLM):
        async def next_token_logprobs(self, token_ids: list[int]) -> Any:
            return table[len(token_ids) % len(table)]

    lm = OurFixed(tokenizer=setup.tok)
    table = _fixed_table(lm.vocab_size)
    eos = [*(bytes(setup.lm.byte_vocab[i]) for i in setup.lm.eos_token_ids), b"\n"]
    llm = PromptedLLM(lm, prompt=JSON_PROMPT, eos_tokens=eos)
    constraint = JsonSchema(SCHEMA).coerce(llm, f=b"".join)
    out = {}
    for kind, sampler in (
        ("direct", direct_token_sampler(llm * constraint)),
        ("AWRS", AWRS(llm, constraint)),
    ):
        start = time.perf_counter()
        seqs = await SMC(sampler)(10, 0.5, 40, seed=0, progress=False)
        out[kind] = (time.perf_counter() - start, sum(len(c) for c, _ in seqs))
    return out
