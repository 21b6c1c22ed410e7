"""Static HTML/SVG renderers: pure functions from view data to markup.

These are what nbviewer, GitHub, nbval and HTML export see, and what
`genlm-lab report` writes. The browser modules in `widgets/` draw the same
data dicts live. Every piece of text from the data passes through
`html.escape` (bytes through `genlm_lab.util.html_bytes` first), so token text
such as ``<script>`` shows as text and is never injected.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

from genlm_lab.util import escape_bytes
from genlm_lab.widgets.base import asset

__all__ = [
    "CATEGORY_COLOURS",
    "alarms_html",
    "badge",
    "bar",
    "esc",
    "fmt",
    "line_chart",
    "table",
    "tok_box",
    "token_text",
    "wrap",
]

#: Colours for categories (methods, profile components): colour-blind-safe Tableau 10.
CATEGORY_COLOURS = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)


def esc(text: Any) -> str:
    """HTML-escaped text of any value (quotes included, safe in attributes)."""
    return html.escape(str(text), quote=True)


def fmt(x: float | int | None, digits: int = 3) -> str:
    """A short readable number: -inf as −∞, tiny or huge values in e-notation."""
    if x is None:
        return ""
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return str(x)
    x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "−∞" if x < 0 else "∞"
    if x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e5):
        return f"{x:.2e}"
    return f"{x:.{digits}f}"


def token_text(token: Any) -> str:
    """A readable label of a token: bytes escaped (␣ for a space), EOS as "EOS"."""
    if token is None:
        return ""
    if isinstance(token, (bytes, bytearray)):
        return escape_bytes(bytes(token), visible_space=True)
    if isinstance(token, int) and not isinstance(token, bool) and 0 <= token < 256:
        return escape_bytes(bytes([token]), visible_space=True)  # a byte-level potential
    if type(token).__name__ == "EndOfSequence":
        return "EOS"
    return str(token)


def bar(fraction: float, width: int = 120) -> str:
    """A horizontal bar whose length is `fraction` of `width` px (clamped to [0, 1])."""
    f = 0.0 if fraction is None or not math.isfinite(fraction) else min(1.0, max(0.0, fraction))
    return (
        f"<span class='genlm-barbox' style='width:{width}px'>"
        f"<span class='genlm-bar' style='width:{100 * f:.1f}%'></span></span>"
    )


def tok_box(text: str, partial: bool = False) -> str:
    """One token as a bordered box (dashed and italic for a partial token)."""
    cls = "genlm-tok genlm-partial" if partial else "genlm-tok"
    title = "partial token" if partial else "token"
    return f"<span class='{cls}' title='{title}'>{esc(text)}</span>"


def badge(text: str) -> str:
    """A small outlined label (states are words, not only colours)."""
    return f"<span class='genlm-badge'>{esc(text)}</span>"


def table(headers: Sequence[str], rows: Sequence[str]) -> str:
    """A table from escaped header labels and pre-rendered `<tr>` rows."""
    head = "".join(f"<th>{esc(x)}</th>" for x in headers)
    return (
        f"<table class='genlm-table'><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def line_chart(
    series: Sequence[tuple[str, Sequence[float], str]],
    *,
    width: int = 320,
    height: int = 110,
    title: str = "",
    y_range: tuple[float, float] | None = None,
) -> str:
    """An SVG line chart of aligned series `(name, values, css_class)`; non-finite points skipped.

    `y_range` widens the axis to at least (low, high): (0, n) draws a quantity
    bounded by n (an ESS) on its whole scale instead of zooming into its spread.
    """
    pad = 28
    parts = [
        f"<svg width='{width}' height='{height}' viewBox='0 0 {width} {height}' role='img' "
        f"aria-label='{esc(title)}' class='genlm-chart' xmlns='http://www.w3.org/2000/svg'>",
        f"<text x='{pad}' y='11' font-size='11'>{esc(title)}</text>",
        f"<path class='genlm-axis' d='M{pad},14 V{height - pad / 2} H{width - 4}'/>",
    ]
    finite = [float(v) for _, vals, _ in series for v in vals if _finite(v)]
    if finite:
        lo, hi = min(finite), max(finite)
        if y_range is not None:
            lo, hi = min(lo, y_range[0]), max(hi, y_range[1])
        if hi - lo < 1e-12:
            lo, hi = lo - 1, hi + 1
        n = max(len(vals) for _, vals, _ in series)

        def px(i: int) -> float:
            return pad + (0 if n <= 1 else i * (width - pad - 8) / (n - 1))

        def py(v: float) -> float:
            return 16 + (hi - v) * (height - pad / 2 - 18) / (hi - lo)

        parts.append(f"<text x='2' y='22' font-size='9'>{esc(fmt(hi, 2))}</text>")
        parts.append(f"<text x='2' y='{height - pad / 2}' font-size='9'>{esc(fmt(lo, 2))}</text>")
        for name, vals, cls in series:
            pts = [(px(i), float(v)) for i, v in enumerate(vals) if _finite(v)]
            if not pts:
                continue
            d = " ".join(f"{'L' if i else 'M'}{x:.1f},{py(v):.1f}" for i, (x, v) in enumerate(pts))
            parts.append(f"<path class='{cls}' d='{d}'><title>{esc(name)}</title></path>")
    parts.append("</svg>")
    return "".join(parts)


def alarms_html(alarms: list[dict] | None, where: str = "step") -> str:
    """One line per alarm ("step 3, low_ess: ..."), or nothing when there are none.

    Args:
        alarms: dicts with "step", "kind" and "text" (SMC and beam records alike).
        where: what an alarm's "step" counts: "step" (SMC) or "position" (a beam's bytes).
    """
    if not alarms:
        return ""
    items = "".join(
        f"<li data-kind='{esc(a['kind'])}'><b>{esc(where)} {a['step']}, {esc(a['kind'])}</b>: "
        f"{esc(a['text'])}</li>"
        for a in alarms
    )
    return f"<div class='genlm-note genlm-alarms' role='alert'>⚠ alarms<ul>{items}</ul></div>"


def wrap(body: str, kind: str) -> str:
    """A self-contained fragment: the shared CSS plus the view's markup."""
    return (
        f"<div class='genlm-view genlm-{esc(kind)}'><style>{asset('genlm.css')}</style>{body}</div>"
    )


def _finite(v: Any) -> bool:
    return v is not None and not isinstance(v, str) and math.isfinite(float(v))
