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
import tempfile
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
from _results_merge import merge_section
from _row import result_row
from _vocab_masks import mask_rows
from _vocab_masks import mb as _mb
from bench_trie import BATCH, _best, _max_diff, _theirs_index, _weights

from genlm_lab.backend.tiny import save_tiny_llama

os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore", category=UserWarning)
warnings.filterwarnings("ignore", category=DeprecationWarning)

REPO = Path(__file__).resolve().parents[1]
PANEL_DIR = Path(os.environ.get("GENLM_LAB_TOKENIZER_PANEL", REPO / ".cache" / "tokenizers"))
VOCABS = {"llama3": "Llama 3", "gemma3": "Gemma 3"}
BEAM_TEXT = "The old lighthouse keeper walked."
BEAM_K = 5
PARTS = ("trie", "mask", "beam")
RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def _row(name, metric, ours, baseline, ratio, target, met, note) -> dict:
    return result_row(f"vocabs: {name}", metric, ours, baseline, ratio, target, met, note)


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
        rows += asyncio.run(mask_rows(name, lm))
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
            merge_section(RESULTS.read_text(), rows, _label(parts), time.perf_counter() - start)
        )
        print(f"updated bench_vocabs in {RESULTS} ({_label(parts)})")
