"""A real JupyterLab on loopback, driven by Debian chromium through playwright.

Skips (one line saying why) when /usr/bin/chromium or playwright is missing.
Never downloads a browser: `make test` installs Debian's chromium where root.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
from _views_page import open_and_run_all
from nbformat.v4 import new_code_cell, new_notebook

CHROMIUM = "/usr/bin/chromium"
HERE = Path(__file__).parent
SCREENSHOTS = HERE / "screenshots"
NOTEBOOKS = HERE.parents[1] / "notebooks"
TUTORIALS = ("00_quickstart.ipynb", "04_smc.ipynb")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}


_SHORT_FILES = (
    "test_results_models.py",
    "test_results_view.py",
    "test_views_in_notebook7.py",
    "views.ipynb",
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def pytest_collection_modifyitems(config, items):
    """Mark the browser tests and run them last.

    Playwright's sync API drives its own event loop in the main thread; running
    these tests after every asyncio test keeps that loop out of their way.
    """
    browser_items = [i for i in items if HERE in Path(str(i.fspath)).parents]
    # `make test` hands whole files to its workers in this order (--dist loadfile): the
    # short files (10-20 s each) go last, so that a worker that finishes early is not left
    # waiting while the other runs a long one (40-90 s: a tutorial run in the page, the
    # ten notebooks opened one by one). A stable sort: each file keeps its own order.
    browser_items.sort(key=lambda i: Path(str(i.fspath)).name in _SHORT_FILES)
    for item in browser_items:
        item.add_marker(pytest.mark.browser)
    items[:] = [i for i in items if HERE not in Path(str(i.fspath)).parents] + browser_items


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """(base_url, token, root_dir) of a JupyterLab server started for the tests."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="python playwright is not installed")
    root = tmp_path_factory.mktemp("lab")
    for nb in HERE.glob("*.ipynb"):
        shutil.copy(nb, root / nb.name)
    for name in TUTORIALS:  # the tutorials the browser tests also open, where they exist
        if (NOTEBOOKS / name).exists():
            shutil.copy(NOTEBOOKS / name, root / name)
    # No news / update toasts over the screenshots (and no network asked for).
    notes = root / ".settings" / "@jupyterlab" / "apputils-extension"
    notes.mkdir(parents=True)
    (notes / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}'
    )
    # Every cell rendered, even off screen, so the tests can read all outputs.
    nb_settings = root / ".settings" / "@jupyterlab" / "notebook-extension"
    nb_settings.mkdir(parents=True)
    (nb_settings / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    port, token = _free_port(), secrets.token_hex(16)
    log = open(root / "jupyter.log", "w")  # noqa: SIM115 - closed at teardown
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "jupyterlab", "--no-browser",
            "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
            f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
            "--LabApp.expose_app_in_browser=True",
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--ServerApp.open_browser=False",
            "--ServerApp.terminals_enabled=False",
            "--LabApp.extension_manager=readonly",
            *(["--allow-root"] if os.geteuid() == 0 else []),
            f"--LabApp.workspaces_dir={root / '.workspaces'}",
            f"--LabApp.user_settings_dir={root / '.settings'}",
            # Notebook 7 (when installed) is served by the same server: expose its app too.
            "--JupyterNotebookApp.expose_app_in_browser=True",
            # No signatures from this user's earlier sessions: notebooks open untrusted,
            # as on a participant's machine (test_untrusted_notebooks.py relies on it).
            "--NotebookNotary.db_file=:memory:",
        ],
        stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2):
                break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(
                    f"JupyterLab did not start; see {root / 'jupyter.log'}:\n"
                    + (root / "jupyter.log").read_text()[-2000:]
                ) from None
            time.sleep(0.5)
    yield base, token, root
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.fixture(scope="session")
def browser(lab):
    """One chromium per worker: every test opens its own context (no state is shared)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


def open_page(browser, width: int = 1400, height: int = 1000):
    """`(context, page)`: a fresh page whose console errors go to `page.console_errors`."""
    context = browser.new_context(viewport={"width": width, "height": height})
    pg = context.new_page()
    pg.console_errors = []
    pg.on("console", lambda m: m.type == "error" and pg.console_errors.append(m.text))
    pg.on("pageerror", lambda e: pg.console_errors.append(f"pageerror: {e}"))
    return context, pg


@pytest.fixture(scope="module")
def _module_context(browser):
    """One browser context per module: its pages share the HTTP cache of Lab's bundles."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    yield context
    context.close()


@pytest.fixture
def page(_module_context):
    """A fresh page whose console errors are collected in `page.console_errors`."""
    pg = _module_context.new_page()
    pg.console_errors = []
    pg.on("console", lambda m: m.type == "error" and pg.console_errors.append(m.text))
    pg.on("pageerror", lambda e: pg.console_errors.append(f"pageerror: {e}"))
    yield pg
    pg.close()


@pytest.fixture
def notebook(lab):
    """run(page, name, *cells, workspace): a notebook of these code cells, opened and running.

    It is written into Lab's root as `name`.ipynb (on the Python 3 kernel), opened
    in `page` in a fresh `workspace`, and every cell started (`open_and_run_all`).
    """
    base, token, root = lab

    def run(page, name: str, *cells: str, workspace: str) -> Path:
        nb = new_notebook(cells=[new_code_cell(cell) for cell in cells])
        nb.metadata["kernelspec"] = dict(KERNELSPEC)
        path = root / f"{name}.ipynb"
        nbformat.write(nb, str(path))
        url = f"{base}/lab/workspaces/{workspace}/tree/{path.name}?reset&token={token}"
        open_and_run_all(page, url)
        return path

    return run


@pytest.fixture
def screenshot():
    """save(target, name): a PNG of a page or element under tests/browser/screenshots/."""

    def save(target, name: str) -> Path:
        SCREENSHOTS.mkdir(exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        target.screenshot(path=str(path))
        return path

    return save
