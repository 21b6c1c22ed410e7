"""`relaxed_regex_dfa`: a byte automaton holding every text a regex matches, in any dialect.

`dfa.plain_ascii_regex` patterns compile to their exact automaton. Most
patterns users bring are not plain (`\\d{3}`, `[\\w.]+@`, `"[^"]*"`), because
a class reads differently across dialects: Python's `\\s` holds `\\x1c`,
Rust's does not, and both hold Unicode characters. Here each class becomes a
byte set that holds every dialect's reading: its ASCII members in any of
them, and then any run of non-ASCII bytes (where every UTF-8 character
other than ASCII lives). Literals, groups, alternation and repeats are
exact. The automaton (a Glushkov automaton over byte sets, then the subset
construction) holds every text the pattern matches, so the fewest tokens it
needs to end a prefix is a lower bound on the pattern's: a budget refuses
on it soundly (`finisher_for`). Anchors, word boundaries, lookarounds,
backreferences and flags are not read (None).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from typing import Any

from genlm_lab.control.constraint.finish_distance.dfa import ByteDfa

__all__ = ["relaxed_regex_dfa"]

_NON_ASCII = frozenset(range(0x80, 0x100))
_DIGITS = frozenset(b"0123456789")
_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_SPACE = frozenset(b" \t\n\r\f\v\x1c\x1d\x1e\x1f")  # Python's and Rust's, together
_ASCII = frozenset(range(0x80))
#: each class's ASCII members in some dialect (its non-ASCII ones are added to all)
_CATEGORIES = {
    "CATEGORY_DIGIT": _DIGITS,
    "CATEGORY_NOT_DIGIT": _ASCII - _DIGITS,
    "CATEGORY_WORD": _WORD,
    "CATEGORY_NOT_WORD": _ASCII - _WORD,
    "CATEGORY_SPACE": _SPACE,
    "CATEGORY_NOT_SPACE": _ASCII - frozenset(b" \t\n\r\f\v"),
}
#: the most byte positions an automaton is built from (a repeat is written out)
MAX_POSITIONS = 4000


class _Unread(Exception):
    """A construct this module does not read."""


def relaxed_regex_dfa(pattern: str, max_states: int = 512) -> ByteDfa | None:
    """An automaton holding every text `pattern` fully matches (see the module), or None."""
    import re._parser as sre

    if "[:" in pattern:  # a POSIX class in Rust, three characters and more to Python
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            parsed = sre.parse(pattern)
        if parsed.state.flags & ~re.UNICODE:
            raise _Unread("flags")
        tree = _Builder(sre).sequence(parsed)
    except (_Unread, re.error, RecursionError, UnicodeError, FutureWarning, DeprecationWarning):
        return None
    return _glushkov(tree, max_states)


class _Builder:
    """The `re` parser's tree as nodes: ("set", bytes), ("cat", nodes), ("alt", nodes),
    ("star", node), ("opt", node); every set is a fresh position."""

    def __init__(self, sre: Any) -> None:
        self.sre = sre
        self.positions = 0

    def leaf(self, members: frozenset[int]) -> tuple:
        self.positions += 1
        if self.positions > MAX_POSITIONS:
            raise _Unread("too long")
        return ("set", members)

    def sequence(self, items: Any) -> tuple:
        return ("cat", [self.item(op, arg) for op, arg in items])

    def char(self, code: int) -> tuple:
        data = chr(code).encode("utf-8")
        return ("cat", [self.leaf(frozenset([b])) for b in data])

    def item(self, op: Any, arg: Any) -> tuple:
        name = op.name
        if name == "LITERAL":
            return self.char(arg)
        if name == "ANY":
            return self._any_char(_ASCII)
        if name == "IN":
            return self._class(arg)
        if name == "NOT_LITERAL":
            return self._any_char(frozenset(_ASCII - {arg}))
        if name == "SUBPATTERN":
            if arg[1] or arg[2]:
                raise _Unread("flags in a group")
            return self.sequence(arg[3])
        if name == "BRANCH":
            return ("alt", [self.sequence(b) for b in arg[1]])
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, body = arg
            parts = [self.sequence(body) for _ in range(low)]
            if high == self.sre.MAXREPEAT:
                parts.append(("star", self.sequence(body)))
            else:
                for _ in range(high - low):
                    parts.append(("opt", self.sequence(body)))
            return ("cat", parts)
        if name == "ATOMIC_GROUP":
            return self.sequence(arg)
        raise _Unread(name)

    def _any_char(self, ascii_members: frozenset[int]) -> tuple:
        """One character: one of `ascii_members`, or a run of non-ASCII bytes."""
        non_ascii = self.leaf(_NON_ASCII)
        run = ("cat", [non_ascii, ("star", self.leaf(_NON_ASCII))])
        return ("alt", [self.leaf(ascii_members), run])

    def _class(self, items: Any) -> tuple:
        members: set[int] = set()  # ASCII members
        wide: list[int] = []  # non-ASCII literals, written exactly
        negate = any_wide = False  # any_wide: some non-ASCII character is in it
        for op, arg in items:
            name = op.name
            if name == "NEGATE":
                negate = True
            elif name == "LITERAL":
                if arg < 0x80:
                    members.add(arg)
                else:
                    wide.append(arg)
            elif name == "RANGE":
                members.update(range(arg[0], min(arg[1], 0x7F) + 1))
                any_wide = any_wide or arg[1] >= 0x80
            elif name == "CATEGORY" and arg.name in _CATEGORIES:
                members.update(_CATEGORIES[arg.name])
                any_wide = True
            else:
                raise _Unread(name)
        if negate:  # anything but the listed ASCII, or any non-ASCII character
            return self._any_char(frozenset(_ASCII - members))
        if any_wide:
            return self._any_char(frozenset(members))
        options = [self.char(code) for code in wide]
        if members:
            options.append(self.leaf(frozenset(members)))
        if not options:
            raise _Unread("an empty class")
        return ("alt", options)


def _walk(node: tuple) -> Iterator[tuple]:
    yield node
    kind, body = node
    if kind in ("cat", "alt"):
        for child in body:
            yield from _walk(child)
    elif kind in ("star", "opt"):
        yield from _walk(body)


def _glushkov(tree: tuple, max_states: int) -> ByteDfa | None:
    """The position automaton of `tree`, made deterministic."""
    ids = {id(n): i + 1 for i, n in enumerate(n for n in _walk(tree) if n[0] == "set")}
    sets: dict[int, frozenset[int]] = {ids[id(n)]: n[1] for n in _walk(tree) if n[0] == "set"}
    follow: dict[int, set[int]] = {p: set() for p in sets}

    def info(node: tuple) -> tuple[bool, set[int], set[int]]:
        """(nullable, first positions, last positions); adds to `follow`."""
        kind, body = node
        if kind == "set":
            p = ids[id(node)]
            return False, {p}, {p}
        if kind == "alt":
            parts = [info(c) for c in body]
            return (
                any(n for n, _, _ in parts),
                set().union(*(f for _, f, _ in parts)),
                set().union(*(la for _, _, la in parts)),
            )
        if kind == "cat":
            nullable, first, last = True, set(), set()
            for child in body:
                n, f, la = info(child)
                for p in last:
                    follow[p] |= f
                if nullable:
                    first |= f
                last = (last | la) if n else la
                nullable = nullable and n
            return nullable, first, last
        n, f, la = info(body)
        if kind == "star":
            for p in la:
                follow[p] |= f
        return True, f, la

    nullable, first, last = info(tree)
    moves: dict[int, dict[int, set[int]]] = {}
    for source, targets in [(0, first), *follow.items()]:
        out: dict[int, set[int]] = {}
        for q in targets:
            for b in sets[q]:
                out.setdefault(b, set()).add(q)
        moves[source] = out
    finals = frozenset(last | ({0} if nullable else set()))
    return ByteDfa.from_nfa(frozenset({0}), moves, finals, max_states=max_states)
