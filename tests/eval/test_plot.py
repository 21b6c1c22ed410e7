"""plot_accuracy_cost and the paper tables: what they draw is what summarize says."""

import numpy as np
import pytest
from _eval_toys import run_rows

from genlm_lab.eval import plot_accuracy_cost, summarize, summary_markdown, summary_table


def test_the_figure_has_a_point_with_its_interval_per_row_a_colour_per_method_a_marker_per_model():
    runs = run_rows()
    summary = summarize(runs, n_bootstrap=200)
    fig = plot_accuracy_cost(summary)
    assert len(fig.axes) == 2
    for ax in fig.axes:
        domain = ax.get_title()
        rows = summary[summary["domain"] == domain]
        lines = [c.lines[0] for c in ax.containers]  # each error bar's data point
        points = sorted((float(ln.get_xdata()[0]), float(ln.get_ydata()[0])) for ln in lines)
        expected = sorted(zip(rows["wall_per_run"], rows["weighted_accuracy"], strict=True))
        assert np.allclose(points, expected)
        assert {ln.get_marker() for ln in lines} == {"o", "s"}  # one per model
        assert len({ln.get_color() for ln in lines}) == 3  # one per method
        assert ax.get_xlabel() == "wall time per run (s)" and (
            ax is not fig.axes[0] or ax.get_ylabel()
        )
    labels = {t.get_text() for t in fig.legends[0].get_texts()}
    assert labels == {"lcd", "smc", "awrs_smc", "default", "tiny-random"}


def test_latency_is_not_offered_as_a_cost_without_its_name():
    fig = plot_accuracy_cost(summarize(run_rows(), n_bootstrap=200), cost="runtime_mean")
    assert fig.axes[0].get_xlabel() == "latency per run (s)"
    with pytest.raises(ValueError, match="wall_per_run"):
        plot_accuracy_cost(run_rows(), cost="runtime_total")


def test_the_paper_table_goes_to_latex_and_markdown():
    table = summary_table(summarize(run_rows(), n_bootstrap=200))
    latex = table.to_latex(index=False, escape=True)
    assert "\\begin{tabular}" in latex and "awrs\\_smc" in latex
    md = summary_markdown(table)
    lines = md.strip().splitlines()
    assert len(lines) == 2 + len(table) and lines[0].count("|") == len(table.columns) + 1
    assert set(table["unfinished"]) == {1}
