"""Run every `benchmarks/bench_*.py` and rewrite `benchmarks/RESULTS.md`.

Each benchmark module exposes `run() -> list[dict]`; a row names the benchmark,
the metric, our figure, the baseline's, their ratio and the target. Ratios are
measured side by side in one process, so they survive a noisy machine better
than absolute times. Usage::

    python benchmarks/run_all.py [trie backend ...]   # default: all

Running a subset rewrites only those sections of RESULTS.md.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import os
import platform
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
COLUMNS = ["benchmark", "metric", "ours", "baseline", "ratio", "target", "met", "note"]


def _machine() -> str:
    import torch

    cpu = platform.processor() or platform.machine()
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return (
        f"{platform.node()} · {os.cpu_count()} cores · {cpu} · {device} · torch {torch.__version__}"
    )


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    return "" if value is None else str(value)


def table(rows: list[dict]) -> str:
    """A Markdown table of benchmark rows."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in rows:
        lines.append("| " + " | ".join(_fmt(row.get(c)) for c in COLUMNS) + " |")
    return "\n".join(lines)


def _read_sections(path: Path) -> dict[str, str]:
    """Earlier results by benchmark, so running one benchmark keeps the others."""
    if not path.exists():
        return {}
    sections = {}
    for chunk in path.read_text().split("\n## ")[1:]:
        sections[chunk.split(" ", 1)[0]] = "## " + chunk.rstrip() + "\n"
    return sections


def main(names: list[str]) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(HERE))
    scripts = sorted(HERE.glob("bench_*.py"))
    if names:
        scripts = [s for s in scripts if s.stem.removeprefix("bench_") in names]
    sections, failed = _read_sections(HERE / "RESULTS.md"), 0
    for script in scripts:
        print(f"== {script.stem}", flush=True)
        start = time.perf_counter()
        try:
            rows = _load(script).run()
        except Exception:
            failed += 1
            traceback.print_exc()
            rows = [{"benchmark": script.stem, "metric": "FAILED", "note": "see console"}]
        elapsed = time.perf_counter() - start
        text = table(rows)
        print(text, flush=True)
        stamp = dt.datetime.now().strftime("%Y-%m-%d %H:%M")
        sections[script.stem] = f"## {script.stem} ({stamp}, {elapsed:.0f} s)\n\n{text}\n"
    header = (
        "# Benchmark results\n\n"
        "Written by `make bench` (benchmarks/run_all.py); each section says when it last ran.\n"
        f"Machine: {_machine()}.\n\n"
        "Ratios compare implementations measured side by side in the same run.\n\n"
    )
    out = HERE / "RESULTS.md"
    out.write_text(header + "\n".join(sections[k] for k in sorted(sections)))
    print(f"wrote {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
