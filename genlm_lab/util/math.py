"""Small numerically careful helpers over log-weights."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np


def logsumexp(values: Iterable[float]) -> float:
    """log(sum(exp(v))) without overflow; -inf for an empty or all -inf input, NaN if any is NaN."""
    arr = np.asarray(list(values), dtype=np.float64)
    if arr.size == 0:
        return -math.inf
    top = arr.max()
    if np.isnan(top):  # a NaN must show, not read as a zero weight
        return math.nan
    if not np.isfinite(top):
        return float(top) if top == math.inf else -math.inf
    return float(top + np.log(np.exp(arr - top).sum()))


def logmeanexp(values: Iterable[float]) -> float:
    """log(mean(exp(v))): the log of an average of weights given in log space."""
    arr = np.asarray(list(values), dtype=np.float64)
    if arr.size == 0:
        return -math.inf
    return logsumexp(arr) - math.log(arr.size)


def normalize_log_weights(log_weights: Iterable[float]) -> np.ndarray:
    """Exponentiate and normalise log-weights.

    All -inf gives all zeros; +inf entries share the whole mass equally (the
    limit as they grow); any NaN gives all NaN.
    """
    arr = np.asarray(list(log_weights), dtype=np.float64)
    total = logsumexp(arr)
    if total == -math.inf:
        return np.zeros_like(arr)
    if total == math.inf:
        top = arr == math.inf
        return top / top.sum()
    if math.isnan(total):
        return np.full_like(arr, math.nan)
    # Relative to the largest weight, not the log total: for weights like -1e300,
    # -1e300 + log(n) rounds back to -1e300 and exp(w - total) would not sum to 1.
    w = np.exp(arr - arr.max())
    return w / w.sum()
