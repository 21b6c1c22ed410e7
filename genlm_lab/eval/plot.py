"""`plot_accuracy_cost`: the accuracy-versus-cost figure of a paper, with matplotlib.

One point per (model, method, domain) row of `summarize`: x a cost (wall time
per run by default), y the weighted accuracy with its 95% interval as an error
bar; one panel per domain. Colours and markers are `chart.Encoding`'s, the
same as the live view's and the report's SVG: one colour per method, one
marker per model. Matplotlib is imported only when the figure is drawn.
"""

from __future__ import annotations

from typing import Any

from genlm_lab.eval.chart import DEFAULT_COST, Encoding, check_cost
from genlm_lab.eval.scores import domain_title
from genlm_lab.eval.summary import summarize

__all__ = ["plot_accuracy_cost"]


def plot_accuracy_cost(store: Any, cost: str = DEFAULT_COST, log_x: bool = False) -> Any:
    """Weighted accuracy (95% CI as error bars) against cost, per domain.

    Args:
        store: a `ResultsStore`, a runs DataFrame, or a `summarize` DataFrame.
        cost: "wall_per_run" (the method's wall time over its runs, the default),
            "lm_requests_mean", or "runtime_mean" (one run's latency: concurrent
            runs overlap, so it is not a cost to compare).
        log_x: a logarithmic cost axis (costs spanning decades).

    Returns:
        The matplotlib `Figure` (`fig.savefig("acc_cost.pdf")` for a paper).

    Raises:
        ValueError: for an unknown cost column.
    """
    import matplotlib.pyplot as plt  # in notebooks, registers the inline display of figures
    from matplotlib.lines import Line2D

    label = check_cost(cost)
    summary = store
    if not (hasattr(store, "columns") and "ci_low" in store.columns):
        summary = summarize(store)
    enc = Encoding.of(summary.to_dict("records"))
    domains = sorted(summary["domain"].unique())
    fig = plt.figure(figsize=(4.2 * max(1, len(domains)) + 1.6, 3.4), layout="constrained")
    plt.close(fig)  # returned, not also shown by pyplot at the end of a cell
    axes = fig.subplots(1, max(1, len(domains)), squeeze=False)
    for ax, domain in zip(axes[0], domains, strict=False):
        rows = summary[summary["domain"] == domain]
        for _, r in rows.iterrows():
            if r["weighted_accuracy"] != r["weighted_accuracy"] or r[cost] != r[cost]:
                continue  # NaN: every run failed, or the cost is not known
            err = [[r["weighted_accuracy"] - r["ci_low"]], [r["ci_high"] - r["weighted_accuracy"]]]
            ax.errorbar(
                [r[cost]],
                [r["weighted_accuracy"]],
                yerr=err,
                marker=enc.marker(r["model"]),
                color=enc.colour(r["method"]),
                capsize=3,
                linestyle="none",
                markersize=7,
            )
        ax.set_title(domain_title(domain))
        ax.set_xlabel(label)
        ax.set_ylim(-0.05, 1.05)
        ax.grid(alpha=0.3)
        if log_x:
            ax.set_xscale("log")
    axes[0][0].set_ylabel("weighted accuracy (95% CI)")
    handles = [
        Line2D([], [], color=enc.colour(m), linewidth=5, label=m)  # a swatch: colour is method
        for m in enc.methods
    ] + [
        Line2D([], [], marker=enc.marker(m), color="grey", linestyle="none", label=m)
        for m in enc.models
    ]
    fig.legend(handles=handles, loc="outside right center", frameon=False)
    return fig
