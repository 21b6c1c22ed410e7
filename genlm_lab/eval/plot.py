"""`plot_accuracy_cost`: the accuracy-versus-cost figure of a paper, with matplotlib.

One point per (model, method, domain) row of `summarize`: x the mean runtime
per instance (or LM requests), y the weighted accuracy with its 95% interval
as an error bar; one marker per method, one colour per model, one panel per
domain. Matplotlib is imported only when the figure is drawn.
"""

from __future__ import annotations

from typing import Any

from genlm_lab.eval.summary import summarize

__all__ = ["plot_accuracy_cost"]

_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")


def plot_accuracy_cost(
    store: Any, cost: str = "runtime_mean", log_x: bool = False, n_bootstrap: int = 2000
) -> Any:
    """Weighted accuracy (95% CI as error bars) against cost, per domain.

    Args:
        store: a `ResultsStore`, a runs DataFrame, or a `summarize` DataFrame.
        cost: "runtime_mean" (seconds per instance) or "lm_requests_mean".
        log_x: a logarithmic cost axis (costs spanning decades).
        n_bootstrap: bootstrap resamples when the summary is computed here.

    Returns:
        The matplotlib `Figure` (`fig.savefig("acc_cost.pdf")` for a paper).

    Raises:
        ValueError: for an unknown cost column.
    """
    import matplotlib.pyplot as plt  # in notebooks, registers the inline display of figures
    from matplotlib import rcParams
    from matplotlib.lines import Line2D

    if cost not in ("runtime_mean", "lm_requests_mean"):
        raise ValueError(f"cost must be 'runtime_mean' or 'lm_requests_mean', got {cost!r}")
    summary = store
    if not (hasattr(store, "columns") and "ci_low" in store.columns):
        summary = summarize(store, n_bootstrap=n_bootstrap)
    domains = sorted(summary["domain"].unique())
    methods = sorted(summary["method"].unique())
    models = sorted(summary["model"].unique())
    colours = rcParams["axes.prop_cycle"].by_key()["color"]
    fig = plt.figure(figsize=(4.2 * max(1, len(domains)) + 1.6, 3.4), layout="constrained")
    plt.close(fig)  # returned, not also shown by pyplot at the end of a cell
    axes = fig.subplots(1, max(1, len(domains)), squeeze=False)
    for ax, domain in zip(axes[0], domains, strict=False):
        rows = summary[summary["domain"] == domain]
        for _, r in rows.iterrows():
            if r["weighted_accuracy"] != r["weighted_accuracy"]:  # NaN: every run failed
                continue
            err = [[r["weighted_accuracy"] - r["ci_low"]], [r["ci_high"] - r["weighted_accuracy"]]]
            ax.errorbar(
                [r[cost]],
                [r["weighted_accuracy"]],
                yerr=err,
                marker=_MARKERS[methods.index(r["method"]) % len(_MARKERS)],
                color=colours[models.index(r["model"]) % len(colours)],
                capsize=3,
                linestyle="none",
                markersize=7,
            )
        ax.set_title(domain)
        ax.set_xlabel("mean runtime per instance (s)" if cost == "runtime_mean" else "LM requests")
        ax.set_ylim(-0.05, 1.05)
        ax.grid(alpha=0.3)
        if log_x:
            ax.set_xscale("log")
    axes[0][0].set_ylabel("weighted accuracy (95% CI)")
    handles = [
        Line2D([], [], marker=_MARKERS[i % len(_MARKERS)], color="grey", linestyle="none", label=m)
        for i, m in enumerate(methods)
    ] + [
        Line2D([], [], marker="o", color=colours[i % len(colours)], linestyle="none", label=m)
        for i, m in enumerate(models)
    ]
    fig.legend(handles=handles, loc="outside right center", frameon=False)
    return fig
