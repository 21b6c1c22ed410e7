"""A standalone offline HTML page of an SMC record: share a run without Jupyter.

(A whole results store's page is `genlm_lab.eval.store_report_html`.)
"""

from __future__ import annotations

import html
from os import PathLike
from pathlib import Path
from typing import Any

from genlm_lab.widgets.particle_data import final_status, particle_data
from genlm_lab.widgets.particle_html import particles_html
from genlm_lab.widgets.smc_data import as_record, step_entries


def record_report_html(record: Any) -> str:
    """The whole page: run header, particle table, ESS / log_ml lines, genealogy.

    Only inline CSS and SVG: no script, no network, readable in any browser.
    """
    rec = as_record(record)
    run_id, entries = step_entries(rec)
    data = particle_data(entries, run_id=run_id, done=True, status=final_status(rec))
    final = rec.final or {}
    meta = [
        ("run", run_id),
        ("algorithm", rec.algorithm),
        ("particles", rec.n_particles),
        ("steps", len(entries)),
        ("status", final.get("status", "unknown")),
        ("log_ml", final.get("log_ml")),
        *sorted((f"param {k}", v) for k, v in rec.params.items()),
    ]
    rows = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>" for k, v in meta
    )
    title = html.escape(f"SMC run {run_id}")
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{title}</title>"
        "<style>body{margin:24px;font-family:system-ui,sans-serif}"
        ".genlm-meta th{text-align:left;padding-right:16px;font-weight:600}"
        "@media (prefers-color-scheme: dark){body{background:#111;color:#ddd;"
        "--jp-ui-font-color1:#ddd;--jp-ui-font-color2:#aaa;--jp-border-color2:#333;"
        "--jp-layout-color0:#111}}</style></head><body>"
        f"<h1>{title}</h1><table class='genlm-meta'>{rows}</table>"
        f"{particles_html(data)}</body></html>"
    )


def write_report(record_or_path: Any, out_path: str | PathLike) -> Path:
    """Write `record_report_html` of a record (object, dict, JSON or file path) to `out_path`.

    Returns:
        The path written.

    Raises:
        ValueError: if the input is not an SMC record.
    """
    out = Path(out_path)
    out.write_text(record_report_html(record_or_path), encoding="utf-8")
    return out
