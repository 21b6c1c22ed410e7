"""`WeightedGrammar`: a weighted context-free grammar, the data behind `WCFG`.

A grammar has a start symbol `S`, a set of terminals `V` and rules
`w: head -> body` (weights are floats >= 0, or booleans in a boolean grammar).
A symbol is a terminal iff it is in `V`; any other symbol is a nonterminal.
`WeightedGrammar.from_string` reads genlm-grammar's text format::

    # a comment
    0.5: S -> a S
    0.5: S -> b
    1.0: A ->            (an empty body: A derives the empty string)

where a body symbol is a terminal iff its first character is not upper case,
and `to_bytes()` spells every (string) terminal as its UTF-8 bytes, one
terminal (an int 0..255) per byte, as genlm-grammar's `CFG.to_bytes` does.
"""

from __future__ import annotations

import html
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any, NamedTuple

__all__ = ["Language", "Rule", "WeightedGrammar"]

_SEMIRINGS = ("float", "boolean")
_LINE = re.compile(r"(.*):\s*(\S+)\s*→\s*(.*)$")
_TRUE = {"true", "1", "1.0"}
_FALSE = {"false", "0", "0.0"}


class Rule(NamedTuple):
    """One weighted production `w: head -> body` (genlm-grammar's `Rule` fields)."""

    w: Any
    head: Hashable
    body: tuple

    def __repr__(self) -> str:
        return f"{self.w}: {self.head} → {' '.join(map(_show, self.body))}"


class Language(dict):
    """Strings (tuples of terminals) -> total weight; a missing string weighs zero."""

    def __init__(self, zero: Any = 0.0, items: Iterable = ()) -> None:
        super().__init__(items)
        self.zero = zero

    def __missing__(self, key: Any) -> Any:
        return self.zero


def _show(symbol: Any) -> str:
    if isinstance(symbol, int) and not isinstance(symbol, bool) and 0 <= symbol < 256:
        return repr(bytes([symbol]))[1:]  # a byte terminal as 'a'
    return str(symbol)


def _semiring(semiring: Any) -> str:
    """'float' or 'boolean' from our names or a genlm-grammar semiring class (Float, Boolean)."""
    name = semiring if isinstance(semiring, str) else getattr(semiring, "__name__", None)
    name = str(name).lower()
    if name not in _SEMIRINGS:
        raise ValueError(f"semiring must be 'float' or 'boolean', got {semiring!r}")
    return name


class WeightedGrammar:
    """A weighted context-free grammar (genlm-grammar's `CFG` in the Float or Boolean semiring).

    Args:
        S: the start symbol.
        V: the terminals (any hashable values; ints 0..255 for a byte grammar).
        rules: `(weight, head, body)` triples (or `Rule`s) added in order.
        semiring: "float" (weights are floats >= 0) or "boolean".

    Attributes:
        S, V, N: start symbol, terminals, nonterminals (heads and `S`).
        rules: the `Rule`s (`w`, `head`, `body`), in the order added.
        semiring: "float" or "boolean".

    Grammars compare equal (`==`) when they have the same start symbol,
    terminals, semiring and the same rules with the same weights, in any order.
    """

    def __init__(
        self,
        S: Hashable = "S",  # noqa: N803 - genlm-grammar's name
        V: Iterable[Hashable] = (),  # noqa: N803 - genlm-grammar's name
        rules: Iterable[Any] = (),
        semiring: Any = "float",
    ) -> None:
        self.S = S
        self.V = set(V)
        self.N = {S}
        self.semiring = _semiring(semiring)
        self.rules: list[Rule] = []
        for w, head, body in rules:
            self.add(w, head, *body)

    # ------------------------------------------------------------ building
    def add(self, w: Any, head: Hashable, *body: Hashable) -> Rule | None:
        """Add `w: head -> body`; a rule of weight zero is skipped (None), as in genlm-grammar.

        Raises:
            ValueError: for a weight that is negative, NaN or infinite (float
                grammars), or a head that is a terminal.
        """
        w = self._weight(w)
        if head in self.V:
            raise ValueError(f"rule head {head!r} is a terminal of the grammar")
        if not w:
            return None
        self.N.add(head)
        rule = Rule(w, head, tuple(body))
        self.rules.append(rule)
        return rule

    def _weight(self, w: Any) -> Any:
        if self.semiring == "boolean":
            return bool(getattr(w, "score", w))
        try:
            w = float(w)
        except (TypeError, ValueError):
            raise ValueError(f"a rule weight must be a number, got {w!r}") from None
        if not (w >= 0 and math.isfinite(w)):
            raise ValueError(f"rule weights must be finite and >= 0, got {w}")
        return w

    @classmethod
    def from_string(
        cls,
        string: str,
        semiring: Any = "float",
        comment: str = "#",
        start: Hashable = "S",
        is_terminal: Callable[[str], bool] = lambda x: not x[0].isupper(),
    ) -> WeightedGrammar:
        """Read genlm-grammar's text format: one `weight: Head -> body symbols` rule a line.

        `->` or `→`; blank lines and lines starting with `comment` are skipped;
        a body symbol is a terminal iff `is_terminal(symbol)` (first character
        not upper case, by default). Terminals stay strings: see `to_bytes`.

        Raises:
            ValueError: naming the first line that is not a rule or has a bad weight.
        """
        if not isinstance(string, str):
            raise TypeError(f"a grammar text must be a str, got {type(string).__name__}")
        grammar = cls(S=start, semiring=semiring)
        for number, raw in enumerate(string.split("\n"), start=1):
            line = raw.strip()
            if not line or line.startswith(comment):
                continue
            found = _LINE.findall(line.replace("->", "→"))
            try:
                if len(found) != 1:
                    raise ValueError("expected `weight: Head -> body ...`")
                weight, head, body = found[0]
                symbols = body.split()
                grammar.V.update(x for x in symbols if is_terminal(x))
                grammar.add(grammar._parse_weight(weight.strip()), head.strip(), *symbols)
            except ValueError as err:
                raise ValueError(f"bad input line {number}: {line!r}: {err}") from None
        both = grammar.V & grammar.N
        if both:
            raise ValueError(f"symbols used both as terminals and as rule heads: {sorted(both)}")
        return grammar

    def _parse_weight(self, text: str) -> Any:
        if self.semiring == "boolean":
            if text.lower() in _TRUE | _FALSE:
                return text.lower() in _TRUE
            raise ValueError(f"a boolean weight is true/false/1/0, got {text!r}")
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"the weight {text!r} is not a number") from None

    def to_bytes(self) -> WeightedGrammar:
        """This grammar with each (string) terminal spelled as its UTF-8 bytes (ints 0..255).

        Raises:
            ValueError: if a terminal is not a string.
        """
        new = type(self)(S=self.S, semiring=self.semiring)
        for rule in self.rules:
            body: list[Hashable] = []
            for x in rule.body:
                if x in self.V:
                    if not isinstance(x, str):
                        raise ValueError(f"unsupported terminal type: {type(x)} ({x!r})")
                    spelled = list(x.encode("utf-8"))
                    new.V.update(spelled)
                    body.extend(spelled)
                else:
                    body.append(x)
            new.add(rule.w, rule.head, *body)
        return new

    def spawn(self, *, S: Hashable = None, V: Iterable[Hashable] | None = None) -> WeightedGrammar:  # noqa: N803
        """An empty grammar with the same semiring (and start symbol and terminals unless given)."""
        return type(self)(
            S=self.S if S is None else S,
            V=set(self.V) if V is None else V,
            semiring=self.semiring,
        )

    # ------------------------------------------------------------ reading
    def __iter__(self) -> Iterator[Rule]:
        return iter(self.rules)

    def __len__(self) -> int:
        return len(self.rules)

    @property
    def rhs(self) -> dict[Hashable, list[Rule]]:
        """Nonterminal -> the rules with it as their head."""
        out: dict[Hashable, list[Rule]] = defaultdict(list)
        for rule in self.rules:
            out[rule.head].append(rule)
        return out

    def is_terminal(self, x: Hashable) -> bool:
        return x in self.V

    def is_nonterminal(self, x: Hashable) -> bool:
        return x not in self.V

    @property
    def is_bytes(self) -> bool:
        """Whether every terminal is a byte value (an int 0..255)."""
        return all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 256 for x in self.V)

    def language(self, depth: int) -> Language:
        """Every string derived with derivation trees of height <= `depth`, with its weight.

        As genlm-grammar's `CFG.language`: strings are tuples of terminals, the
        weight of a string sums the weights of its derivations of that height
        (a rule `w: X -> a b c` is a tree of height 1). A string missing from
        the result weighs zero.
        """
        boolean = self.semiring == "boolean"
        zero, one = (False, True) if boolean else (0.0, 1.0)
        rhs = self.rhs
        level: dict[Hashable, dict[tuple, Any]] = {}  # nonterminal -> its language so far
        for _ in range(max(int(depth), 0)):
            below = level
            level = {}
            for head, rules in rhs.items():
                out: dict[tuple, Any] = {}
                for rule in rules:
                    part: dict[tuple, Any] = {(): rule.w}
                    for y in rule.body:
                        sub = {(y,): one} if y in self.V else below.get(y, {})
                        part = _concat(part, sub, boolean)
                        if not part:
                            break
                    for s, w in part.items():
                        out[s] = (out.get(s, zero) or w) if boolean else out.get(s, zero) + w
                level[head] = out
        return Language(zero, level.get(self.S, {}))

    # ------------------------------------------------------------ comparing, showing
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WeightedGrammar):
            return NotImplemented
        return (
            self.S == other.S
            and self.semiring == other.semiring
            and self.V == other.V
            and Counter(self.rules) == Counter(other.rules)
        )

    __hash__ = None  # type: ignore[assignment]  # mutable (`add`)

    def __repr__(self) -> str:
        lines = "\n".join(f"  {rule!r}" for rule in self.rules)
        kind = "" if self.semiring == "float" else f", {self.semiring}"
        return f"WeightedGrammar(start={self.S!r}{kind}) {{\n{lines}\n}}"

    def _repr_html_(self) -> str:
        return (
            '<pre style="width: fit-content; text-align: left; border: thin solid black; '
            f'padding: 0.5em;">{html.escape(repr(self))}</pre>'
        )


def _concat(left: dict[tuple, Any], right: dict[tuple, Any], boolean: bool) -> dict[tuple, Any]:
    out: dict[tuple, Any] = {}
    for s, v in left.items():
        for t, w in right.items():
            key = s + t
            if boolean:
                out[key] = out.get(key, False) or (v and w)
            else:
                out[key] = out.get(key, 0.0) + v * w
    return out
