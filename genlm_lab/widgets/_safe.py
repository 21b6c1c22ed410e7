"""The stored form of a view: static HTML that reads well where a notebook is untrusted.

A notebook opened fresh (JupyterLab, Notebook 7, GitHub, nbviewer) is
untrusted: its HTML outputs pass through a sanitiser that drops `<svg>` and
`<style>` elements but keeps the text inside them. The inline SVG of a view
then spills its `<title>` tooltips and axis labels as a wall of text, and its
tables lose their look. `stored_html` rewrites a view's static HTML so that
what survives the sanitiser is the picture itself:

* every `<svg>` becomes an `<img>` whose source is the SVG as a data URI, with
  the views' CSS inside it (an SVG image is its own document: the page's CSS
  does not reach it), so tooltips stay inside the image and never reach the
  page's text;
* bars get inline styles, so they draw without the stylesheet;
* the whole view sits in a box bounded in height (inline `max-height` and
  `overflow`, which sanitisers keep), so a 1000-row table scrolls;
* the `<style>` element stays: trusted frontends use it, sanitisers drop it
  with its content.
"""

from __future__ import annotations

import base64
import re

from genlm_lab.widgets._assets import asset

#: Height (px) of the box that holds a stored view; taller content scrolls inside it.
MAX_HEIGHT_PX = 640

_SVG = re.compile(r"<svg\b(?P<attrs>[^>]*)>(?P<body>.*?)</svg>", re.DOTALL)
_TITLE = re.compile(r"<title>.*?</title>", re.DOTALL)
_ATTR = re.compile(r"""\b(?P<name>[\w:-]+)\s*=\s*(?P<q>['"])(?P<value>.*?)(?P=q)""", re.DOTALL)
_XMLNS = "http://www.w3.org/2000/svg"
_WIDTH_HEIGHT = re.compile(r"""\s(?:width|height)\s*=\s*(['"]).*?\1""")
_CLASS = re.compile(r"""\bclass\s*=\s*['"]([^'"]*)['"]""")
_RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")
_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
# `render.bar`'s spans: without the stylesheet an empty inline span has no size, so the
# stored form carries the few rules that draw it (a mid grey: readable in light and dark themes;
# JupyterLab's sanitiser drops `currentColor`, so an explicit colour).
_BARBOX = "class='genlm-barbox' style='display:inline-block;vertical-align:middle;"
_BAR = (
    "class='genlm-bar' style='display:inline-block;height:0.8em;min-width:1px;"
    "vertical-align:middle;background-color:#8a8a8a;"
)


def css_for(markup: str, css: str) -> str:
    """The rules of `css` whose selectors end in a class that `markup` uses (or none at all).

    Each image carries its own copy of the rules it needs: the whole sheet in
    every image would add kilobytes per figure to the stored notebook.
    """
    used = {name for names in _CLASS.findall(markup) for name in names.split()}
    keep = []
    for selectors, body in _RULE.findall(_COMMENT.sub("", css)):
        wanted = [
            sel.strip()
            for sel in selectors.split(",")
            if not (last := re.findall(r"\.([\w-]+)", sel.strip().split()[-1])) or set(last) <= used
        ]
        if wanted:
            keep.append(f"{', '.join(wanted)} {{{body.strip()}}}")
    return "\n".join(keep)


def svg_as_img(svg_attrs: str, svg_body: str, css: str) -> str:
    """One `<img>` whose data URI is the SVG, styled by `css` and without tooltips.

    Args:
        svg_attrs: the attributes of the `<svg>` start tag, as written.
        svg_body: the markup between `<svg ...>` and `</svg>`.
        css: style rules to embed in the image (the views' stylesheet).
    """
    attrs = {m["name"]: m["value"] for m in _ATTR.finditer(svg_attrs)}
    # The view's rules select `.genlm-view svg ...` and `.genlm-view .genlm-graph svg ...`:
    # the original <svg> goes inside wrappers with those classes, in a root of its size.
    size = " ".join(f"{k}='{attrs[k]}'" for k in ("width", "height", "viewBox") if k in attrs)
    wrappers = "<g class='genlm-view'><g class='genlm-graph'>"
    css = css_for(wrappers + svg_attrs + svg_body, css).replace("]]>", "]] >")
    # The inner <svg> fills the root: its own width in pt would be read in the root's
    # user units (px) and draw the figure 4/3 too large, cut at the root's edge.
    inner = _WIDTH_HEIGHT.sub("", svg_attrs) + " width='100%' height='100%'"
    doc = (
        f"<svg xmlns='{_XMLNS}' {size}><style><![CDATA[{css}]]></style>{wrappers}"
        f"<svg{inner}>{_TITLE.sub('', svg_body)}</svg></g></g></svg>"
    )
    src = "data:image/svg+xml;base64," + base64.b64encode(doc.encode("utf-8")).decode("ascii")
    alt = attrs.get("aria-label") or attrs.get("class") or "figure"
    return (
        f"<img src='{src}' alt='{alt}' class='genlm-figure' "
        "style='max-width:100%;height:auto;display:block'>"
    )


def stored_html(static_html: str, max_height: int = MAX_HEIGHT_PX) -> str:
    """`static_html` with its SVGs as images and its height bounded (see the module docstring).

    Args:
        static_html: a view's static HTML (`LiveView.to_html(data)`).
        max_height: the box's height in px; taller content scrolls inside it.
    """
    css = asset("genlm.css")
    body = _SVG.sub(lambda m: svg_as_img(m["attrs"], m["body"], css), static_html)
    body = body.replace("class='genlm-barbox' style='", _BARBOX)
    body = body.replace("class='genlm-bar' style='", _BAR)
    return f"<div class='genlm-stored' style='max-height:{max_height}px;overflow:auto'>{body}</div>"
