"""The mask rows of bench_vocabs: a coerced regex / JSON schema against llguidance's bare mask."""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from functools import partial

import numpy as np
from _row import result_row

EMAIL = r"[a-z]+(\.[a-z]+)*@[a-z]+\.(com|org|net)"
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
MASK_TEXTS = {
    "regex (e-mail)": "john.smith@example.com",
    "JSON schema": '{"name": "Ada", "age": 36}',
}
MASK_REPS = 3


def _row(name, metric, ours, baseline, ratio, target, met, note) -> dict:
    return result_row(f"vocabs: {name}", metric, ours, baseline, ratio, target, met, note)


def mb(n_bytes: float) -> str:
    """A byte count as KB or MB."""
    if n_bytes < 2**20:
        return f"{n_bytes / 2**10:.0f} KB"
    return f"{n_bytes / 2**20:.1f} MB"


def _best_of(f, reps: int = 200) -> float:
    """Median seconds of `f()` over `reps` calls."""
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _mask_diffs(tok, lm, llm, coerced, ctx, ids, matcher, bits) -> list[str]:
    """Steps where our mask and `matcher`'s differ (EOS is ours only), described."""
    from llguidance.numpy import fill_next_token_bitmask

    m, bad = matcher.deep_copy(), []
    for i in range(len(ids) + 1):
        fill_next_token_bitmask(m, bits, 0)
        flags = np.unpackbits(bits[0].view(np.uint8), bitorder="little")[: len(tok)]
        floor_set = set(np.flatnonzero(flags).tolist()) - set(lm.eos_token_ids)
        ours_set = set(llm._vocab_ids[np.flatnonzero(coerced.allowed(ctx[:i])[:-1])].tolist())
        if ours_set != floor_set:
            only_floor = sorted(floor_set - ours_set)
            only_ours = sorted(ours_set - floor_set)
            bad.append(
                f"step {i}: only llguidance {len(only_floor)} "
                f"{[tok.decode([t]) for t in only_floor[:4]]}, only ours {len(only_ours)} "
                f"{[tok.decode([t]) for t in only_ours[:4]]}"
            )
        if i < len(ids):
            m.consume_token(ids[i])
    return bad


async def _ours_pass(coerced, ctx, dense: bool) -> list[float]:
    """Seconds of each `logw_next` along `ctx` from a cleared engine (reading `.weights` if dense)."""
    coerced.engine.clear()
    steps = []
    for i in range(len(ctx) + 1):
        t0 = time.perf_counter()
        w = await coerced.logw_next(ctx[:i])
        if dense:
            w.weights  # noqa: B018 - the dense 0/-inf vector, built on read
        steps.append(time.perf_counter() - t0)
    return steps


def _floor_pass(root, ids, bits, with_consume: bool = False) -> list[float]:
    """Seconds of llguidance's bare `fill_next_token_bitmask` at each prefix of `ids`.

    With `with_consume`, each step also times the `consume_token` that reached
    it: the work one of our steps does (advance the state, then mask).
    """
    from llguidance.numpy import fill_next_token_bitmask

    m, steps = root.deep_copy(), []
    for i in range(len(ids) + 1):
        t0 = time.perf_counter()
        if with_consume and i > 0:
            m.consume_token(ids[i - 1])
        fill_next_token_bitmask(m, bits, 0)
        steps.append(time.perf_counter() - t0)
        if not with_consume and i < len(ids):
            m.consume_token(ids[i])
    return steps


async def mask_rows(name: str, lm) -> list[dict]:
    import llguidance
    import llguidance.hf
    from llguidance.numpy import allocate_token_bitmask

    from genlm_lab.control import BoolFSA, JsonSchema, PromptedLLM
    from genlm_lab.control.constraint.llg.engine import exact_grammar

    tok = lm.tokenizer
    llm = PromptedLLM(lm)
    index = {int(t): i for i, t in enumerate(llm._vocab_ids)}
    start = time.perf_counter()
    ltok = llguidance.hf.from_tokenizer(tok)
    ltok_s = time.perf_counter() - start
    rows = []
    for (case, text), make in zip(
        MASK_TEXTS.items(),
        (lambda: BoolFSA.from_regex(EMAIL), lambda: JsonSchema(SCHEMA, max_whitespace=None)),
        strict=True,
    ):
        start = time.perf_counter()
        coerced = make().coerce(llm, f=b"".join)
        coerce_s = time.perf_counter() - start
        ids = tok.encode(text, add_special_tokens=False)
        ctx = [llm.vocab[index[i]] for i in ids]
        grammar = coerced.grammar.grammar
        matcher = llguidance.LLMatcher(ltok, grammar, log_level=0)
        exact = llguidance.LLMatcher(ltok, exact_grammar(grammar), log_level=0)
        bits = allocate_token_bitmask(1, ltok.vocab_size)

        passes: dict[str, list] = {"ours": [], "dense": [], "floor": [], "exact": [], "consume": []}
        for _ in range(MASK_REPS):  # interleaved: all see the same load
            passes["ours"].append(await _ours_pass(coerced, ctx, False))
            passes["dense"].append(await _ours_pass(coerced, ctx, True))
            passes["floor"].append(_floor_pass(matcher, ids, bits))
            passes["exact"].append(_floor_pass(exact, ids, bits))
            passes["consume"].append(_floor_pass(exact, ids, bits, with_consume=True))
        med = {
            k: statistics.median(statistics.median(s) for s in zip(*v, strict=True))
            for k, v in passes.items()
        }
        ours_s, floor_s = med["ours"], med["floor"]
        # the least per-step work past llguidance's call: a dense float64 0/-inf vector
        n = len(llm.vocab) + 1
        flags = np.unpackbits(bits[0].view(np.uint8), bitorder="little", count=n)
        table_ = np.array([-np.inf, 0.0])
        write_s = _best_of(partial(table_.__getitem__, flags))
        # memory: one mask, one weight vector, and what one new cached step retains
        coerced.engine.clear()
        for i in range(len(ctx)):
            await coerced.logw_next(ctx[:i])
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        weights = await coerced.logw_next(ctx)
        gc.collect()
        step_mem = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        mask = coerced.allowed(ctx[: len(ctx) // 2])
        bad_exact = _mask_diffs(tok, lm, llm, coerced, ctx, ids, exact, bits)
        bad_floor = _mask_diffs(tok, lm, llm, coerced, ctx, ids, matcher, bits)
        rows.append(
            _row(
                name,
                f"{case}: mask per step vs llguidance's bare mask (ms; ratio = ours / floor)",
                ours_s * 1e3,
                floor_s * 1e3,
                ours_s / floor_s,
                "<= 4x",
                ours_s <= 4 * floor_s,
                f"{len(ids)}-token text {text!r}, median over steps of medians of {MASK_REPS} "
                "cleared passes; ours = `logw_next` (a `MaskWeights` holding llguidance's "
                f"packed bits); with the dense 0/-inf vector read too {med['dense'] * 1e3:.3f} "
                f"ms ({med['dense'] / floor_s:.1f}x), of which building that vector alone "
                f"{write_s * 1e3:.3f} ms; llguidance with forcing off (what ours computes) "
                f"{med['exact'] * 1e3:.3f} ms, with its consume_token of the step (the same work as "
                f"one of ours) {med['consume'] * 1e3:.3f} ms. Masks equal llguidance's forcing-off mask on "
                + ("every step" if not bad_exact else "all steps but " + "; ".join(bad_exact))
                + "; the default (forcing) mask differs "
                + (
                    "nowhere"
                    if not bad_floor
                    else "where the grammar forces a key (it allows only the key's canonical "
                    "tokens, ours every token whose bytes fit, as a byte-level potential "
                    "coerced through b''.join must): " + "; ".join(bad_floor)
                )
                + f"; one mask {mb(weights.bits.nbytes)} packed ({mb(mask.nbytes)} as bool, "
                f"{mb(weights.weights.nbytes)} as weights), one new cached step retains "
                f"{mb(step_mem)}; coerce {coerce_s:.2f} s, llguidance tokenizer {ltok_s:.2f} s",
            )
        )
    return rows
