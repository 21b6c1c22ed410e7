"""`goal_grammar`: a Lark grammar of the PDDL goals a Blocksworld problem can state.

A constrained sampler that writes a goal under this grammar writes
`(:goal (and FACT ...))` with at least one fact, each fact one of the five
Blocksworld predicates over the problem's own blocks, with the right number
of arguments and never `(on x x)`. A blank is one space (answers end at a
newline), required between two words and optional next to a parenthesis.
PDDL reads any run of blanks, and so does the checker; the constraint keeps
one, so that a sampler spends no tokens on layout (a random model under a
grammar with `/ +/` blanks wrote runs of a hundred spaces). Each blank
belongs to the token before it, which keeps the grammar LALR(1): tests use
lark's LALR parser as an independent check. Everything the grammar derives parses with `parse_goal`
(tests check it), so the checker never sees malformed text from a
constrained method; what a goal means is left to the checker.

Use it as `BoolCFG.from_lark(goal_grammar(blocks))`; the text is cached per
tuple of blocks and `BoolCFG` caches the compiled grammar per text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

__all__ = ["goal_grammar"]

_BLOCK = re.compile(r"[a-z][a-z0-9_-]*")

_CORE = r"""
start: "(" _S? ":goal" _S? "(" _S? "and" _S? fact+ ")" _S? ")"
fact: "(" _S? atom ")" _S?
atom: "on" _S on_args _S?
    | "on-table" _S block _S?
    | "clear" _S block _S?
    | "holding" _S block _S?
    | "arm-empty" _S?
_S: " "
"""


def goal_grammar(blocks: Sequence[str]) -> str:
    """The Lark grammar of `(:goal (and ...))` over these block names.

    Raises:
        ValueError: with fewer than two blocks, a repeated name, or a name that
            is not a lower-case PDDL word (letters, digits, '-', '_').
    """
    return _grammar(tuple(blocks))


@lru_cache(maxsize=32)
def _grammar(blocks: tuple[str, ...]) -> str:
    if len(blocks) < 2:
        raise ValueError(f"a Blocksworld goal grammar needs at least two blocks, got {blocks}")
    if len(set(blocks)) != len(blocks):
        raise ValueError(f"block names repeat: {blocks}")
    for name in blocks:
        if not _BLOCK.fullmatch(name) or name in ("and", "on", "clear", "holding"):
            raise ValueError(f"{name!r} is not a usable block name (lower-case PDDL word)")
    lines = [_CORE.strip()]
    lines.append("block: " + " | ".join(_quote(b) for b in blocks))
    pairs = [
        f"{_quote(x)} _S (" + " | ".join(_quote(y) for y in blocks if y != x) + ")" for x in blocks
    ]
    lines.append("on_args: " + "\n    | ".join(pairs))
    return "\n".join(lines) + "\n"


def _quote(word: str) -> str:
    return '"' + word + '"'
