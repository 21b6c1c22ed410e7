"""Replace some rows of RESULTS.md's bench_vocabs section, keeping the others (partial re-runs)."""

from __future__ import annotations

import time

from run_all import table


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split(" | ")]


def merge_section(text: str, rows: list[dict], label: str, elapsed: float) -> str:
    """RESULTS.md `text` with the bench_vocabs rows that `rows` re-measured replaced.

    Rows are matched by (benchmark, metric); new ones go after the last row of
    their benchmark (a new conditions row after the first one). The section
    header keeps the full run's date and adds this re-run's.
    """
    head, sep, rest = text.partition("\n## bench_vocabs (")
    if not sep:
        raise ValueError("RESULTS.md has no bench_vocabs section to update: run it fully once")
    stamp_line, _, body = rest.partition("\n")
    end = body.find("\n## ")
    section, tail = (body, "") if end < 0 else (body[:end], body[end:])
    lines = [ln for ln in section.splitlines() if ln.startswith("| ") and "---" not in ln]
    old = [_cells(ln) for ln in lines[1:]]  # skip the column names
    new = [_cells(ln) for ln in table(rows).splitlines()[2:]]
    by_key = {(r[0], r[1]): r for r in new}
    merged = [by_key.pop((r[0], r[1]), r) for r in old]
    for key, row in by_key.items():  # rows the full run did not have
        same = [i for i, r in enumerate(merged) if r[0] == key[0]]
        merged.insert((same[0] if key[0] == "vocabs" else same[-1]) + 1 if same else 0, row)
    when = time.strftime("%Y-%m-%d %H:%M")
    full = stamp_line.split(";")[0].rstrip(")")
    header = f"## bench_vocabs ({full}; {label} {when}, {elapsed:.0f} s)"
    lines = table([]).splitlines() + ["| " + " | ".join(r) + " |" for r in merged]
    return head + "\n" + header + "\n\n" + "\n".join(lines) + "\n" + tail
