"""`ParticleView`: particles of an SMC run, live while it runs and from a saved record.

Read at a glance: the ESS chart's axis runs from 0 to the number of
particles (a fall from 2.73 to 2.41 of 3 is drawn as the small fall it is);
a particle's text longer than `TEXT_SHOWN` characters is cut in its row, the
whole of it on hover and one click away; the "rest" column is explained in a
line under the table, not only in a cell's tooltip.
"""

from __future__ import annotations

import math
from typing import Any

from genlm_lab.smc.record import SMCRecord
from genlm_lab.util import normalize_log_weights
from genlm_lab.widgets._factor_data import FactorTally, tally_of
from genlm_lab.widgets.base import LiveView, esm
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
from genlm_lab.widgets.smc_data import (
    as_record,
    awrs_counts,
    genealogy,
    normalize_entry,
    run_summary,
    step_entries,
    summary_point,
)


def particle_data(
    entries: list[dict],
    *,
    run_id: Any = None,
    done: bool = False,
    summary: dict | None = None,
    status: str | None = None,
    factors: dict | None = None,
    reasons: dict | None = None,
    alarms: list | None = None,
    final: dict | None = None,
) -> dict:
    """View data of SMC history entries (the last one gives the rows).

    Args:
        entries: step entries as `smc_data.step_entries` normalises them.
        run_id: the run these entries belong to.
        done: whether the run has ended (then the genealogy is included).
        summary: `run_summary` of the entries if already known (live views
            keep it as they go and pass only the last entry).
        status: how the run ended (the record's final status, e.g.
            "interrupted"); default "finished" when done, else "running".
        factors: `FactorTally.view()` of a `control.SMC` run: each particle's
            log-weight split by factor, where it was killed and by what.
        reasons: `{(step, index): reason}` of the deaths (`death_reasons`).
        alarms: the run's alarms, `(step, kind, sentence)`.
        final: the record's final summary; with `done`, when the last step
            resampled, the rows are the particles the result holds (copies of
            the step's survivors, each with the average weight) and the
            header gives the result's ESS and log_ml.

    Returns:
        The summary plus the rows (`particles`), the `genealogy` and `n_kept`:
        how many candidates smc_steer's cut kept at the last step (the run's
        particles; the rest are "pruned"), None where no cut dropped any.
        With `factors`: "factor_names", "deaths" ({factor: [steps]}) and per
        row "factors" ({name: summed log-weight}), "critic", "killed"
        ({step, by} or None) and "last" (the newest step's token, factor
        weights and AWRS summary).
    """
    last = entries[-1] if entries else None
    particles = []
    if last is not None:
        weights = normalize_log_weights(p["log_weight"] for p in last["particles"])
        for i, (p, w) in enumerate(zip(last["particles"], weights, strict=True)):
            particles.append(
                {
                    "index": i,
                    "text": p["text"],
                    "weight": float(w),
                    "log_weight": p["log_weight"],
                    "state": p["state"],
                }
            )
    frows = factors["rows"] if factors else []
    if len(frows) == len(particles):
        for row, f in zip(particles, frows, strict=True):
            row.update(f)
            row["rest"] = _rest(row)
    for row in particles:
        killed = row.get("killed")
        if killed and reasons:
            why = reasons.get((killed["step"], row["index"]))
            if why:
                row["killed"] = {**killed, "why": why}
    held = done and last is not None and _resampled_at_the_end(last)
    if held:
        particles = _held(particles, last["ancestors"])
    cut = last is not None and last["ancestors"] is not None
    cut = cut and len(last["ancestors"]) < len(last["particles"])
    data = dict(summary) if summary is not None else run_summary(entries)
    data.update(
        kind="particles",
        run_id=run_id,
        done=done,
        status=status or ("finished" if done else "running"),
        step=last["step"] if last else 0,
        particles=particles,
        n_kept=len(last["ancestors"]) if cut else None,
        genealogy=genealogy(entries) if done else None,
        factor_names=factors["names"] if factors else None,
        awrs_column=any((p.get("last") or {}).get("awrs") for p in particles),
        deaths=factors["deaths"] if factors else None,
        alarms=[{"step": int(a[0]), "kind": str(a[1]), "text": str(a[2])} for a in alarms or []],
        held_note=(
            f"the result's particles: step {last['step']}'s survivors after its resampling, "
            "each with the average weight"
            if held
            else None
        ),
    )
    if held and final:
        data["final_ess"] = final.get("ess")
        data["final_log_ml"] = final.get("log_ml")
    return data


def _resampled_at_the_end(last: dict) -> bool:
    """Whether the last step resampled with replacement (not smc_steer's cut)."""
    ancestors = last.get("ancestors")
    return ancestors is not None and len(ancestors) == len(last["particles"])


def _held(rows: list[dict], ancestors: list[int]) -> list[dict]:
    """The rows of the particles after resampling: row `ancestors[i]` for each i, average weight."""
    logs = [r["log_weight"] for r in rows]
    top = max(logs) if logs else -math.inf
    if top == -math.inf:
        average = -math.inf
    else:
        average = top + math.log(sum(math.exp(x - top) for x in logs) / len(logs))
    out = []
    for i, a in enumerate(ancestors):
        row = {**rows[a], "index": i, "weight": 1.0 / len(ancestors), "log_weight": average}
        row["copy_of"] = a
        if "rest" in row:
            row["rest"] = _rest(row)
        out.append(row)
    return out


def _rest(row: dict) -> float | None:
    """What the factor columns leave out of a particle's log-weight (see `REST_NOTE`)."""
    factors = row.get("factors")
    if not factors or not math.isfinite(row["log_weight"]):
        return None
    total = sum(v for v in factors.values() if v is not None)
    critic = row.get("critic") or 0.0
    if not math.isfinite(total) or not math.isfinite(critic):
        return None
    return row["log_weight"] - total - critic


#: Characters of a particle's text shown in its row (the whole on hover and on click).
TEXT_SHOWN = 120

#: The "rest" column's tooltip: why log w is not the sum of the factor columns.
REST_NOTE = (
    "log w minus the factor columns and the critic: the proposal's correction (each draw's "
    "log Z minus the log-probability it was proposed with), the start weight, and resampling, "
    "which gives every particle the average weight"
)


def death_reasons(steps: list[dict]) -> dict[tuple[int, int], str]:
    """`{(step, particle): reason}` from raw step entries' extras ("killed_why")."""
    out = {}
    for entry in steps:
        for i, extra in enumerate(entry.get("extras") or []):
            if isinstance(extra, dict) and extra.get("killed_why"):
                out[(int(entry["step"]), i)] = str(extra["killed_why"])
    return out


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
                f"step {t}, particle {i} ({node['state']})\nweight {fmt(node['weight'])} "
                f"(log {fmt(node['log_weight'], 2)})\nincrement {fmt(node['increment'])}\n"
                + (f"token {node['token']}\n" if node.get("token") is not None else "")
                + (f"killed by {node['killed_by']}\n" if node.get("killed_by") else "")
                + (f"{node['awrs']}\n" if node.get("awrs") else "")
                + f"{node['text']}"
            )
            out.append(
                f"<circle cx='{left + t * dx}' cy='{top + i * dy}' "
                f"r='{1.5 + 4 * math.sqrt(max(0.0, w)):.2f}' class='genlm-node "
                f"genlm-{esc(node['state'])}' data-step='{t}' data-index='{i}'>"
                f"<title>{esc(tip)}</title></circle>"
            )
    out.append("</svg>")
    return "".join(out)


def count_text(data: dict) -> str:
    """ "8 particles", or "12 candidates, 4 kept" after smc_steer's cut."""
    n, kept = len(data["particles"]), data.get("n_kept")
    return f"{n} candidates, {kept} kept" if kept is not None else f"{n} particles"


def final_status(record: SMCRecord) -> str:
    """How a recorded run ended ("finished", "interrupted", ...).

    "unfinished" for a record without a final entry: a JSON-lines file read
    while its run goes on, or one whose process was killed.
    """
    if record.final is None:
        return "unfinished"
    return str(record.final.get("status") or "finished")


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
    head = (
        f"SMC {data['status']}: step {data['step']}, "
        f"{count_text(data)}, ESS {fmt(head_ess, 2)}, "
        f"log_ml {fmt(head_ml)}"
    )
    resampled = data["resampled"]
    note = (
        f"resampled at step {', '.join(str(t) for t in resampled)}"
        if resampled
        else "no resampling yet"
    )
    names = data.get("factor_names") or []
    rows = [
        f"<tr class='genlm-{esc(p['state'])}' data-index='{p['index']}'>"
        f"<td class='genlm-num'>{p['index']}</td>"
        f"<td>{badge(p['state']) if p['state'] != 'active' else ''}{_killed_html(p)}</td>"
        f"<td>{bar(p['weight'])}<span class='genlm-num genlm-weight'>{esc(fmt(p['weight']))}"
        f"</span></td><td class='genlm-num'>{esc(fmt(p['log_weight'], 2))}</td>"
        + _factor_cells(p, names, data.get("awrs_column", False))
        + text_cell(p["text"])
        + "</tr>"
        for p in ps
    ]
    charts = (
        "<div class='genlm-cols'>"
        + line_chart([("ESS", ess, "genlm-line")], title="ESS over steps", y_range=ess_axis(data))
        + line_chart([("log_ml", log_ml, "genlm-line2")], title="log_ml estimate over steps")
        + "</div>"
    )
    tree = genealogy_svg(data)
    if tree:
        tree = "<div class='genlm-title'>Genealogy (hover a dot for its weights)</div>" + tree
    body = (
        f"<div class='genlm-title genlm-status'>{esc(head)}</div>{charts}"
        f"<div class='genlm-note genlm-resampled'>{esc(note)}</div>"
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
                *_factor_headers(names, data.get("awrs_column", False)),
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


def record_data(record: Any) -> dict:
    """`particle_data` of a whole record: factors, death reasons, alarms, the held particles."""
    rec = as_record(record)
    run_id, entries = step_entries(rec)
    return particle_data(
        entries,
        run_id=run_id,
        done=True,
        status=final_status(rec),
        factors=tally_of(rec.steps, rec.parents()).view(),
        reasons=death_reasons(rec.steps),
        alarms=rec.alarms,
        final=rec.final,
    )


def _killed_html(p: dict) -> str:
    k = p.get("killed")
    if not k:
        return ""
    why = f": {esc(k['why'])}" if k.get("why") else ""
    return f"<span class='genlm-killed'> step {k['step']}, by {esc(k['by'])}{why}</span>"


def _factor_headers(names: list[str], awrs: bool) -> list[str]:
    if not names:
        return []
    return [
        *(f"log w {n}" for n in names),
        "critic",
        "rest",
        "last token",
        *(["AWRS"] if awrs else []),
    ]


def _factor_cells(p: dict, names: list[str], awrs: bool) -> str:
    """Cells of a control.SMC row: summed log-weight per factor, critic, last draw, AWRS."""
    if not names:
        return ""
    last = p.get("last") or {}
    step = last.get("factors") or {}
    cells = []
    for n in names:
        title = f"this step: {fmt(step.get(n), 3)}" if n in step else "no step"
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


class ParticleView(LiveView):
    """Live view of an SMC run: pass it as an observer, or build it from a record.

    Live: `await smc_standard(model, n, observers=[view])`; one row per
    particle (text, normalised weight as bar and number, finished/dead), ESS
    and log_ml over steps, resampling events, the run's alarms; at the end,
    the genealogy. For a `control.SMC` run each row also splits its
    log-weight by factor, with a "rest" column for what the factors leave out
    (the proposal's correction, the start weight, resampling), and a killed
    particle says by what and why (e.g. "cut at max_tokens inside a string at
    $.name"). A finished run that ended on a resampling shows the particles
    the result holds.
    Updates are throttled (at most one push per `throttle_s` seconds), the
    final state is always sent. A view may follow several runs in turn (each
    new run starts afresh), but not two at once.
    """

    _esm = esm("particles.js")

    def __init__(self) -> None:
        super().__init__()
        self._raw: list[dict] = []
        self._tally = FactorTally()
        self._reasons: dict[tuple[int, int], str] = {}
        self._alarms: list = []
        self._points: list[tuple] = []
        self._entries: list[dict] = []
        self._run_id: str | None = None
        self._done = False
        self._send_now(particle_data([]))

    @classmethod
    def from_record(cls, record: Any) -> ParticleView:
        """A finished view of a saved `SMCRecord` (object, dict, JSON or path)."""
        view = cls()
        rec = as_record(record)
        data = record_data(rec)
        view._run_id, view._entries, view._done = data["run_id"], step_entries(rec)[1], True
        view._send_now(data)
        return view

    @property
    def run_id(self) -> str | None:
        """The run this view shows (None before the first step)."""
        return self._run_id

    # -- observer protocol --------------------------------------------------------
    def on_step(self, entry: dict) -> None:
        """Keep one step entry (cheap); the view data is built only when pushed.

        Raises:
            ValueError: if the entry is malformed, or belongs to another run while one
                is going on; the view is then left as it was.
        """
        point = summary_point(entry)  # checked before the view changes: a bad entry leaves it
        run_id = entry.get("run_id")
        if self._done or self._run_id is None:
            self._raw, self._points, self._entries, self._done = [], [], [], False
            self._tally = FactorTally()
            self._reasons, self._alarms = {}, []
            self._run_id = run_id
        elif run_id != self._run_id:
            raise ValueError(
                f"step entry of run {run_id!r} reached a view following run {self._run_id!r}; "
                "use one ParticleView per concurrent run"
            )
        self._tally.add(entry)  # O(particles x factors): weights split by factor
        self._reasons.update(death_reasons([entry]))
        self._alarms.extend(entry.get("alarms") or [])
        self._raw.append(entry)
        self._points.append(point)
        self.push(self._build_live)

    def on_finish(self, record: Any) -> None:
        """Show the whole record (genealogy included) and push it at once.

        Raises:
            ValueError: if the record is of a different run than the steps seen.
        """
        rec = as_record(record)
        run_id, entries = step_entries(rec, run_id=self._run_id)
        self._run_id, self._entries, self._raw, self._done = run_id, entries, [], True
        self.push(lambda: record_data(rec), final=True)

    def _build_live(self) -> dict:
        # Only the newest entry's texts are read: the cost of a push does not grow with steps.
        last = normalize_entry(self._raw[-1], f"step entry {len(self._raw) - 1}")
        steps, ess, log_ml, resampled = zip(*self._points, strict=True)
        summary = {
            "n_particles": len(last["particles"]),
            "steps": list(steps),
            "ess": list(ess),
            "log_ml": list(log_ml),
            "resampled": [t for t, r in zip(steps, resampled, strict=True) if r],
        }
        return particle_data(
            [last],
            run_id=self._run_id,
            summary=summary,
            factors=self._tally.view(),
            reasons=self._reasons,
            alarms=self._alarms,
        )

    @staticmethod
    def to_html(data: dict) -> str:
        return particles_html(data)
