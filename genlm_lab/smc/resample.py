"""Resampling: draw `n` ancestor indices in proportion to particle weights.

All four schemes are unbiased (each index is expected `n * w_i` times);
stratified, systematic and residual resampling have lower variance than
multinomial resampling.

`RESAMPLING_METHODS` is the registry `resample` (and so every SMC run's
`resampling_method=`) reads: a function put there under a new name, or in
place of a built-in one, is what runs for that name. A built-in draws from
the run's seeded generator; a registered function gets the normalised
probabilities and returns one ancestor index per weight, llamppl-style.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from genlm_lab.smc._particles import check_n

__all__ = [
    "RESAMPLING_METHODS",
    "get_resampling_fn",
    "multinomial_resample",
    "resample",
    "residual_resample",
    "stratified_resample",
    "systematic_resample",
]


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
            f"unknown resampling method {method!r}; expected one of {list(RESAMPLING_METHODS)}"
        )
    n = check_n("n", n)
    w = _weights(log_weights)
    fn = RESAMPLING_METHODS[method]
    if fn is not _BUILT_IN.get(method):
        return _registered(fn, method, w, n)
    rng = np.random.default_rng() if rng is None else rng
    return _draw(w, n, method, rng)


def _registered(fn: Callable, method: str, w: np.ndarray, n: int) -> np.ndarray:
    """The indices a function registered in `RESAMPLING_METHODS` draws (one per weight)."""
    if n != w.size:
        raise ValueError(
            f"the resampling function registered as {method!r} draws one index per weight "
            f"({w.size}), but {n} were asked for"
        )
    out = np.asarray(fn(w), dtype=np.int64).ravel()
    if out.size != n or (out < 0).any() or (out >= n).any():
        raise ValueError(
            f"the resampling function registered as {method!r} must return {n} indices in "
            f"[0, {n}), got {out.tolist()[:10]!r}"
        )
    return np.sort(out)


def _draw(w: np.ndarray, n: int, method: str, rng: np.random.Generator) -> np.ndarray:
    """`n` sorted indices drawn by `method` from normalised probabilities `w`."""
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


# LLaMPPL's names: probabilities in (not logs), as many indices out as weights, and
# randomness from numpy's global state, so `np.random.seed(s)` makes a draw repeatable.
def _llamppl(method: str) -> Callable[[np.ndarray], np.ndarray]:
    def resample_fn(weights: Sequence[float] | np.ndarray) -> np.ndarray:
        w = np.asarray(weights, dtype=np.float64).ravel()
        if w.size == 0 or not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
            raise ValueError(f"weights must be finite, >= 0 and not all 0, got {weights!r}")
        rng = np.random.default_rng(np.random.randint(2**31))
        return _draw(w / w.sum(), w.size, method, rng)

    resample_fn.__name__ = resample_fn.__qualname__ = f"{method}_resample"
    resample_fn.__doc__ = (
        f"{method.capitalize()} resampling of probabilities `weights` (llamppl's name): "
        "len(weights) sorted ancestor indices; seeded by `np.random.seed`."
    )
    return resample_fn


multinomial_resample = _llamppl("multinomial")
stratified_resample = _llamppl("stratified")
systematic_resample = _llamppl("systematic")
residual_resample = _llamppl("residual")

RESAMPLING_METHODS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "multinomial": multinomial_resample,
    "stratified": stratified_resample,
    "systematic": systematic_resample,
    "residual": residual_resample,
}
"""Method name -> llamppl-style function; the names `resample` and `smc_standard` accept."""

_BUILT_IN = dict(RESAMPLING_METHODS)  # these draw from the run's generator instead


def get_resampling_fn(name: str) -> Callable[[np.ndarray], np.ndarray]:
    """The llamppl-style resampling function called `name`.

    Raises:
        ValueError: for a name not in `RESAMPLING_METHODS`.
    """
    if name not in RESAMPLING_METHODS:
        raise ValueError(
            f"Unknown resampling method {name!r}; expected one of {list(RESAMPLING_METHODS)}"
        )
    return RESAMPLING_METHODS[name]
