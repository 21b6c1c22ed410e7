"""Open tests/browser/views.ipynb in the Notebook 7 UI, run all cells, read the DOM.

The same server as the JupyterLab tests serves Notebook 7 at /notebooks/ once the
`notebook` package (7.x) is installed. The notebook prints the numbers each view
should draw (from the kernel's own data); the live widgets must match them here too.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from _views_page import NOISE, check_views, open_and_run_all

# Its own copy of the notebook: no kernel session or autosaved outputs shared with
# the JupyterLab test, which opens views.ipynb on the same server.
_NAME = "views_notebook7.ipynb"


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


def test_views_draw_live_in_notebook7(notebook7, page, screenshot):
    base, token = notebook7
    own = []  # errors of Notebook 7 itself (see _is_notebook7_own_error)
    page.on("pageerror", lambda e: _is_notebook7_own_error(e) and own.append(f"pageerror: {e}"))
    open_and_run_all(page, f"{base}/notebooks/{_NAME}?token={token}")
    # The Notebook 7 application, not JupyterLab.
    assert page.evaluate("() => window.jupyterapp.name") == "Jupyter Notebook"
    check_views(page, screenshot, shot_prefix="nb7_")

    errors = [e for e in page.console_errors if not NOISE.search(e) and e not in own]
    assert not errors, errors
