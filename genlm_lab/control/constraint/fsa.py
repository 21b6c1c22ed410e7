"""Regular constraints: `BoolFSA` (a regex, masked natively) and `WFSA` (a weighted automaton).

Both also take a genlm-grammar `WFSA` object (`WFSA(wfsa)`, `BoolFSA(wfsa)`)
and hand one back as `.wfsa`; genlm-grammar is imported only then. A
`BoolFSA` built from an explicit automaton is an `AutomatonBoolFSA`, run here
as sets of states instead of by llguidance: a context is alive while some
state it reaches can still get to a final one (every arc of weight > 0 is
allowed, so cycles never diverge).
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from collections.abc import Hashable, Sequence
from typing import Any

import llguidance
import numpy as np

from genlm_lab.control.constraint import automata
from genlm_lab.control.constraint.errors import InvalidGrammar
from genlm_lab.control.constraint.llg.engine import check_grammar
from genlm_lab.control.constraint.llg.grammar import GrammarPotential
from genlm_lab.control.core.weights import LazyWeights
from genlm_lab.control.potential.base import Potential

__all__ = ["WFSA", "AutomatonBoolFSA", "BoolFSA"]


def _is_grammar_wfsa(obj: Any) -> bool:
    """Whether `obj` looks like a genlm-grammar `WFSA` (a semiring `R` and `arcs()`)."""
    return hasattr(obj, "R") and callable(getattr(obj, "arcs", None))


class BoolFSA(GrammarPotential):
    """A regular expression as a constraint over bytes: the whole string must match.

    `prefix(x)` is 0 iff some continuation of `x` matches, `complete(x)` iff
    `x` matches. Build one with `BoolFSA.from_regex(pattern)`. The syntax is
    Rust's `regex` crate (as Python's `re` for everyday patterns; `\\d` and
    `\\w` are Unicode-aware). `BoolFSA(wfsa)` reads a genlm-grammar automaton
    instead (every arc of weight > 0 allowed).
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> BoolFSA:
        wfsa = kwargs.get("wfsa", args[0] if args else None)
        if cls is BoolFSA and (_is_grammar_wfsa(wfsa) or isinstance(wfsa, automata.Automaton)):
            return super().__new__(AutomatonBoolFSA)
        return super().__new__(cls)

    @classmethod
    def from_regex(
        cls, pattern: str, charset: Any = None, to_bytes: bool = True, semiring: str = "boolean"
    ) -> BoolFSA:
        """Compile `pattern`.

        Args:
            pattern: the regex (the whole string must match).
            charset: accepted for genlm-control; used only by `.wfsa`.
            to_bytes: accepted for genlm-control; used only by `.wfsa`.
            semiring: "boolean" (default) or the deprecated "log": which
                semiring `.wfsa` uses. The mask is the same.

        Raises:
            InvalidGrammar (a ValueError): for an invalid pattern, naming the position,
                or one that matches no string at all (`[a&&b]`).
            ValueError: for another semiring.
        """
        if not isinstance(pattern, str):
            raise ValueError(f"a regex pattern must be a str, got {type(pattern).__name__}")
        if semiring not in ("boolean", "log"):
            raise ValueError(f"semiring must be 'boolean' or 'log', got {semiring!r}")
        if semiring == "log":
            warnings.warn(
                "BoolFSA.from_regex(semiring='log') is deprecated: a constraint is boolean; "
                "use the default semiring='boolean'",
                DeprecationWarning,
                stacklevel=2,
            )
        grammar = llguidance.LLMatcher.grammar_from_regex(pattern)
        check_grammar(grammar, "regex", pattern)
        out = cls(grammar, pattern, "regex")
        if not out.allowed([]).any():  # llguidance's lexer knows exactly which states are dead
            raise InvalidGrammar(f"the regex admits no string: {pattern}")
        out._wfsa_semiring = "Log" if semiring == "log" else "Boolean"
        out._charset = charset
        return out

    @property
    def wfsa(self) -> Any:
        """The regex as a genlm-grammar `WFSA` (Boolean weights; needs genlm-grammar)."""
        if self.kind != "regex":
            raise ValueError(f"{self.name} is a {self.kind}, not a regular expression")
        cached = self.__dict__.get("_wfsa")
        if cached is None:
            semiring = getattr(self, "_wfsa_semiring", "Boolean")
            charset = getattr(self, "_charset", None)
            cached = automata.to_grammar_wfsa(
                automata.regex_automaton(self.source, charset), semiring
            )
            self.__dict__["_wfsa"] = cached
        return cached

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        weights = await super().logw_next(context)
        if not np.isfinite(weights.weights).any():
            raise ValueError(f"Context {list(context)!r:.60} has zero weight under {self.name}")
        return weights


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
        if _is_grammar_wfsa(wfsa) or isinstance(wfsa, automata.Automaton):
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
            auto = automata.from_grammar_wfsa(source) if _is_grammar_wfsa(source) else source
            self._load(auto)
            if _is_grammar_wfsa(source) and automata._semiring(source) == "Log":
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


class AutomatonBoolFSA(BoolFSA):
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
        self._given = wfsa if _is_grammar_wfsa(wfsa) else None
        auto = (
            automata.from_grammar_wfsa(wfsa, allow=("Float", "Log", "Boolean"))
            if _is_grammar_wfsa(wfsa)
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
