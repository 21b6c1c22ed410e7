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

__all__ = ["band_note", "beam_html", "progress_html"]

BAND_MEANING = (
    "certified band: the exact logZ lies between logZ (solid) and its upper bound "
    "(dashed), which adds the mass the beam pruned"
)


def _char(c: dict, pos: int) -> str:
    title = f" title='{esc(c['bytes'])}'" if c["bytes"] != c["text"] else ""
    if c["end"] <= pos:
        return f"<b{title}>{esc(c['text'])}</b>"
    if c["start"] < pos:
        n, read = c["end"] - c["start"], pos - c["start"]
        return (
            f"<b class='genlm-partial' title='{esc(c['bytes'])}: {read} of its {n} bytes read'>"
            f"{esc(c['text'])}</b>"
        )
    return f"<span{title}>{esc(c['text'])}</span>"


def progress_html(data: dict) -> str:
    """The text as UTF-8 characters, those read in bold, each one's bytes on hover."""
    pos, chars = data["position"], data.get("chars") or []
    done = "".join(_char(c, pos) for c in chars if c["start"] < pos)
    rest = "".join(_char(c, pos) for c in chars if c["start"] >= pos)
    return (
        f"<div class='genlm-text genlm-progress'>{done}<span class='genlm-note'>{rest}</span></div>"
    )


def band_note(data: dict) -> str:
    """What the certified band means and how wide it is at the position shown."""
    low, high = data["logZ"], data["logZ_upper"]
    if not low:
        return ""
    width = high[-1] - low[-1] if low[-1] > float("-inf") else float("inf")
    return f"{BAND_MEANING}; width {fmt(width)} nats at position {len(low) - 1}"


def beam_html(data: dict) -> str:
    """Static HTML of `beam_data`: text so far, candidate table, next-byte bars, logZ line."""
    pos, st = data["position"], data["step"]
    parts = [
        f"<div class='genlm-title genlm-status'>Byte beam: {pos} / {data['n_bytes']} bytes read</div>",
        progress_html(data),
    ]
    if data["error"]:
        parts.append(f"<div class='genlm-error'>{esc(data['error'])}</div>")
    alarms = data.get("alarms")
    parts.append(
        alarms_html(alarms, "position")
        if alarms
        else f"<div class='genlm-note genlm-no-alarms'>no alarms up to position {pos}</div>"
    )
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
        + f"<div class='genlm-note genlm-band'>{esc(band_note(data))}</div>"
    )
    return wrap("".join(parts), "beam")
