"""Resampling: draw `n` ancestor indices in proportion to particle weights.

All four schemes are unbiased (each index is expected `n * w_i` times);
stratified, systematic and residual resampling have lower variance than
multinomial resampling.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from genlm_lab.smc._run import check_n

__all__ = ["RESAMPLING_METHODS", "resample"]

RESAMPLING_METHODS = ("multinomial", "stratified", "systematic", "residual")
"""The names `resample` (and `smc_standard`'s `resampling_method`) accepts."""


def _weights(log_weights: Sequence[float] | np.ndarray) -> np.ndarray:
    lw = np.asarray(log_weights, dtype=np.float64).ravel()
    if lw.size == 0:
        raise ValueError("cannot resample from an empty list of weights")
    if np.isnan(lw).any() or (lw == math.inf).any():
        raise ValueError("log-weights must be finite or -inf (got NaN or +inf)")
    top = lw.max()
    if top == -math.inf:
        raise ValueError("every log-weight is -inf: there is no particle to resample from")
    w = np.exp(lw - top)
    return w / w.sum()


def _invert(w: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Indices i with cdf[i-1] <= u < cdf[i], for sorted or unsorted u in [0, 1)."""
    cdf = np.cumsum(w)
    cdf /= cdf[-1]
    return np.minimum(np.searchsorted(cdf, u, side="right"), w.size - 1)


def resample(
    log_weights: Sequence[float] | np.ndarray,
    n: int,
    method: str = "stratified",
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Draw `n` indices into `log_weights`, index i with probability proportional to exp(w_i).

    Args:
        log_weights: unnormalised log-weights (-inf allowed, not all).
        n: how many indices to draw.
        method: "multinomial", "stratified", "systematic" or "residual".
        rng: the random generator (a fresh unseeded one when None).

    Returns:
        An int64 array of `n` indices, sorted ascending.

    Raises:
        ValueError: for an unknown method, n < 1, NaN weights, or all weights -inf.
    """
    if method not in RESAMPLING_METHODS:
        raise ValueError(
            f"unknown resampling method {method!r}; expected one of {RESAMPLING_METHODS}"
        )
    n = check_n("n", n)
    rng = np.random.default_rng() if rng is None else rng
    w = _weights(log_weights)
    if method == "multinomial":
        out = _invert(w, rng.random(n))
    elif method == "stratified":
        out = _invert(w, (np.arange(n) + rng.random(n)) / n)
    elif method == "systematic":
        out = _invert(w, (np.arange(n) + rng.random()) / n)
    else:
        counts = np.floor(n * w).astype(np.int64)
        rest = n - int(counts.sum())
        out = np.repeat(np.arange(w.size), counts)
        if rest > 0:
            residual = np.clip(n * w - counts, 0.0, None)
            if residual.sum() <= 0:  # only rounding left a remainder
                residual = w
            out = np.concatenate([out, _invert(residual, rng.random(rest))])
    return np.sort(out.astype(np.int64))
