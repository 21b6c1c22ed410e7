"""`summarize`: one row per (model, method, domain): weighted accuracy with a bootstrap CI, cost.

Per instance, replicates are averaged first; the CI resamples instances.
Runs that failed (status "error") are counted (n_errors) and left out of the
means. Runs that ended otherwise than "finished" (an SMC run whose particles
all died, say) count in the means with the accuracy they got, and are
counted in n_unfinished. The result is a pandas DataFrame: `.to_latex()` and
`summary_markdown` put it in a paper (`summary_table` rounds it first).
"""

from __future__ import annotations

from typing import Any

from genlm_lab.eval.stats import bootstrap_ci

__all__ = ["COLUMNS", "FINISHED", "summarize", "summary_markdown", "summary_table"]

#: Statuses of runs that ended normally ("ok" is what format-1 stores wrote).
FINISHED = ("finished", "ok")

COLUMNS = [
    "model",
    "method",
    "domain",
    "n_instances",
    "n_runs",
    "n_errors",
    "n_unfinished",
    "weighted_accuracy",
    "ci_low",
    "ci_high",
    "runtime_mean",
    "runtime_total",
    "lm_requests_mean",
]


def summarize(runs: Any, ci: float = 0.95, n_bootstrap: int = 10000) -> Any:
    """Aggregate a runs table (`ResultsStore.runs_frame()` or a store) per model, method and domain.

    Args:
        runs: a DataFrame with method, domain, instance_id, status,
            weighted_accuracy, runtime_seconds, lm_requests (and model; rows
            without one are "model unknown"); or a `ResultsStore`.
        ci: the interval's coverage.
        n_bootstrap: bootstrap resamples.

    Returns:
        A DataFrame with `COLUMNS`, sorted by domain, method, then model.
    """
    import pandas as pd

    if hasattr(runs, "runs_frame"):
        runs = runs.runs_frame()
    runs = runs.copy()
    if "model" not in runs:
        runs["model"] = "model unknown"
    runs["model"] = runs["model"].fillna("model unknown")
    rows = []
    for (model, method, domain), group in runs.groupby(["model", "method", "domain"], sort=True):
        ok = group[group["status"] != "error"]
        per_instance = ok.groupby("instance_id")["weighted_accuracy"].mean()
        if len(per_instance):
            mean, lo, hi = bootstrap_ci(per_instance.to_numpy(), ci=ci, n_bootstrap=n_bootstrap)
        else:
            mean = lo = hi = float("nan")
        rows.append(
            {
                "model": model,
                "method": method,
                "domain": domain,
                "n_instances": int(group["instance_id"].nunique()),
                "n_runs": len(group),
                "n_errors": int((group["status"] == "error").sum()),
                "n_unfinished": int((~group["status"].isin((*FINISHED, "error"))).sum()),
                "weighted_accuracy": mean,
                "ci_low": lo,
                "ci_high": hi,
                "runtime_mean": float(group["runtime_seconds"].mean()),
                "runtime_total": float(group["runtime_seconds"].sum()),
                "lm_requests_mean": float(group["lm_requests"].mean()),
            }
        )
    frame = pd.DataFrame(rows, columns=COLUMNS)
    return frame.sort_values(["domain", "method", "model"], kind="stable").reset_index(drop=True)


def summary_table(summary: Any, digits: int = 3) -> Any:
    """A summary as a paper shows it: accuracy "0.412 [0.301, 0.520]", runtime, counts.

    `summary_table(summarize(store)).to_latex(index=False, escape=True)` (escape: method names
    hold underscores), or `summary_markdown(...)` of it.
    """
    import pandas as pd

    def acc(r: Any) -> str:
        if pd.isna(r["weighted_accuracy"]):
            return "n/a"
        return f"{r['weighted_accuracy']:.{digits}f} [{r['ci_low']:.{digits}f}, {r['ci_high']:.{digits}f}]"

    return pd.DataFrame(
        {
            "model": summary["model"],
            "method": summary["method"],
            "domain": summary["domain"],
            "weighted accuracy [95% CI]": [acc(r) for _, r in summary.iterrows()],
            "runtime (s)": summary["runtime_mean"].round(2),
            "instances": summary["n_instances"],
            "errors": summary["n_errors"],
            "unfinished": summary["n_unfinished"],
        }
    )


def summary_markdown(frame: Any) -> str:
    """A DataFrame as a GitHub markdown table (no extra dependency; pandas' needs tabulate)."""
    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in frame.itertuples(index=False):
        cells = [str(v).replace("|", "\\|") for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
