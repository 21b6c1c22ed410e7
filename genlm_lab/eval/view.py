"""`ResultsView`: models x methods x domains with weighted accuracy and CIs, accuracy vs runtime, runs.

One data dict (`results_data`) drawn two ways, as every view here: static
HTML (`results_html`, what nbval and GitHub show; `report_html` makes it a
standalone offline page with every stored run's particles) and live in the
browser (`widgets/results.js`). The live view takes rows as runs finish
(`view.add`, passed to `run_evaluation(on_result=...)`), opens a run's
stored `SMCRecord` in the particle view when its row is clicked (the click
sets `selected_run`; the kernel reads the record from the store and pushes
the particle table, killed-by and factor columns included), and compares two
summary rows when two are picked (`compare_rows`; `genlm_lab.eval.compare`).
The accuracy-versus-cost chart is `chart.scatter_svg`, the same in both
renderings and in the report (one encoding with `plot_accuracy_cost`: one
colour per method, one marker per model); cost is wall time per run, and a
run's own runtime is shown as its latency. The view reads the store and the
runner's rows; nothing in inference knows it exists.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import traitlets

from genlm_lab.eval.chart import scatter_svg
from genlm_lab.eval.identity import UNKNOWN_MODEL
from genlm_lab.eval.labels import instance_label
from genlm_lab.eval.paired import compare, pairwise
from genlm_lab.eval.store import ResultsStore
from genlm_lab.eval.summary import FINISHED, summarize
from genlm_lab.eval.wording import mde_text, plural
from genlm_lab.widgets.base import LiveView, asset, esm
from genlm_lab.widgets.particle_view import ParticleView
from genlm_lab.widgets.render import bar, esc, fmt, table, wrap

__all__ = [
    "ResultsView",
    "comparison_html",
    "report_html",
    "results_data",
    "results_html",
    "scatter_svg",
]

_RUN_KEYS = (
    "run_id",
    "model",
    "method",
    "domain",
    "instance_id",
    "instance",
    "replicate",
    "status",
    "error",
    "weighted_accuracy",
    "runtime_seconds",
    "lm_requests",
    "finished_at",
    "has_record",
)
#: Rows the per-run table shows (worst first, then the newest); the report shows all.
MAX_ROWS = 200


def _clean(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item"):
        return _clean(value.item())
    return value


def results_data(runs: Sequence[dict] | Any, max_rows: int | None = MAX_ROWS) -> dict:
    """View data of runs (dicts, a runs DataFrame, or a `ResultsStore`).

    Returns:
        {"kind": "results", "summary": one row per (model, method, domain), "runs":
        per-run rows (errors, then unfinished runs, then worst accuracy first),
        "n_runs", "models", "methods", "domains", "scatter_svg", "cost_note"}.
    """
    import pandas as pd

    if isinstance(runs, ResultsStore):
        runs = runs.runs_frame()
    frame = runs.copy() if isinstance(runs, pd.DataFrame) else pd.DataFrame(list(runs))
    if frame.empty:
        return {
            "kind": "results",
            "summary": [],
            "runs": [],
            "n_runs": 0,
            "models": [],
            "methods": [],
            "domains": [],
            "scatter_svg": scatter_svg([]),
            "cost_note": COST_NOTE,
        }
    for key in _RUN_KEYS:
        if key not in frame:
            frame[key] = None
    frame["model"] = frame["model"].fillna(UNKNOWN_MODEL)
    frame["instance"] = frame["instance"].fillna("")
    frame["has_record"] = frame["has_record"].fillna(False).astype(bool)
    summary = summarize(frame, n_bootstrap=2000)
    rank = frame["status"].map(lambda s: 0 if s == "error" else (2 if s in FINISHED else 1))
    order = frame.assign(_rank=rank).sort_values(
        ["_rank", "weighted_accuracy", "run_id"], ascending=[True, True, True], na_position="first"
    )
    rows = [
        {k: _clean(v) for k, v in r.items() if k in _RUN_KEYS}
        for r in order.to_dict("records")[: max_rows or None]
    ]
    summary_rows = [{k: _clean(v) for k, v in r.items()} for r in summary.to_dict("records")]
    return {
        "kind": "results",
        "summary": summary_rows,
        "runs": rows,
        "n_runs": len(frame),
        "models": sorted(frame["model"].dropna().unique().tolist()),
        "methods": sorted(frame["method"].dropna().unique().tolist()),
        "domains": sorted(frame["domain"].dropna().unique().tolist()),
        "scatter_svg": scatter_svg(summary_rows),
        "cost_note": COST_NOTE,
    }


def _summary_rows(summary: Sequence[dict]) -> list[str]:
    out = []
    for i, r in enumerate(summary):
        acc = r.get("weighted_accuracy")
        ci = "" if r.get("ci_low") is None else f"[{fmt(r['ci_low'])}, {fmt(r['ci_high'])}]"
        out.append(
            f"<tr data-row='{i}'><td>{esc(r.get('model') or '')}</td><td>{esc(r['method'])}</td>"
            f"<td>{esc(r['domain'])}</td>"
            f"<td>{bar(acc or 0.0, 80)} <span class='genlm-num'>{esc(fmt(acc))}</span></td>"
            f"<td class='genlm-num'>{esc(ci)}</td><td class='genlm-num'>{r['n_instances']}</td>"
            f"<td class='genlm-num'>{r['n_errors']}</td>"
            f"<td class='genlm-num'>{r.get('n_unfinished', 0)}</td>"
            f"<td class='genlm-num' title='{esc(_wall_tip(r))}'>"
            f"{esc(fmt(r.get('wall_per_run'), 3))}</td>"
            f"<td class='genlm-num'>{esc(fmt(r.get('runtime_mean'), 3))}</td>"
            f"<td class='genlm-num'>{esc(fmt(r.get('lm_requests_mean'), 3))}</td></tr>"
        )
    return out


def _wall_tip(r: dict) -> str:
    """The wall-time cell's tooltip: the method's whole wall time and what it is divided by."""
    wall = r.get("wall_seconds")
    if wall is None:
        return "wall time not known (runs that never reached a store)"
    return f"{fmt(wall, 3)} s of wall time over {plural(int(r.get('n_runs') or 0), 'run')}"


def _run_rows(runs: Sequence[dict], link: bool) -> list[str]:
    out = []
    for r in runs:
        rid = r.get("run_id")
        name = esc(f"#{rid}" if rid is not None else "")
        cell = f"<a href='#run-{rid}'>{name}</a>" if link and rid is not None else name
        status = r.get("status") or ""
        note = esc(r.get("error") or "") if status == "error" else ""
        out.append(
            f"<tr data-run-id='{esc(rid)}' class='genlm-run-row genlm-status-{esc(status)}'>"
            f"<td>{cell}</td><td>{esc(r.get('model'))}</td><td>{esc(r.get('method'))}</td>"
            f"<td>{esc(r.get('domain'))}</td><td>{esc(r.get('instance_id'))}</td>"
            f"<td class='genlm-text'>{esc(r.get('instance') or '')}</td>"
            f"<td class='genlm-num'>{esc(r.get('replicate'))}</td>"
            f"<td class='genlm-num'>{esc(fmt(r.get('weighted_accuracy')))}</td>"
            f"<td class='genlm-num'>{esc(fmt(r.get('runtime_seconds'), 2))}</td>"
            f"<td class='genlm-num'>{esc(fmt(r.get('lm_requests')))}</td>"
            f"<td>{esc(status)} <span class='genlm-note'>{note}</span></td></tr>"
        )
    return out


SUMMARY_HEADERS = [
    "model",
    "method",
    "domain",
    "weighted accuracy",
    "95% CI",
    "instances",
    "errors",
    "unfinished",
    "wall time per run (s)",
    "latency per run (s)",
    "LM requests per run",
]
#: What the summary's cost columns mean (under the table, in every rendering).
COST_NOTE = (
    "Cost: wall time per run is the time the method's runs took together (from the first "
    "start to the last finish, gaps left out) over the number of runs. Runs go several at "
    "once, so a run's own runtime is its latency: it includes waiting for the others, and "
    "latencies summed exceed the wall time."
)
RUN_HEADERS = [
    "run",
    "model",
    "method",
    "domain",
    "instance",
    "content",
    "rep",
    "weighted acc.",
    "latency (s)",
    "LM requests",
    "status",
]


def comparison_html(c: Any, n_made: int = 1) -> str:
    """A `Comparison` as a small table, with a note on multiple comparisons when n_made > 1."""
    rows = [
        f"<tr><td>{esc(k)}</td><td class='genlm-num'>{esc(v)}</td></tr>"
        for k, v in (
            ("a", c.a),
            ("b", c.b),
            ("instances paired", c.n),
            ("mean a, mean b", f"{fmt(c.mean_a)}, {fmt(c.mean_b)}"),
            ("a - b", f"{c.diff:+.3f}" if c.n else "n/a"),
            (
                f"{c.ci:.0%} CI (paired bootstrap)",
                f"[{c.ci_low:+.3f}, {c.ci_high:+.3f}]" if c.n else "n/a",
            ),
            ("a better / b better / ties", f"{c.n_a_better} / {c.n_b_better} / {c.n_ties}"),
            (f"p ({c.test})", f"{c.p_value:.3g}"),
            (
                f"min. detectable effect (alpha {c.alpha:g}, power {c.power:g})",
                mde_text(c.mde, c.n),
            ),
        )
    ]
    note = ""
    if n_made > 1:
        note = (
            f"<div class='genlm-note genlm-multiple'>{plural(n_made, 'comparison')} made here: with Holm or "
            f"Bonferroni, call a difference significant only if p &lt; {c.alpha / n_made:.3g} "
            f"({c.alpha:g} / {n_made}).</div>"
        )
    return (
        "<div class='genlm-comparison'>"
        + table(["", ""], rows)
        + f"<div class='genlm-note'>{esc(c.summary())}</div>{note}</div>"
    )


def results_html(data: dict, link_runs: bool = False) -> str:
    """Static HTML of `results_data`: the summary table, the scatter, the per-run table."""
    shown = len(data["runs"])
    more = (
        f"<div class='genlm-note'>{shown} of {plural(data['n_runs'], 'run')} shown (errors and the worst first)</div>"
        if shown < data["n_runs"]
        else ""
    )
    selected = data.get("selected")
    comparison = data.get("comparison")
    body = (
        f"<div class='genlm-title'>Results: {plural(data['n_runs'], 'run')}</div>"
        + table(SUMMARY_HEADERS, _summary_rows(data["summary"]))
        + f"<div class='genlm-note genlm-cost-note'>{esc(COST_NOTE)}</div>"
        + (f"<div class='genlm-title'>Comparison</div>{comparison['html']}" if comparison else "")
        + data.get("scatter_svg", scatter_svg(data["summary"]))
        + table(RUN_HEADERS, _run_rows(data["runs"], link_runs))
        + more
        + (
            f"<div class='genlm-title'>{esc(selected['title'])}</div>{selected['html']}"
            if selected
            else ""
        )
    )
    return wrap(body, "results")


def run_title(run: dict) -> str:
    """ "Run #5: awrs_smc with tiny-random on pattern_matching / 3 (a+b), replicate 0: all_dead"."""
    content = instance_label(run.get("instance"))
    return (
        f"Run #{run['run_id']}: {run.get('method')} with {run.get('model') or UNKNOWN_MODEL} "
        f"on {run.get('domain')} / {run.get('instance_id')}"
        + (f" ({content})" if content else "")
        + f", replicate {run.get('replicate')}: {run.get('status')}"
    )


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


def report_html(store: ResultsStore, title: str = "Evaluation report") -> str:
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
            "Differences smaller than the minimum detectable effect are not ruled out by a large "
            "p; per-instance differences within 1e-9 (float noise of sums of weights) are ties.</p>"
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


class ResultsView(LiveView):
    """Live results: pass `view.add` as `run_evaluation(on_result=...)`; click a run to open it.

    Pick two summary rows (click them) to compare them paired by instance.

    Args:
        store: the `ResultsStore` (or its path) the runs are stored in; its
            runs so far are shown at once.
    """

    _esm = esm("results.js")
    _css = asset("genlm.css")
    selected_run = traitlets.Int(-1).tag(sync=True)
    compare_rows = traitlets.List(traitlets.Int(), default_value=[]).tag(sync=True)

    def __init__(self, store: ResultsStore | str | None = None) -> None:
        super().__init__()
        self.store = ResultsStore(store) if isinstance(store, str) else store
        self._rows: list[dict] = []
        self._selected: dict | None = None
        self._comparison: dict | None = None
        self._n_compared = 0
        if self.store is not None:
            self._rows = self.store.runs_frame().to_dict("records")
        self._send_now(self._build())
        self.observe(self._on_select, names="selected_run")
        self.observe(self._on_compare, names="compare_rows")

    def _build(self) -> dict:
        data = results_data(self._rows)
        if self._selected is not None:
            data["selected"] = self._selected
        if self._comparison is not None:
            data["comparison"] = self._comparison
        return data

    def add(self, row: dict) -> None:
        """Take one finished run (a row from `run_evaluation`'s `on_result`) and redraw (throttled)."""
        row = dict(row)
        row.setdefault("finished_at", time.time())  # it just finished: its wall time counts
        row.setdefault("has_record", self.store is not None and row.get("run_id") is not None)
        if "instance" not in row and self.store is not None and row.get("run_id") is not None:
            row["instance"] = instance_label(self.store.run(row["run_id"]).get("instance"))
        self._rows.append(row)
        self.push(self._build)

    def refresh(self) -> None:
        """Reload every run from the store (e.g. another process wrote to it)."""
        if self.store is not None:
            self._rows = self.store.runs_frame().to_dict("records")
        self.push(self._build, final=True)

    def open_run(self, run_id: int) -> ParticleView:
        """The stored run `run_id` in a `ParticleView` (also shown under the table, with its model).

        Raises:
            ValueError: without a store, or if the run kept no record.
        """
        if self.store is None:
            raise ValueError("this ResultsView has no store to read runs from")
        run = self.store.run(int(run_id))
        record = self.store.record(int(run_id))
        if record is None:
            raise ValueError(f"run {run_id} kept no SMC record")
        view = ParticleView.from_record(record)
        self._selected = {
            "run_id": int(run_id),
            "title": run_title(run),
            "html": ParticleView.to_html(view.view_data()),
        }
        self.push(self._build, final=True)
        return view

    def compare(self, a: str | dict, b: str | dict, **common: Any) -> Any:
        """`genlm_lab.eval.compare` on this view's runs; shown under the summary.

        Raises:
            ValueError: as `compare` does.
        """
        import pandas as pd

        result = compare(pd.DataFrame(self._rows), a, b, **common)
        self._n_compared += 1
        self._comparison = {
            "html": comparison_html(result, self._n_compared),
            "a": result.a,
            "b": result.b,
        }
        self.push(self._build, final=True)
        return result

    def _on_select(self, change: dict) -> None:
        if change["new"] >= 0:
            try:
                self.open_run(change["new"])
            except (ValueError, KeyError) as exc:
                self._selected = {
                    "run_id": change["new"],
                    "title": f"Run #{change['new']}",
                    "html": f"<div class='genlm-error'>{esc(exc)}</div>",
                }
                self.push(self._build, final=True)

    def _on_compare(self, change: dict) -> None:
        picked = list(change["new"])
        if len(picked) != 2:
            return
        summary = self.view_data()["summary"]
        try:
            a, b = ({k: summary[i][k] for k in ("model", "method", "domain")} for i in picked)
            self.compare(a, b)
        except (ValueError, IndexError) as exc:
            self._comparison = {"html": f"<div class='genlm-error'>{esc(exc)}</div>"}
            self.push(self._build, final=True)

    @staticmethod
    def to_html(data: dict) -> str:
        return results_html(data)
