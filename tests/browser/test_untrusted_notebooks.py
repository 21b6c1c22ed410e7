"""Every tutorial reads well before it runs: opened untrusted, its stored views are figures.

A notebook opened fresh is untrusted, so JupyterLab sanitises its stored HTML
(no `<svg>`, no `<style>`). Before, the genealogy's tooltips then spilled as a
screen of text and views ran 866-2,248 px tall. Here each notebook is opened
as a participant opens it, without running anything, and every stored view
is checked in the page: it is drawn by the sanitised HTML (not the widget),
every figure it stores is a loaded, visible image, it is under 800 px tall,
and none of the text inside its figures (axis labels, tooltips) is page text.
"""

from __future__ import annotations

import base64
import html as html_lib
import json
import re
import shutil
import xml.etree.ElementTree as ET

import pytest
from _lab_session import load_lab, opened
from conftest import NOTEBOOKS

NAMES = sorted(p.name for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
MAX_VIEW_PX = 800

# The notebook is loaded and has drawn its first stored view.
_READY = """() => {
  const w = window.genlmTestDoc;
  return !!(w && w.context && w.context.isReady && w.content && w.content.widgets.length
            && w.content.node.querySelector('.genlm-stored'));
}"""

# Per code cell with outputs: whether Lab trusts it, and per stored view what the page shows.
_VIEWS = """async () => {
  const nb = window.genlmTestDoc.content;
  const out = [];
  for (const [index, cell] of nb.widgets.entries()) {
    if (cell.model.type !== 'code' || !cell.outputArea) continue;
    const node = cell.outputArea.node;
    for (const view of node.querySelectorAll('.genlm-stored')) {
      view.scrollIntoView();
      const imgs = [...view.querySelectorAll('img')];
      await Promise.all(imgs.map((i) => i.decode().catch(() => null)));
      out.push({
        index, trusted: cell.model.trusted,
        height: view.getBoundingClientRect().height,
        scrollHeight: view.scrollHeight,
        svg: view.querySelectorAll('svg').length,
        widget: !!view.closest('.jupyter-widgets, .widget-output'),
        imgs: imgs.map((i) => ({ok: i.complete && i.naturalWidth > 0,
                                w: i.getBoundingClientRect().width,
                                h: i.getBoundingClientRect().height})),
        bars: [...view.querySelectorAll('.genlm-bar')].map((b) => ({
          color: getComputedStyle(b).backgroundColor, w: b.getBoundingClientRect().width})),
        text: view.innerText,
        longest: Math.max(0, ...[...view.querySelectorAll('*')].flatMap((e) =>
          [...e.childNodes].filter((c) => c.nodeType === 3).map((c) => c.textContent.length))),
      });
    }
  }
  return out;
}"""


def _stored_views(path) -> list[tuple[int, int, set[str]]]:
    """(cell index, images stored, texts inside those images) of every stored view."""
    cells = json.loads(path.read_text())["cells"]
    views = []
    for index, cell in enumerate(cells):
        for output in cell.get("outputs", []):
            html = "".join(output.get("data", {}).get("text/html", []))
            if "genlm-view" not in html:
                continue
            assert html.startswith("<div class='genlm-stored'"), (
                f"{path.name}, cell {index}: a view stored without its untrusted form; "
                "re-run the notebook (python scripts/run_notebooks.py)"
            )
            texts = set()
            srcs = re.findall(r"data:image/svg\+xml;base64,([^'\"]+)", html)
            for src in srcs:
                doc = ET.fromstring(base64.b64decode(src))
                for el in doc.iter():
                    if el.tag.endswith("text") and (el.text or "").strip():
                        texts.add(el.text.strip())
            # Words the view also writes outside its figures (e.g. "blocked") are no spill.
            outside = html_lib.unescape(
                re.sub(
                    r"<[^>]+>", " ", re.sub(r"<(style|img)\b.*?(</style>|>)", "", html, flags=re.S)
                )
            )
            views.append((index, len(srcs), {t for t in texts if len(t) > 3 and t not in outside}))
    return views


@pytest.fixture(scope="module")
def lab_page(_module_context, lab):
    """JupyterLab loaded once for the module: each test opens and closes its notebook in it."""
    yield from load_lab(_module_context, lab, "untrusted-notebooks")


@pytest.mark.parametrize("name", NAMES)
def test_stored_views_read_well_in_an_untrusted_notebook(name, lab_page, lab, screenshot):
    _, _, root = lab
    shutil.copy(NOTEBOOKS / name, root / name)
    stored = _stored_views(NOTEBOOKS / name)
    if not stored:
        pytest.skip(f"{name} stores no view")
    with opened(lab_page, name):  # then closed unsaved, its kernel shut down
        lab_page.wait_for_function(_READY, timeout=60_000)
        shown = lab_page.evaluate(_VIEWS)
        assert len(shown) == len(stored), f"{name}: {len(shown)} views drawn, {len(stored)} stored"
        for view, (index, n_images, figure_texts) in zip(shown, stored, strict=True):
            where = f"{name}, cell {index}"
            assert view["index"] == index and view["trusted"] is False, (where, view["trusted"])
            assert not view["widget"] and view["svg"] == 0, where  # the sanitised HTML, as stored
            assert len(view["imgs"]) == n_images, f"{where}: the sanitiser dropped a figure"
            for img in view["imgs"]:
                assert img["ok"] and img["w"] > 20 and img["h"] > 20, (where, img)
            assert 0 < view["height"] < MAX_VIEW_PX, (where, view["height"])
            for bar in view["bars"]:  # drawn without the stylesheet: a colour and a width
                assert bar["color"] not in ("rgba(0, 0, 0, 0)", "transparent") and bar["w"] >= 1, (
                    where,
                    bar,
                )
            spilled = sorted(t for t in figure_texts if t in view["text"])
            assert not spilled, f"{where}: figure text spilled into the page: {spilled[:5]}"
            assert view["longest"] < 400, f"{where}: a text run of {view['longest']} characters"
        first = lab_page.locator(".genlm-stored").first
        first.scroll_into_view_if_needed()
        screenshot(lab_page, f"untrusted_{name.removesuffix('.ipynb')}")
