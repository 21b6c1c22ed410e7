"""Run one benchmark at two commits side by side and print the ratio per row.

Each revision is checked out in a git worktree under /tmp (reused across runs)
and its own `benchmarks/bench_<name>.py` runs there, in a fresh process with that
worktree first on PYTHONPATH (the process checks that the `genlm_lab` it
imports is the worktree's, not the venv's editable install of the main tree).
Runs alternate A, B, B, A, ... so that machine load falls on both alike; each
row's numeric columns are the median over the repeats. A directory in place of
a revision runs that tree as it is (uncommitted edits included).

Usage::

    python benchmarks/compare.py REV_A REV_B BENCH [--repeats 2] [--rows REGEX]
        [--env NAME=VALUE ...]

e.g. `compare.py 43ec7c6 b975b9c bytes --env BENCH_BYTES_TEXTS=3 --env BENCH_BYTES_KS=5`.
Columns: for `ours`, `baseline` and `ratio` each side's median and B/A.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _worktrees import check_under, tree_env, tree_for  # noqa: E402

# Runs inside the worktree: its own benchmark module, rows to a JSON file.
RUNNER = """
import importlib.util, json, os, sys, pathlib
tree = pathlib.Path(sys.argv[1])
import genlm_lab
spec = importlib.util.spec_from_file_location("bench", tree / "benchmarks" / sys.argv[2])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
rows = module.run()
where = str(pathlib.Path(genlm_lab.__file__).resolve())
with open(sys.argv[3], "w") as f:
    json.dump({"genlm_lab": where, "rows": rows, "load": os.getloadavg()[0]}, f, default=str)
"""
NUMERIC = ("ours", "baseline", "ratio")


def run_once(tree: Path, script: str, env: dict[str, str], log: Path) -> dict:
    """One process of `script` (in the tree's benchmarks/, or a path) in `tree`: its rows,
    where genlm_lab came from, the load."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = Path(f.name)
    try:
        with open(log, "a") as log_file:
            subprocess.run(
                [sys.executable, "-c", RUNNER, str(tree), script, str(out)],
                cwd=tree,
                env=tree_env(tree, env),
                stdout=log_file,
                stderr=subprocess.STDOUT,
                check=True,
            )
        data = json.loads(out.read_text())
    finally:
        out.unlink(missing_ok=True)
    check_under(Path(data["genlm_lab"]), tree)
    return data


def number(value: object) -> float | None:
    """A row cell as a float, if it is one."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def medians(runs: list[dict], rows: str) -> dict[str, dict[str, float | None]]:
    """Per row metric (matching `rows`), the median of each numeric column over the runs."""
    out: dict[str, dict[str, list[float]]] = {}
    for run in runs:
        for row in run["rows"]:
            metric = str(row.get("metric"))
            if not re.search(rows, metric):
                continue
            cells = out.setdefault(metric, {c: [] for c in NUMERIC})
            for c in NUMERIC:
                x = number(row.get(c))
                if x is not None:
                    cells[c].append(x)
    return {
        m: {c: statistics.median(v) if v else None for c, v in cells.items()}
        for m, cells in out.items()
    }


def fmt(x: float | None) -> str:
    return "" if x is None else f"{x:.4g}"


def over(b: float | None, a: float | None) -> str:
    return f"{b / a:.3f}" if a and b is not None else ""


def table(a: dict, b: dict) -> str:
    """Markdown: per row, A and B medians of ours, baseline, ratio, and B/A of each."""
    head = ["row"]
    for c in NUMERIC:
        head += [f"{c} A", f"{c} B", f"{c} B/A"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for metric in [*a, *(m for m in b if m not in a)]:
        ra, rb = a.get(metric, {}), b.get(metric, {})
        cells = [metric[:90]]
        for c in NUMERIC:
            cells += [fmt(ra.get(c)), fmt(rb.get(c)), over(rb.get(c), ra.get(c))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("rev_a")
    parser.add_argument("rev_b")
    parser.add_argument(
        "bench",
        help="the benchmark's name (bytes: each tree's own bench_bytes.py), or a script path "
        "with a run() that is run in both trees (e.g. benchmarks/_probe_regressions.py)",
    )
    parser.add_argument("--repeats", type=int, default=2, help="runs per side, interleaved")
    parser.add_argument("--rows", default="", help="only rows whose metric matches this regex")
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for both sides")
    parser.add_argument("--log", default="/tmp/genlm_lab_compare.log", help="the runs' output")
    args = parser.parse_args(argv)
    env = dict(item.split("=", 1) for item in args.env)
    sides = {"A": tree_for(args.rev_a), "B": tree_for(args.rev_b)}
    given = Path(args.bench)
    script = str(given.resolve()) if given.suffix == ".py" else f"bench_{args.bench}.py"
    for label, (tree, desc) in sides.items():
        if not (tree / "benchmarks" / script).exists():
            print(f"{label} ({desc}) has no benchmarks/{script}", file=sys.stderr)
            return 2
    runs: dict[str, list[dict]] = {"A": [], "B": []}
    started = time.perf_counter()
    for r in range(args.repeats):
        for label in ("A", "B") if r % 2 == 0 else ("B", "A"):
            tree, _ = sides[label]
            t0 = time.perf_counter()
            data = run_once(tree, script, env, Path(args.log))
            runs[label].append(data)
            print(
                f"run {r + 1}/{args.repeats} side {label}: {time.perf_counter() - t0:.0f} s, "
                f"load {data['load']:.1f}, genlm_lab from {data['genlm_lab']}",
                flush=True,
            )
    print()
    for label, (_, desc) in sides.items():
        print(f"{label}: {desc}")
    loads = [d["load"] for side in runs.values() for d in side]
    print(
        f"{script}, {args.repeats} runs per side interleaved, env {env or '{}'}; "
        f"load average {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores; "
        f"{time.perf_counter() - started:.0f} s\n"
    )
    print(table(medians(runs["A"], args.rows), medians(runs["B"], args.rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
