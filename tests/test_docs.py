"""The documentation site: it builds strict-clean, offline, and says true things.

`mkdocs build --strict` turns every warning into a failure: a docstring that
documents a parameter the signature lacks, a link to a page that is gone, a
notebook missing from the nav. The built HTML must fetch nothing from the
network (no CDN fonts, scripts or stylesheets), since the site is read on
machines without it.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Attributes through which a page makes the browser fetch something.
_FETCHING = {
    "script": ("src",),
    "link": ("href",),
    "img": ("src", "srcset"),
    "iframe": ("src",),
    "source": ("src", "srcset"),
    "embed": ("src",),
    "object": ("data",),
}
_LINK_RELS_FETCHED = {"stylesheet", "preload", "prefetch", "modulepreload", "icon", "manifest"}
_EXTERNAL = re.compile(r"^\s*(https?:)?//", re.IGNORECASE)
_CSS_EXTERNAL = re.compile(r"(@import\s+(url\()?|url\()\s*['\"]?\s*(https?:)?//", re.IGNORECASE)


class _Page(HTMLParser):
    """Collects the URLs a page fetches, its inline CSS and its visible text."""

    def __init__(self) -> None:
        super().__init__()
        self.fetched: list[str] = []
        self.css: list[str] = []
        self.text: list[str] = []
        self._inside: str | None = None  # "script" or "style" while in one

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag in ("script", "style"):
            self._inside = tag
        if a.get("style"):
            self.css.append(a["style"])
        if tag == "link" and not (_LINK_RELS_FETCHED & set(a.get("rel", "").lower().split())):
            return
        self.fetched += [a[name] for name in _FETCHING.get(tag, ()) if a.get(name)]

    def handle_endtag(self, tag: str) -> None:
        if tag == self._inside:
            self._inside = None

    def handle_data(self, data: str) -> None:
        if self._inside == "style":
            self.css.append(data)
        elif self._inside is None:
            self.text.append(data)


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once into a temporary folder with `mkdocs build --strict`."""
    for module in ("mkdocs", "material", "mkdocstrings_handlers.python", "mkdocs_jupyter"):
        pytest.importorskip(module, reason='the docs tools: pip install -e ".[docs]"')
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", HF_HUB_OFFLINE="1")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        warnings = [
            line for line in proc.stderr.splitlines() if "WARNING" in line or "ERROR" in line
        ]
        pytest.fail(
            "mkdocs build --strict failed:\n"
            + "\n".join(warnings or proc.stderr.splitlines()[-30:])
        )
    return out


@pytest.mark.slow
def test_site_fetches_nothing_from_the_network(site: Path) -> None:
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 10, f"only {len(pages)} pages built"
    external = []
    for path in pages:
        page = _parse(path)
        rel = path.relative_to(site)
        external += [f"{rel}: {url}" for url in page.fetched if _EXTERNAL.match(url)]
        external += [
            f"{rel}: inline CSS {m.group(0)!r}" for c in page.css for m in _CSS_EXTERNAL.finditer(c)
        ]
    for path in sorted(site.rglob("*.css")):
        text = path.read_text(encoding="utf-8", errors="replace")
        external += [
            f"{path.relative_to(site)}: {m.group(0)!r}" for m in _CSS_EXTERNAL.finditer(text)
        ]
    assert not external, "the site fetches from the network:\n" + "\n".join(external[:20])


@pytest.mark.slow
def test_every_tutorial_is_rendered_with_its_stored_outputs(site: Path) -> None:
    notebooks = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert notebooks
    for name in notebooks:
        page = site / "tutorials" / f"{name}.html"
        assert page.is_file(), (
            f"notebooks/{name}.ipynb has no page: add it to the nav in mkdocs.yml"
        )
        assert "jp-OutputArea-output" in page.read_text(encoding="utf-8"), (
            f"{page} shows no outputs"
        )


@pytest.mark.slow
def test_bytebeamstate_api_page_shows_its_docstring(site: Path) -> None:
    from genlm_lab.bytes import ByteBeamState

    first = inspect.getdoc(ByteBeamState).splitlines()[0]
    words = " ".join(first.replace("`", "").split())
    page = _parse(site / "api" / "bytes.html")
    text = " ".join("".join(page.text).split())
    assert words in text, f"api/bytes.html lacks ByteBeamState's summary {words!r}"


@pytest.mark.slow
def test_api_pages_list_every_public_name(site: Path) -> None:
    pages = sorted((ROOT / "docs" / "api").glob("*.md"))
    assert pages
    missing = []
    for md in pages:
        module = importlib.import_module(f"genlm_lab.{md.stem}")
        html = (site / "api" / f"{md.stem}.html").read_text(encoding="utf-8")
        ids = set(re.findall(r'id="(genlm_lab(?:\.\w+)+)"', html))
        # A name shared with its module (trie.visualize.visualize) is documented by full path.
        missing += [
            f"genlm_lab.{md.stem}.{n}"
            for n in module.__all__
            if not {f"genlm_lab.{md.stem}.{n}", f"genlm_lab.{md.stem}.{n}.{n}"} & ids
        ]
    assert not missing, "the API pages lack (add a ::: block):\n" + "\n".join(missing)


def _names_on_migration_page() -> list[str]:
    text = (ROOT / "docs" / "coming-from-genlm.md").read_text(encoding="utf-8")
    return sorted(set(re.findall(r"`(genlm_lab(?:\.\w+)+)`", text)))


def test_every_genlm_lab_name_on_the_migration_page_exists() -> None:
    names = _names_on_migration_page()
    assert len(names) > 20, names
    missing = []
    for dotted in names:
        module_name, _, attr = dotted.rpartition(".")
        try:
            importlib.import_module(dotted)
            continue
        except ImportError:
            pass
        try:
            getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            missing.append(f"{dotted}: {type(exc).__name__}: {exc}")
    assert not missing, "docs/coming-from-genlm.md names what does not exist:\n" + "\n".join(
        missing
    )


@pytest.mark.slow
def test_architecture_page_shows_the_layer_diagram_drawn_at_build_time(site: Path) -> None:
    text = (site / "architecture.html").read_text(encoding="utf-8")
    assert "<!-- layer-diagram -->" not in text  # the hook replaced the marker
    diagram = text.split('<div class="layer-diagram">', 1)[1]
    assert diagram.lstrip().startswith("<svg")
    titles = set(re.findall(r"<title>([^<]*)</title>", diagram.split("</svg>", 1)[0]))
    for layer in ("util", "tokenization", "backend", "trie", "bytes", "smc", "control", "widgets"):
        assert layer in titles, layer
    assert "control&#45;&gt;smc" in titles  # an arrow per import between layers
    assert 'href="architecture.html"' in (site / "index.html").read_text(encoding="utf-8")
