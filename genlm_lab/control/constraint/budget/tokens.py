"""What every finisher shares: the `FitCheck` protocol and the vocabulary's byte trie.

A finisher counts tokens, so it reads the vocabulary as bytes (`token_bytes`),
keeps the usable tokens (`usable_mask`: not special, not empty) in a byte trie
(`byte_trie`), and counts the fewest tokens that spell given bytes
(`fewest_tokens`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from genlm_lab.control.potential.base import Potential
from genlm_lab.util.vocab_key import vocabulary_key

__all__ = [
    "FAR",
    "ByteTrie",
    "FitCheck",
    "byte_trie",
    "fewest_tokens",
    "token_bytes",
    "usable_mask",
]


FAR = np.iinfo(np.int64).max // 4  # "no path": farther than any budget


class FitCheck(Protocol):
    """Whether a prefix can still end within a number of tokens (see the module docstring)."""

    exact: bool
    guide: Any  # a `FinishGuide`, or None
    stats: dict[str, int]
    lookup: dict[Any, int]

    def encode(self, context: Sequence[Any]) -> list[int]: ...

    async def fits(
        self, context: Sequence[Any], left: int, ids: Sequence[int] | None = None
    ) -> bool: ...

    def needed_at_least(self, ids: Sequence[int]) -> int | None:
        """A lower bound on the tokens (EOS included) that end the text of `ids`, where one
        is known without reading a mask (for messages); None otherwise."""
        ...


# the last few vocabularies read (the list itself, its length, its bytes): building a
# finisher reads its vocabulary four times, and a run's potentials share one
_READ: OrderedDict[int, tuple[Sequence[Any], int, list[bytes] | None]] = OrderedDict()


def token_bytes(potential: Potential) -> list[bytes] | None:
    """The byte string of each token of `potential` (ints 0..255 are bytes), or None.

    The list is shared by the callers that read the same vocabulary: read it, never change it.
    """
    vocab = potential.vocab
    found = _READ.get(id(vocab))
    if found is not None and found[0] is vocab and found[1] == len(vocab):
        return found[2]
    out: list[bytes] | None = []
    for t in vocab:
        if isinstance(t, (bytes, bytearray)):
            out.append(bytes(t))
        elif isinstance(t, (int, np.integer)) and not isinstance(t, bool) and 0 <= t < 256:
            out.append(bytes([int(t)]))
        else:
            out = None
            break
    _READ[id(vocab)] = (vocab, len(vocab), out)
    if len(_READ) > 4:
        _READ.popitem(last=False)
    return out


class ByteTrie:
    """The usable tokens' byte trie as arrays: node i's parent and byte, by depth.

    `levels[d] = (nodes, parents, bytes)` holds the nodes at depth d + 1, so
    an automaton runs down the whole trie in one vectorised step per depth.
    `token_node[k]` is the node where token `token_ids[k]` ends.
    """

    def __init__(self, tokens: Sequence[bytes], usable: Sequence[int]) -> None:
        children: list[dict[int, int]] = [{}]
        depth = [0]
        parent = [0]
        byte = [0]
        node_of = []
        for i in usable:
            node = 0
            for b in tokens[i]:
                nxt = children[node].get(b)
                if nxt is None:
                    nxt = children[node][b] = len(children)
                    children.append({})
                    depth.append(depth[node] + 1)
                    parent.append(node)
                    byte.append(b)
                node = nxt
            node_of.append(node)
        self.n_nodes = len(children)
        depth_a = np.array(depth)
        parent_a = np.array(parent, dtype=np.int64)
        byte_a = np.array(byte, dtype=np.int64)
        self.levels = []
        for d in range(1, int(depth_a.max(initial=0)) + 1):
            nodes = np.flatnonzero(depth_a == d)
            self.levels.append((nodes, parent_a[nodes], byte_a[nodes]))
        self.token_ids = np.array(list(usable), dtype=np.int64)
        self.token_node = np.array(node_of, dtype=np.int64)
        self.children = children
        #: Trie nodes where some usable token ends.
        self.ends = frozenset(node_of)


_TRIES: dict[str, ByteTrie] = {}


def byte_trie(tokens: Sequence[bytes], usable: Sequence[int]) -> ByteTrie:
    key = vocabulary_key(tokens, list(usable))
    found = _TRIES.get(key)
    if found is None:
        if len(_TRIES) >= 8:
            _TRIES.pop(next(iter(_TRIES)))
        found = _TRIES[key] = ByteTrie(tokens, usable)
    return found


def fewest_tokens(trie: ByteTrie, data: bytes) -> int | None:
    """The fewest usable tokens whose bytes concatenate to `data` (None if none do)."""
    best = [0] + [FAR] * len(data)
    ends = trie.ends
    for i in range(len(data)):
        if best[i] >= FAR:
            continue
        node = 0
        for j in range(i, len(data)):
            node = trie.children[node].get(data[j])
            if node is None:
                break
            if node in ends and best[i] + 1 < best[j + 1]:
                best[j + 1] = best[i] + 1
    return None if best[-1] >= FAR else best[-1]


def usable_mask(potential: Potential) -> np.ndarray | None:
    """Tokens the constraint may allow: not special, not empty (None: every token)."""
    tokens = token_bytes(potential)
    if tokens is None:
        return None
    usable = np.array([bool(t) for t in tokens])
    for i in getattr(potential, "special", None) or ():
        if 0 <= i < len(usable):
            usable[i] = False
    return usable
