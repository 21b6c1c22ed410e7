"""ResultsView live in a real JupyterLab: rows arrive while runs finish, a click opens a run.

The notebook evaluates a ToyLM with a regex constraint on six patterns, one
at a time with a short sleep per instance, so rows can be seen arriving;
then a click on a row asks the kernel for that run's stored particles.
"""

from __future__ import annotations

import re
import time

from _views_page import NOISE, all_cells_ran, printed

SETUP = """import asyncio, tempfile
from pathlib import Path

from IPython.display import display

from genlm_lab.backend import ToyLM
from genlm_lab.control import PythonRegex
from genlm_lab.eval import Domain, Method, ResultsStore, ResultsView, run_evaluation
from genlm_lab.eval.domains.pattern_matching import PatternMatchingDataset, PatternMatchingEvaluator


class Toy(Domain):
    name = "toy"
    eos = (b"<eos>",)

    def prompt(self, instance):
        return ""

    def constraint(self, instance):
        return PythonRegex(instance.pattern)


lm = ToyLM([b"a", b"b", b"ab", b"c", b"<eos>"], seed=3, eos=b"<eos>")
domain = Toy(PatternMatchingDataset(["a+b", "(ab)+", "c?a+", "[ab]{2}", "a|b", "c+"]), PatternMatchingEvaluator())
store = ResultsStore(Path(tempfile.mkdtemp()) / "runs.sqlite")
view = ResultsView(store)
display(view)"""

RUN = """adaptor = Method(kind="awrs_smc", n_particles=4, max_tokens=5).adaptor(domain, lm)


async def slow(instance, output_dir, replicate):
    await asyncio.sleep(1.0)
    return await adaptor(instance, output_dir, replicate)


slow.config = adaptor.config
await run_evaluation(domain.dataset, slow, domain.evaluator, store=store, domain="toy",
                     max_concurrency=1, on_result=view.add)
print("RUNS", len(store.to_pandas("runs")), int(store.runs_frame()["run_id"].min()))"""


def test_results_view_rows_arrive_live_and_a_click_opens_the_run(page, notebook, screenshot):
    notebook(page, "results_view", SETUP, RUN, workspace="results")

    view = page.locator(".genlm-live.genlm-results")
    view.wait_for(timeout=120_000)
    rows = view.locator("tr.genlm-run-row")
    rows.first.wait_for(timeout=120_000)
    seen = [rows.count()]
    deadline = time.time() + 120
    while seen[-1] < 6 and time.time() < deadline:
        time.sleep(0.5)
        seen.append(rows.count())
    assert seen[-1] == 6
    assert len(set(seen)) >= 3, f"rows did not arrive one by one: {seen}"
    assert all_cells_ran(page) == "done"
    n_runs, _ = printed(page, "RUNS")
    assert n_runs == 6
    # accuracies as the static report writes them: "[1.000, 1.000]", never "[1.000, 1]"
    cells = view.locator("table.genlm-table").first.locator("tbody tr").first.locator("td")
    assert re.fullmatch(r"\d\.\d{3}", cells.nth(3).locator(".genlm-num").text_content())
    assert re.fullmatch(r"\[\d\.\d{3}, \d\.\d{3}\]", cells.nth(4).text_content())

    # A click opens that run's stored particles under the table (the kernel answers).
    rows.first.click()
    selected = view.locator(".genlm-selected")
    selected.wait_for(timeout=60_000)
    run_id = rows.first.get_attribute("data-run-id")
    assert f"Run #{run_id}" in view.text_content()
    assert selected.locator("table tbody tr[data-index]").count() == 4  # the run's 4 particles
    screenshot(view, "results_view")

    errors = [e for e in page.console_errors if not NOISE.search(e)]
    assert not errors, errors
