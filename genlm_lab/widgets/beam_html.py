"""The beam view as static HTML (`beam_html`): text so far, candidates, next-byte bars, logZ."""

from __future__ import annotations

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

__all__ = ["beam_html"]


def beam_html(data: dict) -> str:
    """Static HTML of `beam_data`: text so far, candidate table, next-byte bars, logZ line."""
    pos, st = data["position"], data["step"]
    done = "".join(f"<b>{esc(x)}</b>" for x in data["text"][:pos])
    rest = "".join(esc(x) for x in data["text"][pos:])
    parts = [
        f"<div class='genlm-title genlm-status'>Byte beam: {pos} / {data['n_bytes']} bytes read</div>",
        f"<div class='genlm-text genlm-progress'>{done}<span class='genlm-note'>{rest}</span></div>",
    ]
    if data["error"]:
        parts.append(f"<div class='genlm-error'>{esc(data['error'])}</div>")
    parts.append(alarms_html(data.get("alarms"), "position"))
    if st is None:
        return wrap("".join(parts), "beam")
    byte = "initial beam" if st["byte"] is None else f"after byte {st['byte']}"
    parts.append(
        f"<div class='genlm-note'>{esc(byte)}: logZ {esc(fmt(st['logZ']))}, "
        f"{st['lm_calls']} LM calls this step, {len(st['candidates'])} candidates"
        + (f", {st['skipped']} extensions skipped" if st["skipped"] else "")
        + "</div>"
    )
    rows = []
    for c in st["candidates"]:
        toks = "".join(tok_box(t) for t in c["tokens"]) + tok_box(c["partial"], partial=True)
        mark = badge(c["status"]) + (badge("EOS") if c["terminated"] else "")
        rows.append(
            f"<tr class='genlm-{esc(c['status'])}'><td>{toks}</td>"
            f"<td class='genlm-num'>{esc(fmt(c['log_weight']))}</td>"
            f"<td>{bar(c['share'])}<span class='genlm-num'>{esc(fmt(c['share']))}</span></td>"
            f"<td>{mark}</td></tr>"
        )
    parts.append(table(["tokens | partial", "log weight", "share of logZ", "status"], rows))
    for h in st["healing"]:
        parts.append(f"<div class='genlm-note genlm-heal'>healing: {esc(h['text'])}</div>")
    if st["next_bytes"]:
        nb = [
            f"<tr><td><code>{esc(b['label'])}</code></td><td>{bar(b['p'])}"
            f"<span class='genlm-num'>{esc(fmt(b['p']))}</span></td></tr>"
            for b in st["next_bytes"]
        ]
        parts.append(
            "<div class='genlm-title'>Next byte</div>" + table(["byte", "probability"], nb)
        )
    parts.append(
        "<div class='genlm-cols'>"
        + line_chart(
            [
                ("logZ", data["logZ"], "genlm-line"),
                ("logZ upper bound", data["logZ_upper"], "genlm-line2"),
            ],
            title="logZ and its certified upper bound (dashed)",
        )
        + line_chart([("LM calls", data["lm_calls"], "genlm-line2")], title="LM calls per step")
        + "</div>"
    )
    return wrap("".join(parts), "beam")
