"""`SMCResult`: the final particles of a run and the estimates they carry."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from genlm_lab.smc.record import SMCRecord
from genlm_lab.util import Chart, logmeanexp

__all__ = ["SMCResult", "effective_sample_size"]


def _normalized(log_weights: Iterable[float]) -> np.ndarray:
    """exp(log_weights), normalised to sum 1, computed relative to the largest one.

    Scaling by the largest weight (not subtracting the log of the total) keeps
    the result exact when the weights are huge in magnitude: -1e300 + log(2)
    rounds back to -1e300, which would make two equal weights each read as 1.
    All -inf gives all zeros; any NaN gives all NaN.
    """
    lw = np.asarray(list(log_weights), dtype=np.float64)
    if lw.size == 0:
        return lw
    top = lw.max()
    if np.isnan(top):
        return np.full_like(lw, math.nan)
    if top == -math.inf:
        return np.zeros_like(lw)
    if top == math.inf:
        at_top = lw == math.inf
        return at_top / at_top.sum()
    w = np.exp(lw - top)
    return w / w.sum()


def effective_sample_size(log_weights: Iterable[float]) -> float:
    """ESS = 1 / sum(w_i^2) of the normalised weights (0 when every weight is 0)."""
    w = _normalized(log_weights)
    total = float((w * w).sum())
    return 0.0 if total == 0 else 1.0 / total


class SMCResult(list):
    """The final particles (a list of models), with estimates and the run's record.

    Attributes:
        log_ml: estimate of log Z, the log marginal likelihood (-inf when all died).
        record: the `SMCRecord` of the run.
    """

    def __init__(
        self, particles: Iterable[Any], record: SMCRecord | None = None, log_ml: float | None = None
    ) -> None:
        super().__init__(particles)
        self.record = record
        self.log_ml = logmeanexp(self.log_weights) if log_ml is None else float(log_ml)

    @property
    def log_weights(self) -> np.ndarray:
        """Final log-weight of each particle."""
        return np.array([p.weight for p in self], dtype=np.float64)

    @property
    def normalized_weights(self) -> np.ndarray:
        """Weights normalised to sum to 1 (all zero when every particle died)."""
        return _normalized(self.log_weights)

    @property
    def ess(self) -> float:
        """Effective sample size of the final weights."""
        return effective_sample_size(self.log_weights)

    @property
    def posterior(self) -> Chart:
        """Posterior estimate: normalised weight summed over each particle's serialised contents."""
        chart = Chart(0.0)
        for particle, w in zip(self, self.normalized_weights, strict=True):
            key = particle.string_for_serialization()
            chart[key] = chart[key] + float(w)
        return chart

    def to_pandas(self) -> Any:
        """One row per particle: contents, log-weight, normalised weight, finished."""
        import pandas as pd

        return pd.DataFrame(
            {
                "contents": [p.string_for_serialization() for p in self],
                "log_weight": self.log_weights,
                "weight": self.normalized_weights,
                "finished": [bool(p.done_stepping()) for p in self],
            }
        )

    def __repr__(self) -> str:
        return f"SMCResult({len(self)} particles, log_ml={self.log_ml:.4f}, ess={self.ess:.2f})"
