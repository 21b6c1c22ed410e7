"""Numba kernels: one reverse pass over a trie stored as a parent array.

Nodes are numbered in pre-order (a parent before its children), so a single
pass from the last node to the first adds (or maxes) each node into its
parent and every node ends up holding its whole subtree. Token weights are
first scattered onto their target node (a leaf, or the EOS node).

The kernels also check the weights as they read them and return an error
code instead of raising, so that no extra pass over the input is needed:
0 = fine, 1 = a NaN, 2 = a negative weight (sums only).
"""

from __future__ import annotations

import numba
import numpy as np

OK, HAS_NAN, HAS_NEGATIVE = 0, 1, 2

_jit = numba.njit(cache=True, nogil=True, fastmath=False, boundscheck=False)


@_jit
def weight_sum_1(ws, target, parent, out):
    """out[node] = sum of ws[t] over tokens t below node; returns an error code."""
    out[:] = 0.0
    for t in range(ws.shape[0]):
        w = ws[t]
        if w != w:
            return HAS_NAN
        if w < 0:
            return HAS_NEGATIVE
        out[target[t]] += w
    for i in range(out.shape[0] - 1, 0, -1):
        out[parent[i]] += out[i]
    return OK


@_jit
def weight_max_1(ws, target, parent, out):
    """out[node] = max of ws[t] over tokens t below node (-inf if none)."""
    out[:] = -np.inf
    for t in range(ws.shape[0]):
        w = ws[t]
        if w != w:
            return HAS_NAN
        j = target[t]
        out[j] = max(out[j], w)
    for i in range(out.shape[0] - 1, 0, -1):
        p = parent[i]
        out[p] = max(out[p], out[i])
    return OK


@_jit
def weight_sum_batch(ws, target, parent, out):
    """Batched `weight_sum_1`: ws is (batch, vocab), out is (nodes, batch)."""
    n_batch = ws.shape[0]
    out[:, :] = 0.0
    for t in range(ws.shape[1]):
        row = out[target[t]]
        for b in range(n_batch):
            w = ws[b, t]
            if w != w:
                return HAS_NAN
            if w < 0:
                return HAS_NEGATIVE
            row[b] += w
    for i in range(out.shape[0] - 1, 0, -1):
        src = out[i]
        dst = out[parent[i]]
        for b in range(n_batch):
            dst[b] += src[b]
    return OK


@_jit
def weight_max_batch(ws, target, parent, out):
    """Batched `weight_max_1`: ws is (batch, vocab), out is (nodes, batch)."""
    n_batch = ws.shape[0]
    out[:, :] = -np.inf
    for t in range(ws.shape[1]):
        row = out[target[t]]
        for b in range(n_batch):
            w = ws[b, t]
            if w != w:
                return HAS_NAN
            row[b] = max(row[b], w)
    for i in range(out.shape[0] - 1, 0, -1):
        src = out[i]
        dst = out[parent[i]]
        for b in range(n_batch):
            dst[b] = max(dst[b], src[b])
    return OK


# Batched kernels, "pull" form. Token weights are first permuted into slot
# order (tokens sorted by target node) so that the main pass reads them
# sequentially; then each node, from the last to the root, is computed once
# from its own slots and its children's finished rows. Every output row is
# written exactly once, which matters more than anything else at batch 32:
# the output (n_nodes x batch float64) is far bigger than the caches.

_TILE = 256


@_jit
def permute_to_slots(ws, slot_of_token, scratch, check_negative):
    """scratch[slot_of_token[t], b] = ws[b, t], checking for NaN (and negatives)."""
    n_batch, n_tok = ws.shape
    for t0 in range(0, n_tok, _TILE):
        t1 = min(t0 + _TILE, n_tok)
        for b in range(n_batch):
            for t in range(t0, t1):
                w = ws[b, t]
                if w != w:
                    return HAS_NAN
                if check_negative and w < 0:
                    return HAS_NEGATIVE
                scratch[slot_of_token[t], b] = w
    return OK


@_jit
def pull_sum(scratch, own_ptr, child_ptr, child_idx, out):
    """out[i] = sum of node i's own slots + sum of its children's rows."""
    for i in range(out.shape[0] - 1, -1, -1):
        row = out[i]
        row[:] = 0.0
        for k in range(own_ptr[i], own_ptr[i + 1]):
            row += scratch[k]
        for k in range(child_ptr[i], child_ptr[i + 1]):
            row += out[child_idx[k]]


@_jit
def pull_max(scratch, own_ptr, child_ptr, child_idx, out):
    """out[i] = max over node i's own slots and its children's rows (-inf if none)."""
    n_nodes, n_batch = out.shape
    acc = np.empty(n_batch, dtype=np.float64)
    for i in range(n_nodes - 1, -1, -1):
        acc[:] = -np.inf
        for k in range(own_ptr[i], own_ptr[i + 1]):
            for b in range(n_batch):
                acc[b] = max(acc[b], scratch[k, b])
        for k in range(child_ptr[i], child_ptr[i + 1]):
            c = child_idx[k]
            for b in range(n_batch):
                acc[b] = max(acc[b], out[c, b])
        for b in range(n_batch):
            out[i, b] = acc[b]


_warm = False


def warm_up() -> None:
    """Compile (or load from numba's cache) every kernel for float32 and float64 weights.

    Once per process, on a two-token trie. Numba compiles a kernel on its first
    call with a new type signature, which costs up to a second (far more than
    the kernel itself); doing it when the first trie is built keeps that cost
    out of the first query of each kind, which callers may time.
    """
    global _warm
    if _warm:
        return
    parent = np.array([-1, 0, 0], dtype=np.int32)
    target = np.array([1, 2], dtype=np.int32)
    own_ptr = np.array([0, 0, 1, 2], dtype=np.int64)
    slot_of_token = np.array([0, 1], dtype=np.int32)
    child_ptr = np.array([0, 2, 2, 2], dtype=np.int64)
    child_idx = np.array([1, 2], dtype=np.int32)
    for dtype in (np.float64, np.float32):
        ws = np.ones((2, 2), dtype=dtype)
        weight_sum_1(ws[0], target, parent, np.empty(3))
        weight_max_1(ws[0], target, parent, np.empty(3))
        weight_sum_batch(ws, target, parent, np.empty((3, 2)))
        weight_max_batch(ws, target, parent, np.empty((3, 2)))
        slots = np.empty((2, 2), dtype=dtype)
        for check_negative in (True, False):
            permute_to_slots(ws, slot_of_token, slots, check_negative)
        pull_sum(slots, own_ptr, child_ptr, child_idx, np.empty((3, 2)))
        pull_max(slots, own_ptr, child_ptr, child_idx, np.empty((3, 2)))
    _warm = True
