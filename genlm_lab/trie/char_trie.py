"""`TokenCharacterTrie`: per-prefix probability mass of a vocabulary, on CPU with numba."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from genlm_lab.trie.base import TrieBase
from genlm_lab.trie.structure import as_byte_vocab, build_structure
from genlm_lab.util.gc_pause import gc_paused


def _char_leaf_key(_children: dict, token_id: int) -> tuple[None, int]:
    return (None, token_id)


class TokenCharacterTrie(TrieBase):
    """A trie over the byte strings of a vocabulary, with one leaf per token id.

    Every node stands for a byte prefix; below it hang the tokens that start
    with that prefix. Each token id has its own leaf, reached from the node of
    its full byte string by the edge `(None, token_id)`, so duplicate byte
    strings keep separate leaves. Nodes are numbered in pre-order (root 0, a
    subtree is a contiguous range) so that `weight_sum` is one reverse pass.

    Attributes:
        decode: the vocabulary (bytes or `Token`, index = token id).
        children: per node, a dict edge -> child (byte value, or `(None, id)`).
        root: the root node (0).
        node2prefix: dict node -> the bytes of its prefix (a leaf: its token's bytes).
        word2leaf: vocabulary entry -> leaf; a `Token` entry is found by itself
            and by its plain bytes (for repeated bytes, the first token's leaf).
        leaf2word: leaf -> vocabulary entry.
        leaf2token_id: leaf -> token id.
        token_id_to_leaf: int32 array of rows (token id, leaf).
        parent: int32 array, parent of each node (-1 for the root).

    Args:
        decode: one byte string (or `Token`) per token id.

    Raises:
        ValueError: if the vocabulary is empty or holds something other than bytes.
    """

    def __init__(self, decode: Sequence[bytes]):
        self._init(decode, device="cpu", kernel="numba")

    def _init(self, decode: Sequence[bytes], device: Any, kernel: str | None) -> None:
        words = as_byte_vocab(decode)
        self.decode = decode
        with gc_paused():  # millions of objects, none of them garbage
            structure = build_structure(words, _char_leaf_key)
            self._setup(structure, {None: structure.token_leaf}, device=device, kernel=kernel)

    def weight_sum(self, ws: np.ndarray | torch.Tensor) -> np.ndarray:
        """Mass of every node: the total weight of the tokens below it.

        Args:
            ws: one non-negative weight per token id, shape (len(decode),).

        Returns:
            float64 array of shape (n_nodes,); the root holds ws.sum() and a
            leaf its token's weight.

        Raises:
            ValueError: if ws has the wrong length or holds NaN or negatives.
        """
        return self._single(ws, None, "sum")

    def weight_max(self, ws: np.ndarray | torch.Tensor) -> np.ndarray:
        """Largest weight of the tokens below every node (any real weights, e.g. log-probs).

        Raises:
            ValueError: if ws has the wrong length or holds NaN.
        """
        return self._single(ws, None, "max")

    def batch_weight_sum(self, ws: Any) -> np.ndarray:
        """`weight_sum` for a batch: ws of shape (batch, len(decode)) or a list of rows.

        Returns:
            float64 array of shape (batch, n_nodes).
        """
        return self._batch(ws, None, "sum")

    def batch_weight_max(self, ws: Any) -> np.ndarray:
        """`weight_max` for a batch: ws of shape (batch, len(decode)) or a list of rows."""
        return self._batch(ws, None, "max")

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.n_tokens} tokens, {self.n_nodes} nodes, "
            f"kernel={self.kernel!r}, device={self.device.type!r})"
        )

    def _repr_html_(self) -> str:
        """Sizes only (a full trie has ~150k nodes): how to draw a part of it is one call away."""
        return (
            f"<div class='genlm-trie-summary'><b>{html.escape(type(self).__name__)}</b>: "
            f"{self.n_tokens:,} tokens, {self.n_nodes:,} nodes, kernel "
            f"<code>{html.escape(self.kernel)}</code> on <code>{html.escape(str(self.device))}"
            "</code><br><small>draw a subtree: <code>.visualize(ws, prefix=...)</code>"
            "</small></div>"
        )
