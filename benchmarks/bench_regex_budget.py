"""Real-world regexes under a tight `max_tokens`: the budget with and without its lower bound.

A regex with classes, anchors or lookarounds has no exact automaton, so its
budget searched only near the end; it now also refuses on the exact token
count of an automaton that holds every text the regex matches
(`budget.lower_bound`, `regular.superset`). Both arms have budgets on and the same
target (every refusal is sound), so they differ only in how many particles
reach a valid string. The panel: every 14th of the pattern-matching task's
patterns that get a bound (from `genlm_lab/eval/data/patterns.csv`), with the
task's own few-shot prompt, AWRS-SMC with 4 particles on the embedded model
(SmolLM2-135M). `bound` is `PythonRegex(pattern)`; `no bound` is
`PythonRegex(pattern, flags=regex.V0)`: the same language (V0 is the
module's default dialect), which the relaxation does not read, as it reads
no flags. Per arm: particles that end in a string the pattern fully matches
(of 4 per seed), patterns with at least one, and the wall time, side by side
(the arms alternate).

Run: `python benchmarks/bench_regex_budget.py [--max-tokens N] [--seeds K] [--write]`.
"""

from __future__ import annotations

import argparse
import asyncio
import time

import regex
from _sections import write_section

from genlm_lab.control import AWRS, SMC, PythonRegex
from genlm_lab.control.constraint.budget import superset_dfa
from genlm_lab.eval.domains.pattern_matching import PatternMatchingDomain, load_patterns

STRIDE = 14


def panel() -> list[str]:
    """Every `STRIDE`-th pattern of the task that gets a lower bound."""
    bounded = [p for p in load_patterns() if superset_dfa(PythonRegex(p)) is not None]
    return bounded[::STRIDE]


async def run_one(llm, pattern: str, bound: bool, max_tokens: int, seed: int) -> dict:
    flags = 0 if bound else regex.V0
    constraint = PythonRegex(pattern, flags=flags, timeout=1.0).coerce(llm, f=b"".join)
    start = time.perf_counter()
    sequences = await SMC(AWRS(llm, constraint))(4, 0.5, max_tokens, seed=seed, progress=False)
    wall = time.perf_counter() - start
    valid = 0
    for context, weight in zip(sequences.contexts, sequences.log_weights, strict=True):
        text = b"".join(bytes(t) for t in context if isinstance(t, bytes)).decode(errors="replace")
        if weight > float("-inf") and regex.fullmatch(pattern, text, timeout=1.0):
            valid += 1
    return {"valid": valid, "wall": wall}


def section(rows: list[dict], max_tokens: int, seeds: int, elapsed: float) -> str:
    """The RESULTS.md section: one line per pattern, and the totals."""
    import datetime as dt
    import os

    stamp = dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    n = 4 * seeds
    lines = [
        f"## bench_regex_budget ({stamp}, {elapsed:.0f} s)",
        "",
        f'SmolLM2-135M ("default"), CPU ({os.cpu_count()} cores), AWRS-SMC 4 particles, '
        f"max_tokens {max_tokens}, seeds 0-{seeds - 1}; {len(rows)} patterns of the "
        "pattern-matching task (every 14th of those with a lower bound), its few-shot prompt. "
        "Both arms have budgets on; `no bound` is the same pattern with `flags=regex.V0` "
        "(the same language), which the relaxation does not read.",
        "",
        "| pattern | bound: valid | no bound: valid | bound wall (s) | no bound wall (s) |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        shown = r["pattern"].replace("|", "\\|")[:48]
        lines.append(
            f"| `{shown}` | {r['bound']['valid']}/{n} | {r['off']['valid']}/{n} "
            f"| {r['bound']['wall']:.1f} | {r['off']['wall']:.1f} |"
        )
    totals = {arm: sum(r[arm]["valid"] for r in rows) for arm in ("bound", "off")}
    solved = {arm: sum(r[arm]["valid"] > 0 for r in rows) for arm in ("bound", "off")}
    walls = {arm: sum(r[arm]["wall"] for r in rows) for arm in ("bound", "off")}
    lines += [
        f"| **all** | **{totals['bound']}/{n * len(rows)}** ({solved['bound']} patterns) "
        f"| **{totals['off']}/{n * len(rows)}** ({solved['off']} patterns) "
        f"| {walls['bound']:.0f} | {walls['off']:.0f} |",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-tokens", type=int, default=12)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--write", action="store_true", help="write RESULTS.md's section")
    args = parser.parse_args()
    from genlm_lab.backend import load_model_by_name
    from genlm_lab.control import PromptedLLM
    from genlm_lab.eval.domains.pattern_matching import PatternMatchingInstance

    began = time.perf_counter()
    model = load_model_by_name("default")
    domain = PatternMatchingDomain()
    rows = []
    for i, pattern in enumerate(panel()):
        prompt = domain.prompt(PatternMatchingInstance(pattern=pattern, instance_id=i))
        llm = PromptedLLM(model, prompt=prompt, eos_byte_strings=list(domain.eos))
        row: dict = {"pattern": pattern, "bound": {"valid": 0, "wall": 0.0}}
        row["off"] = {"valid": 0, "wall": 0.0}
        for seed in range(args.seeds):
            arms = ("bound", "off") if (i + seed) % 2 == 0 else ("off", "bound")
            for arm in arms:
                model.clear_cache()  # each run pays its own forwards
                found = asyncio.run(run_one(llm, pattern, arm == "bound", args.max_tokens, seed))
                row[arm]["valid"] += found["valid"]
                row[arm]["wall"] += found["wall"]
        rows.append(row)
        print(f"{pattern[:50]!r}: bound {row['bound']['valid']}, no bound {row['off']['valid']}"
              f" of {4 * args.seeds}", flush=True)  # fmt: skip
    text = section(rows, args.max_tokens, args.seeds, time.perf_counter() - began)
    print(text)
    if args.write:
        write_section("bench_regex_budget", text, before="bench_schemas")


if __name__ == "__main__":
    main()
