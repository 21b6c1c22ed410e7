"""Regular constraints: `BoolFSA` (a regex, masked natively) and `WFSA` (a weighted automaton)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence
from typing import Any

import llguidance
import numpy as np

from genlm_lab.control._guidance import check_grammar
from genlm_lab.control.grammar_base import GrammarPotential
from genlm_lab.control.potential import Potential
from genlm_lab.control.weights import LazyWeights

__all__ = ["WFSA", "BoolFSA"]


class BoolFSA(GrammarPotential):
    """A regular expression as a constraint over bytes: the whole string must match.

    `prefix(x)` is 0 iff some continuation of `x` matches, `complete(x)` iff
    `x` matches. Build one with `BoolFSA.from_regex(pattern)`. The syntax is
    Rust's `regex` crate (as Python's `re` for everyday patterns; `\\d` and
    `\\w` are Unicode-aware).
    """

    @classmethod
    def from_regex(cls, pattern: str) -> BoolFSA:
        """Compile `pattern`.

        Raises:
            InvalidGrammar (a ValueError): for an invalid pattern, naming the position.
        """
        if not isinstance(pattern, str):
            raise ValueError(f"a regex pattern must be a str, got {type(pattern).__name__}")
        grammar = llguidance.LLMatcher.grammar_from_regex(pattern)
        check_grammar(grammar, "regex", pattern)
        return cls(grammar, pattern, "regex")


class WFSA(Potential):
    """A weighted finite-state automaton over bytes (or any symbols) as a potential.

    The weight of a string is the sum over accepting paths of the product of
    initial, arc and final weights (real, >= 0). `prefix(x)` sums over every
    completion of `x`, so `logw_next` is the exact next-symbol weight; the
    future weight of each state solves `beta = final + A beta` once.

    Build with `add_I(state, w)`, `add_arc(src, symbol, dst, w)`, `add_F(state, w)`.

    Raises:
        ValueError: if the total weight of some state's future is infinite.
    """

    def __init__(self, vocabulary: Sequence[Hashable] | None = None) -> None:
        super().__init__(list(range(256)) if vocabulary is None else vocabulary)
        self._initial: dict[Hashable, float] = defaultdict(float)
        self._final: dict[Hashable, float] = defaultdict(float)
        self._arcs: dict[Hashable, dict[Hashable, dict[Hashable, float]]] = defaultdict(
            lambda: defaultdict(lambda: defaultdict(float))
        )
        self._compiled: tuple | None = None

    def add_I(self, state: Hashable, weight: float = 1.0) -> None:  # noqa: N802 - genlm name
        self._initial[state] += self._check(weight)
        self._compiled = None

    def add_F(self, state: Hashable, weight: float = 1.0) -> None:  # noqa: N802 - genlm name
        self._final[state] += self._check(weight)
        self._compiled = None

    def add_arc(self, src: Hashable, symbol: Hashable, dst: Hashable, weight: float = 1.0) -> None:
        if symbol not in self.lookup or symbol == self.eos:
            raise ValueError(f"arc symbol {symbol!r} is not in the vocabulary")
        symbol = self.vocab[self.lookup[symbol]]
        self._arcs[src][symbol][dst] += self._check(weight)
        self._compiled = None

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
            raise ValueError(f"the context {list(context)!r:.60} has weight zero under the WFSA")
        out = np.full(len(self.vocab_eos), -math.inf)
        for symbol, m in per_symbol.items():
            out[self.lookup[symbol]] = self._log(float(alpha @ m @ beta) / base)
        out[-1] = self._log(float(alpha @ final) / base)
        return self.make_lazy_weights(out)
