"""`WFSA`: a weighted automaton over bytes as a potential (weights are probabilities).

It also takes a genlm-grammar `WFSA` object (`WFSA(wfsa)`) and hands one
back as `.wfsa`; genlm-grammar is imported only then.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from genlm_lab.control.constraint.regular import automata
from genlm_lab.control.constraint.regular.automata import is_grammar_wfsa
from genlm_lab.control.core.weights import LazyWeights
from genlm_lab.control.potential.base import Potential

__all__ = ["WFSA"]


class WFSA(Potential):
    """A weighted finite-state automaton over bytes (or any symbols) as a potential.

    The weight of a string is the sum over accepting paths of the product of
    initial, arc and final weights (real, >= 0). `prefix(x)` sums over every
    completion of `x`, so `logw_next` is the exact next-symbol weight; the
    future weight of each state solves `beta = final + A beta` once.

    Build with `add_I(state, w)`, `add_arc(src, symbol, dst, w)`, `add_F(state, w)`,
    from a regex (`WFSA.from_regex`), or from a genlm-grammar `WFSA` over
    Float or Log weights (`WFSA(wfsa)`).

    Raises:
        ValueError: if the total weight of some state's future is infinite,
            or a genlm-grammar automaton has another semiring.
    """

    def __init__(self, wfsa: Any = None, vocabulary: Sequence[Hashable] | None = None) -> None:
        source = None
        if is_grammar_wfsa(wfsa) or isinstance(wfsa, automata.Automaton):
            source = wfsa
        elif wfsa is not None:
            vocabulary = wfsa  # genlm_lab's older call: WFSA(vocabulary)
        super().__init__(list(range(256)) if vocabulary is None else vocabulary)
        self._initial: dict[Hashable, float] = defaultdict(float)
        self._final: dict[Hashable, float] = defaultdict(float)
        self._arcs: dict[Hashable, dict[Hashable, dict[Hashable, float]]] = defaultdict(
            lambda: defaultdict(lambda: defaultdict(float))
        )
        self._compiled: tuple | None = None
        self._grammar_wfsa = None
        if source is not None:
            auto = automata.from_grammar_wfsa(source) if is_grammar_wfsa(source) else source
            self._load(auto)
            if is_grammar_wfsa(source) and automata._semiring(source) == "Log":
                self._grammar_wfsa = source  # kept as given; a Float one is converted on request

    def _load(self, auto: automata.Automaton) -> None:
        for state, w in auto.initial.items():
            if w > 0:
                self.add_I(state, w)
        for state, w in auto.final.items():
            if w > 0:
                self.add_F(state, w)
        for src, arcs in auto.arcs.items():
            for symbol, dst, w in arcs:
                if w > 0:
                    self.add_arc(src, symbol, dst, w)

    @classmethod
    def from_regex(cls, pattern: str, charset: Any = None, to_bytes: bool = True) -> WFSA:
        """A regex with GenLM's weights: each state spreads weight 1 evenly over its choices.

        Negated classes and `.` range over `charset` (default `string.printable`).

        Raises:
            ValueError: if the pattern cannot be compiled.
        """
        if not to_bytes:
            raise ValueError("genlm_lab's WFSA reads bytes: to_bytes=False is not supported")
        return cls(automata.regex_automaton(pattern, charset))

    def _automaton(self) -> automata.Automaton:
        out = automata.Automaton()
        out.initial.update(self._initial)
        out.final.update(self._final)
        for src, by_symbol in self._arcs.items():
            for symbol, dsts in by_symbol.items():
                out.arcs[src].extend((symbol, dst, w) for dst, w in dsts.items())
        return out

    @property
    def wfsa(self) -> Any:
        """This automaton as a genlm-grammar `WFSA` over Log weights (needs genlm-grammar)."""
        if self._grammar_wfsa is None:
            self._grammar_wfsa = automata.to_grammar_wfsa(self._automaton(), "Log")
        return self._grammar_wfsa

    def _repr_svg_(self) -> str:
        return self.wfsa._repr_svg_()

    def add_I(self, state: Hashable, weight: float = 1.0) -> None:  # noqa: N802 - genlm name
        self._initial[state] += self._check(weight)
        self._compiled = None
        self._grammar_wfsa = None

    def add_F(self, state: Hashable, weight: float = 1.0) -> None:  # noqa: N802 - genlm name
        self._final[state] += self._check(weight)
        self._compiled = None
        self._grammar_wfsa = None

    def add_arc(self, src: Hashable, symbol: Hashable, dst: Hashable, weight: float = 1.0) -> None:
        if symbol not in self.lookup or symbol == self.eos:
            raise ValueError(f"arc symbol {symbol!r} is not in the vocabulary")
        symbol = self.vocab[self.lookup[symbol]]
        self._arcs[src][symbol][dst] += self._check(weight)
        self._compiled = None
        self._grammar_wfsa = None

    @staticmethod
    def _check(weight: float) -> float:
        weight = float(weight)
        if not (weight >= 0 and math.isfinite(weight)):
            raise ValueError(f"WFSA weights must be finite and >= 0, got {weight}")
        return weight

    def _compile(self) -> tuple:
        if self._compiled is not None:
            return self._compiled
        states = sorted(
            {*self._initial, *self._final, *self._arcs}
            | {d for by in self._arcs.values() for ds in by.values() for d in ds},
            key=repr,
        )
        index = {s: i for i, s in enumerate(states)}
        n = len(states)
        per_symbol: dict[Hashable, np.ndarray] = {}
        total = np.zeros((n, n))
        for src, by_symbol in self._arcs.items():
            for symbol, dsts in by_symbol.items():
                m = per_symbol.setdefault(symbol, np.zeros((n, n)))
                for dst, w in dsts.items():
                    m[index[src], index[dst]] += w
                    total[index[src], index[dst]] += w
        final = np.array([self._final.get(s, 0.0) for s in states])
        initial = np.array([self._initial.get(s, 0.0) for s in states])
        if n and np.max(np.abs(np.linalg.eigvals(total))) >= 1 - 1e-12:
            raise ValueError(
                "the WFSA's total weight diverges (its arc weights sum to >= 1 around a cycle)"
            )
        beta = np.linalg.solve(np.eye(n) - total, final) if n else final
        self._compiled = (index, per_symbol, initial, final, beta)
        return self._compiled

    def _forward(self, context: Sequence[Any]) -> np.ndarray:
        index, per_symbol, initial, _, _ = self._compile()
        alpha = initial
        for symbol in context:
            m = per_symbol.get(symbol)
            alpha = alpha @ m if m is not None else np.zeros_like(alpha)
        return alpha

    @staticmethod
    def _log(x: float) -> float:
        return math.log(x) if x > 0 else -math.inf

    def _symbols(self, context: Sequence[Any]) -> list[Any]:
        return [self.vocab[i] for i in self.encode(context)]

    async def prefix(self, context: Sequence[Any]) -> float:
        return self._log(float(self._forward(self._symbols(context)) @ self._compile()[4]))

    async def complete(self, context: Sequence[Any]) -> float:
        return self._log(float(self._forward(self._symbols(context)) @ self._compile()[3]))

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        _, per_symbol, _, final, beta = self._compile()
        alpha = self._forward(self._symbols(context))
        base = float(alpha @ beta)
        if base <= 0:
            raise ValueError(f"Context {list(context)!r:.60} has zero weight under the WFSA")
        out = np.full(len(self.vocab_eos), -math.inf)
        for symbol, m in per_symbol.items():
            out[self.lookup[symbol]] = self._log(float(alpha @ m @ beta) / base)
        out[-1] = self._log(float(alpha @ final) / base)
        return self.make_lazy_weights(out)
