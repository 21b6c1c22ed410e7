"""A seeded generator of Blocksworld goal-inference instances (the shipped set is its output).

Each instance has 3 to 9 blocks `b1`..`bn`, an initial state (towers on the
table, the arm empty), a goal of one of five kinds, an English description of
the goal, the PDDL problem with its goal left out, and the gold goal:

| kind | the goal | share |
|---|---|---|
| `towers` | a whole state: every tower named | 30% |
| `tower` | one whole tower (bottom on the table, top clear); other blocks free | 20% |
| `facts` | 1 to 4 facts of a random state (Planetarium's partial goals) | 30% |
| `table` | every block on the table | 10% |
| `invert` | every tower of the initial state upside down | 10% |

No goal holds in its initial state already. Instance `i` draws from its own
`random.Random(seed * 1_000_003 + i)`, so the first k instances of a set do
not depend on its size. The shipped file is `generate(SEED, COUNT)` written
by `to_jsonl`; regenerate it with
`python -m genlm_lab.eval.domains.goal_inference.generator [-o PATH]`.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Sequence
from importlib import resources
from itertools import pairwise
from pathlib import Path
from typing import Any

from genlm_lab.eval.domains.goal_inference.pddl import Fact, format_goal, problem_text, state_facts
from genlm_lab.eval.domains.goal_inference.wording import (
    describe_facts,
    describe_invert,
    describe_table,
    describe_tower,
    describe_towers,
)

__all__ = ["COUNT", "SEED", "generate", "generate_one", "random_stacks", "shipped_path", "to_jsonl"]

#: The seed and size of the shipped set.
SEED, COUNT = 2025, 240
MIN_BLOCKS, MAX_BLOCKS = 3, 9
KINDS: dict[str, float] = {"towers": 0.3, "tower": 0.2, "facts": 0.3, "table": 0.1, "invert": 0.1}


def shipped_path() -> Path:
    """Where the shipped instances live (`genlm_lab/eval/data/blocksworld/instances.jsonl`)."""
    data = resources.files("genlm_lab.eval").joinpath("data/blocksworld/instances.jsonl")
    return Path(str(data))


def random_stacks(blocks: Sequence[str], rng: random.Random) -> list[list[str]]:
    """The blocks in a random order, cut into 1 to ceil(n/2) towers (each listed bottom to top).

    At most ceil(n/2) towers, so that most states have some tall tower (with up
    to n towers half the states would be nearly all on the table).
    """
    order = list(blocks)
    rng.shuffle(order)
    n = len(order)
    cuts = sorted(rng.sample(range(1, n), rng.randint(1, (n + 1) // 2) - 1))
    return [order[a:b] for a, b in zip([0, *cuts], [*cuts, n], strict=True)]


def _goal(kind: str, init: list[list[str]], blocks: list[str], rng: random.Random):
    """(gold facts, description) of one kind of goal, or None when the kind does not fit."""
    if kind == "table":
        if all(len(s) == 1 for s in init):
            return None
        return [("on-table", b) for b in blocks], describe_table(len(blocks), rng)
    if kind == "invert":
        if all(len(s) == 1 for s in init):
            return None
        flipped = [list(reversed(s)) for s in init]
        return state_facts(flipped), describe_invert(rng)
    target = random_stacks(blocks, rng)
    if kind == "towers":
        return state_facts(target), describe_towers(target, rng)
    if kind == "tower":
        tall = [s for s in target if len(s) >= 2]
        if not tall:
            return None
        stack = rng.choice(tall)
        facts: list[Fact] = [("on-table", stack[0])]
        facts += [("on", u, lo) for lo, u in pairwise(stack)]
        facts.append(("clear", stack[-1]))
        return facts, describe_tower(stack, rng)
    pool = state_facts(target)
    facts = rng.sample(pool, rng.randint(1, min(4, len(pool))))
    return facts, describe_facts(facts, rng)


def generate_one(index: int, seed: int = SEED) -> dict[str, Any]:
    """Instance `index` of the set drawn with `seed` (a JSON-ready dict)."""
    rng = random.Random(seed * 1_000_003 + index)
    while True:
        n = rng.randint(MIN_BLOCKS, MAX_BLOCKS)
        blocks = [f"b{k}" for k in range(1, n + 1)]
        init = random_stacks(blocks, rng)
        kind = rng.choices(list(KINDS), weights=list(KINDS.values()))[0]
        made = _goal(kind, init, blocks, rng)
        if made is None:
            continue
        gold, text = made
        init_facts = state_facts(init)
        if set(gold) <= set(init_facts):  # already true at the start: draw again
            continue
        return {
            "instance_id": index,
            "kind": kind,
            "blocks": blocks,
            "init": init,
            "nl_goal": text,
            "problem": problem_text(f"blocksworld-{index}", blocks, init_facts),
            "gold": format_goal(gold),
        }


def generate(seed: int = SEED, count: int = COUNT) -> list[dict[str, Any]]:
    """`count` instances drawn with `seed`.

    Raises:
        ValueError: if count is negative.
    """
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    return [generate_one(i, seed) for i in range(count)]


def to_jsonl(instances: Sequence[dict[str, Any]]) -> str:
    """One JSON object per line, keys in a fixed order: the shipped file's exact text."""
    return "".join(json.dumps(inst, ensure_ascii=False) + "\n" for inst in instances)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m genlm_lab.eval.domains.goal_inference.generator`: write a set as JSONL."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--count", type=int, default=COUNT)
    parser.add_argument("-o", "--output", type=Path, default=None, help="default: the shipped file")
    args = parser.parse_args(argv)
    out = args.output or shipped_path()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(to_jsonl(generate(args.seed, args.count)), encoding="utf-8")
    print(f"wrote {args.count} instances (seed {args.seed}) to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
