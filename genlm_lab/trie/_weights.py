"""Token weights as checked arrays, shared by every trie engine and the async trie.

Weights come as numpy arrays, torch tensors, lists or batches of rows; these
helpers turn them into one float array of the right shape, or raise a
ValueError naming what is wrong (a kernel's error code included).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from genlm_lab.trie import _kernels


def _to_numpy(x: Any) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach()
        if x.dtype not in (torch.float32, torch.float64):
            x = x.to(torch.float64)
        return x.cpu().numpy()
    arr = np.asarray(x)
    if arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)
    return arr


def check_shape(arr_shape: tuple, n_tokens: int, batched: bool) -> None:
    """Raise a clear ValueError unless the weights have one entry per token id."""
    want = 2 if batched else 1
    if len(arr_shape) != want or arr_shape[-1] != n_tokens:
        what = "(batch, vocab)" if batched else "(vocab,)"
        raise ValueError(
            f"weights have shape {tuple(arr_shape)}, expected {what} with vocab = {n_tokens} "
            "(one weight per token id)"
        )


def as_numpy_weights(ws: Any, n_tokens: int, batched: bool) -> np.ndarray:
    """Weights (array, tensor, list, or list of 1-D rows) as a C-contiguous float array."""
    if batched and isinstance(ws, (list, tuple)):
        if len(ws) == 0:
            raise ValueError("the batch of weights is empty; pass at least one weight vector")
        rows = [_to_numpy(w) for w in ws]
        for r in rows:
            check_shape(r.shape, n_tokens, batched=False)
        arr = np.stack(rows)
    else:
        arr = _to_numpy(ws)
    check_shape(arr.shape, n_tokens, batched)
    return np.ascontiguousarray(arr)


def raise_bad_weights(arr: np.ndarray, code: int, op: str) -> None:
    """Turn a kernel error code into a ValueError naming the first offending weight."""
    batched = np.ndim(arr) == 2
    arr = np.atleast_2d(np.asarray(arr, dtype=np.float64))
    if code == _kernels.HAS_NAN:
        b, t = np.argwhere(np.isnan(arr))[0]
        where = f"token id {t}" + (f" (batch row {b})" if batched else "")
        raise ValueError(f"weights hold NaN at {where}; {op} needs numbers")
    if code == _kernels.HAS_NEGATIVE:
        b, t = np.argwhere(arr < 0)[0]
        where = f"token id {t}" + (f" (batch row {b})" if batched else "")
        raise ValueError(
            f"weights hold a negative value {float(arr[b, t])!r} at {where}; "
            f"{op} needs non-negative weights (probabilities, not log-probabilities)"
        )
