"""The results as data and static HTML: the summary table, the chart, the per-run table.

`results_data` turns runs (dicts, a runs DataFrame or a `ResultsStore`) into
the one data dict that `ResultsView` sends to the browser
(`widgets/results.js`) and that `results_html` draws as static HTML (what
nbval and GitHub show). The accuracy-versus-cost chart is
`chart.scatter_svg` (one colour per method, one marker per model, as
`plot_accuracy_cost`); cost is wall time per run, and a run's own runtime is
shown as its latency.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from genlm_lab.eval.chart import scatter_svg
from genlm_lab.eval.identity import UNKNOWN_MODEL
from genlm_lab.eval.labels import instance_label
from genlm_lab.eval.scores import domain_title
from genlm_lab.eval.stats import INTERVAL_METHODS, PAIRED_METHODS
from genlm_lab.eval.store import ResultsStore
from genlm_lab.eval.summary import FINISHED, summarize
from genlm_lab.eval.wording import mde_text, plural
from genlm_lab.widgets.render import bar, esc, fmt, table, wrap

__all__ = [
    "CI_NOTE",
    "COST_NOTE",
    "MAX_ROWS",
    "RUN_HEADERS",
    "SUMMARY_HEADERS",
    "comparison_html",
    "results_data",
    "results_html",
    "run_title",
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
        "n_runs", "models", "methods", "domains", "scatter_svg", "cost_note", "ci_note"}.
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
            "ci_note": CI_NOTE,
        }
    for key in _RUN_KEYS:
        if key not in frame:
            frame[key] = None
    frame["model"] = frame["model"].fillna(UNKNOWN_MODEL)
    frame["instance"] = frame["instance"].fillna("")
    frame["has_record"] = frame["has_record"].fillna(False).astype(bool)
    summary = summarize(frame)
    rank = frame["status"].map(lambda s: 0 if s == "error" else (2 if s in FINISHED else 1))
    order = frame.assign(_rank=rank).sort_values(
        ["_rank", "weighted_accuracy", "run_id"], ascending=[True, True, True], na_position="first"
    )
    rows = [
        {k: _clean(v) for k, v in r.items() if k in _RUN_KEYS}
        for r in order.to_dict("records")[: max_rows or None]
    ]
    summary_rows = [
        {
            **{k: _clean(v) for k, v in r.items()},
            "ci_tip": ci_tip(r),
            "domain_label": domain_title(r["domain"]),
        }
        for r in summary.to_dict("records")
    ]
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
        "ci_note": CI_NOTE,
    }


def ci_tip(row: dict) -> str:
    """A summary row's interval as its tooltip states it: the method and the instances."""
    method = row.get("ci_method")
    if not method:
        return "no interval: no run of this row was scored"
    n = int(row.get("n_instances") or 0)
    return f"95% interval over {plural(n, 'instance')}: {INTERVAL_METHODS.get(method, method)}"


def _summary_rows(summary: Sequence[dict]) -> list[str]:
    out = []
    for i, r in enumerate(summary):
        acc = r.get("weighted_accuracy")
        ci = (
            ""
            if r.get("ci_low") is None
            else f"[{_accuracy(r['ci_low'])}, {_accuracy(r['ci_high'])}]"
        )
        out.append(
            f"<tr data-row='{i}'><td>{esc(r.get('model') or '')}</td><td>{esc(r['method'])}</td>"
            f"<td>{esc(r.get('domain_label') or r['domain'])}</td>"
            f"<td>{bar(acc or 0.0, 80)} <span class='genlm-num'>{_accuracy(acc)}</span></td>"
            f"<td class='genlm-num' title='{esc(r.get('ci_tip') or ci_tip(r))}'>{esc(ci)}</td>"
            f"<td class='genlm-num'>{r['n_instances']}</td>"
            f"<td class='genlm-num'>{r['n_errors']}</td>"
            f"<td class='genlm-num'>{r.get('n_unfinished', 0)}</td>"
            f"<td class='genlm-num' title='{esc(_wall_tip(r))}'>"
            f"{esc(fmt(r.get('wall_per_run'), 3))}</td>"
            f"<td class='genlm-num'>{esc(fmt(r.get('runtime_mean'), 3))}</td>"
            f"<td class='genlm-num'>{esc(fmt(r.get('lm_requests_mean'), 3))}</td></tr>"
        )
    return out


def _accuracy(x: float | None) -> str:
    """An accuracy with three decimals, as summary_markdown writes it (`fmt` would print an
    exact 1.0 as "1" beside float noise below 1 as "1.000"); "" where unknown."""
    return "" if x is None or x != x else f"{x:.3f}"


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
            f"<td class='genlm-num'>{_accuracy(r.get('weighted_accuracy'))}</td>"
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
#: How the summary's intervals are made (under the table, in every rendering).
CI_NOTE = (
    "95% CI: Wilson score interval over instances (replicates averaged first), right at any "
    "number of instances: two instances give a wide interval. 0/1 scores: k right of n. "
    "Fractional scores: the same formula at the mean, with p(1 - p) as the variance, the "
    "largest a score in [0, 1] can have (conservative). Hover an interval for its method."
)
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
                f"{c.ci:.0%} CI ({c.interval or 'n/a'})",
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
    method = (
        f"<div class='genlm-note genlm-ci-note'>Interval: {esc(PAIRED_METHODS[c.interval])}. "
        "Test: exact sign-flip permutation test (McNemar's for 0/1 scores). Minimum detectable "
        "effect: the smallest difference that test detects with the stated power on this many "
        "pairs when each differs by +1 or -1.</div>"
        if c.interval in PAIRED_METHODS
        else ""
    )
    return (
        "<div class='genlm-comparison'>"
        + table(["", ""], rows)
        + f"<div class='genlm-note'>{esc(c.summary())}</div>{method}{note}</div>"
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
        + f"<div class='genlm-note genlm-ci-note'>{esc(data.get('ci_note', CI_NOTE))}</div>"
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
