"""Open tests/browser/views.ipynb in the Notebook 7 UI, run all cells, read the DOM.

The same server as the JupyterLab tests serves Notebook 7 at /notebooks/ once the
`notebook` package (7.x) is installed. The notebook prints the numbers each view
should draw (from the kernel's own data); the live widgets must match them here too.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest

# The same HTTP noise the JupyterLab test tolerates (optional server endpoints).
_NOISE = re.compile(r"^Failed to load resource: the server responded with a status of")

# Its own copy of the notebook: no kernel session or autosaved outputs shared with
# the JupyterLab test, which opens views.ipynb on the same server.
_NAME = "views_notebook7.ipynb"

_KERNEL_READY = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.connectionStatus === "connected" && k.status === "idle";
}"""


@pytest.fixture
def notebook7(lab):
    """(base_url, token) of the lab server, skipping when Notebook 7 is not installed."""
    pytest.importorskip("notebook", minversion="7", reason="notebook>=7 is not installed")
    base, token, root = lab
    shutil.copy(Path(__file__).with_name("views.ipynb"), root / _NAME)
    return base, token


def _is_notebook7_own_error(error) -> bool:
    """An uncaught error raised wholly inside Notebook 7's own bundles.

    Notebook 7.6 throws a couple on page load, with or without the views (its
    shortcuts settings plugin: "reading 'schema'"; its file browser restorer:
    "Command 'filebrowser:open-path' not registered"). The views' code runs from
    their widget ESM, so an error of theirs has frames outside /static/notebook/.
    """
    urls = re.findall(r"https?://\S+", error.stack or "")
    return bool(urls) and all("/static/notebook/" in u for u in urls)


def _printed(page, key: str) -> list[int]:
    """The integers a cell printed after `key` (e.g. "BEAM ROWS 3")."""
    loc = page.locator(f".jp-OutputArea-output >> text=/^{key} /")
    loc.first.wait_for(timeout=90_000)
    return [int(x) for x in loc.first.text_content().split()[len(key.split()) :]]


def _weights(page) -> list[str]:
    return page.eval_on_selector_all(
        ".genlm-live.genlm-particles .genlm-weight", "els => els.map(e => e.textContent)"
    )


def test_views_draw_live_in_notebook7(notebook7, page, screenshot):
    base, token = notebook7
    own = []  # errors of Notebook 7 itself (see _is_notebook7_own_error)
    page.on("pageerror", lambda e: _is_notebook7_own_error(e) and own.append(f"pageerror: {e}"))
    page.goto(f"{base}/notebooks/{_NAME}?token={token}")
    page.wait_for_function("window.jupyterapp && window.jupyterapp.shell", timeout=60_000)
    # The Notebook 7 application, not JupyterLab.
    assert page.evaluate("() => window.jupyterapp.name") == "Jupyter Notebook"
    page.wait_for_selector(".jp-Notebook .jp-Cell", state="attached", timeout=60_000)
    page.wait_for_function(_KERNEL_READY, timeout=90_000)
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")

    # TrieView: the graphviz SVG is drawn, one SVG node per subtrie node.
    trie = page.locator(".genlm-live.genlm-trie")
    (n_nodes,) = _printed(page, "TRIE NODES")
    assert trie.locator(".genlm-graph svg g.node").count() == n_nodes
    assert trie.locator("script").count() == 0
    screenshot(trie, "nb7_trie_view")

    # BeamDebugger: one table row per candidate.
    beam = page.locator(".genlm-live.genlm-beam")
    (n_rows,) = _printed(page, "BEAM ROWS")
    assert beam.locator("table").first.locator("tbody tr").count() == n_rows
    assert "4 / 16 bytes read" in beam.locator(".genlm-status").text_content()

    # ParticleView while the SMC cell runs: one row per particle, weights move.
    page.wait_for_selector(".genlm-live.genlm-particles tbody tr", timeout=90_000)
    first = _weights(page)
    time.sleep(1.0)
    second = _weights(page)
    assert len(first) == 8 and len(second) == 8, (first, second)
    assert first != second, "particle weights did not change while the SMC cell ran"

    page.wait_for_selector(".jp-OutputArea-output >> text=ALL CELLS DONE", timeout=120_000)
    n_dots, n_lines, _ = _printed(page, "GENEALOGY")
    particles = page.locator(".genlm-live.genlm-particles")
    assert "finished" in particles.locator(".genlm-status").text_content()
    assert particles.locator("tbody tr").count() == 8
    assert particles.locator("svg.genlm-genealogy circle").count() == n_dots
    assert particles.locator("svg.genlm-genealogy line").count() == n_lines
    screenshot(particles, "nb7_particle_view")

    (queries,) = _printed(page, "QUERIES")
    monitor = page.locator(".genlm-live.genlm-monitor")
    assert monitor.locator("td").all_text_contents()[:2] == ["queries", str(queries)]

    # A control reaches the kernel and the view redraws: the beam's step button.
    beam.locator("button.genlm-step").click()
    page.wait_for_function(
        "() => document.querySelector('.genlm-live.genlm-beam .genlm-status')"
        ".textContent.includes('5 / 16')",
        timeout=30_000,
    )

    errors = [e for e in page.console_errors if not _NOISE.search(e) and e not in own]
    assert not errors, errors
