"""`summarize`: one row per (method, domain): weighted accuracy with a bootstrap CI, runtime, LM requests.

Per instance, replicates are averaged first; the CI resamples instances.
Runs that failed are counted (n_errors) and left out of the means.
"""

from __future__ import annotations

from typing import Any

from genlm_lab.eval.stats import bootstrap_ci

__all__ = ["summarize"]

COLUMNS = [
    "method",
    "domain",
    "n_instances",
    "n_errors",
    "weighted_accuracy",
    "ci_low",
    "ci_high",
    "runtime_mean",
    "runtime_total",
    "lm_requests_mean",
]


def summarize(runs: Any, ci: float = 0.95, n_bootstrap: int = 10000) -> Any:
    """Aggregate a runs table (`ResultsStore.runs_frame()` or a store) per method and domain.

    Args:
        runs: a DataFrame with method, domain, instance_id, status,
            weighted_accuracy, runtime_seconds, lm_requests; or a `ResultsStore`.
        ci: the interval's coverage.
        n_bootstrap: bootstrap resamples.

    Returns:
        A DataFrame with `COLUMNS`, sorted by domain then method.
    """
    import pandas as pd

    if hasattr(runs, "runs_frame"):
        runs = runs.runs_frame()
    rows = []
    for (method, domain), group in runs.groupby(["method", "domain"], sort=True):
        ok = group[group["status"] == "ok"]
        per_instance = ok.groupby("instance_id")["weighted_accuracy"].mean()
        if len(per_instance):
            mean, lo, hi = bootstrap_ci(per_instance.to_numpy(), ci=ci, n_bootstrap=n_bootstrap)
        else:
            mean = lo = hi = float("nan")
        rows.append(
            {
                "method": method,
                "domain": domain,
                "n_instances": int(group["instance_id"].nunique()),
                "n_errors": int((group["status"] != "ok").sum()),
                "weighted_accuracy": mean,
                "ci_low": lo,
                "ci_high": hi,
                "runtime_mean": float(group["runtime_seconds"].mean()),
                "runtime_total": float(group["runtime_seconds"].sum()),
                "lm_requests_mean": float(group["lm_requests"].mean()),
            }
        )
    frame = pd.DataFrame(rows, columns=COLUMNS)
    return frame.sort_values(["domain", "method"], kind="stable").reset_index(drop=True)
