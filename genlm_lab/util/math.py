"""Small numerically careful helpers over log-weights."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np


def _as_array(values: Iterable[float]) -> np.ndarray:
    """float64 array of log-weights from a list, generator, numpy array or torch tensor."""
    if hasattr(values, "detach"):  # torch: numpy reads no bfloat16, so widen in torch first
        values = values.detach().cpu().double()
    elif not isinstance(values, np.ndarray):
        values = list(values)
    return np.asarray(values, dtype=np.float64)


def logsumexp(values: Iterable[float]) -> float:
    """log(sum(exp(v))) without overflow; -inf for an empty or all -inf input, NaN if any is NaN."""
    arr = _as_array(values)
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
    arr = _as_array(values)
    if arr.size == 0:
        return -math.inf
    return logsumexp(arr) - math.log(arr.size)


def normalize_log_weights(log_weights: Iterable[float]) -> np.ndarray:
    """Exponentiate and normalise log-weights, relative to the largest one.

    Scaling by the largest weight (not subtracting the log of the total) keeps
    the result exact when the weights are huge in magnitude: -1e300 + log(2)
    rounds back to -1e300, which would make two equal weights each read as 1.
    All -inf gives all zeros; +inf entries share the whole mass equally (the
    limit as they grow); any NaN gives all NaN.
    """
    arr = _as_array(log_weights)
    if arr.size == 0:
        return arr
    top = arr.max()
    if np.isnan(top):
        return np.full_like(arr, math.nan)
    if top == -math.inf:
        return np.zeros_like(arr)
    if top == math.inf:
        at_top = arr == math.inf
        return at_top / at_top.sum()
    w = np.exp(arr - top)
    return w / w.sum()
