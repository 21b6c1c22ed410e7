"""The lower bound on the tokens a constraint still needs: its superset's exact count.

Where a constraint's exact automaton is not known, its family may name a
regex that matches every text of it (`BudgetHooks.superset_regex`: a regex
itself, a regular Lark grammar's regular superset). `regular.superset` reads
that regex as a byte automaton holding every dialect's reading of it, and the
fewest tokens that end a prefix there (`AutomatonDistance`) is at most the
constraint's own: a prefix needing more than the tokens left is refused
soundly at any depth, without reading a mask (`SearchDistance`'s `lower`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from genlm_lab.control.constraint.budget.automaton import AutomatonDistance
from genlm_lab.control.constraint.budget.hooks import BudgetHooks
from genlm_lab.control.constraint.regular.dfa import ByteDfa
from genlm_lab.control.constraint.regular.superset import regex_superset_dfa

__all__ = ["MAX_SUPERSET", "MAX_SUPERSET_STATES", "lower_bound", "superset_dfa"]

#: The longest superset regex compiled (a grammar rule used in many places is written
#: out in each), and the most states its automaton may have: a bound, not the
#: constraint, so it is given up where it would cost more than it saves (each state
#: reads the vocabulary once).
MAX_SUPERSET = 4000
MAX_SUPERSET_STATES = 512


def superset_dfa(language: Any) -> ByteDfa | None:
    """An automaton holding every text of the byte-level constraint `language`, from its
    family's `superset_regex`; None where it names none or the automaton is too big."""
    pattern = language.superset_regex() if isinstance(language, BudgetHooks) else None
    if pattern is None or len(pattern) > MAX_SUPERSET:
        return None
    return regex_superset_dfa(pattern, max_states=MAX_SUPERSET_STATES)


def lower_bound(
    language: Any,
    tokens: Sequence[bytes],
    usable: Sequence[int],
    encode: Callable[[Sequence[Any]], list[int]],
    lookup: dict[Any, int] | None,
) -> Callable[[tuple[int, ...]], int | None] | None:
    """`ids -> fewest tokens (EOS included) that may end them`, a lower bound, or None."""
    dfa = superset_dfa(language)
    if dfa is None:
        return None
    bound = AutomatonDistance(dfa, tokens, usable, encode, lookup)

    def needed(ids: tuple[int, ...]) -> int | None:
        return bound.needed(None, ids)

    return needed
