"""genlm_lab.eval.summary: accuracy per row, cost as wall time (not summed latency), tables for reading."""

import math

import pandas as pd
import pytest

from genlm_lab.eval.summary import summarize, summary_markdown, summary_table, wall_seconds


def _runs(method, starts, lengths, accs, requests=3):
    return [
        {
            "model": "m",
            "method": method,
            "domain": "d",
            "instance_id": str(i),
            "status": "finished",
            "weighted_accuracy": acc,
            "runtime_seconds": length,
            "finished_at": start + length,
            "lm_requests": requests,
        }
        for i, (start, length, acc) in enumerate(zip(starts, lengths, accs, strict=True))
    ]


def test_wall_time_is_the_union_of_the_runs_intervals():
    # [0, 10], [2, 12], [5, 8] overlap: 12 s; [100, 103] later: 3 s more, the gap not charged.
    assert wall_seconds([10, 12, 8, 103], [10, 10, 3, 3]) == pytest.approx(15.0)
    assert wall_seconds([], []) == 0.0
    assert math.isnan(wall_seconds([10, None], [1, 1]))


def test_concurrent_runs_cost_their_wall_time_not_their_summed_latency():
    # Six runs of 23 s each, all at once: 23 s of wall, 138 s of summed latency.
    frame = pd.DataFrame(
        _runs("awrs_smc", [0] * 6, [23.0] * 6, [1.0] * 6)
        + _runs("lcd", [0, 1, 2, 3, 4, 5], [1.0] * 6, [0.5] * 6)
    )
    s = summarize(frame, n_bootstrap=200).set_index("method")
    assert s.loc["awrs_smc", "wall_seconds"] == pytest.approx(23.0)
    assert s.loc["awrs_smc", "wall_per_run"] == pytest.approx(23.0 / 6)
    assert s.loc["awrs_smc", "runtime_mean"] == pytest.approx(23.0)  # one run's latency
    assert s.loc["lcd", "wall_seconds"] == pytest.approx(6.0)
    assert s.loc["lcd", "lm_requests_total"] == 18 and "runtime_total" not in s.columns


def test_summary_markdown_rounds_for_reading_and_the_data_keeps_full_precision():
    frame = pd.DataFrame(
        {"method": ["a", "b"], "x": [0.030000000000000006, 8.30734834294999], "n": [3, 4]}
    )
    text = summary_markdown(frame)
    assert "| a | 0.03 | 3 |" in text and "| b | 8.31 | 4 |" in text
    assert "0.030000000000000006" not in text and "8.307348" not in text
    assert frame["x"].iloc[0] == 0.030000000000000006
    assert "n/a" in summary_markdown(pd.DataFrame({"x": [math.nan]}))


def test_summary_table_shows_wall_time_and_latency_under_their_names():
    frame = pd.DataFrame(_runs("smc", [0, 0, 0], [0.1 + 0.2] * 3, [1.0, 0.0, 1.0]))
    table = summary_table(summarize(frame, n_bootstrap=200))
    assert list(table.columns[4:7]) == [
        "wall time per run (s)",
        "latency per run (s)",
        "LM requests per run",
    ]
    assert table["latency per run (s)"].iloc[0] == 0.3  # 0.30000000000000004 rounded
    assert table["wall time per run (s)"].iloc[0] == 0.1  # 0.3 s of wall over 3 runs


def test_the_interval_is_wilsons_over_instances_with_replicates_averaged_first():
    from scipy import stats

    rows = _runs("smc", [0, 0], [1.0, 1.0], [1.0, 1.0])  # two instances, both right
    rows += [dict(r, weighted_accuracy=0.0) for r in _runs("lcd", [0, 0], [1, 1], [0, 0])]
    twice = _runs("rr", [0, 0], [1.0, 1.0], [1.0, 0.0]) + _runs("rr", [0, 0], [1, 1], [1.0, 1.0])
    s = summarize(pd.DataFrame(rows + twice)).set_index("method")
    ref = stats.binomtest(2, 2).proportion_ci(method="wilson")
    assert (s.loc["smc", "ci_low"], s.loc["smc", "ci_high"]) == pytest.approx((ref.low, 1.0))
    assert (s.loc["lcd", "ci_low"], s.loc["lcd", "ci_high"]) == pytest.approx((0.0, 1 - ref.low))
    assert s.loc["smc", "ci_method"] == "Wilson score"
    # rr: instance 0 scored 1 and 1, instance 1 scored 0 and 1: per-instance means 1 and 0.5
    assert s.loc["rr", "weighted_accuracy"] == 0.75 and s.loc["rr", "n_runs"] == 4
    assert s.loc["rr", "ci_method"] == "Wilson score, variance bound"
    assert s.loc["rr", "ci_high"] - s.loc["rr", "ci_low"] > 0.5  # two instances: wide
