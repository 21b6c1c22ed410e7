"""`genlm-lab eval run | report | merge` end to end on tiny-random."""

import pytest

from genlm_lab.cli import main
from genlm_lab.eval import ResultsStore


def test_run_report_merge(tmp_path, capsys):
    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    common = [
        "eval",
        "run",
        "json_schema",
        "--method",
        "smc:n_particles=2,max_tokens=5",
        "--method",
        "base:n_particles=2",
        "--limit",
        "4",
        "--model",
        "tiny-random",
        "--max-tokens",
        "5",
    ]
    assert main([*common, "--db", str(a), "--shard", "0/2"]) == 0
    assert main([*common, "--db", str(b), "--shard", "1/2"]) == 0
    out = capsys.readouterr().out
    assert "smc on json_schema with tiny-random: weighted accuracy" in out
    merged = tmp_path / "all.sqlite"
    assert main(["eval", "merge", str(merged), str(a), str(b)]) == 0
    with ResultsStore(merged) as store:
        runs = store.runs_frame()
    assert len(runs) == 8 and sorted(runs["method"].unique()) == ["base", "smc"]
    assert runs.groupby("method")["instance_id"].nunique().tolist() == [4, 4]
    assert "error" not in set(runs["status"])  # each run keeps its own status (finished, all_dead)
    report = tmp_path / "r.html"
    assert main(["eval", "report", str(merged), "-o", str(report)]) == 0
    assert "Evaluation report" in report.read_text()


@pytest.mark.parametrize(
    "args, message",
    [
        (["eval", "run", "json_schema", "--method", "nope", "--db", "x.sqlite"], "bad method"),
        (
            ["eval", "run", "json_schema", "--method", "smc", "--db", "x.sqlite", "--shard", "3/2"],
            "shard",
        ),
        (["eval", "report", "missing.sqlite"], "no results store"),
    ],
)
def test_bad_input_is_one_line(args, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(args) == 2
    assert message in capsys.readouterr().err
