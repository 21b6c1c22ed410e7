"""The `genlm-lab` command: doctor reports every fact, errors are one clear line."""

import subprocess
import sys

import pytest

from genlm_lab import cli
from genlm_lab.cli import build_parser, doctor_lines, main


def test_doctor_names_every_component_once():
    lines = doctor_lines(load_model=False)
    names = [line[7:21].strip() for line in lines]
    for name in ("python", "torch", "transformers", "graphviz dot", "cuda", "vllm", "model cache"):
        assert names.count(name) == 1, (name, lines)
    assert all(line[:6] in ("[ok  ]", "[MISS]", "[--  ]") for line in lines)


def test_console_script_runs_doctor():
    out = subprocess.run(
        [sys.executable, "-m", "genlm_lab.cli", "doctor", "--no-model"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "torch" in out.stdout and "graphviz dot" in out.stdout


def test_workshop_reset_on_a_missing_file_is_one_clear_line(tmp_path, capsys):
    assert main(["workshop", "reset", str(tmp_path / "nope.ipynb")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("genlm-lab workshop:") and err.count("\n") == 1


def test_parser_knows_all_commands():
    parser = build_parser()
    for argv in (["doctor"], ["lab"], ["report", "r.json"], ["workshop", "reset", "n.ipynb"]):
        assert parser.parse_args(argv).command == argv[0]


def test_report_on_a_directory_is_one_clear_line(tmp_path, capsys):
    # IsADirectoryError escaped as a traceback before
    assert main(["report", str(tmp_path), "-o", str(tmp_path / "out.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("genlm-lab report:") and err.count("\n") == 1
    assert "Traceback" not in err


def test_doctor_with_a_damaged_model_marker_reports_instead_of_crashing(tmp_path, monkeypatch):
    monkeypatch.setenv("GENLM_LAB_CACHE_DIR", str(tmp_path))
    target = tmp_path / "models" / "smollm2-135m"
    target.mkdir(parents=True)
    (target / "genlm_lab_conversion.json").write_text("[]")
    (target / "model.safetensors").write_bytes(b"")
    lines = doctor_lines(load_model=False)
    assert any("model cache" in line and "not yet converted" in line for line in lines)


def test_report_never_overwrites_its_record(tmp_path, capsys):
    # a record saved as run.html (or -o naming the record) was replaced by its own report
    from genlm_lab.smc import SMCRecord

    record = tmp_path / "run.html"
    SMCRecord(n_particles=1, run_id="r").save(record)
    before = record.read_text()
    for argv in (["report", str(record)], ["report", str(record), "-o", str(record)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("genlm-lab report:") and "record itself" in err
    assert record.read_text() == before


def test_lab_with_a_missing_dir_names_it(tmp_path, capsys):
    missing = tmp_path / "nowhere"
    assert main(["lab", "--dir", str(missing)]) == 2
    err = capsys.readouterr().err
    assert str(missing) in err and err.count("\n") == 1


def test_lab_passes_jupyter_options_on_in_order(tmp_path, monkeypatch):
    # argparse refused them: "unrecognized arguments: --port"
    calls = []
    monkeypatch.setattr(cli.subprocess, "call", lambda cmd, env: calls.append(cmd) or 0)
    argv = ["lab", "--dir", str(tmp_path), "--port", "8890", "--no-browser"]
    assert main(argv) == 0
    assert calls[-1][-3:] == ["--port", "8890", "--no-browser"]
    assert f"--notebook-dir={tmp_path}" in calls[-1]
    assert main(["lab", "--dir", str(tmp_path), "--", "--port", "8890"]) == 0
    assert calls[-1][-2:] == ["--port", "8890"] and "--" not in calls[-1]


def test_other_commands_still_refuse_unknown_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["doctor", "--bogus"])
    assert exit_info.value.code == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err
