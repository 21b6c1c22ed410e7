"""The results table's HTML: accuracies and their intervals read alike, row by row."""

import re

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
        nums = re.findall(r"<span class='genlm-num'>([^<]*)</span></td><td class='genlm-num'>"
                          r"([^<]*)</td>", row.group(0))  # fmt: skip
        cells[method] = nums[0]
    assert cells["exact"] == cells["noisy"] == ("1.000", "[1.000, 1.000]")
    assert cells["half"] == ("0.500", "[0.500, 0.500]")


def test_each_runs_accuracy_has_three_decimals_too():
    page = results_html(results_data(_runs("exact", 1.0) + _runs("noisy", sum([0.1] * 10))))
    rows = re.findall(r"<tr data-run-id='[^']*'.*?</tr>", page)
    assert len(rows) == 6
    for row in rows:
        assert re.findall(r"<td class='genlm-num'>([^<]*)</td>", row)[1] == "1.000", row
