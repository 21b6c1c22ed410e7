"""Shared machinery of the token tries: input checks, kernel choice, numba engine.

A trie computes, for every node, the sum (or max) of the weights of the tokens
below it. Where each token's weight lands is a *target* array (token id ->
node); a trie may keep several (one per `TrieMode`). An *engine* turns a batch
of weights and a target array into node masses: `_NumbaEngine` here (CPU),
`_SparseEngine` in `_sparse.py` (torch, CPU or CUDA).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Hashable, Sequence
from functools import cached_property
from typing import Any

import numpy as np
import torch

from genlm_lab.trie import _kernels
from genlm_lab.trie._sparse import _SparseEngine
from genlm_lab.trie._weights import NodeWeights, as_numpy_weights, node_weights, raise_bad_weights
from genlm_lab.trie.structure import TrieStructure
from genlm_lab.trie.visualize import visualize

KERNELS = ("numba", "sparse")


def resolve_device(device: str | torch.device | None) -> torch.device:
    """`None` -> CUDA when available, else CPU; anything else must be cpu or cuda."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"device {device!r} is not a torch device; use 'cpu' or 'cuda'") from e
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"device {device!r} is not supported; use 'cpu', 'cuda' or None")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} asked for, but CUDA is not available; use 'cpu'")
    return dev


def resolve_kernel(kernel: str | None, device: torch.device) -> str:
    """`None` picks the fastest kernel for the device: numba on CPU, sparse on CUDA."""
    if kernel is None:
        return "numba" if device.type == "cpu" else "sparse"
    if kernel not in KERNELS:
        raise ValueError(f"kernel {kernel!r} is unknown; use one of {KERNELS} or None (automatic)")
    return kernel


def _csr_by(keys: np.ndarray, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Row pointers and members of a grouping: members of row r are order[ptr[r]:ptr[r+1]]."""
    order = np.argsort(keys, kind="stable").astype(np.int32)
    ptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=n_rows), out=ptr[1:])
    return ptr, order


def _refcount_of_unshared() -> int:
    """`sys.getrefcount` of a buffer held only by a pool list, seen inside the loop
    `_output` uses (found by running it, since it differs between Python versions)."""
    pool = [np.empty(1)]
    for buf in pool:
        return sys.getrefcount(buf)
    raise AssertionError("unreachable")


_FREE_REFCOUNT = _refcount_of_unshared()


class _NumbaEngine:
    """CPU engine (numba). Small batches: scatter + reverse pass ("push");
    batches above `PULL_FROM` rows: permute to slots, then compute each node once
    ("pull"), which writes the large output only once.
    """

    PULL_FROM = 9

    def __init__(self, parent: np.ndarray, targets: dict[Hashable, np.ndarray]):
        _kernels.warm_up()  # once per process: no first query pays numba's compilation
        self.parent = parent
        self.targets = targets
        self.n_nodes = len(parent)
        self.child_ptr, order = _csr_by(parent[1:].astype(np.int64), self.n_nodes)
        self.child_idx = (order + 1).astype(np.int32)
        self.slots: dict[Hashable, tuple[np.ndarray, np.ndarray]] = {}
        for mode, target in targets.items():
            own_ptr, slot_token = _csr_by(target.astype(np.int64), self.n_nodes)
            slot_of_token = np.empty_like(slot_token)
            slot_of_token[slot_token] = np.arange(len(slot_token), dtype=np.int32)
            self.slots[mode] = (slot_of_token, own_ptr)
        self._scratch: dict[np.dtype, np.ndarray] = {}
        self._pool: list[np.ndarray] = []
        self._lock = threading.Lock()

    def single(self, ws: np.ndarray, mode: Hashable, op: str) -> np.ndarray:
        out = np.empty(self.n_nodes, dtype=np.float64)
        fn = _kernels.weight_sum_1 if op == "sum" else _kernels.weight_max_1
        code = fn(ws, self.targets[mode], self.parent, out)
        if code:
            raise_bad_weights(ws, code, f"weight_{op}")
        return out

    def batch(self, ws: np.ndarray, mode: Hashable, op: str) -> np.ndarray:
        n_batch = ws.shape[0]
        if n_batch == 1:
            return self.single(ws[0], mode, op)[None, :]
        with self._lock:
            out = self._output((self.n_nodes, n_batch))
            if n_batch < self.PULL_FROM:
                fn = _kernels.weight_sum_batch if op == "sum" else _kernels.weight_max_batch
                code = fn(ws, self.targets[mode], self.parent, out)
            else:
                code = self._pull(ws, mode, op, out)
        if code:
            raise_bad_weights(ws, code, f"weight_{op}")
        return out.T

    # Batched outputs are large (150k nodes x 32 x 8 bytes = 38 MB), and fresh
    # memory costs page faults that take longer than the kernel itself. So
    # outputs come from a small pool, and a buffer is handed out again only
    # once nothing outside the pool refers to it any more: every view of it,
    # row or tensor sharing its memory holds a reference to it.
    _POOL_SIZE = 3
    _POOL_MAX_BYTES = 1 << 27

    def _output(self, shape: tuple[int, int]) -> np.ndarray:
        nbytes = shape[0] * shape[1] * 8
        if nbytes > self._POOL_MAX_BYTES:
            return np.empty(shape, dtype=np.float64)
        for buf in self._pool:
            if buf.shape == shape and sys.getrefcount(buf) <= _FREE_REFCOUNT:
                return buf
        buf = np.empty(shape, dtype=np.float64)
        self._pool.append(buf)
        if len(self._pool) > self._POOL_SIZE:
            self._pool.pop(0)
        return buf

    def _pull(self, ws: np.ndarray, mode: Hashable, op: str, out: np.ndarray) -> int:
        slot_of_token, own_ptr = self.slots[mode]
        size = len(slot_of_token) * ws.shape[0]
        scratch = self._scratch.get(ws.dtype)
        if scratch is None or scratch.size < size:  # one buffer per dtype, reused
            scratch = self._scratch[ws.dtype] = np.empty(size, dtype=ws.dtype)
        slots = scratch[:size].reshape(len(slot_of_token), ws.shape[0])
        code = _kernels.permute_to_slots(ws, slot_of_token, slots, op == "sum")
        if code:
            return code
        fn = _kernels.pull_sum if op == "sum" else _kernels.pull_max
        fn(slots, own_ptr, self.child_ptr, self.child_idx, out)
        return _kernels.OK


class _LeafIndex(dict):
    """`word2leaf`: keyed by vocabulary entry, and found by (bytes, token_id) pairs too.

    genlm-bytes 0.2 keys its `word2leaf` by such pairs; a pair is looked up as
    the `Token` it names.
    """

    @staticmethod
    def _key(key: Any) -> Any:
        if isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], bytes):
            from genlm_lab.tokenization import Token

            return Token(int(key[1]), key[0])
        return key

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, self._key(key))

    def __getitem__(self, key: Any) -> Any:
        return dict.__getitem__(self, self._key(key))

    def get(self, key: Any, default: Any = None) -> Any:
        return dict.get(self, self._key(key), default)


class TrieBase:
    """Weights -> node masses, shared by the character and byte tries.

    Subclasses build a `TrieStructure`, call `_setup`, and expose the public
    `weight_sum` / `weight_max` / `batch_*` signatures they promise.
    """

    decode: Sequence[bytes]
    device: torch.device
    kernel: str

    def _setup(
        self,
        structure: TrieStructure,
        targets: dict[Hashable, np.ndarray],
        device: str | torch.device | None,
        kernel: str | None,
        max_batch_size: int = 64,
    ) -> None:
        self.children = structure.children
        self.root = 0
        self._node_prefix: list[bytes] = structure.node2prefix  # by node, what genlm_lab reads
        self.parent = structure.parent
        self.depth = structure.depth
        n_tokens = len(structure.token_leaf)
        self.token_id_to_leaf = np.stack(
            [np.arange(n_tokens, dtype=np.int32), structure.token_leaf], axis=1
        )
        self.leaf2token_id = {int(leaf): t for t, leaf in enumerate(structure.token_leaf)}
        self.word2leaf: dict = _LeafIndex()
        for t, item in enumerate(self.decode):
            leaf = int(structure.token_leaf[t])
            # A Token is its own key (duplicates with other ids stay apart); plain bytes
            # equal to it find the first such token (a bytearray is unhashable).
            key = item if isinstance(item, bytes) else bytes(item)
            self.word2leaf.setdefault(key, leaf)
        self.leaf2word = {leaf: self.decode[t] for leaf, t in self.leaf2token_id.items()}
        self.device = resolve_device(device)
        self.kernel = resolve_kernel(kernel, self.device)
        if not (isinstance(max_batch_size, int) and max_batch_size > 0):
            raise ValueError(f"max_batch_size must be a positive int, got {max_batch_size!r}")
        self.max_batch_size = max_batch_size
        if self.kernel == "numba":
            self._engine: Any = _NumbaEngine(structure.parent, targets)
        else:
            self._engine = _SparseEngine(
                structure.parent, targets, self.device, max_batch_size=max_batch_size
            )

    @cached_property
    def node2prefix(self) -> dict[int, bytes]:
        """Node -> the bytes of its prefix (a leaf: its token's bytes); a dict, as in GenLM."""
        return dict(enumerate(self._node_prefix))

    @property
    def idx_to_leaf(self) -> np.ndarray:
        """genlm-backend's name for `token_id_to_leaf`: rows (token id, leaf)."""
        return self.token_id_to_leaf

    @property
    def n_nodes(self) -> int:
        """Number of nodes (internal nodes, leaves and the EOS node if any)."""
        return len(self.children)

    @property
    def n_tokens(self) -> int:
        """Number of token ids in the vocabulary."""
        return len(self.decode)

    def _single(self, ws: Any, mode: Hashable, op: str) -> NodeWeights:
        if self.kernel == "numba":
            out = self._engine.single(as_numpy_weights(ws, self.n_tokens, False), mode, op)
        else:
            out = self._engine.run(ws, self.n_tokens, mode, op, batched=False)
        return node_weights(out)

    def _batch(self, ws: Any, mode: Hashable, op: str) -> NodeWeights:
        if self.kernel == "numba":
            out = self._engine.batch(as_numpy_weights(ws, self.n_tokens, True), mode, op)
        else:
            out = self._engine.run(ws, self.n_tokens, mode, op, batched=True)
        return node_weights(out)

    def find(self, prefix: bytes | str) -> int | None:
        """The node spelling `prefix` (bytes, or str as UTF-8) by byte edges, or None.

        Raises:
            ValueError: if `prefix` is neither bytes nor text (an int is not
                read as `bytes(n)`, n zero bytes).
        """
        if isinstance(prefix, str):
            prefix = prefix.encode("utf-8")
        elif not isinstance(prefix, (bytes, bytearray, memoryview)):
            raise ValueError(f"prefix must be bytes or text, got {prefix!r}")
        node = self.root
        for b in bytes(prefix):
            node = self.children[node].get(b)
            if node is None:
                return None
        return node

    #: `trie.visualize(ws, prefix, depth, top_k, mode)`: a `graphviz.Digraph` of the
    #: subtrie under `prefix` (`genlm_lab.trie.visualize`, with this trie first).
    visualize = visualize
