"""The results table's HTML: accuracies and their intervals read alike, row by row."""

import re

import numpy as np
from scipy import stats
from scipy.optimize import brentq

from genlm_lab.eval.results_html import results_data, results_html


def _runs(method: str, accuracy: float) -> list[dict]:
    return [
        {
            "method": method,
            "domain": "d",
            "instance_id": str(i),
            "status": "finished",
            "weighted_accuracy": accuracy,
            "runtime_seconds": 1.0,
        }
        for i in range(3)
    ]


def test_exact_and_float_noise_ones_print_alike_with_three_decimals():
    runs = _runs("exact", 1.0) + _runs("noisy", sum([0.1] * 10)) + _runs("half", 0.5)
    page = results_html(results_data(runs))
    cells = {}
    for method in ("exact", "noisy", "half"):
        row = re.search(rf"<tr data-row='\d+'><td>[^<]*</td><td>{method}</td>.*?</tr>", page)
        nums = re.findall(r"<span class='genlm-num'>([^<]*)</span></td><td class='genlm-num'"
                          r"[^>]*>([^<]*)</td>", row.group(0))  # fmt: skip
        cells[method] = nums[0]
    wilson = stats.binomtest(3, 3).proportion_ci(method="wilson")  # three instances, all right
    assert cells["exact"] == cells["noisy"] == ("1.000", f"[{wilson.low:.3f}, 1.000]")
    z = stats.norm.ppf(0.975)  # three halves: the score interval at 0.5, p(1 - p) as the variance
    score = lambda p: abs(0.5 - p) - z * np.sqrt(p * (1 - p) / 3)  # noqa: E731
    low, high = brentq(score, 1e-9, 0.5), brentq(score, 0.5, 1 - 1e-9)
    assert cells["half"] == ("0.500", f"[{low:.3f}, {high:.3f}]")


def test_each_interval_states_its_method_and_the_table_says_how_intervals_are_made():
    page = results_html(results_data(_runs("exact", 1.0) + _runs("half", 0.5)))
    assert "title='95% interval over 3 instances: Wilson score interval (0/1 scores" in page
    assert "title='95% interval over 3 instances: Wilson score interval at the mean" in page
    assert "genlm-ci-note" in page and "two instances give a wide interval" in page


def test_each_runs_accuracy_has_three_decimals_too():
    page = results_html(results_data(_runs("exact", 1.0) + _runs("noisy", sum([0.1] * 10))))
    rows = re.findall(r"<tr data-run-id='[^']*'.*?</tr>", page)
    assert len(rows) == 6
    for row in rows:
        assert re.findall(r"<td class='genlm-num'>([^<]*)</td>", row)[1] == "1.000", row
