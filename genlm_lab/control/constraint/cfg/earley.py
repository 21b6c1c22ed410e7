"""A Lark grammar read for finishing: shortest strings, and an Earley chart over characters.

`LarkChart.of(grammar)` reads a Lark grammar with the `lark` package (its
compiled rules, terminals as regexes, `%ignore`, `%import common.*`) and
computes each symbol's shortest string (a fixed point over the expansions;
a terminal's by a search over the characters its regex names). `chart(text)`
runs a scannerless Earley recognizer over `text`: terminals are matched as
regexes at every split (the `regex` package's partial matching says which
scans are still open at the end), and an `%ignore` match between two positions
carries the earlier position's items over. Charts are kept per text and grown
from the longest kept prefix, so a text one token longer costs a few sets.

The recognizer splits terminals wherever the grammar allows, which accepts a
superset of what llguidance's lexer does: a finish read from it is checked on
the engine before anyone uses it (`cfg.finish`).
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from functools import lru_cache
from typing import Any

import regex

from genlm_lab.control.constraint.regular.parse_tree import nodes, parse

__all__ = ["EarleyChart", "LarkChart", "complete_terminal", "parse_lark"]

_DEFAULT_CHARS = "a0 A_-.1\n\t\"'"
_MAX_NODES = 4096  # regex checks a terminal's completion may take


def _chars_of(pattern: str) -> str:
    """Characters worth trying in `pattern`: its literals and class bounds, and a few defaults."""
    found: list[str] = []
    parsed = parse(pattern, strict=False)  # a syntax only `regex` reads: the defaults only
    for name, arg in nodes(parsed) if parsed is not None else ():
        if name in ("LITERAL", "NOT_LITERAL"):
            found.append(chr(arg))
        elif name == "RANGE":
            found.extend((chr(arg[0]), chr(arg[1])))
    return "".join(dict.fromkeys(_DEFAULT_CHARS + "".join(found)))


def complete_terminal(
    pattern: regex.Pattern, chars: str, start: str, beam: int = 16, max_nodes: int = _MAX_NODES
) -> str | None:
    """A shortest `s` (over `chars`) with `start + s` a full match of `pattern` (None: none
    found). Breadth first, keeping the first `beam` live tails of each length: the shortest
    wherever fewer than `beam` tails of a length are live (`"[^"]*"`'s rest is one quote),
    else a short one (a fixed-width `[0-9a-f]{8}` is written with the first few digits)."""
    frontier = [""]
    nodes = 0
    while frontier and nodes < max_nodes:
        grown: list[str] = []
        for tail in frontier:
            for c in chars:
                nodes += 1
                m = pattern.fullmatch(start + tail + c, partial=True)
                if m is None:
                    continue
                if not m.partial:
                    return tail + c
                if len(grown) < beam:
                    grown.append(tail + c)
        frontier = grown
    return None


class EarleyChart:
    """An Earley chart over a text: `sets[j]` holds items `(rule, dot, origin)`; `waiting[j]`
    the items of set j by the symbol after their dot; `scans` the terminal (and ignore) scans
    `(origin, name)` still open at the end."""

    __slots__ = ("text", "sets", "waiting", "scans")

    def __init__(self, text: str, sets: list, waiting: list, scans: list) -> None:
        self.text = text
        self.sets = sets
        self.waiting = waiting
        self.scans = scans

    @property
    def dead(self) -> bool:
        return not self.sets[-1] and not self.scans


class LarkChart:
    """A Lark grammar's rules, terminals and shortest strings, and its Earley charts."""

    def __init__(self, parsed: Any, cache_size: int = 4096) -> None:
        self.start: str = parsed.options.start[0]
        self.rules: list[tuple[str, tuple[str, ...]]] = [
            (r.origin.name, tuple(s.name for s in r.expansion)) for r in parsed.rules
        ]
        self.by_lhs: dict[str, list[int]] = {}
        for i, (lhs, _) in enumerate(self.rules):
            self.by_lhs.setdefault(lhs, []).append(i)
        self.patterns: dict[str, regex.Pattern] = {}
        self.chars: dict[str, str] = {}
        for t in parsed.terminals:
            source = t.pattern.to_regexp()
            flags = "".join(sorted(t.pattern.flags))
            self.patterns[t.name] = regex.compile(f"(?{flags}:{source})" if flags else source)
            self.chars[t.name] = _chars_of(source)
        self.ignore: tuple[str, ...] = tuple(n for n in parsed.ignore_tokens if n in self.patterns)
        self._shortest_strings()
        self.cache_size = cache_size
        self._charts: OrderedDict[str, EarleyChart] = OrderedDict()
        self._rests: dict[tuple[str, str], str | None] = {}
        self._after: dict[tuple[int, int], tuple[int, tuple[str, ...]] | None] = {}

    @classmethod
    def of(cls, grammar: str) -> LarkChart | None:
        """The chart reader of a Lark grammar (cached), or None if `lark` cannot read it."""
        return _reader(grammar)

    # ------------------------------------------------------------ shortest strings
    def _shortest_strings(self) -> None:
        """`pieces[symbol]`: the terminal strings of its shortest derivation; `length` theirs."""
        pieces: dict[str, tuple[str, ...]] = {}
        for name, pattern in self.patterns.items():
            found = complete_terminal(pattern, self.chars[name], "")
            if found is not None:
                pieces[name] = (found,)
        length = {k: len(v[0]) for k, v in pieces.items()}
        changed = True
        while changed:
            changed = False
            for lhs, rhs in self.rules:
                if all(s in length for s in rhs):
                    n = sum(length[s] for s in rhs)
                    if n < length.get(lhs, n + 1):
                        length[lhs] = n
                        pieces[lhs] = tuple(p for s in rhs for p in pieces[s])
                        changed = True
        self.length = length
        self.pieces = pieces

    def rest(self, rule: int, dot: int) -> tuple[int, tuple[str, ...]] | None:
        """`(length, pieces)` of the shortest string of what follows `dot` in `rule` (kept;
        None: none)."""
        key = (rule, dot)
        found = self._after.get(key, False)
        if found is False:
            rhs = self.rules[rule][1][dot:]
            found = None
            if all(s in self.length for s in rhs):
                found = (
                    sum(self.length[s] for s in rhs),
                    tuple(p for s in rhs for p in self.pieces[s]),
                )
            self._after[key] = found
        return found

    def rest_of(self, name: str, start: str) -> str | None:
        """The shortest rest that makes `start` a full match of terminal `name` (kept)."""
        key = (name, start)
        if key not in self._rests:
            if len(self._rests) > self.cache_size:
                self._rests.clear()
            self._rests[key] = complete_terminal(self.patterns[name], self.chars[name], start)
        return self._rests[key]

    # ------------------------------------------------------------ charts
    def chart(self, text: str) -> EarleyChart:
        """The Earley chart of `text` (kept; grown from the longest kept prefix)."""
        found = self._charts.get(text)
        if found is not None:
            self._charts.move_to_end(text)
            return found
        base = None
        for k in range(len(text) - 1, max(-1, len(text) - 65), -1):
            base = self._charts.get(text[:k])
            if base is not None:
                break
        if base is None:
            base = self._first()
        sets, waiting, scans = list(base.sets), list(base.waiting), base.scans
        for j in range(len(sets), len(text) + 1):
            scans = self._step(text, j, sets, waiting, scans)
        out = EarleyChart(text, sets, waiting, scans)
        self._charts[text] = out
        if len(self._charts) > self.cache_size:
            self._charts.popitem(last=False)
        return out

    def _first(self) -> EarleyChart:
        sets: list = []
        waiting: list = []
        seeds = [(r, 0, 0) for r in self.by_lhs.get(self.start, ())]
        self._close(seeds, 0, sets, waiting)
        return EarleyChart("", sets, waiting, self._opened(0, waiting[0], []))

    def _opened(self, j: int, waiting: dict, scans: list) -> list:
        """`scans` plus those starting at `j`: every terminal awaited there, and the ignores."""
        names = [s for s in waiting if s in self.patterns]
        return scans + [(j, n) for n in dict.fromkeys([*names, *self.ignore])]

    def _step(self, text: str, j: int, sets: list, waiting: list, scans: list) -> list:
        """Set j from the scans ending at j; the scans still open after it."""
        seeds: list = []
        kept: list = []
        for origin, name in scans:
            m = self.patterns[name].fullmatch(text, origin, j, partial=True)
            if m is None:
                continue
            kept.append((origin, name))
            if m.partial:
                continue
            if name in self.ignore:  # skipped: position j stands where `origin` stood
                seeds.extend(sets[origin])
            seeds.extend((r, d + 1, o) for r, d, o in waiting[origin].get(name, ()))
        self._close(seeds, j, sets, waiting)
        return self._opened(j, waiting[j], kept) if sets[j] else kept

    def _close(self, seeds: list, j: int, sets: list, waiting: list) -> None:
        items: set = set()
        by_next: dict[str, list] = {}
        sets.append(items)
        waiting.append(by_next)
        agenda = list(seeds)
        while agenda:
            item = agenda.pop()
            if item in items:
                continue
            items.add(item)
            r, dot, origin = item
            lhs, rhs = self.rules[r]
            if dot == len(rhs):
                parents = (waiting[origin] if origin < j else by_next).get(lhs, ())
                agenda.extend((pr, pd + 1, po) for pr, pd, po in parents)
                continue
            symbol = rhs[dot]
            by_next.setdefault(symbol, []).append(item)
            if symbol in self.by_lhs:
                agenda.extend((q, 0, j) for q in self.by_lhs[symbol])
                if self.length.get(symbol) == 0:  # nullable: advance over it too
                    agenda.append((r, dot + 1, origin))


@lru_cache(maxsize=16)
def parse_lark(grammar: str) -> Any | None:
    """`lark.Lark` of a grammar (Earley, dynamic lexer; cached), or None where lark cannot
    read it (llguidance's own syntax) or is missing."""
    try:
        import lark

        with warnings.catch_warnings():  # Python's re on Rust syntax ("&&"): not ours to report
            warnings.simplefilter("ignore")
            return lark.Lark(grammar, parser="earley", lexer="dynamic")
    except Exception:  # noqa: BLE001 - llguidance's own syntax, or lark missing: no reader
        return None


@lru_cache(maxsize=64)
def _reader(grammar: str) -> LarkChart | None:
    parsed = parse_lark(grammar)
    return None if parsed is None else LarkChart(parsed)
