"""`SMCResult`: the final particles of a run and the estimates they carry."""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any

import numpy as np

from genlm_lab.smc.record import SMCRecord
from genlm_lab.util import Chart, logmeanexp, normalize_log_weights

__all__ = ["SMCResult", "effective_sample_size"]


def effective_sample_size(log_weights: Iterable[float]) -> float:
    """ESS = 1 / sum(w_i^2) of the normalised weights (0 when every weight is 0)."""
    w = normalize_log_weights(log_weights)
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
        return normalize_log_weights(self.log_weights)

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

    def _repr_html_(self) -> str:
        """A summary line and the top of the posterior (the largest entries, bounded)."""
        final = (self.record.final or {}) if self.record is not None else {}
        parts = [
            f"{len(self)} particles",
            f"log_ml {self.log_ml:.4f}",
            f"ESS {self.ess:.2f}",
        ]
        if final.get("status"):
            parts.append(str(final["status"]))
        if final.get("n_steps") is not None:
            parts.append(f"{final['n_steps']} steps")
        head = html.escape("SMCResult: " + ", ".join(parts))
        return (
            f"<div class='genlm-smc-result'><div><b>{head}</b></div>"
            f"<div>posterior over particle contents:</div>{self.posterior._repr_html_()}</div>"
        )
