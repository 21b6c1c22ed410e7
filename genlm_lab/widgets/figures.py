"""Matplotlib figures of an SMC record, returned (not only shown) for papers and slides."""

from __future__ import annotations

from typing import Any

import numpy as np

from genlm_lab.util import normalize_log_weights
from genlm_lab.widgets.smc_data import run_summary, step_entries


def ess_log_ml_figure(record: Any) -> Any:
    """ESS (left axis) and the log_ml estimate (right axis) over steps; resampling steps dotted.

    Args:
        record: an `SMCRecord`, its dict / JSON, or a path to its file.

    Returns:
        A `matplotlib.figure.Figure`.
    """
    from matplotlib.figure import Figure

    _, entries = step_entries(record)
    s = run_summary(entries)
    fig = Figure(figsize=(6, 3), layout="constrained")
    ax = fig.add_subplot()
    ax.plot(s["steps"], s["ess"], marker="o", ms=3, label="ESS")
    ax.set_xlabel("step")
    ax.set_ylabel("ESS")
    ax.set_ylim(0, max(s["n_particles"], 1) * 1.05)
    for t in s["resampled"]:
        ax.axvline(t, ls=":", lw=0.8, color="grey")
    ax2 = ax.twinx()
    ax2.plot(s["steps"], s["log_ml"], ls="--", color="C1", label="log_ml")
    ax2.set_ylabel("log_ml estimate")
    fig.legend(loc="outside upper center", ncols=2, frameon=False)
    return fig


def weight_histogram(record: Any, step: int = -1, bins: int = 20) -> Any:
    """Histogram of the normalised particle weights at one step (default: the last).

    Raises:
        ValueError: if the record has no steps, `step` is out of range, or the
            step has no particles or a NaN log weight (nothing to normalise).
    """
    from matplotlib.figure import Figure

    _, entries = step_entries(record)
    if not entries:
        raise ValueError("the record has no steps: nothing to plot")
    if not -len(entries) <= step < len(entries):
        raise ValueError(f"step index {step} is outside the record's {len(entries)} steps")
    e = entries[step]
    w = normalize_log_weights(p["log_weight"] for p in e["particles"])
    if not len(w):
        raise ValueError(f"step {e['step']} has no particles: nothing to plot")
    if np.isnan(w).any():
        raise ValueError(f"step {e['step']} has a NaN log weight: its weights do not normalise")
    fig = Figure(figsize=(5, 3), layout="constrained")
    ax = fig.add_subplot()
    ax.hist(w, bins=bins, range=(0, max(float(np.max(w)), 1e-12)))
    ax.set_xlabel("normalised weight")
    ax.set_ylabel("particles")
    ax.set_title(f"weights at step {e['step']} ({len(w)} particles)")
    return fig
