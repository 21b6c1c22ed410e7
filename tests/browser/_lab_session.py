"""One JupyterLab page per test module: notebooks open and close in it, Lab boots once.

Loading Lab (its bundles parsed, its extensions activated) took most of a test
that opens one notebook. `load_lab` loads it once in a fresh workspace;
`opened` opens one notebook with Lab's own command (the one its `tree/` URL
runs), as `window.genlmTestDoc` for the test's scripts, and whatever the test
did, drops it afterwards unsaved (no "save changes?" dialog), shuts its kernel
down, and checks that no document, kernel or dialog is left for the next one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

_STARTED = """async () => {
  await window.jupyterapp.started;
  await window.jupyterapp.restored;
}"""

_OPEN = """async (path) => {
  const app = window.jupyterapp;
  const left = [...app.shell.widgets('main')].filter((w) => w.context).map((w) => w.context.path);
  if (window.genlmTestDoc) left.push('window.genlmTestDoc');
  if (left.length) return {left};
  const w = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
  window.genlmTestDoc = w;
  app.shell.activateById(w.id);
  return {left, path: w.context.path};
}"""

# Unsaved and without a "save changes?" dialog: dispose skips the close hook that asks.
_CLOSE = """async (path) => {
  const app = window.jupyterapp;
  const w = window.genlmTestDoc;
  window.genlmTestDoc = null;
  if (w && !w.isDisposed) {
    const session = w.sessionContext;
    await Promise.race([session.ready, new Promise((r) => setTimeout(r, 30000))]);
    await session.shutdown().catch(() => null);
    w.dispose();
  }
  const sessions = app.serviceManager.sessions;
  await sessions.refreshRunning();
  for (const m of [...sessions.running()].filter((m) => m.path === path)) {
    await sessions.shutdown(m.id);  // a kernel the page let go of before it started
  }
  await sessions.refreshRunning();
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  return {
    docs: [...app.shell.widgets('main')].filter((d) => d.context).map((d) => d.context.path),
    kernels: [...sessions.running()].filter((m) => m.path === path).length,
    dialogs: document.querySelectorAll('.jp-Dialog').length,
  };
}"""


def load_lab(context, lab: tuple[str, str, object], workspace: str) -> Iterator:
    """Yield a page with JupyterLab loaded in a fresh `workspace` (for a module fixture)."""
    base, token, _ = lab
    page = context.new_page()
    page.goto(f"{base}/lab/workspaces/{workspace}?reset&token={token}")
    page.wait_for_function("window.jupyterapp && window.jupyterapp.shell", timeout=60_000)
    page.evaluate(_STARTED)  # its plugins activated, its layout restored
    page.wait_for_function(
        "window.jupyterapp.commands.hasCommand('docmanager:open')", timeout=60_000
    )
    yield page
    page.close()


@contextmanager
def opened(page, path: str) -> Iterator[None]:
    """Open notebook `path` (relative to Lab's root) in `page`; drop it and its kernel after."""
    state = page.evaluate(_OPEN, path)
    assert not state["left"], f"documents left open by an earlier test: {state['left']}"
    assert state["path"] == path, state
    try:
        yield
    finally:
        left = page.evaluate(_CLOSE, path)
        assert left == {"docs": [], "kernels": 0, "dialogs": 0}, f"{path} left behind: {left}"
