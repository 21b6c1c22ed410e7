"""`ParallelTokenCharacterTrie`: node masses from a sparse reachability matrix (torch).

For each target array, a CSR matrix R of shape (n_nodes, vocab) holds
R[node, t] = 1 when node is the target of token t or one of its ancestors.
Then the masses of a batch W (vocab, batch) are R @ W: one sparse-dense
product, which is what GPUs do well. Max uses `scatter_reduce` over the same
(node, token) pairs. On CPU the numba kernel is faster; this path exists for
CUDA and for cross-checking.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import torch

from genlm_lab.trie._base import check_shape, raise_bad_weights
from genlm_lab.trie._kernels import HAS_NAN, HAS_NEGATIVE
from genlm_lab.trie.char_trie import TokenCharacterTrie


def reachability_pairs(parent: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(node, token) pairs: every token paired with its target node and all its ancestors."""
    nodes, tokens = [], []
    cur = target.astype(np.int64)
    tok = np.arange(len(target), dtype=np.int64)
    while len(cur):
        nodes.append(cur)
        tokens.append(tok)
        up = parent[cur].astype(np.int64)
        keep = up >= 0
        cur, tok = up[keep], tok[keep]
    return np.concatenate(nodes), np.concatenate(tokens)


class _SparseEngine:
    """Torch engine: CSR product for sums, scatter_reduce for maxima."""

    def __init__(
        self,
        parent: np.ndarray,
        targets: dict[Hashable, np.ndarray],
        device: torch.device,
        max_batch_size: int = 64,
    ):
        self.device = device
        self.dtype = torch.float64 if device.type == "cpu" else torch.float32
        self.n_nodes = len(parent)
        self.max_batch_size = max_batch_size
        self.matrices: dict[Hashable, torch.Tensor] = {}
        self.pairs: dict[Hashable, tuple[torch.Tensor, torch.Tensor]] = {}
        for mode, target in targets.items():
            nodes, tokens = reachability_pairs(parent, target)
            order = np.lexsort((tokens, nodes))
            nodes, tokens = nodes[order], tokens[order]
            crow = np.zeros(self.n_nodes + 1, dtype=np.int64)
            np.cumsum(np.bincount(nodes, minlength=self.n_nodes), out=crow[1:])
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
                matrix = torch.sparse_csr_tensor(
                    torch.from_numpy(crow),
                    torch.from_numpy(tokens),
                    torch.ones(len(tokens), dtype=self.dtype),
                    size=(self.n_nodes, len(target)),
                    check_invariants=False,
                )
            self.matrices[mode] = matrix.to(device)
            self.pairs[mode] = (
                torch.from_numpy(nodes).to(device),
                torch.from_numpy(tokens).to(device),
            )

    def _as_tensor(self, ws: Any, n_tokens: int, batched: bool) -> torch.Tensor:
        if batched and isinstance(ws, (list, tuple)):
            if len(ws) == 0:
                raise ValueError("the batch of weights is empty; pass at least one weight vector")
            rows = [torch.as_tensor(np.asarray(w) if not torch.is_tensor(w) else w) for w in ws]
            for r in rows:
                check_shape(tuple(r.shape), n_tokens, batched=False)
            t = torch.stack([r.to(self.device, self.dtype) for r in rows])
        else:
            t = ws if torch.is_tensor(ws) else torch.as_tensor(np.asarray(ws))
            check_shape(tuple(t.shape), n_tokens, batched)
            t = t.to(self.device, self.dtype)
            if not batched:
                t = t[None, :]
        return t

    def run(self, ws: Any, n_tokens: int, mode: Hashable, op: str, batched: bool) -> np.ndarray:
        t = self._as_tensor(ws, n_tokens, batched)
        what = f"weight_{op}"
        if bool(torch.isnan(t).any()):
            raise_bad_weights(t.cpu().numpy() if batched else t[0].cpu().numpy(), HAS_NAN, what)
        if op == "sum" and bool((t < 0).any()):
            raise_bad_weights(
                t.cpu().numpy() if batched else t[0].cpu().numpy(), HAS_NEGATIVE, what
            )
        chunks = []
        for i in range(0, t.shape[0], self.max_batch_size):
            part = t[i : i + self.max_batch_size]
            if op == "sum":
                out = (self.matrices[mode] @ part.T.contiguous()).T
            else:
                nodes, tokens = self.pairs[mode]
                out = torch.full(
                    (part.shape[0], self.n_nodes), -torch.inf, dtype=self.dtype, device=self.device
                )
                out.scatter_reduce_(
                    1,
                    nodes.expand(part.shape[0], -1),
                    part[:, tokens],
                    reduce="amax",
                    include_self=True,
                )
            chunks.append(out)
        res = torch.cat(chunks).to("cpu", torch.float64).numpy()
        return res if batched else res[0]


class ParallelTokenCharacterTrie(TokenCharacterTrie):
    """`TokenCharacterTrie` whose masses come from a sparse matrix product (CPU or CUDA).

    Same nodes, same results as `TokenCharacterTrie`; use it on a GPU. On CPU
    the numba trie is several times faster.

    Args:
        decode: one byte string (or `Token`) per token id.
        device: "cpu", "cuda", or None (CUDA when available).
    """

    def __init__(self, decode: Sequence[bytes], device: str | torch.device | None = None):
        self._init(decode, device=device, kernel="sparse")
