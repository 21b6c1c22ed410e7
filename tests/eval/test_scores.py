"""Score names: a graded domain (molecules: QED) is labelled as such in the table, figure and view."""

import pandas as pd

from genlm_lab.eval.domains import DOMAINS
from genlm_lab.eval.paper import paper_table
from genlm_lab.eval.plot import plot_accuracy_cost
from genlm_lab.eval.results_html import results_data, results_html
from genlm_lab.eval.scores import SCORE_NAMES, domain_title, score_name


def test_only_known_domains_are_named_and_the_rest_are_accuracies():
    assert set(SCORE_NAMES) <= set(DOMAINS)
    assert score_name("molecular_synthesis") == "QED" and score_name("spider") == "accuracy"
    assert domain_title("molecular_synthesis") == "molecular_synthesis (QED)"
    assert domain_title("spider") == "spider"


def _runs():
    return pd.DataFrame(
        {
            "model": ["m", "m"],
            "method": ["lcd", "lcd"],
            "domain": ["molecular_synthesis", "spider"],
            "instance_id": ["0", "0"],
            "weighted_accuracy": [0.42, 1.0],
            "status": ["finished", "finished"],
            "runtime_seconds": [1.0, 1.0],
            "finished_at": [10.0, 20.0],
            "lm_requests": [3, 3],
        }
    )


def test_the_table_and_the_figure_name_the_qed():
    table = paper_table(_runs())
    assert "molecular_synthesis QED [95% CI]" in table.columns
    assert "spider accuracy [95% CI]" in table.columns
    fig = plot_accuracy_cost(_runs())
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == ["molecular_synthesis (QED)", "spider"]


def test_the_view_and_the_report_label_the_domain_with_its_score():
    data = results_data(_runs())
    labels = {r["domain"]: r["domain_label"] for r in data["summary"]}
    assert labels == {"molecular_synthesis": "molecular_synthesis (QED)", "spider": "spider"}
    html = results_html(data)
    assert "<td>molecular_synthesis (QED)</td>" in html and "<td>spider</td>" in html
    assert "molecular_synthesis (QED)</text>" in data["scatter_svg"]
