"""`finisher_for`: which finisher a factor gets (an exact automaton distance, else the search)."""

from __future__ import annotations

import json
import re
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from genlm_lab.control.constraint.finish_distance.automaton import AutomatonDistance
from genlm_lab.control.constraint.finish_distance.dfa import dfa_of, relaxed_dfa
from genlm_lab.control.constraint.finish_distance.guide import FinishGuide
from genlm_lab.control.constraint.finish_distance.search import SearchDistance
from genlm_lab.control.constraint.finish_distance.tokens import (
    ByteTrie,
    Finisher,
    byte_trie,
    token_bytes,
    usable_mask,
)
from genlm_lab.control.potential.base import Potential

__all__ = ["finisher_for"]


def _language(potential: Potential) -> tuple[Potential, Any] | None:
    """`(byte-level constraint, coerced view)` behind a factor over tokens, or None."""
    from genlm_lab.control.constraint.llg.grammar import GrammarPotential, TokenConstraint
    from genlm_lab.control.potential.coerce import Coerced, is_join

    if isinstance(potential, TokenConstraint):
        return potential.grammar, potential
    if isinstance(potential, Coerced) and is_join(potential.f):
        return potential.potential, potential
    if isinstance(potential, GrammarPotential) or getattr(potential, "kind", None):
        return potential, potential  # a byte-level constraint used as is
    return None


def _guide(potential: Potential, language: Any, trie: ByteTrie) -> FinishGuide | None:
    """A guess of the tokens to end a prefix, where the constraint can name a finish."""
    finish = getattr(language, "finish", None)
    tokens = token_bytes(potential)
    if not callable(finish) or tokens is None:
        return None
    stuck = getattr(type(language), "unfinishable", None)
    lines = (lambda: list(language.unfinishable)) if isinstance(stuck, property) else None
    return FinishGuide(finish, tokens, trie, unfinishable=lines)


def _parses_as_json(text: bytes) -> bool:
    """Whether `text` is UTF-8 JSON: what a `JsonSchema`'s completion check parses first."""
    try:
        json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return True


_CLOSERS = {ord("{"): ord("}"), ord("["): ord("]"), ord('"'): ord('"')}
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)


def _json_closer(text: bytes) -> tuple[int, int] | None:
    """`(byte, n)`: every JSON text that extends `text` ends in `byte` (an object's `}`, an
    array's `]`, a string's quote) and adds at least `n` closing bytes (one per string,
    array and object left open); None for a number or literal, or nothing yet."""
    first = text.lstrip(b" \t\r\n")[:1]
    if not first or first[0] not in _CLOSERS:
        return None
    bare = _STRINGS.sub(b"", text)  # what is left of a string is the one left open
    open_string = b'"' in bare
    bare = bare[: bare.index(b'"')] if open_string else bare
    depth = bare.count(b"{") + bare.count(b"[") - bare.count(b"}") - bare.count(b"]")
    return _CLOSERS[first[0]], max(depth, 0) + open_string


#: How near the end (tokens left) a guided factor's search tries to prove that nothing
#: fits: the guide keeps particles away from the end's dead ends, and the search over
#: the mask costs most of a budgeted run's time further out (bench_json_gen).
GUIDED_SEARCH_DEPTH = 3

_FINISHERS: weakref.WeakKeyDictionary[Potential, Any] = weakref.WeakKeyDictionary()
_NONE = object()


def finisher_for(potential: Potential, **search: Any) -> Finisher | None:
    """The finisher of one factor over tokens (cached per factor), or None.

    None for factors that are no constraint (language models, critics) and
    for those already under a budget (`WithinBudget`). Boolean factors get a
    `SearchDistance` at least; constraints with a known automaton an
    `AutomatonDistance`. `search` goes to `SearchDistance`.
    """
    from genlm_lab.control.constraint.json.budget import WithinBudget

    inner = getattr(potential, "potential", None)
    if type(potential).__name__ == "AutoBatched" and isinstance(inner, Potential):
        return finisher_for(inner, **search)
    if isinstance(potential, WithinBudget) or not getattr(potential, "is_boolean", False):
        return None
    found = _FINISHERS.get(potential) if not search else None
    if found is not None:
        return None if found is _NONE else found
    tokens = token_bytes(potential)
    out: Finisher | None = None
    if tokens is not None:
        found_language = _language(potential)
        language = found_language[0] if found_language else None
        usable = np.flatnonzero(usable_mask(potential)).tolist()
        dfa = dfa_of(language) if language is not None else None
        if dfa is not None:
            out = AutomatonDistance(dfa, tokens, usable, potential.encode, potential.lookup)
        else:
            guide = (
                _guide(potential, language, byte_trie(tokens, usable))
                if language is not None
                else None
            )
            from genlm_lab.control.constraint.json.schema import JsonSchema

            is_json = isinstance(language, JsonSchema)
            necessary = _parses_as_json if is_json else None
            closer = _json_closer if is_json else None
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
            relaxed = relaxed_dfa(language) if language is not None else None
            lower = None
            if relaxed is not None:
                bound = AutomatonDistance(
                    relaxed, tokens, usable, potential.encode, potential.lookup
                )

                def lower(ids: tuple[int, ...], bound: AutomatonDistance = bound) -> int | None:
                    return bound.needed(None, ids)

            out = SearchDistance(
                potential,
                upper=upper,
                necessary=necessary,
                closer=closer,
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
