"""`BoolCFG`: a context-free grammar in Lark syntax as a constraint over bytes."""

from __future__ import annotations

from functools import lru_cache

import llguidance

from genlm_lab.control.constraint.grammar import GrammarPotential
from genlm_lab.control.constraint.guidance import check_grammar

__all__ = ["BoolCFG"]


class BoolCFG(GrammarPotential):
    """A Lark grammar as a constraint over bytes: the whole string must derive from `start`.

    Build one with `BoolCFG.from_lark(text)`. Terminals are strings and
    regexes as in Lark; `%ignore` and `%import common.*` work. Masks come from
    llguidance's Earley parser over a lazy lexer, so ambiguous terminals are
    split wherever the grammar allows.
    """

    @classmethod
    def from_lark(cls, grammar: str) -> BoolCFG:
        """Compile a Lark grammar.

        Raises:
            InvalidGrammar (a ValueError): for an invalid grammar, naming line and column.
        """
        if not isinstance(grammar, str):
            raise ValueError(f"a Lark grammar must be a str, got {type(grammar).__name__}")
        return cls(_compile(grammar), grammar, "Lark grammar")


@lru_cache(maxsize=64)
def _compile(grammar: str) -> str:
    """llguidance's text of a checked Lark grammar (cached: big grammars are checked once)."""
    compiled = llguidance.LLMatcher.grammar_from_lark(grammar)
    check_grammar(compiled, "Lark grammar", grammar)
    return compiled
