"""benchmarks/_json_gen_report.py: a foreign mask's column counts the schemas it failed to
compile apart from those it ran, and its note quotes the tool's own mask and compile times."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import _json_gen_report as report  # noqa: E402


def _cell(solved: bool, mass: float, wall: float, **extra: float) -> dict:
    return {"solved": solved, "valid_mass": mass, "cut": 0, "died": 0, "tokens": 30.0,
            "wall": wall, "per_step": 0.02, **extra}  # fmt: skip


def _rows() -> list[dict]:
    rows = []
    for k, (solved, wall, native, built) in enumerate(
        [(True, 4.0, 0.001, 1.5), (False, 6.0, 0.003, 2.5), (True, 11.0, 0.002, 9.0)]
    ):
        rows.append({
            "id": f"s{k}", "licence": "MIT", "budget": 50, "mask_ours": 1e-4, "mask_bare": 5e-5,
            "default": _cell(True, 1.0, 3.0),
            "outlines": _cell(solved, 1.0, wall, mask=1e-4, mask_native=native, compile=built),
        })  # fmt: skip
    rows.append({"id": "s3", "licence": "MIT", "budget": 50, "default": _cell(True, 1.0, 3.0),
                 "outlines": {"error": "CompileFailed: outlines' Index passed 4 GiB",
                              "wall": float("nan")}})  # fmt: skip
    return rows


def test_the_outlines_column_counts_failures_and_quotes_its_own_mask():
    rows = _rows()
    text = report.render(rows, ["default", "outlines"], {}, 60.0, 900, 4)
    summary = [line for line in text.splitlines() if line.startswith("| outlines 1.3.3's mask |")]
    assert len(summary) == 1
    cells = [c.strip() for c in summary[0].split("|")[1:-1]]
    assert cells[1:3] == ["4", "2/4"]  # four schemas, two solved
    assert cells[5] == "1"  # one failed to compile
    assert float(cells[7]) == round(statistics.mean([4.0, 6.0, 11.0]), 1)  # over those it ran
    assert "`outlines` measured nothing on 1 schemas: s3: CompileFailed" in text
    native = statistics.median([0.001, 0.003, 0.002]) * 1e3
    assert f"median {native:.3f} ms. Compiling the schema" in text
    assert "median 2.50 s, worst 9.00 s" in text
    assert "failed (CompileFailed: outlines' Index passed 4" in text  # the schema's own row


def test_a_quick_run_gets_its_own_section_beside_the_whole_panels(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "HERE", tmp_path)
    results = tmp_path / "RESULTS.md"
    results.write_text(
        "# R\n\n## bench_a (1)\nA\n\n## bench_json_gen (1)\nFULL\n\n## bench_z (1)\nZ\n"
    )
    report.write_section("## bench_json_gen --quick (2)\nQUICK\n", "bench_json_gen --quick")
    report.write_section("## bench_json_gen --quick (3)\nQUICK2\n", "bench_json_gen --quick")
    text = results.read_text()
    assert "FULL" in text and "QUICK2" in text and "QUICK\n" not in text
    assert text.index("FULL") < text.index("QUICK2") < text.index("## bench_z") < text.index("Z\n")
    report.write_section("## bench_json_gen (4)\nFULL2\n")
    text = results.read_text()
    assert "FULL\n" not in text and text.index("FULL2") < text.index("QUICK2")
    assert text.count("## ") == 4
