"""A Lark grammar under a tight `max_tokens` on the embedded model: the budget with and without its guide.

`BoolCFG.finish` gives a Lark grammar's budget a `FinishGuide` (a twist that
steers particles towards texts that can still end in time, divided out
again). Here AWRS-SMC with 4 particles writes an arithmetic expression or a
list of records under the grammars below with the embedded model
(SmolLM2-135M, "default"), budgets
on in both arms; `guided` is `BoolCFG` as shipped, `plain` the same grammar
with no `finish` (so no guide: the budget as before). Per arm and seed: the
particles that end with EOS in a complete text (of 4), the posterior mass on
them, those cut or killed, mean tokens and wall time.

Measured (2 shared CPU cores, seeds 0-2, particles ending complete of 12):
`records`, max_tokens 30: guided 12/12 in 10.3 s, plain 2/12 in 40.7 s (two
runs whose 4 particles all died); max_tokens 40: 11/12 in 11.1 s against 2/12
in 22.9 s. `arithmetic`, max_tokens 10 and 16: 12/12 in both arms (the proof
near the end is enough where a finish is a few closing brackets).

Run: `python benchmarks/bench_lark_finish.py [--write]` (the panel: records at 30 and 40
tokens, arithmetic at 10 and 16; `--task T --max-tokens N` for one; `--seeds K`).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from _sections import write_section

from genlm_lab.control import AWRS, SMC, BoolCFG

ARITHMETIC = r"""
start: expr
expr: term (("+" | "-") term)*
term: factor (("*" | "/") factor)*
factor: NUMBER | "(" expr ")"
NUMBER: /[0-9]+/
%ignore " "
"""
RECORDS = r"""
start: "[" record ("," " "? record)* "]"
record: "{" "\"name\": " STRING ", \"age\": " NUMBER ", \"city\": " STRING "}"
STRING: /"[A-Za-z ]+"/
NUMBER: /[0-9]+/
"""
TASKS = {
    "arithmetic": (
        ARITHMETIC,
        "Write one long arithmetic expression with many nested parentheses, such as "
        "((12 + 7) * (3 - (4 / 2))) - 5.\nExpression: ",
    ),
    "records": (
        RECORDS,
        "A JSON list of ten people, each with a name, an age and a city:\n",
    ),
}


async def run_one(llm, grammar: str, guided: bool, max_tokens: int, seed: int) -> dict:
    cfg = BoolCFG.from_lark(grammar)
    if not guided:
        cfg = NoFinish(cfg.grammar, cfg.source, cfg.kind)
    constraint = cfg.coerce(llm, f=b"".join)
    smc = SMC(AWRS(llm, constraint))
    llm.model.clear_cache()  # every run pays its own forwards: walls compare across rows
    start = time.perf_counter()
    sequences = await smc(4, 0.5, max_tokens, seed=seed, progress=False)
    wall = time.perf_counter() - start
    weights = sequences.normalized_weights
    ended = mass = 0.0
    for context, done, w in zip(sequences.contexts, sequences.finished, weights, strict=True):
        text = b"".join(bytes(t) for t in context[:-1])
        if done and context and cfg.engine.accepting(text) and w > 0:
            ended += 1
            mass += w
    deaths = getattr(sequences, "deaths", None)
    return {
        "ended": int(ended),
        "mass": mass,
        "died": 0 if deaths is None else len(deaths),
        "tokens": statistics.mean(len(c) for c in sequences.contexts),
        "wall": wall,
        "guide": dict(smc.budget_stats.get("guide", {})),
        "texts": [b"".join(bytes(t) for t in c[:-1])[:60] for c in sequences.contexts],
    }


class NoFinish(BoolCFG):
    """`BoolCFG` without `finish`: the budget gets no guide (as before issue #39)."""

    finish = None


PANEL = (("records", 30), ("records", 40), ("arithmetic", 10), ("arithmetic", 16))


def section(rows: list[tuple[str, int, str, list[dict]]], elapsed: float) -> str:
    """The RESULTS.md section: one row per task, budget and arm."""
    import datetime as dt
    import os

    stamp = dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    lines = [
        f"## bench_lark_finish ({stamp}, {elapsed:.0f} s)",
        "",
        'SmolLM2-135M ("default"), CPU, AWRS-SMC 4 particles, budgets on in both arms; '
        "`guided`: `BoolCFG` as shipped (its `finish` gives the budget a guide), `plain`: "
        f"the same grammar without `finish`. {os.cpu_count()} cores; walls side by side.",
        "",
        "| task | max_tokens | arm | particles ending complete | mass on them (mean) "
        "| died | wall (s, all seeds) |",
        "|---|---|---|---|---|---|---|",
    ]
    for task, max_tokens, arm, runs in rows:
        ended = sum(r["ended"] for r in runs)
        mass = statistics.mean(r["mass"] for r in runs)
        died = sum(r["died"] for r in runs)
        wall = sum(r["wall"] for r in runs)
        lines.append(
            f"| {task} | {max_tokens} | {arm} | {ended}/{4 * len(runs)} | {mass:.2f} "
            f"| {died} | {wall:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--max-tokens", type=int, help="one budget (with --task) instead of the panel"
    )
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--task", choices=sorted(TASKS), help="one task instead of the panel")
    parser.add_argument("--write", action="store_true", help="write RESULTS.md's section")
    args = parser.parse_args()
    from genlm_lab.backend import load_model_by_name
    from genlm_lab.control import PromptedLLM

    panel = PANEL
    if args.task or args.max_tokens:
        panel = ((args.task or "arithmetic", args.max_tokens or 16),)
    began = time.perf_counter()
    model = load_model_by_name("default")
    rows = []
    for task, max_tokens in panel:
        grammar, prompt = TASKS[task]
        llm = PromptedLLM(model, prompt=prompt)
        for guided in (True, False):
            runs = [
                asyncio.run(run_one(llm, grammar, guided, max_tokens, seed))
                for seed in range(args.seeds)
            ]
            arm = "guided" if guided else "plain"
            rows.append((task, max_tokens, arm, runs))
            ended = sum(r["ended"] for r in runs)
            wall = sum(r["wall"] for r in runs)
            print(f"{task} max_tokens {max_tokens} {arm}: {ended}/{4 * len(runs)} particles "
                  f"ended complete, {wall:.1f} s in all", flush=True)  # fmt: skip
    text = section(rows, time.perf_counter() - began)
    print(text)
    if args.write:
        write_section("bench_lark_finish", text, before="bench_profile")


if __name__ == "__main__":
    main()
