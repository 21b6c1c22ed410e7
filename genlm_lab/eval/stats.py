"""The statistics behind every evaluation view: accuracy intervals, paired tests, detectable effects.

`summarize`, `compare`, the live `ResultsView` and the report all call these,
so one store reads the same everywhere. The methods hold at any n, 1 and 2
included:

- accuracy (`accuracy_interval`): the Wilson score interval. For 0/1 scores
  it is the textbook Wilson interval of k successes in n; for fractional
  scores in [0, 1] it is the same formula at the mean, whose variance
  p(1 - p) is the largest any score in [0, 1] with mean p can have, so the
  interval is conservative. It never has zero width and stays in [0, 1].
- paired difference: the sign-flip permutation test (`sign_flip_test`: under
  "a and b are exchangeable" each difference's sign is + or - with
  probability 1/2; its distribution is enumerated exactly, so 0/1 scores get
  McNemar's exact test at any n), and an interval for the mean difference
  (`paired_interval`): the mean difference is q(2 pi - 1), q the share of
  pairs that differ and pi the share of those a wins, and the interval is its
  range over exact Clopper-Pearson intervals for q and pi. It lies in
  [-1, 1], excludes 0 exactly when McNemar's exact test rejects, and its
  exact coverage for 0/1 scores is at least the nominal 95% at every n up to
  60 (enumerated over a grid of laws; the worst, 0.951, where every pair
  differs).
- minimum detectable effect (`detectable_difference`): the smallest true mean
  difference the exact test detects with the given power at this n when each
  pair differs by +1 or -1; NaN ("unsizeable") when no difference up to 1,
  the largest possible, is detectable.

`bootstrap_ci` (a percentile bootstrap) stays for metrics without a closed form.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from statistics import NormalDist
from typing import NamedTuple

import numpy as np
from scipy.stats import beta, binom

__all__ = [
    "INTERVAL_METHODS",
    "PAIRED_METHODS",
    "TIE_TOLERANCE",
    "Interval",
    "accuracy_interval",
    "bootstrap_ci",
    "clopper_pearson",
    "detectable_difference",
    "paired_interval",
    "sign_flip_test",
    "sign_test",
    "wilson_interval",
]

#: Scores and differences at most this far apart are equal (float noise of sums of weights).
TIE_TOLERANCE = 1e-9
WILSON = "Wilson score"
WILSON_BOUND = "Wilson score, variance bound"
#: What each accuracy-interval method is, as tooltips and notes state it.
INTERVAL_METHODS = {
    WILSON: "Wilson score interval (0/1 scores: k right of n instances)",
    WILSON_BOUND: (
        "Wilson score interval at the mean (fractional scores: p(1 - p), the largest variance "
        "a score in [0, 1] with mean p can have, bounds the spread, so the interval is conservative)"
    ),
}
PAIRED_EXACT = "Clopper-Pearson range"
PAIRED_PARTS = "Clopper-Pearson range, fractional parts"
#: What each paired-difference interval method is, as tooltips and notes state it.
PAIRED_METHODS = {
    PAIRED_EXACT: (
        "the range of q(2 pi - 1), the mean difference, over exact Clopper-Pearson intervals for "
        "q, the share of pairs that differ, and pi, the share of those a wins; it excludes 0 "
        "exactly when McNemar's exact test rejects"
    ),
    PAIRED_PARTS: (
        "as for 0/1 scores, with the positive and negative parts of fractional differences "
        "counted as wins and losses (an approximation)"
    ),
}
#: Sign-flip distributions up to this many points are enumerated; larger ones are sampled.
_EXACT_SUPPORT = 1 << 20


class Interval(NamedTuple):
    """An estimate with its confidence interval and the method that gave the interval."""

    estimate: float
    low: float
    high: float
    method: str


def _check_ci(ci: float) -> None:
    if not 0 < ci < 1:
        raise ValueError(f"ci must be between 0 and 1, got {ci}")


def wilson_interval(successes: float, n: int, ci: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a proportion: `successes` (k, or n x mean) out of n.

    Raises:
        ValueError: if n < 1, ci is not in (0, 1), or successes is outside [0, n].
    """
    _check_ci(ci)
    if n < 1:
        raise ValueError(f"a Wilson interval needs n >= 1, got {n}")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in [0, {n}], got {successes}")
    z = NormalDist().inv_cdf((1 + ci) / 2)
    p, z2 = successes / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def accuracy_interval(
    values: Sequence[float] | np.ndarray, ci: float = 0.95, tolerance: float = TIE_TOLERANCE
) -> Interval:
    """The mean of per-instance accuracies with its Wilson score interval (see the module doc).

    Args:
        values: one accuracy in [0, 1] per instance (replicates averaged first).
        ci: coverage of the interval, between 0 and 1.
        tolerance: scores this close to 0 or 1 count as 0/1 scores (float noise).

    Returns:
        `Interval(mean, low, high, method)`; method is a key of `INTERVAL_METHODS`.

    Raises:
        ValueError: for no values, NaN, values outside [0, 1], or ci not in (0, 1).
    """
    _check_ci(ci)
    x = np.asarray(values, dtype=float).reshape(-1)
    if x.size == 0:
        raise ValueError("an accuracy interval needs at least one value")
    if np.isnan(x).any():
        raise ValueError("the accuracies hold NaN")
    if (x < -tolerance).any() or (x > 1 + tolerance).any():
        raise ValueError(f"accuracies must lie in [0, 1]; got {x.min()} to {x.max()}")
    mean = float(x.mean())
    binary = bool((np.minimum(np.abs(x), np.abs(x - 1)) <= tolerance).all())
    if binary:
        successes, method = float(np.round(x).sum()), WILSON
    else:
        successes, method = float(np.clip(x, 0, 1).sum()), WILSON_BOUND
    low, high = wilson_interval(min(successes, x.size), x.size, ci)
    return Interval(mean, min(low, mean), max(high, mean), method)


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    metric: Callable[[np.ndarray], float] = np.mean,
    ci: float = 0.95,
    n_bootstrap: int = 10000,
    seed: int | None = 0,
) -> tuple[float, float, float]:
    """The metric of `values` and a percentile-bootstrap confidence interval for it.

    Instances are the unit of resampling; the generator is seeded so a report is
    reproducible. At small n the percentile interval runs narrow (two equal values
    give a zero-width interval): accuracies use `accuracy_interval`.

    Args:
        values: one number per unit (instance).
        metric: the statistic; `np.mean` (the default) is computed vectorised.
        ci: coverage of the interval, between 0 and 1.
        n_bootstrap: resamples drawn.
        seed: seeds the resampling (None: fresh entropy).

    Returns:
        (metric(values), lower, upper).

    Raises:
        ValueError: if ci is not in (0, 1), values is empty or holds NaN.
    """
    _check_ci(ci)
    values = np.asarray(values, dtype=float).reshape(-1)
    if values.size == 0:
        raise ValueError("bootstrap_ci needs at least one value")
    if np.isnan(values).any():
        raise ValueError("bootstrap_ci got NaN among the values")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, values.size, size=(int(n_bootstrap), values.size))
    if metric is np.mean:
        stats = values[idx].mean(axis=1)
    else:
        stats = np.array([metric(values[row]) for row in idx])
    lower, upper = np.percentile(stats, [(1 - ci) / 2 * 100, (1 + ci) / 2 * 100])
    return float(metric(values)), float(lower), float(upper)


def sign_test(n_plus: int, n_minus: int) -> float:
    """Exact two-sided sign test: P(a split at least this uneven | each side wins with 1/2).

    With 0/1 scores and n_plus, n_minus the discordant pairs this is McNemar's exact test.

    Raises:
        ValueError: for negative counts.
    """
    if n_plus < 0 or n_minus < 0:
        raise ValueError(f"counts must be >= 0, got {n_plus} and {n_minus}")
    n = n_plus + n_minus
    if n == 0:
        return 1.0
    return float(min(1.0, 2 * binom.cdf(min(n_plus, n_minus), n, 0.5)))


def _grid(d: np.ndarray) -> np.ndarray:
    """Differences as integers (sums then compare exactly), on a 2^-40 grid, or a finer one
    that keeps the smallest nonzero difference whole (sums stay below 2^62)."""
    d = np.asarray(d, dtype=float).reshape(-1)
    magnitudes = np.abs(d[d != 0])
    scale = 2.0**40
    if magnitudes.size:
        scale = max(scale, 1024 / magnitudes.min())
        scale = min(scale, 2.0**62 / (d.size * magnitudes.max()))
    return np.round(d * scale).astype(np.int64)


def _exact_null(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The distribution of sum(+-key) over independent fair signs, or None past `_EXACT_SUPPORT`."""
    values, probs = np.zeros(1, dtype=np.int64), np.ones(1)
    magnitudes, counts = np.unique(np.abs(keys[keys != 0]), return_counts=True)
    for magnitude, m in zip(magnitudes.tolist(), counts.tolist(), strict=True):
        if values.size * (m + 1) > _EXACT_SUPPORT:
            return None
        k = np.arange(m + 1)
        shifts = magnitude * (2 * k - m)
        joint = (values[:, None] + shifts[None, :]).ravel()
        weights = (probs[:, None] * binom.pmf(k, m, 0.5)[None, :]).ravel()
        values, where = np.unique(joint, return_inverse=True)
        probs = np.bincount(where.ravel(), weights=weights)
    return values, probs


def _random_signs(n: int, n_flips: int, seed: int | None) -> Iterator[np.ndarray]:
    """`n_flips` rows of n independent fair signs (+-1), a block at a time."""
    rng = np.random.default_rng(seed)
    rows = max(1, 2_000_000 // max(n, 1))
    for start in range(0, int(n_flips), rows):
        size = min(rows, int(n_flips) - start)
        yield 1 - 2 * rng.integers(0, 2, size=(size, n), dtype=np.int64)


def sign_flip_test(
    d: Sequence[float] | np.ndarray, n_flips: int = 20000, seed: int | None = 0
) -> tuple[float, bool]:
    """Two-sided sign-flip permutation test of "the paired differences are symmetric about 0".

    The statistic is |sum d|; its null distribution flips each difference's sign
    with probability 1/2. It is enumerated exactly (grouped by magnitude, so 0/1
    scores are exact at any n: McNemar's exact test); past `_EXACT_SUPPORT` points
    it is sampled with `n_flips` sign vectors, p = (1 + hits) / (1 + n_flips).

    Returns:
        (p_value, exact): exact is False when the distribution was sampled.
    """
    keys = _grid(d)
    observed = abs(int(keys.sum()))
    if observed == 0:
        return 1.0, True
    null = _exact_null(keys)
    if null is not None:
        values, probs = null
        return float(min(1.0, probs[np.abs(values) >= observed].sum())), True
    hits = sum(
        int((np.abs(signs @ keys) >= observed).sum())
        for signs in _random_signs(keys.size, n_flips, seed)
    )
    return (1 + hits) / (1 + int(n_flips)), False


def clopper_pearson(successes: float, n: float, ci: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a proportion; [0, 1] when n is 0.

    Beta quantiles, so a fractional count gives the interval's continuous extension.
    """
    _check_ci(ci)
    if n <= 0:
        return 0.0, 1.0
    tail = (1 - ci) / 2
    low = 0.0 if successes <= 0 else float(beta.ppf(tail, successes, n - successes + 1))
    high = 1.0 if successes >= n else float(beta.ppf(1 - tail, successes + 1, n - successes))
    return low, high


def paired_interval(
    d: Sequence[float] | np.ndarray, ci: float = 0.95, tolerance: float = TIE_TOLERANCE
) -> Interval:
    """The mean of paired differences a - b in [-1, 1] with an interval that holds at any n.

    The mean difference is q (2 pi - 1), q the share of pairs that differ and pi
    the share of those a wins. The interval is its range over the exact
    Clopper-Pearson intervals of q and of pi (given the pairs that differ), each
    at coverage `ci`: it is never empty of what the data leave possible (two
    pairs give nearly all of [-1, 1]), it excludes 0 exactly when McNemar's exact
    test rejects at 1 - ci, and for 0/1 scores its exact coverage is at least
    ci on every law tried (see the module doc). Fractional differences count by
    their positive and negative parts (sum of max(d, 0) wins, of max(-d, 0)
    losses), an approximation.

    Raises:
        ValueError: for no differences, NaN, differences outside [-1, 1], or ci not in (0, 1).
    """
    _check_ci(ci)
    d = np.asarray(d, dtype=float).reshape(-1)
    if d.size == 0:
        raise ValueError("an interval needs at least one difference")
    if np.isnan(d).any() or (np.abs(d) > 1 + tolerance).any():
        raise ValueError("differences of accuracies must lie in [-1, 1]")
    d = np.where(np.abs(d) <= tolerance, 0.0, np.clip(d, -1, 1))
    binary = bool((np.abs(np.abs(d[d != 0]) - 1) <= tolerance).all())
    if binary:
        d = np.sign(d)
    wins, losses = float(np.maximum(d, 0).sum()), float(np.maximum(-d, 0).sum())
    q_low, q_high = clopper_pearson(wins + losses, d.size, ci)
    p_low, p_high = clopper_pearson(wins, wins + losses, ci)
    corners = [q * (2 * p - 1) for q in (q_low, q_high) for p in (p_low, p_high)]
    mean = float(d.mean())
    method = PAIRED_EXACT if binary else PAIRED_PARTS
    return Interval(mean, min(min(corners), mean), max(max(corners), mean), method)


@lru_cache(maxsize=256)
def detectable_difference(n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest mean difference in (0, 1] the exact test at `alpha` detects with `power`.

    Each of the n pairs differs by +1 with probability (1 + delta) / 2 and by -1
    otherwise (the largest spread a difference with mean delta can have), and the
    test is the exact two-sided sign test (what `sign_flip_test` is on such pairs).
    It depends on n, alpha and power alone, so the same n reads the same in every
    comparison.

    Returns:
        The effect, or NaN ("unsizeable") when no difference up to 1, the largest
        possible, is detectable at this n (at alpha 0.05: five pairs or fewer).

    Raises:
        ValueError: for alpha or power outside (0, 1).
    """
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError(f"alpha and power must be in (0, 1); got {alpha} and {power}")
    if n < 1:
        return math.nan
    k = np.arange(n + 1)
    p_values = np.minimum(1.0, 2 * binom.cdf(np.minimum(k, n - k), n, 0.5))
    reject = p_values <= alpha
    if not reject.any():
        return math.nan
    lo, hi = 0.0, 1.0  # power(0) = size <= alpha < power <= power(1) = 1
    for _ in range(60):
        mid = (lo + hi) / 2
        if binom.pmf(k[reject], n, (1 + mid) / 2).sum() >= power:
            hi = mid
        else:
            lo = mid
    return hi
