"""ResultsView: its data against the store, static HTML, live rows, opening a run; the offline report."""

import re

import pytest
from _eval_toys import toy_domain, toy_lm

from genlm_lab.eval import (
    Method,
    ResultsStore,
    ResultsView,
    results_data,
    run_evaluation,
    store_report_html,
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
    page = store_report_html(store)
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


async def test_a_run_whose_particles_all_died_is_stored_and_shown_as_such(tmp_path):
    domain = toy_domain(["z", "a+b"])  # no token spells "z": every particle dies
    s = ResultsStore(tmp_path / "dead.sqlite")
    method = Method(kind="smc", n_particles=3, max_tokens=4)
    with pytest.warns(RuntimeWarning, match="weight zero"):
        await run_evaluation(
            domain.dataset, method.adaptor(domain, toy_lm()), domain.evaluator, store=s
        )
    runs = s.runs_frame().set_index("instance_id")
    assert runs.loc["0", "status"] == "all_dead" and runs.loc["1", "status"] == "finished"
    summary = summarize(s, n_bootstrap=100)
    assert summary["n_unfinished"].tolist() == [1] and summary["n_errors"].tolist() == [0]
    data = results_data(s)
    assert data["runs"][0]["status"] == "all_dead"  # unfinished runs come before finished ones
    view = ResultsView(s)
    html = view._repr_html_()
    assert "all_dead" in html
    view.open_run(int(runs.loc["0", "run_id"]))
    assert "all_dead" in view.view_data()["selected"]["title"]
    assert "SMC all_dead" in view.view_data()["selected"]["html"]
    s.close()


def test_rows_name_their_model_and_show_the_instance_content(store):
    data = results_data(store)
    assert {r["model"] for r in data["runs"]} == {"ToyLM(seed=3)"}
    assert {r["instance"] for r in data["runs"]} == {"a+b", "(ab)+", "c?a+", "<script>x"}
    html = ResultsView(store)._repr_html_()
    assert "(ab)+" in html and "ToyLM(seed=3)" in html


def test_a_stored_run_renders_what_the_live_particle_view_shows(store):
    from genlm_lab.eval.report import run_html

    for run_id in store.runs_frame()["run_id"]:
        record = store.record(int(run_id))
        live = ParticleView.from_record(record)
        assert run_html(store, int(run_id)) == ParticleView.to_html(live.view_data())
    smc = store.runs_frame().query("method == 'smc'")["run_id"]
    # a run that took steps ("<script>x" cannot end: under the default budget it starts dead)
    stepped = [int(r) for r in smc if store.record(int(r)).steps]
    assert stepped
    html = run_html(store, stepped[0])
    assert "log w " in html  # a factor column of control.SMC's particles


def test_each_report_link_opens_its_own_run(store):
    page = store_report_html(store)
    assert ".genlm-run:target{display:block}" in page
    for run_id in store.runs_frame()["run_id"]:
        section = re.search(
            rf"<section class='genlm-run' id='run-{run_id}'>(.*?)</section>", page, re.S
        )
        assert section is not None
        assert f"Run #{run_id}:" in section.group(1) and "genlm-particles" in section.group(1)
    assert "Paired comparisons" in page and "Holm" in page
    assert len(re.findall(r"<svg[^>]*genlm-scatter", page)) == 1  # one accuracy-cost chart,
    assert 'id="figure_1"' not in page  # not also matplotlib's with another encoding
    assert "wall time per run (s)" in page and "NaN" not in page


def test_two_picked_rows_are_compared_and_several_comparisons_are_flagged(store):
    from genlm_lab.eval import compare

    view = ResultsView(store)
    view.compare_rows = [0, 1]  # what two clicks in the browser do
    comparison = view.view_data()["comparison"]
    summary = view.view_data()["summary"]
    expected = compare(
        store, *({k: summary[i][k] for k in ("model", "method", "domain")} for i in (0, 1))
    )
    assert comparison["a"] == expected.a and f"{expected.diff:+.3f}" in comparison["html"]
    assert "comparisons made here" not in comparison["html"]
    view.compare_rows = [1]
    view.compare_rows = [1, 0]
    assert "2 comparisons made here" in view.view_data()["comparison"]["html"]


def test_the_report_sizes_or_says_unsizeable_and_counts_in_the_singular(tmp_path):
    s = ResultsStore(tmp_path / "one.sqlite")
    for method, acc in (("a", sum([0.1] * 10)), ("b", 1.0)):
        for i in range(3):
            s.write_run(
                {
                    "run_key": f"{method}{i}",
                    "method_hash": s.put_method(method, {"kind": method}),
                    "domain": "d",
                    "instance_id": str(i),
                    "replicate": 0,
                    "status": "finished",
                    "weighted_accuracy": acc,
                    "runtime_seconds": 1.0,
                    "lm_requests": 2,
                },
                [],
            )
    page = store_report_html(s)
    s.close()
    assert "1 pair compared" in page and "1 pairs" not in page
    assert "unsizeable (3 pairs cannot detect even a difference of 1)" in page
    assert "NaN" not in page
    row = re.search(r"<tr><td>d</td><td>a @ model unknown</td>.*?</tr>", page).group(0)
    assert "<td class='genlm-num'>+0.000</td>" in row  # ties: float noise is no difference


def test_live_rows_get_their_wall_time_and_the_cell_says_what_it_divides():
    view = ResultsView()
    for i in range(3):  # what run_evaluation(on_result=view.add) passes: no finish time
        view.add(
            {
                "run_id": i,
                "model": "m",
                "method": "smc",
                "domain": "d",
                "instance_id": str(i),
                "replicate": 0,
                "status": "finished",
                "weighted_accuracy": 1.0,
                "runtime_seconds": 0.5,
                "lm_requests": 4,
            }
        )
    view.refresh()
    (row,) = view.view_data()["summary"]
    assert 0.5 <= row["wall_seconds"] < 1.5 and row["wall_per_run"] == row["wall_seconds"] / 3
    assert "s of wall time over 3 runs" in ResultsView.to_html(view.view_data())


async def test_the_live_view_summarize_and_the_report_read_one_store_alike(tmp_path):
    """Cost per run, accuracy and interval: the same numbers, live or from the store, and a
    re-run that reuses the stored runs does not count them twice."""
    domain = toy_domain(["a+b", "(ab)+", "c?a+"])
    s = ResultsStore(tmp_path / "same.sqlite")
    view = ResultsView(s)
    keys = ("method", "n_runs", "weighted_accuracy", "ci_low", "ci_high", "wall_per_run")
    for _ in range(2):  # the second pass reuses every stored run
        for kind in ("smc", "base"):
            method = Method(kind=kind, n_particles=3, max_tokens=4)
            await run_evaluation(
                domain.dataset,
                method.adaptor(domain, toy_lm()),
                domain.evaluator,
                store=s,
                domain="toy",
                max_concurrency=3,
                on_result=view.add,
            )
        stored = [[r[k] for k in keys] for r in summarize(s).to_dict("records")]
        assert [[r[k] for k in keys] for r in view.view_data()["summary"]] == stored
        assert [[r[k] for k in keys] for r in results_data(s)["summary"]] == stored
        assert [r[1] for r in stored] == [3, 3]
    s.close()
