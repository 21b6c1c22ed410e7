"""Big vocabularies stay fast: Llama 3 (128,256 tokens) and Gemma 3 (262,145), side by side.

For each real tokenizer of the panel (`scripts/fetch_tokenizers.sh` caches
them in `.cache/tokenizers/`; a missing one gives a row that says so), one
process measures:

- the character trie: build, and `weight_sum` at batch 1 and 32, ours
  (numba) against genlm-backend 0.3.1's fastest CPU option (its numba trie or
  its torch-sparse one), after checking that both give the same mass at every
  node; memory retained by each trie (tracemalloc, same method for both);
- masks: a regex (e-mail) and a JSON schema coerced onto the vocabulary
  (`constraint.coerce(PromptedLLM(lm), f=b"".join).logw_next`) at every
  prefix of a valid text, against llguidance's bare mask call
  (`fill_next_token_bitmask`) on an `LLMatcher` built from the same grammar
  text and the HF tokenizer; memory of one mask and of one cached step;
- the byte beam: a K=5 beam at exact settings (every extension evaluated)
  reading a short text with `logp_next` before every byte, ours against
  genlm-bytes 0.2.0 on the same HF model (a 2-layer LLaMA of hidden size 32
  with random weights and that vocabulary: the forward is cheap, so the
  vocabulary-sized work dominates, which is what this benchmark is about).

Run: `python benchmarks/bench_vocabs.py` or `python benchmarks/run_all.py vocabs`.
BENCH_VOCABS=llama3 (comma-separated panel names) narrows the run;
BENCH_VOCABS_PARTS=mask (comma-separated: trie, mask, beam) measures only those
rows and, run as a script, replaces only them in RESULTS.md's bench_vocabs
section (its header then names both runs' dates; a conditions row gives the
re-run's load average). A full run takes ~40 min (genlm-backend's trie builds);
the mask rows alone a few minutes.
"""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
import tempfile
import time
import tracemalloc
import warnings
from functools import partial
from pathlib import Path

import numpy as np
from _row import result_row
from bench_trie import BATCH, _best, _max_diff, _theirs_index, _weights

from genlm_lab.backend.tiny import save_tiny_llama

os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore", category=UserWarning)
warnings.filterwarnings("ignore", category=DeprecationWarning)

REPO = Path(__file__).resolve().parents[1]
PANEL_DIR = Path(os.environ.get("GENLM_LAB_TOKENIZER_PANEL", REPO / ".cache" / "tokenizers"))
VOCABS = {"llama3": "Llama 3", "gemma3": "Gemma 3"}
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
BEAM_TEXT = "The old lighthouse keeper walked."
BEAM_K = 5
MASK_REPS = 3
PARTS = ("trie", "mask", "beam")
RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def _row(name, metric, ours, baseline, ratio, target, met, note) -> dict:
    return result_row(f"vocabs: {name}", metric, ours, baseline, ratio, target, met, note)


def _mb(n_bytes: float) -> str:
    if n_bytes < 2**20:
        return f"{n_bytes / 2**10:.0f} KB"
    return f"{n_bytes / 2**20:.1f} MB"


def _retained(build):
    """(object, bytes it retains per tracemalloc) for `build()`; also the build's wall time."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    start = time.perf_counter()
    obj = build()
    wall = time.perf_counter() - start
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return obj, after - before, wall


def _model_dir(tokenizer, directory: Path) -> Path:
    """A 2-layer LLaMA (hidden 32, seeded std-0.3 weights) with `tokenizer`, saved as a model dir."""
    return save_tiny_llama(tokenizer, directory, hidden_size=32, num_heads=4, num_kv_heads=2)


# ---------------------------------------------------------------- trie


def _trie_rows(name: str, vocab) -> list[dict]:
    import torch
    from genlm.backend.tokenization.token import Token as TheirToken
    from genlm.backend.trie import ParallelTokenCharacterTrie as TheirParallel
    from genlm.backend.trie import TokenCharacterTrie as TheirTrie

    from genlm_lab.trie import TokenCharacterTrie

    their_vocab = [TheirToken(t.token_id, bytes(t)) for t in vocab]
    TokenCharacterTrie(vocab[:1000])  # numba kernels loaded, as for theirs below
    TheirTrie(their_vocab[:1000]).weight_sum(np.ones(1000))
    ours, ours_mem, ours_build = _retained(lambda: TokenCharacterTrie(vocab))
    theirs, their_mem, their_build = _retained(lambda: TheirTrie(their_vocab))
    their_par, par_mem, par_build = _retained(lambda: TheirParallel(their_vocab, device="cpu"))

    ws = _weights(len(vocab), BATCH)
    w1, wt = ws[0], torch.from_numpy(ws)
    leaf, by_prefix = _theirs_index(theirs, len(vocab))
    diff = _max_diff(ours, ours.weight_sum(w1), leaf, by_prefix, theirs.weight_sum(w1))
    if diff > 1e-9:
        raise AssertionError(f"{name}: genlm_lab and genlm-backend masses differ by {diff}")
    ours_1 = _best(lambda: ours.weight_sum(w1), 20)
    their_n1 = _best(lambda: theirs.weight_sum(w1), 5)
    their_p1 = _best(lambda: their_par.weight_sum(wt[0]), 3)
    ours_b = _best(lambda: ours.batch_weight_sum(ws), 5) / BATCH
    their_nb = _best(lambda: theirs.batch_weight_sum(ws), 2) / BATCH
    their_pb = _best(lambda: their_par.batch_weight_sum(wt), 2) / BATCH
    their_build_best = min(their_build, par_build)
    return [
        _row(
            name,
            "trie build (s)",
            ours_build,
            their_build_best,
            their_build_best / ours_build,
            ">= 2x",
            their_build_best >= 2 * ours_build,
            f"{ours.n_nodes:,} nodes; genlm-backend numba {their_build:.2f} s, sparse "
            f"{par_build:.2f} s; memory retained (tracemalloc): ours {_mb(ours_mem)}, theirs "
            f"numba {_mb(their_mem)}, sparse {_mb(par_mem)}",
        ),
        _row(
            name,
            "weight_sum batch 1 (ms)",
            ours_1 * 1e3,
            min(their_n1, their_p1) * 1e3,
            min(their_n1, their_p1) / ours_1,
            ">= 8x",
            min(their_n1, their_p1) >= 8 * ours_1,
            f"theirs: numba {their_n1 * 1e3:.2f}, sparse {their_p1 * 1e3:.1f} ms; masses agree "
            f"at every node (max |diff| {diff:.1e})",
        ),
        _row(
            name,
            f"weight_sum batch {BATCH}, per distribution (ms)",
            ours_b * 1e3,
            min(their_nb, their_pb) * 1e3,
            min(their_nb, their_pb) / ours_b,
            ">= 8x",
            min(their_nb, their_pb) >= 8 * ours_b,
            f"theirs: numba {their_nb * 1e3:.2f}, sparse {their_pb * 1e3:.2f} ms",
        ),
    ]


# ---------------------------------------------------------------- masks


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


def _floor_pass(root, ids, bits) -> list[float]:
    """Seconds of llguidance's bare `fill_next_token_bitmask` at each prefix of `ids`."""
    from llguidance.numpy import fill_next_token_bitmask

    m, steps = root.deep_copy(), []
    for i in range(len(ids) + 1):
        t0 = time.perf_counter()
        fill_next_token_bitmask(m, bits, 0)
        steps.append(time.perf_counter() - t0)
        if i < len(ids):
            m.consume_token(ids[i])
    return steps


async def _mask_rows(name: str, lm) -> list[dict]:
    import llguidance
    import llguidance.hf
    from llguidance.numpy import allocate_token_bitmask

    from genlm_lab.control import BoolFSA, JsonSchema, PromptedLLM
    from genlm_lab.control._guidance import exact_grammar

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

        passes: dict[str, list] = {"ours": [], "dense": [], "floor": [], "exact": []}
        for _ in range(MASK_REPS):  # interleaved: all see the same load
            passes["ours"].append(await _ours_pass(coerced, ctx, False))
            passes["dense"].append(await _ours_pass(coerced, ctx, True))
            passes["floor"].append(_floor_pass(matcher, ids, bits))
            passes["exact"].append(_floor_pass(exact, ids, bits))
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
                f"{med['exact'] * 1e3:.3f} ms. Masks equal llguidance's forcing-off mask on "
                + ("every step" if not bad_exact else "all steps but " + "; ".join(bad_exact))
                + "; the default (forcing) mask differs "
                + (
                    "nowhere"
                    if not bad_floor
                    else "where the grammar forces a key (it allows only the key's canonical "
                    "tokens, ours every token whose bytes fit, as a byte-level potential "
                    "coerced through b''.join must): " + "; ".join(bad_floor)
                )
                + f"; one mask {_mb(weights.bits.nbytes)} packed ({_mb(mask.nbytes)} as bool, "
                f"{_mb(weights.weights.nbytes)} as weights), one new cached step retains "
                f"{_mb(step_mem)}; coerce {coerce_s:.2f} s, llguidance tokenizer {ltok_s:.2f} s",
            )
        )
    return rows


# ---------------------------------------------------------------- byte beam


async def _read(beam, text: bytes):
    for b in text:
        beam = beam.prune()
        await beam.logp_next()
        beam = await (beam << b)
    return beam


async def _ours_beam(lm, text: bytes) -> dict:
    from genlm_lab.bytes import BeamParams, ByteBeamState

    lm.clear_cache()
    start = time.perf_counter()
    beam = await ByteBeamState.initial(lm, BeamParams(K=BEAM_K))
    initial = time.perf_counter() - start
    beam = await _read(beam, text)
    wall = time.perf_counter() - start
    return {"wall": wall, "initial": initial, "logZ": float(beam.logZ)}


async def _their_beam(llm, text: bytes) -> dict:
    from genlm.bytes import BeamParams as TheirParams
    from genlm.bytes import ByteBeamState as TheirBeam

    llm.clear_cache()
    start = time.perf_counter()
    beam = await TheirBeam.initial(llm, TheirParams(K=BEAM_K))
    initial = time.perf_counter() - start
    beam = await _read(beam, text)
    wall = time.perf_counter() - start
    await beam.cleanup()
    return {"wall": wall, "initial": initial, "logZ": float(beam.logZ)}


def _beam_rows(name: str, lm) -> list[dict]:
    from genlm.backend.llm import AsyncTransformer as TheirTransformer

    their = TheirTransformer(lm.model, lm.tokenizer)
    text = BEAM_TEXT.encode()
    ours = [asyncio.run(_ours_beam(lm, text)) for _ in range(2)]
    theirs = [asyncio.run(_their_beam(their, text)) for _ in range(2)]
    o = min(ours, key=lambda r: r["wall"])
    t = min(theirs, key=lambda r: r["wall"])
    o_steps, t_steps = o["wall"] - o["initial"], t["wall"] - t["initial"]
    n = len(text)
    return [
        _row(
            name,
            f"byte beam K={BEAM_K} exact, {n} B with logp_next every byte (s)",
            o["wall"],
            t["wall"],
            t["wall"] / o["wall"],
            ">= 3x",
            t["wall"] >= 3 * o["wall"],
            f"genlm-bytes 0.2.0 on genlm-backend's AsyncTransformer over the same HF model "
            f"(2-layer LLaMA, hidden 32); best of 2, initial() (trie build) included on both "
            f"sides: ours {o['initial']:.2f} s, theirs {t['initial']:.2f} s; per byte after "
            f"it: ours {o_steps / n * 1e3:.1f} ms, theirs {t_steps / n * 1e3:.1f} ms "
            f"({t_steps / o_steps:.1f}x); logZ ours {o['logZ']:.4f}, theirs {t['logZ']:.4f}",
        )
    ]


# ---------------------------------------------------------------- driver


def _parts() -> set[str]:
    """The row groups to measure: BENCH_VOCABS_PARTS (comma-separated trie, mask, beam) or all."""
    wanted = os.environ.get("BENCH_VOCABS_PARTS")
    parts = set(wanted.split(",")) if wanted else set(PARTS)
    if not parts or parts - set(PARTS):
        raise ValueError(f"BENCH_VOCABS_PARTS={wanted!r}: expected some of {', '.join(PARTS)}")
    return parts


def _label(parts: set[str]) -> str:
    return " and ".join(p for p in PARTS if p in parts) + " rows' re-run"


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split(" | ")]


def merge_section(text: str, rows: list[dict], parts: set[str], elapsed: float) -> str:
    """RESULTS.md `text` with the bench_vocabs rows that `rows` re-measured replaced.

    Rows are matched by (benchmark, metric); new ones go after the last row of
    their benchmark (a new conditions row after the first one). The section
    header keeps the full run's date and adds this re-run's.
    """
    from run_all import table

    head, sep, rest = text.partition("\n## bench_vocabs (")
    if not sep:
        raise ValueError("RESULTS.md has no bench_vocabs section to update: run it fully once")
    stamp_line, _, body = rest.partition("\n")
    end = body.find("\n## ")
    section, tail = (body, "") if end < 0 else (body[:end], body[end:])
    lines = [ln for ln in section.splitlines() if ln.startswith("| ") and "---" not in ln]
    old = [_cells(ln) for ln in lines[1:]]  # skip the column names
    new = [_cells(ln) for ln in table(rows).splitlines()[2:]]
    by_key = {(r[0], r[1]): r for r in new}
    merged = [by_key.pop((r[0], r[1]), r) for r in old]
    for key, row in by_key.items():  # rows the full run did not have
        same = [i for i, r in enumerate(merged) if r[0] == key[0]]
        merged.insert((same[0] if key[0] == "vocabs" else same[-1]) + 1 if same else 0, row)
    when = time.strftime("%Y-%m-%d %H:%M")
    full = stamp_line.split(";")[0].rstrip(")")
    header = f"## bench_vocabs ({full}; {_label(parts)} {when}, {elapsed:.0f} s)"
    lines = table([]).splitlines() + ["| " + " | ".join(r) + " |" for r in merged]
    return head + "\n" + header + "\n\n" + "\n".join(lines) + "\n" + tail


def _vocab_rows(short: str, label: str, parts: set[str]) -> list[dict]:
    from transformers import AutoTokenizer

    from genlm_lab.backend import load_model_by_name

    directory = PANEL_DIR / short
    if not (directory / "tokenizer.json").is_file():
        return [
            _row(
                label,
                "skipped",
                None,
                None,
                None,
                None,
                None,
                f"no tokenizer in {directory}: run scripts/fetch_tokenizers.sh",
            )
        ]
    tokenizer = AutoTokenizer.from_pretrained(directory)
    name = f"{label} ({len(tokenizer):,} tokens)"
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        lm = load_model_by_name(
            str(_model_dir(tokenizer, Path(tmp))), backend="hf", llm_opts={"device": "cpu"}
        )
        load_s = time.perf_counter() - start
    print(f"  vocabs: {name} loaded in {load_s:.1f} s", flush=True)
    rows = []
    if "trie" in parts:
        rows += _trie_rows(name, lm.byte_vocab)
        print(f"  vocabs: {name} trie done", flush=True)
    if "mask" in parts:
        rows += asyncio.run(_mask_rows(name, lm))
        print(f"  vocabs: {name} masks done", flush=True)
    if "beam" in parts:
        rows += _beam_rows(name, lm)
    return rows


def run() -> list[dict]:
    """All rows (see the module docstring)."""
    import torch

    # Both sides on one thread: on this 2-core machine shared by many jobs, torch's
    # intra-op threads spin against each other (a byte-beam step took 6x longer with 2).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    wanted = os.environ.get("BENCH_VOCABS")
    names = wanted.split(",") if wanted else list(VOCABS)
    parts = _parts()
    load_before = os.getloadavg()[0]
    rows = []
    for short in names:
        rows += _vocab_rows(short, VOCABS.get(short, short), parts)
    torch.set_num_threads(threads)
    rows.insert(
        0,
        result_row(
            "vocabs",
            "conditions of this run"
            if parts == set(PARTS)
            else f"conditions of the {_label(parts)}",
            load_before,
            os.getloadavg()[0],
            None,
            "report",
            None,
            f"1-minute load average at the start (ours) and end (baseline) on {os.cpu_count()} "
            "cores, a shared machine: ratios are side by side in one process, walls are not "
            "comparable across runs; torch on 1 thread for both sides",
        ),
    )
    return rows


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run_all import table

    start = time.perf_counter()
    rows = run()
    print(table(rows))
    parts = _parts()
    if parts != set(PARTS):  # a partial run replaces only its rows in RESULTS.md
        RESULTS.write_text(
            merge_section(RESULTS.read_text(), rows, parts, time.perf_counter() - start)
        )
        print(f"updated bench_vocabs in {RESULTS} ({_label(parts)})")
