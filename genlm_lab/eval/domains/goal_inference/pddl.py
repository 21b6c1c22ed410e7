"""Blocksworld facts as PDDL text: read a goal, write facts, goals and problems.

A fact is a tuple: `("on", "b1", "b2")`, `("on-table", "b3")`, `("clear", "b1")`,
`("holding", "b2")` or `("arm-empty",)`, the five predicates of the IPC
Blocksworld domain (the one Planetarium uses). `parse_goal` reads what a model
writes, `(:goal (and (on b1 b2) (clear b1)))`, into facts over a known set of
blocks; it is lenient where PDDL is (case, blanks, a bare fact instead of an
`and`) and refuses the rest with one `ValueError` that names the problem.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from itertools import pairwise

__all__ = [
    "ARITY",
    "Fact",
    "format_fact",
    "format_goal",
    "parse_goal",
    "problem_text",
    "sort_facts",
    "state_facts",
]

#: A ground Blocksworld fact: the predicate, then its blocks.
Fact = tuple[str, ...]

#: Predicate -> number of blocks it takes.
ARITY: dict[str, int] = {"on": 2, "on-table": 1, "clear": 1, "holding": 1, "arm-empty": 0}

#: Order of predicates when facts are written out.
_ORDER = {"arm-empty": 0, "on-table": 1, "on": 2, "clear": 3, "holding": 4}

_TOKEN = re.compile(r"\(|\)|[^\s()]+")


def format_fact(fact: Fact) -> str:
    """`("on", "b1", "b2")` -> `"(on b1 b2)"`."""
    return "(" + " ".join(fact) + ")"


def format_goal(facts: Iterable[Fact]) -> str:
    """The goal section `(:goal (and ...))` of these facts, in the order given, on one line."""
    return "(:goal (and " + " ".join(format_fact(f) for f in facts) + "))"


def state_facts(stacks: Sequence[Sequence[str]]) -> list[Fact]:
    """Every true fact of a state with the arm empty: `stacks` lists towers bottom to top.

    Written tower by tower: the bottom on the table, each block on the one
    below, the top clear; `(arm-empty)` first.
    """
    facts: list[Fact] = [("arm-empty",)]
    for stack in stacks:
        if not stack:
            raise ValueError("a tower must hold at least one block")
        facts.append(("on-table", stack[0]))
        facts.extend(("on", upper, lower) for lower, upper in pairwise(stack))
        facts.append(("clear", stack[-1]))
    return facts


def problem_text(name: str, blocks: Sequence[str], init: Iterable[Fact]) -> str:
    """A Blocksworld problem in PDDL up to its goal, which is left for the model to write.

    `problem_text(...) + goal + "\\n)"` is the whole problem (see `GoalInferenceInstance.full_problem`).
    """
    lines = [
        f"(define (problem {name})",
        "  (:domain blocksworld)",
        "  (:requirements :strips)",
        "  (:objects " + " ".join(blocks) + ")",
        "  (:init",
        *("    " + format_fact(f) for f in init),
        "  )",
    ]
    return "\n".join(lines) + "\n"


def parse_goal(text: str, blocks: Sequence[str]) -> list[Fact]:
    """The facts of a PDDL goal over `blocks`, in the order written (duplicates kept).

    Accepts `(:goal (and fact ...))`, `(:goal fact)` and the same without
    `(:goal ...)`; any case, any blanks. A goal is a conjunction of positive
    facts, as in Planetarium: `not`, `or` and quantifiers are refused.

    Raises:
        ValueError: for unbalanced parentheses, text after the goal, an unknown
            predicate or block, a wrong number of arguments, or a connective other than `and`.
    """
    known = set(blocks)
    tree = _read(text)
    if tree and tree[0] == ":goal":
        if len(tree) != 2:
            raise ValueError(f"(:goal ...) must hold one formula, it holds {len(tree) - 1}")
        tree = tree[1]
    if not isinstance(tree, list) or not tree:
        raise ValueError(f"(:goal ...) must hold a parenthesised formula, got {_show(tree)}")
    items = tree[1:] if tree[0] == "and" else [tree]
    return [_fact(item, known) for item in items]


def _read(text: str) -> list:
    """One S-expression (lower-cased) as nested lists of words."""
    tokens = _TOKEN.findall(text.lower())
    if not tokens:
        raise ValueError("the goal is empty")
    stack: list[list] = [[]]
    for i, token in enumerate(tokens):
        if token == "(":
            stack.append([])
        elif token == ")":
            if len(stack) == 1:
                raise ValueError("a ')' closes nothing")
            done = stack.pop()
            stack[-1].append(done)
            if len(stack) == 1 and i + 1 < len(tokens):
                if tokens[i + 1] == ")":
                    raise ValueError("a ')' closes nothing")
                raise ValueError(f"text after the goal: {' '.join(tokens[i + 1 : i + 6])!r}")
        else:
            stack[-1].append(token)
    if len(stack) > 1:
        raise ValueError(f"{len(stack) - 1} unclosed '('")
    top = stack[0]
    if len(top) != 1 or not isinstance(top[0], list):
        raise ValueError(f"the goal must be one parenthesised formula, got {text.strip()[:40]!r}")
    return top[0]


def _fact(item: object, known: set[str]) -> Fact:
    if not isinstance(item, list) or not item or not isinstance(item[0], str):
        raise ValueError(f"expected a fact such as (on b1 b2), got {_show(item)}")
    predicate, args = item[0], item[1:]
    if predicate in ("not", "or", "imply", "forall", "exists", "and", "when"):
        raise ValueError(f"a goal is a conjunction of facts; {predicate!r} is not allowed here")
    if predicate not in ARITY:
        raise ValueError(f"unknown predicate {predicate!r}; Blocksworld has {', '.join(ARITY)}")
    if len(args) != ARITY[predicate] or not all(isinstance(a, str) for a in args):
        raise ValueError(f"{predicate} takes {ARITY[predicate]} blocks, got {_show(item)}")
    for arg in args:
        if arg not in known:
            raise ValueError(
                f"unknown block {arg!r} in {_show(item)}; the blocks are {sorted(known)}"
            )
    return (predicate, *args)


def _show(item: object) -> str:
    if isinstance(item, list):
        return "(" + " ".join(_show(i) for i in item) + ")"
    return str(item)


def sort_facts(facts: Iterable[Fact]) -> list[Fact]:
    """Facts in a fixed order (predicate, then blocks): how a set of facts is shown."""
    return sorted(set(facts), key=lambda f: (_ORDER[f[0]], f[1:]))
