"""`summarize`: one row per (model, method, domain): weighted accuracy with its interval, cost.

Per instance, replicates are averaged first; the interval is over instances,
`stats.accuracy_interval`'s Wilson score interval (named per row in
`ci_method`: "Wilson score" for 0/1 scores, "Wilson score, variance bound"
for fractional ones), right at any n: two instances give a wide interval.
Runs that failed (status "error") are counted (n_errors) and left out of the
means. Runs that ended otherwise than "finished" (an SMC run whose particles
all died, say) count in the means with the accuracy they got, and are
counted in n_unfinished.

Cost is wall time and LM requests. The runner runs several instances at once,
so a run's own `runtime_seconds` is its latency: it includes the time it
waited for the others' forwards, and the runs' latencies summed exceed the
time the method took (6 runs of 23 s in 40 s of wall). `wall_seconds` is the
time during which at least one run of the row was going (the union of the
runs' [start, finish] intervals: a method run in two sessions is not charged
for the gap), and `wall_per_run` that divided by the runs: the cost to
compare. `runtime_mean` stays, as the mean latency of one run.

The result is a pandas DataFrame with full precision: `.to_latex()` and
`summary_markdown` put it in a paper (`summary_table` rounds it first).
"""

from __future__ import annotations

import math
from typing import Any

from genlm_lab.eval.identity import UNKNOWN_MODEL
from genlm_lab.eval.stats import accuracy_interval
from genlm_lab.eval.wording import readable

__all__ = [
    "COLUMNS",
    "FINISHED",
    "summarize",
    "summary_markdown",
    "summary_table",
    "wall_seconds",
]

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
    "ci_method",
    "wall_seconds",
    "wall_per_run",
    "runtime_mean",
    "lm_requests_mean",
    "lm_requests_total",
]


def wall_seconds(finished_at: Any, runtime_seconds: Any) -> float:
    """The time during which at least one of the runs was going: the union of their intervals.

    Run i went from finished_at[i] - runtime_seconds[i] to finished_at[i]. NaN when
    a run's finish time is not known (rows that never reached a store).
    """
    spans = []
    for end, length in zip(finished_at, runtime_seconds, strict=True):
        if end is None or length is None:
            return math.nan
        end, length = float(end), float(length)
        if math.isnan(end) or math.isnan(length):
            return math.nan
        spans.append((end - max(length, 0.0), end))
    total, reach = 0.0, -math.inf
    for start, end in sorted(spans):
        if end <= reach:
            continue
        total += end - max(start, reach)
        reach = end
    return total


def summarize(runs: Any, ci: float = 0.95, n_bootstrap: int | None = None) -> Any:
    """Aggregate a runs table (`ResultsStore.runs_frame()` or a store) per model, method and domain.

    Args:
        runs: a DataFrame with method, domain, instance_id, status,
            weighted_accuracy, runtime_seconds, lm_requests (and model; rows
            without one are `UNKNOWN_MODEL`); or a `ResultsStore`.
            finished_at (for the wall time; without it wall_seconds is NaN).
        ci: the interval's coverage.
        n_bootstrap: unused: the intervals have a closed form (accepted so calls
            written when they were bootstrapped still run).

    Returns:
        A DataFrame with `COLUMNS`, sorted by domain, method, then model.
    """
    import pandas as pd

    if hasattr(runs, "runs_frame"):
        runs = runs.runs_frame()
    runs = runs.copy()
    if "model" not in runs:
        runs["model"] = UNKNOWN_MODEL
    runs["model"] = runs["model"].fillna(UNKNOWN_MODEL)
    rows = []
    for (model, method, domain), group in runs.groupby(["model", "method", "domain"], sort=True):
        ok = group[group["status"] != "error"]
        per_instance = ok.groupby("instance_id")["weighted_accuracy"].mean()
        if len(per_instance):
            mean, lo, hi, ci_method = accuracy_interval(per_instance.to_numpy(), ci=ci)
        else:
            mean = lo = hi = float("nan")
            ci_method = ""
        wall = wall_seconds(
            group["finished_at"] if "finished_at" in group else [None] * len(group),
            group["runtime_seconds"],
        )
        requests = group["lm_requests"]
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
                "ci_method": ci_method,
                "wall_seconds": wall,
                "wall_per_run": wall / len(group),
                "runtime_mean": float(group["runtime_seconds"].mean()),
                "lm_requests_mean": float(requests.mean()),
                "lm_requests_total": float(requests.sum()) if requests.notna().any() else math.nan,
            }
        )
    frame = pd.DataFrame(rows, columns=COLUMNS)
    return frame.sort_values(["domain", "method", "model"], kind="stable").reset_index(drop=True)


def summary_table(summary: Any, digits: int = 3) -> Any:
    """A summary as a paper shows it: accuracy "0.412 [0.301, 0.520]", cost, counts.

    Cost is wall time per run (the method's wall time over its runs) and LM
    requests per run; the latency of one run is shown as such.
    `summary_table(summarize(store)).to_latex(index=False, escape=True)` (escape: method names
    hold underscores), or `summary_markdown(...)` of it.
    """
    import pandas as pd

    def acc(r: Any) -> str:
        if pd.isna(r["weighted_accuracy"]):
            return "n/a"
        return f"{r['weighted_accuracy']:.{digits}f} [{r['ci_low']:.{digits}f}, {r['ci_high']:.{digits}f}]"

    def read(column: str) -> list:
        values = summary[column] if column in summary else [math.nan] * len(summary)
        return [readable(float(v), digits) for v in values]

    return pd.DataFrame(
        {
            "model": summary["model"],
            "method": summary["method"],
            "domain": summary["domain"],
            "weighted accuracy [95% CI]": [acc(r) for _, r in summary.iterrows()],
            "wall time per run (s)": read("wall_per_run"),
            "latency per run (s)": read("runtime_mean"),
            "LM requests per run": read("lm_requests_mean"),
            "instances": summary["n_instances"],
            "errors": summary["n_errors"],
            "unfinished": summary["n_unfinished"],
        }
    )


def summary_markdown(frame: Any, digits: int = 3) -> str:
    """A DataFrame as a GitHub markdown table, floats rounded for reading (`digits` significant).

    No extra dependency (pandas' `to_markdown` needs tabulate). The frame keeps
    its full precision; only the printed cells are rounded (NaN prints "n/a").
    """
    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in frame.itertuples(index=False):
        cells = [_cell(v, digits).replace("|", "\\|") for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _cell(value: Any, digits: int) -> str:
    if hasattr(value, "item") and not isinstance(value, str):
        value = value.item()  # numpy scalars
    if isinstance(value, float):
        if math.isnan(value):
            return "n/a"
        value = readable(value, digits)
        return f"{value:g}" if abs(value) < 1e6 else f"{value:.{digits}g}"
    return str(value)
