"""Build a token trie once with Python dicts, then freeze it into arrays.

The frozen form numbers nodes in pre-order (root 0, each parent before its
children, each subtree a contiguous range), which gives the kernels a single
reverse pass and good memory locality. Children of a node are ordered: leaf
(end-of-token) edges by token id, then byte edges by byte value, then atomic
edges, then the EOS edge.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import numpy as np

EOS = 257
"""Edge key of the EOS node under the root (bytes are 0..255, 256 is the EOT slot)."""


@dataclass
class TrieStructure:
    """The frozen shape of a trie.

    Attributes:
        children: per node, a dict from edge key to child node.
        parent: int32 array, parent of each node (-1 for the root).
        depth: int32 array, number of edges from the root.
        token_leaf: int32 array, the leaf node of each token id.
        leaf_token: int32 array, the token id of each node (-1 if not a leaf).
        node2prefix: per node, the bytes spelled by the path from the root.
        eos_node: the EOS node, or None when the trie has none.
    """

    children: list[dict]
    parent: np.ndarray
    depth: np.ndarray
    token_leaf: np.ndarray
    leaf_token: np.ndarray
    node2prefix: list[bytes]
    eos_node: int | None


def as_byte_vocab(decode: Sequence) -> list[bytes]:
    """Check a vocabulary and return the plain bytes of each entry.

    Raises:
        ValueError: if the vocabulary is empty or an entry is not bytes.
    """
    if decode is None or len(decode) == 0:
        raise ValueError("the vocabulary is empty: pass a non-empty list of bytes (or Token)")
    words = []
    for token_id, item in enumerate(decode):
        if not isinstance(item, (bytes, bytearray)):
            raise ValueError(
                f"vocabulary entry {token_id} is {type(item).__name__} ({item!r}); "
                "expected bytes or Token"
            )
        words.append(bytes(item))
    return words


def _edge_rank(key: Hashable, is_leaf: bool, token_id: int) -> tuple:
    if is_leaf:
        return (0, token_id, b"")
    if isinstance(key, int) and key < 256:
        return (1, key, b"")
    if isinstance(key, bytes):
        return (2, 0, key)
    return (3, 0, b"")


def build_structure(
    words: Sequence[bytes],
    leaf_key: Callable[[dict, int], Hashable],
    atomic_ids: frozenset[int] = frozenset(),
    with_eos_node: bool = False,
) -> TrieStructure:
    """Build the trie of `words` and freeze it in pre-order.

    Args:
        words: byte string of each token id.
        leaf_key: given a node's children dict and a token id, the key of the
            end-of-token edge for that token (must not already be in the dict).
        atomic_ids: token ids whose whole byte string is a single edge.
        with_eos_node: add an EOS node under the root (edge key `EOS`).
    """
    # Phase 1: dict trie with provisional ids.
    kids: list[dict] = [{}]
    leaf_of: list[int] = []
    for token_id, word in enumerate(words):
        node = 0
        for sym in (word,) if token_id in atomic_ids else word:
            child = kids[node].get(sym)
            if child is None:
                child = len(kids)
                kids[node][sym] = child
                kids.append({})
            node = child
        leaf = len(kids)
        kids[node][leaf_key(kids[node], token_id)] = leaf
        kids.append({})
        leaf_of.append(leaf)
    tmp_eos = None
    if with_eos_node:
        tmp_eos = len(kids)
        kids[0][EOS] = tmp_eos
        kids.append({})
    tmp_leaf_token = {leaf: t for t, leaf in enumerate(leaf_of)}

    # Phase 2: pre-order numbering, children in a fixed order.
    n = len(kids)
    new_id = np.empty(n, dtype=np.int64)
    parent = np.empty(n, dtype=np.int32)
    depth = np.empty(n, dtype=np.int32)
    prefix: list[bytes] = [b""] * n
    children: list[dict] = [None] * n  # type: ignore[list-item]
    stack = [(0, -1, 0, b"")]  # (old id, new parent, depth, prefix)
    counter = 0
    while stack:
        old, new_parent, d, pre = stack.pop()
        me = counter
        counter += 1
        new_id[old] = me
        parent[me] = new_parent
        depth[me] = d
        prefix[me] = pre
        edges = kids[old]
        if not edges:
            children[me] = {}
            continue
        ordered = sorted(
            edges.items(),
            key=lambda kv: _edge_rank(kv[0], kv[1] in tmp_leaf_token, tmp_leaf_token.get(kv[1], 0)),
        )
        children[me] = ordered  # type: ignore[assignment]  # renumbered below
        for key, child in reversed(ordered):
            if child in tmp_leaf_token:
                child_pre = pre
            elif isinstance(key, int):
                child_pre = pre + bytes((key,)) if key < 256 else pre
            else:
                child_pre = pre + key if isinstance(key, bytes) else pre
            stack.append((child, me, d + 1, child_pre))
    for node in range(n):
        ordered = children[node]
        if ordered:
            children[node] = {key: int(new_id[child]) for key, child in ordered}  # type: ignore[index]
    token_leaf = new_id[np.asarray(leaf_of, dtype=np.int64)].astype(np.int32)
    leaf_token = np.full(n, -1, dtype=np.int32)
    leaf_token[token_leaf] = np.arange(len(words), dtype=np.int32)
    return TrieStructure(
        children=children,
        parent=parent,
        depth=depth,
        token_leaf=token_leaf,
        leaf_token=leaf_token,
        node2prefix=prefix,
        eos_node=None if tmp_eos is None else int(new_id[tmp_eos]),
    )
