"""One benchmark result row, in the columns `run_all.py` writes to RESULTS.md."""

from __future__ import annotations

from typing import Any


def result_row(
    benchmark: str,
    metric: str,
    ours: Any,
    baseline: Any,
    ratio: Any,
    target: Any,
    met: bool | None,
    note: str,
) -> dict:
    """A row: what was measured, our figure, the baseline's, their ratio, the target, whether met."""
    return {
        "benchmark": benchmark,
        "metric": metric,
        "ours": ours,
        "baseline": baseline,
        "ratio": ratio,
        "target": target,
        "met": met,
        "note": note,
    }
