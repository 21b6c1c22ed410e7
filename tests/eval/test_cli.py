"""`genlm-lab eval run | report | merge` end to end on tiny-random."""

import pytest

from genlm_lab.cli import main
from genlm_lab.eval import ResultsStore


@pytest.mark.slow
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
    assert "2 instances, 0 errors, " in out and " s of wall time -> " in out  # plural; cost
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


@pytest.mark.slow  # two models through a whole `eval run` (~19 s)
def test_models_are_a_dimension_of_eval_run(tmp_path, capsys):
    from genlm_lab.backend import load_tokenizer, save_tiny_llama

    other = save_tiny_llama(load_tokenizer("tiny-random"), tmp_path / "other-tiny", seed=7)
    db = tmp_path / "m.sqlite"
    args = ["eval", "run", "pattern_matching", "--method", "awrs_smc:n_particles=2", "--limit", "2"]
    args += ["--max-tokens", "4", "--db", str(db), "--model", "tiny-random", "--model", str(other)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "with tiny-random:" in out and f"with {other}:" in out
    with ResultsStore(db) as store:
        runs = store.runs_frame()
    assert sorted(runs["model"].unique()) == sorted(["tiny-random", str(other)])
    assert runs.groupby("instance_id").size().tolist() == [2, 2]
    assert main(args) == 0  # everything is stored: nothing runs again
    with ResultsStore(db) as store:
        assert len(store.runs_frame()) == 4
    assert main(["eval", "compare", str(db), "tiny-random", str(other)]) == 0
    assert "on 2 instances" in capsys.readouterr().out


def test_eval_migrate_brings_an_old_store_up_to_date(tmp_path, capsys):
    from test_identity import _format_1_store

    old = tmp_path / "old.sqlite"
    _format_1_store(old)
    assert main(["eval", "migrate", str(old)]) == 0
    assert "migrated" in capsys.readouterr().out
    assert main(["eval", "migrate", str(old)]) == 0
    assert "already up to date (3 runs)" in capsys.readouterr().out


def test_eval_run_help_lists_method_kinds_and_keys(capsys):
    from genlm_lab.eval.methods import KINDS, Method

    with pytest.raises(SystemExit):
        main(["eval", "run", "--help"])
    out = capsys.readouterr().out
    kinds = out[out.index("method kinds") :]
    for kind in KINDS:
        assert f"\n  {kind} " in kinds, kind
    for key in Method.model_fields:
        if key != "kind":
            assert f"\n  {key}" in kinds, key


def test_eval_run_help_describes_every_method_key(capsys):
    from genlm_lab.eval.methods import Method

    with pytest.raises(SystemExit):
        main(["eval", "run", "--help"])
    out = capsys.readouterr().out
    lines = out[out.index("keys (default):") :].splitlines()
    for key in Method.model_fields:
        if key == "kind":
            continue
        line = next(x for x in lines if x.startswith(f"  {key} ") or x == f"  {key}")
        label = f"  {key} ({Method.model_fields[key].default})"
        rest = line[len(label) :] if line.startswith(label) else line[len(f"  {key}") :]
        assert rest.strip(), f"{key} has no description"


@pytest.mark.parametrize(
    "method, says",
    [
        (
            "awrs_smc:particles=3",
            ["unknown key 'particles'", "did you mean n_particles", "max_tokens"],
        ),
        ("awrs:n_particles=3", ["unknown kind 'awrs'", "awrs_smc", "sample_rerank"]),
        ("smc:n_particles=abc", ["n_particles='abc'", "valid integer"]),
        ("smc:ess_threshold=2", ["ess_threshold='2'", "less than or equal to 1"]),
    ],
)
def test_a_bad_method_is_answered_with_what_is_valid(method, says, capsys, tmp_path):
    assert (
        main(["eval", "run", "pattern_matching", "--method", method, "--db", str(tmp_path / "x")])
        == 2
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pydantic" not in err and "validation error" not in err
    for text in says:
        assert text in err, (text, err)
