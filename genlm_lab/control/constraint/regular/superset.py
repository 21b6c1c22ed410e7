"""`regex_superset_dfa`: a byte automaton holding every text a regex matches, in any dialect.

`plain.plain_ascii_regex` patterns compile to their exact automaton. Most
patterns users bring are not plain (`\\d{3}`, `[\\w.]+@`, `"[^"]*"`), because
a class reads differently across dialects: Python's `\\s` holds `\\x1c`,
Rust's does not, and both hold Unicode characters. Here each class becomes a
byte set that holds every dialect's reading: its ASCII members in any of
them, and then any run of non-ASCII bytes (where every UTF-8 character
other than ASCII lives). Literals, groups, alternation and repeats are
exact. What only narrows a match is widened: anchors, word boundaries and
lookarounds match the empty text, a backreference any text of its group, a
conditional either branch, a possessive or lazy repeat a greedy one, and
under IGNORECASE a letter is both its cases or any non-ASCII character (the
Kelvin sign is a `k`). The automaton (a Glushkov automaton over byte sets,
then the subset construction) holds every text the pattern matches, so the
fewest tokens it needs to end a prefix is a lower bound on the pattern's:
a budget refuses on it soundly (`budget.lower_bound`). Flags other than
IGNORECASE, MULTILINE, DOTALL, VERBOSE, ASCII and UNICODE, and what
Python's parser cannot read (the `regex` module's `\\p{L}`, set operations),
give None.
"""

from __future__ import annotations

import functools
import re
import re._parser as sre
import unicodedata
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import regex

from genlm_lab.control.constraint.regular.dfa import ByteDfa
from genlm_lab.control.constraint.regular.parse_tree import parse

__all__ = ["class_troubles", "parsed_alike", "regex_superset_dfa"]

_NON_ASCII = frozenset(range(0x80, 0x100))
_DIGITS = frozenset(b"0123456789")
_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_SPACE = frozenset(b" \t\n\r\f\v\x1c\x1d\x1e\x1f")  # Python's and Rust's, together
_ASCII = frozenset(range(0x80))
_COMMON_SPACE = frozenset(b" \t\n\r\f\v")  # in every dialect's `\s`
#: each class's ASCII members in some dialect (its non-ASCII ones are added to all)
_CATEGORIES = {
    "CATEGORY_DIGIT": _DIGITS,
    "CATEGORY_NOT_DIGIT": _ASCII - _DIGITS,
    "CATEGORY_WORD": _WORD,
    "CATEGORY_NOT_WORD": _ASCII - _WORD,
    "CATEGORY_SPACE": _SPACE,
    "CATEGORY_NOT_SPACE": _ASCII - _COMMON_SPACE,
}
#: ... and in every dialect: what a negated class may leave out (`[^\s]` takes `\x1c` in Rust)
_NARROW = {
    **_CATEGORIES,
    "CATEGORY_SPACE": _COMMON_SPACE,
    "CATEGORY_NOT_SPACE": _ASCII - _SPACE,
}
#: a category and its complement: a negated class holding both matches any character in
#: the `regex` module (`[^\s\S]`), so it is read as `.`
_PAIRS = [
    {"CATEGORY_DIGIT", "CATEGORY_NOT_DIGIT"},
    {"CATEGORY_WORD", "CATEGORY_NOT_WORD"},
    {"CATEGORY_SPACE", "CATEGORY_NOT_SPACE"},
]
#: the most byte positions an automaton is built from (a repeat is written out)
MAX_POSITIONS = 4000
#: the flags read: IGNORECASE widens letters; the others change only anchors and `.`,
#: read as wide as they go (not VERBOSE: Rust also drops the spaces inside a class)
_READ_FLAGS = re.IGNORECASE | re.MULTILINE | re.DOTALL | re.ASCII | re.UNICODE
_LETTERS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_EMPTY = ("cat", [])


_BRACE = re.compile(r"(\\*)\{(?!\d+(?:,\d*)?\}|,\d+\})")


def parsed_alike(pattern: str) -> bool:
    """Whether Python's parser reads `pattern`'s braces and brackets as Rust and the `regex`
    module do: no POSIX class (`[[:alpha:]]`, text to Python), every unescaped `{` opens a
    repeat Python reads (`{2}`, `{2,}`, `{2,5}`, `{,5}`; Rust also reads `{1, 3}`, `regex`
    `{e<=1}` as fuzzy matching), no class holds an unescaped `[` (Rust nests `[a[bc]]`,
    Python reads `[a[bc]` then `]`) or a doubled `-`, `&`, `~` or `|` (Rust's set
    operations: `[^&&a]` is any character to Rust)."""
    if "[:" in pattern or not all(len(m.group(1)) % 2 for m in _BRACE.finditer(pattern)):
        return False
    return not {"nested", "set operation"} & class_troubles(pattern)


def class_troubles(pattern: str) -> set[str]:
    """What in `pattern`'s classes dialects may read apart: "nested" (an unescaped `[`),
    "set operation" (a doubled `-&~|`), "leading ]" (`[]a]`, `[^]a]`: a member to
    Python and Rust, an empty class to interegular)."""
    found: set[str] = set()
    inside = escaped = False
    start = -1  # where the open class's members begin
    previous = ""  # the class's last unescaped character
    for i, c in enumerate(pattern):
        if escaped:
            escaped, previous = False, ""
            continue
        if c == "\\":
            escaped = True
        elif not inside and c == "[":
            inside, start, previous = True, i + 1 + (pattern[i + 1 : i + 2] == "^"), ""
        elif inside and c == "[":
            found.add("nested")
        elif inside and c == "]" and i == start:
            found.add("leading ]")
        elif inside and c == "]":
            inside = False
        elif inside and c in "-&~|" and previous == c:
            found.add("set operation")
        previous = c if inside else ""
    return found


class _Unread(Exception):
    """A construct this module does not read."""


def regex_superset_dfa(pattern: str, max_states: int = 512) -> ByteDfa | None:
    """An automaton holding every text `pattern` fully matches (see the module), or None."""
    parsed = parse(pattern) if parsed_alike(pattern) else None
    if parsed is None:
        return None
    try:
        flags = parsed.state.flags
        if flags & ~_READ_FLAGS:
            raise _Unread("flags")
        tree = _Builder(sre, fold=bool(flags & re.IGNORECASE)).sequence(parsed)
    except (_Unread, re.error, RecursionError, UnicodeError):
        return None
    return _glushkov(tree, max_states)


class _Builder:
    """The `re` parser's tree as nodes: ("set", bytes), ("cat", nodes), ("alt", nodes),
    ("star", node), ("opt", node); every set is a fresh position."""

    def __init__(self, sre: Any, fold: bool = False) -> None:
        self.sre = sre
        self.positions = 0
        self.fold = fold  # IGNORECASE where the builder stands
        self.groups: dict[int, Any] = {}  # group number -> its items, once read
        self.inside: set[int] = set()  # groups being read (a reference to one is circular)

    def leaf(self, members: frozenset[int]) -> tuple:
        self.positions += 1
        if self.positions > MAX_POSITIONS:
            raise _Unread("too long")
        return ("set", members)

    def sequence(self, items: Any) -> tuple:
        return ("cat", [self.item(op, arg) for op, arg in items])

    def char(self, code: int) -> tuple:
        if self.fold and code >= 0x80:  # may be the other case of an ASCII letter
            return self._any_char(_LETTERS)
        if self.fold and code in _LETTERS:
            return self._any_char(frozenset(bytes([code]).swapcase() + bytes([code])))
        data = chr(code).encode("utf-8")
        return ("cat", [self.leaf(frozenset([b])) for b in data])

    def item(self, op: Any, arg: Any) -> tuple:
        name = op.name
        if name == "LITERAL":
            return self.char(arg)
        if name in ("AT", "ASSERT", "ASSERT_NOT"):
            return _EMPTY  # only narrows where a match may be
        if name == "GROUPREF":
            return self._reference(arg)
        if name == "GROUPREF_EXISTS":
            group, yes, no = arg
            return ("alt", [self.sequence(yes), self.sequence(no) if no else _EMPTY])
        if name == "ANY":
            return self._any_char(_ASCII)
        if name == "IN":
            return self._class(arg)
        if name == "NOT_LITERAL":
            return self._any_char(frozenset(_ASCII - {arg}))
        if name == "SUBPATTERN":
            return self._group(*arg)
        if name == "BRANCH":
            return ("alt", [self.sequence(b) for b in arg[1]])
        if name in ("MAX_REPEAT", "MIN_REPEAT"):
            return self._repeat(*arg)
        if name == "POSSESSIVE_REPEAT":  # Rust reads `x?+` as `(x?)+`: both, then
            return ("cat", [self._repeat(*arg), ("star", self._repeat(*arg))])
        if name == "ATOMIC_GROUP":
            return self.sequence(arg)
        raise _Unread(name)

    def _repeat(self, low: int, high: int, body: Any) -> tuple:
        parts = [self.sequence(body) for _ in range(low)]
        if high == self.sre.MAXREPEAT:
            parts.append(("star", self.sequence(body)))
        else:
            for _ in range(high - low):
                parts.append(("opt", self.sequence(body)))
        return ("cat", parts)

    def _group(self, number: int | None, add: int, remove: int, items: Any) -> tuple:
        if (add | remove) & ~_READ_FLAGS:
            raise _Unread("flags in a group")
        fold = self.fold
        self.fold = bool(add & re.IGNORECASE) or (fold and not remove & re.IGNORECASE)
        if number is not None:
            self.groups[number] = (items, self.fold)
            self.inside.add(number)
        try:
            return self.sequence(items)
        finally:
            self.fold = fold
            self.inside.discard(number)

    def _reference(self, number: int) -> tuple:
        """Any text of group `number` (what it matched is one of them)."""
        if number not in self.groups or number in self.inside:
            raise _Unread("a reference to a group not read yet")
        items, fold = self.groups[number]
        outer, self.fold = self.fold, fold or self.fold
        try:
            return self.sequence(items)
        finally:
            self.fold = outer

    def _any_char(self, ascii_members: frozenset[int]) -> tuple:
        """One character: one of `ascii_members`, or a run of non-ASCII bytes."""
        non_ascii = self.leaf(_NON_ASCII)
        run = ("cat", [non_ascii, ("star", self.leaf(_NON_ASCII))])
        return ("alt", [self.leaf(ascii_members), run])

    def _wide_digit(self) -> tuple:
        """One non-ASCII decimal digit (what `\\d` adds to `[0-9]`), by its UTF-8 shapes."""
        two, three = _digit_shapes()
        options = [("cat", [self.leaf(two), self.leaf(_CONTINUATION)])]
        for lead, seconds in sorted(three.items()):
            lead_set = self.leaf(frozenset([lead]))
            options.append(("cat", [lead_set, self.leaf(seconds), self.leaf(_CONTINUATION)]))
        four = [self.leaf(_FOUR_BYTE_LEADS), *(self.leaf(_CONTINUATION) for _ in range(3))]
        options.append(("cat", four))
        return ("alt", options)

    def _class(self, items: Any) -> tuple:
        members: set[int] = set()  # ASCII members in some dialect
        narrow: set[int] = set()  # ... and in every dialect
        categories: set[str] = set()
        wide: list[int] = []  # non-ASCII literals, written exactly
        negate = any_wide = False  # any_wide: some non-ASCII character is in it
        ranges_wide = False  # a range reaches past ASCII
        for op, arg in items:
            name = op.name
            if name == "NEGATE":
                negate = True
            elif name == "LITERAL":
                if arg < 0x80:
                    members.add(arg)
                    narrow.add(arg)
                else:
                    wide.append(arg)
                    any_wide = any_wide or self.fold
            elif name == "RANGE":
                members.update(range(arg[0], min(arg[1], 0x7F) + 1))
                narrow.update(range(arg[0], min(arg[1], 0x7F) + 1))
                any_wide = any_wide or arg[1] >= 0x80
                ranges_wide = ranges_wide or arg[1] >= 0x80
            elif name == "CATEGORY" and arg.name in _CATEGORIES:
                members.update(_CATEGORIES[arg.name])
                narrow.update(_NARROW[arg.name])
                categories.add(arg.name)
                any_wide = True
            else:
                raise _Unread(name)
        # `\d` (with ASCII literals and ranges): its non-ASCII part is the decimal digits,
        # not any character, which keeps its lower bound from counting `"的一是"` as 3 digits
        digits_only = categories == {"CATEGORY_DIGIT"} and not negate and not ranges_wide
        if digits_only and not (self.fold and (wide or members & _LETTERS)):
            options = [self.char(code) for code in wide]
            return ("alt", [*options, self.leaf(frozenset(members)), self._wide_digit()])
        if negate and any(pair <= categories for pair in _PAIRS):
            return self._any_char(_ASCII)
        if negate:  # anything but what every dialect lists, or any non-ASCII character
            return self._any_char(frozenset(_ASCII - narrow))
        if self.fold and (wide or ranges_wide):  # a non-ASCII letter may fold to an ASCII one
            members |= _LETTERS
        if self.fold and members & _LETTERS:  # both cases, or a non-ASCII one
            members |= set(bytes(sorted(members & _LETTERS)).swapcase())
            any_wide = True
        if any_wide:
            return self._any_char(frozenset(members))
        options = [self.char(code) for code in wide]
        if members:
            options.append(self.leaf(frozenset(members)))
        if not options:
            raise _Unread("an empty class")
        return ("alt", options)


_CONTINUATION = frozenset(range(0x80, 0xC0))
_FOUR_BYTE_LEADS = frozenset(range(0xF0, 0xF5))


@functools.cache
def _digit_shapes() -> tuple[frozenset[int], dict[int, frozenset[int]]]:
    """Where the non-ASCII decimal digits of the Basic Multilingual Plane sit in UTF-8: the
    lead bytes of the two-byte ones, and each three-byte lead byte's second bytes.

    A digit is what Python's Unicode data or the `regex` module (which carries newer data)
    calls one (`Nd`, which is `\\d` in Python, `regex` and Rust). Four-byte characters are
    all taken, since newer Unicode versions keep adding digits there.
    """
    digit = regex.compile(r"\d")
    two: set[int] = set()
    three: dict[int, set[int]] = defaultdict(set)
    for code in range(0x80, 0x10000):
        if 0xD800 <= code < 0xE000:
            continue  # surrogates are no characters
        char = chr(code)
        if unicodedata.category(char) == "Nd" or digit.match(char):
            data = char.encode("utf-8")
            if len(data) == 2:
                two.add(data[0])
            else:
                three[data[0]].add(data[1])
    return frozenset(two), {lead: frozenset(seconds) for lead, seconds in three.items()}


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
