"""The Playground in a real JupyterLab: type a regex, see its error, run, stop, pick a step.

A one-cell notebook shows a Playground on the tiny-random model. In the page:
a broken regex shows its error at its column; a fixed one clears it; Run
fills the live ParticleView and Stop ends that run with "stopped"; a second
run finishes, and moving the step slider draws the MaskView of that step.
Copy as code copies the run shown, and says so; a form changed after the run
leaves that code in the box, marked, with no claim of a copy.
"""

from __future__ import annotations

import pytest
from _views_page import NOISE
from conftest import open_page

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


def test_type_run_stop_and_pick_a_step(tall_page, notebook, screenshot):
    page = tall_page
    notebook(page, "playground", CELL, workspace="playground")
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


SWITCH_CELL = """from genlm_lab.backend import load_model_by_name
from genlm_lab.playground import Playground, PlaygroundConfig

pg = Playground(
    PlaygroundConfig(prompt="Code: ", model="tiny-random", constraint="[a-z]{3}",
                     method="direct", n_particles=3, max_tokens=8),
    lm=load_model_by_name("tiny-random"),
)
pg"""

_TEXT = "(sel) => (document.querySelector(sel) || {}).textContent || ''"


def _text(page, selector: str) -> str:
    return page.evaluate(_TEXT, selector)


def _wait_text(page, selector: str, needle: str, timeout: int = 180_000) -> None:
    page.wait_for_function(
        "([sel, needle]) => ((document.querySelector(sel) || {}).textContent || '')"
        ".includes(needle)",
        arg=[selector, needle],
        timeout=timeout,
    )


def _copied_code(page) -> str:
    """Click "Copy as code": the box's code, checked against the clipboard where it was copied."""
    page.locator(".genlm-pg-code .genlm-code-button").click()
    page.wait_for_function(
        "() => document.querySelector('.genlm-pg-code .genlm-code-note').textContent.trim()",
        timeout=30_000,
    )
    box = page.locator(".genlm-pg-code textarea.genlm-code-text")
    assert box.is_visible()
    code = box.input_value()
    if "clipboard" in _text(page, ".genlm-pg-code .genlm-code-note"):
        assert page.evaluate("() => navigator.clipboard.readText()") == code
    else:  # refused: the box is shown with all of its code selected
        selected = page.evaluate(
            "() => { const b = document.querySelector('.genlm-pg-code textarea');"
            " return b.value.slice(b.selectionStart, b.selectionEnd); }"
        )
        assert selected == code
    return code


def _panels(page, kind: str) -> dict:
    """Every panel after a run of `kind`: waits for that run's mask (drawn at its end)."""
    _wait_text(page, ".genlm-pg-mask-head", f"({kind} run)")
    mask = page.locator(".genlm-pg-mask .genlm-live.genlm-mask")
    mask.locator("table thead").first.wait_for(timeout=60_000)
    page.locator(".genlm-pg-profile table").first.wait_for(timeout=60_000)
    return {
        "status": _text(page, ".genlm-pg-status"),
        "rows": page.locator(".genlm-pg-particles tbody tr[data-index]").count(),
        "mask": mask.locator("table thead").first.text_content(),
        "profile": _text(page, ".genlm-pg-profile"),
        "particles": _text(page, ".genlm-pg-particles"),
        "code": _copied_code(page),
        "label": _text(page, ".genlm-pg-code .genlm-code-label"),
    }


def test_regex_then_json_then_regex_every_panel_shows_its_own_run(browser, notebook):
    context, page = open_page(browser, width=1300, height=2600)
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    notebook(page, "playground_switch", SWITCH_CELL, workspace="switch")
    page.locator(".genlm-playground").wait_for(timeout=120_000)

    # before any run: a true idle line, no empty numbers, no profile hint
    _wait_text(page, ".genlm-pg-status", "no run yet")
    assert not page.locator(".genlm-pg-particles").is_visible()
    assert not page.locator(".genlm-pg-profile").is_visible()
    body = page.locator(".genlm-playground").inner_text()
    assert "SMC running" not in body and "profile=True" not in body
    # the code box offers the form's code, greyed and labelled as never run
    _wait_text(page, ".genlm-pg-code .genlm-code-label", "not yet run", timeout=30_000)
    assert page.locator(".genlm-playground .genlm-code-not_run").count() == 1

    # an error is red, not plain black
    _type(page, ".genlm-pg-source textarea", "ab(c")
    _wait_text(page, ".genlm-pg-error", "column 3", timeout=30_000)
    colour = page.evaluate(
        "() => getComputedStyle(document.querySelector('.genlm-pg-error .genlm-error')).color"
    )
    red, green, _ = (int(x) for x in colour[colour.index("(") + 1 : -1].split(",")[:3])
    assert red > 150 and green < 100, colour
    _type(page, ".genlm-pg-source textarea", "[a-z]{3}")

    runs = []
    for kind, source, needle, other in (
        ("regex", "[a-z]{3}", "BoolFSA", "JsonSchema"),
        ("json_schema", '{"type": "integer"}', "JsonSchema", "BoolFSA"),
        ("regex", "[a-z]{2}", "BoolFSA", "JsonSchema"),
    ):
        page.locator(".genlm-pg-kind select").select_option(kind)
        _type(page, ".genlm-pg-source textarea", source)
        page.locator("button.genlm-pg-run-button").click()
        panels = _panels(page, kind)
        runs.append(panels)
        assert "this code reproduces the run shown" in panels["label"]
        assert needle in panels["mask"] and other not in panels["mask"], panels["mask"]
        assert needle in panels["code"] and other not in panels["code"]
        assert (source if kind == "regex" else "integer") in panels["code"]
        assert panels["rows"] == 3 and "3 particles" in panels["status"], panels
        assert "profile=True" not in panels["profile"] and "step" in panels["profile"]
        assert "SMC finished" in panels["particles"] or "SMC all_dead" in panels["particles"]
    assert runs[0]["code"] != runs[1]["code"] != runs[2]["code"]

    # the form changes after the run: the code stays the run's, marked, and no copy is claimed
    assert "copied" in _text(page, ".genlm-pg-code .genlm-code-note")
    page.locator(".genlm-pg-seed input").fill("41")
    page.locator(".genlm-pg-seed input").press("Enter")
    _wait_text(page, ".genlm-pg-code .genlm-code-label", "the form has changed since the run")
    # The kernel sends the new label and the cleared note as two messages: wait for both.
    page.wait_for_function(
        "sel => !((document.querySelector(sel) || {}).textContent || '').trim()",
        arg=".genlm-pg-code .genlm-code-note",
        timeout=30_000,
    )
    box = page.locator(".genlm-pg-code textarea.genlm-code-text")
    assert box.input_value() == runs[2]["code"] and "seed=41" not in box.input_value()
    errors = [e for e in page.console_errors if not NOISE.search(e)]
    assert not errors, errors
    context.close()
