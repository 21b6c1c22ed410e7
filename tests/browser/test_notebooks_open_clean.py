"""Every tutorial opens in JupyterLab unmodified: no dirty mark before the user edits.

Opening a notebook starts its kernel, and Lab then writes the kernel's
`kernelspec` and `language_info` into the notebook's metadata; where they
differ from the stored ones the notebook is modified before anyone edits it.
"""

from __future__ import annotations

import json
import shutil

import pytest
from _lab_session import load_lab, opened
from conftest import NOTEBOOKS

NAMES = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))

# The notebook's state once its kernel is up and idle (Lab writes the kernel's spec then).
_STATE = """() => {
  const w = window.genlmTestDoc;
  if (!w || !w.context || !w.context.isReady || !w.sessionContext) return null;
  const kernel = w.sessionContext.session && w.sessionContext.session.kernel;
  if (!kernel || kernel.status !== 'idle') return null;
  return {dirty: w.context.model.dirty, json: w.context.model.toJSON()};
}"""

# Lab writes `language_info` and `kernelspec` into the model when the kernel's info and spec
# promises resolve (NotebookPanel._onKernelChanged): await the same promises, let their
# continuations run (a task later), let the outputs render (two frames), then a settle.
_SETTLED = """async () => {
  const kernel = window.genlmTestDoc.sessionContext.session.kernel;
  await kernel.info;
  await kernel.spec;
  await new Promise((r) => setTimeout(r, 0));
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  await new Promise((r) => setTimeout(r, 500));
  return true;
}"""


@pytest.fixture(scope="module")
def lab_page(_module_context, lab):
    """JupyterLab loaded once for the module: each test opens and closes its notebook in it."""
    yield from load_lab(_module_context, lab, "clean-notebooks")


@pytest.mark.parametrize("name", NAMES)
def test_notebook_opens_without_being_marked_modified(name, lab_page, lab):
    _, _, root = lab
    shutil.copy(NOTEBOOKS / name, root / name)
    with opened(lab_page, name):  # then closed unsaved, its kernel shut down: one at a time
        lab_page.wait_for_function(_STATE, timeout=60_000)
        lab_page.evaluate(_SETTLED)  # the kernel's info and spec arrive, outputs render
        state = lab_page.wait_for_function(_STATE, timeout=30_000).json_value()
    stored = json.loads((root / name).read_text())["metadata"]
    changed = {k: v for k, v in state["json"]["metadata"].items() if stored.get(k) != v}
    # Lab set kernelspec from the running kernel: stored "Python 3" vs "Python 3 (ipykernel)"
    assert not state["dirty"], (
        f"{name} is marked modified on open; metadata Lab changed: {changed} "
        "(store it as Lab does: python scripts/run_notebooks.py --metadata-only)"
    )
