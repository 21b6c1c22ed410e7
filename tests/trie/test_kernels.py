"""Numba kernels: compiled when the first trie is built, never by a query."""

import numpy as np
import torch

from genlm_lab.trie import TokenCharacterTrie, _kernels

KERNELS = [
    _kernels.weight_sum_1,
    _kernels.weight_max_1,
    _kernels.weight_sum_batch,
    _kernels.weight_max_batch,
    _kernels.permute_to_slots,
    _kernels.pull_sum,
    _kernels.pull_max,
]


def brute(trie, vocab, ws, reduce, empty):
    """Per node: `reduce` of the weights of the tokens below it (a leaf holds its own token)."""
    out = []
    for node in range(trie.n_nodes):
        if node in trie.leaf2token_id:
            below = [trie.leaf2token_id[node]]
        else:
            below = [t for t, tok in enumerate(vocab) if tok.startswith(trie.node2prefix[node])]
        out.append(reduce(ws[t] for t in below) if below else empty)
    return out


def test_queries_of_every_kind_and_float_type_compile_nothing():
    vocab = [b"a", b"ab", b"b", b"abc", b"ab"]
    trie = TokenCharacterTrie(vocab)  # the first trie of a process warms every kernel
    before = {k.__name__: set(k.signatures) for k in KERNELS}
    rng = np.random.default_rng(0)
    ws = rng.random(len(vocab))
    rows = [
        ws.tolist(),
        ws.astype(np.float32),
        torch.tensor(ws, dtype=torch.float32),
        torch.tensor(ws, dtype=torch.float64),
    ]
    for row in rows:
        want_sum = brute(trie, vocab, ws, sum, 0.0)
        want_max = brute(trie, vocab, ws, max, -np.inf)
        np.testing.assert_allclose(trie.weight_sum(row), want_sum, rtol=1e-6)
        np.testing.assert_allclose(trie.weight_max(row), want_max, rtol=1e-6)
        for n_batch in (3, 20):  # below and above the "pull" threshold
            batch = [row] * n_batch
            np.testing.assert_allclose(trie.batch_weight_sum(batch), [want_sum] * n_batch, 1e-6)
            np.testing.assert_allclose(trie.batch_weight_max(batch), [want_max] * n_batch, 1e-6)
    after = {k.__name__: set(k.signatures) for k in KERNELS}
    assert after == before
