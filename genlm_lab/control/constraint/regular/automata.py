"""Byte automata for `WFSA` and `BoolFSA`: from regexes, and to and from genlm-grammar's `WFSA`.

An automaton here is plain data: `initial` and `final` weights per state and
`arcs[state] = [(byte, next_state, weight), ...]`, with real weights >= 0.
A regex becomes one through interegular's DFA over characters (negated
classes range over `charset`, by default `string.printable`), each character
spelled as its UTF-8 bytes. genlm-grammar is imported only where one of its
`WFSA` objects is read or asked for, so it stays optional.
"""

from __future__ import annotations

import math
import string
from collections import defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Automaton",
    "from_grammar_wfsa",
    "is_grammar_wfsa",
    "regex_automaton",
    "to_grammar_wfsa",
]


def is_grammar_wfsa(obj: Any) -> bool:
    """Whether `obj` looks like a genlm-grammar `WFSA` (a semiring `R` and `arcs()`)."""
    return hasattr(obj, "R") and callable(getattr(obj, "arcs", None))


@dataclass
class Automaton:
    """Weighted arcs over symbols (byte values): what `WFSA` and `BoolFSA` compile."""

    initial: dict[Hashable, float] = field(default_factory=lambda: defaultdict(float))
    final: dict[Hashable, float] = field(default_factory=lambda: defaultdict(float))
    arcs: dict[Hashable, list[tuple[Any, Hashable, float]]] = field(
        default_factory=lambda: defaultdict(list)
    )

    def states(self) -> set[Hashable]:
        out = {*self.initial, *self.final, *self.arcs}
        out.update(dst for arcs in self.arcs.values() for _, dst, _ in arcs)
        return out

    def live(self) -> set[Hashable]:
        """States from which some final state is reachable with weight > 0."""
        back: dict[Hashable, set[Hashable]] = defaultdict(set)
        for src, arcs in self.arcs.items():
            for _, dst, w in arcs:
                if w > 0:
                    back[dst].add(src)
        todo = [s for s, w in self.final.items() if w > 0]
        seen = set(todo)
        while todo:
            for src in back[todo.pop()]:
                if src not in seen:
                    seen.add(src)
                    todo.append(src)
        return seen


def regex_automaton(pattern: str, charset: Iterable[str] | None = None) -> Automaton:
    """A byte automaton for `pattern` (whole-string match) with GenLM's uniform weights.

    Every live state spreads weight 1 evenly over its choices (each next
    character, and stopping where it is final), so the weights of all strings
    sum to 1. Read with interegular (the common `re` subset), for `WFSA`'s weights;
    `python_regex.automaton.CharAutomaton` is the other compiler, for the `regex`
    module's dialect and `PythonRegex`'s exact partial-match verdicts.

    Raises:
        ValueError: if interegular cannot parse the pattern.
    """
    import interegular

    chars = sorted(set(string.printable if charset is None else charset))
    try:
        fsm = interegular.parse_pattern(pattern).to_fsm()
    except Exception as error:  # interegular raises several parse error types
        raise ValueError(f"cannot compile regex {pattern!r} to an automaton: {error}") from None
    mapping = dict(fsm.alphabet._symbol_mapping)  # char (or anything_else) -> class
    explicit = {c for c in mapping if isinstance(c, str)}
    other = next((k for c, k in mapping.items() if not isinstance(c, str)), None)
    by_class: dict[int, list[str]] = defaultdict(list)
    for c in chars:
        k = mapping.get(c, other) if c in explicit else other
        if k is not None:
            by_class[k].append(c)
    for c in explicit - set(chars):  # characters the pattern names outright are always in
        by_class[mapping[c]].append(c)

    char_arcs: dict[Hashable, list[tuple[str, Hashable]]] = defaultdict(list)
    for src, moves in fsm.map.items():
        for k, dst in moves.items():
            for c in by_class.get(k, ()):
                char_arcs[src].append((c, dst))
    skeleton = Automaton()
    skeleton.final.update({s: 1.0 for s in fsm.finals})
    for src, arcs in char_arcs.items():
        skeleton.arcs[src] = [(c, dst, 1.0) for c, dst in arcs]
    live = skeleton.live()

    out = Automaton()
    if fsm.initial in live:
        out.initial[fsm.initial] = 1.0
    fresh = 0
    for src in live:
        choices = [(c, dst) for c, dst in char_arcs.get(src, ()) if dst in live]
        n = len(choices) + (1 if src in fsm.finals else 0)
        if src in fsm.finals:
            out.final[src] = 1.0 / n
        for c, dst in choices:
            data = c.encode("utf-8")
            at, weight = src, 1.0 / n
            for byte in data[:-1]:  # a multi-byte character: a chain of weight-1 arcs
                fresh += 1
                mid = ("utf8", fresh)
                out.arcs[at].append((byte, mid, weight))
                at, weight = mid, 1.0
            out.arcs[at].append((data[-1], dst, weight))
    return out


def _semiring(wfsa: Any) -> str:
    return getattr(wfsa.R, "__name__", str(wfsa.R))


def from_grammar_wfsa(wfsa: Any, allow: tuple[str, ...] = ("Float", "Log")) -> Automaton:
    """Read a genlm-grammar `WFSA` (Float, Log or Boolean weights) as real weights.

    Raises:
        ValueError: for a semiring outside `allow`, or a symbol that is not a byte.
    """
    name = _semiring(wfsa)
    if name not in allow:
        raise ValueError(
            f"Unsupported semiring {name}: expected a WFSA over {' or '.join(allow)} weights"
            + (" (a Boolean automaton is a BoolFSA)" if name == "Boolean" else "")
        )

    def real(w: Any) -> float:
        if name == "Log":
            return math.exp(w.score)
        if name == "Boolean":
            return 1.0 if w.score else 0.0
        return float(w)

    out = Automaton()
    for state, w in wfsa.I:
        out.initial[state] += real(w)
    for state, w in wfsa.F:
        out.final[state] += real(w)
    for src, symbol, dst, w in wfsa.arcs():
        if isinstance(symbol, (bytes, bytearray)) and len(symbol) == 1:
            symbol = symbol[0]
        if not (isinstance(symbol, int) and 0 <= symbol < 256):
            raise ValueError(f"arc symbol {symbol!r} is not a byte (an int 0..255)")
        out.arcs[src].append((symbol, dst, real(w)))
    return out


def to_grammar_wfsa(automaton: Automaton, semiring: str = "Log") -> Any:
    """The automaton as a genlm-grammar `WFSA` over `semiring` ("Log", "Float" or "Boolean").

    Raises:
        ImportError: naming the package when genlm-grammar is not installed.
    """
    try:
        import genlm.grammar as gg
    except ImportError as error:
        raise ImportError(
            "genlm-grammar is needed for `.wfsa` (pip install genlm-grammar)"
        ) from error
    R = {"Log": gg.Log, "Float": gg.Float, "Boolean": gg.Boolean}[semiring]

    def weight(w: float) -> Any:
        if semiring == "Log":
            return gg.Log(math.log(w) if w > 0 else -math.inf)
        if semiring == "Boolean":
            return gg.Boolean(w > 0)
        return w

    out = gg.WFSA(R)
    for state, w in automaton.initial.items():
        out.add_I(state, weight(w))
    for state, w in automaton.final.items():
        out.add_F(state, weight(w))
    for src, arcs in automaton.arcs.items():
        for symbol, dst, w in arcs:
            out.add_arc(src, symbol, dst, weight(w))
    return out
