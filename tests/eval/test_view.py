"""ResultsView: its data against the store, static HTML, live rows, opening a run; the offline report."""

import re

import pytest
from _eval_toys import toy_domain, toy_lm

from genlm_lab.eval import (
    Method,
    ResultsStore,
    ResultsView,
    report_html,
    results_data,
    run_evaluation,
    summarize,
)
from genlm_lab.widgets import ParticleView


@pytest.fixture
async def store(tmp_path):
    domain = toy_domain(["a+b", "(ab)+", "c?a+", "<script>x"])
    lm = toy_lm()
    s = ResultsStore(tmp_path / "runs.sqlite")
    for kind in ("smc", "base"):
        method = Method(kind=kind, n_particles=4, max_tokens=4)
        await run_evaluation(
            domain.dataset, method.adaptor(domain, lm), domain.evaluator, store=s, domain="toy"
        )
    yield s
    s.close()


def test_summary_rows_come_from_the_store(store):
    data = results_data(store)
    expected = summarize(store, n_bootstrap=2000)
    assert [(r["method"], r["weighted_accuracy"]) for r in data["summary"]] == list(
        zip(expected["method"], expected["weighted_accuracy"], strict=True)
    )
    assert data["n_runs"] == 8 and len(data["runs"]) == 8
    accs = [r["weighted_accuracy"] for r in data["runs"] if r["status"] == "ok"]
    assert accs == sorted(accs)  # worst first


async def test_live_rows_arrive_as_runs_finish_and_a_click_opens_the_run(tmp_path):
    domain = toy_domain(["a+b", "(ab)+", "[ab]{2}"])
    s = ResultsStore(tmp_path / "live.sqlite")
    view = ResultsView(s)
    seen = []

    def on_result(row):
        view.add(row)
        seen.append(view.view_data()["n_runs"])

    method = Method(kind="awrs_smc", n_particles=3, max_tokens=4)
    await run_evaluation(
        domain.dataset,
        method.adaptor(domain, toy_lm()),
        domain.evaluator,
        store=s,
        on_result=on_result,
    )
    assert seen == [1, 2, 3]
    run_id = view.view_data()["runs"][0]["run_id"]
    view.selected_run = run_id  # what a click in the browser does
    selected = view.view_data()["selected"]
    assert selected["run_id"] == run_id
    opened = view.open_run(run_id)
    assert isinstance(opened, ParticleView)
    assert len(opened.view_data()["particles"]) == 3  # the stored particles
    assert selected["html"] == ParticleView.to_html(opened.view_data())
    s.close()


def test_static_html_escapes_instance_text(store):
    html = ResultsView(store)._repr_html_()
    assert "<script>" not in html
    assert "genlm-results" in html


def test_report_opens_offline(store):
    page = report_html(store)
    assert page.startswith("<!DOCTYPE html>")
    # No scripts, stylesheets, images or frames from anywhere; only in-page links.
    assert not re.search(r"<(script|link|img|iframe|object|embed)\b", page, re.I)
    assert not re.search(r"@import|url\((?!#)", page)  # url(#clip): a reference inside the page
    assert all(h.startswith("#") for h in re.findall(r"href=['\"]([^'\"]*)", page))
    assert not re.findall(r"src=", page)
    # Every http(s) string is an SVG namespace, which browsers never fetch.
    namespaces = {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}
    assert set(re.findall(r"https?://[^'\" >]*", page)) <= namespaces
    # Every run with a record is in the page, linked from its row.
    run_ids = store.runs_frame()["run_id"].tolist()
    for rid in run_ids:
        assert f"id='run-{rid}'" in page and f"href='#run-{rid}'" in page
