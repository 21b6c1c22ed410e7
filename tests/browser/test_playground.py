"""The Playground in a real JupyterLab: type a regex, see its error, run, stop, pick a step.

A one-cell notebook shows a Playground on the tiny-random model. In the page:
a broken regex shows its error at its column; a fixed one clears it; Run
fills the live ParticleView and Stop ends that run with "stopped"; a second
run finishes, and moving the step slider draws the MaskView of that step.
"""

from __future__ import annotations

import nbformat
import pytest
from _views_page import NOISE, open_and_run_all
from conftest import open_page
from nbformat.v4 import new_code_cell, new_notebook

CELL = """from genlm_lab.backend import load_model_by_name
from genlm_lab.playground import Playground, PlaygroundConfig

pg = Playground(
    PlaygroundConfig(prompt="Code: ", model="tiny-random", constraint="[a-z]{3}",
                     method="direct", n_particles=4, max_tokens=400),
    lm=load_model_by_name("tiny-random"),
)
pg"""

DOCS_IMAGE = "playground"


def _type(page, selector: str, text: str) -> None:
    box = page.locator(selector)
    box.fill(text)
    box.dispatch_event("input")
    box.blur()


@pytest.fixture
def tall_page(browser):
    """A page tall enough to hold the whole Playground (for its screenshot)."""
    context, page = open_page(browser, width=1300, height=2600)
    yield page
    context.close()


def test_type_run_stop_and_pick_a_step(tall_page, lab, screenshot):
    page = tall_page
    base, token, root = lab
    nb = new_notebook(cells=[new_code_cell(CELL)])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, str(root / "playground.ipynb"))
    open_and_run_all(
        page, f"{base}/lab/workspaces/playground/tree/playground.ipynb?reset&token={token}"
    )
    playground = page.locator(".genlm-playground")
    playground.wait_for(timeout=120_000)

    # an error shows inline at its column, and clears once fixed
    _type(page, ".genlm-pg-source textarea", "ab(c")
    error = page.locator(".genlm-pg-error")
    page.wait_for_function(
        "() => document.querySelector('.genlm-pg-error').textContent.includes('column 3')",
        timeout=30_000,
    )
    assert "unclosed group" in error.text_content()
    _type(page, ".genlm-pg-source textarea", "[a-z]{390}")  # long enough to be stopped
    page.wait_for_function(
        "() => !document.querySelector('.genlm-pg-error').textContent.trim()", timeout=30_000
    )

    # Run, see the particles move, Stop
    page.locator(".genlm-pg-n-particles input").fill("48")
    page.locator(".genlm-pg-n-particles input").press("Enter")
    page.locator("button.genlm-pg-run-button").click()
    page.wait_for_selector(
        ".genlm-playground .genlm-live.genlm-particles tbody tr", timeout=120_000
    )
    page.locator("button.genlm-pg-stop-button").click()
    page.wait_for_function(
        "() => document.querySelector('.genlm-pg-status').textContent.includes('stopped')",
        timeout=60_000,
    )

    # a short run that finishes
    _type(page, ".genlm-pg-source textarea", "[a-z]{3}")
    page.locator(".genlm-pg-n-particles input").fill("4")
    page.locator(".genlm-pg-n-particles input").press("Enter")
    page.locator(".genlm-pg-max-tokens input").fill("8")
    page.locator(".genlm-pg-max-tokens input").press("Enter")
    page.locator("button.genlm-pg-run-button").click()
    page.wait_for_function(
        "() => document.querySelector('.genlm-pg-status').textContent.includes('log ML')",
        timeout=180_000,
    )
    page.locator(".genlm-pg-profile svg, .genlm-pg-profile table").first.wait_for(timeout=30_000)

    # pick a step: the slider's handle, one step right, draws that step's mask
    handle = page.locator(".genlm-pg-step .noUi-handle")
    handle.click()
    handle.press("ArrowRight")
    mask = page.locator(".genlm-pg-mask .genlm-live.genlm-mask")
    mask.wait_for(timeout=60_000)
    mask.locator("table tbody tr").first.wait_for(timeout=60_000)
    assert mask.locator("tr.genlm-blocked").count() > 0
    screenshot(playground, DOCS_IMAGE)
    errors = [e for e in page.console_errors if not NOISE.search(e)]
    assert not errors, errors
