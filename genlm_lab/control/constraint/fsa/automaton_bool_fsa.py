"""`AutomatonBoolFSA`: a `BoolFSA` whose language is an explicit automaton's.

Made by `BoolFSA(wfsa)` (a genlm-grammar `WFSA` or an `Automaton`), it runs
here as sets of states instead of by llguidance: a context is alive while
some state it reaches can still get to a final one (every arc of weight > 0 is
allowed, so cycles never diverge). Its automaton is its budget's exact one.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from genlm_lab.control.constraint.errors import InvalidGrammar
from genlm_lab.control.constraint.fsa.bool_fsa import BoolFSA
from genlm_lab.control.constraint.regular import automata
from genlm_lab.control.constraint.regular.automata import is_grammar_wfsa
from genlm_lab.control.constraint.regular.dfa import ByteDfa
from genlm_lab.control.core.weights import LazyWeights
from genlm_lab.control.potential.base import Potential

__all__ = ["AutomatonBoolFSA"]


class AutomatonBoolFSA(BoolFSA, reads_automata=True):
    """A `BoolFSA` over bytes whose language is an automaton's (made by `BoolFSA(wfsa)`).

    Args:
        wfsa: a genlm-grammar `WFSA` (Float, Log or Boolean) or an `Automaton`.

    Raises:
        InvalidGrammar (a ValueError): if no final state is reachable from an initial one.
    """

    def __init__(self, wfsa: Any = None, **kwargs: Any) -> None:
        wfsa = kwargs.pop("wfsa", wfsa)
        if kwargs:
            raise TypeError(f"unexpected arguments {sorted(kwargs)}")
        Potential.__init__(self, list(range(256)))
        self.source = repr(wfsa)
        self.kind = "automaton"
        self._given = wfsa if is_grammar_wfsa(wfsa) else None
        auto = (
            automata.from_grammar_wfsa(wfsa, allow=("Float", "Log", "Boolean"))
            if is_grammar_wfsa(wfsa)
            else wfsa
        )
        live = auto.live()
        self._start = frozenset(s for s, w in auto.initial.items() if w > 0 and s in live)
        if not self._start:
            raise InvalidGrammar("the automaton admits no string: no final state is reachable")
        self._finals = frozenset(s for s, w in auto.final.items() if w > 0)
        self._moves: dict[Hashable, dict[int, set[Hashable]]] = defaultdict(
            lambda: defaultdict(set)
        )
        for src, arcs in auto.arcs.items():
            for symbol, dst, w in arcs:
                if w > 0 and dst in live:
                    self._moves[src][symbol].add(dst)
        self._automaton = auto

    def _states(self, context: Sequence[Any]) -> frozenset:
        states = self._start
        for byte in self.encode(context):
            if byte == len(self.vocab):  # EOS
                break
            states = frozenset(d for s in states for d in self._moves.get(s, {}).get(byte, ()))
            if not states:
                break
        return states

    async def prefix(self, context: Sequence[Any]) -> float:
        return 0.0 if self._states(context) else -math.inf

    async def complete(self, context: Sequence[Any]) -> float:
        return 0.0 if self._states(context) & self._finals else -math.inf

    async def score(self, context: Sequence[Any]) -> float:
        return await Potential.score(self, context)

    def allowed(self, context: Sequence[Any]) -> np.ndarray:
        states = self._states(context)
        mask = np.zeros(257, dtype=bool)
        for s in states:
            for byte in self._moves.get(s, {}):
                mask[byte] = True
        mask[256] = bool(states & self._finals)
        return mask

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        mask = self.allowed(context)
        if not mask.any():
            raise ValueError(f"Context {list(context)!r:.60} has zero weight under {self.name}")
        return self.make_lazy_weights(np.where(mask, 0.0, -math.inf))

    async def batch_logw_next(self, contexts: Sequence[Sequence[Any]]) -> list[LazyWeights]:
        return [await self.logw_next(c) for c in contexts]

    def _coerce_tokens(self, *args: Any) -> None:
        return None  # no native mask: coerce walks the token trie

    @property
    def wfsa(self) -> Any:
        """The automaton as a genlm-grammar `WFSA` over Boolean weights (needs genlm-grammar)."""
        given = self._given
        if given is not None and automata._semiring(given) == "Boolean":
            return given
        cached = self.__dict__.get("_wfsa")
        if cached is None:
            cached = automata.to_grammar_wfsa(self._automaton, "Boolean")
            self.__dict__["_wfsa"] = cached
        return cached

    def _repr_svg_(self) -> str:
        return self.wfsa._repr_svg_()

    async def cleanup(self) -> None:
        return None

    def __repr__(self) -> str:
        return f"BoolFSA(automaton, {len(self._moves)} states with arcs)"

    def exact_dfa(self) -> ByteDfa | None:
        """The automaton itself, determinised, for token budgets (None: too many states)."""
        moves = {s: {b: set(d) for b, d in by.items()} for s, by in self._moves.items()}
        return ByteDfa.from_nfa(self._start, moves, self._finals)
