"""`TokenByteTrie`: the byte trie a byte-level beam walks, with EOS handling modes.

Like `TokenCharacterTrie`, every node is a byte prefix and every token id has
its own leaf. Differences that the byte-level beam relies on:

- The end-of-token (EOT) edge of a token is keyed by `(eot_token, token_id)`
  (`eot_token` defaults to None), as in genlm-bytes 0.2: token ids that share
  their bytes get one leaf each under the same node.
- An EOS node hangs under the root by the edge `EOS` (257). In
  `TrieMode.WITH_EOS` the weight of every EOS token goes to that node (and so
  to the root) instead of to its byte prefixes; in `WITHOUT_EOS` EOS tokens
  are ordinary tokens and the EOS node holds nothing.
- Atomic tokens are one edge from the root, keyed by their whole bytes.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from enum import Enum
from functools import cached_property
from typing import Any

import numpy as np
import torch

from genlm_lab.bytes._beam_profile import charge_batch
from genlm_lab.trie.async_trie import AsyncTrieBase, check_request
from genlm_lab.trie.base import TrieBase
from genlm_lab.trie.structure import EOS, as_byte_vocab, build_structure
from genlm_lab.util.gc_pause import gc_paused
from genlm_lab.util.renamed import renamed_argument


class TrieMode(Enum):
    """How EOS tokens count in `weight_sum`."""

    WITHOUT_EOS = "without_eos"  # EOS tokens are ordinary tokens
    WITH_EOS = "with_eos"  # EOS tokens' mass goes to the EOS node under the root


class TrieOp(Enum):
    """The two reductions a trie computes."""

    SUM = "sum"
    MAX = "max"


def _resolve_tokens(
    given: Iterable | None, words: list[bytes], what: str
) -> tuple[frozenset[int], set[bytes]]:
    """Token ids named by `given`: a Token or int names one id, plain bytes every id with them."""
    ids: set[int] = set()
    names: set[bytes] = set()
    if not given:
        return frozenset(), names
    by_bytes: dict[bytes, list[int]] = {}
    for t, w in enumerate(words):
        by_bytes.setdefault(w, []).append(t)
    for tok in given:
        token_id = getattr(tok, "token_id", None)
        if isinstance(tok, (int, np.integer)) and not isinstance(tok, bool):
            token_id = int(tok)
        if token_id is not None:
            if not 0 <= token_id < len(words) or (
                isinstance(tok, bytes) and words[token_id] != bytes(tok)
            ):
                raise ValueError(
                    f"{what} token {tok!r} is not in the vocabulary ({len(words)} tokens)"
                )
            ids.add(token_id)
            names.add(words[token_id])
        elif isinstance(tok, (bytes, bytearray)):
            if bytes(tok) not in by_bytes:
                raise ValueError(f"{what} token {bytes(tok)!r} is not in the vocabulary")
            ids.update(by_bytes[bytes(tok)])
            names.add(bytes(tok))
        else:
            raise ValueError(f"{what} token {tok!r} must be bytes, a Token or a token id")
    return frozenset(ids), names


class TokenByteTrie(TrieBase):
    """Byte trie of a vocabulary with per-node mass, for byte-level beams.

    Args:
        decode: one byte string (or `Token`) per token id.
        device: "cpu", "cuda" or None (CUDA when available).
        atomic_byte_strings: tokens kept whole as one edge (bytes, `Token` or ids).
        eot_sentinel: first item of every end-of-token edge key,
            `(eot_sentinel, token_id)` (default None).
        eos_byte_strings: tokens that end the sequence (bytes, `Token` or ids).
        max_batch_size: largest batch one sparse product handles at once.
        kernel: "numba", "sparse" or None (numba on CPU, sparse on CUDA).
        atomic_tokens, eos_tokens: the names of `atomic_byte_strings` and
            `eos_byte_strings` before genlm-bytes 0.2 (a `DeprecationWarning`;
            giving both names is a `TypeError`). `eot_token` is another name
            of `eot_sentinel`.

    Attributes:
        eos_byte_strings, atomic_byte_strings: the byte strings of the EOS and
            atomic tokens (sets; also readable as `eos_tokens`, `atomic_tokens`).
        eot_token: the same as `eot_sentinel`.
        eos_node: the EOS node under the root.
        eos_token_ids: sorted token ids treated as EOS.
        children, root, word2leaf, leaf2word, leaf2token_id, token_id_to_leaf,
        parent: as in `TokenCharacterTrie`.
        node2prefix: node -> its prefix as a list of byte values, `[257]` for
            the EOS node (genlm-bytes' form; `TokenCharacterTrie` gives bytes).

    Raises:
        ValueError: on an empty vocabulary, or an atomic or EOS token not in it.
    """

    def __init__(
        self,
        decode: Sequence[bytes],
        device: str | torch.device | None = None,
        atomic_byte_strings: Iterable | None = None,
        eot_sentinel: Hashable = None,
        eos_byte_strings: Iterable | None = None,
        max_batch_size: int = 64,
        kernel: str | None = None,
        *,
        atomic_tokens: Iterable | None = None,
        eot_token: Hashable = None,
        eos_tokens: Iterable | None = None,
    ):
        name = "TokenByteTrie"
        atomic = renamed_argument(
            name, "atomic_byte_strings", atomic_byte_strings, "atomic_tokens", atomic_tokens
        )
        eos = renamed_argument(name, "eos_byte_strings", eos_byte_strings, "eos_tokens", eos_tokens)
        if eot_token is not None and eot_sentinel is not None:
            raise TypeError("give eot_sentinel or eot_token (the same setting), not both")
        eot_token = eot_sentinel if eot_token is None else eot_token
        words = as_byte_vocab(decode)
        try:
            hash(eot_token)
        except TypeError:
            raise ValueError(
                f"eot_token {eot_token!r} must be hashable (it keys trie edges)"
            ) from None
        self.decode = decode
        self.eot_token = self.eot_sentinel = eot_token
        atomic_ids, self.atomic_byte_strings = _resolve_tokens(atomic, words, "atomic")
        eos_ids, self.eos_byte_strings = _resolve_tokens(eos, words, "EOS")
        self.atomic_tokens, self.eos_tokens = self.atomic_byte_strings, self.eos_byte_strings
        self.eos_token_ids = sorted(eos_ids)

        def leaf_key(children: dict, token_id: int) -> Hashable:
            # A tuple never equals a byte (int) or atomic (bytes) key, whatever eot_token is.
            return (eot_token, token_id)

        with gc_paused():  # millions of objects, none of them garbage
            structure = build_structure(words, leaf_key, atomic_ids, with_eos_node=True)
            self.eos_node = structure.eos_node
            with_eos = structure.token_leaf.copy()
            if self.eos_token_ids:
                with_eos[np.asarray(self.eos_token_ids)] = self.eos_node
            targets = {TrieMode.WITHOUT_EOS: structure.token_leaf, TrieMode.WITH_EOS: with_eos}
            self._setup(structure, targets, device, kernel, max_batch_size)

    @staticmethod
    def _mode(mode: TrieMode | None) -> TrieMode:
        if mode is None:
            return TrieMode.WITHOUT_EOS
        if isinstance(mode, str) and mode in {m.value for m in TrieMode}:
            return TrieMode(mode)  # genlm-bytes code also passes the value ("with_eos")
        if not isinstance(mode, TrieMode):
            raise ValueError(f"mode {mode!r} is not a TrieMode (WITH_EOS or WITHOUT_EOS)")
        return mode

    def weight_sum(self, ws: Any, mode: TrieMode | None = None) -> np.ndarray:
        """Mass of every node: the total weight of the tokens below it.

        Args:
            ws: one non-negative weight per token id, shape (len(decode),).
            mode: WITHOUT_EOS (default) or WITH_EOS (EOS mass on the EOS node).

        Returns:
            float64 array of shape (n_nodes,); the root holds ws.sum(). It is a
            `NodeWeights` (numpy, with `.cpu()` / `.numpy()` as genlm-bytes' tensor).

        Raises:
            ValueError: if ws has the wrong length or holds NaN or negatives.
        """
        return self._single(ws, self._mode(mode), "sum")

    def batch_weight_sum(self, ws: Any, mode: TrieMode | None = None) -> np.ndarray:
        """`weight_sum` for a batch (batch, len(decode)) or list of rows -> (batch, n_nodes)."""
        return self._batch(ws, self._mode(mode), "sum")

    def weight_max(self, ws: Any, mode: TrieMode | None = None) -> np.ndarray:
        """Largest token weight below every node (-inf where no token is below)."""
        return self._single(ws, self._mode(mode), "max")

    def batch_weight_max(self, ws: Any, mode: TrieMode | None = None) -> np.ndarray:
        """`weight_max` for a batch -> (batch, n_nodes)."""
        return self._batch(ws, self._mode(mode), "max")

    @cached_property
    def node2prefix(self) -> dict[int, list[int]]:
        """Node -> its prefix as a list of byte values, the EOS node's being `[257]`.

        The form genlm-bytes uses (genlm_lab reads bytes internally).
        """
        out = {n: list(p) for n, p in enumerate(self._node_prefix)}
        out[self.eos_node] = [EOS]
        return out

    def eot_children(self, node: int) -> list[tuple[int, int]]:
        """(token id, leaf) of every token whose bytes end exactly at `node`."""
        return [
            (self.leaf2token_id[leaf], leaf)
            for leaf in self.children[node].values()
            if leaf in self.leaf2token_id
        ]

    def __repr__(self) -> str:
        return (
            f"TokenByteTrie({self.n_tokens} tokens, {self.n_nodes} nodes, "
            f"{len(self.eos_token_ids)} EOS, kernel={self.kernel!r}, device={self.device.type!r})"
        )


class AsyncTokenByteTrie(AsyncTrieBase):
    """Batches concurrent `weight_sum` / `weight_max` awaits by (operation, mode).

    Args:
        trie: the `TokenByteTrie` to query.
    """

    trie: TokenByteTrie

    @classmethod
    def from_vocab(cls, vocab: Sequence[bytes], **kwargs: Any) -> AsyncTokenByteTrie:
        """Build a `TokenByteTrie(vocab, **kwargs)` and wrap it."""
        return cls(TokenByteTrie(vocab, **kwargs))

    def _run_batch(self, key: tuple[TrieOp, TrieMode], payloads: list) -> np.ndarray:
        # Runs in the batcher's task: profiled beams waiting on it charge it to "trie".
        return charge_batch("trie", self._run_batch_now, key, payloads)

    def _run_batch_now(self, key: tuple[TrieOp, TrieMode], payloads: list) -> np.ndarray:
        op, mode = key
        if op is TrieOp.SUM:
            return self.trie.batch_weight_sum(payloads, mode)
        return self.trie.batch_weight_max(payloads, mode)

    async def weight_sum(self, ws: Any, mode: TrieMode | None = None) -> np.ndarray:
        """Queue a `weight_sum`; concurrent calls with the same mode share one batched call.

        Raises:
            ValueError: for bad weights, to this caller only.
        """
        mode = self.trie._mode(mode)
        ws = check_request(ws, self.trie.n_tokens)
        return await self._batcher.submit((TrieOp.SUM, mode), ws)

    async def weight_max(self, ws: Any, mode: TrieMode | None = None) -> np.ndarray:
        """Queue a `weight_max`; concurrent calls share one batched call."""
        mode = self.trie._mode(mode)
        ws = check_request(ws, self.trie.n_tokens)
        return await self._batcher.submit((TrieOp.MAX, mode), ws)


__all__ = ["EOS", "AsyncTokenByteTrie", "TokenByteTrie", "TrieMode", "TrieOp"]
