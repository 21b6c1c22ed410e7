"""The papers' table: the preset on several domains into one store, resumed, read back, written."""

import math

import pandas as pd
import pytest

from genlm_lab.backend import load_model_by_name
from genlm_lab.cli import main
from genlm_lab.eval import ResultsStore
from genlm_lab.eval.paper import paper_table, run_paper, write_paper_table
from genlm_lab.eval.presets import preset

LABELS = ["base-lm", "lcd", "sample-rerank", "twisted-smc", "awrs-smc"]


@pytest.fixture(scope="module")
def tiny():
    return load_model_by_name("tiny-random", backend="hf")


async def test_the_preset_fills_every_cell_and_a_second_run_reuses_every_run(tiny, tmp_path):
    db = tmp_path / "paper.sqlite"
    common = dict(
        limit=1,
        domains=("pattern_matching", "spider"),
        max_tokens=5,
        load_model=lambda name: tiny,
        models=("tiny-random",),
        progress=False,
        log=None,
    )
    table = await run_paper(db, **common)
    assert table["method"].tolist() == LABELS and set(table["model"]) == {"tiny-random"}
    for domain in ("pattern_matching", "spider"):
        assert "n/a" not in set(table[f"{domain} accuracy [95% CI]"])
        assert set(table[f"{domain} n"]) == {1}
    with ResultsStore(db) as store:
        runs = store.runs_frame()
    assert len(runs) == 5 * 2 * 2  # methods x domains x replicates (one instance each)
    assert "error" not in set(runs["status"])
    assert set(runs["method"]) == set(LABELS)

    lines = []
    again = await run_paper(db, **{**common, "log": lines.append})
    with ResultsStore(db) as store:
        assert len(store.runs_frame()) == 20  # nothing ran twice
    pd.testing.assert_frame_equal(
        again.drop(columns=[c for c in again if c.endswith("s/run")]),
        table.drop(columns=[c for c in table if c.endswith("s/run")]),
    )
    assert len(lines) == 10 and all(" with tiny-random: " in line for line in lines)

    paths = write_paper_table(db, tmp_path / "out" / "paper-table")
    text = paths["markdown"].read_text()
    assert all(f"| {label} |" in text for label in LABELS) and "Wilson" in text
    assert "<table" in paths["html"].read_text()
    assert paths["figure"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _runs(rows):
    frame = pd.DataFrame(
        rows, columns=["model", "method", "domain", "instance_id", "weighted_accuracy"]
    )
    frame["status"] = "finished"
    frame["runtime_seconds"] = 2.0
    frame["finished_at"] = [10.0 * (i + 1) for i in range(len(frame))]  # runs do not overlap
    frame["lm_requests"] = 3
    return frame


def test_the_table_reads_each_cell_from_its_own_runs():
    runs = _runs(
        [
            ("m", "awrs-smc", "spider", 0, 1.0),
            ("m", "awrs-smc", "spider", 0, 0.0),  # a second replicate: the instance scores 0.5
            ("m", "awrs-smc", "spider", 1, 1.0),
            ("m", "lcd", "spider", 0, 0.0),
            ("m", "lcd", "json_schema", 0, 1.0),
            ("m", "not-in-the-preset", "spider", 0, 1.0),
        ]
    )
    table = paper_table(runs, preset("awrs-colm-2025")).set_index("method")
    assert table.index.tolist() == LABELS  # the preset's rows, in order; nothing else
    assert table.loc["awrs-smc", "spider accuracy [95% CI]"].startswith("0.750 [")
    assert table.loc["awrs-smc", "spider n"] == 2
    assert table.loc["awrs-smc", "spider s/run"] == 2.0  # 6 s of wall over 3 runs
    assert table.loc["lcd", "spider accuracy [95% CI]"].startswith("0.000 [")
    assert table.loc["lcd", "json_schema accuracy [95% CI]"].startswith("1.000 [")
    assert table.loc["base-lm", "spider accuracy [95% CI]"] == "n/a"
    assert table.loc["awrs-smc", "json_schema n"] == 0
    assert list(table.columns[1:4]) == [f"spider {c}" for c in ("accuracy [95% CI]", "s/run", "n")]


def test_eval_paper_refuses_a_bad_limit_before_loading_anything(capsys):
    assert main(["eval", "paper", "--limit", "0"]) == 2
    assert "--limit must be >= 1" in capsys.readouterr().err


def test_a_domain_cell_is_not_a_number_where_every_run_failed():
    runs = _runs([("m", "lcd", "spider", 0, math.nan)])
    runs["status"] = "error"
    table = paper_table(runs).set_index("method")
    assert table.loc["lcd", "spider accuracy [95% CI]"] == "n/a"
