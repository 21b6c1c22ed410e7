"""`fit_check_for`: which finisher a factor gets (an exact automaton distance, else the search)."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from genlm_lab.control.constraint.budget.automaton import AutomatonDistance
from genlm_lab.control.constraint.budget.guide import FinishGuide
from genlm_lab.control.constraint.budget.hooks import BudgetHooks, OwnBudget
from genlm_lab.control.constraint.budget.lower_bound import lower_bound
from genlm_lab.control.constraint.budget.search import SearchDistance
from genlm_lab.control.constraint.budget.tokens import (
    ByteTrie,
    FitCheck,
    byte_trie,
    token_bytes,
    usable_mask,
)
from genlm_lab.control.constraint.llg import GrammarPotential, TokenConstraint
from genlm_lab.control.potential import AutoBatched, Coerced, Potential, is_join

__all__ = ["fit_check_for"]


def byte_language(potential: Potential) -> Potential | None:
    """The byte-level constraint behind a factor over tokens (itself, if it is one), or None."""
    if isinstance(potential, TokenConstraint):
        return potential.grammar
    if isinstance(potential, Coerced) and is_join(potential.f):
        return potential.potential
    if isinstance(potential, (GrammarPotential, BudgetHooks)):
        return potential  # a byte-level constraint used as is
    return None


def _guide(potential: Potential, language: Any, trie: ByteTrie) -> FinishGuide | None:
    """A guess of the tokens to end a prefix, where the constraint can name a finish."""
    finish = getattr(language, "finish", None)
    tokens = token_bytes(potential)
    if not callable(finish) or tokens is None:
        return None
    stuck = getattr(type(language), "unfinishable", None)
    lines = (lambda: list(language.unfinishable)) if isinstance(stuck, property) else None
    reuses = language.finish_reuses if isinstance(language, BudgetHooks) else None
    return FinishGuide(finish, tokens, trie, unfinishable=lines, reuses=reuses)


#: How near the end (tokens left) a guided factor's search tries to prove that nothing
#: fits: the guide keeps particles away from the end's dead ends, and further out the
#: search over the mask would take most of a budgeted run's time.
GUIDED_SEARCH_DEPTH = 3

_FINISHERS: weakref.WeakKeyDictionary[Potential, Any] = weakref.WeakKeyDictionary()
_NONE = object()


def fit_check_for(potential: Potential, **search: Any) -> FitCheck | None:
    """The finisher of one factor over tokens (cached per factor), or None.

    None for factors that are no constraint (language models, critics); a
    `WithinBudget` gets its constraint's (the same refusals and guide). Boolean factors get a
    `SearchDistance` at least; constraints with a known automaton an
    `AutomatonDistance`. `search` goes to `SearchDistance`.
    """
    if isinstance(potential, AutoBatched):
        return fit_check_for(potential.potential, **search)
    if isinstance(potential, OwnBudget):  # `WithinBudget`: the same check as its constraint's
        return fit_check_for(potential.inner, **search)
    if not getattr(potential, "is_boolean", False):
        return None
    found = _FINISHERS.get(potential) if not search else None
    if found is not None:
        return None if found is _NONE else found
    tokens = token_bytes(potential)
    out: FitCheck | None = None
    if tokens is not None:
        language = byte_language(potential)
        hooks = language if isinstance(language, BudgetHooks) else BudgetHooks()
        usable = np.flatnonzero(usable_mask(potential)).tolist()
        dfa = hooks.exact_dfa()
        if dfa is not None:
            out = AutomatonDistance(dfa, tokens, usable, potential.encode, potential.lookup)
        else:
            guide = (
                _guide(potential, language, byte_trie(tokens, usable))
                if language is not None
                else None
            )
            upper = None
            if guide is not None:

                def upper(context: Sequence[Any], guide: FinishGuide = guide) -> int | None:
                    return guide.count(guide.tail(tuple(potential.encode(context))))

            if len(usable) <= SearchDistance.max_branch_default:
                depth = {"max_depth": None}  # a small vocabulary: search as far as it takes
            elif guide is not None:
                depth = {"max_depth": GUIDED_SEARCH_DEPTH}
            else:
                depth = {}
            lower = lower_bound(language, tokens, usable, potential.encode, potential.lookup)
            out = SearchDistance(
                potential,
                upper=upper,
                closing=hooks.closing(),
                **{"lower": lower, **depth, **search},
            )
            out.guide = guide
    else:
        out = SearchDistance(potential, **search)
    if not search:
        try:
            _FINISHERS[potential] = _NONE if out is None else out
        except TypeError:
            pass
    return out
