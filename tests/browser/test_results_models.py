"""ResultsView with 2 models x 6 methods x 3 domains in JupyterLab: a readable scatter, two rows compared.

The notebook feeds the view synthetic runs (no model needed); the browser
checks the accuracy-versus-runtime chart as drawn (ticks, axis labels, no
text over another, none cut off), then picks two summary rows and waits for
the kernel's paired comparison. A second test opens the offline report in
chromium and follows a run link: the run opens.

The chart and comparison screenshots go to tests/browser/screenshots/; they
replace the docs' pictures only by hand: `GENLM_LAB_DOCS_IMAGES=1 pytest
tests/browser/test_results_models.py` (make test writes nothing tracked).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from _views_page import NOISE, all_cells_ran

DOCS_IMAGES = Path(__file__).parents[2] / "docs" / "images"

SETUP = """import numpy as np
from IPython.display import display

from genlm_lab.eval import ResultsView

rng = np.random.default_rng(0)
view = ResultsView()
run_id = 0
for model, skill in (("default", 0.6), ("tiny-random", 0.2)):
    for k, method in enumerate(["base", "lcd", "sample_rerank", "smc", "awrs_smc", "smc_steer"]):
        for domain in ("pattern_matching", "json_schema", "spider"):
            for i in range(8):
                run_id += 1
                view.add({"run_id": run_id, "model": model, "method": method, "domain": domain,
                          "instance_id": str(i), "instance": f"instance {i}", "replicate": 0,
                          "status": "finished", "weighted_accuracy": float(rng.random() < skill + k / 20),
                          "runtime_seconds": float(0.2 + k * 0.7 + rng.random()), "lm_requests": 10 * k,
                          "has_record": False})
view.refresh()
display(view)
print("SUMMARY", len(view.view_data()["summary"]))"""

_TEXTS = """svg => {
  const frame = svg.getBoundingClientRect();
  return [...svg.querySelectorAll('text')].map((t) => {
    const r = t.getBoundingClientRect();
    return {text: t.textContent, left: r.left - frame.left, top: r.top - frame.top,
            right: r.right - frame.left, bottom: r.bottom - frame.top,
            width: frame.width, height: frame.height};
  });
}"""


def test_the_scatter_reads_and_two_rows_are_compared(page, notebook, screenshot):
    notebook(page, "results_models", SETUP, workspace="models")
    assert all_cells_ran(page) == "done"
    view = page.locator(".genlm-live.genlm-results")
    view.wait_for(timeout=120_000)
    svg = view.locator("svg.genlm-scatter")
    svg.wait_for(timeout=60_000)
    boxes = svg.evaluate(_TEXTS)
    texts = [b["text"] for b in boxes]
    assert "weighted accuracy" in texts and texts.count("wall time per run (s)") == 3
    assert {"pattern_matching", "json_schema", "spider", "smc_steer", "tiny-random"} <= set(texts)
    assert sum(t.replace(".", "").isdigit() for t in texts) >= 12  # tick labels on both axes
    assert svg.locator(".genlm-point").count() == 36 + 2  # points, then the legend's models
    assert svg.locator(".genlm-swatch").count() == 6  # the legend's method colours
    for b in boxes:
        assert b["left"] >= -0.5 and b["top"] >= -0.5, f"{b['text']!r} is cut off"
        assert b["right"] <= b["width"] + 0.5 and b["bottom"] <= b["height"] + 0.5, b["text"]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            overlap = (
                a["left"] < b["right"] - 0.5
                and b["left"] < a["right"] - 0.5
                and a["top"] < b["bottom"] - 0.5
                and b["top"] < a["bottom"] - 0.5
            )
            assert not overlap, f"{a['text']!r} overlaps {b['text']!r}"

    rows = view.locator("table").first.locator("tbody tr")
    rows.nth(0).click()
    rows.nth(1).click()
    comparison = view.locator(".genlm-comparison")
    comparison.wait_for(timeout=60_000)
    assert "instances paired" in comparison.text_content()
    paired = comparison.locator("tr", has_text="instances paired").text_content()
    assert paired.endswith("8"), paired  # the 8 instances both rows ran
    for target, name in ((svg, "results_scatter_models"), (comparison, "results_compare")):
        target.scroll_into_view_if_needed()
        shot = screenshot(target, name)
        if os.environ.get("GENLM_LAB_DOCS_IMAGES") == "1":
            DOCS_IMAGES.mkdir(exist_ok=True)
            shutil.copy(shot, DOCS_IMAGES / f"{name}.png")
    errors = [e for e in page.console_errors if not NOISE.search(e)]
    assert not errors, errors


def test_a_report_link_opens_its_run(page, tmp_path):
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from _eval_page_toys import toy_report

    with ThreadPoolExecutor(1) as pool:  # playwright's own loop holds this thread
        path, run_id = pool.submit(asyncio.run, toy_report(tmp_path)).result()
    page.goto(path.as_uri())
    section = page.locator(f"#run-{run_id}")
    assert not section.is_visible()
    page.locator(f"a[href='#run-{run_id}']").first.click()
    section.wait_for(state="visible", timeout=10_000)
    assert f"Run #{run_id}:" in section.text_content()
    assert section.locator(".genlm-particles").count() == 1
