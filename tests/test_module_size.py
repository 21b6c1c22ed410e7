"""No module of the package is over 400 lines: one idea per module, split by idea when one grows.

A limit nobody checks drifts (a speed-up once took `python_regex/potential.py`
to 401), so this test reads every module and names the ones over it.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "genlm_lab"
MOST_LINES = 400


def _too_long(root: Path) -> dict[str, int]:
    counts = {str(p.relative_to(root)): len(p.read_text().splitlines()) for p in root.rglob("*.py")}
    return {name: n for name, n in counts.items() if n > MOST_LINES}


def test_no_module_is_over_400_lines():
    assert len(list(PACKAGE.rglob("*.py"))) > 100  # the package, not an empty folder
    assert _too_long(PACKAGE) == {}


def test_a_module_over_400_lines_is_named(tmp_path):
    (tmp_path / "short.py").write_text("x = 1\n" * MOST_LINES)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "long.py").write_text("x = 1\n" * (MOST_LINES + 1))
    assert _too_long(tmp_path) == {"sub/long.py": MOST_LINES + 1}
