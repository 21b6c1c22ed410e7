"""The tokens of a vocabulary as a trie over their items (bytes, characters, ...), for set samplers."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

__all__ = ["ItemTrie", "token_items", "trie_of"]


def token_items(token: Any) -> list[Hashable]:
    """The items a token is a sequence of: byte values for bytes / `Token`, else `list(token)`."""
    if isinstance(token, (bytes, bytearray)):
        return list(bytes(token))
    return list(token)


class ItemTrie:
    """The item sequences of `vocab` (EOS excluded) as a trie with per-node token lists.

    Node 0 is the root. `flat_nodes` / `flat_tokens` list (node, token) for
    every node on every token's path, so subtree sums and maxima are one
    numpy call.
    """

    def __init__(self, vocab: Sequence[Any]) -> None:
        self.children: list[dict[Hashable, int]] = [{}]
        self.ends: list[list[int]] = [[]]
        nodes, tokens = [], []
        for index, token in enumerate(vocab):
            node = 0
            nodes.append(0)
            tokens.append(index)
            for item in token_items(token):
                child = self.children[node].get(item)
                if child is None:
                    child = len(self.children)
                    self.children[node][item] = child
                    self.children.append({})
                    self.ends.append([])
                node = child
                nodes.append(node)
                tokens.append(index)
            self.ends[node].append(index)
        self.flat_nodes = np.array(nodes, dtype=np.int64)
        self.flat_tokens = np.array(tokens, dtype=np.int64)
        self.n_nodes = len(self.children)

    def mass(self, weights: np.ndarray) -> np.ndarray:
        """Sum of `weights` (one per token) below each node."""
        return np.bincount(self.flat_nodes, weights[self.flat_tokens], minlength=self.n_nodes)

    def max(self, log_weights: np.ndarray) -> np.ndarray:
        """Largest of `log_weights` (one per token) below each node."""
        out = np.full(self.n_nodes, -math.inf)
        np.maximum.at(out, self.flat_nodes, log_weights[self.flat_tokens])
        return out


_TRIES: dict[tuple, ItemTrie] = {}


def trie_of(vocab: Sequence[Any]) -> ItemTrie:
    """The trie of a vocabulary, built once and shared by samplers over the same tokens."""
    key = tuple((type(t), tuple(token_items(t))) for t in vocab)
    trie = _TRIES.get(key)
    if trie is None:
        if len(_TRIES) >= 4:
            _TRIES.pop(next(iter(_TRIES)))
        trie = _TRIES[key] = ItemTrie(vocab)
    return trie
