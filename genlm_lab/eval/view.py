"""`ResultsView`: models x methods x domains with weighted accuracy and CIs, accuracy vs runtime, runs.

One data dict (`results_data`, in `genlm_lab.eval.results_html`) drawn two
ways, as every view here: static HTML (`results_html`, what nbval and GitHub
show; `store_report_html` in `genlm_lab.eval.report` makes it a standalone
offline page with every stored run's particles) and live in the browser
(`widgets/results.js`). The live view takes rows as runs finish
(`view.add`, passed to `run_evaluation(on_result=...)`), opens a run's
stored `SMCRecord` in the particle view when its row is clicked (the click
sets `selected_run`; the kernel reads the record from the store and pushes
the particle table, killed-by and factor columns included), and compares two
summary rows when two are picked (`compare_rows`; `genlm_lab.eval.compare`).
The view reads the store and the runner's rows; nothing in inference knows
it exists.
"""

from __future__ import annotations

import time
from typing import Any

import traitlets

from genlm_lab.eval.chart import scatter_svg
from genlm_lab.eval.labels import instance_label
from genlm_lab.eval.paired import compare
from genlm_lab.eval.report import store_report_html
from genlm_lab.eval.results_html import comparison_html, results_data, results_html, run_title
from genlm_lab.eval.store import ResultsStore
from genlm_lab.widgets.base import LiveView, asset, esm
from genlm_lab.widgets.particle_view import ParticleView
from genlm_lab.widgets.render import esc

__all__ = [
    "ResultsView",
    "comparison_html",
    "results_data",
    "results_html",
    "scatter_svg",
    "store_report_html",
]


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
        self._rows: dict[Any, dict] = {}
        self._selected: dict | None = None
        self._comparison: dict | None = None
        self._n_compared = 0
        self._load()
        self._send_now(self._build())
        self.observe(self._on_select, names="selected_run")
        self.observe(self._on_compare, names="compare_rows")

    def _load(self) -> None:
        if self.store is not None:
            self._rows = {r["run_id"]: r for r in self.store.runs_frame().to_dict("records")}

    def _build(self) -> dict:
        data = results_data(list(self._rows.values()))
        if self._selected is not None:
            data["selected"] = self._selected
        if self._comparison is not None:
            data["comparison"] = self._comparison
        return data

    def add(self, row: dict) -> None:
        """Take one finished run (a row from `run_evaluation`'s `on_result`) and redraw (throttled).

        A run in the store is shown as the store has it (its finish time, status and
        scores), so the view, `summarize` and the report compute from the same rows; a
        run shown already (a stored run reused) replaces its row instead of counting twice.
        """
        row = dict(row)
        run_id = row.get("run_id")
        if self.store is not None and run_id is not None:
            row.update(self._stored(run_id))
        row.setdefault("finished_at", time.time())  # it just finished: its wall time counts
        row.setdefault("has_record", False)
        self._rows[run_id if run_id is not None else ("unstored", len(self._rows))] = row
        self.push(self._build)

    def _stored(self, run_id: int) -> dict:
        """What the store holds of a run: the values `summarize(store)` reads."""
        run = self.store.run(int(run_id))
        kept = ("finished_at", "runtime_seconds", "status", "error", "weighted_accuracy")
        return {
            **{k: run[k] for k in kept},
            "lm_requests": run["lm_requests"],
            "has_record": run["record"] is not None,
            "instance": instance_label(run.get("instance")),
        }

    def refresh(self) -> None:
        """Reload every run from the store (e.g. another process wrote to it)."""
        self._load()
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

        result = compare(pd.DataFrame(list(self._rows.values())), a, b, **common)
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
