"""Python-regex token masks: the trie walk against the old byte-mask walk and a `BoolFSA`.

For each of the AWRS paper's patterns (genlm_lab/eval/data/patterns.csv), the
mask of a `PythonRegex` over SmolLM2's 49,152 tokens at the empty context, as
`Coerced` computes it (`walk_byte_trie`, engine asked only about bytes that
lead to a token), as it was computed before (`byte_mask_walk`: a 257-entry
byte mask at every live trie node), and the same pattern as a coerced
`BoolFSA` (llguidance) where it compiles. Each is timed on a fresh potential
(first mask, nothing cached but the process-wide tables that the first mask
of the process builds, whose one-time cost is printed first).

    python benchmarks/bench_regex_mask.py [--every K] [--limit N] [--old N]

`--old N` times the old walk on the first N patterns measured (it takes
seconds per pattern, up to hours; `--old-cap S` gives up after S seconds and
prints S, so such ratios are lower bounds). Target: the new mask within 50x the `BoolFSA` mask.
Each row says which path gave the mask: `[automaton]` (the pattern has an
exact automaton, `_CharAutomaton`) or `[engine]` (the engine walks the trie).
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import signal
import statistics
import time
from pathlib import Path

import numpy as np

import genlm_lab
from genlm_lab.control import BoolFSA, InvalidGrammar, PromptedLLM, PythonRegex
from genlm_lab.control.constraint.python_regex import (
    byte_mask_walk,
)

PATTERNS_CSV = Path(genlm_lab.__file__).parent / "eval" / "data" / "patterns.csv"
TARGET = 50.0
ISSUE_PATTERNS = [r"[a-z]{3}\d{2}", r"(\w+) \1"]  # issue #33's two examples, measured first
TIMEOUT = 2.0  # the pattern-matching domain's per-match timeout
WATCH = [  # over 50x a BoolFSA before PythonRegex read masks off an automaton where it has one
    r"^[a-z]++\d*+$",
    r"^[^<>{}\[\]]+$",
    r"^[^\W\d_]+$",
    r"^(?:[a-z]+(?:-[a-z]+)*|[0-9]+(?:-[0-9]+)*)$",
    r"\P{Greek}",
]


def load_patterns() -> list[str]:
    """The 454 patterns, in file order."""
    with PATTERNS_CSV.open(newline="", encoding="utf-8") as f:
        return [row[0] for row in list(csv.reader(f))[1:] if row]


def timed(f):
    """`(result, seconds)` of one call of `f()`."""
    t0 = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t0


def fsa_mask(llm: PromptedLLM, pattern: str) -> tuple[np.ndarray | None, float | None]:
    """The coerced `BoolFSA`'s first mask and its seconds (None where the pattern does not compile)."""
    try:
        coerced = BoolFSA.from_regex(pattern).coerce(llm, f=b"".join)
    except (InvalidGrammar, ValueError):
        return None, None
    weights, seconds = timed(lambda: asyncio.run(coerced.logw_next([])).weights)
    return weights, seconds


class _Capped(Exception):
    pass


def old_mask(pattern: str, trie, cap: float) -> tuple[np.ndarray | None, float]:
    """The old walk's mask and seconds, or `(None, cap)` if it runs past `cap` seconds."""

    def stop(*_):
        raise _Capped

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, cap)
    try:
        return timed(lambda: byte_mask_walk(PythonRegex(pattern, timeout=TIMEOUT), trie, b""))
    except _Capped:
        return None, cap
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--every", type=int, default=1, help="every K-th pattern")
    parser.add_argument("--limit", type=int, default=None, help="at most N patterns")
    parser.add_argument("--old", type=int, default=0, help="time the old walk on the first N")
    parser.add_argument("--issue", action="store_true", help="the issue's two patterns first")
    parser.add_argument("--old-cap", type=float, default=60.0, help="seconds before giving up")
    args = parser.parse_args()

    llm = PromptedLLM.from_name("tiny-random", backend="mock")  # SmolLM2's tokenizer
    # The trie Coerced builds for this vocabulary, shared by every pattern here.
    trie = PythonRegex("a").coerce(llm, f=b"".join)._trie
    # The first mask in a process builds the one-time tables (representative characters,
    # the trie's edges by depth): timed apart, on a pattern with multi-byte characters.
    _, warm = timed(lambda: PythonRegex("[aé€😀]+").walk_byte_trie(trie, b""))
    print(f"{len(llm.vocab)} tokens; first mask in this process (one-time tables): {warm:.2f} s")

    patterns = load_patterns()[:: args.every][: args.limit]
    if args.issue:
        patterns = ISSUE_PATTERNS + patterns
    print(f"{'#':>4} {'old s':>8} {'new s':>8} {'FSA s':>8} {'old/new':>8} {'new/FSA':>8}  pattern")
    ratios, news, olds, misses = [], [], [], []
    by_pattern: dict[str, str] = {}
    shift = len(ISSUE_PATTERNS) if args.issue else 0

    def label(i: int) -> str:
        return "issue" if i < shift else str((i - shift) * args.every)

    for i, pattern in enumerate(patterns):
        p = PythonRegex(pattern, timeout=TIMEOUT)
        new, new_s = timed(lambda p=p: p.walk_byte_trie(trie, b""))
        news.append(new_s)
        fsa, fsa_s = fsa_mask(llm, pattern)
        old_s, old_txt, speedup = None, "", ""
        if i < args.old:
            old, old_s = old_mask(pattern, trie, args.old_cap)
            assert old is None or np.array_equal(old, new), pattern
            olds.append(old_s / new_s)
            more = ">" if old is None else ""
            old_txt, speedup = f"{more}{old_s:.2f}", f"{more}{old_s / new_s:.0f}x"
        ratio = None if fsa_s is None else new_s / fsa_s
        by_pattern[pattern] = (
            f"{pattern!r}: new {new_s * 1e3:.1f} ms, BoolFSA "
            f"{'n/a' if fsa_s is None else f'{fsa_s * 1e3:.2f} ms'}"
            f"{'' if ratio is None else f', {ratio:.1f}x'}"
        )
        if ratio is not None:
            ratios.append(ratio)
            if ratio > TARGET:
                misses.append((ratio, pattern))
        agree = (
            ""
            if fsa is None
            else ("" if np.array_equal(fsa[:-1], new[:-1]) else "  (FSA mask differs)")
        )
        agree += "  [automaton]" if p._automaton is not None else "  [engine]"
        print(
            f"{label(i):>4} {old_txt:>8} {new_s:>8.4f} "
            f"{'n/a' if fsa_s is None else f'{fsa_s:.4f}':>8} "
            f"{speedup:>8} "
            f"{'' if ratio is None else f'{ratio:.1f}x':>8}  {pattern[:60]!r}{agree}",
            flush=True,
        )
    print(
        f"\n{len(patterns)} patterns; new mask: median {statistics.median(news) * 1e3:.1f} ms, "
        f"max {max(news) * 1e3:.0f} ms, total {sum(news):.1f} s"
    )
    if olds:
        print(
            f"old/new on {len(olds)}: median {statistics.median(olds):.0f}x, min {min(olds):.0f}x"
        )
    if ratios:
        print(
            f"new/FSA on {len(ratios)} patterns with a BoolFSA: median {statistics.median(ratios):.1f}x, "
            f"max {max(ratios):.1f}x; within {TARGET:.0f}x: {len(ratios) - len(misses)}/{len(ratios)}"
        )
    for ratio, pattern in sorted(misses, reverse=True)[:10]:
        print(f"  over target: {ratio:.0f}x {pattern[:70]!r}")
    for pattern in WATCH:  # the five over 50x before the automaton path
        if pattern in by_pattern:
            print(f"  {by_pattern[pattern]}")


if __name__ == "__main__":
    main()
