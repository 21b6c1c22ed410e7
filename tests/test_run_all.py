"""benchmarks/run_all.py: a run rewrites its own sections of RESULTS.md and keeps every other one."""

import importlib.util
from pathlib import Path

import pytest

RUN_ALL = Path(__file__).resolve().parents[1] / "benchmarks" / "run_all.py"

FAKE_BENCH = """
from pathlib import Path

def run():
    # While this benchmark runs, someone re-runs another one and rewrites its section.
    results = Path(__file__).parent / "RESULTS.md"
    text = results.read_text().replace("| old other row |", "| rewritten meanwhile |")
    results.write_text(text + "\\n## bench_late (now)\\n\\n| added meanwhile |\\n")
    return [{"benchmark": "fake", "metric": "m", "ours": 1.5}]
"""


@pytest.fixture
def run_all(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("run_all_under_test", RUN_ALL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "HERE", tmp_path)
    monkeypatch.setattr(module, "_machine", lambda: "test machine")
    return module


def test_a_run_keeps_sections_written_by_others_during_it(run_all, tmp_path):
    (tmp_path / "bench_fake.py").write_text(FAKE_BENCH)
    (tmp_path / "bench_other.py").write_text("def run():\n    return []\n")
    (tmp_path / "RESULTS.md").write_text(
        "# Benchmark results\n\n## bench_fake (then)\n\n| stale fake row |\n"
        "\n## bench_other (then)\n\n| old other row |\n"
    )
    assert run_all.main(["fake"]) == 0
    text = (tmp_path / "RESULTS.md").read_text()
    assert "stale fake row" not in text
    assert "| fake | m | 1.5 |" in text
    assert "rewritten meanwhile" in text and "old other row" not in text
    assert "added meanwhile" in text
    assert text.index("## bench_fake") < text.index("## bench_late") < text.index("## bench_other")


def test_an_unknown_benchmark_is_refused(run_all, tmp_path, capsys):
    (tmp_path / "bench_fake.py").write_text(FAKE_BENCH)
    assert run_all.main(["nope"]) == 2
    assert "unknown benchmark" in capsys.readouterr().err


def test_a_benchmark_without_run_is_left_to_run_on_its_own(run_all, tmp_path, capsys):
    (tmp_path / "bench_fake.py").write_text(FAKE_BENCH)
    (tmp_path / "bench_alone.py").write_text("def main():\n    raise SystemExit('not here')\n")
    (tmp_path / "RESULTS.md").write_text(
        "# Benchmark results\n\n## bench_alone (then)\n\n| kept |\n"
    )
    assert run_all.main([]) == 0
    assert "standalone, run on their own: bench_alone" in capsys.readouterr().out
    text = (tmp_path / "RESULTS.md").read_text()
    assert "| kept |" in text and "FAILED" not in text
