"""The particle view as static HTML: status line, ESS and log_ml charts, rows, genealogy SVG.

What nbval, GitHub, `SMCRecord._repr_html_` and the offline reports show;
`widgets/particles.js` draws the same data live. Read at a glance: the ESS
chart's axis runs from 0 to the number of particles (a fall from 2.73 to
2.41 of 3 is drawn as the small fall it is); a particle's text longer than
`TEXT_SHOWN` characters is cut in its row, the whole of it on hover and one
click away; the "rest" column is explained in a line under the table, not
only in a cell's tooltip. Each resampling lists its draws (`draws_html`); a
conditional SMC run marks its retained particle (`RETAINED_NOTE`) in its
row and as a ringed dot in the genealogy; a tempered factor's column names
its temperature (`factor_header`).
"""

from __future__ import annotations

import math
from typing import Any

from genlm_lab.smc.record import SMCRecord
from genlm_lab.widgets.particle_data import record_data
from genlm_lab.widgets.render import (
    alarms_html,
    badge,
    bar,
    esc,
    fmt,
    line_chart,
    table,
    tok_box,
    wrap,
)
from genlm_lab.widgets.smc_data import awrs_counts

__all__ = [
    "DRAWS_SHOWN",
    "REST_NOTE",
    "RETAINED_NOTE",
    "TEXT_SHOWN",
    "awrs_tip",
    "count_text",
    "draws_html",
    "ess_axis",
    "factor_header",
    "genealogy_svg",
    "particles_html",
    "record_html",
    "rest_line",
    "text_cell",
]

#: Characters of a particle's text shown in its row (the whole on hover and on click).
TEXT_SHOWN = 120

#: The "rest" column's tooltip: why log w is not the sum of the factor columns.
REST_NOTE = (
    "log w minus the factor columns and the critic: the proposal's correction (each draw's "
    "log Z minus the log-probability it was proposed with), the start weight, and resampling, "
    "which gives every particle the average weight"
)


#: A conditional run's log_ml, named for what it is not (the retained path is not drawn).
CONDITIONAL_ML = "conditional: not an estimate of log Z"
#: What the retained particle is, beside its mark (◆ in rows, a ring in the genealogy).
RETAINED_NOTE = (
    "conditional SMC: the retained particle follows a path fixed before the run (the last "
    "sweep's pick in particle Gibbs) and survives every resampling; the others draw freely"
)

#: Particles named per resampling in the draws list (the rest are counted).
DRAWS_SHOWN = 12


def factor_header(name: str, temperatures: dict | None) -> str:
    """A factor column's label: "log w NAME", and its temperature if it is tempered."""
    t = (temperatures or {}).get(name)
    return f"log w {name}" if t is None else f"log w {name} (T {fmt(t, 2)})"


def _temperature_tip(t: float) -> str:
    beta = 0.0 if math.isinf(t) else 1.0 / t
    return (
        f"tempered at temperature {fmt(t, 3)}: each log-weight is multiplied by "
        f"beta = 1/T = {fmt(beta, 3)}"
    )


def draws_html(data: dict) -> str:
    """Each resampling's draws: its scheme, the copies each particle got, those it dropped."""
    draws = data.get("resamplings") or []
    if not draws:
        return ""
    rows = []
    for d in draws:
        kept = [(i, c) for i, c in enumerate(d["offspring"]) if c > 0]
        dropped = [i for i, c in enumerate(d["offspring"]) if c == 0]
        copies = ", ".join(f"#{i}×{c}" for i, c in kept[:DRAWS_SHOWN])
        if len(kept) > DRAWS_SHOWN:
            copies += f", … ({len(kept) - DRAWS_SHOWN} more)"
        gone = ", ".join(f"#{i}" for i in dropped[:DRAWS_SHOWN])
        if len(dropped) > DRAWS_SHOWN:
            gone += f", … ({len(dropped) - DRAWS_SHOWN} more)"
        parents = " ".join(str(a) for a in d["ancestors"][: 2 * DRAWS_SHOWN])
        if len(d["ancestors"]) > 2 * DRAWS_SHOWN:
            parents += " …"
        rows.append(
            f"<tr data-step='{d['step']}'><td class='genlm-num'>{d['step']}</td>"
            f"<td>{esc(d.get('method') or '')}</td><td>{esc(copies)}</td>"
            f"<td>{esc(gone or 'none')}</td><td class='genlm-num'>{esc(parents)}</td></tr>"
        )
    opened = " open" if len(draws) <= 6 else ""
    return (
        f"<details class='genlm-draws'{opened}><summary class='genlm-note'>resampling draws "
        f"({len(draws)} resampling{'s' if len(draws) != 1 else ''}: the copies each particle "
        "got, those dropped, the parent of each new particle)</summary>"
        + table(["step", "scheme", "copies", "dropped", "parents of the new particles"], rows)
        + "</details>"
    )


def genealogy_svg(data: dict) -> str:
    """Static SVG of the genealogy: a column per step, a dot per particle, lines to parents.

    Dot area follows the normalised weight; every dot carries a tooltip
    (`<title>`) with its weight, log weight, increment and text.
    """
    steps = data.get("genealogy") or []
    if not steps:
        return ""
    n = max(len(st) for st in steps)
    dx, dy, left, top = 34, (10 if n > 32 else 16), 30, 18
    width, height = left + dx * (len(steps) - 1) + 24, top + dy * (n - 1) + 26
    out = [
        f"<svg width='{width}' height='{height}' viewBox='0 0 {width} {height}' "
        "class='genlm-genealogy' role='img' aria-label='genealogy: steps by particles' "
        "xmlns='http://www.w3.org/2000/svg'>",
        "<text x='0' y='10' font-size='10'>step → particles ↓</text>",
    ]
    labels = data.get("steps") or list(range(len(steps)))
    every = max(1, -(-len(steps) // 12))
    for t in range(0, len(steps), every):
        out.append(
            f"<text x='{left + t * dx}' y='{height - 2}' font-size='9' text-anchor='middle' "
            f"class='genlm-steplabel'>{labels[t]}</text>"
        )
    for t, st in enumerate(steps):
        for i, node in enumerate(st):
            if t > 0 and node["parent"] is not None:
                out.append(
                    f"<line x1='{left + (t - 1) * dx}' y1='{top + node['parent'] * dy}' "
                    f"x2='{left + t * dx}' y2='{top + i * dy}' class='genlm-edge' "
                    f"data-step='{t}' data-index='{i}'/>"
                )
    for t, st in enumerate(steps):
        for i, node in enumerate(st):
            w = node["weight"] if math.isfinite(node["weight"]) else 0.0
            tip = (
                f"step {labels[t]}, slot {i} ({node['state']})\nweight {fmt(node['weight'])} "
                f"(log {fmt(node['log_weight'], 2)})\nincrement {fmt(node['increment'])}\n"
                + ("retained particle\n" if node.get("retained") else "")
                + (
                    f"resampled: {node['children']} cop{'y' if node['children'] == 1 else 'ies'}\n"
                    if node.get("children") is not None
                    else ""
                )
                + (f"token {node['token']}\n" if node.get("token") is not None else "")
                + (f"killed by {node['killed_by']}\n" if node.get("killed_by") else "")
                + (f"{node['awrs']}\n" if node.get("awrs") else "")
                + f"{node['text']}"
            )
            r = 1.5 + 4 * math.sqrt(max(0.0, w))
            if node.get("retained"):  # a ring around the retained particle's dot
                out.append(
                    f"<circle cx='{left + t * dx}' cy='{top + i * dy}' r='{r + 2.5:.2f}' "
                    f"class='genlm-retained-ring' data-step='{t}' data-index='{i}'/>"
                )
            out.append(
                f"<circle cx='{left + t * dx}' cy='{top + i * dy}' "
                f"r='{r:.2f}' class='genlm-node "
                f"genlm-{esc(node['state'])}' data-step='{t}' data-index='{i}'>"
                f"<title>{esc(tip)}</title></circle>"
            )
    out.append("</svg>")
    return "".join(out)


def count_text(data: dict) -> str:
    """ "8 particles", or "12 candidates, 4 kept" after smc_steer's cut."""
    n, kept = len(data["particles"]), data.get("n_kept")
    return f"{n} candidates, {kept} kept" if kept is not None else f"{n} particles"


def text_cell(text: str, limit: int = TEXT_SHOWN) -> str:
    """A particle's text: whole when short; else its first `limit` characters, the whole in
    the tooltip and in a `<details>` a click opens (no script: the report works offline)."""
    if len(text) <= limit:
        return f"<td class='genlm-text'>{esc(text)}</td>"
    more = len(text) - limit
    return (
        f"<td class='genlm-text'><details class='genlm-more'><summary title='{esc(text)}'>"
        f"{esc(text[:limit])}… <span class='genlm-note'>(+{more:,} characters)</span>"
        f"</summary>{esc(text)}</details></td>"
    )


def ess_axis(data: dict) -> tuple[float, float]:
    """The ESS chart's axis: from 0 to the number of particles (or the largest ESS seen)."""
    top = max([float(data.get("n_particles") or 0), *(v for v in data["ess"] if _finite(v))])
    return 0.0, top or 1.0


def _finite(v: Any) -> bool:
    return isinstance(v, int | float) and math.isfinite(v)


def rest_line(data: dict) -> str:
    """The legend line of the "rest" column, under the table (where factor columns are shown)."""
    if not data.get("factor_names"):
        return ""
    return f"<div class='genlm-note genlm-rest-note'><b>rest</b>: {esc(REST_NOTE)}.</div>"


def particles_html(data: dict) -> str:
    """Static HTML of `particle_data`: status line, ESS/log_ml charts, one row per particle."""
    ps = data["particles"]
    ess, log_ml = data["ess"], data["log_ml"]
    head_ess = data.get("final_ess", ess[-1] if ess else None)
    head_ml = data.get("final_log_ml", log_ml[-1] if log_ml else None)
    retained = data.get("retained")
    head = (
        f"{'conditional SMC' if retained is not None else 'SMC'} {data['status']}: "
        f"step {data['step']}, "
        f"{count_text(data)}, ESS {fmt(head_ess, 2)}, "
        f"log_ml {fmt(head_ml)}" + (f" ({CONDITIONAL_ML})" if retained is not None else "")
    )
    resampled = data["resampled"]
    scheme = f" ({data['resampling_method']})" if data.get("resampling_method") else ""
    note = (
        f"resampled{scheme} at step {', '.join(str(t) for t in resampled)}"
        if resampled
        else "no resampling yet"
    )
    retained_line = (
        f"<div class='genlm-note genlm-retained-note'>◆ slot {retained}: {esc(RETAINED_NOTE)}."
        "</div>"
        if retained is not None
        else ""
    )
    temps = data.get("factor_temperatures") or {}
    names = data.get("factor_names") or []
    rows = [
        f"<tr class='genlm-{esc(p['state'])}' data-index='{p['index']}'>"
        f"<td class='genlm-num'>{p['index']}</td>"
        f"<td>{_retained_html(p)}{badge(p['state']) if p['state'] != 'active' else ''}"
        f"{_killed_html(p)}</td>"
        f"<td>{bar(p['weight'])}<span class='genlm-num genlm-weight'>{esc(fmt(p['weight']))}"
        f"</span></td><td class='genlm-num'>{esc(fmt(p['log_weight'], 2))}</td>"
        + _factor_cells(p, names, data.get("awrs_column", False), temps)
        + text_cell(p["text"])
        + "</tr>"
        for p in ps
    ]
    charts = (
        "<div class='genlm-cols'>"
        + line_chart([("ESS", ess, "genlm-line")], title="ESS over steps", y_range=ess_axis(data))
        + line_chart(
            [("log_ml", log_ml, "genlm-line2")],
            title=f"log_ml over steps ({CONDITIONAL_ML})"
            if data.get("retained") is not None
            else "log_ml estimate over steps",
        )
        + "</div>"
    )
    tree = genealogy_svg(data)
    if tree:
        tree = "<div class='genlm-title'>Genealogy (hover a dot for its weights)</div>" + tree
    body = (
        f"<div class='genlm-title genlm-status'>{esc(head)}</div>{charts}"
        f"<div class='genlm-note genlm-resampled'>{esc(note)}</div>"
        + draws_html(data)
        + retained_line
        + alarms_html(data.get("alarms"))
        + (
            f"<div class='genlm-note genlm-held'>{esc(data['held_note'])}</div>"
            if data.get("held_note")
            else ""
        )
        + _deaths_html(data)
        + table(
            [
                "#",
                "state",
                "weight",
                "log w",
                *_factor_headers(names, data.get("awrs_column", False), temps),
                "text",
            ],
            rows,
        )
        + rest_line(data)
        + tree
    )
    return wrap(body, "particles")


def record_html(record: SMCRecord) -> str:
    """The static particle view of a record: what `SMCRecord._repr_html_` shows."""
    return particles_html(record_data(record))


def _killed_html(p: dict) -> str:
    k = p.get("killed")
    if not k:
        return ""
    why = f": {esc(k['why'])}" if k.get("why") else ""
    return f"<span class='genlm-killed'> step {k['step']}, by {esc(k['by'])}{why}</span>"


def _retained_html(p: dict) -> str:
    if not p.get("retained"):
        return ""
    return (
        f"<span class='genlm-badge genlm-retained' title='{esc(RETAINED_NOTE)}'>◆ retained</span>"
    )


def _factor_headers(names: list[str], awrs: bool, temperatures: dict | None = None) -> list[str]:
    if not names:
        return []
    return [
        *(factor_header(n, temperatures) for n in names),
        "critic",
        "rest",
        "last token",
        *(["AWRS"] if awrs else []),
    ]


def _factor_cells(p: dict, names: list[str], awrs: bool, temperatures: dict | None = None) -> str:
    """Cells of a control.SMC row: summed log-weight per factor, critic, last draw, AWRS."""
    if not names:
        return ""
    last = p.get("last") or {}
    step = last.get("factors") or {}
    cells = []
    for n in names:
        title = f"this step: {fmt(step.get(n), 3)}" if n in step else "no step"
        if (temperatures or {}).get(n) is not None:
            title += f"; {_temperature_tip(temperatures[n])}"
        cells.append(
            f"<td class='genlm-num genlm-factor' data-factor='{esc(n)}' title='{esc(title)}'>"
            f"{esc(fmt(p.get('factors', {}).get(n), 2))}</td>"
        )
    cells.append(f"<td class='genlm-num'>{esc(fmt(p.get('critic'), 2))}</td>")
    cells.append(
        f"<td class='genlm-num genlm-rest' title='{esc(REST_NOTE)}'>{esc(fmt(p.get('rest'), 2))}</td>"
    )
    tok = last.get("token")
    cells.append(f"<td>{tok_box(tok) if tok is not None else ''}</td>")
    aw = last.get("awrs")
    if awrs and aw:
        cells.append(
            f"<td class='genlm-awrs-cell genlm-num' title='{esc(awrs_tip(aw))}'>"
            f"{esc(awrs_counts(aw['n_checks'], aw['n_rejected']))}</td>"
        )
    elif awrs:
        cells.append("<td></td>")
    return "".join(cells)


def awrs_tip(aw: dict) -> str:
    """An AWRS cell's tooltip: what its counts count, the estimator's draws, the rejected tokens."""
    shown = ", ".join(aw.get("rejected") or [])
    more = aw["n_rejected"] - len(aw.get("rejected") or [])
    return (
        f"this step AWRS checked {aw['n_checks']:,} tokens against the constraint and rejected "
        f"{aw['n_rejected']:,}; its weight estimate counts {aw['n_draws']:,} i.i.d. draws "
        "(repeats of rejected tokens are counted in one geometric jump, not drawn)"
        + (f"\nrejected: {shown}" if shown else "")
        + (f" and {more:,} more" if more > 0 else "")
    )


def _deaths_html(data: dict) -> str:
    deaths = data.get("deaths")
    if not data.get("factor_names"):
        return ""
    if not deaths:
        return "<div class='genlm-note genlm-deaths'>no particle killed</div>"
    parts = [
        f"{esc(k)}: {len(v)} (step {', '.join(str(t) for t in v[:8])}{', ...' if len(v) > 8 else ''})"
        for k, v in deaths.items()
    ]
    return f"<div class='genlm-note genlm-deaths'>killed by {'; '.join(parts)}</div>"
