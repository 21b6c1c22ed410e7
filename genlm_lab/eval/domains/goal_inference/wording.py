"""Natural-language goal descriptions of Blocksworld goals, in several phrasings.

Each function turns one kind of goal into an English sentence whose meaning
is exactly that goal's set of states, choosing among phrasings with the
caller's `random.Random` (so a seeded generator stays deterministic). Towers
are lists of blocks from bottom to top. A partial description ends by saying
that nothing else matters, so a reader knows not to add facts.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from itertools import pairwise

from genlm_lab.eval.domains.goal_inference.pddl import Fact

__all__ = [
    "describe_facts",
    "describe_invert",
    "describe_table",
    "describe_tower",
    "describe_towers",
]

_FACT = {
    "on": (
        "{0} is on {1}",
        "{0} sits on top of {1}",
        "{1} is directly under {0}",
        "{0} is stacked on {1}",
    ),
    "on-table": (
        "{0} is on the table",
        "{0} rests directly on the table",
        "{0} stands on the table",
    ),
    "clear": ("{0} is clear", "nothing is on top of {0}", "{0} has a clear top"),
    "holding": ("the arm holds {0}", "{0} is in the hand"),
    "arm-empty": ("the arm is empty", "the robot arm holds nothing", "nothing is in the hand"),
}
_FACTS_INTRO = (
    "Your goal is that {}.",
    "Make it so that {}.",
    "In the goal state, {}.",
    "Reach a state where {}.",
)
_REST = ("Nothing else matters.", "The rest does not matter.", "Other blocks may be anywhere.")
_TOWERS_INTRO = (
    "Arrange all the blocks into these towers: {}.",
    "In the goal state the blocks form exactly these stacks: {}.",
    "Build these towers out of all {n} blocks: {}.",
)
_TABLE = (
    "Put every block on the table.",
    "Unstack everything so that all the blocks rest on the table.",
    "No block should be on another block: all of them go on the table.",
    "Lay out all {n} blocks side by side on the table.",
)
_INVERT = (
    "Turn every tower upside down: the top block of each tower ends at its bottom and its "
    "bottom block at its top. Blocks standing alone stay alone on the table.",
    "Reverse the order of every stack of two or more blocks, so that each stack is rebuilt "
    "upside down where it stands; single blocks stay on the table.",
    "Invert each tower (its bottom block becomes its top one); a block on its own stays on "
    "the table.",
)


def _join(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def describe_fact(fact: Fact, rng: random.Random) -> str:
    """One fact as an English clause."""
    return rng.choice(_FACT[fact[0]]).format(*fact[1:])


def describe_facts(facts: Sequence[Fact], rng: random.Random) -> str:
    """A partial goal, fact by fact, closed by a sentence saying nothing else matters."""
    clauses = [describe_fact(f, rng) for f in facts]
    return rng.choice(_FACTS_INTRO).format(_join(clauses)) + " " + rng.choice(_REST)


def _stack_phrase(stack: Sequence[str], rng: random.Random) -> str:
    """A tower inside a description that places every block (so its ends need no saying)."""
    if len(stack) == 1:
        return rng.choice(("{} alone on the table", "{} by itself on the table")).format(stack[0])
    top_down = list(reversed(stack))
    style = rng.randrange(4)
    if style == 0:
        return "the tower " + "-".join(top_down) + " (top to bottom)"
    if style == 1:
        return " on ".join(top_down)
    if style == 2:
        ups = [f"{u} on {lo}" for lo, u in pairwise(stack)]
        return f"{stack[0]} on the table, " + ", ".join(ups)
    middle = "".join(f", then {b}" for b in stack[1:-1])
    return f"a stack with {stack[0]} at the bottom{middle}, and {stack[-1]} at the top"


def describe_towers(stacks: Sequence[Sequence[str]], rng: random.Random) -> str:
    """A goal that places every block: these towers and nothing else."""
    n = sum(len(s) for s in stacks)
    parts = [_stack_phrase(s, rng) for s in stacks]
    return rng.choice(_TOWERS_INTRO).format("; ".join(parts), n=n)


def describe_tower(stack: Sequence[str], rng: random.Random) -> str:
    """One whole tower (bottom on the table, nothing on top); the other blocks are free."""
    top, bottom, top_down = stack[-1], stack[0], list(reversed(stack))
    style = rng.randrange(3)
    if style == 0:
        text = f"Build the tower {'-'.join(top_down)} (top to bottom) on the table, with nothing on {top}."
    elif style == 1:
        steps = [f"{u} on {lo}" for lo, u in pairwise(stack)]
        text = f"Stack {_join(steps)}; {bottom} stays on the table and {top} stays clear."
    else:
        ups = "".join(f", {u} on {lo}" for lo, u in pairwise(stack))
        text = f"{bottom} should be on the table{ups}, and nothing should be on {top}."
        text = text[0].upper() + text[1:]
    return text + " " + rng.choice(_REST)


def describe_table(n: int, rng: random.Random) -> str:
    """Every block on the table."""
    return rng.choice(_TABLE).format(n=n)


def describe_invert(rng: random.Random) -> str:
    """Every tower of the initial state upside down (read with the initial state)."""
    return rng.choice(_INVERT)
