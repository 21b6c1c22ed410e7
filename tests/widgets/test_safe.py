"""The stored HTML of a view survives a notebook sanitiser as a picture, not as a text wall.

`_lab_sanitise` applies the rules of JupyterLab's sanitiser that matter here
(its tag allowlist, `<style>` dropped with its content, the text of other
dropped tags kept, `src` not scheme-checked); the browser test
tests/browser/test_untrusted_notebooks.py checks the real one.
"""

import asyncio
import base64
import re
import xml.etree.ElementTree as ET

import bleach
import pytest
from bleach.css_sanitizer import CSSSanitizer

from genlm_lab.smc import smc_standard
from genlm_lab.widgets import ParticleView
from genlm_lab.widgets._safe import MAX_HEIGHT_PX, stored_html
from genlm_lab.widgets.render import bar, line_chart, wrap

# JupyterLab 4's allowed tags (packages/apputils/src/sanitizer.ts): no svg, no style.
_LAB_TAGS = set(
    "a abbr acronym address area article aside audio b bdi bdo big blockquote br button canvas "
    "caption center cite code col colgroup colspan command data datalist dd del details dfn dir "
    "div dl dt em fieldset figcaption figure font footer form h1 h2 h3 h4 h5 h6 header hgroup hr "
    "i img input ins kbd label legend li map mark menu meter nav nobr ol optgroup option output p "
    "pre progress q rowspan s samp section select small source span strike strong sub summary sup "
    "table tbody td textarea tfoot th thead time tr track tt u ul var video wbr".split()
)

_LAB_STYLES = {  # the properties the stored views use; Lab's list holds these and more
    "background", "background-color", "display", "height", "max-height", "max-width", "min-width", "opacity",
    "overflow", "vertical-align", "width",
}  # fmt: skip


def _lab_sanitise(html: str) -> str:
    html = re.sub(r"<style\b.*?</style>", "", html, flags=re.DOTALL)  # dropped with its content
    return bleach.clean(
        html,
        tags=_LAB_TAGS,
        attributes={"*": ["class", "style", "title"], "img": ["src", "alt"]},
        protocols={"http", "https", "data"},
        strip=True,
        css_sanitizer=CSSSanitizer(allowed_css_properties=_LAB_STYLES),
    )


def _visible_text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def _images(html: str) -> list[ET.Element]:
    """The SVG documents of every data-URI image, parsed as XML (a broken one raises)."""
    out = []
    for src in re.findall(r"<img src=['\"]data:image/svg\+xml;base64,([^'\"]+)", html):
        out.append(ET.fromstring(base64.b64decode(src).decode("utf-8")))
    return out


@pytest.fixture(scope="module")
def particle_view(path_model_record):
    return ParticleView.from_record(path_model_record)


@pytest.fixture(scope="module")
def path_model_record():
    from test_genealogy import PathModel

    return asyncio.run(smc_standard(PathModel(), n_particles=12, ess_threshold=0.5, seed=3)).record


def test_raw_static_html_spills_tooltips_through_the_sanitiser(particle_view):
    # The failure this module fixes: the genealogy's <title> tooltips become page text.
    raw = _visible_text(_lab_sanitise(particle_view._repr_html_()))
    assert "step 1, slot 0" in raw


def test_stored_html_keeps_tooltips_inside_the_image(particle_view):
    data, _ = particle_view._repr_mimebundle_()
    stored = data["text/html"]
    visible = _visible_text(_lab_sanitise(stored))
    assert "step 1, slot 0" not in visible
    assert "ESS over steps" not in visible  # chart labels stay in the chart images too
    images = _images(_lab_sanitise(stored))
    ns = "{http://www.w3.org/2000/svg}"
    # Every figure of the static HTML is an image, each a well-formed SVG document that
    # holds the same marks (circles of the genealogy, paths of the charts).
    raw = particle_view._repr_html_()
    assert len(images) == raw.count("<svg")
    assert sum(len(img.findall(f".//{ns}circle")) for img in images) == raw.count("<circle")
    assert all(img.find(f"{ns}style") is not None for img in images)
    assert "<svg" not in stored.split("<img")[0]


def test_stored_html_is_bounded_in_height_with_the_bound_kept_by_the_sanitiser(particle_view):
    stored = _lab_sanitise(particle_view._repr_mimebundle_()[0]["text/html"])
    assert stored.startswith(
        f'<div class="genlm-stored" style="max-height:{MAX_HEIGHT_PX}px;overflow:auto;">'
    )


def test_bars_draw_without_the_stylesheet():
    stored = _lab_sanitise(stored_html(wrap(bar(0.25, 80), "x")))
    assert "width:80px" in stored and "width:25.0%" in stored
    assert "display:inline-block" in stored and "background-color:#8a8a8a" in stored


def test_svg_text_is_escaped_xml_in_the_image():
    # Series names with markup and ampersands keep the image well-formed.
    html = wrap(line_chart([("<b>&x", [1.0, 2.0], "genlm-line")], title="a & <b>"), "x")
    (img,) = _images(stored_html(html))
    assert "".join(img.itertext()).count("a & <b>") == 1
