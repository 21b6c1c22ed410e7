"""The accuracy-versus-cost picture's one encoding, and its SVG drawing.

Every accuracy-versus-cost chart (the live view's and the report's SVG,
`plot_accuracy_cost`'s matplotlib figure) draws the same way: one panel per
domain, y the weighted accuracy with its 95% interval, x a cost column of
`summarize`, one colour per method and one marker per model (`Encoding`),
named in a legend rather than on the points. Cost is wall time per run by
default; a run's own runtime is its latency under concurrency and is named so
when it is chosen (see `genlm_lab.eval.summary`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from genlm_lab.eval.identity import UNKNOWN_MODEL
from genlm_lab.eval.scores import domain_title
from genlm_lab.eval.wording import plural
from genlm_lab.widgets.render import CATEGORY_COLOURS, esc, fmt

__all__ = ["COLOURS", "COSTS", "DEFAULT_COST", "MARKERS", "Encoding", "scatter_svg"]

#: Cost columns of `summarize` a chart can put on x, with their axis labels.
COSTS = {
    "wall_per_run": "wall time per run (s)",
    "lm_requests_mean": "LM requests per run",
    "runtime_mean": "latency per run (s)",  # concurrent runs overlap: not a cost
}
DEFAULT_COST = "wall_per_run"
#: Method colours, in the order of the sorted method names.
COLOURS = CATEGORY_COLOURS
#: Model markers: (SVG shape, matplotlib marker), in the order of the sorted model names.
MARKERS = (("circle", "o"), ("square", "s"), ("triangle", "^"), ("diamond", "D"))


@dataclass(frozen=True)
class Encoding:
    """Which colour a method and which marker a model gets, the same in every chart."""

    methods: tuple[str, ...]
    models: tuple[str, ...]

    @classmethod
    def of(cls, rows: Iterable[dict]) -> Encoding:
        """The encoding of summary rows (dicts with "method" and "model")."""
        rows = list(rows)
        return cls(
            methods=tuple(sorted({str(r["method"]) for r in rows})),
            models=tuple(sorted({str(r.get("model") or UNKNOWN_MODEL) for r in rows})),
        )

    def colour(self, method: str) -> str:
        """The method's colour (a hex string SVG and matplotlib both read)."""
        return COLOURS[self.methods.index(method) % len(COLOURS)]

    def shape(self, model: str | None) -> str:
        """The model's SVG marker shape."""
        return MARKERS[self.models.index(model or UNKNOWN_MODEL) % len(MARKERS)][0]

    def marker(self, model: str | None) -> str:
        """The model's matplotlib marker."""
        return MARKERS[self.models.index(model or UNKNOWN_MODEL) % len(MARKERS)][1]


def check_cost(cost: str) -> str:
    """The cost column's axis label.

    Raises:
        ValueError: for a column that is not a cost.
    """
    if cost not in COSTS:
        raise ValueError(f"cost must be one of {', '.join(map(repr, COSTS))}; got {cost!r}")
    return COSTS[cost]


def _ticks(hi: float, n: int = 4) -> list[float]:
    """About n round tick values from 0 to hi (1, 2 or 5 times a power of ten apart)."""
    if hi <= 0:
        return [0.0]
    raw = hi / n
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [i * step for i in range(int(hi / step + 1e-9) + 1)]


def _marker(shape: str, x: float, y: float, colour: str, title: str) -> str:
    tip = f"<title>{esc(title)}</title>"
    if shape == "swatch":  # a legend's colour sample: no marker shape, so no model is implied
        return (
            f"<rect class='genlm-swatch' x='{x - 6:.1f}' y='{y - 2.5:.1f}' width='12' height='5' "
            f"style='fill:{colour}'>{tip}</rect>"
        )
    fill = f"style='fill:{colour};stroke:{colour}'"  # inline: wins over the theme's point colour
    if shape == "square":
        return f"<rect class='genlm-point' x='{x - 4:.1f}' y='{y - 4:.1f}' width='8' height='8' {fill}>{tip}</rect>"
    if shape in ("triangle", "diamond"):
        pts = (
            [(x, y - 5), (x + 5, y + 4), (x - 5, y + 4)]
            if shape == "triangle"
            else [(x, y - 5), (x + 5, y), (x, y + 5), (x - 5, y)]
        )
        d = " ".join(f"{px:.1f},{py:.1f}" for px, py in pts)
        return f"<polygon class='genlm-point' points='{d}' {fill}>{tip}</polygon>"
    return f"<circle class='genlm-point' cx='{x:.1f}' cy='{y:.1f}' r='4.5' {fill}>{tip}</circle>"


#: Width of one character of a 10 px legend text, an upper bound (monospace is 0.6 em).
_CHAR_W = 6.2


def _legend_text(name: str) -> str:
    return name if len(name) <= 24 else name[:23] + "…"


def _legend_places(items: Sequence[tuple], x0: float, x1: float) -> list[tuple[float, int]]:
    """`(x, row)` of each legend item, in reading order: an item (marker, then its
    name) goes on the row while it fits before `x1`, else starts the next row.
    """
    places, x, row = [], x0, 0
    for name, _, _ in items:
        w = 14 + _CHAR_W * len(_legend_text(name)) + 12
        if x > x0 and x + w - 12 > x1:
            x, row = x0, row + 1
        places.append((x, row))
        x += w
    return places


def _legend_rows(items: Sequence[tuple], x0: float, x1: float) -> int:
    places = _legend_places(items, x0, x1)
    return places[-1][1] + 1 if places else 0


def _known(v: object) -> bool:
    return v is not None and isinstance(v, int | float) and math.isfinite(v)


def scatter_svg(
    summary: Sequence[dict], cost: str = DEFAULT_COST, panel: int = 230, height: int = 190
) -> str:
    """Weighted accuracy (95% CI) against a cost column of `summarize`: a panel per domain.

    The interval is `summarize`'s (Wilson score; the tooltip names the method).

    One colour per method and one marker per model (`Encoding`), named in a
    legend under the panels (no label on a point, so none overlaps); each
    point's tooltip names it and gives its numbers. Rows whose cost is not
    known (runs that never reached a store have no wall time) are left out and
    counted in a note. Ticks on both axes; every text lies inside the image.
    """
    label = check_cost(cost)
    rows = [r for r in summary if _known(r.get("weighted_accuracy")) and _known(r.get(cost))]
    unplaced = sum(
        1 for r in summary if _known(r.get("weighted_accuracy")) and not _known(r.get(cost))
    )
    domains = sorted({r["domain"] for r in summary}) or ["(no runs)"]
    enc = Encoding.of(summary)
    left, right, top, bottom, gap = 46, 12, 22, 36, 16
    note_h = 16 if unplaced else 0
    width = left + len(domains) * (panel + gap) - gap + right
    legend = [
        ("colour: method", [(m, enc.colour(m), "swatch") for m in enc.methods]),
        ("marker: model", [(m, "currentColor", enc.shape(m)) for m in enc.models]),
    ]
    legend_rows = sum(_legend_rows(items, left + 4, width - right) for _, items in legend)
    total = top + height + bottom + 16 * legend_rows + 6 + note_h
    parts = [
        f"<svg width='{width}' height='{total}' viewBox='0 0 {width} {total}' role='img' "
        f"aria-label='weighted accuracy against {esc(label)}' "
        "class='genlm-chart genlm-scatter' xmlns='http://www.w3.org/2000/svg' font-size='10' "
        "fill='currentColor'>"
    ]
    y_of = lambda v: top + height - v * height  # noqa: E731
    parts.append(
        f"<text x='11' y='{top + height / 2:.0f}' text-anchor='middle' "
        f"transform='rotate(-90 11 {top + height / 2:.0f})'>weighted accuracy</text>"
    )
    for k, domain in enumerate(domains):
        x0 = left + k * (panel + gap)
        pts = [r for r in rows if r["domain"] == domain]
        hi = max([r[cost] for r in pts] or [1.0]) * 1.08 or 1.0
        ticks = _ticks(hi)
        hi = max(hi, ticks[-1])
        x_of = lambda v, x0=x0, hi=hi: x0 + v / hi * panel  # noqa: E731
        parts.append(
            f"<text x='{x0 + panel / 2:.0f}' y='{top - 8}' text-anchor='middle' "
            f"font-weight='bold'>{esc(domain_title(domain))}</text>"
            f"<path class='genlm-axis' d='M{x0},{top} V{top + height} H{x0 + panel}' fill='none'/>"
        )
        for v in (0, 0.25, 0.5, 0.75, 1.0):
            y = y_of(v)
            parts.append(
                f"<path class='genlm-grid' d='M{x0},{y:.1f} H{x0 + panel}' opacity='0.15' stroke='currentColor'/>"
            )
            if k == 0:
                parts.append(f"<text x='{x0 - 4}' y='{y + 3:.1f}' text-anchor='end'>{v:g}</text>")
        for t in ticks:
            x = x_of(t)
            parts.append(
                f"<path class='genlm-axis' d='M{x:.1f},{top + height} v4' fill='none'/>"
                f"<text x='{x:.1f}' y='{top + height + 14}' text-anchor='middle'>{esc(fmt(t, 2))}</text>"
            )
        parts.append(
            f"<text x='{x0 + panel / 2:.0f}' y='{top + height + 28}' text-anchor='middle'>"
            f"{esc(label)}</text>"
        )
        for r in pts:
            colour = enc.colour(r["method"])
            x, y = x_of(r[cost]), y_of(r["weighted_accuracy"])
            if _known(r.get("ci_low")) and _known(r.get("ci_high")):
                parts.append(
                    f"<path class='genlm-line' d='M{x:.1f},{y_of(r['ci_low']):.1f} "
                    f"V{y_of(r['ci_high']):.1f}' style='stroke:{colour}' fill='none'/>"
                )
            method = f", {r['ci_method']}" if r.get("ci_method") else ""
            title = (
                f"{r['method']} / {r.get('model') or UNKNOWN_MODEL} / {r['domain']}: "
                f"accuracy {fmt(r['weighted_accuracy'])} (95% CI [{fmt(r.get('ci_low'))}, "
                f"{fmt(r.get('ci_high'))}]{method}); {label}: {fmt(r[cost], 3)}"
            )
            parts.append(_marker(enc.shape(r.get("model")), x, y, colour, title))
    y = top + height + bottom + 8
    for caption, items in legend:
        if items:
            parts.append(
                f"<text x='2' y='{y + 1}' class='genlm-legend'>{caption.split(':')[0]}:</text>"
            )
        places = _legend_places(items, left + 4, width - right)
        for (name, colour, shape), (x, row) in zip(items, places, strict=True):
            yy = y + 16 * row
            parts.append(
                _marker(shape, x + 5, yy - 3, colour, f"{caption.split(': ')[1]} {name}")
                + f"<text x='{x + 14:.0f}' y='{yy + 1}' class='genlm-legend'>"
                f"{esc(_legend_text(name))}</text>"
            )
        y += 16 * _legend_rows(items, left + 4, width - right)
    if unplaced:
        parts.append(
            f"<text x='2' y='{y + 4}' class='genlm-note'>"
            f"{plural(unplaced, 'row')} not drawn (cost unknown)</text>"
        )
    parts.append("</svg>")
    return "".join(parts)
