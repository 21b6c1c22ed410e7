"""Page helpers shared by the browser tests: open a notebook, run it, read the views.

`views.ipynb` prints the numbers each view should draw (from the kernel's own
data); `check_views` compares the live widgets in the page with them, in any
Jupyter front end that runs it (JupyterLab 4, Notebook 7).
"""

from __future__ import annotations

import re
import time

# HTTP noise unrelated to the views: the front end asks the server for optional
# endpoints (e.g. /api/nbconvert, which fails where an nbconvert exporter is
# broken). The views load no resources, so their errors are never of this kind.
NOISE = re.compile(r"^Failed to load resource: the server responded with a status of")

_KERNEL_READY = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.connectionStatus === "connected" && k.status === "idle";
}"""


def open_and_run_all(page, url: str) -> None:
    """Open a notebook URL, wait for its kernel, and start running every cell."""
    page.goto(url)
    page.wait_for_function("window.jupyterapp && window.jupyterapp.shell", timeout=60_000)
    page.wait_for_selector(".jp-Notebook .jp-Cell", state="attached", timeout=60_000)
    page.wait_for_function(_KERNEL_READY, timeout=90_000)
    # Start the command without awaiting its promise (it resolves when all cells end).
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")


_ALL_RAN = """() => {
  const root = window.jupyterapp.shell.currentWidget.node;
  const errors = [...root.querySelectorAll('.jp-OutputArea-output')]
    .map((o) => o.textContent).filter((t) => t.includes('Traceback'));
  if (errors.length) return 'error: ' + errors[0].slice(0, 2000);
  const prompts = [...root.querySelectorAll('.jp-CodeCell .jp-InputPrompt')];
  return prompts.length > 0 && prompts.every((p) => /\\[\\d+\\]/.test(p.textContent)) && 'done';
}"""


def all_cells_ran(page, timeout_ms: int = 480_000) -> str:
    """Wait until every code cell has run (or one shows a traceback): "done", or "error: ..."."""
    return page.wait_for_function(_ALL_RAN, timeout=timeout_ms, polling=1000).json_value()


def printed(page, key: str) -> list[int]:
    """The integers a cell printed after `key` (e.g. "BEAM ROWS 3")."""
    loc = page.locator(f".jp-OutputArea-output >> text=/^{key} /")
    loc.first.wait_for(timeout=90_000)
    return [int(x) for x in loc.first.text_content().split()[len(key.split()) :]]


def _weights(page) -> list[str]:
    """Weights shown by the first particle view (the smc_standard run)."""
    return page.locator(".genlm-live.genlm-particles").first.evaluate(
        "el => [...el.querySelectorAll('.genlm-weight')].map(e => e.textContent)"
    )


def check_views(page, screenshot, shot_prefix: str = "") -> dict:
    """Check every live view of a running `views.ipynb` against what its kernel printed.

    Returns the views' locators (`trie`, `beam`, `particles`, `monitor`) and the
    genealogy's step count `n_steps`, for checks specific to one front end.
    """
    # TrieView: the graphviz SVG is drawn, one SVG node per subtrie node.
    trie = page.locator(".genlm-live.genlm-trie")
    (n_nodes,) = printed(page, "TRIE NODES")
    assert trie.locator(".genlm-graph svg g.node").count() == n_nodes
    assert trie.locator("script").count() == 0
    screenshot(trie, f"{shot_prefix}trie_view")

    # BeamDebugger: one table row per candidate, committed tokens drawn as boxes.
    beam = page.locator(".genlm-live.genlm-beam")
    (n_rows,) = printed(page, "BEAM ROWS")
    assert beam.locator("table").first.locator("tbody tr").count() == n_rows
    assert "4 / 16 bytes read" in beam.locator(".genlm-status").text_content()
    assert beam.locator(".genlm-tok").count() > 0
    screenshot(beam, f"{shot_prefix}beam_view")

    # ParticleView while the SMC cell runs: one row per particle, weights move.
    page.wait_for_selector(".genlm-live.genlm-particles tbody tr", timeout=90_000)
    first = _weights(page)
    time.sleep(1.0)
    second = _weights(page)
    assert len(first) == 8 and len(second) == 8, (first, second)
    assert first != second, "particle weights did not change while the SMC cell ran"

    page.wait_for_selector(".jp-OutputArea-output >> text=ALL CELLS DONE", timeout=120_000)
    n_dots, n_lines, n_steps = printed(page, "GENEALOGY")
    particles = page.locator(".genlm-live.genlm-particles").first
    assert "finished" in particles.locator(".genlm-status").text_content()
    assert particles.locator("tbody tr[data-index]").count() == 8  # rows, not draws
    assert particles.locator("svg.genlm-genealogy circle").count() == n_dots
    assert particles.locator("svg.genlm-genealogy line").count() == n_lines

    # smc_steer's view: every candidate in the table, the cut in the heading, and
    # one genealogy line from each candidate to the kept particle it came from.
    n_candidates, n_kept, n_steer_lines, n_steer_steps = printed(page, "STEER")
    steer = page.locator(".genlm-live.genlm-particles").nth(1)
    heading = steer.locator(".genlm-status").text_content()
    assert f"{n_candidates} candidates, {n_kept} kept" in heading, heading
    assert steer.locator("tbody tr[data-index]").count() == n_candidates
    assert steer.locator("svg.genlm-genealogy line").count() == n_steer_lines
    # A last-round candidate's lineage runs back through one particle per step.
    steer.locator(
        f"svg.genlm-genealogy circle[data-step='{n_steer_steps - 1}'][data-index='0']"
    ).click()
    assert steer.locator("svg.genlm-genealogy circle.genlm-hl").count() == n_steer_steps
    assert steer.locator("svg.genlm-genealogy line.genlm-hl").count() == n_steer_steps - 1
    screenshot(steer, f"{shot_prefix}steer_view")

    (queries,) = printed(page, "QUERIES")
    monitor = page.locator(".genlm-live.genlm-monitor")
    assert monitor.locator("td").all_text_contents()[:2] == ["queries", str(queries)]
    screenshot(monitor, f"{shot_prefix}backend_monitor")

    # A control reaches the kernel and the view redraws: the beam's step button.
    beam.locator("button.genlm-step").click()
    page.wait_for_function(
        "() => document.querySelector('.genlm-live.genlm-beam .genlm-status')"
        ".textContent.includes('5 / 16')",
        timeout=30_000,
    )
    return {
        "trie": trie,
        "beam": beam,
        "particles": particles,
        "monitor": monitor,
        "n_steps": n_steps,
    }
