"""Constraints on the default model: `genlm_lab.control` vs PyPI genlm-control 0.4.1 vs llguidance.

One process, one HF model object (SmolLM2-135M on CPU). genlm-control runs
its `PromptedLLM` over genlm-backend's `AsyncTransformer` wrapping that same
model; ours runs over our `AsyncTransformer`. Three constraints, each with a
fixed valid text tokenised by the model's tokenizer (the "generation" whose
steps are timed):

- regex: an e-mail address (`BoolFSA.from_regex`),
- Lark grammar: a small SQL subset (`BoolCFG.from_lark`),
- JSON schema: an object with a string name and an integer age (`JsonSchema`).

Rows:

- mask per step: the full next-token mask over the 49,151 tokens of the
  `PromptedLLM` (`constraint.coerce(llm, f=b"".join).logw_next(context)`) at
  every prefix of the text, caches cleared before each pass so every step is
  computed (the parent context's state is cached, as in SMC). genlm-control's
  coerced potential takes seconds to a minute per step, so it is timed on a
  few steps only (`Case.their_steps`) and compared with ours on those same steps;
  the note extrapolates its time over the whole text. The floor is
  llguidance's own bare mask call (`fill_next_token_bitmask`) on an `LLMatcher`
  over the HF tokenizer, advanced by hand along the same tokens. Masks are
  compared token by token with genlm-control's on the timed steps and with
  the floor's on every step.
- single-token check: what AWRS asks, `prefix(context + [token])`, for the
  text's next token and random tokens at every step (floor: `validate_tokens`).
- AWRS: at one fixed context of the e-mail regex, draws from our `AWRS` and
  genlm-control's `AWRS` (same LM, same predicate): wall and condition calls
  per draw, and the mean of exp(weight) against the exact allowed mass from
  the full mask and the LM's probabilities (both must be unbiased).
- SMC end to end: 10 particles, the JSON schema, at most 40 tokens; ours
  (direct sampler on `llm * constraint`, and AWRS) vs genlm-control's AWRS-SMC
  (its direct sampler would need its 30 s masks at every step): wall, valid
  outputs (jsonschema), log_ml over repeated runs. A few-shot prompt, and "\n"
  as well as <|im_end|> ends a sequence on both sides. A forward hook on the
  shared model separates the model's time from each side's own.

Run: `python benchmarks/bench_control.py` or `python benchmarks/run_all.py control`.
Environment: BENCH_CONTROL_REPS (passes over each text, default 5),
BENCH_CONTROL_SMC_RUNS (ours, default 2), BENCH_CONTROL_THEIR_SMC_RUNS (genlm-control,
default 1: minutes per run here), BENCH_CONTROL_AWRS_DRAWS (default 300).
"""

from __future__ import annotations

import asyncio
import math
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _control_setup import (
    AWRS_CONTEXT,
    AWRS_DRAWS,
    EMAIL,
    N_CHECKS,
    REPS,
    Case,
    _cases,
    _progress,
    _row,
    _Setup,
    _us,
    weight_mean_se,
)
from _control_smc import _smc_rows

os.environ.setdefault("HF_HUB_OFFLINE", "1")

# ---------------------------------------------------------------- masks


class _Floor:
    """llguidance on the HF tokenizer, advanced by hand: the bare mask call and token check."""

    def __init__(self, setup: _Setup, grammar: str) -> None:
        import llguidance
        from llguidance.numpy import allocate_token_bitmask

        self.setup = setup
        self.grammar = grammar
        self.matcher = llguidance.LLMatcher(setup.ltok, grammar, log_level=0)
        self.bits = allocate_token_bitmask(1, setup.ltok.vocab_size)

    def walk(self, ids: list[int], checks: list[list[int]]) -> dict:
        """Time mask, consume and checks at every step of `ids` on a fresh matcher."""
        from llguidance.numpy import fill_next_token_bitmask

        m = self.matcher.deep_copy()
        masks, fills, consumes, checks_s = [], [], [], []
        for i in range(len(ids) + 1):
            start = time.perf_counter()
            fill_next_token_bitmask(m, self.bits, 0)
            fills.append(time.perf_counter() - start)
            flags = np.unpackbits(self.bits[0].view(np.uint8), bitorder="little")
            masks.append(set(np.flatnonzero(flags[: len(self.setup.tok)]).tolist()))
            for t in checks[i]:
                start = time.perf_counter()
                m.validate_tokens([t])
                checks_s.append(time.perf_counter() - start)
            if i < len(ids):
                start = time.perf_counter()
                m.consume_token(ids[i])
                consumes.append(time.perf_counter() - start)
        return {"fill": fills, "consume": consumes, "check": checks_s, "masks": masks}


async def _our_pass(tc: Any, ctx: list[Any]) -> list[float]:
    """Seconds of `logw_next` at every prefix of ctx, caches cleared first."""
    tc.engine.clear()
    out = []
    for i in range(len(ctx) + 1):
        start = time.perf_counter()
        await tc.logw_next(ctx[:i])
        out.append(time.perf_counter() - start)
    return out


async def _our_checks(tc: Any, ctx: list[Any], checks: list[list[Any]]) -> dict[str, list]:
    """Seconds per single-token check, parent states cached, two ways.

    `prefix(context + [token])` is what AWRS asks; `score(context + [token])`
    goes through the engine's `allows` (llguidance's `validate_tokens`).
    """
    out: dict[str, list] = {"prefix": [], "score": [], "accepted": []}
    for method in ("prefix", "score"):
        tc.engine.clear()
        call = getattr(tc, method)
        for i in range(len(ctx) + 1):
            await tc.prefix(ctx[:i])  # the parent's state, as after the previous step
            for token in checks[i]:
                start = time.perf_counter()
                value = await call([*ctx[:i], token])
                out[method].append(time.perf_counter() - start)
                if method == "prefix":
                    out["accepted"].append(value == 0)
    return out


def _medians(passes: list[list[float]]) -> list[float]:
    return [statistics.median(step) for step in zip(*passes, strict=True)]


async def _mask_rows(setup: _Setup, case: Case, rng: np.random.Generator) -> list[dict]:
    ids = setup.ids(case.text)
    n = len(ids)
    ours_c = case.ours().coerce(setup.ours, f=b"".join)
    ctx = setup.our_context(ids)
    hf_checks = [
        [ids[i] if i < n else ids[-1], *rng.integers(3, len(setup.tok), N_CHECKS - 1).tolist()]
        for i in range(n + 1)
    ]
    hf_checks = [[t for t in row if t in setup.our_index] for row in hf_checks]
    our_checks = [setup.our_context(row) for row in hf_checks]
    floor = _Floor(setup, ours_c.grammar.grammar)  # the very grammar text ours compiled
    # Interleave our passes with the floor's so both see the same machine load.
    ours_passes, floor_walks = [], []
    for _ in range(REPS):
        ours_passes.append(await _our_pass(ours_c, ctx))
        floor_walks.append(floor.walk(ids, hf_checks))
    ours_steps = _medians(ours_passes)
    fill_steps = _medians([w["fill"] for w in floor_walks])
    consume = statistics.median(x for w in floor_walks for x in w["consume"])
    hits = []
    for i in range(n + 1):
        start = time.perf_counter()
        await ours_c.logw_next(ctx[:i])
        hits.append(time.perf_counter() - start)
    checks: dict[str, list] = {"prefix": [], "score": [], "accepted": []}
    for _ in range(REPS):
        for key, values in (await _our_checks(ours_c, ctx, our_checks)).items():
            checks[key] += values
    check_ours = statistics.median(checks["prefix"])
    by_outcome = {
        flag: statistics.median(
            t for t, a in zip(checks["prefix"], checks["accepted"], strict=True) if a == flag
        )
        if flag in checks["accepted"]
        else math.nan
        for flag in (True, False)
    }
    check_score = statistics.median(checks["score"])
    check_floor = statistics.median(x for w in floor_walks for x in w["check"])
    # Our masks against llguidance's own on every step (EOS is ours only).
    ours_c.engine.clear()
    floor_diff = []
    for i in range(n + 1):
        ours_set = setup.our_allowed(ours_c.allowed(ctx[:i]))
        floor_set = floor_walks[0]["masks"][i] - set(setup.lm.eos_token_ids)
        if ours_set != floor_set:
            floor_diff.append(
                f"step {i}: only llguidance {setup.describe(floor_set - ours_set)}, "
                f"only ours {setup.describe(ours_set - floor_set)}"
            )
    # genlm-control: a few steps only.
    their_c = case.theirs().coerce(setup.theirs, f=b"".join)
    if hasattr(their_c, "_sym_trie"):
        _ = their_c._sym_trie  # its one-off trie build is not charged to a step
    tctx = setup.their_context(ids)
    steps = sorted({min(max(s, 0), n) for s in case.their_steps(n)})
    their_s, agree = [], []
    for s in steps:
        _progress(f"{case.name}: genlm-control mask at step {s}/{n}")
        start = time.perf_counter()
        weights = await their_c.logw_next(tctx[:s])
        their_s.append(time.perf_counter() - start)
        finite = np.isfinite(np.asarray(weights.weights, dtype=float))
        their_set = {their_c.vocab[j].token_id for j in np.flatnonzero(finite[:-1])}
        our_mask = ours_c.allowed(ctx[:s])
        our_set = setup.our_allowed(our_mask)
        eos = "" if bool(finite[-1]) == bool(our_mask[-1]) else f" EOS ours {our_mask[-1]}"
        agree.append(
            f"step {s}: {len(our_set)} vs {len(their_set)} allowed; only theirs "
            f"{setup.describe(their_set - our_set)}; only ours {setup.describe(our_set - their_set)}"
            + eos
        )
    ours_same = statistics.mean(ours_steps[s] for s in steps)
    their_mean = statistics.mean(their_s)
    ours_med = statistics.median(ours_steps)
    floor_med = statistics.median(fill_steps)
    name = case.name
    return [
        _row(
            f"{name}: mask per step vs genlm-control (s)",
            ours_same,
            their_mean,
            ">= 20x",
            their_mean / ours_same >= 20,
            f"{n}-token text {case.text!r}; genlm-control {type(their_c).__name__}"
            f"({len(their_c.vocab)} tokens after its pruning) timed on steps {steps} only: "
            + ", ".join(f"{t:.2f} s" for t in their_s)
            + f" (about {their_mean * (n + 1):.0f} s extrapolated over the {n + 1} steps); ours on "
            f"those steps, median of {REPS} cleared passes; masks: " + "; ".join(agree),
        ),
        _row(
            f"{name}: mask per step vs llguidance's bare mask (s; ratio = ours / floor)",
            ours_med,
            floor_med,
            "<= 4x floor",
            ours_med <= 4 * floor_med,
            f"medians over {n + 1} steps of per-step medians of {REPS} passes; ours = consume "
            f"(copy + consume_token) + mask + unpacking + weights; floor = "
            f"fill_next_token_bitmask alone (consume_token adds {_us(consume)}); ours worst step "
            f"{_us(max(ours_steps))}, floor worst {_us(max(fill_steps))}; cached mask "
            f"(same context again) {_us(statistics.median(hits))}; our masks equal llguidance's "
            + ("on every step" if not floor_diff else "except: " + "; ".join(floor_diff)),
            ratio=ours_med / floor_med,
        ),
        _row(
            f"{name}: single-token check (s; ratio = ours / floor)",
            check_ours,
            check_floor,
            f"<= {case.check_target_us:.0f} us",
            check_ours <= case.check_target_us * 1e-6,
            f"prefix(context + [token]) as AWRS asks, parent state cached; median of "
            f"{REPS} x {sum(map(len, our_checks))} checks (the text's next token and random ones, "
            f"{sum(checks['accepted']) // REPS} accepted): accepted {_us(by_outcome[True])}, "
            f"rejected {_us(by_outcome[False])}; score(context + [token]) (engine.allows, "
            f"validate_tokens) {_us(check_score)}; baseline: llguidance validate_tokens([token]) "
            "on the same states",
            ratio=check_ours / check_floor,
        ),
    ]


# ---------------------------------------------------------------- AWRS


class _Counted:
    """Counts the calls (contexts) an AWRS sends to its condition."""

    def __init__(self, potential: Any) -> None:
        self.calls = 0
        for name in ("prefix", "complete"):
            setattr(potential, name, self._wrap(getattr(potential, name), batch=False))
        for name in ("batch_prefix", "batch_complete"):
            setattr(potential, name, self._wrap(getattr(potential, name), batch=True))

    def _wrap(self, method: Callable, batch: bool) -> Callable:
        async def counted(contexts: Any) -> Any:
            self.calls += len(contexts) if batch else 1
            return await method(contexts)

        return counted


async def _awrs_rows(setup: _Setup) -> list[dict]:
    import genlm.control as gc

    from genlm_lab.control import AWRS, BoolFSA, PromptedLLM

    prompt = "An e-mail address: "
    ours_llm = PromptedLLM(setup.lm, prompt=prompt)
    their_llm = gc.PromptedLLM(
        setup.their_lm,
        prompt_ids=list(ours_llm.prompt_ids),
        eos_byte_strings=[bytes(setup.lm.byte_vocab[i]) for i in setup.lm.eos_token_ids],
    )
    # Here the LM's mass over the regex's alphabet (what genlm-control's coerce keeps) is
    # far from the allowed mass ("com", "org", "net" and their prefixes), so the draws vary.
    ids = setup.ids(AWRS_CONTEXT)
    ctx = [ours_llm.vocab[setup.our_index[i]] for i in ids]
    tctx = setup.their_context(ids)
    ours_c = BoolFSA.from_regex(EMAIL).coerce(ours_llm, f=b"".join)
    their_c = gc.BoolFSA.from_regex(EMAIL).coerce(their_llm, f=b"".join)
    _ = their_c._sym_trie
    counter = _Counted(their_c)
    # Exact allowed mass, per side: its LM's probabilities summed over its full mask.
    logp = np.asarray((await ours_llm.logw_next(ctx)).weights, dtype=float)
    exact = float(np.exp(logp[ours_c.allowed(ctx)]).sum())
    their_logp = np.asarray((await their_llm.logw_next(tctx)).weights, dtype=float)
    their_mask = np.isfinite(np.asarray((await their_c.logw_next(tctx)).weights, dtype=float))
    where_lm = {t.token_id: i for i, t in enumerate(their_llm.vocab)}
    rows = [where_lm[their_c.vocab[j].token_id] for j in np.flatnonzero(their_mask[:-1])]
    their_exact = float(np.exp(their_logp[rows]).sum() + their_mask[-1] * np.exp(their_logp[-1]))

    ours_s = AWRS(ours_llm, ours_c, seed=0)
    # Unseeded: genlm-control re-seeds its generator at every call, so a seeded AWRS
    # repeats the same draw (and weight) each time.
    theirs_s = gc.AWRS(their_llm, their_c)
    await ours_s.sample(ctx)
    await theirs_s.sample(tctx)  # warm both LM caches
    counter.calls = 0
    ours_w, ours_t, ours_checks, their_w, their_t = [], [], [], [], []
    _progress(f"AWRS: {AWRS_DRAWS} draws each")
    for _ in range(AWRS_DRAWS):
        ours_c.engine.clear()
        start = time.perf_counter()
        _, w, _, info = await ours_s.sample_with_info(ctx)
        ours_t.append(time.perf_counter() - start)
        ours_w.append(w)
        ours_checks.append(info["awrs"]["n_checks"])
        their_c.potential.clear_cache() if hasattr(their_c.potential, "clear_cache") else None
        start = time.perf_counter()
        _, w, _ = await theirs_s.sample(tctx)
        their_t.append(time.perf_counter() - start)
        their_w.append(float(w))
    await ours_s.cleanup()

    om, ose, flat_ours = weight_mean_se(ours_w, exact)
    tm, tse, flat_theirs = weight_mean_se(their_w, their_exact)
    ours_med, their_med = statistics.median(ours_t), statistics.median(their_t)
    ours_n, their_n = statistics.mean(ours_checks), counter.calls / AWRS_DRAWS
    ok = abs(om - exact) <= 3 * ose and abs(tm - their_exact) <= 3 * tse
    where = f"after the prompt {prompt!r} + {AWRS_CONTEXT!r}, e-mail regex, {AWRS_DRAWS} draws each"
    return [
        _row(
            "AWRS: wall per draw (s)",
            ours_med,
            their_med,
            ">= 3x",
            their_med / ours_med >= 3,
            f"{where}; medians; LM row cached on both sides (what is left is the sampler and the "
            "condition's checks); constraint caches cleared before every draw",
        ),
        _row(
            "AWRS: condition calls per draw",
            ours_n,
            their_n,
            "report",
            None,
            f"{where}; ours from info['awrs']['n_checks'], genlm-control's by wrapping its "
            "condition's prefix/complete (and batch_*) calls",
        ),
        _row(
            "AWRS: mean exp(weight) vs exact allowed mass",
            f"{om:.4f} ± {ose:.4f}",
            f"{tm:.4f} ± {tse:.4f}",
            "both within 3 se of exact",
            ok,
            f"{where}; exact allowed mass {exact:.4f} ours, {their_exact:.4f} genlm-control (its "
            "LM's probabilities summed over its full mask; genlm-backend's rows differ slightly); "
            f"± one standard error; ours off by {(om - exact) / ose:+.1f} se, genlm-control by "
            f"{(tm - their_exact) / tse:+.1f} se"
            + "".join(
                f"; every {side} draw gave the same weight (se of a Bernoulli estimate used)"
                for side, f in zip(("our", "genlm-control"), (flat_ours, flat_theirs), strict=True)
                if f
            ),
        ),
    ]


# ---------------------------------------------------------------- main


async def _main(parts: set[str]) -> list[dict]:
    setup = _Setup()
    rng = np.random.default_rng(0)
    rows: list[dict] = []
    if "masks" in parts:
        for case in _cases():
            _progress(f"masks: {case.name}")
            rows += await _mask_rows(setup, case, rng)
    if "awrs" in parts:
        rows += await _awrs_rows(setup)
    if "smc" in parts:
        rows += await _smc_rows(setup)
    return rows


def run(parts: tuple[str, ...] = ("masks", "awrs", "smc")) -> list[dict]:
    """Run the benchmark and return its rows (see module docstring)."""
    return asyncio.run(_main(set(parts)))


if __name__ == "__main__":
    import sys

    from run_all import table

    print(table(run(tuple(sys.argv[1:]) or ("masks", "awrs", "smc"))))
