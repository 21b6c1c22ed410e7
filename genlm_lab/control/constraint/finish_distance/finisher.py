"""`finisher_for`: which finisher a factor gets (an exact automaton distance, else the search)."""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from genlm_lab.control.constraint.finish_distance.automaton import AutomatonDistance
from genlm_lab.control.constraint.finish_distance.dfa import (
    dfa_of,
)
from genlm_lab.control.constraint.finish_distance.search import SearchDistance
from genlm_lab.control.constraint.finish_distance.tokens import (
    ByteTrie,
    Finisher,
    byte_trie,
    fewest_tokens,
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


def _json_upper(potential: Potential, language: Any, trie: ByteTrie) -> Callable | None:
    """A short completion's token count, where the constraint can name one (`finish`)."""
    finish = getattr(language, "finish", None)
    if not callable(finish):
        return None
    tokens = token_bytes(potential)

    def upper(context: Sequence[Any]) -> int | None:
        text = b"".join(tokens[i] for i in potential.encode(context) if i < len(tokens))
        try:
            tail = finish(text)
        except Exception:  # noqa: BLE001 - no finish is no upper bound, never an error
            return None
        if tail is None:
            return None
        n = fewest_tokens(trie, tail)
        return None if n is None else n + 1

    return upper


def _parses_as_json(text: bytes) -> bool:
    """Whether `text` is UTF-8 JSON: what a `JsonSchema`'s completion check parses first."""
    try:
        json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return True


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
            upper = (
                _json_upper(potential, language, byte_trie(tokens, usable))
                if language is not None
                else None
            )
            from genlm_lab.control.constraint.json.schema import JsonSchema

            necessary = _parses_as_json if isinstance(language, JsonSchema) else None
            out = SearchDistance(potential, upper=upper, necessary=necessary, **search)
    else:
        out = SearchDistance(potential, **search)
    if not search:
        try:
            _FINISHERS[potential] = _NONE if out is None else out
        except TypeError:
            pass
    return out
