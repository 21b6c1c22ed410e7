"""`ByteLevels`: a byte trie's edges grouped by depth, so a mask walks a depth at once.

`PythonRegex` reads a token mask off its automaton by stepping every node of
one trie depth together with numpy; this is that grouping, cached per trie.
"""

from __future__ import annotations

import weakref
from itertools import chain
from typing import Any

import numpy as np

__all__ = ["ByteLevels"]


class ByteLevels:
    """A byte trie's edges grouped by depth, to walk each depth with numpy (cached per trie).

    `levels`: per depth 1, 2, ..., arrays (child node, parent node, byte) of
    its edges; `token_node`: the node each token ends at.
    """

    _cache: weakref.WeakKeyDictionary[Any, ByteLevels] = weakref.WeakKeyDictionary()

    def __init__(self, trie: Any) -> None:
        children = trie.children
        self.n_nodes = n = len(children)
        counts = np.fromiter(map(len, children), dtype=np.int64, count=n)
        edges = int(counts.sum())
        parent_of = np.zeros(n, dtype=np.int64)
        byte_of = np.zeros(n, dtype=np.int64)
        child = np.fromiter(chain.from_iterable(d.values() for d in children), np.int64, edges)
        parent_of[child] = np.repeat(np.arange(n), counts)
        byte_of[child] = np.fromiter(chain.from_iterable(children), np.int64, edges)
        # Depths by pointer jumping: after round k, `up` is each node's 2**k-th ancestor (the
        # root at most) and `depth` its distance to it; the root is its own parent.
        up, depth = parent_of, (np.arange(n) != 0).astype(np.int64)
        while up.any():
            depth = depth + depth[up]
            up = up[up]
        order = child[np.argsort(depth[child], kind="stable")]
        bounds = np.searchsorted(depth[order], np.arange(1, int(depth.max()) + 2))
        self.levels = [
            (nodes, parent_of[nodes], byte_of[nodes])
            for nodes in np.split(order, bounds[1:-1])
            if len(nodes)
        ]
        ends = trie.ends
        self.token_node = np.zeros(trie.n_tokens, dtype=np.int64)
        tokens = np.fromiter(chain.from_iterable(ends), np.int64)
        self.token_node[tokens] = np.repeat(np.arange(n), [len(e) for e in ends])

    @classmethod
    def of(cls, trie: Any) -> ByteLevels:
        found = cls._cache.get(trie)
        if found is None:
            found = cls._cache[trie] = cls(trie)
        return found
