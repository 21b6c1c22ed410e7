"""A standalone offline HTML page of a whole results store (`store_report_html`).

The page holds the results tables and chart (`genlm_lab.eval.results_html`),
the paired comparisons of every two methods or models, and every stored run
a link away. `genlm-lab eval report` writes it. (An SMC record's own page is
`genlm_lab.widgets.record_report_html`.)
"""

from __future__ import annotations

from genlm_lab.eval.paired import pairwise
from genlm_lab.eval.results_html import results_data, results_html, run_title
from genlm_lab.eval.store import ResultsStore
from genlm_lab.eval.wording import mde_text, plural
from genlm_lab.widgets.particle_view import ParticleView
from genlm_lab.widgets.render import esc, table

__all__ = ["run_html", "store_report_html"]


def run_html(store: ResultsStore, run_id: int) -> str:
    """A stored run as the live `ParticleView` shows it (status, killed by, factors), or why not."""
    run = store.run(run_id)
    parts = []
    if run.get("error"):
        parts.append(f"<div class='genlm-error'>{esc(run['error'])}</div>")
    record = store.record(run_id)
    if record is None:
        parts.append("<div class='genlm-note'>this run kept no SMC record</div>")
    else:
        view = ParticleView.from_record(record)
        parts.append(ParticleView.to_html(view.view_data()))
        view.close()
    return "".join(parts)


_REPORT_CSS = (
    "body{margin:24px;font-family:system-ui,sans-serif}"
    ".genlm-run{display:none;border-top:1px solid #8884;margin-top:16px}"
    ".genlm-run:target{display:block}"
    "@media (prefers-color-scheme: dark){body{background:#111;color:#ddd;"
    "--jp-ui-font-color1:#ddd;--jp-ui-font-color2:#aaa;--jp-border-color2:#333;"
    "--jp-layout-color0:#111}}"
)


def store_report_html(store: ResultsStore, title: str = "Evaluation report") -> str:
    """A standalone page of a whole store: tables, the chart, comparisons, every run a link away.

    One accuracy-versus-cost chart (the view's; `plot_accuracy_cost` draws the
    same encoding for a paper).

    Each run's link opens that run (a CSS `:target` section: the particle view
    with status, killed-by and factor columns). Inline CSS and SVG only: no
    script, no external reference; opens offline in any browser.
    """
    data = results_data(store, max_rows=None)
    sections = [
        f"<section class='genlm-run' id='run-{r['run_id']}'><h3>{esc(run_title(store.run(r['run_id'])))}</h3>"
        f"{run_html(store, r['run_id'])}<p><a href='#runs'>back to the runs</a></p></section>"
        for r in data["runs"]
    ]
    pairs = pairwise(store) if data["n_runs"] else None
    comparisons = ""
    if pairs is not None and len(pairs):
        rows = [
            f"<tr><td>{esc(p.domain)}</td><td>{esc(p.a)}</td><td>{esc(p.b)}</td>"
            f"<td class='genlm-num'>{p.n}</td><td class='genlm-num'>{p.diff:+.3f}</td>"
            f"<td class='genlm-num'>[{p.ci_low:+.3f}, {p.ci_high:+.3f}]</td>"
            f"<td class='genlm-num'>{p.p_value:.3g}</td><td class='genlm-num'>{p.p_holm:.3g}</td>"
            f"<td class='genlm-num'>{esc(mde_text(p.mde, p.n))}</td></tr>"
            for p in pairs.itertuples()
        ]
        comparisons = (
            "<h2>Paired comparisons</h2>"
            f"<p>{plural(len(pairs), 'pair')} compared at once (rows that differ in the method or "
            "in the model, on one domain): read p (Holm), adjusted for the number of pairs. "
            "p: exact sign-flip permutation test of the per-instance differences (McNemar's exact "
            "test for 0/1 scores). 95% CI: the range of the mean difference over exact "
            "Clopper-Pearson intervals for the share of pairs that differ and for the share of "
            "those a wins (it excludes 0 exactly when McNemar's test rejects; fractional "
            "differences count by their positive and negative parts). Min. effect: the smallest difference the test detects with 80% power "
            "on this many pairs when each differs by +1 or -1; unsizeable when not even a "
            "difference of 1 is. Differences smaller than it are not ruled out by a large p; "
            "per-instance differences within 1e-9 (float noise of sums of weights) are ties.</p>"
            + table(
                ["domain", "a", "b", "n", "a - b", "95% CI", "p", "p (Holm)", "min. effect"], rows
            )
        )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{esc(title)}</title><style>{_REPORT_CSS}</style></head><body>"
        f"<h1>{esc(title)}</h1><p>{esc(store.path)}</p>"
        f"<div id='runs'>{results_html(data, link_runs=True)}</div>{comparisons}"
        f"<h2>Runs</h2><p>Click a run number in the table to open it here.</p>{''.join(sections)}"
        "</body></html>"
    )
