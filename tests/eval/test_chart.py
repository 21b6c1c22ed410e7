"""genlm_lab.eval.chart: one encoding for every accuracy-cost chart, and an SVG whose texts fit."""

import re

import pytest
from _eval_toys import run_rows

from genlm_lab.eval import plot_accuracy_cost, summarize
from genlm_lab.eval.chart import Encoding, scatter_svg


def _bbox(text: str, x: float, y: float, anchor: str, size: float = 10) -> tuple:
    """An upper bound of a text's box (every glyph at most 0.62 em wide)."""
    w = 0.62 * size * len(text)
    left = {"start": x, "middle": x - w / 2, "end": x - w}[anchor]
    return left, y - size, left + w, y + 2


def _marker_boxes(svg: str, below: float) -> list[tuple]:
    """Boxes of the legend's markers (colour swatches, model markers below `below`)."""
    boxes = [
        (float(x), float(y), float(x) + 12, float(y) + 5)
        for x, y in re.findall(r"<rect class='genlm-swatch' x='([-\d.]+)' y='([-\d.]+)'", svg)
    ]
    for cx, cy in re.findall(r"<circle class='genlm-point' cx='([\d.]+)' cy='([\d.]+)'", svg):
        boxes.append((float(cx) - 4.5, float(cy) - 4.5, float(cx) + 4.5, float(cy) + 4.5))
    for x, y in re.findall(r"<rect class='genlm-point' x='([\d.]+)' y='([\d.]+)'", svg):
        boxes.append((float(x), float(y), float(x) + 8, float(y) + 8))
    return [b for b in boxes if b[1] > below]


@pytest.mark.parametrize(
    "domains", [["pattern_matching", "json_schema", "spider"], ["pattern_matching"]]
)
def test_the_scatter_has_ticks_axis_labels_and_no_overlapping_or_cut_text(domains):
    methods = ["base", "lcd", "sample_rerank", "smc", "awrs_smc", "smc_steer"]
    summary = [
        {
            "model": model,
            "method": m,
            "domain": d,
            "weighted_accuracy": (i * 7 % 10) / 10,
            "ci_low": max(0, (i * 7 % 10) / 10 - 0.1),
            "ci_high": min(1, (i * 7 % 10) / 10 + 0.1),
            "wall_per_run": 0.5 + i,
        }
        for i, (m, d, model) in enumerate(
            (m, d, model) for m in methods for d in domains for model in ("default", "tiny-random")
        )
    ]
    svg = scatter_svg(summary)
    width, height = (float(v) for v in re.search(r"viewBox='0 0 (\S+) (\S+)'", svg).groups())
    texts = re.findall(
        r"<text x='([\d.]+)' y='([\d.]+)'(?: text-anchor='(\w+)')?[^>]*>([^<]*)</text>", svg
    )
    boxes = [_bbox(t, float(x), float(y), a or "start") for x, y, a, t in texts]
    assert "weighted accuracy" in svg
    assert svg.count(">wall time per run (s)</text>") == len(domains)
    assert len(re.findall(r"class='genlm-point'", svg)) == len(summary) + 2  # points, models
    assert len(re.findall(r"class='genlm-swatch'", svg)) == len(methods)  # method colours
    for m in methods:
        assert f">{m}</text>" in svg  # in the legend, not on the points
    rotated = [b for b, t in zip(boxes, texts, strict=True) if t[3] == "weighted accuracy"]
    for (x0, y0, x1, y1), t in zip(boxes, texts, strict=True):
        if t[3] == "weighted accuracy":
            continue  # rotated: checked by its centre below
        assert x0 >= 0 and y0 >= 0 and x1 <= width and y1 <= height, f"{t[3]!r} is cut off"
    assert rotated and 0 <= float(texts[0][1]) <= height
    flat = [(b, t) for b, t in zip(boxes, texts, strict=True) if t[3] != "weighted accuracy"]
    for i, (a, ta) in enumerate(flat):
        for b, tb in flat[i + 1 :]:
            overlap = a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
            assert not overlap, f"{ta[3]!r} overlaps {tb[3]!r}"
    # the legend's markers: inside the image, clear of every name (one panel is narrow)
    legend_top = min(b[1] for b, t in flat if t[3] == "colour:")
    markers = _marker_boxes(svg, legend_top)
    assert len(markers) == len(methods) + 2
    for m in markers:
        assert 0 <= m[0] and m[2] <= width and m[3] <= height
        for b, t in flat:
            overlap = m[0] < b[2] and b[0] < m[2] and m[1] < b[3] and b[1] < m[3]
            assert not overlap, f"a legend marker at x={m[0]} overlaps {t[3]!r}"


def test_the_figure_and_the_svg_chart_share_one_encoding():
    summary = summarize(run_rows(), n_bootstrap=200)
    rows = summary.to_dict("records")
    enc = Encoding.of(rows)
    fig = plot_accuracy_cost(summary)
    svg = scatter_svg(rows)
    assert len(fig.axes) == len({r["domain"] for r in rows}) > 0
    for ax in fig.axes:
        domain = ax.get_title()
        drawn = {
            (
                round(float(c.lines[0].get_xdata()[0]), 9),
                round(float(c.lines[0].get_ydata()[0]), 9),
            ): (
                c.lines[0].get_color(),
                c.lines[0].get_marker(),
            )
            for c in ax.containers
        }
        for r in (r for r in rows if r["domain"] == domain):
            key = (round(r["wall_per_run"], 9), round(r["weighted_accuracy"], 9))
            assert drawn[key] == (enc.colour(r["method"]), enc.marker(r["model"]))
            tip = re.escape(f"<title>{r['method']} / {r['model']} / {domain}:")
            shape = {"o": "circle", "s": "rect"}[enc.marker(r["model"])]
            assert re.search(
                rf"<{shape} class='genlm-point'[^>]*fill:{enc.colour(r['method'])};[^>]*>{tip}", svg
            )


def test_a_row_whose_cost_is_unknown_is_counted_not_drawn_at_zero():
    rows = [
        {"model": "m", "method": "a", "domain": "d", "weighted_accuracy": 0.5, "wall_per_run": 2.0},
        {
            "model": "m",
            "method": "b",
            "domain": "d",
            "weighted_accuracy": 0.7,
            "wall_per_run": None,
        },
    ]
    svg = scatter_svg(rows)
    assert "1 row not drawn (cost unknown)" in svg
    assert len(re.findall(r"<title>a / m / d:", svg)) == 1 and "<title>b / m / d:" not in svg
    with pytest.raises(ValueError, match="wall_per_run"):
        scatter_svg(rows, cost="runtime_total")
