"""The sparse engine of `ParallelTokenCharacterTrie` (see `parallel.py`): masses as R @ W.

Also the engine `TrieBase` picks for `kernel="sparse"` (byte tries included).
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable
from typing import Any

import numpy as np
import scipy.sparse
import torch

from genlm_lab.trie._kernels import HAS_NAN, HAS_NEGATIVE
from genlm_lab.trie._weights import as_numpy_weights, check_shape, raise_bad_weights


def reachability_pairs(parent: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(node, token) pairs, sorted by node then token: each token with its target and ancestors."""
    nodes, tokens = [], []
    cur = target.astype(np.int64)
    tok = np.arange(len(target), dtype=np.int64)
    while len(cur):
        nodes.append(cur)
        tokens.append(tok)
        up = parent[cur].astype(np.int64)
        keep = up >= 0
        cur, tok = up[keep], tok[keep]
    nodes, tokens = np.concatenate(nodes), np.concatenate(tokens)
    order = np.lexsort((tokens, nodes))
    return nodes[order], tokens[order]


def _row_pointers(nodes: np.ndarray, n_nodes: int) -> np.ndarray:
    crow = np.zeros(n_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(nodes, minlength=n_nodes), out=crow[1:])
    return crow


def _check_values(arr: np.ndarray, op: str, batched: bool) -> None:
    bad = np.isnan(arr)
    if bad.any():
        raise_bad_weights(arr if batched else arr[0], HAS_NAN, f"weight_{op}")
    if op == "sum" and (arr < 0).any():
        raise_bad_weights(arr if batched else arr[0], HAS_NEGATIVE, f"weight_{op}")


def _to_host(res: torch.Tensor) -> np.ndarray:
    """A CUDA `(batch, nodes)` float64 result as host numpy, copied through page-locked memory.

    The product is cheap; returning the masses is the cost (1.2 MB per
    distribution for SmolLM2's 150k nodes), and a pageable copy costs more
    than the product itself, so the copy lands in a pinned buffer from torch's
    caching host allocator.
    """
    out = torch.empty(res.shape, dtype=res.dtype, pin_memory=True)
    out.copy_(res.contiguous())
    return out.numpy()


class _SparseEngine:
    """Sparse engine: scipy / numpy on CPU, torch on CUDA; float64 on both, as the numba kernel.

    On CUDA float64 costs nothing that shows: the product takes microseconds and
    the copy of the masses to the host dominates. In float32, two batchings of
    the same distribution gave beam weights that differed in the 8th digit.
    """

    def __init__(
        self,
        parent: np.ndarray,
        targets: dict[Hashable, np.ndarray],
        device: torch.device,
        max_batch_size: int = 64,
    ):
        self.device = device
        self.n_nodes = len(parent)
        self.max_batch_size = max_batch_size
        self.on_cpu = device.type == "cpu"
        self.matrices: dict[Hashable, Any] = {}
        self.pairs: dict[Hashable, tuple[Any, Any]] = {}
        self.empty_rows: dict[Hashable, np.ndarray] = {}
        for mode, target in targets.items():
            nodes, tokens = reachability_pairs(parent, target)
            crow = _row_pointers(nodes, self.n_nodes)
            shape = (self.n_nodes, len(target))
            if self.on_cpu:
                self.matrices[mode] = scipy.sparse.csr_matrix(
                    (np.ones(len(tokens)), tokens, crow), shape=shape
                )
                self.pairs[mode] = (crow, tokens)
                self.empty_rows[mode] = np.flatnonzero(crow[1:] == crow[:-1])
                continue
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
                matrix = torch.sparse_csr_tensor(
                    torch.from_numpy(crow),
                    torch.from_numpy(tokens),
                    torch.ones(len(tokens), dtype=torch.float64),
                    size=shape,
                    check_invariants=False,
                )
            self.matrices[mode] = matrix.to(device)
            self.pairs[mode] = (
                torch.from_numpy(nodes).to(device),
                torch.from_numpy(tokens).to(device),
            )

    def run(self, ws: Any, n_tokens: int, mode: Hashable, op: str, batched: bool) -> np.ndarray:
        if self.on_cpu:
            arr = as_numpy_weights(ws, n_tokens, batched)
            arr = arr if batched else arr[None, :]
            _check_values(arr, op, batched)
            res = self._cpu(arr.astype(np.float64, copy=False), mode, op)
        else:
            t = self._as_cuda(ws, n_tokens, batched)
            bad = torch.isnan(t).any() | ((t < 0).any() if op == "sum" else False)
            if bool(bad):
                _check_values(t.cpu().numpy(), op, batched)
            res = _to_host(
                torch.cat(
                    [
                        self._cuda(t[i : i + self.max_batch_size], mode, op)
                        for i in range(0, t.shape[0], self.max_batch_size)
                    ]
                )
            )
        return res if batched else res[0]

    def _cpu(self, arr: np.ndarray, mode: Hashable, op: str) -> np.ndarray:
        if op == "sum":
            return np.ascontiguousarray((self.matrices[mode] @ arr.T).T)
        crow, tokens = self.pairs[mode]
        # A -inf sentinel column keeps every start index in range (rows may be empty).
        vals = np.concatenate([arr[:, tokens], np.full((len(arr), 1), -np.inf)], axis=1)
        out = np.maximum.reduceat(vals, crow[:-1], axis=1)
        out[:, self.empty_rows[mode]] = -np.inf  # reduceat gives vals[start] for empty rows
        return out

    def _as_cuda(self, ws: Any, n_tokens: int, batched: bool) -> torch.Tensor:
        if batched and isinstance(ws, (list, tuple)):
            if len(ws) == 0:
                raise ValueError("the batch of weights is empty; pass at least one weight vector")
            rows = [w if torch.is_tensor(w) else torch.as_tensor(np.asarray(w)) for w in ws]
            for r in rows:
                check_shape(tuple(r.shape), n_tokens, batched=False)
            return torch.stack([r.to(self.device, torch.float64) for r in rows])
        t = ws if torch.is_tensor(ws) else torch.as_tensor(np.asarray(ws))
        check_shape(tuple(t.shape), n_tokens, batched)
        t = t.to(self.device, torch.float64)
        return t if batched else t[None, :]

    def _cuda(self, part: torch.Tensor, mode: Hashable, op: str) -> torch.Tensor:
        if op == "sum":
            return (self.matrices[mode] @ part.T.contiguous()).T
        nodes, tokens = self.pairs[mode]
        out = torch.full(
            (part.shape[0], self.n_nodes), -torch.inf, dtype=part.dtype, device=self.device
        )
        return out.scatter_reduce_(
            1, nodes.expand(part.shape[0], -1), part[:, tokens], reduce="amax", include_self=True
        )
