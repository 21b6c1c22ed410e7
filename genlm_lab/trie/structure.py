"""Build a token trie once, in Python, as dicts plus flat arrays.

Nodes are numbered in pre-order (root 0, each parent before its children,
each subtree a contiguous range), which gives the kernels a single reverse
pass and good memory locality. Children of a node are ordered: leaf
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
        node2prefix: per node, the bytes spelled by the path from the root.
        eos_node: the EOS node, or None when the trie has none.
    """

    children: list[dict]
    parent: np.ndarray
    depth: np.ndarray
    token_leaf: np.ndarray
    node2prefix: list[bytes]
    eos_node: int | None


def as_byte_vocab(decode: Sequence) -> list[bytes]:
    """Check a vocabulary and return the plain bytes of each entry.

    Raises:
        ValueError: if the vocabulary is empty or an entry is not bytes.
    """
    if decode is None or len(decode) == 0:
        raise ValueError(
            "decode cannot be empty: the vocabulary needs at least one token (bytes or Token)"
        )
    words = []
    for token_id, item in enumerate(decode):
        if not isinstance(item, (bytes, bytearray)):
            raise ValueError(
                f"vocabulary entry {token_id} is {type(item).__name__} ({item!r}); "
                "expected bytes or Token"
            )
        words.append(bytes(item))
    return words


def build_structure(
    words: Sequence[bytes],
    leaf_key: Callable[[dict, int], Hashable],
    atomic_ids: frozenset[int] = frozenset(),
    with_eos_node: bool = False,
) -> TrieStructure:
    """Build the trie of `words` directly in pre-order.

    Tokens sorted by (bytes, id) visit the trie in pre-order when a token
    that ends at a node comes before the longer ones through it, which is what
    byte order does. So one pass over the sorted tokens, keeping the current
    root-to-node path, creates every node in its final number; atomic tokens
    and the EOS node follow under the root.

    Args:
        words: byte string of each token id.
        leaf_key: given a node's children dict and a token id, the key of the
            end-of-token edge for that token (must not already be in the dict).
        atomic_ids: token ids whose whole byte string is a single edge.
        with_eos_node: add an EOS node under the root (edge key `EOS`).
    """
    children: list[dict] = [{}]
    parent = [-1]
    depth = [0]
    prefix = [b""]
    token_leaf = [0] * len(words)
    order = sorted((i for i in range(len(words)) if i not in atomic_ids), key=words.__getitem__)
    path = [0]  # path[d] = node of prev[:d]
    prev = b""
    for token_id in order:
        word = words[token_id]
        common = 0
        limit = min(len(word), len(prev))
        while common < limit and word[common] == prev[common]:
            common += 1
        del path[common + 1 :]
        node = path[common]
        for k in range(common, len(word)):
            child = len(parent)
            children[node][word[k]] = child
            children.append({})
            parent.append(node)
            depth.append(k + 1)
            prefix.append(word[: k + 1])
            path.append(child)
            node = child
        leaf = len(parent)
        children[node][leaf_key(children[node], token_id)] = leaf
        children.append({})
        parent.append(node)
        depth.append(len(word) + 1)
        prefix.append(word)
        token_leaf[token_id] = leaf
        prev = word
    for token_id in sorted(atomic_ids, key=lambda i: (words[i], i)):
        word = words[token_id]
        node = children[0].get(word)
        if node is None:
            node = children[0][word] = len(parent)
            children.append({})
            parent.append(0)
            depth.append(1)
            prefix.append(word)
        leaf = len(parent)
        children[node][leaf_key(children[node], token_id)] = leaf
        children.append({})
        parent.append(node)
        depth.append(2)
        prefix.append(word)
        token_leaf[token_id] = leaf
    eos_node = None
    if with_eos_node:
        eos_node = children[0][EOS] = len(parent)
        children.append({})
        parent.append(0)
        depth.append(1)
        prefix.append(b"")
    parent_arr = np.asarray(parent, dtype=np.int32)
    return TrieStructure(
        children=children,
        parent=parent_arr,
        depth=np.asarray(depth, dtype=np.int32),
        token_leaf=np.asarray(token_leaf, dtype=np.int32),
        node2prefix=prefix,
        eos_node=eos_node,
    )
