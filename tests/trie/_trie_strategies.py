"""Hypothesis strategies for small vocabularies with shared prefixes and duplicates."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

_ALPHABET = st.sampled_from([0x61, 0x62, 0x20, 0x0A, 0xC3, 0xFF])


@st.composite
def vocabularies(draw, min_size: int = 1, max_size: int = 40) -> list[bytes]:
    """1-40 tokens of 1-10 bytes; a few stems force shared prefixes, and some repeat."""
    stems = draw(st.lists(st.binary(min_size=1, max_size=4), min_size=1, max_size=4))
    n = draw(st.integers(min_size, max_size))
    vocab: list[bytes] = []
    for _ in range(n):
        kind = draw(st.integers(0, 3))
        if kind == 0 and vocab:  # exact duplicate of an earlier token
            vocab.append(draw(st.sampled_from(vocab)))
        elif kind == 1:  # free-form
            vocab.append(bytes(draw(st.lists(_ALPHABET, min_size=1, max_size=10))))
        else:  # stem + tail, so tokens share prefixes (and some are prefixes of others)
            stem = draw(st.sampled_from(stems))
            tail = bytes(draw(st.lists(_ALPHABET, max_size=10 - len(stem))))
            vocab.append(stem + tail)
    return vocab


def random_weights(seed: int, n: int, batch: int | None = None) -> np.ndarray:
    """Non-negative weights with some exact zeros and a wide dynamic range."""
    rng = np.random.default_rng(seed)
    shape = (n,) if batch is None else (batch, n)
    w = rng.exponential(size=shape) * (rng.random(shape) > 0.2)
    return w


def brute_force(vocab: list[bytes], ws: np.ndarray, trie) -> tuple[np.ndarray, np.ndarray]:
    """Per node, sum and max of the weights of the tokens with that prefix (by enumeration).

    A leaf holds only its own token; an internal node every token whose bytes
    start with the node's prefix.
    """
    sums = np.zeros(len(trie.children))
    maxs = np.full(len(trie.children), -np.inf)
    for node in range(len(trie.children)):
        if node in trie.leaf2token_id:
            below = [trie.leaf2token_id[node]]
        else:
            p = trie.node2prefix[node]
            below = [t for t, w in enumerate(vocab) if w.startswith(p)]
        if below:
            sums[node] = ws[below].sum()
            maxs[node] = ws[below].max()
    return sums, maxs
