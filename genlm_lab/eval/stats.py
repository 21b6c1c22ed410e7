"""Summary statistics of an evaluation: means with percentile-bootstrap confidence intervals.

Instances are the unit of resampling (a method's per-instance weighted
accuracies, averaged over replicates first), as in genlm-eval's
`bootstrap_ci`; the generator is seeded so that a report is reproducible.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["bootstrap_ci"]


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    metric: Callable[[np.ndarray], float] = np.mean,
    ci: float = 0.95,
    n_bootstrap: int = 10000,
    seed: int | None = 0,
) -> tuple[float, float, float]:
    """The metric of `values` and a percentile-bootstrap confidence interval for it.

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
    if not 0 < ci < 1:
        raise ValueError(f"ci must be between 0 and 1, got {ci}")
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
