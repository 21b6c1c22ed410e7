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


def _clock(since: float) -> str:
    """Time since `since` (a perf_counter reading) as m:ss."""
    seconds = int(time.perf_counter() - since)
    return f"{seconds // 60}:{seconds % 60:02d}"


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
    # a benchmark without `run()` is run on its own (`python benchmarks/bench_x.py --write`):
    # it writes its own section, and takes options (a panel, seeds) a table row cannot hold
    standalone = [s for s in scripts if "\ndef run(" not in s.read_text()]
    if standalone:
        print(f"standalone, run on their own: {', '.join(s.stem for s in standalone)}")
    scripts = [s for s in scripts if s not in standalone]
    if names:
        known = [s.stem.removeprefix("bench_") for s in scripts]
        unknown = sorted(set(names) - set(known))
        if unknown:
            print(f"unknown benchmark(s) {unknown}; expected some of {known}", file=sys.stderr)
            return 2
        scripts = [s for s in scripts if s.stem.removeprefix("bench_") in names]
    fresh, failed = {}, 0
    print(f"running {len(scripts)} benchmark(s): {', '.join(s.stem for s in scripts)}", flush=True)
    t0 = time.perf_counter()
    for i, script in enumerate(scripts, 1):
        print(f"== [{i}/{len(scripts)}] {script.stem} ({_clock(t0)} elapsed so far)", flush=True)
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
        print(f"== [{i}/{len(scripts)}] {script.stem} took {elapsed:.0f} s", flush=True)
        stamp = dt.datetime.now().strftime("%Y-%m-%d %H:%M")
        fresh[script.stem] = f"## {script.stem} ({stamp}, {elapsed:.0f} s)\n\n{text}\n"
    header = (
        "# Benchmark results\n\n"
        "Written by `make bench` (benchmarks/run_all.py); each section says when it last ran.\n"
        f"Machine: {_machine()}.\n\n"
        "Ratios compare implementations measured side by side in the same run.\n\n"
    )
    out = HERE / "RESULTS.md"
    # Read the other sections now, not at the start: a long run must not undo
    # what a partial re-run (or a merge) wrote to RESULTS.md meanwhile.
    sections = {**_read_sections(out), **fresh}
    out.write_text(header + "\n".join(sections[k] for k in sorted(sections)))
    print(f"wrote {out} ({len(scripts)} benchmark(s) in {_clock(t0)}, {failed} failed)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
