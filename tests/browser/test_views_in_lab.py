"""Open tests/browser/views.ipynb in a real JupyterLab, run all cells, read the DOM."""

from __future__ import annotations

import re
import time

# HTTP noise unrelated to the views: JupyterLab asks the server for optional
# endpoints (e.g. /api/nbconvert, which fails where an nbconvert exporter is
# broken). The views load no resources, so their errors are never of this kind.
_NOISE = re.compile(r"^Failed to load resource: the server responded with a status of")


_KERNEL_READY = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.connectionStatus === "connected" && k.status === "idle";
}"""


def _run_all(page, lab, name: str) -> None:
    base, token, _ = lab
    page.goto(f"{base}/lab/tree/{name}?token={token}")
    page.wait_for_function("window.jupyterapp && window.jupyterapp.shell", timeout=60_000)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    page.wait_for_function(_KERNEL_READY, timeout=90_000)
    # Start the command without awaiting its promise (it resolves when all cells end).
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")


def _weights(page) -> list[str]:
    return page.eval_on_selector_all(
        ".genlm-live.genlm-particles .genlm-weight", "els => els.map(e => e.textContent)"
    )


def test_views_draw_live_and_console_is_clean(page, lab, screenshot):
    _run_all(page, lab, "views.ipynb")

    # While the SMC cell runs: one row per particle, and the weights move.
    page.wait_for_selector(".genlm-live.genlm-particles tbody tr", timeout=90_000)
    first = _weights(page)
    time.sleep(1.0)
    second = _weights(page)
    assert len(first) == 8 and len(second) == 8, (first, second)
    assert first != second, "particle weights did not change while the SMC cell ran"
    status = page.text_content(".genlm-live.genlm-particles .genlm-status")
    assert "running" in status

    page.wait_for_selector(".jp-OutputArea-output >> text=ALL CELLS DONE", timeout=90_000)
    particles = page.locator(".genlm-live.genlm-particles")
    assert "finished" in particles.locator(".genlm-status").text_content()
    assert particles.locator("tbody tr").count() == 8
    # The genealogy draws one dot per particle and step, and lines to ancestors.
    assert particles.locator("svg.genlm-genealogy circle").count() == 30 * 8
    assert particles.locator("svg.genlm-genealogy line").count() == 29 * 8
    assert "resampled at step 9, 19, 29" in particles.locator(".genlm-resampled").text_content()
    # Token text is shown, not injected.
    assert particles.locator("script").count() == 0
    # Clicking a dot highlights its lineage back to step 0.
    particles.locator("svg.genlm-genealogy circle[data-step='29'][data-index='3']").click()
    assert particles.locator("svg.genlm-genealogy circle.genlm-hl").count() == 30
    assert particles.locator("svg.genlm-genealogy line.genlm-hl").count() == 29
    screenshot(particles, "particle_view")

    monitor = page.locator(".genlm-live.genlm-monitor")
    cells = monitor.locator("td").all_text_contents()
    assert cells[:2] == ["queries", "5"], cells
    screenshot(monitor, "backend_monitor")

    errors = [e for e in page.console_errors if not _NOISE.search(e)]
    assert not errors, errors
