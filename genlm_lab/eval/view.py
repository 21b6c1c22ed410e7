"""`ResultsView`: methods x domains with weighted accuracy and CIs, accuracy vs runtime, per-run rows.

One data dict (`results_data`) drawn two ways, as every view here: static
HTML (`results_html`, what nbval and GitHub show; `report_html` makes it a
standalone offline page with every stored run's particles inline) and live
in the browser (`widgets/results.js`). The live view takes rows as runs
finish (`view.add`, passed to `run_evaluation(on_result=...)`) and opens a
run's stored `SMCRecord` in the particle view when its row is clicked (the
click sets `selected_run`; the kernel reads the record from the store and
pushes its particle table). The view reads the store and the runner's rows;
nothing in inference knows it exists.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import traitlets

from genlm_lab.eval.store import ResultsStore
from genlm_lab.eval.summary import summarize
from genlm_lab.widgets.base import LiveView, asset, esm
from genlm_lab.widgets.particle_view import (
    ParticleView,
    final_status,
    particle_data,
    particles_html,
)
from genlm_lab.widgets.render import bar, esc, fmt, table, wrap
from genlm_lab.widgets.smc_data import as_record, step_entries

__all__ = ["ResultsView", "report_html", "results_data", "results_html", "scatter_svg"]

_RUN_KEYS = (
    "run_id",
    "method",
    "domain",
    "instance_id",
    "replicate",
    "status",
    "error",
    "weighted_accuracy",
    "runtime_seconds",
    "lm_requests",
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
        {"kind": "results", "summary": one row per (method, domain), "runs": per-run rows
        (worst accuracy first, errors on top), "n_runs", "methods", "domains"}.
    """
    import pandas as pd

    if isinstance(runs, ResultsStore):
        runs = runs.runs_frame()
    frame = runs if isinstance(runs, pd.DataFrame) else pd.DataFrame(list(runs))
    if frame.empty:
        return {
            "kind": "results",
            "summary": [],
            "runs": [],
            "n_runs": 0,
            "methods": [],
            "domains": [],
        }
    for key in _RUN_KEYS:
        if key not in frame:
            frame[key] = None
    frame["has_record"] = frame["has_record"].fillna(False).astype(bool)
    summary = summarize(frame, n_bootstrap=2000)
    order = frame.assign(_err=frame["status"] != "ok").sort_values(
        ["_err", "weighted_accuracy", "run_id"], ascending=[False, True, True], na_position="first"
    )
    rows = [
        {k: _clean(v) for k, v in r.items() if k in _RUN_KEYS}
        for r in order.to_dict("records")[: max_rows or None]
    ]
    return {
        "kind": "results",
        "summary": [{k: _clean(v) for k, v in r.items()} for r in summary.to_dict("records")],
        "runs": rows,
        "n_runs": len(frame),
        "methods": sorted(frame["method"].dropna().unique().tolist()),
        "domains": sorted(frame["domain"].dropna().unique().tolist()),
    }


def scatter_svg(summary: Sequence[dict], width: int = 360, height: int = 200) -> str:
    """Weighted accuracy (with its CI) against mean runtime per instance: one point per method x domain."""
    pad_l, pad_b, pad_t, pad_r = 40, 28, 14, 90
    xs = [r["runtime_mean"] for r in summary if r.get("runtime_mean")]
    parts = [
        f"<svg width='{width}' height='{height}' viewBox='0 0 {width} {height}' role='img' "
        "aria-label='accuracy vs runtime' class='genlm-chart genlm-scatter' "
        "xmlns='http://www.w3.org/2000/svg'>",
        f"<path class='genlm-axis' d='M{pad_l},{pad_t} V{height - pad_b} H{width - pad_r}'/>",
        f"<text x='{pad_l}' y='{height - 4}' font-size='10'>mean runtime per instance (s)</text>",
        f"<text x='2' y='{pad_t + 4}' font-size='10'>1</text>",
        f"<text x='2' y='{height - pad_b}' font-size='10'>0</text>",
    ]
    if xs:
        hi = max(xs) * 1.1 or 1.0

        def px(x: float) -> float:
            return pad_l + x / hi * (width - pad_l - pad_r)

        def py(y: float) -> float:
            return height - pad_b - y * (height - pad_b - pad_t)

        parts.append(
            f"<text x='{width - pad_r - 30}' y='{height - pad_b + 12}' font-size='9'>{esc(fmt(hi, 2))}</text>"
        )
        for r in summary:
            acc, x = r.get("weighted_accuracy"), r.get("runtime_mean")
            if acc is None or x is None:
                continue
            cx, cy = px(x), py(acc)
            label = f"{r['method']} / {r['domain']}"
            if r.get("ci_low") is not None:
                parts.append(
                    f"<path class='genlm-line' d='M{cx:.1f},{py(r['ci_low']):.1f} V{py(r['ci_high']):.1f}'/>"
                )
            parts.append(
                f"<circle class='genlm-point' cx='{cx:.1f}' cy='{cy:.1f}' r='4'>"
                f"<title>{esc(label)}: {esc(fmt(acc))} in {esc(fmt(x, 2))} s</title></circle>"
                f"<text x='{cx + 6:.1f}' y='{cy + 3:.1f}' font-size='9'>{esc(label)}</text>"
            )
    parts.append("</svg>")
    return "".join(parts)


def _summary_rows(summary: Sequence[dict]) -> list[str]:
    out = []
    for r in summary:
        acc = r.get("weighted_accuracy")
        ci = "" if r.get("ci_low") is None else f"[{fmt(r['ci_low'])}, {fmt(r['ci_high'])}]"
        out.append(
            f"<tr><td>{esc(r['method'])}</td><td>{esc(r['domain'])}</td>"
            f"<td>{bar(acc or 0.0, 80)} <span class='genlm-num'>{esc(fmt(acc))}</span></td>"
            f"<td class='genlm-num'>{esc(ci)}</td><td class='genlm-num'>{r['n_instances']}</td>"
            f"<td class='genlm-num'>{r['n_errors']}</td><td class='genlm-num'>{esc(fmt(r.get('runtime_mean'), 2))}</td>"
            f"<td class='genlm-num'>{esc(fmt(r.get('lm_requests_mean'), 1))}</td></tr>"
        )
    return out


def _run_rows(runs: Sequence[dict], link: bool) -> list[str]:
    out = []
    for r in runs:
        rid = r.get("run_id")
        name = esc(f"#{rid}" if rid is not None else "")
        cell = f"<a href='#run-{rid}'>{name}</a>" if link and r.get("has_record") else name
        status = r.get("status") or ""
        note = esc(r.get("error") or "") if status != "ok" else ""
        out.append(
            f"<tr data-run-id='{esc(rid)}'><td>{cell}</td><td>{esc(r.get('method'))}</td>"
            f"<td>{esc(r.get('domain'))}</td><td>{esc(r.get('instance_id'))}</td>"
            f"<td class='genlm-num'>{esc(r.get('replicate'))}</td>"
            f"<td class='genlm-num'>{esc(fmt(r.get('weighted_accuracy')))}</td>"
            f"<td class='genlm-num'>{esc(fmt(r.get('runtime_seconds'), 2))}</td>"
            f"<td class='genlm-num'>{esc(fmt(r.get('lm_requests')))}</td>"
            f"<td>{esc(status)} <span class='genlm-note'>{note}</span></td></tr>"
        )
    return out


SUMMARY_HEADERS = [
    "method",
    "domain",
    "weighted accuracy",
    "95% CI",
    "instances",
    "errors",
    "runtime (s)",
    "LM requests",
]
RUN_HEADERS = [
    "run",
    "method",
    "domain",
    "instance",
    "rep",
    "weighted acc.",
    "runtime (s)",
    "LM requests",
    "status",
]


def results_html(data: dict, link_runs: bool = False) -> str:
    """Static HTML of `results_data`: the summary table, the scatter, the per-run table."""
    shown = len(data["runs"])
    more = (
        f"<div class='genlm-note'>{shown} of {data['n_runs']} runs shown (errors and the worst first)</div>"
        if shown < data["n_runs"]
        else ""
    )
    selected = data.get("selected")
    body = (
        f"<div class='genlm-title'>Results: {data['n_runs']} runs</div>"
        + table(SUMMARY_HEADERS, _summary_rows(data["summary"]))
        + scatter_svg(data["summary"])
        + table(RUN_HEADERS, _run_rows(data["runs"], link_runs))
        + more
        + (
            f"<div class='genlm-title'>Run #{esc(selected['run_id'])}</div>{selected['html']}"
            if selected
            else ""
        )
    )
    return wrap(body, "results")


def _record_html(record_json: str) -> str:
    rec = as_record(record_json)
    run_id, entries = step_entries(rec)
    return particles_html(
        particle_data(entries, run_id=run_id, done=True, status=final_status(rec))
    )


def report_html(store: ResultsStore, title: str = "Evaluation report") -> str:
    """A standalone page of a whole store: every table row, every stored run's particles inline.

    Inline CSS and SVG only: no script, no external reference; opens offline in any browser.
    """
    data = results_data(store, max_rows=None)
    records = []
    for r in data["runs"]:
        if not r.get("has_record"):
            continue
        rec = store._conn.execute(
            "SELECT record FROM runs WHERE run_id = ?", (r["run_id"],)
        ).fetchone()[0]
        records.append(
            f"<details id='run-{r['run_id']}'><summary>run #{r['run_id']}: {esc(r['method'])} on "
            f"{esc(r['domain'])} / {esc(r['instance_id'])} (replicate {r['replicate']})</summary>"
            f"{_record_html(rec)}</details>"
        )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{esc(title)}</title>"
        "<style>body{margin:24px;font-family:system-ui,sans-serif}"
        "@media (prefers-color-scheme: dark){body{background:#111;color:#ddd;"
        "--jp-ui-font-color1:#ddd;--jp-ui-font-color2:#aaa;--jp-border-color2:#333;"
        "--jp-layout-color0:#111}}</style></head><body>"
        f"<h1>{esc(title)}</h1><p>{esc(store.path)}</p>"
        f"{results_html(data, link_runs=True)}<h2>Runs</h2>{''.join(records)}</body></html>"
    )


class ResultsView(LiveView):
    """Live results table: pass `view.add` as `run_evaluation(on_result=...)`; click a row to open its run.

    Args:
        store: the `ResultsStore` (or its path) the runs are stored in; its
            runs so far are shown at once.
    """

    _esm = esm("results.js")
    _css = asset("genlm.css")
    selected_run = traitlets.Int(-1).tag(sync=True)

    def __init__(self, store: ResultsStore | str | None = None) -> None:
        super().__init__()
        self.store = ResultsStore(store) if isinstance(store, str) else store
        self._rows: list[dict] = []
        self._selected: dict | None = None
        if self.store is not None:
            self._rows = self.store.runs_frame().to_dict("records")
        self._send_now(self._build())
        self.observe(self._on_select, names="selected_run")

    def _build(self) -> dict:
        data = results_data(self._rows)
        if self._selected is not None:
            data["selected"] = self._selected
        return data

    def add(self, row: dict) -> None:
        """Take one finished run (a row from `run_evaluation`'s `on_result`) and redraw (throttled)."""
        row = dict(row)
        row.setdefault("has_record", self.store is not None and row.get("run_id") is not None)
        self._rows.append(row)
        self.push(self._build)

    def refresh(self) -> None:
        """Reload every run from the store (e.g. another process wrote to it)."""
        if self.store is not None:
            self._rows = self.store.runs_frame().to_dict("records")
        self.push(self._build, final=True)

    def open_run(self, run_id: int) -> ParticleView:
        """The stored run `run_id` in a `ParticleView` (also shown under the table).

        Raises:
            ValueError: without a store, or if the run kept no record.
        """
        if self.store is None:
            raise ValueError("this ResultsView has no store to read runs from")
        record = self.store.record(int(run_id))
        if record is None:
            raise ValueError(f"run {run_id} kept no SMC record")
        view = ParticleView.from_record(record)
        self._selected = {"run_id": int(run_id), "html": ParticleView.to_html(view.view_data())}
        self.push(self._build, final=True)
        return view

    def _on_select(self, change: dict) -> None:
        if change["new"] >= 0:
            try:
                self.open_run(change["new"])
            except (ValueError, KeyError) as exc:
                self._selected = {
                    "run_id": change["new"],
                    "html": f"<div class='genlm-error'>{esc(exc)}</div>",
                }
                self.push(self._build, final=True)

    @staticmethod
    def to_html(data: dict) -> str:
        return results_html(data)
