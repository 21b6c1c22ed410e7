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
        if w > out[j]:
            out[j] = w
    for i in range(out.shape[0] - 1, 0, -1):
        p = parent[i]
        if out[i] > out[p]:
            out[p] = out[i]
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
            if w > row[b]:
                row[b] = w
    for i in range(out.shape[0] - 1, 0, -1):
        src = out[i]
        dst = out[parent[i]]
        for b in range(n_batch):
            dst[b] = max(dst[b], src[b])
    return OK
